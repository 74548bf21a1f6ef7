//! The report view: everything a writer shows, computed once from a run's samples.
//!
//! Writers never compute statistics themselves; they format this model. It serializes (minus
//! the raw samples) as `summary.json`.

use super::headline;
use super::rows::Rows;
use crate::metrics::aggregate::{self, Comparison, MetricSummary, PassK};
use crate::metrics::cost::{self, UsageTotals};
use crate::record::{RunInfo, Sample};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where the heavy part (timeline, evidence, summaries) of one sample of the model is. A model
/// built from samples in memory has every part loaded; one streamed from a journal
/// (`report::load`) has the compact part of every sample and the heavy part of a bounded set
/// ([`ReportModel::load_detail`] reads more).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowDetail {
    /// Byte offset of the sample's line in the journal, when it came from one.
    pub offset: Option<u64>,
    /// Points of its timeline (known even when the timeline is not loaded).
    pub timeline_points: usize,
    /// Its timeline, evidence and summaries are in `ReportModel::samples`.
    pub loaded: bool,
}

/// Per-variant summary.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct VariantSummary {
    pub variant: String,
    pub units: usize,
    pub errors: usize,
    pub metrics: Vec<MetricSummary>,
    pub usage: UsageTotals,
}

impl VariantSummary {
    pub fn metric(&self, name: &str) -> Option<&MetricSummary> {
        self.metrics.iter().find(|m| m.metric == name)
    }
}

/// Failed units of one variant and error kind.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ErrorGroup {
    pub variant: String,
    pub kind: String,
    pub count: usize,
    /// Message of the first such unit (untrusted text: writers escape it).
    pub example: String,
    pub example_unit: String,
}

/// The report model.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ReportModel {
    pub schema_version: u32,
    pub run_id: String,
    pub baseline: Option<String>,
    /// Variants in run order (run.json order, then any others by name).
    pub variants: Vec<VariantSummary>,
    /// Every non-baseline variant × metric vs the baseline, paired by trace/eval/sample/repeat.
    pub comparisons: Vec<Comparison>,
    pub pass_k: Vec<PassK>,
    pub errors: Vec<ErrorGroup>,
    pub totals: UsageTotals,
    /// Headline metrics in display order (see `headline`): the suite's `[report] metrics`, or
    /// the defaults.
    pub headline: Vec<String>,
    /// One verdict line per variant vs the baseline, over the headline metrics.
    pub verdicts: Vec<super::headline::VerdictLine>,
    /// Things the reader should know (torn journal line, missing baseline, …).
    pub notes: Vec<String>,
    /// The samples as compact rows, sorted by (variant order, trace, eval, sample, repeat).
    /// In a streamed model only the rows loaded in full ([`ReportModel::has_detail`]) carry
    /// their timeline, evidence and summaries; the others have them empty.
    #[serde(skip)]
    pub samples: Rows,
    /// The journal the samples were streamed from (for [`ReportModel::load_detail`]).
    #[serde(skip)]
    pub journal: Option<PathBuf>,
    /// [`ReportModel::shown`], computed on first use.
    #[serde(skip)]
    shown: std::sync::OnceLock<(Vec<usize>, usize)>,
}

/// How the note on units cancelled while running starts (the terminal shows it).
pub const CANCELLED_NOTE: &str = "cancelled:";

/// Metric display order: eval metrics by name, then `cost`, then `tokens`.
fn metric_rank(m: &str) -> (u8, &str) {
    match m {
        "cost" => (1, m),
        "tokens" => (2, m),
        _ => (0, m),
    }
}

impl ReportModel {
    /// Compute the model from samples in memory (every part loaded). Every bootstrap is
    /// seeded by `RunInfo::seed`.
    pub fn build(info: &RunInfo, samples: Vec<Sample>) -> ReportModel {
        Self::build_rows(info, samples.into_iter().collect(), None)
    }

    /// State in the notes, first, that the run is partial (interrupted, killed, stopped by the
    /// budget, a merge missing units, one shard): its numbers are of the recorded units only,
    /// which every writer (report.md, report.html, summary.json, the terminal) must say.
    pub fn note_progress(&mut self, progress: &crate::record::RunProgress) {
        if let Some(note) = progress.partial(self.samples.len()) {
            self.notes.insert(0, note);
        }
    }

