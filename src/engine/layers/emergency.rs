//! Layer `emergency` (digitorn `emergency_compact`): when the request overflows the limit —
//! the replay's stand-in for a provider "context length exceeded" error — halve `keep_recent`
//! (never below `min_keep`), truncate without an LLM (reminder, nothing offloaded), and retry,
//! halving again until the request fits or `min_keep` is reached. If it still does not fit the
//! engine records the `overflow`.

use super::truncate::{truncate_view, GoalTracker, ReminderSpec};
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::EventDetail;
use crate::engine::layer::{CallCtx, Layer, MessageCtx};
use crate::engine::layer_config::{Keep, Trigger};
use crate::engine::EngineError;
use serde::{Deserialize, Serialize};

/// Emergency compaction (digitorn `emergency_compact`): when the request overflows `limit`
/// (the replay's stand-in for a provider overflow error), halve `keep_recent` (never below
/// `min_keep`), truncate without an LLM, and retry until it fits or `min_keep` is reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Emergency {
    /// Overflow threshold (default: the whole window).
    pub limit: Trigger,
    pub keep_recent: usize,
    pub min_keep: usize,
    pub reminder: bool,
}

impl LayerSpec for Emergency {
    const NAME: &'static str = "emergency";

    fn validate(&self) -> Result<(), ConfigError> {
        if self.min_keep == 0 || self.keep_recent < self.min_keep {
            return Err(err(
                "emergency",
                format!(
                    "need 0 < min_keep ({}) <= keep_recent ({})",
                    self.min_keep, self.keep_recent
                ),
            ));
        }
        Ok(())
    }

    fn build(&self, ctx: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        Ok(Box::new(EmergencyLayer::new(
            self.clone(),
            ctx.meta.goal.clone(),
        )))
    }
}

pub struct EmergencyLayer {
    cfg: Emergency,
    goal: GoalTracker,
}

impl EmergencyLayer {
    pub fn new(cfg: Emergency, recorded_goal: Option<String>) -> Self {
        EmergencyLayer {
            cfg,
            goal: GoalTracker::new(recorded_goal),
        }
    }
}

impl Layer for EmergencyLayer {
    fn name(&self) -> &'static str {
        "emergency"
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        self.goal.observe(&ctx.state.get(ctx.index).msg);
        Ok(())
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let limit = self.cfg.limit.tokens(ctx.env.window);
        let before = ctx.request_tokens();
        if before <= limit {
            return Ok(());
        }
        let mut keep = self.cfg.keep_recent;
        let mut attempts = 0;
        let mut dropped = 0;
        let mut state_cutoff = ctx.view.start;
        loop {
            keep = (keep / 2).max(self.cfg.min_keep);
            attempts += 1;
            let spec = self.cfg.reminder.then(|| ReminderSpec {
                goal: self.goal.goal(),
                recent_activity: 5,
                goal_max_chars: 2000,
            });
            if let Some(d) = truncate_view(ctx, Keep::Messages(keep), spec) {
                dropped += d.dropped;
                state_cutoff = d.state_cutoff;
            }
            if ctx.request_tokens() <= limit || keep == self.cfg.min_keep {
                break;
            }
        }
        let after = ctx.request_tokens();
        let detail = EventDetail::Emergency {
            keep_recent: keep,
            attempts,
            state_cutoff,
            dropped,
            fits: after <= limit,
            limit,
            summarizer_usage: None,
            summarizer_calls: Vec::new(),
        };
        let ev = ctx.emit(self.name(), detail);
        ev.tokens_before = Some(before);
        ev.tokens_after = Some(after);
        Ok(())
    }
}
