//! Resolution of an [`EngineConfig`] into a [`ResolvedConfig`]: preset layers → model tier →
//! per-layer overrides (the one merge rule, [`crate::confcore::merge`]) → layer order →
//! window; then every layer's own checks. Lives apart from `config` so that the presets
//! (which build layer configurations) and the configuration types do not depend on each other.

use super::config::{err, err_in, plain_message, EngineConfig};
use super::layer_config::{LayerConfig, ModelTier, Trigger};
use crate::confcore::merge::merge;
use crate::confcore::{did_you_mean, ConfigError};

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
    /// What the suite adds to every request that the trace left out.
    pub added: AddedContext,
    /// The external engine that replaces the layers (`preset` is then `"external"`).
    pub external: Option<super::external::ExternalSpec>,
}

/// Request content the trace did not record, added to every replayed request (the
/// configuration's `system_prompt`, `tools` and `overhead_tokens`, loaded at resolve).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AddedContext {
    /// Counted as one `system` message.
    pub system_prompt: Option<std::sync::Arc<str>>,
    /// Replace the trace's recorded tool schemas.
    pub tools: Option<std::sync::Arc<Vec<serde_json::Value>>>,
    /// Plain tokens added to every request.
    pub overhead_tokens: u64,
}

impl AddedContext {
    fn load(c: &EngineConfig) -> Result<Self, ConfigError> {
        let src = c.source.as_deref();
        let system_prompt = match &c.system_prompt {
            Some(t) => Some(t.load().map_err(|e| {
                err_in(src, "system_prompt", format!("{} ({})", e.message, e.file))
            })?),
            None => None,
        };
        let tools = match &c.tools {
            Some(t) => {
                let text = t
                    .load()
                    .map_err(|e| err_in(src, "tools", format!("{} ({})", e.message, e.file)))?;
                let where_ = match t {
                    super::layer_config::TextSource::File(p) => p.display().to_string(),
                    super::layer_config::TextSource::Text(_) => "tools.text".to_string(),
                };
                let v: Vec<serde_json::Value> = serde_json::from_str(&text).map_err(|e| {
                    err_in(
                        src,
                        "tools",
                        format!(
                            "{where_}:{}: expected a JSON array of tool schemas as the provider receives them: {e}",
                            e.line()
                        ),
                    )
                })?;
                Some(std::sync::Arc::new(v))
            }
            None => None,
        };
        let overhead_tokens = match &c.overhead_tokens {
            Some(o) => o
                .tokens()
                .map_err(|e| err_in(src, "overhead_tokens", e.to_string()))?,
            None => 0,
        };
        Ok(AddedContext {
            system_prompt: system_prompt.map(std::sync::Arc::from),
            tools,
            overhead_tokens,
        })
    }
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

// The "model tier sets the trigger" rule lives here and only here: a configured `tier` (at
// resolve) and an eval's trigger sweep move every compaction trigger with
// [`set_compaction_trigger`]; a layer whose trigger follows the trace model's tier
// (`tier_from_model`, core-agent) gets it at build with [`apply_model_tier`]; an explicit
// trigger (a sweep, a `tier`, or `trigger` in the layer's override table) turns that off.
// Which trigger a layer exposes is its own business (`LayerSpec::compaction_trigger`).

/// Move every context-pressure compaction trigger (each layer's
/// `LayerSpec::compaction_trigger`: summarize, truncate, args truncation) to `fraction` of
/// the window; an explicit trigger turns off the model-tier default. Returns false when
/// there is no such layer.
pub fn set_compaction_trigger(layers: &mut [LayerConfig], fraction: f64) -> bool {
    let mut any = false;
    for l in layers {
        let Some(t) = l.compaction_trigger() else {
            continue;
        };
        *t = Trigger::Fraction(fraction);
        pin_trigger(l);
        any = true;
    }
    any
}

/// An explicit trigger wins over the model-tier default (core-agent).
fn pin_trigger(l: &mut LayerConfig) {
    if let Some(follows) = l.tier_from_model() {
        *follows = false;
    }
}

/// At build: layers whose trigger still follows the trace model's tier get that tier's
/// fraction (frontier 0.85, mid 0.65, small 0.35); unknown models keep the trigger.
pub fn apply_model_tier(layers: &mut [LayerConfig], model: Option<&str>) {
    let Some(tier) = model.and_then(ModelTier::from_model_id) else {
        return;
    };
    for l in layers {
        if l.tier_from_model().is_some_and(|f| *f) {
            if let Some(t) = l.compaction_trigger() {
                *t = Trigger::Fraction(tier.trigger_fraction());
            }
        }
    }
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

    /// Resolve for a trace that records neither a window nor a model (as most formats do): the
    /// window comes from this configuration, else its `agent_model`'s context window in
    /// `prices`, else the preset. What a suite is checked against at load, so that the window
    /// an output reservation is checked against is the one the variant runs with, not the
    /// preset's default when `agent_model` gives another.
    pub fn resolve_untraced(
        &self,
        prices: &crate::pricing::PriceTable,
    ) -> Result<ResolvedConfig, ConfigError> {
        let model = self.agent_model.as_deref();
        let model_window = model.and_then(|m| prices.context_window(m).map(|w| (m, w)));
        self.resolve_with(None, model_window)
    }

    /// Resolve against the preset, the trace's window and, when neither the configuration nor
    /// the trace gives a window, the agent model's context window (`(model, tokens)`, from the
    /// price table) before the preset's default.
    pub fn resolve_with(
        &self,
        trace_window: Option<u64>,
        model_window: Option<(&str, u64)>,
    ) -> Result<ResolvedConfig, ConfigError> {
        if let Some(ext) = &self.external {
            let src = self.source.as_deref();
            // Named by the key beside `external` that it replaces (what a `--set` or a line
            // wrote), not by `external` itself.
            let beside = [
                self.preset.is_some().then_some("preset"),
                self.layers.is_some().then_some("layers"),
                self.tier.is_some().then_some("tier"),
            ]
            .into_iter()
            .flatten()
            .chain(self.tables.keys().map(String::as_str))
            .next();
            if let Some(key) = beside {
                return Err(err_in(
                    src,
                    key,
                    "an external engine replaces the preset and its layers: drop `preset`, `layers`, `tier` and layer tables from this configuration",
                ));
            }
            ext.check().map_err(|(key, m)| err_in(src, key, m))?;
        }
        // An external engine runs no preset layers; the `none` preset gives the defaults
        // (window, counter).
        let preset_name = match (&self.external, self.preset.as_deref()) {
            (Some(_), _) => "none",
            (None, p) => p.unwrap_or("deepagents"),
        };
        let preset = super::presets::preset(preset_name).ok_or_else(|| {
            err_in(
                self.source.as_deref(),
                "preset",
                format!(
                    "unknown preset {preset_name:?} (known: {}){}",
                    super::presets::NAMES.join(", "),
                    did_you_mean(preset_name, super::presets::NAMES.iter().copied())
                ),
            )
        })?;
        let mut layers = preset.layers;
        if let Some(tier) = self.tier {
            set_compaction_trigger(&mut layers, tier.trigger_fraction());
        }
        if let Some(name) = self
            .tables
            .keys()
            .find(|k| super::layers::entry(k).is_none())
        {
            return Err(err_in(
                self.source.as_deref(),
                name,
                format!("unknown layer table `{name}`"),
            ));
        }
        // In registry order, so the first error reported does not depend on the file's order.
        for entry in super::layers::REGISTRY {
            let name = entry.name;
            let Some(patch) = self.tables.get(name) else {
                continue;
            };
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
            *layer = (entry.parse)(v).map_err(|e| {
                let key = ConfigError::key_of(&[name], e.path());
                let message = plain_message(&e.inner().to_string(), Some(patch), &key[1..]);
                err_in(self.source.as_deref(), &key.join("."), message)
            })?;
            if patch.as_object().is_some_and(|p| p.contains_key("trigger")) {
                pin_trigger(layer);
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
        // deepagents' input budget, `int(0.95·window) − max_output_tokens`: none left means no
        // request fits (the replay would stop at its first call).
        if let Some(out) = self.max_output_tokens {
            let budget = (0.95 * window as f64) as u64;
            if out >= budget {
                return Err(err_in(
                    self.source.as_deref(),
                    "max_output_tokens",
                    format!(
                        "{out} leaves no input budget in a window of \
                         {window} tokens (from {window_source}): the budget is 95% of the \
                         window minus the output reservation ({budget} − {out}); lower it \
                         below {budget}, or raise the window"
                    ),
                ));
            }
        }
        let resolved = ResolvedConfig {
            preset: match self.external {
                Some(_) => "external".to_string(),
                None => preset_name.to_string(),
            },
            window,
            max_output_tokens: self.max_output_tokens,
            counter: self
                .counter
                .clone()
                .unwrap_or_else(|| preset.counter.to_string()),
            layers,
            window_source,
            agent_model: self.agent_model.clone(),
            added: AddedContext::load(self)?,
            external: self.external.clone(),
        };
        let named = |mut e: ConfigError| {
            if let Some(src) = &self.source {
                e.file = src.clone();
            }
            e
        };
        resolved.make_counter().map_err(named)?;
        for l in &resolved.layers {
            l.validate().map_err(named)?;
        }
        Ok(resolved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summarize_trigger(layers: &[LayerConfig]) -> Trigger {
        layers
            .iter()
            .find_map(|l| match l {
                LayerConfig::Summarize(s) => Some(s.trigger),
                _ => None,
            })
            .unwrap()
    }

    fn core_agent(sets: &[&str]) -> Vec<LayerConfig> {
        let sets: Vec<String> = ["preset=\"core-agent\""]
            .iter()
            .chain(sets)
            .map(|s| s.to_string())
            .collect();
        EngineConfig::default()
            .apply_sets(&sets)
            .unwrap()
            .resolve(Some(100_000))
            .unwrap()
            .layers
    }

    #[test]
    fn the_trace_model_tier_moves_only_unpinned_triggers() {
        let mut layers = core_agent(&[]);
        apply_model_tier(&mut layers, Some("claude-haiku-4-5"));
        assert_eq!(summarize_trigger(&layers), Trigger::Fraction(0.35));
        let mut layers = core_agent(&[]);
        apply_model_tier(&mut layers, Some("llama-3-70b"));
        assert_eq!(summarize_trigger(&layers), Trigger::Fraction(0.85));
        // An explicit trigger, a configured tier or a sweep pins the trigger.
        for sets in [
            &["summarize.trigger.fraction=0.5"][..],
            &["tier=\"mid\""][..],
        ] {
            let mut layers = core_agent(sets);
            let before = summarize_trigger(&layers);
            apply_model_tier(&mut layers, Some("claude-haiku-4-5"));
            assert_eq!(summarize_trigger(&layers), before, "{sets:?}");
        }
        let mut layers = core_agent(&[]);
        assert!(set_compaction_trigger(&mut layers, 0.15));
        apply_model_tier(&mut layers, Some("claude-haiku-4-5"));
        assert_eq!(summarize_trigger(&layers), Trigger::Fraction(0.15));
        let mut none: Vec<LayerConfig> = Vec::new();
        assert!(!set_compaction_trigger(&mut none, 0.15));
    }

    // --- window resolution ---
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
        // Without a trace: the configuration's window, else `agent_model`'s, else the preset's,
        // as `resolve_for` on a trace that records no window and no model.
        let untraced = meta(None, None);
        for (config, window) in [(&c, 200_000), (&own, 9_000), (&other, 128_000)] {
            let r = config.resolve_untraced(prices).unwrap();
            assert_eq!(r.window, window);
            assert_eq!(r, config.resolve_for(&untraced, prices).unwrap());
        }
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
