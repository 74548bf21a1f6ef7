//! Resolution of an [`EngineConfig`] into a [`ResolvedConfig`]: preset layers → model tier →
//! per-layer overrides (the one merge rule, [`crate::confcore::merge`]) → layer order →
//! window; then every layer's own checks. Lives apart from `config` so that the presets
//! (which build layer configurations) and the configuration types do not depend on each other.

use super::config::{err, err_in, EngineConfig};
use super::layer_config::{LayerConfig, ModelTier, Trigger};
use crate::confcore::merge::merge;
use crate::confcore::ConfigError;

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
                err_in(
                    self.source.as_deref(),
                    &key.join("."),
                    e.inner().to_string(),
                )
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
}
