//! Value types of engine configuration (triggers, keeps, sizes, text sources, model tiers)
//! and each layer's configuration struct, with [`LayerConfig`], the configured pipeline's
//! element. Deserialization checks constrained values ([`Fraction`]).

use crate::confcore::newtypes::Fraction;
use crate::confcore::ConfigError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// When a layer fires: a fraction of the window or an absolute token count. A fraction is
/// checked to be in (0, 1] when deserialized ([`Fraction`]).
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
    Tokens(u64),
}

impl From<TriggerRepr> for Trigger {
    fn from(r: TriggerRepr) -> Trigger {
        match r {
            TriggerRepr::Fraction(f) => Trigger::Fraction(f.get()),
            TriggerRepr::Tokens(t) => Trigger::Tokens(t),
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

/// Evict large tool results at tool time (persistent): full text to
/// `<path_prefix>/<sanitized tool_call_id>`, stub with a head/tail numbered preview.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvictToolResults {
    /// Evict when the result is longer than this.
    pub threshold: Size,
    /// Tools whose results are never evicted.
    pub excluded_tools: Vec<String>,
    pub head_lines: usize,
    pub tail_lines: usize,
    /// Each preview line is cut to this many characters.
    pub line_chars: usize,
    pub path_prefix: String,
}

/// Offload a large user message; requests show a preview instead (per-request view).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvictUserMessages {
    pub threshold: Size,
    /// deepagents only looks at the last state message when a call is made.
    pub only_last_message: bool,
    pub head_lines: usize,
    pub tail_lines: usize,
    pub line_chars: usize,
    pub path_prefix: String,
}

/// Truncate long write/edit string arguments outside the keep window (per-request view).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TruncateArgs {
    pub trigger: Trigger,
    pub keep: Keep,
    pub tools: Vec<String>,
    pub max_arg_chars: usize,
    pub keep_prefix_chars: usize,
    pub suffix: String,
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

/// Summarize older turns (persistent compaction), with deepagents' budget rule and tail clip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summarize {
    pub trigger: Trigger,
    /// Also summarize when the request exceeds `0.95·window − max_output_tokens`.
    pub trigger_over_budget: bool,
    pub keep: Keep,
    /// Summary prompt; `None` = the built-in default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<TextSource>,
    pub summary_max_tokens: u64,
    /// Directory of the history file (`<dir>/session_<hex>.md`) or of `MEMORY.md`.
    pub history_dir: String,
    /// What the agent can still reach of the summarized slice.
    #[serde(default, skip_serializing_if = "History::is_offload")]
    pub history: History,
    /// Role of the summary message.
    #[serde(default, skip_serializing_if = "SummaryRole::is_user")]
    pub summary_role: SummaryRole,
    /// After summarizing, clip the trailing tool results while the request is over budget.
    pub clip_tail_over_budget: bool,
    /// `read_file` results clipped over budget keep this many leading characters.
    pub read_file_slice_chars: usize,
    /// Stop the replay (context overflow) when the request is still over budget.
    pub stop_on_overflow: bool,
    /// core-agent: the trigger is the tier fraction of the trace's model (frontier 0.85, mid
    /// 0.65, small 0.35, by model-id substring); unknown models keep `trigger`. An explicit
    /// `tier` or `summarize.trigger` in the configuration turns this off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tier_from_model: bool,
}

/// LangChain `ClearToolUsesEdit` (ContextEditingMiddleware): when the request is over the
/// trigger, every tool result but the last `keep` shows `placeholder` in that request (the
/// state keeps the original: a per-request view, recomputed on every call).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClearToolResults {
    /// Clear when the request is strictly over this.
    pub trigger: Trigger,
    /// Most recent tool results kept verbatim (excluded tools count among them).
    pub keep: usize,
    pub excluded_tools: Vec<String>,
    /// Shown instead of the result; `{path}` is replaced by the offload path when `offload`.
    pub placeholder: String,
    /// Also empty the arguments of the cleared calls (LangChain `clear_tool_inputs`).
    pub clear_tool_inputs: bool,
    /// Stop clearing once this many tokens were freed (0 = clear all candidates).
    pub clear_at_least: u64,
    /// Write each cleared result to `<path_prefix>/<id>` first and point at it. Off in the
    /// LangChain semantics: the placeholder names no file and nothing is recoverable.
    pub offload: bool,
    pub path_prefix: String,
}

/// digitorn `truncate` strategy: at the trigger, drop everything before a safe split that
/// keeps the most recent `keep`, and inject one reminder message (goal + recent activity).
/// No LLM, and nothing is offloaded: the no-offload baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Truncate {
    pub trigger: Trigger,
    pub keep: Keep,
    /// Inject the reminder (digitorn `_build_context_reminder`).
    pub reminder: bool,
    /// Tool calls listed under "recent activity" in the reminder.
    pub recent_activity: usize,
    /// Cap on the reminder's goal text, in characters.
    pub goal_max_chars: usize,
}

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

/// Turn trimming (seed 001): historical tool results clipped head+tail; over `max_turns`
/// complete turns, the oldest half is dropped (to memory); over `max_tokens`, text-compress
/// (fewer than `compress_below_turns` turns) or trim again; on overflow, aggressive limits,
/// then only the current turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnTrim {
    /// Token budget of the context (seed 001 `agent_max_context_tokens`).
    pub max_tokens: Trigger,
    /// `agent_max_context_turns`.
    pub max_turns: usize,
    /// Historical tool results longer than this are clipped head+tail.
    pub tool_result_max_chars: usize,
    pub compress_below_turns: usize,
    /// Dropped turns are appended here (`<memory_dir>/history.md`, summary in `MEMORY.md`).
    pub memory_dir: String,
    /// Ask the summarizer for a memory note of the dropped turns (not sent to the model).
    pub memory_summary: bool,
    /// `offload`: dropped turns are appended to `<memory_dir>/history.md` (and the note to
    /// `MEMORY.md`); `memory`: only the note is written; `none`: nothing is written.
    #[serde(default, skip_serializing_if = "History::is_offload")]
    pub history: History,
    pub overflow_tool_result_chars: usize,
    pub overflow_user_chars: usize,
    pub overflow_max_turns: usize,
}

