//! The `suite.toml` types, their defaults and validation, and what a loaded suite resolves to:
//! trace files (globs relative to the suite file), engine variants (base + overrides, or a grid)
//! and prompt files (any `file` or `*_file` key in engine or provider tables).
//!
//! Every error names the file and line (see [`ConfigError`]). The JSON Schema printed by
//! `ctxbench schema suite` is generated from these types, and the same schema decides which keys
//! are valid, so a misspelled key is reported with the nearest valid one.

use super::keys::unknown_keys;
use super::{did_you_mean, ConfigError, SourceMap};
use crate::pricing::ModelPrice;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

impl ProvidersSection {
    /// The table of a role, or `{ kind = "offline" }` when the suite does not set it.
    pub fn table(&self, role: ProviderRole) -> toml::Table {
        let t = match role {
            ProviderRole::Agent => &self.agent,
            ProviderRole::Summary => &self.summary,
            ProviderRole::Judge => &self.judge,
        };
        t.clone().unwrap_or_else(|| {
            let mut t = toml::Table::new();
            t.insert("kind".into(), "offline".into());
            t
        })
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

/// A parsed, validated suite and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedSuite {
    pub suite: Suite,
    /// The suite file as given.
    pub path: PathBuf,
    /// Directory relative paths resolve against.
    pub dir: PathBuf,
    pub source: SourceMap,
    /// sha256 of the suite's canonical JSON (independent of formatting, comments, key order
    /// and of where the checkout lives).
    pub digest: String,
    pub variants: Vec<Variant>,
    pub baseline: String,
    pub prompt_files: Vec<PromptFile>,
}

/// The JSON Schema of `suite.toml`.
pub fn schema() -> Schema {
    schemars::schema_for!(Suite)
}

impl LoadedSuite {
    /// Read, parse and validate a suite file.
    pub fn load(path: &Path) -> Result<LoadedSuite, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(&file, 0, format!("cannot read suite file: {e}")))?;
        Self::from_str(&text, path)
    }

    /// Parse and validate suite text as if read from `path` (used for relative paths and
    /// messages).
    pub fn from_str(text: &str, path: &Path) -> Result<LoadedSuite, ConfigError> {
        let file = path.display().to_string();
        let (source, doc) = SourceMap::parse(text).map_err(|e| toml_error(&file, text, &e))?;

        let schema_value = serde_json::to_value(schema()).expect("schema is JSON");
        let unknown: Vec<ConfigError> = unknown_keys(doc.get_ref(), &schema_value)
            .into_iter()
            .map(|u| {
                let table = if u.table.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in `[{}]`", u.table.join("."))
                };
                let hint = match &u.suggestion {
                    Some(s) => format!(" (did you mean `{s}`?)"),
                    None => format!("; valid keys: {}", u.valid.join(", ")),
                };
                ConfigError::new(
                    &file,
                    source.line_of_offset(u.offset),
                    format!("unknown key `{}` {table}{hint}", u.key),
                )
            })
            .collect();
        if let Some(e) = ConfigError::combine(unknown) {
            return Err(e);
        }

        let suite: Suite = toml::from_str(text).map_err(|e| toml_error(&file, text, &e))?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let digest = {
            let json = serde_json::to_vec(&suite).expect("suite serializes");
            hex::encode(Sha256::digest(&json))
        };
        let mut loaded = LoadedSuite {
            suite,
            path: path.to_path_buf(),
            dir,
            source,
            digest,
            variants: Vec::new(),
            baseline: String::new(),
            prompt_files: Vec::new(),
        };
        loaded.validate()?;
        loaded.prompt_files = loaded.collect_prompt_files()?;
        loaded.variants = loaded.expand_variants()?;
        loaded.baseline = loaded.pick_baseline()?;
        Ok(loaded)
    }

    fn file(&self) -> String {
        self.path.display().to_string()
    }

    /// An error at the line of `path` (or its nearest written ancestor).
    pub fn error_at(&self, path: &[&str], message: impl Into<String>) -> ConfigError {
        ConfigError::new(self.file(), self.source.line_of(path), message)
    }

    /// An error about an engine key of a variant, e.g. from the engine's own validation.
    /// Points at the override when the variant sets `key`, else at `engine.base`, else at the
    /// variant's definition; the message names the variant.
    ///
    /// With an empty `key` and a serde message naming an unknown field, the field's own line is
    /// used and the nearest valid key suggested (so owners can pass their error through as is).
    pub fn variant_error(&self, variant: &Variant, key: &[&str], message: &str) -> ConfigError {
        let (key, message) = locate_unknown_field(key, message);
        let key = &key[..];
        let mut at: Vec<&str> = variant.defined_at.iter().map(|s| s.as_str()).collect();
        at.extend_from_slice(key);
        let mut base = vec!["engine", "base"];
        base.extend_from_slice(key);
        let line = if self.source.contains(&at) {
            self.source.line_of(&at)
        } else if self.source.contains(&base) {
            self.source.line_of(&base)
        } else {
            self.source.line_of(&at)
        };
        ConfigError::new(
            self.file(),
            line,
            format!("engine variant `{}`: {message}", variant.name),
        )
    }

    /// Run an owner's validation over every variant's merged engine table (e.g. deserializing
    /// it as `engine::config::EngineConfig` and resolving it), collecting every problem as a
    /// `file:line` error that names the variant. `check` returns the offending key path (may
    /// be empty) and a message.
    pub fn check_variants(
        &self,
        check: impl Fn(&Variant) -> Result<(), (Vec<String>, String)>,
    ) -> Result<(), ConfigError> {
        let errs: Vec<ConfigError> = self
            .variants
            .iter()
            .filter_map(|v| check(v).err().map(|(key, msg)| (v, key, msg)))
            .map(|(v, key, msg)| {
                let key: Vec<&str> = key.iter().map(|s| s.as_str()).collect();
                self.variant_error(v, &key, &msg)
            })
            .collect();
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// An error about a provider table (e.g. from the providers module's validation).
    /// Like [`variant_error`](Self::variant_error), an unknown field named in `message` is
    /// located when `key` is empty.
    pub fn provider_error(&self, role: ProviderRole, key: &[&str], message: &str) -> ConfigError {
        let (key, message) = locate_unknown_field(key, message);
        let key = &key[..];
        let mut at = vec!["providers", role.as_str()];
        at.extend_from_slice(key);
        ConfigError::new(
            self.file(),
            self.source.line_of(&at),
            format!("provider `{}`: {message}", role.as_str()),
        )
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.suite;
        let mut errs = Vec::new();
        let mut err = |path: &[&str], msg: String| errs.push(self.error_at(path, msg));

        let name = &s.suite.name;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            err(
                &["suite", "name"],
                format!("suite name `{name}` must be non-empty and use only letters, digits, `.`, `_`, `-` (it is part of run ids)"),
            );
        }
        if s.suite.repeats == 0 {
            err(&["suite", "repeats"], "`repeats` must be at least 1".into());
        }
        if s.suite.concurrency == 0 {
            err(
                &["suite", "concurrency"],
                "`concurrency` must be at least 1".into(),
            );
        }
        if let Some(c) = s.suite.max_cost_usd {
            if !(c.is_finite() && c > 0.0) {
                err(
                    &["suite", "max_cost_usd"],
                    format!("`max_cost_usd` must be a positive number of dollars, got {c}"),
                );
            }
        }
        if s.traces.paths.is_empty() {
            err(
                &["traces", "paths"],
                "`paths` must list at least one file, directory or glob".into(),
            );
        }
        let from = s.traces.from.as_str();
        if from != "auto" && crate::trace::SourceFormat::parse(from).is_none() {
            let mut names = vec!["auto"];
            names.extend(crate::trace::SourceFormat::ALL.iter().map(|f| f.as_str()));
            err(
                &["traces", "from"],
                format!(
                    "unknown trace format `{from}`{}; expected one of: {}",
                    did_you_mean(from, names.iter().copied()),
                    names.join(", ")
                ),
            );
        }
        if let Some(n) = &s.evals.needle {
            if n.depths.is_empty() {
                err(
                    &["evals", "needle", "depths"],
                    "`depths` must not be empty".into(),
                );
            }
            for (i, d) in n.depths.iter().enumerate() {
                if !(0.0..=1.0).contains(d) {
                    err(
                        &["evals", "needle", "depths", &i.to_string()],
                        format!("needle depth {d} is outside [0, 1]"),
                    );
                }
            }
            for (i, t) in n.triggers.iter().enumerate() {
                if !(*t > 0.0 && *t <= 1.0) {
                    err(
                        &["evals", "needle", "triggers", &i.to_string()],
                        format!("trigger {t} must be a fraction of the window in (0, 1]"),
                    );
                }
            }
            if n.positions.is_empty() {
                err(
                    &["evals", "needle", "positions"],
                    "`positions` must not be empty".into(),
                );
            }
            if n.needles == 0 {
                err(
                    &["evals", "needle", "needles"],
                    "`needles` must be at least 1".into(),
                );
            }
            if n.max_steps == 0 {
                err(
                    &["evals", "needle", "max_steps"],
                    "`max_steps` must be at least 1".into(),
                );
            }
        }
        if let Some(d) = &s.evals.drift {
            if d.after_compactions == 0 {
                err(
                    &["evals", "drift", "after_compactions"],
                    "`after_compactions` must be at least 1".into(),
                );
            }
        }
        if let Some(p) = &s.evals.probes {
            if p.kinds.is_empty() {
                err(
                    &["evals", "probes", "kinds"],
                    "`kinds` must not be empty".into(),
                );
            }
            if p.per_kind == 0 {
                err(
                    &["evals", "probes", "per_kind"],
                    "`per_kind` must be at least 1".into(),
                );
            }
        }
        for role in ProviderRole::ALL {
            let t = match role {
                ProviderRole::Agent => &s.providers.agent,
                ProviderRole::Summary => &s.providers.summary,
                ProviderRole::Judge => &s.providers.judge,
            };
            let Some(t) = t else { continue };
            let r = role.as_str();
            match t.get("kind") {
                Some(toml::Value::String(_)) => {}
                Some(other) => err(&["providers", r, "kind"], format!("provider `{r}`: `kind` must be a string (offline, openai, anthropic), got {}", other.type_str())),
                None => err(&["providers", r], format!("provider `{r}`: missing `kind` (offline, openai, anthropic)")),
            }
            if t.contains_key("api_key") {
                err(&["providers", r, "api_key"], format!("provider `{r}`: keys are never read from suite files; set `api_key_env = \"NAME\"` and export NAME"));
            }
            if let Some(v) = t.get("api_key_env") {
                if !v.is_str() {
                    err(&["providers", r, "api_key_env"], format!("provider `{r}`: `api_key_env` must be the name of an environment variable (a string)"));
                }
            }
            if let Some(v) = t.get("concurrency") {
                if !matches!(v.as_integer(), Some(n) if n >= 1) {
                    err(
                        &["providers", r, "concurrency"],
                        format!("provider `{r}`: `concurrency` must be an integer ≥ 1"),
                    );
                }
            }
        }
        for (model, p) in &s.pricing {
            let prices = [Some(p.input), Some(p.output), p.cache_read, p.cache_write];
            if prices
                .iter()
                .flatten()
                .any(|x| !(x.is_finite() && *x >= 0.0))
            {
                err(&["pricing", model], format!("pricing for `{model}`: prices must be non-negative dollars per million tokens"));
            }
        }
        for (i, r) in s.gates.rules.iter().enumerate() {
            if r.trim().is_empty() {
                err(
                    &["gates", "rules", &i.to_string()],
                    "empty gate rule".into(),
                );
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Resolve a path written in the suite against the suite's directory.
    pub fn resolve(&self, written: &str) -> PathBuf {
        let p = Path::new(written);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// Where run directories go (`suite.output_dir`, relative to the suite file).
    pub fn output_dir(&self) -> PathBuf {
        self.resolve(&self.suite.suite.output_dir)
    }

    /// Every `file` / `*_file` string in engine and provider tables: must exist; digested.
    fn collect_prompt_files(&mut self) -> Result<Vec<PromptFile>, ConfigError> {
        let mut found: Vec<(Vec<String>, String)> = Vec::new();
        fn walk(
            v: &toml::Value,
            path: &mut Vec<String>,
            key_is_file: bool,
            out: &mut Vec<(Vec<String>, String)>,
        ) {
            match v {
                toml::Value::String(s) if key_is_file => out.push((path.clone(), s.clone())),
                toml::Value::Table(t) => {
                    for (k, v) in t {
                        path.push(k.clone());
                        walk(v, path, is_file_key(k), out);
                        path.pop();
                    }
                }
                toml::Value::Array(a) => {
                    for (i, v) in a.iter().enumerate() {
                        path.push(i.to_string());
                        walk(v, path, key_is_file, out);
                        path.pop();
                    }
                }
                _ => {}
            }
        }
        let e = &self.suite.engine;
        let mut roots: Vec<(Vec<String>, toml::Value)> = vec![
            (
                vec!["engine".into(), "base".into()],
                toml::Value::Table(e.base.clone()),
            ),
            (
                vec!["engine".into(), "grid".into()],
                toml::Value::Table(e.grid.clone()),
            ),
        ];
        for (name, t) in &e.variants {
            roots.push((
                vec!["engine".into(), "variants".into(), name.clone()],
                toml::Value::Table(t.clone()),
            ));
        }
        for role in ProviderRole::ALL {
            if let Some(t) = match role {
                ProviderRole::Agent => &self.suite.providers.agent,
                ProviderRole::Summary => &self.suite.providers.summary,
                ProviderRole::Judge => &self.suite.providers.judge,
            } {
                roots.push((
                    vec!["providers".into(), role.as_str().into()],
                    toml::Value::Table(t.clone()),
                ));
            }
        }
        for (mut path, v) in roots {
            walk(&v, &mut path, false, &mut found);
        }
        let mut errs = Vec::new();
        let mut files: BTreeMap<String, PromptFile> = BTreeMap::new();
        for (path, written) in found {
            let resolved = self.resolve(&written);
            match std::fs::read(&resolved) {
                Ok(bytes) => {
                    files.entry(written.clone()).or_insert(PromptFile {
                        rel: written,
                        path: resolved,
                        sha256: hex::encode(Sha256::digest(&bytes)),
                    });
                }
                Err(e) => {
                    let refs: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
                    errs.push(self.error_at(
                        &refs,
                        format!(
                            "`{}`: cannot read `{}` (resolved to {}): {e}",
                            refs.join("."),
                            written,
                            resolved.display()
                        ),
                    ));
                }
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(files.into_values().collect()),
        }
    }

    /// Rewrite `file` / `*_file` strings to absolute paths.
    fn absolutize_files(&self, v: &mut toml::Value, key_is_file: bool) {
        match v {
            toml::Value::String(s) if key_is_file => {
                *s = self.resolve(s).display().to_string();
            }
            toml::Value::Table(t) => {
                for (k, v) in t.iter_mut() {
                    let f = is_file_key(k);
                    self.absolutize_files(v, f);
                }
            }
            toml::Value::Array(a) => {
                for v in a {
                    self.absolutize_files(v, key_is_file);
                }
            }
            _ => {}
        }
    }

    fn expand_variants(&self) -> Result<Vec<Variant>, ConfigError> {
        let e = &self.suite.engine;
        let mut out = Vec::new();
        let mut errs = Vec::new();
        let make = |name: String, overrides: toml::Table, defined_at: Vec<String>| {
            let mut merged = toml::Value::Table(e.base.clone());
            deep_merge(&mut merged, &toml::Value::Table(overrides.clone()));
            self.absolutize_files(&mut merged, false);
            let toml::Value::Table(engine) = merged else {
                unreachable!("merging tables yields a table")
            };
            Variant {
                name,
                engine,
                overrides,
                defined_at,
            }
        };
        for (name, t) in &e.variants {
            if name.is_empty() || name.contains('/') || name.chars().any(char::is_control) {
                errs.push(self.error_at(
                    &["engine", "variants", name],
                    format!("variant name `{name}` must be non-empty and contain no `/`"),
                ));
                continue;
            }
            out.push(make(
                name.clone(),
                t.clone(),
                vec!["engine".into(), "variants".into(), name.clone()],
            ));
        }
        // Grid: flatten nested tables and dotted keys into key paths; every leaf is a list.
        let mut dims: Vec<(Vec<String>, Vec<toml::Value>)> = Vec::new();
        fn leaves(
            t: &toml::Table,
            prefix: &mut Vec<String>,
            out: &mut Vec<(Vec<String>, toml::Value)>,
        ) {
            for (k, v) in t {
                let n = prefix.len();
                prefix.extend(k.split('.').map(str::to_string));
                match v {
                    toml::Value::Table(inner) => leaves(inner, prefix, out),
                    other => out.push((prefix.clone(), other.clone())),
                }
                prefix.truncate(n);
            }
        }
        let mut flat = Vec::new();
        leaves(&e.grid, &mut Vec::new(), &mut flat);
        for (path, v) in flat {
            let mut src = vec!["engine", "grid"];
            src.extend(path.iter().map(|s| s.as_str()));
            match v {
                toml::Value::Array(values) if !values.is_empty() => dims.push((path, values)),
                other => {
                    let shown = if src.len() > 2 && !self.source.contains(&src) {
                        // Dotted quoted key (`"a.b" = [..]`): point at the grid table.
                        vec!["engine", "grid"]
                    } else {
                        src.clone()
                    };
                    errs.push(self.error_at(
                        &shown,
                        format!(
                            "grid key `{}` must be a non-empty list of values to sweep, got {}",
                            path.join("."),
                            if other.is_array() {
                                "an empty list"
                            } else {
                                other.type_str()
                            }
                        ),
                    ));
                }
            }
        }
        if errs.is_empty() && !dims.is_empty() {
            let mut idx = vec![0usize; dims.len()];
            'combos: loop {
                let mut overrides = toml::Table::new();
                let mut name_parts = Vec::new();
                for (d, (path, values)) in dims.iter().enumerate() {
                    let v = &values[idx[d]];
                    set_path(&mut overrides, path, v.clone());
                    name_parts.push(format!("{}={}", path.join("."), value_label(v)));
                }
                out.push(make(
                    name_parts.join(","),
                    overrides,
                    vec!["engine".into(), "grid".into()],
                ));
                // Odometer: last dimension fastest.
                let mut d = dims.len();
                loop {
                    if d == 0 {
                        break 'combos;
                    }
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < dims[d].1.len() {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }
        if out.is_empty() && errs.is_empty() {
            out.push(make(
                "base".into(),
                toml::Table::new(),
                vec!["engine".into(), "base".into()],
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for v in &out {
            if !seen.insert(v.name.clone()) {
                errs.push(self.error_at(
                    &["engine", "grid"],
                    format!(
                        "variant name `{}` is defined twice (by `[engine.variants]` and the grid)",
                        v.name
                    ),
                ));
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    fn pick_baseline(&self) -> Result<String, ConfigError> {
        let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
        match &self.suite.engine.baseline {
            Some(b) if names.contains(&b.as_str()) => Ok(b.clone()),
            Some(b) => Err(self.error_at(
                &["engine", "baseline"],
                format!(
                    "baseline `{b}` is not a variant{}; variants: {}",
                    did_you_mean(b, names.iter().copied()),
                    names.join(", ")
                ),
            )),
            None if names.len() == 1 => Ok(names[0].to_string()),
            None if names.contains(&"baseline") => Ok("baseline".into()),
            None => Err(self.error_at(
                &["engine"],
                format!(
                    "several engine variants and no baseline: set `baseline = \"<variant>\"` in `[engine]` to one of: {}",
                    names.join(", ")
                ),
            )),
        }
    }

    /// Variants in stable order: the baseline first, then the others as defined.
    pub fn ordered_variants(&self) -> Vec<&Variant> {
        let mut v: Vec<&Variant> = self
            .variants
            .iter()
            .filter(|v| v.name == self.baseline)
            .collect();
        v.extend(self.variants.iter().filter(|v| v.name != self.baseline));
        v
    }

    /// Expand `traces.paths` into files, sorted and de-duplicated, with the rules `import`
    /// uses ([`crate::trace::discover`]). A pattern that matches nothing is an error at its line.
    pub fn trace_files(&self) -> Result<Vec<TraceFile>, ConfigError> {
        let mut out = std::collections::BTreeSet::new();
        let mut errs = Vec::new();
        for (i, pattern) in self.suite.traces.paths.iter().enumerate() {
            let at = ["traces", "paths", &i.to_string()];
            match crate::trace::discover::discover(&self.dir, pattern) {
                Ok(files) if files.is_empty() => errs.push(self.error_at(
                    &at,
                    format!(
                        "`{pattern}` matches no file (relative to {})",
                        self.dir.display()
                    ),
                )),
                Ok(files) => out.extend(files),
                Err(e) => errs.push(self.error_at(&at, format!("`{pattern}`: {e}"))),
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(out.into_iter().collect()),
        }
    }
}

/// Keys whose table value is a one-of choice (`trigger = { fraction = 0.5 }` or
/// `{ tokens = 9000 }`; `prompt = { file = … }` or `{ text = … }`). The same rule as
/// `engine::config::merge`: an override naming another alternative replaces the old one.
const CHOICE_KEYS: [&str; 4] = ["trigger", "keep", "threshold", "prompt"];

/// Merge `over` into `base`: tables merge key by key (except one-of choices, see
/// `CHOICE_KEYS`), anything else replaces.
pub fn deep_merge(base: &mut toml::Value, over: &toml::Value) {
    merge_at(base, over, None)
}

fn merge_at(base: &mut toml::Value, over: &toml::Value, key: Option<&str>) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            if key.is_some_and(|k| CHOICE_KEYS.contains(&k)) && o.keys().any(|k| !b.contains_key(k))
            {
                b.clear();
            }
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) => merge_at(existing, v, Some(k)),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Keys whose string value is a path relative to the suite file.
fn is_file_key(k: &str) -> bool {
    k == "file" || k.ends_with("_file")
}

fn set_path(t: &mut toml::Table, path: &[String], v: toml::Value) {
    if path.len() == 1 {
        t.insert(path[0].clone(), v);
        return;
    }
    let child = t
        .entry(path[0].clone())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if !child.is_table() {
        *child = toml::Value::Table(toml::Table::new());
    }
    if let toml::Value::Table(c) = child {
        set_path(c, &path[1..], v);
    }
}

/// Short label of a grid value for variant names: strings bare, everything else as TOML.
fn value_label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Turn a `toml` parse/deserialize error into a `file:line: message`, adding a suggestion
/// when serde lists the expected variants or fields.
fn toml_error(file: &str, text: &str, e: &toml::de::Error) -> ConfigError {
    let line = e
        .span()
        .map(|s| {
            text.get(..s.start.min(text.len()))
                .unwrap_or(text)
                .matches('\n')
                .count()
                + 1
        })
        .unwrap_or(0);
    let mut message = e.message().trim().to_string();
    for (rust, plain) in [
        ("expected u32", "expected a non-negative integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected usize", "expected a non-negative integer"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected a list"),
    ] {
        if let Some(stripped) = message.strip_suffix(rust) {
            message = format!("{stripped}{plain}");
        }
    }
    if let Some(hint) = expected_hint(&message) {
        message.push_str(&hint);
    }
    // Name the key when the error sits on a `key = value` line.
    let key = (line > 0)
        .then(|| text.lines().nth(line - 1))
        .flatten()
        .and_then(|l| l.split_once('='))
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('[') && !k.starts_with('#'));
    if let Some(k) = key {
        if !message.contains(&format!("`{k}`")) {
            message = format!("`{k}`: {message}");
        }
    }
    ConfigError::new(file, line, message)
}

/// `key` as given, or — when empty and `message` is serde's "unknown field `x`, …" — `[x]`;
/// and the message with a "did you mean" hint added when one applies.
fn locate_unknown_field<'a>(key: &[&'a str], message: &'a str) -> (Vec<&'a str>, String) {
    let message_t = message.trim();
    let mut msg = message_t.to_string();
    if let Some(hint) = expected_hint(message_t) {
        if !msg.contains("did you mean") {
            msg.push_str(&hint);
        }
    }
    if !key.is_empty() {
        return (key.to_vec(), msg);
    }
    let field = message_t
        .strip_prefix("unknown field `")
        .and_then(|r| r.split_once('`'))
        .map(|(k, _)| k);
    (field.into_iter().collect(), msg)
}

/// For serde's "unknown variant `x`, expected one of `a`, `b`" (and "unknown field …"), a
/// "did you mean" hint.
pub fn expected_hint(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("unknown variant `")
        .or_else(|| message.strip_prefix("unknown field `"))?;
    let (word, rest) = rest.split_once('`')?;
    let candidates: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let s = super::suggest(word, candidates.iter().copied())?;
    Some(format!(" (did you mean `{s}`?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<LoadedSuite, ConfigError> {
        LoadedSuite::from_str(text, Path::new("suite.toml"))
    }

    const MIN: &str = "[suite]\nname = \"t\"\n[traces]\npaths = [\"x\"]\n";

    #[test]
    fn defaults_apply() {
        let s = load(MIN).unwrap();
        assert_eq!(s.suite.suite.output_dir, "reports");
        assert_eq!(s.suite.suite.repeats, 1);
        assert_eq!(s.suite.traces.from, "auto");
        assert_eq!(s.suite.traces.counter, CounterKind::O200k);
        assert!(s.suite.evals.replay.enabled);
        assert_eq!(s.variants.len(), 1);
        assert_eq!(s.baseline, "base");
    }

    #[test]
    fn one_of_choices_are_replaced_not_mixed() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nsummarize.trigger.tokens = 9000\nsummarize.keep.messages = 10\n[engine.variants.a]\n[engine.variants.b]\nsummarize.trigger.fraction = 0.15\nsummarize.keep.messages = 4\n"
        ))
        .unwrap();
        let b = s.variants.iter().find(|v| v.name == "b").unwrap();
        let trigger = b.engine["summarize"]["trigger"].as_table().unwrap();
        assert_eq!(trigger.len(), 1, "{trigger:?}");
        assert_eq!(trigger["fraction"].as_float(), Some(0.15));
        assert_eq!(
            b.engine["summarize"]["keep"]["messages"].as_integer(),
            Some(4)
        );
    }

    #[test]
    fn owner_validation_errors_point_at_the_variant_or_base() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nwindow = 0\n[engine.variants.a]\n[engine.variants.b]\nsumarize.trigger = 1\n"
        ))
        .unwrap();
        let e = s
            .check_variants(|v| {
                if v.engine.contains_key("sumarize") {
                    return Err((vec!["sumarize".into()], "unknown key".into()));
                }
                if v.engine["window"].as_integer() == Some(0) {
                    return Err((vec!["window".into()], "window must be > 0".into()));
                }
                Ok(())
            })
            .unwrap_err();
        // Variant `a` inherits window = 0 from base (line 8); `b` misspells a key (line 11).
        assert_eq!(
            e.to_string(),
            "suite.toml:8: engine variant `a`: window must be > 0\nsuite.toml:11: engine variant `b`: unknown key"
        );
        assert!(s.check_variants(|_| Ok(())).is_ok());
        // An owner passing serde's message through with no key: the field is located.
        let b = s.variants.iter().find(|v| v.name == "b").unwrap();
        let e = s.variant_error(
            b,
            &[],
            "unknown field `sumarize`, expected one of `window`, `summarize`",
        );
        assert_eq!(e.line, 11);
        assert!(e.message.ends_with("(did you mean `summarize`?)"), "{e}");
    }

    #[test]
    fn trace_patterns_directories_and_globs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("data/a/deep")).unwrap();
        for f in [
            "data/a/x.json",
            "data/a/deep/y.json",
            "data/a/SOURCE.txt",
            "data/a/notes.md",
            "data/z.jsonl",
        ] {
            std::fs::write(d.join(f), "{}").unwrap();
        }
        let text = "[suite]\nname = \"t\"\n[traces]\npaths = [\"data/a\", \"data/*.jsonl\", \"data/**/y.json\"]\n";
        std::fs::write(d.join("s.toml"), text).unwrap();
        let s = LoadedSuite::load(&d.join("s.toml")).unwrap();
        let rels: Vec<String> = s
            .trace_files()
            .unwrap()
            .into_iter()
            .map(|f| f.rel)
            .collect();
        // Directory: every file but notes, recursively; `*` stays in its directory; `**` descends;
        // duplicates (y.json twice) collapse.
        assert_eq!(
            rels,
            ["data/a/deep/y.json", "data/a/x.json", "data/z.jsonl"]
        );
        let s2 = LoadedSuite::from_str(
            "[suite]\nname = \"t\"\n[traces]\npaths = [\"data/*.json\"]\n",
            &d.join("s.toml"),
        )
        .unwrap();
        let e = s2.trace_files().unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("matches no file"), "{e}");
    }

    #[test]
    fn variants_deep_merge_over_base() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"a\"\n[engine.base]\nwindow = 100\nsummarize = {{ trigger = 0.85, keep = 10 }}\n[engine.variants.a]\n[engine.variants.b]\nsummarize.trigger = 0.15\n"
        ))
        .unwrap();
        let b = s.variants.iter().find(|v| v.name == "b").unwrap();
        assert_eq!(b.engine["window"].as_integer(), Some(100));
        assert_eq!(b.engine["summarize"]["trigger"].as_float(), Some(0.15));
        assert_eq!(b.engine["summarize"]["keep"].as_integer(), Some(10));
        assert_eq!(s.ordered_variants()[0].name, "a");
    }

    #[test]
    fn grid_is_the_cartesian_product_in_stable_order() {
        let s = load(&format!(
            "{MIN}[engine]\nbaseline = \"clear.keep=3,summarize.trigger=0.85\"\n[engine.grid]\n\"summarize.trigger\" = [0.85, 0.15]\nclear.keep = [3, 10]\n"
        ))
        .unwrap();
        let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
        // Dimensions in key order (clear < summarize), last dimension fastest.
        assert_eq!(
            names,
            [
                "clear.keep=3,summarize.trigger=0.85",
                "clear.keep=3,summarize.trigger=0.15",
                "clear.keep=10,summarize.trigger=0.85",
                "clear.keep=10,summarize.trigger=0.15",
            ]
        );
        let v = &s.variants[3];
        assert_eq!(v.engine["summarize"]["trigger"].as_float(), Some(0.15));
        assert_eq!(v.engine["clear"]["keep"].as_integer(), Some(10));
    }

    #[test]
    fn baseline_must_exist_and_is_required_with_several_variants() {
        let e = load(&format!(
            "{MIN}[engine]\nbaseline = \"bse\"\n[engine.variants.base]\n[engine.variants.x]\n"
        ))
        .unwrap_err();
        assert_eq!(e.line, 6);
        assert!(e.message.contains("did you mean `base`?"), "{e}");
        let e = load(&format!("{MIN}[engine.variants.a]\n[engine.variants.b]\n")).unwrap_err();
        assert!(e.message.contains("no baseline"), "{e}");
    }

    #[test]
    fn grid_leaf_must_be_a_non_empty_list() {
        let e = load(&format!("{MIN}[engine.grid]\nwindow = 2000\n")).unwrap_err();
        assert_eq!(e.line, 6);
        assert!(
            e.message.contains("`window` must be a non-empty list"),
            "{e}"
        );
    }

    #[test]
    fn provider_keys_never_in_files() {
        let e = load(&format!(
            "{MIN}[providers.agent]\nkind = \"openai\"\napi_key = \"sk-x\"\n"
        ))
        .unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.message.contains("api_key_env"));
        let e = load(&format!("{MIN}[providers.judge]\nmodel = \"m\"\n")).unwrap_err();
        assert!(e.message.contains("missing `kind`"), "{e}");
    }

    #[test]
    fn unknown_variant_gets_a_suggestion() {
        let e = load(&format!("{MIN}counter = \"o200\"\n")).unwrap_err();
        assert_eq!(e.line, 5);
        assert!(e.message.contains("did you mean `o200k`?"), "{e}");
    }

    #[test]
    fn ask_at_accepts_end_or_index() {
        let s = load(&format!("{MIN}[evals.needle]\nask_at = 7\n")).unwrap();
        assert_eq!(s.suite.evals.needle.unwrap().ask_at, AskAt::Call(7));
        let e = load(&format!("{MIN}[evals.needle]\nask_at = \"middle\"\n")).unwrap_err();
        assert_eq!(e.line, 6);
    }

    #[test]
    fn digest_ignores_formatting_but_not_content() {
        let a = load(MIN).unwrap();
        let b = load(&format!("# comment\n{MIN}\n")).unwrap();
        let c = load(&format!("{MIN}from = \"openai\"\n")).unwrap();
        assert_eq!(a.digest, b.digest);
        assert_ne!(a.digest, c.digest);
    }
}
