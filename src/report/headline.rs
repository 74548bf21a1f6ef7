//! Headline metrics and verdict lines: which metrics answer "is this variant better than the
//! baseline", which direction is better for each metric (its polarity), and the one line per
//! variant that every report format opens with.
//!
//! Defaults (issue "a report that answers the question"): tokens, cost, needle recall, the
//! drift and rules scores, invariants and futile compactions: the metrics each eval declares
//! `headline` in `crate::evalspec`, where its polarity is declared too. A suite picks its own with `[report] metrics = ["needle.recall",
//! "tokens", …]` (exact names, or `eval.*` for every metric of an eval); the writers read that
//! list from the suite recorded in run.json, so `ctxbench report` of an old run uses the same
//! choice.
//!
//! A verdict item is marked in words as well as colour: `better` / `worse` when the change is
//! significant (p < 0.05) and the metric has a polarity, `changed` when it has none, `n.s.` when
//! the change is not significant, and `=` with both means when nothing changed at all.

use crate::metrics::aggregate::Comparison;
use crate::metrics::format::{fmt_change, fmt_num, fmt_p, fmt_pct_change};
use serde::Serialize;

pub use crate::evalspec::Polarity;

/// The polarity of a metric, as its eval declares it (`crate::evalspec`); neutral for a metric
/// nobody declares (a run recorded by another version).
pub fn polarity(metric: &str) -> Polarity {
    crate::evalspec::polarity(metric)
}

/// Whether a metric is a headline metric by default (declared `headline` in its eval's spec).
pub fn is_default_headline(metric: &str) -> bool {
    crate::evalspec::headline_rank(metric).is_some()
}

/// Order of the default headline (`tokens`, `cost`, then each eval's `headline_rank`).
fn default_rank(metric: &str) -> u8 {
    crate::evalspec::headline_rank(metric).unwrap_or(5)
}

fn matches(pattern: &str, metric: &str) -> bool {
    match pattern.strip_suffix(".*") {
        Some(eval) => metric.split_once('.').is_some_and(|(e, _)| e == eval),
        None => pattern == metric,
    }
}

/// The suite's `[report] metrics` list, read from the resolved suite recorded in run.json.
/// `None` when the suite does not set one.
pub fn suite_choice(suite: &serde_json::Value) -> Option<Vec<String>> {
    let list = suite.get("report")?.get("metrics")?.as_array()?;
    let names: Vec<String> = list
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    (!names.is_empty()).then_some(names)
}

/// Headline metrics among `available` (in display order): the suite's choice in its order
/// when it has one, the defaults in display order otherwise. Returns the selection and the
/// chosen names that matched no metric (for a note).
pub fn select(choice: Option<&[String]>, available: &[&str]) -> (Vec<String>, Vec<String>) {
    match choice {
        None => {
            let mut out: Vec<String> = available
                .iter()
                .filter(|m| is_default_headline(m))
                .map(|m| m.to_string())
                .collect();
            out.sort_by_key(|m| default_rank(m)); // stable: ties keep display order
            (out, vec![])
        }
        Some(patterns) => {
            let mut out: Vec<String> = Vec::new();
            let mut unmatched = Vec::new();
            for p in patterns {
                let hits: Vec<&&str> = available.iter().filter(|m| matches(p, m)).collect();
                if hits.is_empty() {
                    unmatched.push(p.clone());
                }
                for m in hits {
                    if !out.iter().any(|o| o == m) {
                        out.push(m.to_string());
                    }
                }
            }
            (out, unmatched)
        }
    }
}

/// How a change reads for a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Significant, in the better direction.
    Better,
    /// Significant, in the worse direction.
    Worse,
    /// Significant, for a metric without a polarity.
    Changed,
    /// Not significant.
    NotSignificant,
    /// No change at all (every pair equal).
    Same,
}

/// The effect of one comparison, by the metric's polarity.
pub fn effect(c: &Comparison) -> Effect {
    let no_spread = c.ci.is_none_or(|ci| ci.lo == 0.0 && ci.hi == 0.0);
    if c.delta == 0.0 && no_spread {
        return Effect::Same;
    }
    if !c.significant {
        return Effect::NotSignificant;
    }
    match polarity(&c.metric) {
        Polarity::Neutral => Effect::Changed,
        Polarity::Higher if c.delta > 0.0 => Effect::Better,
        Polarity::Lower if c.delta < 0.0 => Effect::Better,
        _ => Effect::Worse,
    }
}