    /// Attempts that are not in the journal spent money on model calls: failed attempts that
    /// `--retry-failed` replaced, units cancelled while running. Not in these totals (their
    /// units ran again, or will on `--resume`), said so the spend is not lost from sight.
    pub fn note_replaced(&mut self, r: &super::load::Replaced) {
        let usd = |x| crate::metrics::cost::format_usd(Some(x));
        if r.retried > 0 {
            self.notes.push(format!(
                "{} failed attempt(s) that `--retry-failed` ran again spent {} on model calls \
                 (samples.replaced.jsonl): the budget counted it; these totals count the \
                 recorded units only",
                r.retried,
                usd(r.retried_usd)
            ));
        }
        if r.cancelled > 0 {
            self.notes.push(format!(
                "{CANCELLED_NOTE} {} unit(s) cancelled while running had spent {} on model calls \
                 (samples.replaced.jsonl, kind `interrupted`; `--resume` runs them again): a \
                 resumed run's budget counts it; these totals count the recorded units only",
                r.cancelled,
                usd(r.cancelled_usd)
            ));
        }
    }

    /// Whether sample `i` carries its timeline, evidence and summaries.
    pub fn has_detail(&self, i: usize) -> bool {
        self.samples.has_detail(i)
    }

    /// Load the heavy part of the samples at `indices` from the journal (a second pass that
    /// seeks to their lines); samples already loaded are skipped.
    pub fn load_detail(&mut self, indices: &[usize]) -> Result<(), crate::record::JournalError> {
        let Some(path) = self.journal.clone() else {
            return Ok(());
        };
        let todo: Vec<(usize, u64)> = indices
            .iter()
            .filter(|&&i| i < self.samples.len())
            .filter_map(|&i| {
                let d = self.samples.detail(i);
                (!d.loaded).then_some(())?;
                Some((i, d.offset?))
            })
            .collect();
        let offsets: Vec<u64> = todo.iter().map(|t| t.1).collect();
        let full = super::load::read_full(&path, &offsets)?;
        for ((i, _), f) in todo.into_iter().zip(full) {
            self.samples.set_detail(i, f);
        }
        Ok(())
    }

