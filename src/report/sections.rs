//! The report's tables, declared once as pure functions of the result model: summary per
//! variant, paired comparison (of variants in one run, or of two runs), pass@k, tokens and
//! cost by role, errors, and the gate's verdicts. Markdown, HTML, the terminal and CSV render
//! the same [`Table`]s; headings and prose around them stay with each format.
//!
//! To add a report section: declare its table here, then place it in `markdown::render` and
//! `html/page.rs` (and in a terminal command if it belongs there).

use super::headline::{self, Effect};
use super::model::ReportModel;
use super::table::{Cell, Column, Table};
use crate::gate::{GateOutcome, Verdict};
use crate::metrics::aggregate::Comparison;
use crate::metrics::cost::{format_usd, RoleCost};
use crate::metrics::stats::CiMethod;
use crate::record::TokenSplit;

/// Summary per variant: units, errors, then one mean-with-CI column per metric of the run.
pub fn summary(model: &ReportModel) -> Table {
    summary_of(model, &model.metric_names(), "summary-all-table")
}

/// Summary per variant over the headline metrics only (what a person reads first).
pub fn headline_summary(model: &ReportModel) -> Table {
    let names: Vec<&str> = model.headline.iter().map(String::as_str).collect();
    summary_of(model, &names, "summary-table")
}

/// Summary per variant over `metrics`.
pub fn summary_of(model: &ReportModel, metrics: &[&str], id: &'static str) -> Table {
    let mut columns = vec![
        Column::text("variant"),
        Column::num("units"),
        Column::num("errors"),
    ];
    columns.extend(metrics.iter().map(|m| Column::num(*m)));
    let mut t = Table::new(Some(id), columns);
    for v in &model.variants {
        let mut row = vec![
            Cell::text(&v.variant),
            Cell::Int(v.units as u64),
            Cell::Int(v.errors as u64),
        ];
        row.extend(metrics.iter().map(|m| match v.metric(m) {
            Some(s) => Cell::MeanCi {
                mean: s.mean,
                ci: s.ci,
                n: s.n,
            },
            None => Cell::Missing,
        }));
        t.push(row);
    }
    t
}

/// Which test decided a comparison's significance.
pub fn test_name(c: &Comparison) -> &'static str {
    if c.clustered {
        return match c.ci.map(|ci| ci.method) {
            Some(CiMethod::Degenerate) => "sign test by trace (constant Δ)",
            _ => "cluster bootstrap (by trace)",
        };
    }
    match (&c.mcnemar, c.ci.map(|ci| ci.method)) {
        (Some(m), _) if m.exact => "McNemar (exact)",
        (Some(_), _) => "McNemar (χ²)",
        (None, Some(CiMethod::Degenerate)) => "sign test (constant Δ)",
        (None, Some(CiMethod::Normal)) => "paired (normal approx.)",
        (None, _) => "paired bootstrap",
    }
}

/// Paired comparisons, one row per variant × metric. `candidate` names the compared side's
/// mean column: "variant mean" within a run, "candidate" between two runs.
pub fn comparison(comparisons: &[Comparison], candidate: &str) -> Table {
    let mut t = Table::new(
        Some("comparison-table"),
        vec![
            Column::text("variant"),
            Column::text("metric"),
            Column::num("pairs"),
            Column::num("traces"),
            Column::num("baseline"),
            Column::num(candidate),
            Column::num("Δ (Δ%)"),
            Column::num("95% CI"),
            Column::num("p"),
            Column::text("test").detail(),
            Column::text("significant"),
        ],
    );
    for c in comparisons {
        t.push(vec![
            Cell::text(&c.candidate),
            Cell::text(&c.metric),
            Cell::Int(c.n_pairs as u64),
            Cell::Int(c.n_traces as u64),
            Cell::Num(c.baseline_mean),
            Cell::Num(c.candidate_mean),
            Cell::Delta {
                delta: c.delta,
                pct: headline::percent_of_baseline(c),
                ci: c.ci,
                pct_ci: c.pct_ci,
            },
            Cell::Ci {
                ci: c.ci,
                delta: c.delta,
            },
            Cell::P(c.p_value),
            Cell::text(test_name(c)),
            if c.too_few_traces {
                Cell::text("too few traces to tell")
            } else {
                match headline::effect(c) {
                    Effect::Better => Cell::Good("yes, better".into()),
                    Effect::Worse => Cell::Alert("yes, WORSE".into()),
                    Effect::Changed => Cell::Strong("yes".into()),
                    Effect::NotSignificant | Effect::Same => Cell::text("no"),
                }
            },
        ]);
    }
    t
}

