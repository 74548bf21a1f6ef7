//! `report.html`: one self-contained page (no script, no external CSS, font or image; plots as
//! inline SVG; a Content-Security-Policy that forbids every network request) with the summary
//! table, the paired comparison, pass@k, the token/cost split, errors, plots and a per-sample
//! context timeline (tokens per model call and what was evicted, cleared or summarized there).
//!
//! Every piece of text that comes from a trace, a sample or the suite goes through [`escape`],
//! the only escaping of this format; tables (declared in `sections`) are rendered by [`Html`],
//! which escapes every header and cell, numbers included. Plot SVG comes from plotters, which
//! escapes its text itself.

use super::headline::{self, Effect};
use super::model::{fmt_ci, fmt_num, ReportModel};
use super::plots::{self, PlotSpec};
use super::sections;
use super::table::{Align, Cell, Table, TableWriter};
use crate::record::{RunInfo, Sample};
use std::fmt::Write;

/// Most samples given a per-sample timeline section.
pub const MAX_TIMELINE_SAMPLES: usize = 200;
/// Evidence JSON longer than this is cut in the per-sample view.
const MAX_EVIDENCE_CHARS: usize = 4000;

/// The markup language [`escape_markup`] writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Markup {
    Html,
    /// XML 1.0 (JUnit): `&apos;`, and control characters other than tab and newline, which
    /// XML 1.0 does not allow, replaced by U+FFFD.
    Xml,
}