/// Task-boundary checkpoints (core-agent Mechanism C): at a boundary marker in the trace (or
/// after a `tools` call such as `mark_task_done`), the prior task is summarized into a
/// completion record and sliced out of later requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// `trace.markers` kinds that mark a boundary.
    pub marker_kinds: Vec<String>,
    /// Tool calls that mark the end of a task.
    pub tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<TextSource>,
    pub summary_max_tokens: u64,
    pub history_dir: String,
    /// `offload`: the raw messages go to `<history_dir>/checkpoints_<hex>.md`, named by the
    /// record; `memory`: the record is appended to `<history_dir>/MEMORY.md`; `none`: nothing.
    #[serde(default, skip_serializing_if = "History::is_offload")]
    pub history: History,
}

/// Watchdog (core-agent): the same tool with literally identical arguments `threshold` times in
/// a row → one `watchdog` alert per run. Observes only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Watchdog {
    pub threshold: usize,
}

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

/// One configured layer, in pipeline order.
#[derive(Clone, Debug, PartialEq)]
pub enum LayerConfig {
    EvictToolResults(EvictToolResults),
    EvictUserMessages(EvictUserMessages),
    TruncateArgs(TruncateArgs),
    Summarize(Summarize),
    ClearToolResults(ClearToolResults),
    Truncate(Truncate),
    Emergency(Emergency),
    TurnTrim(TurnTrim),
    Checkpoint(Checkpoint),
    Watchdog(Watchdog),
    CostCeiling(CostCeiling),
}

/// Config-table names of every layer kind (for `--set` and error messages).
pub const LAYER_NAMES: [&str; 11] = [
    "evict_tool_results",
    "evict_user_messages",
    "truncate_args",
    "summarize",
    "clear_tool_results",
    "truncate",
    "emergency",
    "turn_trim",
    "checkpoint",
    "watchdog",
    "cost_ceiling",
];

impl LayerConfig {
    /// The layer's name: its table name in config files and its `layer` in events.
    pub fn name(&self) -> &'static str {
        match self {
            LayerConfig::EvictToolResults(_) => "evict_tool_results",
            LayerConfig::EvictUserMessages(_) => "evict_user_messages",
            LayerConfig::TruncateArgs(_) => "truncate_args",
            LayerConfig::Summarize(_) => "summarize",
            LayerConfig::ClearToolResults(_) => "clear_tool_results",
            LayerConfig::Truncate(_) => "truncate",
            LayerConfig::Emergency(_) => "emergency",
            LayerConfig::TurnTrim(_) => "turn_trim",
            LayerConfig::Checkpoint(_) => "checkpoint",
            LayerConfig::Watchdog(_) => "watchdog",
            LayerConfig::CostCeiling(_) => "cost_ceiling",
        }
    }

    pub(super) fn to_value(&self) -> Value {
        let v = match self {
            LayerConfig::EvictToolResults(c) => serde_json::to_value(c),
            LayerConfig::EvictUserMessages(c) => serde_json::to_value(c),
            LayerConfig::TruncateArgs(c) => serde_json::to_value(c),
            LayerConfig::Summarize(c) => serde_json::to_value(c),
            LayerConfig::ClearToolResults(c) => serde_json::to_value(c),
            LayerConfig::Truncate(c) => serde_json::to_value(c),
            LayerConfig::Emergency(c) => serde_json::to_value(c),
            LayerConfig::TurnTrim(c) => serde_json::to_value(c),
            LayerConfig::Checkpoint(c) => serde_json::to_value(c),
            LayerConfig::Watchdog(c) => serde_json::to_value(c),
            LayerConfig::CostCeiling(c) => serde_json::to_value(c),
        };
        v.unwrap_or(Value::Null)
    }

    /// The layer of the same kind from `v`; errors carry the key path inside the layer.
    pub(super) fn reparse(
        &self,
        v: Value,
    ) -> Result<LayerConfig, serde_path_to_error::Error<serde_json::Error>> {
        fn de<T: serde::de::DeserializeOwned>(
            v: Value,
        ) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
            serde_path_to_error::deserialize(v)
        }
        Ok(match self {
            LayerConfig::EvictToolResults(_) => LayerConfig::EvictToolResults(de(v)?),
            LayerConfig::EvictUserMessages(_) => LayerConfig::EvictUserMessages(de(v)?),
            LayerConfig::TruncateArgs(_) => LayerConfig::TruncateArgs(de(v)?),
            LayerConfig::Summarize(_) => LayerConfig::Summarize(de(v)?),
            LayerConfig::ClearToolResults(_) => LayerConfig::ClearToolResults(de(v)?),
            LayerConfig::Truncate(_) => LayerConfig::Truncate(de(v)?),
            LayerConfig::Emergency(_) => LayerConfig::Emergency(de(v)?),
            LayerConfig::TurnTrim(_) => LayerConfig::TurnTrim(de(v)?),
            LayerConfig::Checkpoint(_) => LayerConfig::Checkpoint(de(v)?),
            LayerConfig::Watchdog(_) => LayerConfig::Watchdog(de(v)?),
            LayerConfig::CostCeiling(_) => LayerConfig::CostCeiling(de(v)?),
        })
    }
}
