//! Versioned on-disk records: the one per-sample result model every writer reads, and the run
//! journal (`samples.jsonl`, appended and flushed per finished unit).
//!
//! A `Sample` is one unit's outcome: trace × variant × eval sample × repeat. Writers (csv, json,
//! markdown, html, plots) are pure functions of `&[Sample]` plus the run's `RunInfo`.
//!
//! # Run directory layout
//!
//! ```text
//! reports/<run-id>/
//!   run.json        RunInfo: resolved suite, versions, provenance, digests, variants, baseline
//!   samples.jsonl   one Sample per line, appended and flushed as each unit finishes
//!   results.csv     one flat row per sample (report::csv)
//!   summary.json    the statistics of the report model (report::json)
//!   report.md       Markdown report (report::markdown)
//!   report.html     self-contained HTML report with inline SVG plots (report::html)
//!   plots/*.png|svg plots (report::plots)
//!   stores/<unit>/  offload store of a unit (evals::executors); after the run only those of the
//!                   samples shown in full are kept (runner::stores, report::shown)
//!   stores.pack     while the run goes: the stores needle units held in memory that the run may
//!                   keep but cannot tell yet, one record a unit, and a marker per store not
//!                   written (engine::store::PackFile, runner::stores::StorePolicy); the kept
//!                   ones are unpacked into stores/ (stores surely kept go there at once)
//!   summaries.pack  long summary texts a sample's `summaries` name, appended per unit
//!                   (summary::SummaryPack; runs before it hold summaries/<sha256>.md files)
//!   gate.xml        JUnit XML written by `ctxbench gate` (default location)
//!   compare.md|json written by `ctxbench compare RUN_A RUN_B` into RUN_B (default location)
//! ```
//!
//! `run.json` and `samples.jsonl` are the source of truth; everything else is re-rendered from
//! them by `ctxbench report` without any model call. [`RunDir`] owns this layout: every path
//! above, and the reading and writing of the two source files, go through it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod builder;
pub mod import_warnings;
pub mod journal;
pub mod lock;
pub mod row;
pub mod run_dir;
pub mod run_info;
pub mod summary;

pub use builder::SampleBuilder;
pub use import_warnings::ImportWarnings;
pub use journal::{Journal, JournalError, Repaired, SamplesRead, TornLine};
pub use lock::{LockError, RunLock};
pub use row::{pair_hash, Entries, Interner, Row};
pub use run_dir::{Run, RunDir};
pub use run_info::{ProviderProvenance, RunInfo, RunProgress, RunStatus, SkippedTrace, UnitCounts};
pub use summary::{SummaryPack, SummaryRecord};

/// Version of `samples.jsonl` / `run.json`. Bump on incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Tokens of one role (agent, summarizer, judge) split by kind. `input` includes `cached`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TokenSplit {
    pub input: u64,
    pub cached: u64,
    #[serde(default)]
    pub cache_write: u64,
    pub output: u64,
}

impl TokenSplit {
    pub fn add(&mut self, o: &TokenSplit) {
        self.input += o.input;
        self.cached += o.cached;
        self.cache_write += o.cache_write;
        self.output += o.output;
    }
    pub fn total(&self) -> u64 {
        self.input + self.output
    }
}

/// Token usage of a unit by role.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TokensByRole {
    /// The replayed agent's model calls (views built by the engine; modelled, not made).
    pub agent: TokenSplit,
    /// Summarizer calls made by the engine.
    pub summarizer: TokenSplit,
    /// Judge calls made by evals.
    pub judge: TokenSplit,
    /// Calls the evals make to the agent model (needle questions, drift and continuation
    /// probes). Absent in records written before this role existed (read as none).
    #[serde(default)]
    pub eval_agent: TokenSplit,
}

impl TokensByRole {
    /// Tokens of every role, input + output (cached is part of input): the one total the
    /// terminal, report.md, report.html, results.csv and run.json agree on.
    pub fn total(&self) -> u64 {
        self.agent.total() + self.summarizer.total() + self.judge.total() + self.eval_agent.total()
    }
}

/// Dollar cost of a unit by role. `None` = price unknown (never reported as $0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CostByRole {
    pub agent: Option<f64>,
    pub summarizer: Option<f64>,
    pub judge: Option<f64>,
    /// Eval-agent calls (see [`TokensByRole::eval_agent`]).
    #[serde(default)]
    pub eval_agent: Option<f64>,
}

impl CostByRole {
    /// Total cost, or `None` when the agent price is unknown. Summarizer and judge costs that
    /// are `None` count as 0 here because this type cannot tell whether those roles used tokens;
    /// prefer [`Sample::cost_total`], which can.
    pub fn total(&self) -> Option<f64> {
        Some(
            self.agent?
                + self.summarizer.unwrap_or(0.0)
                + self.judge.unwrap_or(0.0)
                + self.eval_agent.unwrap_or(0.0),
        )
    }

    /// The roles whose dollars were actually spent on model calls: summarizer, judge, eval
    /// agent (the agent's are modelled, not spent); an unused role is `None`.
    pub fn spent_roles(&self) -> [Option<f64>; 3] {
        [self.summarizer, self.judge, self.eval_agent]
    }

    /// Dollars actually spent on model calls ([`CostByRole::spent_roles`]; a `None` counts $0).
    pub fn spent(&self) -> f64 {
        self.spent_roles()
            .into_iter()
            .flatten()
            .fold(0.0, |a, x| a + x)
    }
}

