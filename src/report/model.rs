//! The report view: everything a writer shows, computed once from a run's samples.
//!
//! Writers never compute statistics themselves; they format this model. It serializes (minus
//! the raw samples) as `summary.json`.

use super::headline;
use super::rows::Rows;
use crate::metrics::aggregate::{self, metric_rank, Comparison, MetricSummary, PassK};
use crate::metrics::cost::{self, UsageTotals};
use crate::record::{Row, RunInfo, Sample};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
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
    shown: std::sync::OnceLock<(Vec<usize>, super::html::LeftOut)>,
    /// What the plots draw, summed over every sample.
    #[serde(skip)]
    pub plot_sums: super::plots::data::PlotSums,
    /// The evals of the samples.
    #[serde(skip)]
    pub evals: std::collections::BTreeSet<String>,
    /// Samples in the run (`samples` holds them all, or, spilled, the ones shown in full).
    #[serde(skip)]
    pub units: usize,
    /// A spilled model's samples on disk, and the index among them of each of `samples`.
    #[serde(skip)]
    spilled: Option<(std::sync::Arc<super::spill::SpilledRows>, Vec<usize>)>,
}

/// How the note on units cancelled while running starts (the terminal shows it).
pub const CANCELLED_NOTE: &str = "cancelled:";

/// Every metric name of `variants`, once, in display order.
fn metric_names(variants: &[VariantSummary]) -> Vec<&str> {
    let mut names: Vec<&str> = variants
        .iter()
        .flat_map(|v| v.metrics.iter().map(|m| m.metric.as_str()))
        .collect();
    names.sort_by_key(|m| metric_rank(m));
    names.dedup();
    names
}

impl ReportModel {
    /// Compute the model from samples in memory (every part loaded). Every bootstrap is
    /// seeded by `RunInfo::seed`.
    pub fn build(info: &RunInfo, samples: Vec<Sample>) -> ReportModel {
        Self::build_rows(info, samples.into_iter().collect(), None)
    }

