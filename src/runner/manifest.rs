//! `run.json`: what a run was (resolved suite, digests of traces and prompt files, versions,
//! shard) and how it went (unit counts, status, totals). Written when the run starts (so a killed
//! run can be resumed) and rewritten when it ends.
//!
//! The file is a superset of `record::RunInfo` (flattened in), so `report`, `compare` and `gate`
//! read it as they read any run; the runner adds what it needs to resume, shard and merge.
//! The file is read and written through `record::RunDir` (`read_run_json::<RunManifest>()`,
//! `write_run_json(&manifest)`).

use super::shard::Shard;
use crate::config::suite::PromptFile;
use crate::metrics::cost::nano_dollars;
use crate::metrics::exact::ExactSum;
pub use crate::record::run_info::{RunStatus, SkippedTrace, UnitCounts};
use crate::record::{Row, RunInfo, TokensByRole};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A trace the run used, and the digest of the file it came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TraceDigest {
    pub id: String,
    pub file: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub tokens: TokensByRole,
    /// Sum over samples with a known price (agent cost is modelled: replayed views priced at
    /// the trace's model; summarizer, judge and eval-agent calls were made).
    pub cost_usd: f64,
    /// Money actually spent on model calls (summarizer + judge + eval agent, failed units'
    /// calls included): what `max_cost_usd` limits.
    #[serde(default)]
    pub spent_usd: f64,
    /// Samples whose price is unknown (not in `cost_usd`).
    pub cost_unknown_samples: u64,
    /// The run's cost line, as the reports show it (`metrics::cost::CostHeadline`).
    #[serde(default)]
    pub cost: crate::metrics::cost::CostHeadline,
    /// Per variant: the context windows its units replayed at and where they came from (suite,
    /// trace, the model's price-table entry, preset default), and which model priced the agent's
    /// views — the figures the report's notes state.
    #[serde(default)]
    pub sources: BTreeMap<String, crate::report::pricing_notes::Sources>,
}

impl Totals {
    pub fn of<'a>(samples: impl IntoIterator<Item = Row<'a>>) -> Totals {
        let mut t = TotalsSum::default();
        for s in samples {
            t.add(&s);
        }
        t.finish()
    }
}

/// [`Totals`] and the unit counts of a journal, one sample at a time (the journal is streamed,
/// nothing per sample is kept): [`TotalsSum::add`] each, then [`TotalsSum::finish`].
#[derive(Clone, Debug, Default)]
pub struct TotalsSum {
    totals: Totals,
    /// `cost_usd` and `spent_usd` as they are summed: the same floats whatever order the units
    /// finished in (`metrics::exact`).
    cost: ExactSum,
    spent: ExactSum,
    usage: crate::metrics::cost::UsageSum,
    sources: crate::report::pricing_notes::SourcesSum,
    /// Samples added.
    pub recorded: u64,
    /// Of which failed.
    pub failed: u64,
}

impl TotalsSum {
    pub fn add(&mut self, s: &Row<'_>) {
        let t = &mut self.totals;
        t.tokens.agent.add(&s.tokens.agent);
        t.tokens.summarizer.add(&s.tokens.summarizer);
        t.tokens.judge.add(&s.tokens.judge);
        t.tokens.eval_agent.add(&s.tokens.eval_agent);
        let c = &s.cost_usd;
        for spent in c.spent_roles().into_iter().flatten() {
            self.spent.add(spent);
        }
        // The same rule as the reports: a role with tokens and no price makes it unknown. Each
        // role's dollars are added apart (not the unit's rounded total), so the sum equals the
        // reports' total of the roles to the last digit.
        match s.cost_total() {
            Some(_) => {
                for role in [c.agent, c.summarizer, c.judge, c.eval_agent]
                    .into_iter()
                    .flatten()
                {
                    self.cost.add(role);
                }
            }
            None => t.cost_unknown_samples += 1,
        }
        self.usage.add(s);
        self.sources.add(s);
        self.recorded += 1;
        self.failed += u64::from(s.error.is_some());
    }

    pub fn finish(self) -> Totals {
        let mut t = self.totals;
        // Rounded as the cost line is: with every price known, `cost_usd` is its total.
        t.cost_usd = nano_dollars(self.cost.value());
        t.spent_usd = nano_dollars(self.spent.value());
        t.cost = self.usage.finish().cost.headline;
        t.sources = self.sources.finish();
        t
    }
}

