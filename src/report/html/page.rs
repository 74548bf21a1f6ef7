//! The report's sections above the samples: title and provenance, verdict lines, summary per
//! variant, paired comparison (each row links to its samples), pass@k, tokens and cost,
//! errors, plots and notes. Headings and prose live here; the tables come from
//! `report::sections` and are rendered by [`Html`].

use super::samples::filter_link;
use super::{Fragment, Html};
use crate::record::RunInfo;
use crate::report::headline::{self, Effect};
use crate::report::model::ReportModel;
use crate::report::plots::PlotSpec;
use crate::report::sections;
use maud::{html, PreEscaped};
use std::collections::BTreeSet;

/// Title, provenance, a table of contents and the verdict lines.
pub fn top(info: &RunInfo, model: &ReportModel) -> Fragment {
    html! {
        h1 { "ctxbench report — run " code { (info.run_id) } } "\n"
        p {
            "Created " (info.created) " by ctxbench " (info.ctxbench_version) ". "
            (model.units) " unit(s), " (model.variants.len()) " variant(s)."
            @if let Some(b) = &model.baseline { " Baseline variant: " code { (b) } "." }
        }
        "\n"
        @if !info.providers.is_empty() {
            ul {
                @for p in &info.providers {
                    li { (p.role) ": " (p.provider) " " code { (p.model) } }
                }
            }
            "\n"
        }
        nav {
            @for (k, href) in NAV.iter().enumerate() {
                @if k > 0 { " · " }
                a href=(href) { (nav_label(href)) }
            }
        }
        "\n"
        (verdict_block(model))
    }
}

/// The table of contents: the sections' anchors; each link reads as its anchor's name, but
/// for `#usage`.
const NAV: [&str; 7] = [
    "#verdict",
    "#summary",
    "#comparison",
    "#usage",
    "#errors",
    "#plots",
    "#samples",
];

fn nav_label(href: &str) -> &str {
    match href {
        "#usage" => "tokens and cost",
        _ => href.trim_start_matches('#'),
    }
}

fn effect_class(effect: Effect) -> &'static str {
    match effect {
        Effect::Better => "good",
        Effect::Worse => "sig",
        Effect::Changed => "chg",
        Effect::NotSignificant | Effect::Same => "plain",
    }
}

fn verdict_block(model: &ReportModel) -> Fragment {
    html! {
        @if !model.verdicts.is_empty() {
            h2 id="verdict" { "Verdict" } "\n"
            ul class="verdict" {
                @for l in &model.verdicts {
                    li {
                        b { (l.variant) } " vs " code { (l.baseline) }
                        ul { @for i in &l.items { li class=(effect_class(i.effect)) { (i.text) } } }
                    }
                }
            }
            "\n"
            p class="muted" { (headline::LEGEND) } "\n"
        }
    }
}

/// Summary, comparison, pass@k, usage and errors.
pub fn tables(model: &ReportModel) -> Fragment {
    html! {
        h2 id="summary" { "Summary per variant" } "\n"
        p { "Headline metrics: mean per unit with its 95% bootstrap CI." } "\n"
        div class="scroll" { (Html::table(&sections::headline_summary(model))) }
        details id="all-metrics" {
            summary { "All metrics" }
            div class="scroll" { (Html::table(&sections::summary(model))) }
        }
        "\n"
        (comparison_table(model))
        @if !model.pass_k.is_empty() {
            h2 id="pass-k" { "pass@k and pass^k" } "\n"
            (Html::table(&sections::pass_k(model)))
        }
        h2 id="usage" { "Tokens and cost by role" } "\n"
        p { "Input includes cached tokens. An unknown price is shown as unknown, never $0." } "\n"
        div class="scroll" { (Html::table(&sections::usage(model))) }
        p {
            "Run total: " (model.totals.tokens_total()) " tokens; "
            (model.totals.cost.headline.line()) "."
        }
        "\n"
        h2 id="errors" { "Errors" } "\n"
        @if model.errors.is_empty() {
            p { "No unit failed." } "\n"
        } @else {
            div class="scroll" {
                (Html::table_linked(&sections::errors(model), "samples", &|r| {
                    let e = &model.errors[r];
                    let link = filter_link(&[("status", "error"), ("variant", &e.variant)]);
                    Some((link, "show".to_string()))
                }))
            }
            "\n"
        }
    }
}

