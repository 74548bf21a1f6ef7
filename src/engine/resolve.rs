//! Resolution of an [`EngineConfig`] into a [`ResolvedConfig`]: preset layers → model tier →
//! per-layer overrides (the one merge rule, [`crate::confcore::merge`]) → layer order →
//! window; then every layer's own checks. Lives apart from `config` so that the presets
//! (which build layer configurations) and the configuration types do not depend on each other.

use super::config::{err, err_in, EngineConfig};
use super::layer_config::{History, Keep, LayerConfig, Trigger};
use crate::confcore::merge::merge;
use crate::confcore::ConfigError;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedConfig {
    pub preset: String,
    pub window: u64,
    pub max_output_tokens: Option<u64>,
    pub counter: String,
    pub layers: Vec<LayerConfig>,
}

impl ResolvedConfig {
    /// deepagents' input budget: `max(0, int(0.95·W) − max_output_tokens)`.
    pub fn input_budget(&self) -> u64 {
        let b = (0.95 * self.window as f64) as u64;
        b.saturating_sub(self.max_output_tokens.unwrap_or(0))
    }

    /// Move every context-pressure compaction trigger (summarize, truncate, args truncation) to
    /// `fraction` of the window: what an eval's trigger sweep (e.g. "summarize at 15%") means.
    /// Returns false when the configuration has no such layer.
    pub fn set_compaction_trigger(&mut self, fraction: f64) -> bool {
        set_compaction_trigger(&mut self.layers, fraction)
    }

    /// The counter this configuration names.
    pub fn make_counter(&self) -> Result<Box<dyn crate::tokens::TokenCounter>, ConfigError> {
        use crate::tokens::approx::ApproxCounter;
        match self.counter.as_str() {
            "approx" => Ok(Box::new(ApproxCounter::langchain())),
            "approx-anthropic" => Ok(Box::new(ApproxCounter::anthropic())),
            other => Err(err(
                "counter",
                format!("unknown counter {other:?} (expected `approx` or `approx-anthropic`)"),
            )),
        }
    }
}

/// The one place where a trigger fraction (a model tier's, or an eval's sweep) is applied:
/// every context-pressure compaction trigger (summarize, truncate, args truncation) moves to
/// `fraction` of the window, and an explicit trigger turns off summarize's model-tier default.
/// Returns false when there is no such layer.
pub fn set_compaction_trigger(layers: &mut [LayerConfig], fraction: f64) -> bool {
    let mut any = false;
    for l in layers {
        let t = match l {
            LayerConfig::Summarize(c) => {
                // An explicit trigger wins over the model-tier default (core-agent).
                c.tier_from_model = false;
                &mut c.trigger
            }
            LayerConfig::Truncate(c) => &mut c.trigger,
            LayerConfig::TruncateArgs(c) => &mut c.trigger,
            _ => continue,
        };
        *t = Trigger::Fraction(fraction);
        any = true;
    }
    any
}