/// Escape text for element content and quoted attribute values of HTML or XML: the one
/// escaping function of the HTML report and of the JUnit XML.
pub fn escape_markup(text: &str, markup: Markup) -> String {
    let xml = markup == Markup::Xml;
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' if xml => out.push_str("&apos;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if xml && (c as u32) < 0x20 => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Escape text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    escape_markup(text, Markup::Html)
}

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1d2430}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #d8dde6;padding-bottom:.3rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #d8dde6;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#f1f4f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
.sig{font-weight:600;color:#b3261e}.good{font-weight:600;color:#146c2e}.muted{color:#6b7280}.chg{font-weight:600}.scroll{overflow-x:auto}ul.verdict li{margin:.3rem 0}
figure{margin:1rem 0}figure svg{max-width:100%;height:auto;border:1px solid #e5e7eb}
details{margin:.4rem 0;border:1px solid #e5e7eb;padding:.3rem .6rem;border-radius:4px}
summary{cursor:pointer}pre{white-space:pre-wrap;word-break:break-word;background:#f7f8fa;padding:.5rem;max-height:24rem;overflow:auto}
.ev{color:#b3261e;font-weight:600}
"#;

fn td_num(out: &mut String, v: impl std::fmt::Display) {
    let _ = write!(out, "<td class=\"num\">{}</td>", escape(&v.to_string()));
}

fn td(out: &mut String, text: &str) {
    let _ = write!(out, "<td>{}</td>", escape(text));
}

fn th_row<'a>(out: &mut String, cells: impl IntoIterator<Item = &'a str>) {
    out.push_str("<thead><tr>");
    for c in cells {
        let _ = write!(out, "<th>{}</th>", escape(c));
    }
    out.push_str("</tr></thead>");
}

/// HTML tables: `<table id=…>`, a header row, right-aligned number cells (`class="num"`);
/// a missing value is a plain `–` cell.
#[derive(Clone, Copy, Debug, Default)]
pub struct Html;

impl TableWriter for Html {
    fn write_table(&self, out: &mut String, table: &Table) {
        match table.id {
            Some(id) => {
                let _ = write!(out, "<table id=\"{}\">", escape(id));
            }
            None => out.push_str("<table>"),
        }
        th_row(out, table.columns.iter().map(|c| c.header.as_str()));
        out.push_str("<tbody>");
        for row in &table.rows {
            out.push_str("<tr>");
            for (col, c) in table.columns.iter().zip(row) {
                let class = match col.align {
                    Align::Right => " class=\"num\"",
                    Align::Left => "",
                };
                let _ = match c {
                    Cell::Missing => write!(out, "<td>–</td>"),
                    Cell::Strong(s) => write!(out, "<td{class}><b>{}</b></td>", escape(s)),
                    Cell::Alert(s) => write!(out, "<td class=\"sig\">{}</td>", escape(s)),
                    Cell::Good(s) => write!(out, "<td class=\"good\">{}</td>", escape(s)),
                    Cell::Code(s) => write!(out, "<td{class}><code>{}</code></td>", escape(s)),
                    Cell::MeanCi { mean, ci, n } => write!(
                        out,
                        "<td{class}>{} <span class=\"muted\">{} n={n}</span></td>",
                        escape(&fmt_num(*mean)),
                        escape(&fmt_ci(ci.as_ref()))
                    ),
                    other => write!(out, "<td{class}>{}</td>", escape(&other.plain())),
                };
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>\n");
    }
}

/// Render `report.html`, drawing the SVG plots itself.
pub fn render(info: &RunInfo, model: &ReportModel) -> String {
    let (specs, mut notes) = plots::plan(model);
    let mut svgs = Vec::new();
    for spec in specs {
        match plots::render_svg(model, &spec) {
            Ok(svg) => svgs.push((spec, svg)),
            Err(err) => notes.push(format!("{}: cannot draw: {err}", spec.name)),
        }
    }
    render_with_plots(info, model, &svgs, &notes)
}

/// Render `report.html` with plots already drawn (`(spec, svg)`) and notes on skipped plots.
pub fn render_with_plots(
    info: &RunInfo,
    model: &ReportModel,
    svgs: &[(PlotSpec, String)],
    plot_notes: &[String],
) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>ctxbench report — {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&info.run_id)
    );
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

    verdict_block(&mut out, model);
    summary_table(&mut out, model);
    comparison_table(&mut out, model);
    pass_k_table(&mut out, model);
    usage_table(&mut out, model);
    errors_table(&mut out, model);

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

    timelines(&mut out, model);

    if !model.notes.is_empty() {
        out.push_str("<h2 id=\"notes\">Notes</h2>\n<ul>");
        for n in &model.notes {
            let _ = write!(out, "<li>{}</li>", escape(n));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn strip_xml_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

fn verdict_block(out: &mut String, model: &ReportModel) {
    if model.verdicts.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"verdict\">Verdict</h2>\n<ul class=\"verdict\">");
    for l in &model.verdicts {
        let _ = write!(
            out,
            "<li><b>{}</b> vs <code>{}</code>:",
            escape(&l.variant),
            escape(&l.baseline)
        );
        for i in &l.items {
            let class = match i.effect {
                Effect::Better => "good",
                Effect::Worse => "sig",
                Effect::Changed => "chg",
                Effect::NotSignificant | Effect::Same => "muted",
            };
            let _ = write!(out, " <span class=\"{class}\">{}</span>;", escape(&i.text));
        }
        out.push_str("</li>");
    }
    let _ = writeln!(
        out,
        "</ul>\n<p class=\"muted\">{}</p>",
        escape(headline::LEGEND)
    );
}

fn summary_table(out: &mut String, model: &ReportModel) {
    out.push_str(
        "<h2 id=\"summary\">Summary per variant</h2>\n<p>Headline metrics: mean per unit with its \
         95% bootstrap CI.</p>\n",
    );
    Html.write_table(out, &sections::headline_summary(model));
    out.push_str(
        "<details id=\"all-metrics\"><summary>All metrics</summary><div class=\"scroll\">",
    );
    Html.write_table(out, &sections::summary(model));
    out.push_str("</div></details>\n");
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
         tell&rdquo;).</p>\n",
    );
    let (rows, dropped) = headline::ordered(&model.comparisons, &model.headline);
    Html.write_table(out, &sections::comparison(&rows, "variant mean"));
    if dropped > 0 {
        let _ = writeln!(
            out,
            "<p class=\"muted\">{dropped} other metric(s) with no change on any pair are not \
             listed (every value is in results.csv).</p>"
        );
    }
}

fn pass_k_table(out: &mut String, model: &ReportModel) {
    if model.pass_k.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"pass-k\">pass@k and pass^k</h2>\n");
    Html.write_table(out, &sections::pass_k(model));
}

fn usage_table(out: &mut String, model: &ReportModel) {
    out.push_str(
        "<h2 id=\"usage\">Tokens and cost by role</h2>\n<p>Input includes cached tokens. \
         An unknown price is shown as unknown, never $0.</p>\n",
    );
    Html.write_table(out, &sections::usage(model));
    let _ = writeln!(
        out,
        "<p>Run total: {} tokens; {}.</p>",
        model.totals.tokens_total(),
        escape(&model.totals.cost.headline.line())
    );
}

fn errors_table(out: &mut String, model: &ReportModel) {
    out.push_str("<h2 id=\"errors\">Errors</h2>\n");
    if model.errors.is_empty() {
        out.push_str("<p>No unit failed.</p>\n");
        return;
    }
    Html.write_table(out, &sections::errors(model));
}

/// A small bar chart of tokens per model call (red bars: calls with a compaction event).
/// Top of a sparkline's scale: the largest value, unless a few outliers would flatten every
/// other bar; then 1.5 × the 90th percentile, and the bars above it are drawn clipped (with a
/// black cap, and said so in their tooltip and in a label).
pub fn sparkline_scale(values: &[u64]) -> (f64, bool) {
    let max = values.iter().copied().max().unwrap_or(1).max(1) as f64;
    let mut sorted: Vec<u64> = values.to_vec();
    sorted.sort_unstable();
    if sorted.len() < 5 {
        return (max, false);
    }
    let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)] as f64;
    let cap = (p90 * 1.5).max(1.0);
    if max > 2.0 * cap {
        (cap, true)
    } else {
        (max, false)
    }
}

fn timeline_svg(s: &Sample) -> String {
    let (w, h) = (720.0f64, 120.0f64);
    let n = s.timeline.len().max(1) as f64;
    let values: Vec<u64> = s
        .timeline
        .iter()
        .flat_map(|p| std::iter::once(p.tokens).chain(p.reference_tokens))
        .collect();
    let (max, clipped) = sparkline_scale(&values);
    let bw = w / n;
    let mut svg = format!(
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"context tokens per model call\">"
    );
    let mut reference = String::new();
    for (i, p) in s.timeline.iter().enumerate() {
        let x = i as f64 * bw;
        let over = p.tokens as f64 > max;
        let bh = (p.tokens as f64).min(max) / max * (h - 4.0);
        let fill = if p.events.is_empty() {
            "#4c78a8"
        } else {
            "#d62728"
        };
        let _ = write!(
            svg,
            "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{bh:.2}\" fill=\"{fill}\"><title>call {} (message {}): {} tokens{}{}</title></rect>",
            h - bh,
            (bw - 0.5).max(0.5),
            i + 1,
            p.trace_index,
            p.tokens,
            if over { " (bar clipped)" } else { "" },
            if p.events.is_empty() {
                String::new()
            } else {
                format!("; {}", escape(&p.events.join(", ")))
            }
        );
        if over {
            let _ = write!(
                svg,
                "<rect x=\"{x:.2}\" y=\"0\" width=\"{:.2}\" height=\"4\" fill=\"#000\"/>",
                (bw - 0.5).max(0.5)
            );
        }
        if let Some(r) = p.reference_tokens {
            let y = h - (r as f64).min(max) / max * (h - 4.0);
            let _ = write!(reference, "{:.2},{y:.2} {:.2},{y:.2} ", x, x + bw);
        }
    }
    if !reference.is_empty() {
        let _ = write!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>",
            reference.trim_end()
        );
    }
    if clipped {
        let _ = write!(
            svg,
            "<text x=\"{:.0}\" y=\"14\" text-anchor=\"end\" font-size=\"11\" fill=\"#000\">scale \
             clipped at {max:.0} tokens; black caps mark taller calls</text>",
            w - 4.0
        );
    }
    svg.push_str("</svg>");
    svg
}

