//! CI gate: rules over a candidate run compared with a baseline run, with significance-aware
//! verdicts. Used by `ctxbench gate`.
//!
//! This module computes verdicts as data ([`GateOutcome`]) and depends only on `metrics` and
//! `record`, never on `report`: the report writers render the outcome (`report::junit`, the
//! Markdown summary in `report::markdown::gate_summary`, the terminal lines in
//! `report::terminal::gate_lines`), so dependencies run report → gate → metrics.
//!
//! # Rule grammar
//!
//! ```text
//! rule      := [variant ":"] metric [suffix] op number
//! metric    := name ("." name)*          e.g. needle.recall, drift.score, needle.pass, cost, tokens,
//!                                         cost.agent, tokens.summarizer (per role)
//! suffix    := ".delta" | ".delta_pct"
//! op        := ">=" | ">" | "<=" | "<"
//! number    := a decimal number, e.g. 0.95, -0.02, 5, 1e-3
//! ```
//!
//! Blank lines and lines starting with `#` are ignored in a rules file. Metric names are those
//! of the report (`<eval>.<score>`, `<eval>.pass`, `cost` in USD per unit, `tokens` per unit).
//!
//! - `metric op X` (absolute): the candidate's mean of the metric must satisfy the comparison.
//!   It fails only when the mean violates it **and** the 95% CI of the mean lies entirely on the
//!   wrong side of X (where no CI exists — fewer than two values — the mean alone decides).
//! - `metric.delta op X`: the paired delta (candidate − baseline run, same variant, paired by
//!   trace/eval/sample/repeat) must satisfy it. It fails only when the delta violates it **and**
//!   significantly so: against a threshold of 0, the change is significant (p < 0.05: McNemar
//!   for pass/fail metrics, paired bootstrap otherwise), as `compare` says it; against another
//!   threshold, the whole 95% CI of the delta lies beyond it (the test against 0 says nothing
//!   about a threshold of −10%). With too few traces for a test, it fails closed.
//! - `metric.delta_pct op X`: the same, on 100·delta / |baseline mean|.
//!
//! A rule applies to every variant of the candidate run, or to the one named before `:`.
//! A rule whose metric has no value for a variant (e.g. `cost` when a price is unknown) is
//! reported as skipped for it, never as passed. A gate whose every rule was skipped for every
//! variant checked nothing: it fails (the `checked` run check) unless that is allowed
//! (`--allow-unchecked`), so a CI gate never passes silently on nothing.

use crate::metrics::aggregate::{self, Obs, ObsTable};
use crate::metrics::stats::Ci;
use crate::record::{Row, RunInfo, RunProgress};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

mod rules;
pub use rules::{parse_rule, parse_rules_file, Op, Rule, RuleKind};

/// Verdict of one rule for one variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Skipped,
}

/// Outcome of one rule for one variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuleResult {
    pub rule: String,
    /// Absolute (a threshold on the candidate) or a delta against the baseline run.
    pub kind: RuleKind,
    pub variant: String,
    pub verdict: Verdict,
    /// The measured value (mean, delta or delta %).
    pub value: Option<f64>,
    pub ci: Option<Ci>,
    pub p_value: Option<f64>,
    /// How far the value is beyond the threshold (only when the threshold is violated).
    pub beyond: Option<f64>,
    /// A failed delta rule whose change goes the wrong way (a regression), not one that goes
    /// the wanted way but not far enough (`tokens.delta_pct <= -35` on a 31.8% saving: a
    /// threshold miss). False for absolute rules and for rules that did not fail.
    pub regression: bool,
    /// One line for a person: what was measured and why it passed, failed or was skipped.
    pub message: String,
}

/// A check of the candidate run itself rather than of a rule: that it is complete, that no
/// more of its units failed than allowed, and that its rules checked something (not every one
/// skipped for every variant). Made only when there is something to say (a partial run, failed
/// units, no rule checked), so a clean run's outcome holds rules alone.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunCheck {
    /// `complete`, `errors` or `checked`.
    pub check: String,
    pub verdict: Verdict,
    /// One line for a person: what was found and why it fails or passes.
    pub message: String,
}

/// All results of a gate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateOutcome {
    pub candidate_run: String,
    pub baseline_run: String,
    /// Checks of the candidate run (complete, failed units), before the rules.
    pub run_checks: Vec<RunCheck>,
    pub results: Vec<RuleResult>,
    /// What the reader should know that fails nothing: a partial baseline, failed baseline
    /// units, variants one run has and the other lacks (and, added by `cli::gate`, torn and
    /// duplicated journal lines and the baseline's units the candidate lacks).
    pub notes: Vec<String>,
}

impl GateOutcome {
    /// Failed rule checks and failed run checks.
    pub fn failed(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.verdict == Verdict::Fail)
            .count()
            + self
                .run_checks
                .iter()
                .filter(|c| c.verdict == Verdict::Fail)
                .count()
    }
    pub fn skipped(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.verdict == Verdict::Skipped)
            .count()
    }
    pub fn passed(&self) -> bool {
        self.failed() == 0
    }
}