/// One metric of a verdict line.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct VerdictItem {
    pub metric: String,
    pub effect: Effect,
    /// e.g. `tokens -57.8% [-78.4, -37.3] better (p<0.001)`.
    pub text: String,
}

/// One line per variant vs the baseline: its headline metrics in headline order.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct VerdictLine {
    pub variant: String,
    pub baseline: String,
    pub items: Vec<VerdictItem>,
}

/// How the note on `[report] metrics` names that no variant recorded starts.
pub const UNMATCHED: &str = "[report] metrics names";

/// The change in % of the baseline mean, where one means something: not for a difference
/// metric (`needle.recall_delta` is centred on 0: −0.26 against a baseline of +0.02 is not
/// "−1,100%"), nor against a zero baseline. Every writer shows a change this way or in units.
pub fn percent_of_baseline(c: &Comparison) -> Option<f64> {
    let difference = c.metric.ends_with("_delta");
    c.delta_pct
        .filter(|p| p.is_finite() && c.baseline_mean != 0.0 && !difference)
}

/// The text of one verdict item.
pub fn item_text(c: &Comparison) -> String {
    let e = effect(c);
    if e == Effect::Same {
        return format!(
            "{} = ({} vs {})",
            c.metric,
            fmt_num(c.candidate_mean),
            fmt_num(c.baseline_mean)
        );
    }
    // A change and its CI with the same decimals, as the comparison table and the gate print them.
    let change = match percent_of_baseline(c) {
        Some(p) => {
            let (shown, ci) = fmt_pct_change(p, c.pct_ci.as_ref());
            let ci = match (c.pct_ci, c.ci) {
                (Some(_), _) => format!(" {ci}"),
                // Some resamples have a zero baseline: say so rather than print no interval.
                (None, Some(_)) => " [CI unbounded]".to_string(),
                (None, None) => String::new(),
            };
            format!("{shown}{ci}")
        }
        _ => {
            let (d, ci) = fmt_change(c.delta, c.ci.as_ref());
            match c.ci {
                Some(_) => format!("{d} {ci}"),
                None => d,
            }
        }
    };
    let p = fmt_p(c.p_value);
    let p = if p.starts_with('<') {
        format!("p{p}")
    } else {
        format!("p={p}")
    };
    let mark = match e {
        Effect::Better => format!("better ({p})"),
        Effect::Worse => format!("WORSE ({p})"),
        Effect::Changed => format!("changed ({p})"),
        _ if c.too_few_traces => format!("too few traces ({}) to tell", c.n_traces),
        _ => "n.s.".to_string(),
    };
    format!("{} {change} {mark}", c.metric)
}

/// Headline-first order of comparisons, variant by variant (variants keep their order):
/// headline metrics in `headline` order, then the others in their order. Non-headline rows
/// without any change (constants such as `replay.reference_tokens`) are dropped; the count of
/// dropped rows is returned so a writer can say so.
pub fn ordered(comparisons: &[Comparison], headline: &[String]) -> (Vec<Comparison>, usize) {
    let mut variants: Vec<&str> = Vec::new();
    for c in comparisons {
        if !variants.contains(&c.candidate.as_str()) {
            variants.push(&c.candidate);
        }
    }
    let rank = |m: &str| headline.iter().position(|h| h == m).unwrap_or(usize::MAX);
    let mut out = Vec::with_capacity(comparisons.len());
    let mut dropped = 0;
    for v in variants {
        let mut rows: Vec<&Comparison> = comparisons.iter().filter(|c| c.candidate == v).collect();
        rows.sort_by_key(|c| rank(&c.metric)); // stable: the others keep their order
        for c in rows {
            if rank(&c.metric) == usize::MAX && effect(c) == Effect::Same {
                dropped += 1;
            } else {
                out.push(c.clone());
            }
        }
    }
    (out, dropped)
}

/// One verdict line per candidate of `comparisons` (in their order), over the headline
/// metrics.
pub fn verdicts(comparisons: &[Comparison], headline: &[String]) -> Vec<VerdictLine> {
    let mut lines: Vec<VerdictLine> = Vec::new();
    for h in headline {
        for c in comparisons.iter().filter(|c| &c.metric == h) {
            let item = VerdictItem {
                metric: c.metric.clone(),
                effect: effect(c),
                text: item_text(c),
            };
            match lines.iter_mut().find(|l| l.variant == c.candidate) {
                Some(l) => l.items.push(item),
                None => lines.push(VerdictLine {
                    variant: c.candidate.clone(),
                    baseline: c.baseline.clone(),
                    items: vec![item],
                }),
            }
        }
    }
    // Variants in comparison order, not in the order their first headline metric appeared.
    let order: Vec<&str> = comparisons.iter().map(|c| c.candidate.as_str()).collect();
    lines.sort_by_key(|l| order.iter().position(|v| *v == l.variant));
    lines
}

