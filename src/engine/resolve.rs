//! Resolution of an [`EngineConfig`] into a [`ResolvedConfig`]: preset layers → model tier →
//! per-layer overrides (the one merge rule, [`crate::confcore::merge`]) → layer order →
//! window; then every layer's own checks. Lives apart from `config` so that the presets
//! (which build layer configurations) and the configuration types do not depend on each other.

use super::config::{err, err_in, EngineConfig};
use super::layer_config::{Keep, LayerConfig, Trigger};
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
    /// Where `window` came from.
    pub window_source: WindowSource,
    /// `agent_model` of the configuration (None = the trace's recorded model).
    pub agent_model: Option<String>,
}

/// Where a resolved window came from, in the order they are tried: the configuration's own
/// `window`, the trace's recorded window, the agent model's context window in the price table
/// (`data/pricing.toml`), then the preset's default.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "from", content = "model", rename_all = "snake_case")]
pub enum WindowSource {
    Config,
    Trace,
    /// The price table's `context_window` of this model.
    Model(String),
    Preset,
}

impl std::fmt::Display for WindowSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WindowSource::Config => f.write_str("the configuration's `window`"),
            WindowSource::Trace => f.write_str("the trace's recorded window"),
            WindowSource::Model(m) => write!(f, "the price table's context window of `{m}`"),
            WindowSource::Preset => f.write_str("the preset's default"),
        }
    }
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

    /// The model that prices the agent's replayed views of a trace: the configuration's
    /// `agent_model`, else the model the trace recorded.
    pub fn agent_model<'a>(&'a self, trace_model: Option<&'a str>) -> Option<&'a str> {
        self.agent_model.as_deref().or(trace_model)
    }

    /// The counter this configuration names.
    pub fn make_counter(
        &self,
    ) -> Result<std::sync::Arc<dyn crate::tokens::TokenCounter>, ConfigError> {
        // Every counter `tokens::counter` knows (o200k, cl100k, approx, approx-anthropic), so
        // `ctxbench replay --counter X` and a suite's `counter = "X"` count the same way.
        crate::tokens::counter(&self.counter).map_err(|e| err("counter", e.to_string()))
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
        self.resolve_with(trace_window, None)
    }

    /// Resolve for one trace: the window comes from this configuration, else the trace, else
    /// the agent model's (`agent_model`, else the trace's model) context window in `prices`,
    /// else the preset. `ctxbench run` and `ctxbench replay` both resolve through here.
    pub fn resolve_for(
        &self,
        meta: &crate::trace::TraceMeta,
        prices: &crate::pricing::PriceTable,
    ) -> Result<ResolvedConfig, ConfigError> {
        let model = self.agent_model.as_deref().or(meta.model.as_deref());
        let model_window = model.and_then(|m| prices.context_window(m).map(|w| (m, w)));
        self.resolve_with(meta.window, model_window)
    }

    /// Resolve against the preset, the trace's window and, when neither the configuration nor
    /// the trace gives a window, the agent model's context window (`(model, tokens)`, from the
    /// price table) before the preset's default.
    pub fn resolve_with(
        &self,
        trace_window: Option<u64>,
        model_window: Option<(&str, u64)>,
    ) -> Result<ResolvedConfig, ConfigError> {
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
        let (window, window_source) = match (self.window, trace_window, model_window) {
            (Some(w), _, _) => (w, WindowSource::Config),
            (None, Some(w), _) => (w, WindowSource::Trace),
            (None, None, Some((m, w))) => (w, WindowSource::Model(m.to_string())),
            (None, None, None) => (preset.default_window, WindowSource::Preset),
        };
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
            window_source,
            agent_model: self.agent_model.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pricing::PriceTable;
    use crate::trace::{SourceFormat, TraceMeta};

    fn meta(model: Option<&str>, window: Option<u64>) -> TraceMeta {
        let mut m = TraceMeta::new("t", SourceFormat::Canonical);
        m.model = model.map(str::to_string);
        m.window = window;
        m
    }

    #[test]
    fn the_window_comes_from_config_then_trace_then_model_then_preset() {
        let prices = PriceTable::bundled();
        let c = EngineConfig::default();
        let r = c.resolve_for(&meta(Some("gpt-4o"), None), prices).unwrap();
        assert_eq!(r.window, 128_000, "gpt-4o's window in the price table");
        assert_eq!(r.window_source, WindowSource::Model("gpt-4o".into()));
        let r = c
            .resolve_for(&meta(Some("gpt-4o"), Some(50_000)), prices)
            .unwrap();
        assert_eq!((r.window, r.window_source), (50_000, WindowSource::Trace));
        let r = c
            .resolve_for(&meta(Some("no-such-model"), None), prices)
            .unwrap();
        assert_eq!(r.window_source, WindowSource::Preset);
        assert_eq!(
            r.window,
            crate::engine::presets::preset("deepagents")
                .unwrap()
                .default_window
        );
        let mut own = c.clone();
        own.window = Some(9_000);
        let r = own
            .resolve_for(&meta(Some("gpt-4o"), Some(50_000)), prices)
            .unwrap();
        assert_eq!((r.window, r.window_source), (9_000, WindowSource::Config));
        // `agent_model` prices the views and gives the window when the trace names another.
        let mut other = c.clone();
        other.agent_model = Some("gpt-4o".into());
        let r = other
            .resolve_for(&meta(Some("no-such-model"), None), prices)
            .unwrap();
        assert_eq!(r.window, 128_000);
        assert_eq!(r.agent_model(Some("no-such-model")), Some("gpt-4o"));
        assert_eq!(
            r.window_source.to_string(),
            "the price table's context window of `gpt-4o`"
        );
    }

    #[test]
    fn every_counter_name_builds_a_counter() {
        let mut c = EngineConfig::default().resolve(None).unwrap();
        for name in ["o200k", "cl100k", "approx", "approx-anthropic"] {
            c.counter = name.into();
            assert_eq!(c.make_counter().unwrap().name(), name);
        }
        c.counter = "o200".into();
        assert!(c.make_counter().is_err());
    }
}