/// A run's observations of every variant and metric wherever they are kept: what an
/// [`ObsTable`] holds in memory, or (a big run's) sorted on disk by `report::spill`, which
/// `cli::gate` reads through this. Per variant and metric, the list in key order with the first
/// of duplicate keys kept, as [`aggregate::observations_with_roles`] makes it.
pub trait ObsLists {
    /// Every metric with values, over every variant.
    fn metrics(&self) -> BTreeSet<&str>;
    /// How many observations `variant` has of `metric`; `None` when it has none.
    fn len(&self, variant: &str, metric: &str) -> Option<usize>;
    /// Those observations in key order, read again from the start on each call.
    fn read<'a>(&'a self, variant: &str, metric: &str) -> Box<dyn Iterator<Item = Obs> + 'a>;
    /// The first error a read met (the values read then ended early), if any.
    fn error(&self) -> Option<String>;
}

impl ObsLists for ObsTable {
    fn metrics(&self) -> BTreeSet<&str> {
        self.values()
            .flat_map(|m| m.keys().map(String::as_str))
            .collect()
    }
    fn len(&self, variant: &str, metric: &str) -> Option<usize> {
        self.get(variant).and_then(|m| m.get(metric)).map(Vec::len)
    }
    fn read<'a>(&'a self, variant: &str, metric: &str) -> Box<dyn Iterator<Item = Obs> + 'a> {
        let list = self.get(variant).and_then(|m| m.get(metric));
        Box::new(list.into_iter().flatten().cloned())
    }
    fn error(&self) -> Option<String> {
        None
    }
}

/// A run's observations: in memory (the table the in-memory statistics read), or any
/// [`ObsLists`] (a big run's on disk), whose statistics are taken from streams in key order.
enum Table {
    Memory(ObsTable),
    Lists(Box<dyn ObsLists>),
}

impl Table {
    fn lists(&self) -> &dyn ObsLists {
        match self {
            Table::Memory(t) => t,
            Table::Lists(l) => l.as_ref(),
        }
    }
}

/// What the gate reads of a run: its info, its variants and the observations of every variant
/// and metric. Built from one pass over the run's rows, so a caller can stream the journal into
/// compact rows, build this and drop them; or, for a big run, from the unit counts of such a
/// pass and the observations it sorted on disk ([`GateRun::from_lists`]).
pub struct GateRun {
    pub info: RunInfo,
    /// `run.json`'s status and unit counts (nothing known when it records none).
    pub progress: RunProgress,
    variants: Vec<String>,
    table: Table,
    /// Units recorded, and of which failed, per variant (in `variants` order): a unit
    /// journaled more than once counts once, by its first line.
    units: Vec<(usize, usize)>,
    /// Later lines of units journaled more than once (left out of every figure).
    pub duplicates: usize,
}

impl GateRun {
    pub fn new<'a>(info: RunInfo, rows: impl IntoIterator<Item = Row<'a>> + Clone) -> GateRun {
        let variants = variants_of(&info, rows.clone());
        let mut units = vec![(0, 0); variants.len()];
        let mut first = aggregate::FirstLines::default();
        let mut duplicates = 0;
        for r in rows.clone() {
            if !first.is_first(&r) {
                duplicates += 1;
                continue;
            }
            if let Some(i) = variants.iter().position(|v| v == r.variant) {
                units[i].0 += 1;
                units[i].1 += usize::from(r.error.is_some());
            }
        }
        let table = Table::Memory(aggregate::observations_with_roles(rows));
        GateRun {
            info,
            progress: RunProgress::default(),
            variants,
            table,
            units,
            duplicates,
        }
    }

    /// A run of `units` (variant → units recorded, and of which failed) whose observations
    /// `lists` holds (see [`ObsLists`]): the same run as [`GateRun::new`] of its rows.
    pub fn from_lists(
        info: RunInfo,
        units: &BTreeMap<String, (usize, usize)>,
        duplicates: usize,
        lists: Box<dyn ObsLists>,
    ) -> GateRun {
        let variants = variants_of_names(&info, units.keys().map(String::as_str));
        let units = variants
            .iter()
            .map(|v| units.get(v).copied().unwrap_or((0, 0)))
            .collect();
        GateRun {
            info,
            progress: RunProgress::default(),
            variants,
            table: Table::Lists(lists),
            units,
            duplicates,
        }
    }

    /// Variant names: run.json's, then the others its units name, sorted.
    pub fn variants(&self) -> &[String] {
        &self.variants
    }

    /// The first error reading the run's observations met, if any (a big run's, on disk): the
    /// figures of an outcome are then not to be trusted.
    pub fn read_error(&self) -> Option<String> {
        self.table.lists().error()
    }

    /// Units that failed, and units recorded, over every variant.
    pub fn failed_units(&self) -> (usize, usize) {
        self.units
            .iter()
            .fold((0, 0), |(f, n), u| (f + u.1, n + u.0))
    }

    /// `variant: failed/recorded` for each variant with failed units.
    fn failed_by_variant(&self) -> String {
        self.variants
            .iter()
            .zip(&self.units)
            .filter(|(_, u)| u.1 > 0)
            .map(|(v, u)| format!("{v}: {}/{}", u.1, u.0))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn variants_of<'a>(info: &RunInfo, rows: impl IntoIterator<Item = Row<'a>>) -> Vec<String> {
    variants_of_names(info, rows.into_iter().map(|s| s.variant))
}

/// run.json's variants, then the other `names`, sorted.
fn variants_of_names<'a>(info: &RunInfo, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut v = info.variants.clone();
    let mut extra: Vec<&str> = names
        .into_iter()
        .filter(|x| !info.variants.iter().any(|v| v.as_str() == *x))
        .collect();
    extra.sort_unstable();
    extra.dedup();
    v.extend(extra.into_iter().map(str::to_string));
    v
}

fn num(x: f64) -> String {
    crate::metrics::format::fmt_num(x)
}