/// Options of the invocation that are not part of the suite (they do not change results).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InvocationOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    pub concurrency: u64,
    #[serde(default)]
    pub no_cache: bool,
    /// Which executor ran the units (`default`, or `synthetic` for harness tests).
    pub executor: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// Run id, creation time, versions, resolved suite, provider provenance, trace and prompt
    /// digests, variants in order, baseline, seed.
    #[serde(flatten)]
    pub info: RunInfo,
    pub suite_name: String,
    /// The suite file as given on the command line.
    pub suite_file: String,
    /// sha256 of the suite's canonical JSON: runs (and shards) of the same suite share it.
    pub suite_digest: String,
    /// What the command line changed in the suite (`--set`, `--variant`, `--trace`, `--eval`,
    /// `--limit`); part of `suite_digest`.
    #[serde(default, skip_serializing_if = "crate::config::Overrides::is_empty")]
    pub overrides: crate::config::Overrides,
    /// Variant name → what it changes in `engine.base`.
    pub variant_overrides: BTreeMap<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Run ids this run was merged from (`ctxbench merge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    pub traces: Vec<TraceDigest>,
    pub prompts: Vec<PromptFile>,
    /// Trace files the suite's paths matched that did not load (`traces.skip_invalid`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_traces: Vec<SkippedTrace>,
    /// Files a directory or glob of the suite's paths matched that hold no trace (valid JSON
    /// of no trace format, a trace without messages): `error` says what was seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_files: Vec<SkippedTrace>,
    /// The import warnings of the run's traces, grouped by kind with counts and the first
    /// place of each (`record::import_warnings`): what the importers changed in the traces.
    #[serde(
        default,
        skip_serializing_if = "crate::record::ImportWarnings::is_empty"
    )]
    pub import_warnings: crate::record::ImportWarnings,
    pub status: RunStatus,
    pub units: UnitCounts,
    pub totals: Totals,
    pub options: InvocationOptions,
}

impl RunManifest {
    /// Why two runs cannot be joined or continued, if they differ in what they measured.
    pub fn incompatibility(&self, other: &RunManifest) -> Option<String> {
        if self.suite_digest != other.suite_digest {
            return Some(format!(
                "suite differs (digest {} in `{}` vs {} in `{}`)",
                short(&self.suite_digest),
                self.info.run_id,
                short(&other.suite_digest),
                other.info.run_id
            ));
        }
        let mut a = self.traces.clone();
        let mut b = other.traces.clone();
        a.sort();
        b.sort();
        if a != b {
            let diff = a
                .iter()
                .find(|t| !b.contains(t))
                .or_else(|| b.iter().find(|t| !a.contains(t)));
            return Some(format!(
                "traces differ (first difference: {})",
                diff.map(|t| format!("`{}` from {} sha256 {}", t.id, t.file, short(&t.sha256)))
                    .unwrap_or_default()
            ));
        }
        let mut a = self.prompts.clone();
        let mut b = other.prompts.clone();
        a.sort();
        b.sort();
        if a != b {
            return Some("prompt files differ (their sha256 digests do not match)".into());
        }
        None
    }
}

fn short(d: &str) -> &str {
    d.get(..12).unwrap_or(d)
}

/// Current UTC time as RFC 3339 (`2026-11-21T23:59:01Z`).
pub fn now_rfc3339() -> String {
    let (y, mo, d, h, mi, s) = utc_now_parts();
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// Current UTC time compact, for run ids (`20261121T235901Z`).
pub fn now_compact() -> String {
    let (y, mo, d, h, mi, s) = utc_now_parts();
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

fn utc_now_parts() -> (i64, u32, u32, u32, u32, u32) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    civil(secs)
}

/// Unix seconds → (year, month, day, hour, minute, second) in UTC (Hinnant's algorithm).
fn civil(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// run.json's dollars are the reports' to the last bit, whatever order the units finished in.
    #[test]
    fn totals_are_the_reports_dollars_in_any_order() {
        use crate::record::{CostByRole, Sample, TokensByRole};
        let units: Vec<Sample> = (0..300)
            .map(|i: u32| {
                let c = |m: u32| 1e-3 * f64::from((i * 7919) % m) / 7.0;
                let mut tokens = TokensByRole::default();
                tokens.agent.input = 1000;
                tokens.summarizer.input = 200;
                Sample::builder()
                    .eval("e")
                    .tokens(tokens)
                    .cost(CostByRole {
                        agent: Some(c(997)),
                        summarizer: Some(c(89)),
                        judge: None,
                        eval_agent: None,
                    })
                    .build()
            })
            .collect();
        let naive = |v: &mut dyn Iterator<Item = &Sample>| -> f64 {
            v.map(|u| u.cost_total().unwrap()).sum()
        };
        assert_ne!(
            naive(&mut units.iter()).to_bits(),
            naive(&mut units.iter().rev()).to_bits(),
            "the costs must show the problem"
        );
        let forward = Totals::of(units.iter().map(Sample::row));
        let backward = Totals::of(units.iter().rev().map(Sample::row));
        assert_eq!(forward.cost_usd.to_bits(), backward.cost_usd.to_bits());
        assert_eq!(forward.spent_usd.to_bits(), backward.spent_usd.to_bits());
        let usage = crate::metrics::cost::totals(units.iter().rev().map(Sample::row));
        assert_eq!(Some(forward.cost_usd), usage.cost.headline.total_usd);
        assert_eq!(Some(forward.spent_usd), usage.cost.headline.spent_usd);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(civil(1_795_305_541), (2026, 11, 21, 23, 59, 1));
    }
}
