//! Value types of engine configuration (triggers, keeps, sizes, text sources, model tiers)
//! shared by the layers, with [`LayerConfig`], the configured pipeline's element. Each
//! layer's own configuration struct lives beside its code in `engine/layers/<layer>.rs`.
//! Deserialization checks constrained values ([`Fraction`]).

use crate::confcore::newtypes::{Fraction, TriggerTokens};
use crate::confcore::ConfigError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

// Each layer's configuration lives beside its code (`engine/layers/<layer>.rs`); re-exported
// here so `engine::layer_config::Summarize` and `engine::config::Summarize` keep working.
pub use super::layers::checkpoint::Checkpoint;
pub use super::layers::clear::ClearToolResults;
pub use super::layers::compact::Compact;
pub use super::layers::condense::Condense;
pub use super::layers::cost_ceiling::{CeilingAction, CostCeiling};
pub use super::layers::emergency::Emergency;
pub use super::layers::evict::EvictToolResults;
pub use super::layers::evict_user::EvictUserMessages;
pub use super::layers::summarize::Summarize;
pub use super::layers::trim::TurnTrim;
pub use super::layers::truncate::Truncate;
pub use super::layers::truncate_args::TruncateArgs;
pub use super::layers::watchdog::Watchdog;
pub use super::layers::LayerConfig;

/// When a layer fires: a fraction of the window or an absolute token count. A fraction is
/// checked to be in (0, 1] when deserialized (`confcore::newtypes::Fraction`), a count to be at
/// least 1 (`confcore::newtypes::TriggerTokens`: 0 is refused like a fraction of 0).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields, from = "TriggerRepr")]
pub enum Trigger {
    Fraction(f64),
    Tokens(u64),
}

/// What a [`Trigger`] deserializes from: the same choice, with the fraction constrained.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum TriggerRepr {
    Fraction(Fraction),
    Tokens(TriggerTokens),
}

impl From<TriggerRepr> for Trigger {
    fn from(r: TriggerRepr) -> Trigger {
        match r {
            TriggerRepr::Fraction(f) => Trigger::Fraction(f.get()),
            TriggerRepr::Tokens(t) => Trigger::Tokens(t.get()),
        }
    }
}

impl Trigger {
    /// Threshold in tokens for `window` (`int(fraction · window)`, as Python computes it).
    pub fn tokens(self, window: u64) -> u64 {
        match self {
            Trigger::Fraction(f) => (f * window as f64) as u64,
            Trigger::Tokens(t) => t,
        }
    }
}

/// How much recent context a layer keeps verbatim (a fraction is checked like a trigger's).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields, from = "KeepRepr")]
pub enum Keep {
    Messages(usize),
    Tokens(u64),
    Fraction(f64),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum KeepRepr {
    Messages(usize),
    Tokens(u64),
    Fraction(Fraction),
}

impl From<KeepRepr> for Keep {
    fn from(r: KeepRepr) -> Keep {
        match r {
            KeepRepr::Messages(n) => Keep::Messages(n),
            KeepRepr::Tokens(t) => Keep::Tokens(t),
            KeepRepr::Fraction(f) => Keep::Fraction(f.get()),
        }
    }
}

impl Keep {
    /// Token budget for `window`, or `None` when keep counts messages.
    pub fn tokens(self, window: u64) -> Option<u64> {
        match self {
            Keep::Messages(_) => None,
            Keep::Tokens(t) => Some(t),
            Keep::Fraction(f) => Some((f * window as f64) as u64),
        }
    }
}

/// A size threshold: characters of the text (deepagents) or tokens of the message.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Size {
    Chars(u64),
    Tokens(u64),
}

/// Text given inline or read from a file (summary prompts, system prompts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TextSource {
    Text(String),
    File(PathBuf),
}

impl TextSource {
    pub fn load(&self) -> Result<String, ConfigError> {
        match self {
            TextSource::Text(t) => Ok(t.clone()),
            TextSource::File(p) => std::fs::read_to_string(p).map_err(|e| {
                ConfigError::new(
                    p.display().to_string(),
                    0,
                    format!("cannot read prompt file: {e}"),
                )
            }),
        }
    }
}

/// Model tiers with their default summarization trigger (core-agent semantics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelTier {
    Frontier,
    Mid,
    Small,
}

impl ModelTier {
    /// core-agent's `pkg/modeltier`: tier by substring of the model id (case-insensitive);
    /// `None` for models it does not classify. Small is checked first (`gemini-2.5-flash`),
    /// then mid (`gemini-2.5-pro` before the generic frontier `-pro`).
    pub fn from_model_id(model: &str) -> Option<ModelTier> {
        let m = model.to_ascii_lowercase();
        const SMALL: [&str; 5] = ["haiku", "flash", "-mini", "-nano", "-lite"];
        const MID: [&str; 4] = ["sonnet", "gemini-2.5-pro", "gemini-1.5-pro", "gpt-4o"];
        const FRONTIER: [&str; 6] = ["opus", "-pro", "gpt-5", "gpt-4.1", "o3", "o1"];
        if SMALL.iter().any(|s| m.contains(s)) {
            Some(ModelTier::Small)
        } else if MID.iter().any(|s| m.contains(s)) {
            Some(ModelTier::Mid)
        } else if FRONTIER.iter().any(|s| m.contains(s)) {
            Some(ModelTier::Frontier)
        } else {
            None
        }
    }

    pub fn trigger_fraction(self) -> f64 {
        match self {
            ModelTier::Frontier => 0.85,
            ModelTier::Mid => 0.65,
            ModelTier::Small => 0.35,
        }
    }
}

/// What the agent can still reach of a slice a layer removed from its context (the `history`
/// option of `summarize`, `checkpoint` and `turn_trim`; the preset table in `docs/engine.md`
/// says which real system does what).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum History {
    /// The raw turns are appended to a file in the offload store that the summary names
    /// (deepagents' `/conversation_history/session_….md`).
    #[default]
    Offload,
    /// Only the summary text is appended to `<dir>/MEMORY.md`, a file the agent can read (the
    /// turn-trimming agent's memory file); the raw turns are gone.
    Memory,
    /// Nothing the agent can reach is written: the summary in the context is all that is left.
    None,
}

impl History {
    pub fn is_offload(&self) -> bool {
        *self == History::Offload
    }
    pub fn as_str(self) -> &'static str {
        match self {
            History::Offload => "offload",
            History::Memory => "memory",
            History::None => "none",
        }
    }
}

/// Where the summary message goes in the request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryRole {
    /// A user (human) message, as deepagents and LangChain insert it.
    #[default]
    User,
    /// A system message (digitorn replaces the slice with a summary system message).
    System,
}

impl SummaryRole {
    pub fn is_user(&self) -> bool {
        *self == SummaryRole::User
    }
}