/// A rule's figure and its 95% CI as its message prints them. A Δ% rule's figures are
/// percentages, printed as `compare` and the report print them; a change carries its sign, as
/// in `compare` (`+597.9`, `-20.4%`), and shares its CI's decimals, as the report's comparison
/// table and verdict line print the pair (`+908 (95% CI [-8, +1931])`); a mean is printed as the
/// report's tables of means print it.
fn figures(kind: RuleKind, value: f64, ci: Option<&Ci>) -> (String, String) {
    use crate::metrics::format::{fmt_change, fmt_pct_change};
    match kind {
        RuleKind::DeltaPct => fmt_pct_change(value, ci),
        RuleKind::Delta => fmt_change(value, ci),
        RuleKind::Absolute => crate::metrics::format::fmt_mean_ci(value, ci),
    }
}

/// Decimals a figure `value` needs beside a threshold under 1 away: enough to show the gap
/// (`ceil(-log10(gap))`) and to print the two apart; none when they are 1 or more apart or
/// equal (the figure's usual decimals show that); at most 6.
fn decimals_apart(value: f64, threshold: f64) -> usize {
    let gap = (value - threshold).abs();
    if !gap.is_finite() || gap == 0.0 || gap >= 1.0 {
        return 0;
    }
    // (less a hair: 121.5 - 121.4 is 0.0999…, one decimal shows it)
    let least = ((-gap.log10() - 1e-9).ceil().max(0.0) as usize).min(6);
    (least..=6)
        .find(|&d| format!("{value:.d$}") != format!("{threshold:.d$}"))
        .unwrap_or(6)
}

/// Decimals of a printed number (`+121.50%`: 2).
fn decimals_of(shown: &str) -> usize {
    let digits = shown.trim_end_matches('%');
    digits.split_once('.').map_or(0, |(_, d)| d.len())
}

/// `shown` (a number, maybe signed, maybe with a `%`) when it has at least `decimals` decimals;
/// else `again()`, the number printed with them.
fn at_least(shown: String, decimals: usize, again: impl FnOnce() -> String) -> String {
    let digits = shown.trim_end_matches('%');
    let has = decimals_of(&shown);
    let plain = digits
        .trim_start_matches(['+', '-'])
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'.');
    if has >= decimals || !plain {
        shown
    } else {
        again()
    }
}

/// The suite name recorded in a run (`suite.name` of the resolved suite).
fn suite_name(run: &GateRun) -> Option<&str> {
    run.info
        .suite
        .pointer("/suite/name")
        .and_then(|v| v.as_str())
}

/// Refuse to gate runs that cannot be compared: runs of differently named suites, or runs
/// with no variant in common (every rule would compare nothing, or only the candidate with
/// itself). The error says what each run has.
pub fn check_related(candidate: &GateRun, baseline: &GateRun) -> Result<(), String> {
    let (c, b) = (&candidate.info.run_id, &baseline.info.run_id);
    if let (Some(cs), Some(bs)) = (suite_name(candidate), suite_name(baseline)) {
        if cs != bs {
            return Err(format!(
                "unrelated runs: candidate {c} is a run of suite `{cs}`, baseline {b} of suite \
                 `{bs}`; gate a run against a baseline run of the same suite"
            ));
        }
    }
    let (cv, bv) = (&candidate.variants, &baseline.variants);
    if !cv.iter().any(|v| bv.contains(v)) {
        return Err(format!(
            "unrelated runs: candidate {c} and baseline {b} share no variant (candidate: {}; \
             baseline: {}); gate a run against a baseline run of the same suite",
            list_or_none(cv),
            list_or_none(bv)
        ));
    }
    Ok(())
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// How the gate judges the candidate run besides its rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GateOptions {
    /// Fixes the bootstrap.
    pub seed: u64,
    /// Failed units the candidate run may have and still pass (`--max-errors`, default 0).
    pub max_errors: usize,
    /// Pass a gate whose rules were all skipped (`--allow-unchecked`); it still says so.
    pub allow_unchecked: bool,
}

