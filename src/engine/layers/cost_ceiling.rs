//! Layer `cost_ceiling` (core-agent's kill switch): prices every replayed model call and, when
//! the spend of the current turn (since the last user message) or of the session meets a
//! configured bound, emits one `cost_ceiling` event. With `action = "stop"` (core-agent) the
//! call that tripped it completes and the replay stops: every later call would be refused.
//!
//! A call costs `input price × request tokens + output price × recorded output tokens` (the
//! trace's usage, else its text at 4 chars/token). The request is priced as this layer sees it,
//! so put it last; cache discounts are not applied, which makes the spend an upper bound.

use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::EventDetail;
use crate::engine::layer::{CallCtx, Layer, MessageCtx};

use crate::engine::EngineError;
use crate::pricing::PriceTable;
use crate::trace::{Role, TraceMeta};
use serde::{Deserialize, Serialize};

/// What a tripped cost ceiling does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CeilingAction {
    /// core-agent: the tripping call completes, every later call is refused (replay stops).
    Stop,
    /// Record one event per bound and go on.
    Alert,
}

/// Cost ceilings (core-agent): per turn (spend since the last user message) and per session.
/// Calls are priced at `input × request tokens + output × recorded output tokens` (no cache
/// discount: an upper bound) with explicit $/Mtok prices, else `model`'s price, else the
/// trace model's price from the bundled table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostCeiling {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_turn_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_session_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_usd_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_usd_per_mtok: Option<f64>,
    pub action: CeilingAction,
}

impl LayerSpec for CostCeiling {
    const NAME: &'static str = "cost_ceiling";

    fn validate(&self) -> Result<(), ConfigError> {
        for (key, v) in [
            ("cost_ceiling.per_turn_usd", self.per_turn_usd),
            ("cost_ceiling.per_session_usd", self.per_session_usd),
            ("cost_ceiling.input_usd_per_mtok", self.input_usd_per_mtok),
            ("cost_ceiling.output_usd_per_mtok", self.output_usd_per_mtok),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(err(key, format!("expected a dollar amount >= 0, got {v}")));
                }
            }
        }
        Ok(())
    }

    fn build(&self, ctx: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        // `[engine] agent_model` prices the views unless the layer names a model.
        let mut cfg = self.clone();
        if cfg.model.is_none() {
            cfg.model = ctx.agent_model.map(str::to_string);
        }
        Ok(Box::new(CostCeilingLayer::new(
            cfg,
            ctx.meta,
            ctx.messages,
            ctx.prices(),
        )?))
    }
}

pub struct CostCeilingLayer {
    cfg: CostCeiling,
    /// $ per input / output token.
    price: (f64, f64),
    /// Output tokens of the call at each trace index (0 for non-assistant messages).
    outputs: Vec<u64>,
    turn_spent: f64,
    session_spent: f64,
    turn_tripped: bool,
    session_tripped: bool,
}

fn config_err(message: String) -> ConfigError {
    ConfigError::new("engine config", 0, format!("`cost_ceiling`: {message}"))
        .with_key(vec!["cost_ceiling".into()])
}

impl CostCeilingLayer {
    /// Resolve the prices (explicit $/Mtok, else `model`'s, else the trace model's from
    /// `prices`: the run's table, i.e. the bundled one with the suite's `[pricing]` overrides).
    /// With no bound configured the layer needs no price and never fires.
    pub fn new(
        cfg: CostCeiling,
        meta: &TraceMeta,
        messages: &[std::sync::Arc<crate::trace::Message>],
        prices: &PriceTable,
    ) -> Result<Self, ConfigError> {
        let armed = cfg.per_turn_usd.is_some() || cfg.per_session_usd.is_some();
        let mut price = (0.0, 0.0);
        if armed {
            let model = cfg.model.clone().or_else(|| meta.model.clone());
            let table = model
                .as_deref()
                .and_then(|m| prices.lookup(m))
                .map(|(_, p)| (p.input, p.output));
            let input = cfg.input_usd_per_mtok.or(table.map(|t| t.0));
            let output = cfg.output_usd_per_mtok.or(table.map(|t| t.1));
            match (input, output) {
                (Some(i), Some(o)) => price = (i / 1e6, o / 1e6),
                _ => {
                    return Err(config_err(format!(
                        "no price for model {} (set cost_ceiling.model, or input_usd_per_mtok and output_usd_per_mtok)",
                        model.as_deref().unwrap_or("<unknown: the trace names no model>")
                    )))
                }
            }
        }
        let outputs = messages
            .iter()
            .map(|m| match (m.role, m.usage) {
                (Role::Assistant, Some(u)) => u.output,
                (Role::Assistant, None) => (m.content.chars().count() as u64).div_ceil(4),
                _ => 0,
            })
            .collect();
        Ok(CostCeilingLayer {
            cfg,
            price,
            outputs,
            turn_spent: 0.0,
            session_spent: 0.0,
            turn_tripped: false,
            session_tripped: false,
        })
    }

    fn trip(&self, ctx: &mut CallCtx<'_>, bound: &str, spent: f64, limit: f64) {
        let action = match self.cfg.action {
            CeilingAction::Stop => "stop",
            CeilingAction::Alert => "alert",
        };
        let after = ctx.request_tokens();
        let detail = EventDetail::CostCeiling {
            bound: bound.into(),
            spent_usd: spent,
            limit_usd: limit,
            action: action.into(),
        };
        ctx.emit(self.name(), detail).tokens_after = Some(after);
        if self.cfg.action == CeilingAction::Stop && ctx.notes.stop.is_none() {
            ctx.notes.stop = Some(format!(
                "cost ceiling: {bound} spend ${spent:.4} reached the ${limit:.4} limit; later calls are refused"
            ));
        }
    }
}

impl Layer for CostCeilingLayer {
    fn name(&self) -> &'static str {
        "cost_ceiling"
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        let m = &ctx.state.get(ctx.index).msg;
        if crate::engine::layers::is_user_turn(m) {
            self.turn_spent = 0.0;
            self.turn_tripped = false;
        }
        Ok(())
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        if self.cfg.per_turn_usd.is_none() && self.cfg.per_session_usd.is_none() {
            return Ok(());
        }
        let output = self.outputs.get(ctx.call_index).copied().unwrap_or(0);
        let cost = ctx.request_tokens() as f64 * self.price.0 + output as f64 * self.price.1;
        self.turn_spent += cost;
        self.session_spent += cost;
        if let Some(limit) = self.cfg.per_session_usd {
            if self.session_spent >= limit && !self.session_tripped {
                self.session_tripped = true;
                self.trip(ctx, "session", self.session_spent, limit);
            }
        }
        if let Some(limit) = self.cfg.per_turn_usd {
            if self.turn_spent >= limit && !self.turn_tripped {
                self.turn_tripped = true;
                self.trip(ctx, "turn", self.turn_spent, limit);
            }
        }
        Ok(())
    }
}
