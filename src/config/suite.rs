//! The `suite.toml` types and their defaults; what a loaded suite resolves to lives in
//! [`super::load`].
//!
//! Every error names the file and line (see [`super::ConfigError`]). The JSON Schema printed by
//! `ctxbench schema suite` is generated from these types, and the same schema decides which keys
//! are valid, so a misspelled key is reported with the nearest valid one.

pub use super::load::LoadedSuite;
pub use super::rules_eval::{RuleKind, RulesEval};
use crate::pricing::ModelPrice;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Raw TOML table kept open for its owner to validate (engine, providers).
type OpenTable = serde_json::Map<String, serde_json::Value>;

/// A whole suite file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// Name, seed, repeats, concurrency, budget, output directory.
    pub suite: SuiteSection,
    /// Which traces to replay.
    pub traces: TracesSection,
    /// Engine variants: a base table plus named overrides and/or a grid.
    #[serde(default)]
    pub engine: EngineSection,
    /// Which evals run, and their sweeps.
    #[serde(default)]
    pub evals: EvalsSection,
    /// Provider tables for the agent, summary and judge roles.
    #[serde(default)]
    pub providers: ProvidersSection,
    /// Price overrides per model name, in dollars per million tokens.
    #[serde(default)]
    pub pricing: BTreeMap<String, ModelPrice>,
    /// Rules checked by `ctxbench gate`.
    #[serde(default)]
    pub gates: GatesSection,
    /// What the report puts first.
    #[serde(default, skip_serializing_if = "ReportSection::is_default")]
    pub report: ReportSection,
}

/// `[report]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportSection {
    /// Headline metrics, in the order the verdict line shows them: exact names
    /// (`"needle.recall"`, `"tokens"`) or `"eval.*"` for every metric of an eval. Empty: the
    /// defaults (needle recall, drift/continuation/rules scores, invariants, tokens, cost,
    /// futile compactions). Every metric stays in results.csv and the "all metrics" table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
}

impl ReportSection {
    fn is_default(&self) -> bool {
        self.metrics.is_empty()
    }
}

fn default_output_dir() -> String {
    "reports".into()
}
fn one() -> u32 {
    1
}
fn default_concurrency() -> u32 {
    4
}
fn yes() -> bool {
    true
}

/// `[suite]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteSection {
    /// Used in run ids (`<name>-<UTC timestamp>`): letters, digits, `.`, `_`, `-`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where run directories are created, relative to the suite file.
    #[serde(default = "default_output_dir")]
    pub output_dir: String,
    /// Seed for everything random (needle values, placement, sampling); per-unit seeds derive
    /// from it and the unit id.
    #[serde(default)]
    pub seed: u64,
    /// Independent repeats of every unit (pass@k / pass^k when > 1).
    #[serde(default = "one")]
    pub repeats: u32,
    /// Units in flight at once (`--jobs` overrides). Provider tables may set a lower
    /// `concurrency` of their own.
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
    /// Stop dispatching before the estimated spend would exceed this many dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Exit non-zero when any unit failed (failed units are always recorded as data).
    #[serde(default)]
    pub fail_on_errors: bool,
}

/// `[traces]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TracesSection {
    /// Files, directories or globs (`*`, `?`, `**`, `{a,b}`), relative to the suite file.
    pub paths: Vec<String>,
    /// `auto` (detect) or a format name: canonical, openai, anthropic, claude-code, mini-swe,
    /// swe-agent, openhands, tau, tau2, atif.
    #[serde(default = "default_from")]
    pub from: String,
    /// Token counter used for every view.
    #[serde(default)]
    pub counter: CounterKind,
    /// Keep going when a trace file cannot be imported (it is recorded in run.json).
    #[serde(default)]
    pub skip_invalid: bool,
    /// Use at most this many traces (after sorting by id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

fn default_from() -> String {
    "auto".into()
}

/// Token counters (see `tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CounterKind {
    /// Exact o200k_base BPE (GPT-4o, GPT-4.1, o-series, GPT-5).
    #[default]
    O200k,
    /// Exact cl100k_base BPE (GPT-4, GPT-3.5).
    Cl100k,
    /// deepagents' approximation: ceil(chars/4) + 3 per message.
    Approx,
    /// deepagents' approximation for Anthropic models: 3.3 chars per token.
    ApproxAnthropic,
}

impl CounterKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CounterKind::O200k => "o200k",
            CounterKind::Cl100k => "cl100k",
            CounterKind::Approx => "approx",
            CounterKind::ApproxAnthropic => "approx-anthropic",
        }
    }
}