/// The checks of the candidate run itself: a partial run fails (its means and pairs are of the
/// units it recorded: a regression in the units it did not run cannot show), and so do more
/// failed units than `max_errors` (a failed unit has no score: it drops out of every mean and
/// pair, so a run whose units all failed would pass every rule as "skipped").
pub fn run_checks(candidate: &GateRun, max_errors: usize) -> Vec<RunCheck> {
    let mut out = Vec::new();
    if let Some(partial) = candidate.progress.partial(candidate.failed_units().1) {
        out.push(RunCheck {
            check: "complete".into(),
            verdict: Verdict::Fail,
            message: format!(
                "{partial}; the gate fails a partial run (finish it with `ctxbench run SUITE \
                 --resume RUN`, or merge every shard)"
            ),
        });
    }
    let (failed, units) = candidate.failed_units();
    if failed > 0 {
        let tolerated = failed <= max_errors;
        out.push(RunCheck {
            check: "errors".into(),
            verdict: if tolerated {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            message: format!(
                "{failed} of {units} unit(s) failed ({}); failed units have no score and are \
                 left out of every mean and pair; {}",
                candidate.failed_by_variant(),
                if tolerated {
                    format!("tolerated by --max-errors {max_errors}")
                } else {
                    format!("more than --max-errors {max_errors} (see the run's report.md, Errors)")
                }
            ),
        });
    }
    out
}

/// The check that the rules checked something: made when there are rules and every result is
/// skipped (no rule × variant has a value to judge), as when every needle unit of the run was
/// not applicable to its trace, so `needle.recall` has no value. Such a gate verified nothing;
/// it fails (as cargo-nextest fails when no test ran) unless `allow` (`--allow-unchecked`),
/// and its message names why each rule was skipped, grouped by reason, with the rule and its
/// variants (`variants`: the candidate's, to say "every variant").
pub fn unchecked(results: &[RuleResult], variants: &[String], allow: bool) -> Option<RunCheck> {
    if results.is_empty() || results.iter().any(|r| r.verdict != Verdict::Skipped) {
        return None;
    }
    // Reason → rule → its variants, each in first-seen order (a reason names no variant: each
    // result's line names its own, and here they are named after the rule).
    type Rules<'a> = Vec<(&'a str, Vec<&'a str>)>;
    let mut reasons: Vec<(&str, Rules)> = Vec::new();
    for r in results {
        let why = r.message.as_str();
        let i = match reasons.iter().position(|(w, _)| *w == why) {
            Some(i) => i,
            None => {
                reasons.push((why, Vec::new()));
                reasons.len() - 1
            }
        };
        let rules = &mut reasons[i].1;
        match rules.iter_mut().find(|(rule, _)| *rule == r.rule) {
            Some((_, vs)) => vs.push(&r.variant),
            None => rules.push((&r.rule, vec![&r.variant])),
        }
    }
    let why: Vec<String> = reasons
        .iter()
        .map(|(why, rules)| {
            let on: Vec<String> = rules
                .iter()
                .map(|(rule, vs)| {
                    let every = vs.len() > 1
                        && vs.len() == variants.len()
                        && variants.iter().all(|v| vs.contains(&v.as_str()));
                    if every {
                        format!("`{rule}` on every variant")
                    } else {
                        format!("`{rule}` on {}", vs.join(", "))
                    }
                })
                .collect();
            format!("{why} ({})", on.join("; "))
        })
        .collect();
    Some(RunCheck {
        check: "checked".into(),
        verdict: if allow { Verdict::Pass } else { Verdict::Fail },
        message: format!(
            "no rule could be checked: {}; a gate that checks nothing {}",
            why.join("; "),
            if allow {
                "passes by --allow-unchecked"
            } else {
                "fails (pass --allow-unchecked to let it pass)"
            }
        ),
    })
}

/// What the gate says of the baseline run and of variants one run lacks; none fails the gate.
fn notes(candidate: &GateRun, baseline: &GateRun) -> Vec<String> {
    let mut out = Vec::new();
    let b = &baseline.info.run_id;
    if let Some(partial) = baseline.progress.partial(baseline.failed_units().1) {
        out.push(format!("baseline {b}: {partial}"));
    }
    let (failed, units) = baseline.failed_units();
    if failed > 0 {
        out.push(format!(
            "baseline {b}: {failed} of {units} unit(s) failed ({}); delta rules pair only the \
             units that succeeded in both runs",
            baseline.failed_by_variant()
        ));
    }
    let missing: Vec<&str> = baseline
        .variants
        .iter()
        .filter(|v| !candidate.variants.contains(v))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        out.push(format!(
            "variant(s) of the baseline run missing from candidate {}, not gated: {}",
            candidate.info.run_id,
            missing.join(", ")
        ));
    }
    let only: Vec<&str> = candidate
        .variants
        .iter()
        .filter(|v| !baseline.variants.contains(v))
        .map(String::as_str)
        .collect();
    if !only.is_empty() {
        out.push(format!(
            "variant(s) not in baseline {b}: {} (their delta rules are skipped)",
            only.join(", ")
        ));
    }
    out
}

/// Why [`evaluate`] reached no verdict (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    /// The runs are unrelated ([`check_related`]), or a rule names a variant the candidate run
    /// lacks.
    #[error("{0}")]
    Refused(String),
    /// A rule names a metric no variant of either run has (the caller may say why a metric it
    /// expects is absent: needle units that did not apply to their trace have no recall).
    #[error(
        "{rule}: metric `{metric}` is not in the candidate or the baseline run{hint} \
         (metrics: {metrics})"
    )]
    UnknownMetric {
        /// The rule, as [`Rule::named`] names it.
        rule: String,
        metric: String,
        /// ` (did you mean `…`?)`, or empty.
        hint: String,
        /// The candidate's metrics, comma-separated.
        metrics: String,
    },
}

