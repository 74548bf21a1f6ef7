//! The report's sections above the samples: title and provenance, verdict lines, summary per
//! variant, paired comparison (each row links to its samples), pass@k, tokens and cost,
//! errors, plots and notes. Headings and prose live here; the tables come from
//! `report::sections` and are rendered by [`Html`].

use super::samples::filter_link;
use super::{escape, Html};
use crate::record::RunInfo;
use crate::report::headline::{self, Effect};
use crate::report::model::ReportModel;
use crate::report::plots::PlotSpec;
use crate::report::sections;
use crate::report::table::TableWriter;
use std::collections::BTreeSet;
use std::fmt::Write;

/// Title, provenance, a table of contents and the verdict lines.
pub fn top(out: &mut String, info: &RunInfo, model: &ReportModel) {
    let _ = write!(
        out,
        "<h1>ctxbench report — run <code>{}</code></h1>\n<p>Created {} by ctxbench {}. {} unit(s), {} variant(s).",
        escape(&info.run_id),
        escape(&info.created),
        escape(&info.ctxbench_version),
        model.samples.len(),
        model.variants.len()
    );
    if let Some(b) = &model.baseline {
        let _ = write!(out, " Baseline variant: <code>{}</code>.", escape(b));
    }
    out.push_str("</p>\n");
    if !info.providers.is_empty() {
        out.push_str("<ul>");
        for p in &info.providers {
            let _ = write!(
                out,
                "<li>{}: {} <code>{}</code></li>",
                escape(&p.role),
                escape(&p.provider),
                escape(&p.model)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str(
        "<nav><a href=\"#verdict\">verdict</a> · <a href=\"#summary\">summary</a> · \
         <a href=\"#comparison\">comparison</a> · <a href=\"#usage\">tokens and cost</a> · \
         <a href=\"#errors\">errors</a> · <a href=\"#plots\">plots</a> · \
         <a href=\"#samples\">samples</a></nav>\n",
    );
    verdict_block(out, model);
}

fn verdict_block(out: &mut String, model: &ReportModel) {
    if model.verdicts.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"verdict\">Verdict</h2>\n<ul class=\"verdict\">");
    for l in &model.verdicts {
        let _ = write!(
            out,
            "<li><b>{}</b> vs <code>{}</code><ul>",
            escape(&l.variant),
            escape(&l.baseline)
        );
        for i in &l.items {
            let class = match i.effect {
                Effect::Better => "good",
                Effect::Worse => "sig",
                Effect::Changed => "chg",
                Effect::NotSignificant | Effect::Same => "plain",
            };
            let _ = write!(out, "<li class=\"{class}\">{}</li>", escape(&i.text));
        }
        out.push_str("</ul></li>");
    }
    let _ = writeln!(
        out,
        "</ul>\n<p class=\"muted\">{}</p>",
        escape(headline::LEGEND)
    );
}

/// Summary, comparison, pass@k, usage and errors.
pub fn tables(out: &mut String, model: &ReportModel) {
    out.push_str(
        "<h2 id=\"summary\">Summary per variant</h2>\n<p>Headline metrics: mean per unit with its \
         95% bootstrap CI.</p>\n<div class=\"scroll\">",
    );
    Html.write_table(out, &sections::headline_summary(model));
    out.push_str(
        "</div><details id=\"all-metrics\"><summary>All metrics</summary><div class=\"scroll\">",
    );
    Html.write_table(out, &sections::summary(model));
    out.push_str("</div></details>\n");
    comparison_table(out, model);
    if !model.pass_k.is_empty() {
        out.push_str("<h2 id=\"pass-k\">pass@k and pass^k</h2>\n");
        Html.write_table(out, &sections::pass_k(model));
    }
    out.push_str(
        "<h2 id=\"usage\">Tokens and cost by role</h2>\n<p>Input includes cached tokens. \
         An unknown price is shown as unknown, never $0.</p>\n<div class=\"scroll\">",
    );
    Html.write_table(out, &sections::usage(model));
    let _ = writeln!(
        out,
        "</div><p>Run total: {} tokens; {}.</p>",
        model.totals.tokens_total(),
        escape(&model.totals.cost.headline.line())
    );
    out.push_str("<h2 id=\"errors\">Errors</h2>\n");
    if model.errors.is_empty() {
        out.push_str("<p>No unit failed.</p>\n");
        return;
    }
    let errors = sections::errors(model);
    out.push_str("<div class=\"scroll\">");
    Html.write_table_linked(out, &errors, "samples", &|r| {
        let e = &model.errors[r];
        let link = filter_link(&[("status", "error"), ("variant", &e.variant)]);
        Some((link, "show".to_string()))
    });
    out.push_str("</div>\n");
}

/// The eval a metric belongs to (`needle.recall` → `needle`), when it is one of `evals`.
fn eval_of<'a>(evals: &BTreeSet<&str>, metric: &'a str) -> Option<&'a str> {
    let (eval, _) = metric.split_once('.')?;
    evals.contains(eval).then_some(eval)
}