/// `[engine]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EngineSection {
    /// Engine configuration every variant starts from (validated by the engine).
    #[serde(default)]
    #[schemars(with = "OpenTable")]
    pub base: toml::Table,
    /// Named overrides of `base` (deep-merged; arrays replace). An empty table is `base` itself.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, OpenTable>")]
    pub variants: BTreeMap<String, toml::Table>,
    /// Cartesian product of lists: each leaf is a list of values for that engine key (dotted
    /// keys allowed, e.g. `"summarize.trigger" = [0.15, 0.5]`); each combination is a variant
    /// named `key=value,key=value`.
    #[serde(default)]
    #[schemars(with = "OpenTable")]
    pub grid: toml::Table,
    /// The variant others are compared against. Defaults to the only variant, or to the one
    /// named `baseline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// What a failed summarization (provider error, empty or error-string text) does to its
    /// unit: `error` (default) records the unit as failed (kind `summary_failed`); `record`
    /// keeps it, with `summary_failures` > 0 in its scores, and the report flags it.
    #[serde(default, skip_serializing_if = "OnSummaryError::is_default")]
    pub on_summary_error: OnSummaryError,
}

/// `[engine] on_summary_error`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnSummaryError {
    /// The unit is an error (kind `summary_failed`): its numbers are not a healthy run's.
    #[default]
    Error,
    /// The unit succeeds and carries `summary_failures` in its scores.
    Record,
}

impl OnSummaryError {
    pub fn is_default(&self) -> bool {
        *self == OnSummaryError::Error
    }
}

/// `[evals]`: a present table enables that eval (unless `enabled = false`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalsSection {
    /// Plain replay: tokens, cost and compactions per trace × variant. On by default.
    #[serde(default)]
    pub replay: ReplayEval,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needle: Option<NeedleEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbesEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariants: Option<InvariantsEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<ContinuationEval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<RulesEval>,
}

/// `[evals.replay]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayEval {
    #[serde(default = "yes")]
    pub enabled: bool,
}

impl Default for ReplayEval {
    fn default() -> Self {
        ReplayEval { enabled: true }
    }
}

fn default_depths() -> Vec<f64> {
    vec![0.25, 0.5, 0.75]
}
fn default_positions() -> Vec<NeedlePosition> {
    vec![NeedlePosition::Tool]
}
fn default_max_steps() -> u32 {
    8
}

/// `[evals.needle]`: plant facts, force compaction, ask for them back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeedleEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Where to plant, as fractions of the trace (0 = start, 1 = end).
    #[serde(default = "default_depths")]
    pub depths: Vec<f64>,
    /// Which kind of message carries the needle.
    #[serde(default = "default_positions")]
    pub positions: Vec<NeedlePosition>,
    /// Summarization triggers (fractions of the window) that override the variant's; empty =
    /// use each variant's own.
    #[serde(default)]
    pub triggers: Vec<f64>,
    /// Needles planted per sample.
    #[serde(default = "one")]
    pub needles: u32,
    /// Distractor facts of the same shape per sample.
    #[serde(default)]
    pub distractors: u32,
    /// Tool-call budget of the answering agent.
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// When to ask: `"end"` of the trace, or after this model-call index.
    #[serde(default)]
    pub ask_at: AskAt,
    /// How the offline agent may search the offload store (real models always get the tools).
    #[serde(default)]
    pub search: NeedleSearch,
    /// Ask in other words than the planted key (seeded paraphrase templates per fact kind),
    /// with distractors that share part of the key.
    #[serde(default)]
    pub paraphrase: bool,
    /// Correct every needle later in the trace (`Update: the … is now …`, at a seeded depth
    /// after it): the latest value is the answer, the first one scores as `stale`.
    #[serde(default)]
    pub corrected: bool,
    /// Ask right after the k-th summarization that followed the planting, one sample per k
    /// (`params.fold`); a replay with fewer folds records `not_reached`. Empty: ask at `ask_at`.
    #[serde(default)]
    pub folds: Vec<u32>,
}

/// `search = "auto" | "always" | "never"`: the bounds of what an agent can recover. Steers the
/// offline agent only; a real model always gets the search tools and decides for itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NeedleSearch {
    /// Search the store only when the view does not state the fact.
    #[default]
    Auto,
    /// Search the store before answering (is the fact recoverable at all?).
    Always,
    /// Answer from the compacted view alone (did the fact survive in the context?).
    Never,
}

impl NeedleSearch {
    pub fn as_str(self) -> &'static str {
        match self {
            NeedleSearch::Auto => "auto",
            NeedleSearch::Always => "always",
            NeedleSearch::Never => "never",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(NeedleSearch::Auto),
            "always" => Some(NeedleSearch::Always),
            "never" => Some(NeedleSearch::Never),
            _ => None,
        }
    }
}

/// Message kind that carries a needle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NeedlePosition {
    User,
    Tool,
    Assistant,
}

impl NeedlePosition {
    pub fn as_str(self) -> &'static str {
        match self {
            NeedlePosition::User => "user",
            NeedlePosition::Tool => "tool",
            NeedlePosition::Assistant => "assistant",
        }
    }
}

/// `ask_at = "end"` or `ask_at = 12` (after model call 12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AskAt {
    #[default]
    End,
    Call(u64),
}

impl AskAt {
    pub fn to_json(self) -> serde_json::Value {
        match self {
            AskAt::End => "end".into(),
            AskAt::Call(i) => i.into(),
        }
    }
}