/// Evaluate rules on a candidate run against a baseline run, with the candidate's own checks
/// ([`run_checks`], and [`unchecked`] when every rule was skipped) and notes on both runs.
/// Errors (exit 2) when the runs are unrelated ([`check_related`]), when a rule names a
/// variant the candidate run lacks, or a metric no variant of either run has, unless
/// `explained(metric)`: the caller knows why the runs lack it (every needle unit of both runs
/// was not applicable to its trace, so neither recorded `needle.recall`). Such a rule is no
/// typo: it is skipped for every variant, as when only the candidate lacks the metric, and a
/// gate of such rules alone checked nothing (the `checked` run check).
pub fn evaluate(
    rules: &[Rule],
    candidate: &GateRun,
    baseline: &GateRun,
    options: GateOptions,
    explained: impl Fn(&str) -> bool,
) -> Result<GateOutcome, EvaluateError> {
    let seed = options.seed;
    check_related(candidate, baseline).map_err(EvaluateError::Refused)?;
    let (cand_table, base_table) = (&candidate.table, &baseline.table);
    let (cand_metrics, base_metrics) = (cand_table.lists().metrics(), base_table.lists().metrics());
    let variants = &candidate.variants;
    let mut results = Vec::new();
    for rule in rules {
        let known = cand_metrics.contains(rule.metric.as_str())
            || base_metrics.contains(rule.metric.as_str());
        if !known && !explained(&rule.metric) {
            let list: Vec<&str> = cand_metrics.iter().copied().collect();
            let hint = crate::confcore::suggest(&rule.metric, list.iter().copied())
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            return Err(EvaluateError::UnknownMetric {
                rule: rule.named(),
                metric: rule.metric.clone(),
                hint,
                metrics: list.join(", "),
            });
        }
        let targets: Vec<String> = match &rule.variant {
            Some(v) if variants.contains(v) => vec![v.clone()],
            Some(v) => {
                return Err(EvaluateError::Refused(format!(
                    "{}: variant `{v}` is not in run {} (variants: {})",
                    rule.named(),
                    candidate.info.run_id,
                    variants.join(", ")
                )))
            }
            None => variants.clone(),
        };
        for v in targets {
            results.push(evaluate_one(rule, &v, cand_table, base_table, seed));
        }
    }
    let mut checks = run_checks(candidate, options.max_errors);
    checks.extend(unchecked(&results, variants, options.allow_unchecked));
    Ok(GateOutcome {
        candidate_run: candidate.info.run_id.clone(),
        baseline_run: baseline.info.run_id.clone(),
        run_checks: checks,
        results,
        notes: notes(candidate, baseline),
    })
}

fn skipped(rule: &Rule, variant: &str, why: String) -> RuleResult {
    RuleResult {
        rule: rule.text.clone(),
        kind: rule.kind,
        variant: variant.to_string(),
        verdict: Verdict::Skipped,
        value: None,
        ci: None,
        p_value: None,
        beyond: None,
        regression: false,
        message: why,
    }
}

/// The mean and CI of a metric of a variant (one that has values of it).
fn summarize(
    table: &Table,
    variant: &str,
    metric: &str,
    seed: u64,
) -> Option<aggregate::MetricSummary> {
    match table {
        Table::Memory(t) => aggregate::summarize(metric, &t[variant][metric], seed, variant),
        Table::Lists(l) => {
            let n = l.len(variant, metric)?;
            let values = || l.read(variant, metric).map(|o| o.value);
            aggregate::summarize_of(metric, n, values, seed, variant)
        }
    }
}

/// The paired comparison of a metric of a variant in the candidate and the baseline run (both
/// have values of it): from the tables in memory, or a merge join of the two lists.
fn compare(
    cand: &Table,
    base: &Table,
    variant: &str,
    metric: &str,
    seed: u64,
) -> Option<aggregate::Comparison> {
    if let (Table::Memory(c), Table::Memory(b)) = (cand, base) {
        let (c, b) = (&c[variant][metric], &b[variant][metric]);
        return aggregate::compare(metric, variant, variant, c, b, seed);
    }
    let (c, b) = (cand.lists(), base.lists());
    let pairs = || aggregate::join_sorted(c.read(variant, metric), b.read(variant, metric));
    let (mut n, mut traces) = (0, 0);
    for (_, _, k) in pairs() {
        n += 1;
        traces = traces.max(k + 1);
    }
    aggregate::compare_pairs(metric, variant, variant, n, traces, pairs, seed)
}

/// Whether a delta rule's change is significantly beyond its threshold. Against a threshold of
/// 0 (`needle.recall.delta >= 0`) that is the change's own test, the p-value `compare` prints,
/// so the two agree. Against another threshold the test against 0 says nothing about the
/// threshold (`tokens.delta_pct <= -10` on an unchanged variant has no significant change, yet
/// surely saves less than 10%; `cost.delta_pct <= 5` on a +6% [+2, +10] rise is a significant
/// change, not significantly above 5%): the whole 95% CI must be beyond the threshold, as for
/// an absolute rule. A change with no CI is judged by its test.
fn beyond_significantly(rule: &Rule, p_value: Option<f64>, ci: Option<&Ci>) -> bool {
    let tested = p_value.is_some_and(|p| p < crate::metrics::stats::ALPHA);
    if rule.threshold == 0.0 {
        return tested;
    }
    ci.map_or(tested, |ci| wholly_beyond(rule, ci))
}

/// Whether the whole of `ci` is on the wrong side of `rule`'s threshold: its bound nearest the
/// threshold violates it.
fn wholly_beyond(rule: &Rule, ci: &Ci) -> bool {
    let nearest = if rule.op.lower_bound() { ci.hi } else { ci.lo };
    !rule.op.holds(nearest, rule.threshold)
}