    /// State in the notes, first, that the run is partial (interrupted, killed, stopped by the
    /// budget, a merge missing units, one shard): its numbers are of the recorded units only,
    /// which every writer (report.md, report.html, summary.json, the terminal) must say; and
    /// which files of the suite's trace paths gave no trace (skipped as invalid, or holding
    /// none) and what the importers changed in the traces (run.json `import_warnings`), before
    /// it.
    pub fn note_progress(&mut self, progress: &crate::record::RunProgress) {
        let mut first = progress.left_out();
        first.extend(progress.import_warnings.note());
        first.extend(progress.partial(self.units));
        for note in first.into_iter().rev() {
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
        let order = variant_order(info, samples.iter().map(|s| s.variant));
        let rank = ranks(&order);
        samples.sort(|v| rank.get(v).copied().unwrap_or(usize::MAX));
        // A unit journaled more than once (overlapping shards, a line copied by hand) counts
        // once, by its first line, in every figure: units, totals, tables, results.csv.
        let dups = samples.dedup_sorted();

        // What only reads the rows runs on a second thread while the observations are
        // collected, then the comparisons while the variants are summarized: each part is a
        // function of the rows alone (every bootstrap seeded by its label), so the numbers do
        // not depend on which thread computed them.
        let (sums, table) = std::thread::scope(|scope| {
            let side = scope.spawn(|| {
                let mut sums = RowSums::default();
                for s in samples.iter() {
                    sums.add(&s);
                }
                sums
            });
            let table = aggregate::observations(samples.iter());
            let sums = side.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (sums, table)
        });
        let seed = info.seed;
        let baseline = baseline_of(info, &order);
        let table = &table;
        let mut metrics = Vec::new();
        let comparisons = std::thread::scope(|scope| {
            let comparisons = scope.spawn(|| {
                compare_all(table, baseline.as_deref(), &order, |v, base, m| {
                    aggregate::compare(m, v, base, &table[v][m], &table[base][m], seed)
                })
            });
            let empty = BTreeMap::new();
            for v in &order {
                let per_metric = table.get(v).unwrap_or(&empty);
                let mut names: Vec<&String> = per_metric.keys().collect();
                names.sort_by_key(|m| metric_rank(m));
                // On rayon's threads, beside the comparisons: each summary's bootstrap (up to
                // 2,000 resamples) is a function of its values and variant, and `collect` keeps
                // the order.
                metrics.push(
                    names
                        .into_par_iter()
                        .filter_map(|m| aggregate::summarize(m, &per_metric[m], seed, v))
                        .collect(),
                );
            }
            comparisons
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        });
        let mut model = assemble(info, order, baseline, dups, sums, metrics, comparisons);
        model.units = samples.len();
        model.samples = samples;
        model.journal = journal;
        model
    }

    /// Compute the model from rows spilled to disk (`report::spill`): the same statistics,
    /// notes and selections as [`ReportModel::build_rows`] of the same rows, in passes over
    /// them in report order, with the observations spilled too (`run_len` a run); `samples`
    /// holds the rows shown in full and the ones whose timeline the context plots draw, their
    /// heavy part to be loaded from `journal` ([`ReportModel::load_detail`]).
    pub fn build_spilled(
        info: &RunInfo,
        rows: super::spill::SpilledRows,
        journal: PathBuf,
        run_len: usize,
    ) -> std::io::Result<ReportModel> {
        let mut sums = RowSums::default();
        let mut select = super::html::Select::default();
        let mut obs = super::spill::ObsSpill::new(rows.dir().clone(), run_len);
        let mut seen: Vec<String> = Vec::new();
        let mut plotted: Vec<usize> = Vec::new();
        let mut failed: Option<std::io::Error> = None;
        // `for_each_unique` skips the later lines of a unit journaled more than once; the first pass
        // counts them for the note.
        let dups = rows.for_each_unique(|i, s, _, was_plotted| {
            sums.add(&s);
            select.first(i, &s);
            if was_plotted {
                plotted.push(i);
            }
            if seen.last().is_none_or(|v| v != s.variant) {
                seen.push(s.variant.to_string());
            }
            aggregate::for_each_obs(&s, |metric, o| {
                if failed.is_none() {
                    failed = obs.push(s.variant, metric, i, o).err();
                }
            });
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        seen.dedup();
        let order = variant_order(info, seen.iter().map(String::as_str));
        let baseline = baseline_of(info, &order);
        // (`order` is the model's variants: the caps of `ReportModel::shown_caps`.)
        select.keys_chosen(order.len());
        rows.for_each_unique(|i, s, _, _| select.second(i, &s))?;
        // The rows kept in memory: the ones shown in full, the plotted ones.
        let mut subset = Rows::default();
        let mut global = Vec::new();
        let mut plotted_at = plotted.iter().peekable();
        let third = baseline.as_deref().filter(|_| select.wants_third());
        rows.for_each_unique(|i, s, detail, _| {
            let chosen = match third {
                Some(b) => select.third(i, &s, b),
                None => select.is_chosen(i),
            };
            let plot = plotted_at.next_if(|&&p| p == i).is_some();
            if chosen || plot {
                subset.push(s.to_sample(), detail);
                global.push(i);
            }
        })?;
        let (chosen, left_out) = select.finish();
        let local: Vec<usize> = chosen
            .iter()
            .filter_map(|i| global.binary_search(i).ok())
            .collect();

        let file = obs.finish()?;
        let seed = info.seed;
        let mut metrics = Vec::new();
        let empty = BTreeMap::new();
        for v in &order {
            let per_metric = file.index.get(v).unwrap_or(&empty);
            let mut names: Vec<&String> = per_metric.keys().collect();
            names.sort_by_key(|m| metric_rank(m));
            metrics.push(
                names
                    .into_iter()
                    .filter_map(|m| {
                        let range = per_metric[m];
                        let values = || file.read(range).map(|o| o.value);
                        aggregate::summarize_of(m, range.1, values, seed, v)
                    })
                    .collect(),
            );
        }
        let comparisons = compare_all(&file.index, baseline.as_deref(), &order, |v, base, m| {
            let cand = (v, &file, file.index[v][m]);
            super::spill::compare_ranges(m, cand, (base, &file, file.index[base][m]), seed)
        });
        if let Some(e) = file.error() {
            return Err(e);
        }
        let mut model = assemble(info, order, baseline, dups, sums, metrics, comparisons);
        model.units = rows.len() - dups;
        model.samples = subset;
        model.journal = Some(journal);
        let _ = model.shown.set((local, left_out));
        model.spilled = Some((std::sync::Arc::new(rows), global));
        Ok(model)
    }

    /// Every sample in report order, whole (in memory) or read back from disk (spilled).
    pub fn for_each_row(&self, mut each: impl FnMut(Row<'_>)) -> std::io::Result<()> {
        match &self.spilled {
            Some((rows, _)) => rows.for_each_unique(|_, s, _, _| each(s)).map(|_| ()),
            None => {
                self.samples.iter().for_each(each);
                Ok(())
            }
        }
    }

    /// Whether the samples were spilled to disk (`samples` holds the ones shown in full).
    pub fn spilled(&self) -> bool {
        self.spilled.is_some()
    }

    /// The index among every sample of `samples`' sample `i` (the same, unless spilled).
    pub fn index_of(&self, i: usize) -> usize {
        match &self.spilled {
            Some((_, global)) => global[i],
            None => i,
        }
    }

    /// Indices of the samples report.html shows in full and how many failed or flagged units
    /// it leaves out ([`super::html::select`] of the samples), computed once: the second pass
    /// of the load, the summary texts and the page's "Samples" section ask for the same
    /// selection.
    pub fn shown(&self) -> (&[usize], super::html::LeftOut) {
        let (shown, left_out) = self.shown.get_or_init(|| {
            super::html::select(&self.samples, self.baseline.as_deref(), self.variants.len())
        });
        (shown, *left_out)
    }

    /// How many units report.html does not show in full past its caps, by kind: the one count
    /// of them, which the page ("N more … are not shown in full") and the run's closing lines
    /// (`cli::run`: "note: N … report.html does not show in full") both give. Of every unit of
    /// the model, whether or not it left an offload store.
    pub fn left_out(&self) -> super::html::LeftOut {
        self.shown().1
    }

    /// The caps per variant of the samples report.html shows in full: those of the run's
    /// variants (`html::Caps::for_variants`), which [`ReportModel::shown`] applies.
    pub fn shown_caps(&self) -> super::html::Caps {
        super::html::Caps::for_variants(self.variants.len())
    }

    /// All metric names in display order.
    pub fn metric_names(&self) -> Vec<&str> {
        metric_names(&self.variants)
    }

    pub fn variant(&self, name: &str) -> Option<&VariantSummary> {
        self.variants.iter().find(|v| v.variant == name)
    }
}

/// Variants in run order: run.json's, then any others the rows name, by name.
fn variant_order<'a>(info: &RunInfo, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut order: Vec<String> = info.variants.clone();
    let mut extra: Vec<&str> = names
        .filter(|v| !info.variants.iter().any(|x| x == v))
        .collect();
    extra.sort_unstable();
    extra.dedup();
    order.extend(extra.into_iter().map(str::to_string));
    order
}

fn ranks(order: &[String]) -> BTreeMap<&str, usize> {
    order
        .iter()
        .enumerate()
        .map(|(i, v)| (v.as_str(), i))
        .collect()
}

/// The suite's baseline variant, or the first.
fn baseline_of(info: &RunInfo, order: &[String]) -> Option<String> {
    info.baseline_variant()
        .map(str::to_string)
        .or_else(|| order.first().cloned())
}

/// One variant's units, failures by kind and usage.
#[derive(Debug, Default)]
struct VariantSum {
    units: usize,
    groups: BTreeMap<String, ErrorGroup>,
    usage: cost::UsageSum,
}

/// What the model takes from every row, one at a time in report order, besides the
/// observations: bounded by the run's variants, tasks and names, not its rows.
#[derive(Debug, Default)]
struct RowSums {
    health: HealthSum,
    pricing: super::pricing_notes::NotesSum,
    pass_k: aggregate::PassKSum,
    totals: cost::UsageSum,
    variants: BTreeMap<String, VariantSum>,
    plots: super::plots::data::PlotSums,
    evals: std::collections::BTreeSet<String>,
}

impl RowSums {
    fn add(&mut self, s: &Row<'_>) {
        self.health.add(s);
        self.pricing.add(s);
        self.pass_k.add(s);
        self.totals.add(s);
        self.plots.add(s);
        if !self.evals.contains(s.eval) {
            self.evals.insert(s.eval.to_string());
        }
        if !self.variants.contains_key(s.variant) {
            self.variants
                .insert(s.variant.to_string(), VariantSum::default());
        }
        let v = self.variants.get_mut(s.variant).expect("inserted");
        v.units += 1;
        v.usage.add(s);
        if let Some(e) = s.error {
            if !v.groups.contains_key(&e.kind) {
                v.groups.insert(
                    e.kind.clone(),
                    ErrorGroup {
                        variant: s.variant.to_string(),
                        kind: e.kind.clone(),
                        count: 0,
                        example: e.message.clone(),
                        example_unit: s.unit_id.to_string(),
                    },
                );
            }
            v.groups.get_mut(&e.kind).expect("inserted").count += 1;
        }
    }
}

/// The model from what every path computes alike: the row sums, each variant's metric
/// summaries (in `order`) and the comparisons (`None`: the baseline has no observations);
/// `dups`: the later lines of units journaled more than once, left out of the rows summed.
fn assemble(
    info: &RunInfo,
    order: Vec<String>,
    baseline: Option<String>,
    dups: usize,
    sums: RowSums,
    metrics: Vec<Vec<MetricSummary>>,
    comparisons: Option<Vec<Comparison>>,
) -> ReportModel {
    let RowSums {
        health,
        pricing,
        pass_k,
        totals,
        variants: mut per_variant,
        plots,
        evals,
    } = sums;
    let mut notes = Vec::new();
    if dups > 0 {
        notes.push(format!(
            "{dups} unit(s) appear more than once in the journal (same variant, trace, eval, \
             sample and repeat); only the first line of each counts, in every figure and table \
             of the report and in results.csv ({dups} later line(s) left out)"
        ));
    }
    let (mut variants, mut errors) = (Vec::new(), Vec::new());
    for (v, metrics) in order.iter().zip(metrics) {
        let sum = per_variant.remove(v).unwrap_or_default();
        let n_err: usize = sum.groups.values().map(|g| g.count).sum();
        errors.extend(sum.groups.into_values());
        variants.push(VariantSummary {
            variant: v.clone(),
            units: sum.units,
            errors: n_err,
            metrics,
            usage: sum.usage.finish(),
        });
    }
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
    notes.extend(health.finish(&order));
    notes.extend(pricing.finish(&order));
    let rank = ranks(&order);
    let mut pass_k = pass_k.finish();
    pass_k.sort_by(|a, b| {
        (rank.get(a.variant.as_str()), &a.eval, a.k).cmp(&(
            rank.get(b.variant.as_str()),
            &b.eval,
            b.k,
        ))
    });
    let available = metric_names(&variants);
    let choice = headline::suite_choice(&info.suite);
    let (headline, unmatched) = headline::select(choice.as_deref(), &available);
    if !unmatched.is_empty() {
        notes.push(format!(
            "{} {} that no variant recorded: the headline leaves it out (a typo? report.md's \
             table of each variant's metrics lists the names recorded)",
            headline::UNMATCHED,
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
        totals: totals.finish(),
        variants,
        notes,
        samples: Rows::default(),
        journal: None,
        shown: std::sync::OnceLock::new(),
        plot_sums: plots,
        evals,
        units: 0,
        spilled: None,
    }
}

/// Every non-baseline variant × metric against the baseline (variants in `order`, metrics in
/// display order), of a table of observations by variant and metric in memory or of ranges of
/// a spilled file, `compare(variant, metric)` giving each comparison; `None` when the
/// baseline has no observations (no successful unit), an empty list when there is no baseline.
fn compare_all<T>(
    table: &BTreeMap<String, BTreeMap<String, T>>,
    baseline: Option<&str>,
    order: &[String],
    compare: impl Fn(&str, &str, &str) -> Option<Comparison>,
) -> Option<Vec<Comparison>> {
    let Some(base) = baseline else {
        return Some(Vec::new());
    };
    let pairs = aggregate::baseline_pairs(table, base, order)?;
    Some(
        pairs
            .into_iter()
            .filter_map(|(v, m)| compare(v, base, m))
            .collect(),
    )
}

// The number formatters live in `metrics::format` (a leaf, so the gate can word its verdicts
// with them without importing the report); re-exported here for the writers.
pub use crate::metrics::format::{fmt_delta, fmt_num, fmt_p};

/// How the note on needle units that did not apply to their trace starts (the terminal shows
/// it too).
pub const NOT_APPLICABLE: &str = "NOT APPLICABLE:";

/// Needle units whose trace has no message of the needle's position (nothing asked:
/// `not_applicable`), counted row by row for the `NOT APPLICABLE:` note: the report's, and the
/// one `gate` and `compare` make of each run they read, so that every command words it alike.
#[derive(Debug, Default)]
pub struct NotApplicable {
    /// Variant → such units, and on which traces.
    by_variant: BTreeMap<String, (usize, u64, BTreeSet<String>)>,
    /// The evals of such units (`needle`).
    evals: BTreeSet<String>,
}

impl NotApplicable {
    /// Count `s` when it is a successful unit that records `not_applicable` (a failed unit has
    /// no score). Give it each unit once (the first line of a unit journaled more than once).
    pub fn add(&mut self, s: &Row<'_>) {
        if s.error.is_none() && s.scores.get("not_applicable").is_some_and(|n| *n > 0.0) {
            by_trace(&mut self.by_variant, s, 1);
            if !self.evals.contains(s.eval) {
                self.evals.insert(s.eval.to_string());
            }
        }
    }

    /// Whether the note explains why metric `metric` (`needle.recall`) may be absent from the
    /// run: it is a metric of an eval some of whose units did not apply (they record no score
    /// but `not_applicable`).
    pub fn explains(&self, metric: &str) -> bool {
        metric
            .split_once('.')
            .is_some_and(|(eval, _)| self.evals.contains(eval))
    }

    /// The note (it starts with [`NOT_APPLICABLE`]) naming the variants in the run's `order`,
    /// how many units and on which traces, and why; `None` when no unit was not applicable.
    pub fn note(&self, order: &[String]) -> Option<String> {
        let map = &self.by_variant;
        if map.is_empty() {
            return None;
        }
        let (who, units, _) = flag_who(map, order, "units", |(u, n, _)| (*u, *n));
        let traces: BTreeSet<&str> = map
            .values()
            .flat_map(|(_, _, t)| t.iter().map(String::as_str))
            .collect();
        let first: Vec<&str> = traces.iter().take(3).copied().collect();
        Some(format!(
            "{NOT_APPLICABLE} {who}: {units} needle unit(s) on {} trace(s) ({}{}) asked \
             nothing: the trace has no message of the needle's `position` (tool results in \
             a trace without tool calls). They are no failure and have no recall \
             (`needle.not_applicable`; the reason is in their evidence); use \
             `positions = [\"user\"]` for such traces, or leave them out",
            traces.len(),
            first.join(", "),
            if traces.len() > first.len() {
                ", …"
            } else {
                ""
            }
        ))
    }
}

/// Flags for units whose numbers a broken or useless compaction shaped: successful units that
/// recorded failed summaries (`[engine] on_summary_error = "record"`), futile compactions,
/// requests left over the window (`overflow`), requests larger than the same call without
/// compression (`flagged_calls`), prompts a server cut silently, agents that ran
/// out of `max_steps` (`step_limit`); and what failed units spent before they failed (in the
/// totals, not the statistics).
#[derive(Debug, Default)]
struct HealthSum {
    flagged: BTreeMap<String, (usize, u64)>,
    /// Variant → units with a futile compaction, how many they had, and on which traces
    /// (units of every eval: report.html flags each of them).
    futile: BTreeMap<String, (usize, u64, BTreeSet<String>)>,
    /// Variant → units with a request still over the window after compaction (`overflow`
    /// events), how many such requests, and on which traces.
    overflow: BTreeMap<String, (usize, u64, BTreeSet<String>)>,
    /// Variant → units with a request larger than the same call without compression
    /// (`flagged_calls`), how many such calls, and on which traces.
    larger: BTreeMap<String, (usize, u64, BTreeSet<String>)>,
    truncated: BTreeMap<String, (usize, u64)>,
    step_limit: BTreeMap<String, (usize, u64)>,
    /// Needle units whose trace has no message of the needle's position.
    not_applicable: NotApplicable,
    /// Failed units that spent on model calls before they failed, and what they spent.
    failed_spending: usize,
    failed_spent: f64,
}

/// Count a unit of `s`'s variant with `n` events in `map`, and its trace.
fn by_trace(map: &mut BTreeMap<String, (usize, u64, BTreeSet<String>)>, s: &Row<'_>, n: u64) {
    if !map.contains_key(s.variant) {
        map.insert(s.variant.to_string(), Default::default());
    }
    let (units, count, traces) = map.get_mut(s.variant).expect("inserted");
    *units += 1;
    *count += n;
    if !traces.contains(s.trace_id) {
        traces.insert(s.trace_id.to_string());
    }
}

/// Who a flag note is about, and its totals (units, events): "variant `v`" for one variant;
/// for several, "N variants (units/LABEL by variant: `a` 2/3, `b` 1/1)", so a sweep of many
/// variants reads one note of a kind rather than one a variant (30 variants made 90 lines).
fn flag_who<T>(
    map: &BTreeMap<String, T>,
    order: &[String],
    label: &str,
    counts: impl Fn(&T) -> (usize, u64),
) -> (String, usize, u64) {
    let (units, n) = map
        .values()
        .map(&counts)
        .fold((0, 0), |(u, n), (a, b)| (u + a, n + b));
    let who = match map.keys().next() {
        Some(v) if map.len() == 1 => format!("variant `{v}`"),
        _ => {
            // In the run's order of variants (those it does not list last, by name).
            let mut entries: Vec<(&String, &T)> = map.iter().collect();
            entries.sort_by_key(|(v, _)| order.iter().position(|o| o == *v).unwrap_or(usize::MAX));
            let by: Vec<String> = entries
                .into_iter()
                .map(|(v, t)| {
                    let (u, n) = counts(t);
                    format!("`{v}` {u}/{n}")
                })
                .collect();
            format!(
                "{} variants (units/{label} by variant: {})",
                map.len(),
                by.join(", ")
            )
        }
    };
    (who, units, n)
}

/// How many distinct traces the units of every variant of `map` are on.
fn traces_of(map: &BTreeMap<String, (usize, u64, BTreeSet<String>)>) -> usize {
    map.values()
        .flat_map(|(_, _, t)| t.iter().map(String::as_str))
        .collect::<BTreeSet<&str>>()
        .len()
}

/// Count `n` for `s`'s variant in `map`.
fn flag(map: &mut BTreeMap<String, (usize, u64)>, variant: &str, n: u64) {
    if !map.contains_key(variant) {
        map.insert(variant.to_string(), (0, 0));
    }
    let e = map.get_mut(variant).expect("inserted");
    e.0 += 1;
    e.1 += n;
}

impl HealthSum {
    fn add(&mut self, s: &Row<'_>) {
        if s.error.is_some() {
            let c = &s.cost_usd;
            let spent = [c.summarizer, c.judge, c.eval_agent]
                .iter()
                .map(|c| c.unwrap_or(0.0))
                .sum::<f64>();
            if spent > 0.0 {
                self.failed_spending += 1;
                self.failed_spent += spent;
            }
            return;
        }
        if let Some(&n) = s.scores.get("step_limit").filter(|n| **n > 0.0) {
            flag(&mut self.step_limit, s.variant, n as u64);
        }
        self.not_applicable.add(s);
        if let Some(&n) = s.scores.get("prompt_truncated").filter(|n| **n > 0.0) {
            flag(&mut self.truncated, s.variant, n as u64);
        }
        if let Some(&n) = s.scores.get("summary_failures").filter(|n| **n > 0.0) {
            flag(&mut self.flagged, s.variant, n as u64);
        }
        for (kind, map) in [
            ("futile", &mut self.futile),
            ("overflow", &mut self.overflow),
        ] {
            if let Some(&n) = s.compactions.get(kind).filter(|n| **n > 0) {
                by_trace(map, s, n);
            }
        }
        if let Some(&n) = s.scores.get("flagged_calls").filter(|n| **n > 0.0) {
            by_trace(&mut self.larger, s, n as u64);
        }
    }

    /// The notes, each naming its variants in the run's `order`.
    fn finish(self, order: &[String]) -> Vec<String> {
        let HealthSum {
            flagged,
            futile,
            overflow,
            larger,
            truncated,
            step_limit,
            not_applicable,
            failed_spending,
            failed_spent,
        } = self;
        let mut notes = Vec::new();
        notes.extend(not_applicable.note(order));
        if failed_spending > 0 {
            notes.push(format!(
            "{failed_spending} failed unit(s) spent ${failed_spent:.4} on model calls before they \
             failed: counted in \"spent on model calls\" and the budget, not in the statistics \
             (their tokens and cost are in their error rows)"
        ));
        }
        if !truncated.is_empty() {
            let (who, units, n) = flag_who(&truncated, order, "model calls", |&(u, n)| (u, n));
            notes.push(format!(
                "FLAGGED: {who}: {units} unit(s) had {n} model call(s) whose server reported \
                 under 80% of the prompt tokens sent: it probably cut the prompt to its context \
                 without an error (Ollama, llama.cpp); their answers did not see the whole view \
                 (see `prompt_truncated` in samples.jsonl; raise the server's context size)"
            ));
        }
        if !step_limit.is_empty() {
            let (who, units, n) = flag_who(&step_limit, order, "questions", |&(u, n)| (u, n));
            notes.push(format!(
                "FLAGGED: {who}: {units} unit(s) had {n} question(s) whose agent ran out of \
                 `max_steps` before answering; they are scored as not recovered (see \
                 `step_limit` and `hit_step_limit` in samples.jsonl; raise the eval's \
                 `max_steps` if the agent was still searching)"
            ));
        }
        if !flagged.is_empty() {
            let (who, units, n) = flag_who(&flagged, order, "summaries failed", |&(u, n)| (u, n));
            notes.push(format!(
                "FLAGGED: {who}: {units} unit(s) succeeded although {n} summaries failed \
                 (`on_summary_error = \"record\"`); their tokens, cost and scores are not those \
                 of a working summarizer (see `summary_failures` in samples.jsonl)"
            ));
        }
        if !futile.is_empty() {
            let (who, units, n) =
                flag_who(&futile, order, "futile compactions", |(u, n, _)| (*u, *n));
            notes.push(format!(
                "FLAGGED: {who}: {units} unit(s) on {} trace(s) had {n} futile \
                 compaction(s) (they removed no message or left the request no smaller; \
                 `futile` in the unit's compactions and timeline)",
                traces_of(&futile)
            ));
        }
        if !overflow.is_empty() {
            let (who, units, n) = flag_who(&overflow, order, "requests", |(u, n, _)| (*u, *n));
            notes.push(format!(
                "FLAGGED: {who}: {units} unit(s) on {} trace(s) had {n} request(s) still \
                 over the window after compaction (`overflow` in the unit's compactions and \
                 timeline): a model with that window would refuse them, so their tokens, cost \
                 and scores are of requests it could not take",
                traces_of(&overflow)
            ));
        }
        if !larger.is_empty() {
            let (who, units, n) = flag_who(&larger, order, "calls", |(u, n, _)| (*u, *n));
            notes.push(format!(
                "FLAGGED: {who}: {units} unit(s) on {} trace(s) had {n} model call(s) whose \
                 request was larger than the same call without compression (`flagged_calls` in \
                 samples.jsonl and results.csv, the first in the evidence's `first_flag`): a \
                 summary can briefly be, but an engine whose views always are costs more than \
                 none, and its tokens and cost say so",
                traces_of(&larger)
            ));
        }
        notes
    }
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
    fn a_flag_of_several_variants_is_one_note_with_their_counts() {
        // A sweep of many variants flagged alike read one note a variant (30 variants: 90
        // terminal lines); one note a kind names each variant's counts and the totals.
        let mut info = RunInfo::new("r");
        // The run's order of variants, not their names'.
        info.variants = vec!["c".into(), "a".into(), "b".into()];
        let out_of_steps = |v: &str, sample: &str, n: f64| {
            let mut u = s(v, sample, 0.0);
            u.scores.insert("step_limit".into(), n);
            u
        };
        let mut over_a = out_of_steps("a", "0", 2.0);
        let mut over_b = out_of_steps("b", "0", 1.0);
        for u in [&mut over_a, &mut over_b] {
            u.compactions.insert("overflow".into(), 1);
        }
        let samples = vec![
            over_a,
            over_b,
            out_of_steps("c", "0", 1.0),
            out_of_steps("c", "1", 2.0),
            s("a", "1", 1.0),
        ];
        let m = ReportModel::build(&info, samples);
        let notes: Vec<&String> = m
            .notes
            .iter()
            .filter(|n| n.contains("`step_limit`"))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", m.notes);
        assert!(
            notes[0].starts_with(
                "FLAGGED: 3 variants (units/questions by variant: `c` 2/3, `a` 1/2, `b` 1/1): \
                 4 unit(s) had 6 question(s) whose agent ran out of `max_steps`"
            ),
            "{}",
            notes[0]
        );
        // Both variants' units are on the one trace: counted once.
        let over = m.notes.iter().find(|n| n.contains("over the window"));
        assert!(
            over.is_some_and(|n| n.starts_with(
                "FLAGGED: 2 variants (units/requests by variant: `a` 1/1, `b` 1/1): 2 unit(s) \
                 on 1 trace(s) had 2 request(s)"
            )),
            "{over:?}"
        );
    }

    #[test]
    fn futile_compactions_of_any_eval_are_noted_by_unit_and_trace() {
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into()];
        // Needle units (no replay eval in the run), two repeats of trace t1 and one of t2.
        let futile = |trace: &str, repeat: u32, n: u64| {
            let mut u = s("base", &format!("{trace}-{repeat}"), 1.0);
            u.trace_id = trace.into();
            u.repeat = repeat;
            u.compactions.insert("futile".into(), n);
            u
        };
        let samples = vec![
            futile("t1", 0, 3),
            futile("t1", 1, 3),
            futile("t2", 0, 1),
            s("base", "ok", 1.0),
        ];
        let m = ReportModel::build(&info, samples);
        let note = m.notes.iter().find(|n| n.contains("futile compaction"));
        assert_eq!(
            note.map(|n| n.split(" (").next().unwrap()),
            Some("FLAGGED: variant `base`: 3 unit(s) on 2 trace(s) had 7 futile compaction(s)"),
            "{:?}",
            m.notes
        );
    }

    #[test]
    fn calls_larger_than_no_compression_are_noted_by_unit_and_trace() {
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into()];
        let larger = |trace: &str, n: f64| {
            let mut u = s("base", trace, 1.0);
            u.trace_id = trace.into();
            u.scores.insert("flagged_calls".into(), n);
            u
        };
        let samples = vec![larger("t1", 71.0), larger("t2", 2.0), larger("t3", 0.0)];
        let m = ReportModel::build(&info, samples);
        let note = m.notes.iter().find(|n| n.contains("`flagged_calls`"));
        assert_eq!(
            note.map(|n| n.split(" (").next().unwrap()),
            Some(
                "FLAGGED: variant `base`: 2 unit(s) on 2 trace(s) had 73 model call(s) whose \
                 request was larger than the same call without compression"
            ),
            "{:?}",
            m.notes
        );
        use crate::report::status::Status;
        let flagged: Vec<Status> = (0..3).map(|i| Status::of(&m.samples.get(i))).collect();
        assert_eq!(
            flagged.iter().filter(|s| **s == Status::Flagged).count(),
            2,
            "{flagged:?}"
        );
    }

    #[test]
    fn requests_left_over_the_window_are_noted_by_unit_and_trace() {
        let mut info = RunInfo::new("r");
        info.variants = vec!["base".into()];
        let over = |trace: &str, n: u64| {
            let mut u = s("base", trace, 1.0);
            u.trace_id = trace.into();
            u.compactions.insert("overflow".into(), n);
            u
        };
        let mut failed = over("t3", 4);
        failed.error = Some(crate::record::UnitError {
            kind: "x".into(),
            message: "y".into(),
        });
        let samples = vec![over("t1", 2), over("t2", 1), failed, s("base", "ok", 1.0)];
        let m = ReportModel::build(&info, samples);
        let note = m.notes.iter().find(|n| n.contains("over the window"));
        assert_eq!(
            note.map(|n| n.split(" (").next().unwrap()),
            Some(
                "FLAGGED: variant `base`: 2 unit(s) on 2 trace(s) had 3 request(s) still over \
                 the window after compaction"
            ),
            "{:?}",
            m.notes
        );
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