    /// Compute the model from compact rows (`journal`: the file their offsets point into).
    pub fn build_rows(info: &RunInfo, mut samples: Rows, journal: Option<PathBuf>) -> ReportModel {
        let mut notes = Vec::new();
        let mut order: Vec<String> = info.variants.clone();
        let mut extra: Vec<&str> = samples
            .iter()
            .map(|s| s.variant)
            .filter(|v| !info.variants.iter().any(|x| x == v))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        let extra: Vec<String> = extra.into_iter().map(str::to_string).collect();
        order.extend(extra);
        let rank: BTreeMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, v)| (v.as_str(), i))
            .collect();
        samples.sort(|v| rank.get(v).copied().unwrap_or(usize::MAX));

        // What only reads the rows runs on a second thread while the observations are
        // collected, then the comparisons while the variants are summarized: each part is a
        // function of the rows alone (every bootstrap seeded by its label), so the numbers do
        // not depend on which thread computed them.
        let ((table, (dups, health, pricing, mut pass_k, totals)), variant_usage) =
            std::thread::scope(|scope| {
                let side = scope.spawn(|| {
                    (
                        aggregate::duplicate_units(samples.iter()),
                        health_notes(&samples),
                        super::pricing_notes::notes(&order, samples.iter()),
                        aggregate::pass_k(samples.iter()),
                        cost::totals(samples.iter()),
                    )
                });
                let usage: Vec<UsageTotals> = order
                    .iter()
                    .map(|v| cost::totals(samples.of_variant(v)))
                    .collect();
                let table = aggregate::observations(samples.iter());
                let side = side.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                ((table, side), usage)
            });
        if dups > 0 {
            notes.push(format!(
                "{dups} unit(s) appear more than once in the journal (same variant, trace, eval, \
                 sample and repeat); only the first of each counts in the statistics"
            ));
        }
        let seed = info.seed;
        let baseline = info
            .baseline_variant()
            .map(str::to_string)
            .or_else(|| order.first().cloned());
        let table = &table;
        let (mut variants, mut errors) = (Vec::new(), Vec::new());
        let comparisons = std::thread::scope(|scope| {
            let comparisons = scope.spawn(|| compare_all(table, baseline.as_deref(), &order, seed));
            let empty = BTreeMap::new();
            for (v, usage) in order.iter().zip(variant_usage) {
                let per_metric = table.get(v).unwrap_or(&empty);
                let mut names: Vec<&String> = per_metric.keys().collect();
                names.sort_by_key(|m| metric_rank(m));
                // On rayon's threads, beside the comparisons: each summary's bootstrap (up to
                // 2,000 resamples) is a function of its label, and `collect` keeps the order.
                let metrics = names
                    .into_par_iter()
                    .filter_map(|m| {
                        aggregate::summarize(m, &per_metric[m], seed, &format!("{v}\u{1f}{m}"))
                    })
                    .collect();
                let mut groups: BTreeMap<&str, ErrorGroup> = BTreeMap::new();
                let mut units = 0;
                for s in samples.of_variant(v) {
                    units += 1;
                    if let Some(e) = s.error {
                        groups
                            .entry(e.kind.as_str())
                            .or_insert_with(|| ErrorGroup {
                                variant: v.clone(),
                                kind: e.kind.clone(),
                                count: 0,
                                example: e.message.clone(),
                                example_unit: s.unit_id.to_string(),
                            })
                            .count += 1;
                    }
                }
                let n_err: usize = groups.values().map(|g| g.count).sum();
                errors.extend(groups.into_values());
                variants.push(VariantSummary {
                    variant: v.clone(),
                    units,
                    errors: n_err,
                    metrics,
                    usage,
                });
            }
            comparisons
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        });
        let comparisons = match comparisons {
            Some(c) => c,
            None => {
                notes.push(format!(
                    "baseline variant `{}` has no successful units: no paired comparison",
                    baseline.as_deref().unwrap_or_default()
                ));
                Vec::new()
            }
        };
        let unknown: usize = variants
            .iter()
            .filter(|v| v.usage.cost.total_usd.is_none())
            .count();
        if unknown > 0 {
            notes.push(format!(
                "{unknown} variant(s) include units whose price is unknown; their cost is shown \
                 as `unknown`, never $0 (add the model to the suite's pricing overrides)"
            ));
        }
        notes.extend(health);
        notes.extend(pricing);
        pass_k.sort_by(|a, b| {
            (rank.get(a.variant.as_str()), &a.eval, a.k).cmp(&(
                rank.get(b.variant.as_str()),
                &b.eval,
                b.k,
            ))
        });
        let available: Vec<&str> = {
            let mut names: Vec<&str> = variants
                .iter()
                .flat_map(|v| v.metrics.iter().map(|m| m.metric.as_str()))
                .collect();
            names.sort_by_key(|m| metric_rank(m));
            names.dedup();
            names
        };
        let choice = headline::suite_choice(&info.suite);
        let (headline, unmatched) = headline::select(choice.as_deref(), &available);
        if !unmatched.is_empty() {
            notes.push(format!(
                "[report] metrics names {} that no variant recorded",
                unmatched.join(", ")
            ));
        }
        let verdicts = headline::verdicts(&comparisons, &headline);
        ReportModel {
            schema_version: crate::record::SCHEMA_VERSION,
            run_id: info.run_id.clone(),
            baseline,
            comparisons,
            headline,
            verdicts,
            pass_k,
            errors,
            totals,
            variants,
            notes,
            samples,
            journal,
            shown: std::sync::OnceLock::new(),
        }
    }

    /// Indices of the samples report.html shows in full and how many failed or flagged units
    /// it leaves out ([`super::html::select`] of the samples), computed once: the second pass
    /// of the load, the summary texts and the page's "Samples" section ask for the same
    /// selection.
    pub fn shown(&self) -> (&[usize], usize) {
        let (shown, left_out) = self
            .shown
            .get_or_init(|| super::html::select(&self.samples, self.baseline.as_deref()));
        (shown, *left_out)
    }

    /// All metric names in display order.
    pub fn metric_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .variants
            .iter()
            .flat_map(|v| v.metrics.iter().map(|m| m.metric.as_str()))
            .collect();
        names.sort_by_key(|m| metric_rank(m));
        names.dedup();
        names
    }

    pub fn variant(&self, name: &str) -> Option<&VariantSummary> {
        self.variants.iter().find(|v| v.variant == name)
    }
}

