//! The layers of the engine, one file each, and the factory that builds a pipeline from a
//! resolved configuration and the trace it will replay (some layers read the trace's model,
//! goal or boundary markers).

pub mod checkpoint;
pub mod clear;
pub mod cost_ceiling;
pub mod emergency;
pub mod evict;
pub mod evict_user;
pub mod preview;
pub mod summarize;
pub mod trim;
pub mod truncate;
pub mod truncate_args;
pub mod watchdog;

use super::layer::Layer;
use super::layer_config::{LayerConfig, ModelTier, Trigger};
use super::resolve::ResolvedConfig;
use super::summarizer::DEFAULT_SUMMARY_PROMPT;
use crate::confcore::ConfigError;
use crate::trace::{ContextMarker, TraceMeta};

/// A message from the user that starts a turn: a user message that is not harness output
/// (`meta`, observations, format errors, demos, compaction summaries…); simulated users
/// (`user_simulator`) count.
pub fn is_user_turn(m: &crate::trace::Message) -> bool {
    m.role == crate::trace::Role::User && matches!(m.kind.as_deref(), None | Some("user_simulator"))
}

/// Build the layer pipeline of a resolved configuration for `trace` (loads prompt files).
pub fn build(
    config: &ResolvedConfig,
    meta: &TraceMeta,
    markers: &[ContextMarker],
    messages: &[std::sync::Arc<crate::trace::Message>],
    prices: &crate::pricing::PriceTable,
) -> Result<Vec<Box<dyn Layer>>, ConfigError> {
    let mut out: Vec<Box<dyn Layer>> = Vec::with_capacity(config.layers.len());
    for l in &config.layers {
        out.push(match l {
            LayerConfig::EvictToolResults(c) => {
                Box::new(evict::EvictToolResultsLayer::new(c.clone()))
            }
            LayerConfig::EvictUserMessages(c) => {
                Box::new(evict_user::EvictUserMessagesLayer::new(c.clone()))
            }
            LayerConfig::TruncateArgs(c) => {
                Box::new(truncate_args::TruncateArgsLayer::new(c.clone()))
            }
            LayerConfig::Summarize(c) => {
                let prompt = match &c.prompt {
                    Some(src) => src.load()?,
                    None => DEFAULT_SUMMARY_PROMPT.to_string(),
                };
                let mut c = c.clone();
                if c.tier_from_model {
                    if let Some(tier) = meta.model.as_deref().and_then(ModelTier::from_model_id) {
                        c.trigger = Trigger::Fraction(tier.trigger_fraction());
                    }
                }
                Box::new(summarize::SummarizeLayer::new(c, prompt))
            }
            LayerConfig::ClearToolResults(c) => {
                Box::new(clear::ClearToolResultsLayer::new(c.clone()))
            }
            LayerConfig::Truncate(c) => {
                Box::new(truncate::TruncateLayer::new(c.clone(), meta.goal.clone()))
            }
            LayerConfig::Emergency(c) => {
                Box::new(emergency::EmergencyLayer::new(c.clone(), meta.goal.clone()))
            }
            LayerConfig::TurnTrim(c) => Box::new(trim::TurnTrimLayer::new(c.clone())),
            LayerConfig::Checkpoint(c) => {
                let prompt = match &c.prompt {
                    Some(src) => src.load()?,
                    None => checkpoint::CHECKPOINT_PROMPT.to_string(),
                };
                Box::new(checkpoint::CheckpointLayer::new(c.clone(), prompt, markers))
            }
            LayerConfig::Watchdog(c) => Box::new(watchdog::WatchdogLayer::new(c.clone())),
            LayerConfig::CostCeiling(c) => Box::new(cost_ceiling::CostCeilingLayer::new(
                {
                    // `[engine] agent_model` prices the views unless the layer names a model.
                    let mut c = c.clone();
                    if c.model.is_none() {
                        c.model.clone_from(&config.agent_model);
                    }
                    c
                },
                meta,
                messages,
                prices,
            )?),
        });
    }
    Ok(out)
}
