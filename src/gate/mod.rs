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
//!   the change is significant (p < 0.05: McNemar for pass/fail metrics, paired bootstrap
//!   otherwise; without pairs enough for a test, the delta alone decides).
//! - `metric.delta_pct op X`: the same, on 100·delta / |baseline mean|.
//!
//! A rule applies to every variant of the candidate run, or to the one named before `:`.
//! A rule whose metric has no value for a variant (e.g. `cost` when a price is unknown) is
//! reported as skipped for it, never as passed.

use crate::metrics::aggregate::{self, ObsTable};
use crate::metrics::stats::Ci;
use crate::record::{Row, RunInfo};
use serde::Serialize;

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
    /// One line for a person: what was measured and why it passed, failed or was skipped.
    pub message: String,
}

/// All results of a gate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateOutcome {
    pub candidate_run: String,
    pub baseline_run: String,
    pub results: Vec<RuleResult>,
}

impl GateOutcome {
    pub fn failed(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.verdict == Verdict::Fail)
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

/// What the gate reads of a run: its info, its variants and the observations of every variant
/// and metric. Built from one pass over the run's rows, so a caller can stream the journal into
/// compact rows, build this and drop them.
pub struct GateRun {
    pub info: RunInfo,
    variants: Vec<String>,
    table: ObsTable,
}

impl GateRun {
    pub fn new<'a>(info: RunInfo, rows: impl IntoIterator<Item = Row<'a>> + Clone) -> GateRun {
        let variants = variants_of(&info, rows.clone());
        let table = aggregate::observations_with_roles(rows);
        GateRun {
            info,
            variants,
            table,
        }
    }
}

fn variants_of<'a>(info: &RunInfo, rows: impl IntoIterator<Item = Row<'a>>) -> Vec<String> {
    let mut v = info.variants.clone();
    let mut extra: Vec<&str> = rows
        .into_iter()
        .map(|s| s.variant)
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

fn ci_text(ci: &Option<Ci>) -> String {
    crate::metrics::format::fmt_ci(ci.as_ref())
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

/// Evaluate rules on a candidate run against a baseline run. `seed` fixes the bootstrap.
/// Errors (exit 2) when the runs are unrelated ([`check_related`]), when a rule names a
/// variant the candidate run lacks, or a metric no variant of either run has.
pub fn evaluate(
    rules: &[Rule],
    candidate: &GateRun,
    baseline: &GateRun,
    seed: u64,
) -> Result<GateOutcome, String> {
    check_related(candidate, baseline)?;
    let (cand_table, base_table) = (&candidate.table, &baseline.table);
    let variants = &candidate.variants;
    let mut results = Vec::new();
    for rule in rules {
        let known = cand_table
            .values()
            .chain(base_table.values())
            .any(|m| m.contains_key(&rule.metric));
        if !known {
            let mut all: Vec<&String> = cand_table.values().flat_map(|m| m.keys()).collect();
            all.sort();
            all.dedup();
            let list: Vec<&str> = all.iter().map(|s| s.as_str()).collect();
            return Err(format!(
                "rule `{}`: metric `{}` is not in the candidate or the baseline run (metrics: {})",
                rule.text,
                rule.metric,
                list.join(", ")
            ));
        }
        let targets: Vec<String> = match &rule.variant {
            Some(v) if variants.contains(v) => vec![v.clone()],
            Some(v) => {
                return Err(format!(
                    "rule `{}`: variant `{v}` is not in run {} (variants: {})",
                    rule.text,
                    candidate.info.run_id,
                    variants.join(", ")
                ))
            }
            None => variants.clone(),
        };
        for v in targets {
            results.push(evaluate_one(rule, &v, cand_table, base_table, seed));
        }
    }
    Ok(GateOutcome {
        candidate_run: candidate.info.run_id.clone(),
        baseline_run: baseline.info.run_id.clone(),
        results,
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
        message: why,
    }
}

fn evaluate_one(
    rule: &Rule,
    variant: &str,
    cand: &ObsTable,
    base: &ObsTable,
    seed: u64,
) -> RuleResult {
    let Some(cand_obs) = cand.get(variant).and_then(|m| m.get(&rule.metric)) else {
        return skipped(
            rule,
            variant,
            format!(
                "no `{}` value in the candidate run for this variant",
                rule.metric
            ),
        );
    };
    let mut too_few_traces: Option<usize> = None;
    let (value, ci, p_value, significant, what) = match rule.kind {
        RuleKind::Absolute => {
            let Some(s) = aggregate::summarize(
                &rule.metric,
                cand_obs,
                seed,
                &format!("{variant}\u{1f}{}", rule.metric),
            ) else {
                return skipped(rule, variant, "no values".into());
            };
            // Significant violation: the whole CI is on the wrong side of the threshold.
            let significant = match &s.ci {
                Some(ci) if rule.op.lower_bound() => !rule.op.holds(ci.hi, rule.threshold),
                Some(ci) => !rule.op.holds(ci.lo, rule.threshold),
                None => true,
            };
            (
                s.mean,
                s.ci,
                None,
                significant,
                format!("mean {}", rule.metric),
            )
        }
        RuleKind::Delta | RuleKind::DeltaPct => {
            let Some(base_obs) = base.get(variant).and_then(|m| m.get(&rule.metric)) else {
                return skipped(
                    rule,
                    variant,
                    format!(
                        "no `{}` value in the baseline run for this variant",
                        rule.metric
                    ),
                );
            };
            let Some(c) =
                aggregate::compare(&rule.metric, variant, variant, cand_obs, base_obs, seed)
            else {
                return skipped(
                    rule,
                    variant,
                    "no unit is shared with the baseline run".into(),
                );
            };
            let significant = c.p_value.is_none_or(|p| p < crate::metrics::stats::ALPHA);
            if c.too_few_traces {
                too_few_traces = Some(c.n_traces);
            }
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
    let stats = format!(
        "{what} = {} (95% CI {}{})",
        num(value),
        ci_text(&ci),
        p_value
            .map(|p| format!(", p = {}", crate::metrics::format::fmt_p(Some(p))))
            .unwrap_or_default()
    );
    let (verdict, message) = if holds {
        (
            Verdict::Pass,
            format!(
                "{stats}: satisfies {} {}",
                rule.op.as_str(),
                num(rule.threshold)
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
                num(rule.threshold),
                num(beyond.unwrap_or(0.0)),
                if ci.is_some() {
                    "the whole 95% CI is beyond it"
                } else {
                    "no CI with fewer than two values: the mean decides"
                }
            ),
        )
    } else if significant {
        (
            Verdict::Fail,
            format!(
                "{stats}: violates {} {} by {} and the regression is significant",
                rule.op.as_str(),
                num(rule.threshold),
                num(beyond.unwrap_or(0.0))
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
                num(rule.threshold),
                num(beyond.unwrap_or(0.0))
            ),
        )
    } else if rule.kind == RuleKind::Absolute {
        (
            Verdict::Pass,
            format!(
                "{stats}: misses the threshold {} {} by {} but not significantly: the 95% CI \
                 reaches it (passes)",
                rule.op.as_str(),
                num(rule.threshold),
                num(beyond.unwrap_or(0.0))
            ),
        )
    } else {
        (
            Verdict::Pass,
            format!(
                "{stats}: beyond {} {} by {} but not significant (passes)",
                rule.op.as_str(),
                num(rule.threshold),
                num(beyond.unwrap_or(0.0))
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
        message,
    }
}