/// Every non-baseline variant × metric against the baseline (variants in `order`, metrics in
/// display order); `None` when the baseline has no observations (no successful unit), an
/// empty list when there is no baseline.
fn compare_all(
    table: &aggregate::ObsTable,
    baseline: Option<&str>,
    order: &[String],
    seed: u64,
) -> Option<Vec<Comparison>> {
    let mut comparisons = Vec::new();
    let Some(base) = baseline else {
        return Some(comparisons);
    };
    let base_metrics = table.get(base)?;
    for v in order.iter().filter(|v| *v != base) {
        let Some(cand_metrics) = table.get(v) else {
            continue;
        };
        let mut names: Vec<&String> = cand_metrics.keys().collect();
        names.sort_by_key(|m| metric_rank(m));
        for m in names {
            if let Some(base_obs) = base_metrics.get(m) {
                comparisons.extend(aggregate::compare(
                    m,
                    v,
                    base,
                    &cand_metrics[m],
                    base_obs,
                    seed,
                ));
            }
        }
    }
    Some(comparisons)
}

// The number formatters live in `metrics::format` (a leaf, so the gate can word its verdicts
// with them without importing the report); re-exported here for the writers.
pub use crate::metrics::format::{fmt_ci, fmt_delta, fmt_num, fmt_p};