/// A unit that failed: recorded as data, the run goes on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UnitError {
    /// `provider_auth`, `rate_limited`, `timeout`, `context_overflow`, `bad_response`,
    /// `engine`, `eval`, `io`, …
    pub kind: String,
    pub message: String,
}

/// One point of a context timeline: the view sent at one replayed model call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelinePoint {
    /// Index of the assistant message (model call) in the trace.
    pub trace_index: usize,
    /// Tokens of the view sent (system + messages + tools).
    pub tokens: u64,
    /// Tokens of the same call with no compression (the reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_tokens: Option<u64>,
    /// Compression event types that happened at this call (`evicted`, `summarized`, …): a
    /// replay's are the kinds' static names, not a string allocated per event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<std::borrow::Cow<'static, str>>,
    /// Human-readable detail of those events (what was evicted, cleared or summarized, and
    /// where it went). Derived from trace text: untrusted, writers must escape it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

/// One unit's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sample {
    pub schema_version: u32,
    /// Stable id of the unit (hash of trace, variant, eval, sample key, repeat).
    pub unit_id: String,
    pub trace_id: String,
    pub variant: String,
    /// `needle`, `drift`, `probes`, `invariants`, `replay`.
    pub eval: String,
    /// Key of the sample within the eval, stable across runs (e.g. `depth=0.25/pos=tool`).
    pub sample: String,
    /// Sweep parameters of this sample (depth, trigger, position, …).
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    pub repeat: u32,
    /// Metric name → value (e.g. `recall` 1.0, `steps` 3, `next_tool_match` 0.0).
    #[serde(default)]
    pub scores: BTreeMap<String, f64>,
    /// Pass/fail verdict where the eval has one (used by McNemar and pass@k).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    #[serde(default)]
    pub tokens: TokensByRole,
    #[serde(default)]
    pub cost_usd: CostByRole,
    /// Compression event type → count during the replay.
    #[serde(default)]
    pub compactions: BTreeMap<String, u64>,
    #[serde(default)]
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<UnitError>,
    /// What the eval saw and did: answer, tool calls, files read, expected value…
    #[serde(default)]
    pub evidence: serde_json::Value,
    /// Context size per replayed model call, for timelines and plots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelinePoint>,
    /// The summaries the sample's replay produced, in order (fold 1, 2, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<SummaryRecord>,
}

impl Sample {
    /// Tokens of every role and kind summed (input + output; cached is part of input).
    pub fn tokens_total(&self) -> u64 {
        self.tokens.total()
    }

    /// Total dollar cost of the unit, or `None` when a role that used tokens has an unknown
    /// price (an unknown price is never reported as $0).
    pub fn cost_total(&self) -> Option<f64> {
        row::cost_total(&self.tokens, &self.cost_usd)
    }

    /// 64-bit digest of [`Sample::pair_key`]'s parts (FNV-1a, then the SplitMix64 finalizer):
    /// stable across platforms and versions, cheap to compare and sort. Two distinct keys
    /// collide with probability about n²/2⁶⁵ (3·10⁻¹⁰ for 100,000 units).
    pub fn pair_hash(&self) -> u64 {
        row::pair_hash(&self.trace_id, &self.eval, &self.sample, self.repeat)
    }

    /// Key that pairs this unit with the same unit of another variant in the same run.
    pub fn pair_key(&self) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.trace_id, self.eval, self.sample, self.repeat
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Sample {
        Sample::builder().build()
    }

    #[test]
    fn a_sample_read_back_is_written_with_the_same_numbers() {
        // `merge` and `repair` write again the samples they read: every float must come back
        // to its own bits (serde_json's `float_roundtrip`; without it `merge` changed values
        // such as this cost by one unit in the last place).
        let mut s = sample();
        s.cost_usd.agent = Some(0.122_867_399_999_999_99);
        s.scores.insert("artifact_recall".into(), 1.0 / 11.0);
        s.scores
            .insert("token_savings".into(), 0.738_291_139_240_506_3);
        let line = serde_json::to_string(&s).unwrap();
        let back: Sample = serde_json::from_str(&line).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), line);
        for text in [
            "0.12286739999999999",
            "0.09090909090909091",
            "2.2250738585072014e-308",
        ] {
            let x: f64 = serde_json::from_str(text).unwrap();
            assert_eq!(
                x.to_bits(),
                text.parse::<f64>().unwrap().to_bits(),
                "{text}"
            );
        }
    }

    #[test]
    fn cost_total_is_unknown_when_a_used_role_has_no_price() {
        let mut s = sample();
        s.tokens.agent.input = 100;
        s.tokens.summarizer.input = 50;
        s.cost_usd.agent = Some(0.5);
        assert_eq!(s.cost_total(), None);
        s.cost_usd.summarizer = Some(0.25);
        assert_eq!(s.cost_total(), Some(0.75));
        // A role that used no tokens may have no price.
        s.tokens.judge = TokenSplit::default();
        assert_eq!(s.cost_total(), Some(0.75));
    }

    #[test]
    fn pair_key_ignores_variant_and_unit_id() {
        let a = sample();
        let mut b = sample();
        b.variant = "other".into();
        b.unit_id = "other".into();
        assert_eq!(a.pair_key(), b.pair_key());
        assert_eq!(a.pair_hash(), b.pair_hash());
        b.repeat = 1;
        assert_ne!(a.pair_key(), b.pair_key());
        assert_ne!(a.pair_hash(), b.pair_hash());
        // Field boundaries matter.
        let mut c = sample();
        c.trace_id = "ts".into();
        c.sample = "".into();
        assert_ne!(a.pair_hash(), c.pair_hash());
    }
}
