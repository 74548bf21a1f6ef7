//! `report.html`: one self-contained page — no external CSS, font, image or script, plots as
//! inline SVG, and a Content-Security-Policy that forbids every network request and allows
//! exactly one script, the page's own, by its SHA-256 hash (computed here from the script
//! text; no `unsafe-inline`).
//!
//! The page: verdict lines, summary per variant, paired comparison (each row links to its
//! samples), pass@k, tokens and cost, errors, plots, and the samples (`samples`: which are
//! shown in full, failures first, each with its timeline, summaries side by side with a word
//! diff, needle questions, answers and tool calls). Every data table is sortable (click a
//! header; numbers sort as numbers) and filterable, and the state lives in the URL fragment
//! (`#sort=TABLE:COLUMN:asc|desc&filter=TABLE:TEXT`), so a link reproduces a view
//! (`docs/report.md`). The script (`script.js`) only moves, hides and annotates existing
//! elements and writes text with `textContent`; it never parses data into markup.
//!
//! Every piece of text from a trace, a sample or the suite goes through [`escape`], the only
//! escaping of this format; tables (declared in `report::sections`) are rendered by [`Html`],
//! which escapes every header and cell, numbers included. Plot SVG comes from plotters, which
//! escapes its text itself.

mod diff;
mod page;
mod samples;
mod timeline;
mod view;

pub use diff::{side_by_side, word_diff, Op};
pub use samples::{
    select, summaries_in_files, Status, MAX_FAILED_PER_VARIANT, MAX_PROBLEM_SAMPLES,
    SHOWN_PAIR_KEYS,
};
pub use timeline::sparkline_scale;

use super::model::{fmt_ci, fmt_num, ReportModel};
use super::plots::{self, PlotSpec};
use super::table::{Align, Cell, Table, TableWriter};
use crate::record::RunInfo;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The page's one script (sorting, filtering, deep links).
pub const SCRIPT: &str = include_str!("script.js");
const STYLE: &str = include_str!("style.css");

/// Summary texts kept in files under the run directory, read for the samples the page shows:
/// text digest (`sha256:…`) → text. Inline texts need no entry.
pub type SummaryTexts = BTreeMap<String, String>;

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

/// A note line (written with Markdown code spans, as report.md shows it): text between pairs
/// of backticks becomes `<code>`, everything escaped; unpaired backticks stay literal.
pub fn note(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return escape(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, p) in parts.iter().enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(&escape(p));
            out.push_str("</code>");
        } else {
            out.push_str(&escape(p));
        }
    }
    out
}

/// Standard base64 with padding (RFC 4648), for the CSP hash source.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The CSP hash source of an inline script: `'sha256-<base64 of SHA-256 of its text>'`.
pub fn script_hash(script: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("'sha256-{}'", base64(&Sha256::digest(script.as_bytes())))
}

/// The page's Content-Security-Policy: nothing from the network, inline styles, `data:`
/// images, and the page's own script by hash.
pub fn csp() -> String {
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {}",
        script_hash(SCRIPT)
    )
}

/// `<thead>` with one escaped header cell per item.
fn th_row<'a>(out: &mut String, cells: impl IntoIterator<Item = &'a str>) {
    out.push_str("<thead><tr>");
    for c in cells {
        let _ = write!(out, "<th>{}</th>", escape(c));
    }
    out.push_str("</tr></thead>");
}

/// Sort key of a cell for the page's script: the raw number behind a number cell.
fn sort_value(c: &Cell) -> Option<f64> {
    match c {
        Cell::Int(v) => Some(*v as f64),
        Cell::Num(x) => Some(*x),
        Cell::MeanCi { mean, .. } => Some(*mean),
        Cell::Delta { delta, .. } => Some(*delta),
        Cell::Ci(ci) => ci.map(|c| c.lo),
        Cell::P(p) => *p,
        _ => None,
    }
    .filter(|v| v.is_finite())
}

/// A link cell for a row of [`Html::write_table_linked`]: `(href, text)`.
pub type RowLink = (String, String);

/// The extra link column of [`Html::write_table_linked`]: its header and the link of each row.
type LinkColumn<'a> = (&'a str, &'a dyn Fn(usize) -> Option<RowLink>);

/// HTML tables: `<table id=… class="data">` (sortable and filterable on the page), a header
/// row, right-aligned number cells (`class="num"`) carrying their raw value in `data-v`; a
/// missing value is a plain `–` cell.
#[derive(Clone, Copy, Debug, Default)]
pub struct Html;

impl Html {
    /// `table` with one more column, `header`, holding `link(row)` (an empty cell for `None`).
    pub fn write_table_linked(
        &self,
        out: &mut String,
        table: &Table,
        header: &str,
        link: &dyn Fn(usize) -> Option<RowLink>,
    ) {
        self.write(out, table, Some((header, link)));
    }