fn comparison_table(out: &mut String, model: &ReportModel) {
    let Some(b) = &model.baseline else { return };
    let _ = writeln!(
        out,
        "<h2 id=\"comparison\">Paired comparison vs <code>{}</code></h2>",
        escape(b)
    );
    if model.comparisons.is_empty() {
        out.push_str("<p>No variant shares units with the baseline.</p>\n");
        return;
    }
    out.push_str(
        "<p>Δ = variant − baseline on the same trace/eval/sample/repeat; 95% paired-bootstrap CI; \
         significant at p &lt; 0.05 (McNemar for pass/fail metrics); better/WORSE by the \
         metric's direction. Headline metrics first. Units of one trace are not independent: \
         when a trace gives several pairs, the CI and p resample whole traces (cluster \
         bootstrap), and with fewer than 6 traces there is no verdict (&ldquo;too few traces to \
         tell&rdquo;). &ldquo;samples&rdquo; shows the variant's units of that eval in the \
         samples table.</p>\n",
    );
    let (rows, dropped) = headline::ordered(&model.comparisons, &model.headline);
    let evals: BTreeSet<&str> = model.samples.iter().map(|s| s.eval).collect();
    out.push_str("<div class=\"scroll\">");
    Html.write_table_linked(
        out,
        &sections::comparison(&rows, "variant mean"),
        "samples",
        &|r| {
            let c = &rows[r];
            let mut terms = vec![("variant", c.candidate.as_str())];
            terms.extend(eval_of(&evals, &c.metric).map(|e| ("eval", e)));
            Some((filter_link(&terms), "samples".to_string()))
        },
    );
    out.push_str("</div>\n");
    if dropped > 0 {
        let _ = writeln!(
            out,
            "<p class=\"muted\">{dropped} other metric(s) with no change on any pair are not \
             listed (every value is in results.csv).</p>"
        );
    }
}

fn strip_xml_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// The plots (inline SVG) and the notes on those skipped.
pub fn plots(out: &mut String, svgs: &[(PlotSpec, String)], plot_notes: &[String]) {
    out.push_str("<h2 id=\"plots\">Plots</h2>\n");
    for (spec, svg) in svgs {
        let _ = writeln!(
            out,
            "<figure class=\"plot\" id=\"plot-{}\">{}<figcaption>{}</figcaption></figure>",
            escape(&spec.name),
            strip_xml_prolog(svg),
            escape(&spec.title)
        );
    }
    if svgs.is_empty() {
        out.push_str("<p class=\"muted\">No plot had data.</p>\n");
    }
    if !plot_notes.is_empty() {
        out.push_str("<ul class=\"muted\">");
        for n in plot_notes {
            let _ = write!(out, "<li>skipped: {}</li>", escape(n));
        }
        out.push_str("</ul>\n");
    }
}

/// Notes the reader should know (torn journal line, flagged units, …).
pub fn notes(out: &mut String, model: &ReportModel) {
    if model.notes.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"notes\">Notes</h2>\n<ul>");
    for n in &model.notes {
        let _ = write!(out, "<li>{}</li>", super::note(n));
    }
    out.push_str("</ul>\n");
}
