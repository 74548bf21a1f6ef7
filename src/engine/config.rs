//! Engine configuration: a preset name plus overrides, deserializable from TOML or JSON with
//! unknown keys rejected, and `--set key=value` overrides (dotted keys) merged into the same
//! structure.
//!
//! Resolution order: preset layers → model-tier defaults → per-layer override tables → `--set`.
//! Each layer's table is checked against that layer's own struct (`deny_unknown_fields`), so a
//! misspelt key is an error naming the layer and the key.
//!
//! ```toml
//! preset = "deepagents"
//! window = 60000
//! [summarize]
//! trigger = { fraction = 0.5 }
//! keep = { tokens = 4000 }
//! prompt = { file = "prompts/summary.md" }
//! summary_max_tokens = 1024
//! ```

use crate::confcore::merge::merge;
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
    /// Directory of the history file (`<dir>/session_<hex>.md`).
    pub history_dir: String,
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

    fn to_value(&self) -> Value {
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
    fn reparse(
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

/// What users write: a preset plus overrides.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// `deepagents` or `none` (see `engine::presets`). Default: `deepagents`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Context window override; default = the trace's model window, else the preset's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// The agent model's `max_tokens` (enters deepagents' input budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Token counter: `approx` (chars/4) or `approx-anthropic` (3.3 chars/token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
    /// Model tier: sets the summarize/truncate trigger fraction (0.85 / 0.65 / 0.35).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<ModelTier>,
    /// Layer order: names of the preset's layers, in the order to apply them (omitted layers
    /// are disabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evict_tool_results: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evict_user_messages: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncate_args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarize: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_tool_results: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncate: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emergency: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_trim: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_ceiling: Option<Value>,
    /// Where this configuration came from (file name), for error messages.
    #[serde(skip)]
    pub source: Option<String>,
}

/// A fully resolved engine: what `replay` runs.
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

fn err(key: &str, message: impl Into<String>) -> ConfigError {
    err_in(None, key, message)
}

fn err_in(source: Option<&str>, key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::new(
        source.unwrap_or("engine config"),
        0,
        format!("`{key}`: {}", message.into()),
    )
    .with_key(key.split('.').map(str::to_string).collect())
}

/// Parse one `--set key=value`: dotted key, value as a TOML value (a bare word is a string).
pub fn parse_set(arg: &str) -> Result<(Vec<String>, Value), ConfigError> {
    let (key, raw) = arg.split_once('=').ok_or_else(|| {
        ConfigError::new(
            "--set",
            0,
            format!("{arg:?}: expected key=value, e.g. summarize.trigger.fraction=0.5"),
        )
    })?;
    let path: Vec<String> = key
        .trim()
        .split('.')
        .map(|s| s.trim().to_string())
        .collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err(ConfigError::new(
            "--set",
            0,
            format!("{arg:?}: empty key segment"),
        ));
    }
    let raw = raw.trim();
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t
            .remove("v")
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or(Value::String(raw.to_string())),
        Err(_) => Value::String(raw.to_string()),
    };
    Ok((path, value))
}

