//! The `suite.toml` types and their defaults; what a loaded suite resolves to lives in
//! [`super::load`].
//!
//! Every error names the file and line (see [`super::ConfigError`]). The JSON Schema printed by
//! `ctxbench schema suite` is generated from these types, and the same schema decides which keys
//! are valid, so a misspelled key is reported with the nearest valid one.

pub use super::evals::{
    AskAt, ContinuationEval, DriftEval, EvalsSection, InvariantsEval, NeedleEval, NeedlePosition,
    NeedleSearch, ProbeKind, ProbesEval, ReplayEval, RuleKind, RulesEval,
};
pub use super::load::LoadedSuite;
use crate::pricing::ModelPrice;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
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
    /// swe-agent, openhands, tau, tau2, atif, golden, codex, openai-responses, langchain,
    /// inspect, gemini-cli, gemini, cline, copilot.
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