impl EngineConfig {
    /// Resolve against the preset and the trace's window.
    pub fn resolve(&self, trace_window: Option<u64>) -> Result<ResolvedConfig, ConfigError> {
        let preset_name = self.preset.as_deref().unwrap_or("deepagents");
        let preset = super::presets::preset(preset_name).ok_or_else(|| {
            err_in(
                self.source.as_deref(),
                "preset",
                format!(
                    "unknown preset {preset_name:?} (known: {})",
                    super::presets::NAMES.join(", ")
                ),
            )
        })?;
        let mut layers = preset.layers;
        if let Some(tier) = self.tier {
            set_compaction_trigger(&mut layers, tier.trigger_fraction());
        }
        let patches: [(&str, &Option<Value>); 11] = [
            ("evict_tool_results", &self.evict_tool_results),
            ("evict_user_messages", &self.evict_user_messages),
            ("truncate_args", &self.truncate_args),
            ("summarize", &self.summarize),
            ("clear_tool_results", &self.clear_tool_results),
            ("truncate", &self.truncate),
            ("emergency", &self.emergency),
            ("turn_trim", &self.turn_trim),
            ("checkpoint", &self.checkpoint),
            ("watchdog", &self.watchdog),
            ("cost_ceiling", &self.cost_ceiling),
        ];
        for (name, patch) in patches {
            let Some(patch) = patch else { continue };
            let layer = layers
                .iter_mut()
                .find(|l| l.name() == name)
                .ok_or_else(|| {
                    err_in(
                        self.source.as_deref(),
                        name,
                        format!("preset {preset_name:?} has no `{name}` layer to configure"),
                    )
                })?;
            let mut v = layer.to_value();
            merge(&mut v, patch.clone());
            *layer = layer.reparse(v).map_err(|e| {
                let key = ConfigError::key_of(&[name], e.path());
                err_in(
                    self.source.as_deref(),
                    &key.join("."),
                    e.inner().to_string(),
                )
            })?;
            // An explicit summarize trigger wins over the model's tier.
            if let (LayerConfig::Summarize(s), Some(p)) = (&mut *layer, patch.as_object()) {
                if p.contains_key("trigger") {
                    s.tier_from_model = false;
                }
            }
        }
        if let Some(order) = &self.layers {
            let mut ordered = Vec::with_capacity(order.len());
            for name in order {
                let pos = layers
                    .iter()
                    .position(|l| l.name() == name)
                    .ok_or_else(|| {
                        let known: Vec<&str> = layers.iter().map(|l| l.name()).collect();
                        err_in(
                            self.source.as_deref(),
                            "layers",
                            format!(
                                "unknown layer {name:?} (this preset has: {})",
                                known.join(", ")
                            ),
                        )
                    })?;
                ordered.push(layers.remove(pos));
            }
            layers = ordered;
        }
        let window = self
            .window
            .or(trace_window)
            .unwrap_or(preset.default_window);
        if window == 0 {
            return Err(err_in(self.source.as_deref(), "window", "must be > 0"));
        }
        let resolved = ResolvedConfig {
            preset: preset_name.to_string(),
            window,
            max_output_tokens: self.max_output_tokens,
            counter: self
                .counter
                .clone()
                .unwrap_or_else(|| preset.counter.to_string()),
            layers,
        };
        let named = |mut e: ConfigError| {
            if let Some(src) = &self.source {
                e.file = src.clone();
            }
            e
        };
        resolved.make_counter().map_err(named)?;
        for l in &resolved.layers {
            validate_layer(l).map_err(named)?;
        }
        Ok(resolved)
    }
}

fn validate_layer(l: &LayerConfig) -> Result<(), ConfigError> {
    // Fractions (triggers, keeps, limits) are checked when deserialized (`Fraction`).
    match l {
        LayerConfig::Summarize(s) if s.summary_max_tokens == 0 => {
            Err(err("summarize.summary_max_tokens", "must be > 0"))
        }
        LayerConfig::Summarize(s) if s.history != History::None && s.history_dir.is_empty() => {
            Err(err(
                "summarize.history_dir",
                "is empty; to keep nothing the agent can reach, set summarize.history = \"none\"",
            ))
        }
        LayerConfig::EvictToolResults(e) if e.head_lines + e.tail_lines == 0 => Err(err(
            "evict_tool_results",
            "head_lines + tail_lines must be > 0",
        )),
        LayerConfig::Truncate(t) if t.keep == Keep::Messages(0) => {
            Err(err("truncate.keep", "must keep at least one message"))
        }
        LayerConfig::Emergency(e) => {
            if e.min_keep == 0 || e.keep_recent < e.min_keep {
                return Err(err(
                    "emergency",
                    format!(
                        "need 0 < min_keep ({}) <= keep_recent ({})",
                        e.min_keep, e.keep_recent
                    ),
                ));
            }
            Ok(())
        }
        LayerConfig::TurnTrim(t) => {
            if t.max_turns == 0 || t.overflow_max_turns == 0 {
                return Err(err(
                    "turn_trim",
                    "max_turns and overflow_max_turns must be > 0",
                ));
            }
            if t.tool_result_max_chars < 2
                || t.overflow_tool_result_chars < 2
                || t.overflow_user_chars < 2
            {
                return Err(err("turn_trim", "character limits must be >= 2"));
            }
            Ok(())
        }
        LayerConfig::Checkpoint(c) if c.summary_max_tokens == 0 => {
            Err(err("checkpoint.summary_max_tokens", "must be > 0"))
        }
        LayerConfig::Watchdog(w) if w.threshold < 2 => {
            Err(err("watchdog.threshold", "must be >= 2"))
        }
        LayerConfig::CostCeiling(c) => {
            for (key, v) in [
                ("cost_ceiling.per_turn_usd", c.per_turn_usd),
                ("cost_ceiling.per_session_usd", c.per_session_usd),
                ("cost_ceiling.input_usd_per_mtok", c.input_usd_per_mtok),
                ("cost_ceiling.output_usd_per_mtok", c.output_usd_per_mtok),
            ] {
                if let Some(v) = v {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(err(key, format!("expected a dollar amount >= 0, got {v}")));
                    }
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