impl Serialize for AskAt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AskAt::End => s.serialize_str("end"),
            AskAt::Call(i) => s.serialize_u64(*i),
        }
    }
}

impl<'de> Deserialize<'de> for AskAt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = AskAt;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"end\" or a model-call index (a non-negative integer)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<AskAt, E> {
                if v == "end" {
                    Ok(AskAt::End)
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(v), &self))
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<AskAt, E> {
                u64::try_from(v)
                    .map(AskAt::Call)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<AskAt, E> {
                Ok(AskAt::Call(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for AskAt {
    fn schema_name() -> Cow<'static, str> {
        "AskAt".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "\"end\" or a model-call index",
            "anyOf": [{"const": "end"}, {"type": "integer", "minimum": 0}]
        })
    }
}

fn default_after_compactions() -> u32 {
    3
}

/// `[evals.drift]`: probe goal, progress and next step after each compaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DriftEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Probe after each of the first N compactions of a replay.
    #[serde(default = "default_after_compactions")]
    pub after_compactions: u32,
    /// Also score with the judge provider (rubric 0–5); deterministic scores are always kept.
    #[serde(default)]
    pub judge: bool,
}

fn default_continuation_steps() -> u32 {
    3
}

/// `[evals.continuation]`: after the k-th compaction, the next recorded tool calls predicted
/// with teacher forcing, against the recorded calls and against the uncompressed view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContinuationEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// One sample per fold: after the 1st, 2nd, …, Nth compaction of a replay.
    #[serde(default = "default_after_compactions")]
    pub after_compactions: u32,
    /// Recorded model calls (with tool calls) predicted after each fold.
    #[serde(default = "default_continuation_steps")]
    pub steps: u32,
}

fn default_probe_kinds() -> Vec<ProbeKind> {
    vec![
        ProbeKind::Recall,
        ProbeKind::Artifact,
        ProbeKind::Continuation,
        ProbeKind::Decision,
    ]
}

/// `[evals.probes]`: Factory-style questions generated from the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbesEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "default_probe_kinds")]
    pub kinds: Vec<ProbeKind>,
    /// Questions per kind and trace.
    #[serde(default = "one")]
    pub per_kind: u32,
    /// Score with the judge provider (0–5) where no deterministic check exists.
    #[serde(default)]
    pub judge: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    Recall,
    Artifact,
    Continuation,
    Decision,
}

impl ProbeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Recall => "recall",
            ProbeKind::Artifact => "artifact",
            ProbeKind::Continuation => "continuation",
            ProbeKind::Decision => "decision",
        }
    }
}

/// `[evals.invariants]`: the engine's rules checked on every replay (no LLM).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvariantsEval {
    #[serde(default = "yes")]
    pub enabled: bool,
}

/// `[providers]`: one table per role, validated by the providers module. Each needs `kind`
/// (`offline`, `openai`, `anthropic`); keys come only from the environment (`api_key_env`).
/// A missing role uses the built-in offline provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvidersSection {
    /// Answers eval questions (needle, drift, probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<OpenTable>")]
    pub agent: Option<toml::Table>,
    /// Writes summaries for the engine's summarize layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<OpenTable>")]
    pub summary: Option<toml::Table>,
    /// Scores free-text answers with a fixed rubric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<OpenTable>")]
    pub judge: Option<toml::Table>,
}

/// The roles a provider plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderRole {
    Agent,
    Summary,
    Judge,
}

impl ProviderRole {
    pub const ALL: [ProviderRole; 3] = [
        ProviderRole::Agent,
        ProviderRole::Summary,
        ProviderRole::Judge,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderRole::Agent => "agent",
            ProviderRole::Summary => "summary",
            ProviderRole::Judge => "judge",
        }
    }
}

/// `[gates]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatesSection {
    /// e.g. `"needle.recall >= 0.95"`, `"cost.delta_pct <= 5"`.
    #[serde(default)]
    pub rules: Vec<String>,
}

/// One engine configuration to replay under: a name and the fully merged engine table.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub name: String,
    /// `engine.base` with this variant's overrides applied; `file` / `*_file` values are
    /// absolute paths.
    pub engine: toml::Table,
    /// What differs from `base` (the variant table, or the grid combination).
    pub overrides: toml::Table,
    /// Key path where the variant is defined (for error lines).
    pub defined_at: Vec<String>,
    /// `engine` deserialized (checked at load: it resolves).
    pub config: crate::engine::EngineConfig,
}

/// A trace file the suite selects (`rel` is relative to the suite file's directory).
pub use crate::trace::discover::TraceFile;

/// A prompt (or other `file` / `*_file`) referenced by an engine or provider table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PromptFile {
    /// As written, relative to the suite file.
    pub rel: String,
    #[serde(skip)]
    pub path: PathBuf,
    pub sha256: String,
}

/// The JSON Schema of `suite.toml`.
pub fn schema() -> Schema {
    schemars::schema_for!(Suite)
}