/// pass@k and pass^k per variant and eval.
pub fn pass_k(model: &ReportModel) -> Table {
    let mut t = Table::new(
        None,
        vec![
            Column::text("variant"),
            Column::text("eval"),
            Column::num("k"),
            Column::num("tasks"),
            Column::num("pass@k"),
            Column::num("pass^k"),
        ],
    );
    for p in &model.pass_k {
        t.push(vec![
            Cell::text(&p.variant),
            Cell::text(&p.eval),
            Cell::Int(p.k),
            Cell::Int(p.tasks as u64),
            Cell::Num(p.pass_at_k),
            Cell::Num(p.pass_hat_k),
        ]);
    }
    t
}

/// A role's cost, or why it is unknown (never $0 for an unknown price).
pub fn role_cost(c: &RoleCost) -> String {
    match c.usd {
        Some(v) => format_usd(Some(v)),
        None => format!(
            "unknown ({} unit(s) unpriced; known part {})",
            c.unknown_units,
            format_usd(Some(c.known_usd))
        ),
    }
}

fn token_cells(label: Cell, variant: &str, t: &TokenSplit, cost: String) -> Vec<Cell> {
    vec![
        Cell::text(variant),
        label,
        Cell::Int(t.input),
        Cell::Int(t.cached),
        Cell::Int(t.cache_write),
        Cell::Int(t.output),
        Cell::Text(cost),
    ]
}

/// Tokens (input, cached, cache write, output) and cost per variant and role, with a total
/// row per variant.
pub fn usage(model: &ReportModel) -> Table {
    let mut t = Table::new(
        Some("usage-table"),
        vec![
            Column::text("variant"),
            Column::text("role"),
            Column::num("input"),
            Column::num("cached"),
            Column::num("cache write"),
            Column::num("output"),
            Column::num("cost").max(200),
        ],
    );
    for v in &model.variants {
        let (tok, c) = (&v.usage.tokens, &v.usage.cost);
        for (role, split, cost) in [
            ("agent", &tok.agent, &c.agent),
            ("summarizer", &tok.summarizer, &c.summarizer),
            ("judge", &tok.judge, &c.judge),
            ("eval agent", &tok.eval_agent, &c.eval_agent),
        ] {
            t.push(token_cells(
                Cell::text(role),
                &v.variant,
                split,
                role_cost(cost),
            ));
        }
        let mut total = tok.agent;
        total.add(&tok.summarizer);
        total.add(&tok.judge);
        total.add(&tok.eval_agent);
        t.push(token_cells(
            Cell::Strong("total".into()),
            &v.variant,
            &total,
            format_usd(c.total_usd),
        ));
    }
    t
}

/// Failed units grouped by variant and error kind, with one example each.
pub fn errors(model: &ReportModel) -> Table {
    let mut t = Table::new(
        Some("errors-table"),
        vec![
            Column::text("variant"),
            Column::text("kind").max(60),
            Column::num("count"),
            Column::text("example unit"),
            Column::text("example message").max(200),
        ],
    );
    for e in &model.errors {
        t.push(vec![
            Cell::text(&e.variant),
            Cell::text(&e.kind),
            Cell::Int(e.count as u64),
            Cell::text(&e.example_unit),
            Cell::text(&e.example),
        ]);
    }
    t
}