fn evaluate_one(rule: &Rule, variant: &str, cand: &Table, base: &Table, seed: u64) -> RuleResult {
    if cand.lists().len(variant, &rule.metric).is_none() {
        return skipped(
            rule,
            variant,
            format!("no `{}` value in the candidate run", rule.metric),
        );
    }
    let mut too_few_traces: Option<usize> = None;
    let (value, ci, p_value, significant, what) = match rule.kind {
        RuleKind::Absolute => {
            let Some(s) = summarize(cand, variant, &rule.metric, seed) else {
                return skipped(rule, variant, "no values".into());
            };
            // Significant violation: the whole CI is on the wrong side of the threshold.
            let significant = s.ci.as_ref().is_none_or(|ci| wholly_beyond(rule, ci));
            (
                s.mean,
                s.ci,
                None,
                significant,
                format!("mean {}", rule.metric),
            )
        }
        RuleKind::Delta | RuleKind::DeltaPct => {
            if base.lists().len(variant, &rule.metric).is_none() {
                return skipped(
                    rule,
                    variant,
                    format!("no `{}` value in the baseline run", rule.metric),
                );
            }
            let Some(c) = compare(cand, base, variant, &rule.metric, seed) else {
                return skipped(
                    rule,
                    variant,
                    "no unit is shared with the baseline run".into(),
                );
            };
            // As `compare` says it: with too few traces (or no test at all: no p-value) a
            // change is not significant, whatever its p; the gate then fails closed below.
            let testable = !c.too_few_traces && c.p_value.is_some();
            if !testable {
                too_few_traces = Some(c.n_traces);
            }
            let rule_ci = if rule.kind == RuleKind::Delta {
                c.ci.as_ref()
            } else {
                c.pct_ci.as_ref()
            };
            let significant = testable && beyond_significantly(rule, c.p_value, rule_ci);
            if rule.kind == RuleKind::Delta {
                (
                    c.delta,
                    c.ci,
                    c.p_value,
                    significant,
                    format!("Δ {} over {} pair(s)", rule.metric, c.n_pairs),
                )
            } else {
                let Some(pct) = c.delta_pct else {
                    return skipped(
                        rule,
                        variant,
                        "baseline mean is 0: no percentage change".into(),
                    );
                };
                // The relative change's own CI (recomputed per resample, never below −100% for
                // a non-negative metric). Significance is the delta's test.
                let ci = c.pct_ci;
                (
                    pct,
                    ci,
                    c.p_value,
                    significant,
                    format!("Δ% {} over {} pair(s)", rule.metric, c.n_pairs),
                )
            }
        }
    };
    let holds = rule.op.holds(value, rule.threshold);
    let beyond = (!holds).then(|| (value - rule.threshold).abs());
    use crate::metrics::format::fmt_pct_value;
    let pct = rule.kind == RuleKind::DeltaPct;
    let (shown, ci_shown) = figures(rule.kind, value, ci.as_ref());
    // A threshold and a distance from it: `5.0%` and `7.3 percentage points` for a Δ% rule.
    let amount = |x: f64, unit: &str| {
        if pct {
            format!("{}{unit}", fmt_pct_value(x).trim_start_matches('+'))
        } else {
            num(x)
        }
    };
    let unit = if pct { "%" } else { "" };
    // The threshold as the rule wrote it when the usual form loses its digits (`1991` for
    // 1991.25).
    let threshold_shown = {
        let usual = amount(rule.threshold, "%");
        let read = usual
            .trim_end_matches('%')
            .trim_start_matches('+')
            .parse::<f64>();
        if read.is_ok_and(|r| r == rule.threshold) {
            usual
        } else {
            format!("{}{unit}", rule.threshold)
        }
    };
    // The figure with the decimals that show its distance from a threshold under 1 away: at
    // its CI's decimals `+122` beside `<= 121.4` read 0.6 over where it was 0.1.
    let wanted = decimals_apart(value, rule.threshold);
    let shown = at_least(shown, wanted, || {
        let sign = if value > 0.0 && rule.kind != RuleKind::Absolute {
            "+"
        } else {
            ""
        };
        format!("{sign}{value:.wanted$}{unit}")
    });
    let by = |x: f64| amount(x, " percentage points");
    // A degenerate interval (values all equal) is said as such, not as a CI.
    let ci_shown = if ci_shown == crate::metrics::format::CONSTANT_CI {
        "constant".to_string()
    } else {
        format!("95% CI {ci_shown}")
    };
    let stats = format!(
        "{what} = {shown} ({ci_shown}{})",
        p_value
            .map(|p| format!(", p = {}", crate::metrics::format::fmt_p(Some(p))))
            .unwrap_or_default()
    );
    // A regression is a change the wrong way; a change the right way that is too small
    // (`tokens.delta_pct <= -35` on a 31.8% saving) can fail too, but is no regression.
    // Against a threshold other than 0 a rule fails on its CI, so the wrong sign alone does
    // not make a regression (`tokens.delta_pct <= -10` on +0.3% [-2.1, +2.8] falls short, it
    // did not regress): the change must be significant against 0 too, its CI wholly on the
    // wrong side of 0 (or, with no CI, its test).
    let wrong_way = |x: f64| {
        if rule.op.lower_bound() {
            x < 0.0
        } else {
            x > 0.0
        }
    };
    let regressed = rule.kind != RuleKind::Absolute
        && wrong_way(value)
        && (rule.threshold == 0.0
            || match &ci {
                Some(ci) => wrong_way(if rule.op.lower_bound() { ci.hi } else { ci.lo }),
                None => p_value.is_some_and(|p| p < crate::metrics::stats::ALPHA),
            });
    let (verdict, message) = if holds {
        (
            Verdict::Pass,
            format!(
                "{stats}: satisfies {} {}",
                rule.op.as_str(),
                threshold_shown
            ),
        )
    } else if significant && rule.kind == RuleKind::Absolute {
        // An absolute rule compares with a threshold, not with the baseline: a miss, not a
        // regression.
        (
            Verdict::Fail,
            format!(
                "{stats}: misses the threshold {} {} by {} ({})",
                rule.op.as_str(),
                threshold_shown,
                by(beyond.unwrap_or(0.0)),
                if ci.is_some() {
                    "the whole 95% CI is beyond it"
                } else {
                    "no CI with fewer than two values: the mean decides"
                }
            ),
        )
    } else if significant {
        // Against 0 the change's test decided; against another threshold, its CI.
        let why = match (rule.threshold == 0.0, regressed) {
            (true, true) => "and the regression is significant",
            (true, false) => "and the change is significant but falls short of the threshold",
            (false, true) => "and the whole 95% CI is beyond it: a significant regression",
            (false, false) => "and the whole 95% CI falls short of it",
        };
        (
            Verdict::Fail,
            format!(
                "{stats}: violates {} {} by {} {why}",
                rule.op.as_str(),
                threshold_shown,
                by(beyond.unwrap_or(0.0)),
            ),
        )
    } else if let Some(n) = too_few_traces {
        // Too few traces to test significance (units of one trace are not independent): a
        // gate fails closed rather than pass a regression it cannot judge.
        (
            Verdict::Fail,
            format!(
                "{stats}: violates {} {} by {}; too few traces ({n}) to test significance, so \
                 the gate fails closed (add traces to the suite to get a verdict)",
                rule.op.as_str(),
                threshold_shown,
                by(beyond.unwrap_or(0.0))
            ),
        )
    } else if rule.kind == RuleKind::Absolute {
        (
            Verdict::Pass,
            format!(
                "{stats}: misses the threshold {} {} by {} but not significantly: the 95% CI \
                 reaches it (passes)",
                rule.op.as_str(),
                threshold_shown,
                by(beyond.unwrap_or(0.0))
            ),
        )
    } else {
        (
            Verdict::Pass,
            format!(
                "{stats}: beyond {} {} by {} but {} (passes)",
                rule.op.as_str(),
                threshold_shown,
                by(beyond.unwrap_or(0.0)),
                if rule.threshold == 0.0 {
                    "not significant"
                } else {
                    "not significantly: the 95% CI reaches it"
                }
            ),
        )
    };
    RuleResult {
        rule: rule.text.clone(),
        kind: rule.kind,
        variant: variant.to_string(),
        verdict,
        value: Some(value),
        ci,
        p_value,
        beyond,
        regression: verdict == Verdict::Fail && regressed,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RunStatus, Sample, UnitCounts, UnitError};

    fn run(id: &str, failed: usize, ok: usize) -> GateRun {
        let mut info = RunInfo::new(id);
        info.variants = vec!["a".into(), "b".into()];
        let samples: Vec<Sample> = (0..failed + ok)
            .map(|i| {
                let mut s = Sample::builder()
                    .eval("needle")
                    .variant(if i % 2 == 0 { "a" } else { "b" })
                    .trace(format!("t{i}"))
                    .score("recall", 1.0)
                    .build();
                if i < failed {
                    s.scores.clear();
                    s.error = Some(UnitError {
                        kind: "provider".into(),
                        message: "connection refused".into(),
                    });
                }
                s
            })
            .collect();
        GateRun::new(info, samples.iter().map(Sample::row).collect::<Vec<_>>())
    }

    /// A mean of equal values has a degenerate CI: the message says `constant`, as the
    /// report's tables do, not `95% CI [1.000, 1.000]`; the JSON keeps the bounds.
    #[test]
    fn a_constant_mean_is_said_constant_not_a_point_interval() {
        let (cand, base) = (run("c", 0, 4), run("b", 0, 4));
        let rule = parse_rule("needle.recall >= 0.5").unwrap();
        let o = evaluate(&[rule], &cand, &base, GateOptions::default(), |_| false).unwrap();
        let r = &o.results[0];
        assert!(
            r.message
                .starts_with("mean needle.recall = 1.000 (constant): satisfies"),
            "{}",
            r.message
        );
        let ci = r.ci.expect("a degenerate CI");
        assert_eq!((ci.lo, ci.hi), (1.0, 1.0));
    }

    #[test]
    fn failed_units_fail_unless_tolerated_and_a_partial_run_fails() {
        let clean = run("c", 0, 4);
        assert!(
            run_checks(&clean, 0).is_empty(),
            "a clean run: nothing to say"
        );
        let broken = run("c", 3, 1);
        let checks = run_checks(&broken, 0);
        assert_eq!(checks.len(), 1);
        assert_eq!(
            (checks[0].check.as_str(), checks[0].verdict),
            ("errors", Verdict::Fail)
        );
        assert!(
            checks[0]
                .message
                .starts_with("3 of 4 unit(s) failed (a: 2/2, b: 1/2)"),
            "{}",
            checks[0].message
        );
        assert_eq!(run_checks(&broken, 3)[0].verdict, Verdict::Pass);
        let mut partial = run("c", 0, 4);
        partial.progress = RunProgress {
            status: Some(RunStatus::Interrupted),
            units: Some(UnitCounts {
                planned_total: 8,
                planned: 8,
                recorded: 4,
                ..UnitCounts::default()
            }),
            ..RunProgress::default()
        };
        let checks = run_checks(&partial, 0);
        assert_eq!(
            (checks[0].check.as_str(), checks[0].verdict),
            ("complete", Verdict::Fail)
        );
        // Every rule of a run whose units all failed is skipped: the run check still fails it,
        // and so does the check that something was checked (also with the failures tolerated).
        let rule = parse_rule("needle.recall >= 0.5").unwrap();
        let dead = run("dead", 4, 0);
        let base = run("base", 0, 4);
        let o = evaluate(
            std::slice::from_ref(&rule),
            &dead,
            &base,
            GateOptions::default(),
            |_| false,
        )
        .unwrap();
        assert_eq!(o.skipped(), 2);
        assert!(!o.passed() && o.failed() == 2);
        let tolerated = GateOptions {
            max_errors: 4,
            ..GateOptions::default()
        };
        let o = evaluate(&[rule], &dead, &base, tolerated, |_| false).unwrap();
        let fails: Vec<&str> = o
            .run_checks
            .iter()
            .filter(|c| c.verdict == Verdict::Fail)
            .map(|c| c.check.as_str())
            .collect();
        assert_eq!(fails, ["checked"], "{o:?}");
    }

    fn result(rule: &str, variant: &str, verdict: Verdict, message: &str) -> RuleResult {
        RuleResult {
            rule: rule.into(),
            kind: RuleKind::Absolute,
            variant: variant.into(),
            verdict,
            value: None,
            ci: None,
            p_value: None,
            beyond: None,
            regression: false,
            message: message.into(),
        }
    }

    /// A gate whose every rule was skipped for every variant checked nothing: it fails, saying
    /// why each was skipped, grouped by reason, unless allowed; one rule checked is enough.
    #[test]
    fn a_gate_that_checks_nothing_fails_unless_allowed() {
        let vs = ["a".to_string(), "b".to_string(), "c".to_string()];
        let none = "no `needle.recall` value in the candidate run";
        let zero = "baseline mean is 0: no percentage change";
        let all = [
            result("needle.recall >= 0.8", "a", Verdict::Skipped, none),
            result("needle.recall >= 0.8", "b", Verdict::Skipped, none),
            result("needle.recall >= 0.8", "c", Verdict::Skipped, none),
            result("cost.delta_pct <= 5", "a", Verdict::Skipped, zero),
            result("cost.delta_pct <= 5", "b", Verdict::Skipped, none),
        ];
        let check = unchecked(&all, &vs, false).expect("nothing was checked");
        assert_eq!(
            (check.check.as_str(), check.verdict),
            ("checked", Verdict::Fail)
        );
        assert_eq!(
            check.message,
            "no rule could be checked: no `needle.recall` value in the candidate run \
             (`needle.recall >= 0.8` on every variant; `cost.delta_pct <= 5` on b); baseline \
             mean is 0: no percentage change (`cost.delta_pct <= 5` on a); a gate that checks \
             nothing fails (pass --allow-unchecked to let it pass)"
        );
        let allowed = unchecked(&all, &vs, true).expect("still said");
        assert_eq!(allowed.verdict, Verdict::Pass);
        assert!(
            allowed.message.ends_with("passes by --allow-unchecked"),
            "{}",
            allowed.message
        );
        // One rule checked (pass or fail) and the others skipped: nothing to say.
        for verdict in [Verdict::Pass, Verdict::Fail] {
            let mut some = all.to_vec();
            some.push(result("tokens <= 5", "a", verdict, "mean tokens = 4"));
            assert_eq!(unchecked(&some, &vs, false), None);
        }
        assert_eq!(unchecked(&[], &vs, false), None);
    }

    /// A Δ rule prints its change with its CI's decimals, as the report's comparison table and
    /// verdict line do (it printed `+908.0 (95% CI [-8, 1931])`); a Δ% rule likewise; a mean
    /// rule as the tables of means.
    #[test]
    fn a_change_and_its_ci_are_printed_at_one_precision() {
        let ci = |lo, hi| Ci {
            lo,
            hi,
            method: crate::metrics::stats::CiMethod::Bootstrap,
        };
        let shown = |kind, value, c: Ci| figures(kind, value, Some(&c));
        assert_eq!(
            shown(RuleKind::Delta, 908.0, ci(-8.0, 1931.0)),
            ("+908".to_string(), "[-8, +1931]".to_string())
        );
        assert_eq!(
            shown(RuleKind::DeltaPct, 0.07, ci(-0.096, 0.52)),
            ("+0.1%".to_string(), "[-0.1, +0.5]".to_string())
        );
        // A mean and its CI at one precision too, as the tables of means print them (it
        // printed `950.3 (95% CI [900, 1010])`), and unsigned: a mean is no change.
        assert_eq!(
            shown(RuleKind::Absolute, 950.3, ci(900.0, 1010.0)),
            ("950".to_string(), "[900, 1010]".to_string())
        );
        assert_eq!(
            figures(RuleKind::Absolute, 950.3, None),
            ("950.3".to_string(), "–".to_string())
        );
        assert_eq!(
            figures(RuleKind::Delta, 908.0, None),
            ("+908.0".to_string(), "–".to_string())
        );
    }

    #[test]
    fn a_figure_next_to_its_threshold_is_printed_apart_from_it() {
        assert_eq!(decimals_apart(121.5, 121.4), 1);
        assert_eq!(decimals_of("+121.50%"), 2);
        assert_eq!(decimals_apart(1991.0, 1991.25), 1);
        assert_eq!(decimals_apart(66450.55, 66450.5055), 2);
        assert_eq!(decimals_apart(2.0, 2.0), 0);
        // A figure 1 or more from its threshold keeps its usual decimals.
        assert_eq!(decimals_apart(55556.111, 0.0), 0);
        assert_eq!(decimals_apart(1992.4, 1991.4), 0);
        assert_eq!(at_least("+122".into(), 1, || "+121.5".into()), "+121.5");
        assert_eq!(at_least("+121.50".into(), 1, || unreachable!()), "+121.50");
        assert_eq!(at_least("-≈0".into(), 3, || unreachable!()), "-≈0");
        assert_eq!(at_least("+0.1%".into(), 2, || "+0.07%".into()), "+0.07%");
    }
}