/// The eval a metric belongs to (`needle.recall` → `needle`), when it is one of `evals`.
fn eval_of<'a>(evals: &BTreeSet<&str>, metric: &'a str) -> Option<&'a str> {
    let (eval, _) = metric.split_once('.')?;
    evals.contains(eval).then_some(eval)
}

fn comparison_table(model: &ReportModel) -> Fragment {
    let Some(b) = &model.baseline else {
        return html! {};
    };
    let (rows, dropped) = headline::ordered(&model.comparisons, &model.headline);
    let evals: BTreeSet<&str> = model.evals.iter().map(String::as_str).collect();
    let link = |r: usize| {
        let c = &rows[r];
        let mut terms = vec![("variant", c.candidate.as_str())];
        terms.extend(eval_of(&evals, &c.metric).map(|e| ("eval", e)));
        Some((filter_link(&terms), "samples".to_string()))
    };
    html! {
        h2 id="comparison" { "Paired comparison vs " code { (b) } } "\n"
        @if model.comparisons.is_empty() {
            p { "No variant shares units with the baseline." } "\n"
        } @else {
            p {
                "Δ = variant − baseline on the same trace/eval/sample/repeat; 95% paired-bootstrap \
                 CI; significant at p < 0.05 (McNemar for pass/fail metrics); better/WORSE by the \
                 metric's direction. Headline metrics first. Units of one trace are not \
                 independent: when a trace gives several pairs, the CI and p resample whole traces \
                 (cluster bootstrap), and with fewer than 6 traces there is no verdict (“too few \
                 traces to tell”). “samples” shows the variant's units of that eval in the samples \
                 table."
            }
            "\n"
            div class="scroll" {
                (Html::table_linked(&sections::comparison(&rows, "variant mean"), "samples", &link))
            }
            "\n"
            @if dropped > 0 {
                p class="muted" {
                    (dropped) " other metric(s) with no change on any pair are not listed (every \
                    unit's value is in results.csv)."
                }
                "\n"
            }
        }
    }
}

fn strip_xml_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// The plots (inline SVG) and the notes on those skipped.
pub fn plots(svgs: &[(PlotSpec, String)], plot_notes: &[String]) -> Fragment {
    html! {
        // `#plots` shorthand: `record::run_dir`'s test keeps file names (`plots/`) out of string
        // literals.
        h2 #plots { "Plots" } "\n"
        @for (spec, svg) in svgs {
            figure class="plot" id=(format!("plot-{}", spec.name)) {
                // PreEscaped: SVG that plotters drew from the run's numbers
                // (`report::plots::render_svg`); plotters escapes the text it draws (variant and
                // metric names), which `tests/it/report_writers.rs` checks with hostile names,
                // and `render_svg` shows the control characters in it (`plots::xml_safe`).
                (PreEscaped(strip_xml_prolog(svg)))
                figcaption { (spec.title) }
            }
            "\n"
        }
        @if svgs.is_empty() {
            p class="muted" { "No plot had data." } "\n"
        }
        @if !plot_notes.is_empty() {
            ul class="muted" { @for n in plot_notes { li { "skipped: " (n) } } }
            "\n"
        }
    }
}

/// Notes the reader should know (torn journal line, flagged units, …).
pub fn notes(model: &ReportModel) -> Fragment {
    html! {
        @if !model.notes.is_empty() {
            h2 id="notes" { "Notes" } "\n"
            ul { @for n in &model.notes { li { (super::note(n)) } } }
            "\n"
        }
    }
}