/// The gate's verdicts: one row per rule × variant.
pub fn gate(outcome: &GateOutcome) -> Table {
    let mut t = Table::new(
        Some("gate-table"),
        vec![
            Column::text("verdict"),
            Column::text("rule").max(120),
            Column::text("variant"),
            Column::text("detail").max(400),
        ],
    );
    let tag = |v: Verdict| match v {
        Verdict::Pass => Cell::text("pass"),
        Verdict::Fail => Cell::Strong("FAIL".into()),
        Verdict::Skipped => Cell::text("skipped"),
    };
    // The candidate run's own checks (complete, failed units) before the rules.
    for c in &outcome.run_checks {
        t.push(vec![
            tag(c.verdict),
            Cell::text(format!("run {}", c.check)),
            Cell::text("all"),
            Cell::text(&c.message),
        ]);
    }
    for r in &outcome.results {
        t.push(vec![
            match r.verdict {
                Verdict::Pass => Cell::text("pass"),
                Verdict::Fail => Cell::Strong("FAIL".into()),
                Verdict::Skipped => Cell::text("skipped"),
            },
            Cell::Code(r.rule.clone()),
            Cell::text(&r.variant),
            Cell::text(&r.message),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RunInfo;

    #[test]
    fn every_row_has_one_cell_per_column() {
        let mut info = RunInfo::new("r");
        info.variants = vec!["a".into()];
        let model = ReportModel::build(&info, vec![]);
        for t in [
            summary(&model),
            usage(&model),
            errors(&model),
            pass_k(&model),
        ] {
            for row in &t.rows {
                assert_eq!(row.len(), t.columns.len());
            }
        }
        let u = usage(&model);
        assert_eq!(u.rows.len(), 5, "4 roles and a total for variant a");
        assert_eq!(u.rows[4][1], Cell::Strong("total".into()));
    }

    #[test]
    fn a_tiny_relative_change_reads_the_same_in_every_writer() {
        use crate::report::table::TableWriter;
        use crate::report::{csv::Csv, html::Html, markdown::Markdown, terminal::Terminal};
        // Cost: 2.4 millionths of a dollar on 0.2567 (-0.00093%); tokens: +3 on 250,000.
        let cmp = |metric: &str, base: f64, delta: f64| Comparison {
            candidate: "b".into(),
            baseline: "a".into(),
            pct_ci: None,
            ..Comparison::for_test(metric, base, delta, (2.0 * delta, delta / 2.0), 0.5)
        };
        let cs = [cmp("cost", 0.2567, -2.4e-6), cmp("tokens", 250_000.0, 3.0)];
        let t = comparison(&cs, "candidate");
        let terminal = Terminal.render(&t);
        let markdown = Markdown.render(&t);
        let html = Html.render(&t);
        for (cost, tokens) in [
            ("-0.00000240 (-<0.001%)", "+3.000 (+0.0012%)"),
            ("[-0.00000480, -0.00000120]", "[+6.000, +1.500]"),
        ] {
            assert!(
                terminal.contains(cost) && terminal.contains(tokens),
                "{terminal}"
            );
            assert!(
                markdown.contains(cost) && markdown.contains(tokens),
                "{markdown}"
            );
            assert!(html.contains(&cost.replace('<', "&lt;")), "{html}");
            assert!(html.contains(tokens), "{html}");
        }
        for text in [&terminal, &markdown, &html] {
            assert!(!text.contains("e-"), "e-notation in\n{text}");
        }
        // Machine formats keep the exact values.
        let csv = Csv.render(&t);
        assert!(csv.contains(",-0.0000024,"), "{csv}");
        let json = serde_json::to_value(&cs[0]).unwrap();
        assert_eq!(json["delta_pct"].as_f64(), cs[0].delta_pct);
    }

    /// A row's Δ and its CI have the same decimals in every writer and in the verdict line
    /// (the report printed `+908.0 (+28.0%) [-8, 1931]`), and the Δ% reads as in the verdict.
    #[test]
    fn a_change_and_its_ci_read_at_one_precision_in_every_writer() {
        use crate::report::table::TableWriter;
        use crate::report::{html::Html, markdown::Markdown, terminal::Terminal};
        let c = Comparison {
            candidate: "b".into(),
            baseline: "a".into(),
            ..Comparison::for_test("tokens", 3242.0, 908.0, (-8.0, 1931.0), 0.06)
        };
        let t = comparison(std::slice::from_ref(&c), "candidate");
        for text in [Terminal.render(&t), Markdown.render(&t), Html.render(&t)] {
            assert!(text.contains("+908 (+28.0%)"), "{text}");
            assert!(text.contains("[-8, +1931]"), "{text}");
            assert!(!text.contains("908.0"), "{text}");
        }
        assert_eq!(headline::item_text(&c), "tokens +28.0% [-0.2, +59.6] n.s.");
        // Without a percentage (a difference metric) the verdict prints the Δ as the table does.
        let d = Comparison {
            metric: "needle.recall_delta".into(),
            ..c
        };
        assert!(
            headline::item_text(&d).starts_with("needle.recall_delta +908 [-8, +1931] "),
            "{}",
            headline::item_text(&d)
        );
    }

    /// A mean and its CI have the same decimals, and read alike, in every writer (the report
    /// printed `950.3 [900, 1010]`): the tables of means and the gate's mean rules.
    #[test]
    fn a_mean_and_its_ci_read_at_one_precision_in_every_writer() {
        use crate::metrics::stats::Ci;
        use crate::report::table::TableWriter;
        use crate::report::{html::Html, markdown::Markdown, terminal::Terminal};
        let mut t = Table::new(None, vec![Column::text("variant"), Column::num("tokens")]);
        t.push(vec![
            Cell::text("a"),
            Cell::MeanCi {
                mean: 950.3,
                ci: Some(Ci {
                    lo: 900.0,
                    hi: 1010.0,
                    method: CiMethod::Bootstrap,
                }),
                n: 12,
            },
        ]);
        let html = Html.render(&t);
        assert!(
            html.contains(r#">950 <span class="muted">[900, 1010] n=12</span>"#),
            "{html}"
        );
        for text in [Terminal.render(&t), Markdown.render(&t)] {
            assert!(text.contains("950 [900, 1010]"), "{text}");
            assert!(!text.contains("950.3"), "{text}");
        }
    }

    #[test]
    fn a_difference_metric_changes_in_units_not_percent_in_every_writer() {
        use crate::report::table::TableWriter;
        use crate::report::{html::Html, markdown::Markdown, terminal::Terminal};
        // `needle.recall_delta` is centred on 0: -0.262 against +0.024 is not "-1091.7%".
        let c = Comparison {
            candidate: "b".into(),
            baseline: "a".into(),
            ..Comparison::for_test("needle.recall_delta", 0.024, -0.262, (-0.5, -0.05), 0.01)
        };
        assert!(c.delta_pct.is_some_and(f64::is_finite));
        assert_eq!(headline::percent_of_baseline(&c), None);
        let t = comparison(std::slice::from_ref(&c), "candidate");
        for text in [
            Terminal.render(&t),
            Markdown.render(&t),
            Html.render(&t),
            headline::item_text(&c),
        ] {
            assert!(text.contains("-0.262"), "{text}");
            assert!(!text.contains("-1091"), "{text}");
        }
        // The same change of a plain metric keeps its percent.
        let plain = Comparison {
            candidate: "b".into(),
            baseline: "a".into(),
            ..Comparison::for_test("needle.recall", 0.5, -0.25, (-0.4, -0.1), 0.01)
        };
        assert_eq!(headline::percent_of_baseline(&plain), plain.delta_pct);
        assert!(Markdown
            .render(&comparison(&[plain], "candidate"))
            .contains("(-50.0%)"));
    }
}