    fn write(&self, out: &mut String, table: &Table, extra: Option<LinkColumn<'_>>) {
        match table.id {
            Some(id) => {
                let _ = write!(out, "<table id=\"{}\" class=\"data\">", escape(id));
            }
            None => out.push_str("<table>"),
        }
        th_row(
            out,
            table
                .columns
                .iter()
                .map(|c| c.header.as_str())
                .chain(extra.map(|(h, _)| h)),
        );
        out.push_str("<tbody>");
        for (r, row) in table.rows.iter().enumerate() {
            out.push_str("<tr>");
            for (col, c) in table.columns.iter().zip(row) {
                let class = match col.align {
                    Align::Right => " class=\"num\"",
                    Align::Left => "",
                };
                let v = match sort_value(c) {
                    Some(x) => format!(" data-v=\"{}\"", escape(&x.to_string())),
                    None => String::new(),
                };
                let _ = match c {
                    Cell::Missing => write!(out, "<td>–</td>"),
                    Cell::Strong(s) => write!(out, "<td{class}><b>{}</b></td>", escape(s)),
                    Cell::Alert(s) => write!(out, "<td class=\"sig\">{}</td>", escape(s)),
                    Cell::Good(s) => write!(out, "<td class=\"good\">{}</td>", escape(s)),
                    Cell::Code(s) => write!(out, "<td{class}><code>{}</code></td>", escape(s)),
                    Cell::MeanCi { mean, ci, n } => write!(
                        out,
                        "<td{class}{v}>{} <span class=\"muted\">{} n={n}</span></td>",
                        escape(&fmt_num(*mean)),
                        escape(&fmt_ci(ci.as_ref()))
                    ),
                    other => write!(out, "<td{class}{v}>{}</td>", escape(&other.plain())),
                };
            }
            if let Some((_, link)) = extra {
                match link(r) {
                    Some((href, text)) => {
                        let _ = write!(
                            out,
                            "<td><a href=\"{}\">{}</a></td>",
                            escape(&href),
                            escape(&text)
                        );
                    }
                    None => out.push_str("<td></td>"),
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>\n");
    }
}

impl TableWriter for Html {
    fn write_table(&self, out: &mut String, table: &Table) {
        self.write(out, table, None);
    }
}

/// Render `report.html`, drawing the SVG plots itself (summary texts kept in files are not
/// loaded: the page names their files).
pub fn render(info: &RunInfo, model: &ReportModel) -> String {
    let (specs, mut notes) = plots::plan(model);
    let mut svgs = Vec::new();
    for spec in specs {
        match plots::render_svg(model, &spec) {
            Ok(svg) => svgs.push((spec, svg)),
            Err(err) => notes.push(format!("{}: cannot draw: {err}", spec.name)),
        }
    }
    render_page(info, model, &svgs, &notes, &SummaryTexts::new())
}

/// Render `report.html` with plots already drawn (`(spec, svg)`) and notes on skipped plots.
pub fn render_with_plots(
    info: &RunInfo,
    model: &ReportModel,
    svgs: &[(PlotSpec, String)],
    plot_notes: &[String],
) -> String {
    render_page(info, model, svgs, plot_notes, &SummaryTexts::new())
}

/// Render `report.html` with plots already drawn and the summary texts read from files (see
/// [`summaries_in_files`]).
pub fn render_page(
    info: &RunInfo,
    model: &ReportModel,
    svgs: &[(PlotSpec, String)],
    plot_notes: &[String],
    texts: &SummaryTexts,
) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>ctxbench report — {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&csp()),
        escape(&info.run_id)
    );
    page::top(&mut out, info, model);
    page::notes(&mut out, model);
    page::tables(&mut out, model);
    page::plots(&mut out, svgs, plot_notes);
    samples::section(&mut out, model, texts);
    // The script text goes in verbatim: its hash is in the CSP, and it holds no `</script`.
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }

    #[test]
    fn notes_show_code_spans_as_code_not_backticks() {
        assert_eq!(
            note("variant `aggressive`: priced as `<m>` & more"),
            "variant <code>aggressive</code>: priced as <code>&lt;m&gt;</code> &amp; more"
        );
        // An odd backtick is text, and nothing becomes markup.
        assert_eq!(note("a ` b <i>"), "a ` b &lt;i&gt;");
    }

    #[test]
    fn csp_hash_is_the_base64_sha256_of_the_script() {
        // RFC 4648 test vectors, and SHA-256 of "" in base64 (as browsers print it).
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
        assert_eq!(
            script_hash(""),
            "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
        );
        assert!(csp().ends_with(&format!("script-src {}", script_hash(SCRIPT))));
        assert!(!csp().contains("unsafe-inline'; script") && !csp().contains("script-src 'unsafe"));
        assert!(!SCRIPT.to_ascii_lowercase().contains("</script"));
        assert!(!SCRIPT.contains("innerHTML") && !SCRIPT.contains("outerHTML"));
        assert!(!SCRIPT.contains("insertAdjacentHTML") && !SCRIPT.contains("document.write"));
    }

    #[test]
    fn table_cells_are_escaped_whatever_their_kind() {
        use crate::report::table::Column;
        let mut t = Table::new(Some("t"), vec![Column::text("<h>"), Column::num("p")]);
        t.push(vec![Cell::Strong("<b>".into()), Cell::P(Some(0.0001))]);
        t.push(vec![Cell::Alert("yes".into()), Cell::Missing]);
        assert_eq!(
            Html.render(&t),
            "<table id=\"t\" class=\"data\"><thead><tr><th>&lt;h&gt;</th><th>p</th></tr></thead>\
             <tbody><tr><td><b>&lt;b&gt;</b></td><td class=\"num\" data-v=\"0.0001\">&lt;0.001</td></tr>\
             <tr><td class=\"sig\">yes</td><td>–</td></tr></tbody></table>\n"
        );
        let linked = {
            let mut out = String::new();
            Html.write_table_linked(&mut out, &t, "go", &|r| {
                (r == 0).then(|| ("#a\"<".to_string(), "<x>".to_string()))
            });
            out
        };
        assert!(linked.contains("<th>go</th>"));
        assert!(linked.contains("<td><a href=\"#a&quot;&lt;\">&lt;x&gt;</a></td></tr>"));
        assert!(linked.contains("<td>–</td><td></td></tr>"));
    }
}