impl EngineConfig {
    /// Parse TOML; errors carry the file name and TOML's line/column message.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Self, ConfigError> {
        let mut c: Self = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
                .unwrap_or(0);
            ConfigError::new(file, line, e.message().to_string())
        })?;
        c.source = Some(file.to_string());
        Ok(c)
    }

    /// Parse JSON; errors carry the file name and line.
    pub fn from_json_str(text: &str, file: &str) -> Result<Self, ConfigError> {
        let mut c: Self = serde_json::from_str(text)
            .map_err(|e| ConfigError::new(file, e.line(), e.to_string()))?;
        c.source = Some(file.to_string());
        Ok(c)
    }

    /// Apply `--set key=value` overrides (dotted keys into this structure).
    pub fn apply_sets(&self, sets: &[String]) -> Result<Self, ConfigError> {
        let mut v = serde_json::to_value(self).map_err(|e| err("config", e.to_string()))?;
        for s in sets {
            let (path, value) = parse_set(s)?;
            let mut patch = value;
            for seg in path.iter().rev() {
                let mut m = serde_json::Map::new();
                m.insert(seg.clone(), patch);
                patch = Value::Object(m);
            }
            merge(&mut v, patch);
        }
        let mut c = Self::from_value(v).map_err(|mut e| {
            e.file = "--set".into();
            e
        })?;
        c.source = self.source.clone();
        Ok(c)
    }

    /// Deserialize from a JSON value (a suite variant's merged table); the error names the key
    /// path (`ConfigError::key`) and says what was expected.
    pub fn from_value(v: Value) -> Result<Self, ConfigError> {
        serde_path_to_error::deserialize(v).map_err(|e| {
            let key = ConfigError::key_of(&[], e.path());
            let shown = key.join(".");
            let message = if shown.is_empty() {
                e.inner().to_string()
            } else {
                format!("`{shown}`: {}", e.inner())
            };
            ConfigError::new("engine config", 0, message).with_key(key)
        })
    }

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

    fn summarize_of(r: &ResolvedConfig) -> &Summarize {
        r.layers
            .iter()
            .find_map(|l| match l {
                LayerConfig::Summarize(s) => Some(s),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn toml_with_overrides_resolves() {
        let c = EngineConfig::from_toml_str(
            "preset = \"deepagents\"\nwindow = 60000\n[summarize]\ntrigger = { tokens = 170000 }\nkeep = { messages = 20 }\n",
            "x.toml",
        )
        .unwrap();
        let r = c.resolve(None).unwrap();
        assert_eq!(r.window, 60000);
        let s = summarize_of(&r);
        assert_eq!(s.trigger, Trigger::Tokens(170000));
        assert_eq!(s.keep, Keep::Messages(20));
    }

    #[test]
    fn unknown_keys_are_errors_naming_them() {
        let e = EngineConfig::from_toml_str("windw = 3\n", "x.toml").unwrap_err();
        assert_eq!(e.file, "x.toml");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("windw"), "{}", e.message);
        let c =
            EngineConfig::from_toml_str("[summarize]\ntriger = { fraction = 0.5 }\n", "y").unwrap();
        let e = c.resolve(None).unwrap_err();
        assert!(
            e.message.contains("summarize") && e.message.contains("triger"),
            "{e}"
        );
    }

    #[test]
    fn set_overrides_use_dotted_keys_and_switch_enum_variants() {
        let c = EngineConfig::default()
            .apply_sets(&[
                "summarize.trigger.tokens=5000".into(),
                "window=20000".into(),
                "summarize.prompt.text=Write ## SUMMARY only".into(),
            ])
            .unwrap();
        let r = c.resolve(Some(200_000)).unwrap();
        assert_eq!(r.window, 20000);
        let s = summarize_of(&r);
        assert_eq!(s.trigger, Trigger::Tokens(5000));
        assert_eq!(
            s.prompt,
            Some(TextSource::Text("Write ## SUMMARY only".into()))
        );
        let c = EngineConfig::default()
            .apply_sets(&["summarize.trigger.fraction=0.5".into()])
            .unwrap();
        assert_eq!(
            summarize_of(&c.resolve(None).unwrap()).trigger,
            Trigger::Fraction(0.5)
        );
        assert!(EngineConfig::default()
            .apply_sets(&["nokey".into()])
            .is_err());
        assert!(EngineConfig::default()
            .apply_sets(&["bogus=1".into()])
            .is_err());
    }

    #[test]
    fn plain_keys_merge_and_choices_switch() {
        let mut v = serde_json::json!({"window": 1, "summarize": {"trigger": {"fraction": 0.5}}});
        merge(&mut v, serde_json::json!({"preset": "none"}));
        merge(
            &mut v,
            serde_json::json!({"summarize": {"trigger": {"tokens": 9}}}),
        );
        assert_eq!(
            v,
            serde_json::json!({"window": 1, "preset": "none", "summarize": {"trigger": {"tokens": 9}}})
        );
        let c = EngineConfig::from_toml_str(
            "window = 9\n[summarize]\nsummary_max_tokens = 0\n",
            "e.toml",
        )
        .unwrap();
        let e = c.resolve(None).unwrap_err();
        assert_eq!(e.file, "e.toml");
        assert!(e.message.contains("summary_max_tokens"), "{e}");
    }

    #[test]
    fn tiers_and_layer_order() {
        let c = EngineConfig {
            tier: Some(ModelTier::Small),
            layers: Some(vec!["summarize".into(), "evict_tool_results".into()]),
            ..Default::default()
        };
        let r = c.resolve(Some(100_000)).unwrap();
        assert_eq!(r.window, 100_000);
        let names: Vec<&str> = r.layers.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["summarize", "evict_tool_results"]);
        assert_eq!(summarize_of(&r).trigger, Trigger::Fraction(0.35));
        let bad = EngineConfig {
            layers: Some(vec!["nope".into()]),
            ..Default::default()
        };
        assert!(bad.resolve(None).is_err());
    }

    #[test]
    fn model_tiers_by_substring_small_before_mid_before_frontier() {
        let t = |m: &str| ModelTier::from_model_id(m);
        assert_eq!(t("claude-haiku-4-5-20251001"), Some(ModelTier::Small));
        assert_eq!(t("gemini-2.5-flash"), Some(ModelTier::Small));
        assert_eq!(t("gpt-4.1-mini"), Some(ModelTier::Small));
        assert_eq!(t("anthropic/claude-sonnet-4-6"), Some(ModelTier::Mid));
        assert_eq!(t("Gemini-2.5-Pro"), Some(ModelTier::Mid));
        assert_eq!(t("claude-opus-4-7"), Some(ModelTier::Frontier));
        assert_eq!(t("gemini-3.5-pro"), Some(ModelTier::Frontier));
        assert_eq!(t("llama-3-70b"), None);
    }

    #[test]
    fn trigger_valued_keys_switch_variants_under_set() {
        let c = EngineConfig::default()
            .apply_sets(&[
                "preset=\"turn-trim\"".into(),
                "turn_trim.max_tokens.fraction=0.5".into(),
            ])
            .unwrap();
        let r = c.resolve(Some(100_000)).unwrap();
        let LayerConfig::TurnTrim(t) = &r.layers[0] else {
            panic!("{:?}", r.layers)
        };
        assert_eq!(t.max_tokens, Trigger::Fraction(0.5));
    }

    #[test]
    fn thresholds_truncate_like_python_int() {
        assert_eq!(Trigger::Fraction(0.85).tokens(200_000), 170_000);
        assert_eq!(Trigger::Fraction(0.85).tokens(60_000), 51_000);
        assert_eq!(Keep::Fraction(0.1).tokens(30_000), Some(3_000));
        let r = EngineConfig {
            window: Some(60_000),
            max_output_tokens: Some(40_000),
            ..Default::default()
        }
        .resolve(None)
        .unwrap();
        assert_eq!(r.input_budget(), 17_000);
    }
}