fn timelines(out: &mut String, model: &ReportModel) {
    out.push_str(
        "<h2 id=\"timelines\">Per-sample context timelines</h2>\n<p>Tokens of the view sent at each \
         model call (red: a compaction happened at that call; dashed: the same call with no \
         compression).</p>\n",
    );
    let with: Vec<&Sample> = model
        .samples
        .iter()
        .filter(|s| !s.timeline.is_empty())
        .collect();
    if with.is_empty() {
        out.push_str("<p class=\"muted\">No sample recorded a timeline.</p>\n");
        return;
    }
    for s in with.iter().take(MAX_TIMELINE_SAMPLES) {
        let compactions: Vec<String> = s
            .compactions
            .iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect();
        let _ = writeln!(
            out,
            "<details class=\"sample\"><summary><code>{}</code> — trace <code>{}</code>, variant \
             <code>{}</code>, {} <code>{}</code> #{}{}{}</summary>",
            escape(&s.unit_id),
            escape(&s.trace_id),
            escape(&s.variant),
            escape(&s.eval),
            escape(&s.sample),
            s.repeat,
            if compactions.is_empty() {
                String::new()
            } else {
                format!(" — {}", escape(&compactions.join(", ")))
            },
            match &s.error {
                Some(e) => format!(" — <span class=\"ev\">error {}</span>", escape(&e.kind)),
                None => String::new(),
            }
        );
        if !s.scores.is_empty() {
            out.push_str("<p>scores: ");
            let scores: Vec<String> = s
                .scores
                .iter()
                .map(|(k, v)| format!("{} = {}", escape(k), fmt_num(*v)))
                .collect();
            out.push_str(&scores.join(", "));
            if let Some(p) = s.passed {
                let _ = write!(out, "; passed = {p}");
            }
            out.push_str("</p>\n");
        }
        if let Some(e) = &s.error {
            let _ = writeln!(
                out,
                "<p class=\"ev\">{}: {}</p>",
                escape(&e.kind),
                escape(&e.message)
            );
        }
        out.push_str(&timeline_svg(s));
        out.push_str("\n<table class=\"timeline-table\">");
        th_row(
            out,
            [
                "call",
                "message",
                "tokens",
                "no compression",
                "events",
                "what happened",
            ],
        );
        out.push_str("<tbody>");
        for (i, p) in s.timeline.iter().enumerate() {
            out.push_str("<tr>");
            td_num(out, i + 1);
            td_num(out, p.trace_index);
            td_num(out, p.tokens);
            match p.reference_tokens {
                Some(r) => td_num(out, r),
                None => td(out, "–"),
            }
            if p.events.is_empty() {
                out.push_str("<td></td>");
            } else {
                let _ = writeln!(
                    out,
                    "<td class=\"ev\">{}</td>",
                    escape(&p.events.join(", "))
                );
            }
            td(out, &p.details.join("\n"));
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>\n");
        if !s.evidence.is_null() {
            let mut ev = serde_json::to_string_pretty(&s.evidence).unwrap_or_default();
            if ev.chars().count() > MAX_EVIDENCE_CHARS {
                ev = ev.chars().take(MAX_EVIDENCE_CHARS).collect::<String>() + "\n…(cut)";
            }
            let _ = writeln!(out, "<p>evidence:</p><pre>{}</pre>", escape(&ev));
        }
        out.push_str("</details>\n");
    }
    if with.len() > MAX_TIMELINE_SAMPLES {
        let _ = writeln!(
            out,
            "<p class=\"muted\">{} more sample(s) with a timeline are not shown; every sample is in \
             results.csv and samples.jsonl.</p>",
            with.len() - MAX_TIMELINE_SAMPLES
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scale_clips_a_lone_spike_only() {
        let mut v = vec![1000u64; 30];
        assert_eq!(sparkline_scale(&v), (1000.0, false));
        v.push(252_000);
        let (top, clipped) = sparkline_scale(&v);
        assert!(clipped);
        assert_eq!(top, 1500.0);
        assert_eq!(
            sparkline_scale(&[1, 2, 300]),
            (300.0, false),
            "too few to call outliers"
        );
    }

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }

    #[test]
    fn table_cells_are_escaped_whatever_their_kind() {
        use crate::report::table::Column;
        let mut t = Table::new(Some("t"), vec![Column::text("<h>"), Column::num("p")]);
        t.push(vec![Cell::Strong("<b>".into()), Cell::P(Some(0.0001))]);
        t.push(vec![Cell::Alert("yes".into()), Cell::Missing]);
        assert_eq!(
            Html.render(&t),
            "<table id=\"t\"><thead><tr><th>&lt;h&gt;</th><th>p</th></tr></thead><tbody>\
             <tr><td><b>&lt;b&gt;</b></td><td class=\"num\">&lt;0.001</td></tr>\
             <tr><td class=\"sig\">yes</td><td>–</td></tr></tbody></table>\n"
        );
    }
}