/// Flags for units whose numbers a broken or useless compaction shaped: successful units that
/// recorded failed summaries (`[engine] on_summary_error = "record"`) and futile compactions,
/// prompts a server cut silently, agents that ran out of `max_steps` (`step_limit`); and what
/// failed units spent before they failed (in the totals, not the statistics).
fn health_notes(samples: &Rows) -> Vec<String> {
    let mut flagged: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    let mut futile: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    let mut truncated: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    let mut step_limit: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    // Failed units that spent on model calls before they failed, and what they spent.
    let (mut failed_spending, mut failed_spent) = (0usize, 0.0f64);
    for s in samples.iter().filter(|s| s.error.is_some()) {
        let c = &s.cost_usd;
        let spent = [c.summarizer, c.judge, c.eval_agent]
            .iter()
            .map(|c| c.unwrap_or(0.0))
            .sum::<f64>();
        if spent > 0.0 {
            failed_spending += 1;
            failed_spent += spent;
        }
    }
    for s in samples.iter().filter(|s| s.error.is_none()) {
        if let Some(&n) = s.scores.get("step_limit").filter(|n| **n > 0.0) {
            let e = step_limit.entry(s.variant).or_default();
            e.0 += 1;
            e.1 += n as u64;
        }
        if let Some(&n) = s.scores.get("prompt_truncated").filter(|n| **n > 0.0) {
            let e = truncated.entry(s.variant).or_default();
            e.0 += 1;
            e.1 += n as u64;
        }
        if let Some(&n) = s.scores.get("summary_failures").filter(|n| **n > 0.0) {
            let e = flagged.entry(s.variant).or_default();
            e.0 += 1;
            e.1 += n as u64;
        }
        if s.eval == "replay" {
            if let Some(&n) = s.compactions.get("futile").filter(|n| **n > 0) {
                let e = futile.entry(s.variant).or_default();
                e.0 += 1;
                e.1 += n;
            }
        }
    }
    let mut notes = Vec::new();
    if failed_spending > 0 {
        notes.push(format!(
            "{failed_spending} failed unit(s) spent ${failed_spent:.4} on model calls before they \
             failed: counted in \"spent on model calls\" and the budget, not in the statistics \
             (their tokens and cost are in their error rows)"
        ));
    }
    for (v, (units, n)) in truncated {
        notes.push(format!(
            "FLAGGED: variant `{v}`: {units} unit(s) had {n} model call(s) whose server reported \
             under 80% of the prompt tokens sent: it probably cut the prompt to its context \
             without an error (Ollama, llama.cpp); their answers did not see the whole view \
             (see `prompt_truncated` in samples.jsonl; raise the server's context size)"
        ));
    }
    for (v, (units, n)) in step_limit {
        notes.push(format!(
            "FLAGGED: variant `{v}`: {units} unit(s) had {n} question(s) whose agent ran out of \
             `max_steps` before answering; they are scored as not recovered (see `step_limit` \
             and `hit_step_limit` in samples.jsonl; raise the eval's `max_steps` if the agent \
             was still searching)"
        ));
    }
    for (v, (units, n)) in flagged {
        notes.push(format!(
            "FLAGGED: variant `{v}`: {units} unit(s) succeeded although {n} summaries failed \
             (`on_summary_error = \"record\"`); their tokens, cost and scores are not those of a \
             working summarizer (see `summary_failures` in samples.jsonl)"
        ));
    }
    for (v, (units, n)) in futile {
        notes.push(format!(
            "variant `{v}`: {n} futile compaction(s) on {units} trace(s) (removed no message or \
             left the request no smaller; `futile` in the timeline)"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{TokensByRole, UnitError, SCHEMA_VERSION};

    fn s(variant: &str, sample: &str, recall: f64) -> Sample {
        Sample {
            schema_version: SCHEMA_VERSION,
            unit_id: format!("{variant}/{sample}"),
            trace_id: "t".into(),
            variant: variant.into(),
            eval: "needle".into(),
            sample: sample.into(),
            params: BTreeMap::new(),
            repeat: 0,
            scores: BTreeMap::from([("recall".to_string(), recall)]),
            passed: None,
            tokens: TokensByRole::default(),
            cost_usd: Default::default(),
            compactions: BTreeMap::new(),
            latency_ms: 0,
            error: None,
            evidence: serde_json::Value::Null,
            timeline: vec![],
            summaries: vec![],
        }
    }

    #[test]
    fn model_orders_variants_compares_against_baseline_and_groups_errors() {
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into(), "aggr".into()];
        let mut samples = vec![];
        for i in 0..10 {
            samples.push(s("aggr", &i.to_string(), if i < 5 { 0.0 } else { 1.0 }));
            samples.push(s("base", &i.to_string(), 1.0));
        }
        let mut failed = s("zzz", "0", 0.0);
        failed.error = Some(UnitError {
            kind: "timeout".into(),
            message: "slow".into(),
        });
        samples.push(failed);
        let m = ReportModel::build(&info, samples);
        let names: Vec<&str> = m.variants.iter().map(|v| v.variant.as_str()).collect();
        assert_eq!(names, ["base", "aggr", "zzz"]);
        assert_eq!(m.baseline.as_deref(), Some("base"));
        let recall = m
            .comparisons
            .iter()
            .find(|c| c.metric == "needle.recall" && c.candidate == "aggr")
            .unwrap();
        assert_eq!(recall.n_pairs, 10);
        assert!((recall.delta + 0.5).abs() < 1e-12);
        assert_eq!(m.errors.len(), 1);
        assert_eq!(
            (m.errors[0].variant.as_str(), m.errors[0].count),
            ("zzz", 1)
        );
        assert_eq!(m.variant("zzz").unwrap().errors, 1);
        // No tokens used: a known cost of $0.
        assert_eq!(m.metric_names(), ["needle.recall", "cost", "tokens"]);
        // samples sorted by variant order
        assert_eq!(m.samples.get(0).variant, "base");
    }

    #[test]
    fn an_agent_out_of_steps_flags_its_sample_and_is_noted() {
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into()];
        let mut out_of_steps = s("base", "0", 0.0);
        out_of_steps.scores.insert("step_limit".into(), 2.0);
        let m = ReportModel::build(&info, vec![out_of_steps, s("base", "1", 1.0)]);
        let note = m.notes.iter().find(|n| n.contains("`step_limit`"));
        assert!(
            note.is_some_and(|n| n.starts_with("FLAGGED: variant `base`: 1 unit(s) had 2")),
            "{:?}",
            m.notes
        );
        // Still scored: the miss counts in the recall mean.
        assert!(m.metric_names().contains(&"needle.recall"));
    }

    #[test]
    fn number_formatting() {
        assert_eq!(fmt_num(0.5), "0.500");
        assert_eq!(fmt_num(-0.0001), "-0.000100");
        assert_eq!(fmt_num(-0.0), "0.000");
        assert_eq!(fmt_num(12345.6), "12346");
        assert_eq!(fmt_num(f64::NAN), "n/a");
        assert_eq!(fmt_p(Some(0.0004)), "<0.001");
        assert_eq!(fmt_p(Some(0.25)), "0.250");
    }
}