/// Legend printed under the verdict lines.
pub const LEGEND: &str = "better/WORSE: significant at p < 0.05 in the metric's better/worse \
direction; n.s.: not significant; too few traces: fewer than 6 traces, no verdict; =: no change. Δ% of the baseline mean, with its 95% CI, over the paired units (same trace, eval, sample and repeat in both variants; a table of means takes every unit).";

/// Verdict lines as plain text, wrapped at `width` columns: the variant name, then its items
/// separated by two spaces; continuation lines are indented under the first item. When a
/// name is so long that an item would not fit beside it (a grid's
/// `summarize.keep.fraction=0.1,summarize.trigger.fraction=0.5`), every name gets a line of its
/// own and the items follow indented under it.
pub fn render_text(lines: &[VerdictLine], width: usize) -> String {
    let name_w = lines
        .iter()
        .map(|l| crate::output::columns(&l.variant))
        .max()
        .unwrap_or(0);
    let item_w = lines
        .iter()
        .flat_map(|l| &l.items)
        .map(|i| crate::output::columns(&i.text))
        .max()
        .unwrap_or(0);
    // Stacked only where that makes the items fit.
    let stacked = name_w + 2 + item_w > width && 2 + 2 + item_w <= width;
    let indent = if stacked { 2 } else { name_w };
    let mut out = String::new();
    for l in lines {
        let mut line = if stacked {
            out.push_str(&l.variant);
            out.push('\n');
            " ".repeat(indent)
        } else {
            // Padded to the names' display columns (a wide name takes two a character).
            let pad = name_w.saturating_sub(crate::output::columns(&l.variant));
            format!("{}{}", l.variant, " ".repeat(pad))
        };
        let mut first = true;
        for item in &l.items {
            let text = item.text.replace(['\n', '\r', '\t'], " ");
            let len = crate::output::columns(&line);
            if !first && len + 2 + crate::output::columns(&text) > width {
                out.push_str(line.trim_end());
                out.push('\n');
                line = " ".repeat(indent);
            }
            line.push_str("  ");
            line.push_str(&text);
            first = false;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(metric: &str, base: f64, delta: f64, lo: f64, hi: f64, p: f64) -> Comparison {
        Comparison::for_test(metric, base, delta, (lo, hi), p)
    }

    #[test]
    fn polarity_by_name() {
        assert_eq!(polarity("tokens"), Polarity::Lower);
        assert_eq!(polarity("cost"), Polarity::Lower);
        assert_eq!(polarity("replay.futile_compactions"), Polarity::Lower);
        assert_eq!(polarity("invariants.violations"), Polarity::Lower);
        assert_eq!(polarity("needle.recall"), Polarity::Higher);
        // Declared, no longer guessed: failure counts read "worse" when they grow.
        assert_eq!(polarity("needle.summary_failures"), Polarity::Lower);
        assert_eq!(polarity("continuation.agreement"), Polarity::Higher);
        assert_eq!(polarity("needle.recall_delta"), Polarity::Higher);
        assert_eq!(polarity("needle.stale"), Polarity::Lower);
        assert_eq!(polarity("drift.score"), Polarity::Higher);
        assert_eq!(polarity("needle.steps"), Polarity::Neutral);
        assert_eq!(polarity("replay.reference_tokens"), Polarity::Neutral);
    }

    #[test]
    fn default_headline_and_suite_choice() {
        let avail = [
            "drift.probes",
            "drift.score",
            "invariants.pass",
            "needle.recall",
            "needle.steps",
            "replay.futile_compactions",
            "cost",
            "tokens",
        ];
        let (h, _) = select(None, &avail);
        assert_eq!(
            h,
            [
                "tokens",
                "cost",
                "needle.recall",
                "drift.score",
                "invariants.pass",
                "replay.futile_compactions",
            ]
        );
        let suite = serde_json::json!({"report": {"metrics": ["tokens", "needle.*", "nope"]}});
        let choice = suite_choice(&suite).unwrap();
        let (h, missing) = select(Some(&choice), &avail);
        assert_eq!(h, ["tokens", "needle.recall", "needle.steps"]);
        assert_eq!(missing, ["nope"]);
        assert_eq!(suite_choice(&serde_json::json!({})), None);
    }

    #[test]
    fn effects_follow_polarity_and_significance() {
        let tokens = cmp("tokens", 1000.0, -580.0, -610.0, -550.0, 0.0001);
        assert_eq!(effect(&tokens), Effect::Better);
        assert_eq!(
            item_text(&tokens),
            "tokens -58.0% [-61.0, -55.0] better (p<0.001)"
        );
        let recall = cmp("needle.recall", 1.0, -0.5, -0.7, -0.3, 0.01);
        assert_eq!(effect(&recall), Effect::Worse);
        assert!(item_text(&recall).ends_with("WORSE (p=0.010)"));
        let delta = cmp("needle.recall_delta", 0.024, -0.143, -0.3, -0.05, 0.01);
        assert_eq!(
            item_text(&delta),
            "needle.recall_delta -0.143 [-0.300, -0.050] WORSE (p=0.010)"
        );
        let same = cmp("needle.recall", 1.0, 0.0, 0.0, 0.0, 1.0);
        assert_eq!(item_text(&same), "needle.recall = (1.000 vs 1.000)");
        let ns = cmp("drift.score", 3.5, 0.7, 0.0, 1.26, 0.066);
        assert_eq!(item_text(&ns), "drift.score +20.0% [0.0, +36.0] n.s.");
        let mut zero_base = cmp("drift.score", 0.5, 0.2, -0.1, 0.4, 0.3);
        zero_base.pct_ci = None;
        assert_eq!(
            item_text(&zero_base),
            "drift.score +40.0% [CI unbounded] n.s."
        );
        let steps = cmp("needle.steps", 0.0, 0.2, 0.1, 0.4, 0.01);
        assert_eq!(
            item_text(&steps),
            "needle.steps +0.200 [+0.100, +0.400] changed (p=0.010)"
        );
    }

    #[test]
    fn ordering_puts_headline_first_and_drops_constants() {
        let rows = vec![
            cmp("a.const", 5.0, 0.0, 0.0, 0.0, 1.0),
            cmp("needle.steps", 1.0, 0.2, 0.1, 0.3, 0.01),
            cmp("needle.recall", 1.0, 0.0, 0.0, 0.0, 1.0),
            cmp("tokens", 10.0, -5.0, -6.0, -4.0, 0.001),
        ];
        let headline = vec!["needle.recall".to_string(), "tokens".to_string()];
        let (out, dropped) = ordered(&rows, &headline);
        let names: Vec<&str> = out.iter().map(|c| c.metric.as_str()).collect();
        assert_eq!(names, ["needle.recall", "tokens", "needle.steps"]);
        assert_eq!(dropped, 1);
        let lines = verdicts(&rows, &headline);
        assert_eq!(lines.len(), 1);
        let text = render_text(&lines, 40);
        assert_eq!(
            text,
            "aggr  needle.recall = (1.000 vs 1.000)\n      tokens -50.0% [-60.0, -40.0] better (p=0.001)\n"
        );
        // A name too long for an item beside it: every name on a line of its own.
        let mut long = lines.clone();
        long[0].variant = "summarize.keep.fraction=0.1,summarize.trigger.fraction=0.5".into();
        long.push(lines[0].clone());
        let text = render_text(&long, 100);
        assert_eq!(
            text,
            "summarize.keep.fraction=0.1,summarize.trigger.fraction=0.5\n    \
             needle.recall = (1.000 vs 1.000)  tokens -50.0% [-60.0, -40.0] better (p=0.001)\n\
             aggr\n    needle.recall = (1.000 vs 1.000)  tokens -50.0% [-60.0, -40.0] better (p=0.001)\n"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        // A wide (CJK) variant name: its items line up under each other in display columns,
        // and no line runs past the width (the name counted one column a character).
        let mut wide = lines.clone();
        wide[0].variant = "圧縮".into();
        wide.push(lines[0].clone());
        let text = render_text(&wide, 40);
        assert_eq!(
            text,
            "圧縮  needle.recall = (1.000 vs 1.000)\n      tokens -50.0% [-60.0, -40.0] better (p=0.001)\n\
             aggr  needle.recall = (1.000 vs 1.000)\n      tokens -50.0% [-60.0, -40.0] better (p=0.001)\n"
        );
    }
}
