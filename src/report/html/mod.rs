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
//! The page is built with `maud::html!` templates, which escape every value spliced into them
//! (`&`, `<`, `>`, `"`; every attribute value is double-quoted), so text from a trace, a sample
//! or the suite cannot become markup by construction: there is no escaping function to forget.
//! The only unescaped insertions are `PreEscaped`, each commented where it stands: the page's
//! own style sheet and script (constants of this crate) and the plot SVG (drawn by plotters
//! from the run's numbers, which escapes its text itself). Tables (declared in
//! `report::sections`) are rendered by [`Html`], header and cell alike, numbers included.

mod diff;
mod page;
mod samples;
mod timeline;
mod view;

pub use diff::{side_by_side, word_diff, Op};
pub use samples::{
    problems_shown, select, summaries_in_files, Caps, LeftOut, Select, Status, FULL_CAPS_VARIANTS,
    MAX_ERRORED_SAMPLES, MAX_FAILED_PER_VARIANT, MAX_FLAGGED_PER_VARIANT, MIN_PER_VARIANT,
    SHOWN_PAIR_KEYS,
};
pub use timeline::sparkline_scale;

use super::model::ReportModel;
use super::plots::{self, PlotSpec};
use super::table::{Align, Cell, Table, TableWriter};
use crate::metrics::format::fmt_mean_ci;
use crate::record::RunInfo;
use maud::{html, PreEscaped, Render, DOCTYPE};
use std::collections::BTreeMap;

/// A piece of the page: markup built by `maud::html!`, which escapes every value spliced into
/// it; the only unescaped text is what this module marks `PreEscaped` (style, script, plot SVG).
pub type Fragment = maud::Markup;

/// The page's one script (sorting, filtering, deep links).
pub const SCRIPT: &str = include_str!("script.js");
const STYLE: &str = include_str!("style.css");

/// Summary texts kept in files under the run directory, read for the samples the page shows:
/// text digest (`sha256:…`) → text. Inline texts need no entry.
pub type SummaryTexts = BTreeMap<String, String>;

/// Text spliced into the page escaped exactly as maud escapes it (`&`, `<`, `>`, `"`), copying
/// the runs between those bytes whole instead of one byte at a time: for the long texts of the
/// samples' views (summaries, evidence, the per-call details).
pub struct Esc<'a>(pub &'a str);

impl maud::Render for Esc<'_> {
    fn render_to(&self, out: &mut String) {
        let text = self.0;
        let mut start = 0;
        for (i, &b) in text.as_bytes().iter().enumerate() {
            let entity = match b {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => continue,
            };
            // `i` is an ASCII byte's position: a character boundary.
            out.push_str(&text[start..i]);
            out.push_str(entity);
            start = i + 1;
        }
        out.push_str(&text[start..]);
    }
}

/// The markup language [`escape_markup`] writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Markup {
    Html,
    /// XML 1.0 (JUnit): `&apos;`, and control characters other than tab and newline (which
    /// XML 1.0 does not allow) and bidi controls shown as the terminal shows them (`\x1b`,
    /// `\u{202e}`: `output::push_visible`).
    Xml,
}

/// Escape text for element content and quoted attribute values of HTML or XML. The JUnit XML
/// writer's escaping; the HTML page does not use it (its templates escape, see the module doc).
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
            c if xml && crate::output::is_control(c) => crate::output::push_visible(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// A note line (written with Markdown code spans, as report.md shows it): text between pairs
/// of backticks becomes `<code>`, everything else text; unpaired backticks stay literal.
pub fn note(text: &str) -> Fragment {
    let segments = super::markdown::note_segments(text);
    html! {
        @match &segments {
            None => (text),
            Some(segments) => @for (is_code, p) in segments {
                @if *is_code { code { (p) } } @else { (p) }
            },
        }
    }
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

/// `<thead>` with one header cell per item.
fn th_row<'a>(cells: impl IntoIterator<Item = &'a str>) -> Fragment {
    html! { thead { tr { @for c in cells { th { (c) } } } } }
}

/// Sort key of a cell for the page's script: the raw number behind a number cell.
fn sort_value(c: &Cell) -> Option<f64> {
    match c {
        Cell::Int(v) => Some(*v as f64),
        Cell::Num(x) => Some(*x),
        Cell::MeanCi { mean, .. } => Some(*mean),
        Cell::Delta { delta, .. } => Some(*delta),
        Cell::Ci { ci, .. } => ci.map(|c| c.lo),
        Cell::P(p) => *p,
        _ => None,
    }
    .filter(|v| v.is_finite())
}

/// A link cell for a row of [`Html::table_linked`]: `(href, text)`.
pub type RowLink = (String, String);

/// The extra link column of [`Html::table_linked`]: its header and the link of each row.
type LinkColumn<'a> = (&'a str, &'a dyn Fn(usize) -> Option<RowLink>);

/// HTML tables: `<table id=… class="data">` (sortable and filterable on the page), a header
/// row, right-aligned number cells (`class="num"`) carrying their raw value in `data-v`; a
/// missing value is a plain `–` cell.
#[derive(Clone, Copy, Debug, Default)]
pub struct Html;

impl Html {
    /// `table` as a fragment of the page.
    pub fn table(table: &Table) -> Fragment {
        Self::markup(table, None)
    }

    /// `table` with one more column, `header`, holding `link(row)` (an empty cell for `None`).
    pub fn table_linked(
        table: &Table,
        header: &str,
        link: &dyn Fn(usize) -> Option<RowLink>,
    ) -> Fragment {
        Self::markup(table, Some((header, link)))
    }

    fn markup(table: &Table, extra: Option<LinkColumn<'_>>) -> Fragment {
        let headers = table
            .columns
            .iter()
            .map(|c| c.header.as_str())
            .chain(extra.map(|(h, _)| h));
        html! {
            table id=[table.id] class=[table.id.map(|_| "data")] {
                (th_row(headers))
                tbody {
                    @for (r, row) in table.rows.iter().enumerate() {
                        tr {
                            @for (col, c) in table.columns.iter().zip(row) {
                                (cell(col.align, c))
                            }
                            @if let Some((_, link)) = extra {
                                @match link(r) {
                                    Some((href, text)) => td { a href=(href) { (text) } },
                                    None => td {},
                                }
                            }
                        }
                    }
                }
            }
            "\n"
        }
    }
}

/// One `<td>`: number cells right-aligned (`class="num"`) with their raw value in `data-v`.
fn cell(align: Align, c: &Cell) -> Fragment {
    let num = (align == Align::Right).then_some("num");
    let v = sort_value(c).map(|x| x.to_string());
    html! {
        @match c {
            Cell::Missing => td { "–" },
            Cell::Strong(s) => td class=[num] { b { (s) } },
            Cell::Alert(s) => td class="sig" { (s) },
            Cell::Good(s) => td class="good" { (s) },
            Cell::Code(s) => td class=[num] { code { (s) } },
            Cell::MeanCi { mean, ci, n } => td class=[num] data-v=[v] {
                @let (m, ci) = fmt_mean_ci(*mean, ci.as_ref());
                (m) " " span class="muted" { (ci) " n=" (n) }
            },
            other => td class=[num] data-v=[v] { (other.plain()) },
        }
    }
}

impl TableWriter for Html {
    fn write_table(&self, out: &mut String, table: &Table) {
        Html::table(table).render_to(out);
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
/// [`summaries_in_files`]): [`write_page`] into a string.
pub fn render_page(
    info: &RunInfo,
    model: &ReportModel,
    svgs: &[(PlotSpec, String)],
    plot_notes: &[String],
    texts: &SummaryTexts,
) -> String {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_page(&mut out, info, model, svgs, plot_notes, texts);
    // Every part is a `String`: the bytes are UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Write `report.html` to `w` with plots already drawn (`(spec, svg)`), notes on skipped plots
/// and the summary texts read from files: the page up to the "Samples" section, the section
/// (each sample's view as it is drawn, `samples::write_section`), then the rest. The page is
/// never one string: the views of a big run are megabytes, and copying them into the page
/// (then the page to the file) touched that much fresh memory twice.
pub fn write_page(
    w: &mut dyn std::io::Write,
    info: &RunInfo,
    model: &ReportModel,
    svgs: &[(PlotSpec, String)],
    plot_notes: &[String],
    texts: &SummaryTexts,
) -> std::io::Result<()> {
    let mut inert = Inert {
        inner: w,
        tail: Vec::new(),
    };
    // Everything the page holds goes through the writer that shows control characters.
    let w: &mut dyn std::io::Write = &mut inert;

    // `<html>` and `<body>` are opened here and closed after the samples by hand (PreEscaped:
    // constant tags): the markup `html! { html lang="en" { … body { … } … } }` renders.
    let before = html! {
        (DOCTYPE) "\n"
        (PreEscaped("<html lang=\"en\">"))
        "\n"
        (head(info))
        "\n"
        (PreEscaped("<body>"))
        "\n"
        (page::top(info, model))
        (page::notes(model))
        (page::tables(model))
        (page::plots(svgs, plot_notes))
    };
    w.write_all(before.0.as_bytes())?;
    drop(before);
    samples::write_section(w, model, texts)?;
    let after = html! {
        // PreEscaped: the page's own script, a constant of this crate (script.js); its hash is
        // in the CSP, and it holds no `</script` (tested below).
        script { (PreEscaped(SCRIPT)) }
        "\n"
        (PreEscaped("</body>"))
        "\n"
        (PreEscaped("</html>"))
        "\n"
    };
    w.write_all(after.0.as_bytes())?;
    inert.finish()
}

/// A writer that shows the control and bidi characters of what passes through it
/// ([`crate::output::visible_in_page`]: `\x1b`, `\u{202e}`), as the terminal does: maud escapes
/// markup, not an ESC or a right-to-left override from a trace, which would reorder what a
/// reader sees. The page's own text (markup, style, script, plots) holds none, so every one is
/// a trace's. Bytes of a character split between two writes wait for the rest.
struct Inert<'w> {
    inner: &'w mut dyn std::io::Write,
    tail: Vec<u8>,
}

impl Inert<'_> {
    /// Write a character left incomplete at the end (never, from `write_parts`), as it is.
    fn finish(mut self) -> std::io::Result<()> {
        let tail = std::mem::take(&mut self.tail);
        self.inner.write_all(&tail)
    }
}

impl std::io::Write for Inert<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let joined;
        let bytes = if self.tail.is_empty() {
            buf
        } else {
            let mut t = std::mem::take(&mut self.tail);
            t.extend_from_slice(buf);
            joined = t;
            &joined[..]
        };
        let (text, rest) = match std::str::from_utf8(bytes) {
            Ok(text) => (text, &[][..]),
            // Cut inside a character: its first bytes wait for the next write.
            Err(e) if e.error_len().is_none() => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                // `valid_up_to` ends on a character boundary.
                (std::str::from_utf8(valid).unwrap_or_default(), rest)
            }
            // Not UTF-8 (the page is written from strings: never): passed on as it is.
            Err(_) => {
                self.inner.write_all(bytes)?;
                return Ok(buf.len());
            }
        };
        self.inner
            .write_all(crate::output::visible_in_page(text).as_bytes())?;
        self.tail.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The page's `<head>`.
fn head(info: &RunInfo) -> Fragment {
    html! {
        head {
            "\n" meta charset="utf-8";
            "\n" meta http-equiv="Content-Security-Policy" content=(csp());
            "\n" meta name="viewport" content="width=device-width, initial-scale=1";
            "\n" title { "ctxbench report — " (info.run_id) }
            // PreEscaped: the page's own style sheet, a constant of this crate (style.css).
            "\n" style { (PreEscaped(STYLE)) }
            "\n"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page as one `html!` template (how it was rendered before [`write_page`] wrote it in
    /// parts): the parts must add up to exactly this markup.
    fn page_in_one_piece(
        info: &RunInfo,
        model: &ReportModel,
        svgs: &[(PlotSpec, String)],
        plot_notes: &[String],
        texts: &SummaryTexts,
    ) -> String {
        let mut samples = Vec::new();
        samples::write_section(&mut samples, model, texts).unwrap();
        let samples = PreEscaped(String::from_utf8(samples).unwrap());
        html! {
            (DOCTYPE) "\n"
            html lang="en" {
                "\n"
                (head(info))
                "\n"
                body {
                    "\n"
                    (page::top(info, model))
                    (page::notes(model))
                    (page::tables(model))
                    (page::plots(svgs, plot_notes))
                    (samples)
                    script { (PreEscaped(SCRIPT)) }
                    "\n"
                }
                "\n"
            }
            "\n"
        }
        .into_string()
    }

    #[test]
    fn the_page_written_in_parts_is_the_page_in_one_piece() {
        use crate::record::Sample;
        let mut info = RunInfo::new("r<1>");
        info.variants = vec!["a".into(), "b".into()];
        info.baseline = Some("a".into());
        for samples in [0, 1, 40] {
            let rows: Vec<Sample> = (0..samples)
                .map(|i| {
                    Sample::builder()
                        .unit_id(format!("u{i}"))
                        .trace(format!("t{}", i / 4))
                        .variant(if i % 2 == 0 { "a" } else { "b" })
                        .eval("needle")
                        .sample(format!("s{}", (i / 2) % 2))
                        .passed(i % 3 != 0)
                        .build()
                })
                .collect();
            let model = ReportModel::build(&info, rows);
            let notes = vec!["a <note> & more".to_string()];
            let texts = SummaryTexts::new();
            let page = render_page(&info, &model, &[], &notes, &texts);
            assert_eq!(page, page_in_one_piece(&info, &model, &[], &notes, &texts));
            assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n<head>"));
            assert!(page.ends_with("</script>\n</body>\n</html>\n"));
            assert_eq!(page.contains("id=\"samples-table\""), samples > 0);
        }
    }

    /// A trace id with an ESC, an OSC title sequence and a right-to-left override reaches the
    /// page visibly (`\x1b`, `\u{202e}`), as on the terminal; a CRLF of recorded text and the
    /// page's own markup are unchanged; a character split between two writes is whole.
    #[test]
    fn control_and_bidi_characters_of_a_trace_are_shown_on_the_page() {
        use crate::record::Sample;
        let mut info = RunInfo::new("r");
        info.variants = vec!["a".into()];
        let hostile = "t\u{1b}[2J\u{1b}]0;TITLE\u{7}\u{202e}gnp.exe\r\nnext";
        let mut s = Sample::builder()
            .unit_id("u")
            .trace(hostile)
            .variant("a")
            .eval("needle")
            .build();
        s.error = Some(crate::record::UnitError {
            kind: "x".into(),
            message: hostile.into(),
        });
        let model = ReportModel::build(&info, vec![s]);
        let page = render_page(&info, &model, &[], &[], &SummaryTexts::new());
        assert!(page.contains("t\\x1b[2J\\x1b]0;TITLE\\x07\\u{202e}gnp.exe\r\nnext"));
        assert!(
            !page.contains(['\u{1b}', '\u{7}', '\u{202e}']),
            "raw control left"
        );
        assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n<head>"));
        // Through the writer in pieces cut inside a character: the same bytes.
        let whole = "a\u{202e}é✓\u{1b}b".as_bytes();
        let mut out = Vec::new();
        let mut w = Inert {
            inner: &mut out,
            tail: Vec::new(),
        };
        for piece in whole.chunks(1) {
            std::io::Write::write_all(&mut w, piece).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "a\\u{202e}é✓\\x1bb");
    }

    #[test]
    fn esc_escapes_as_maud_does() {
        for t in [
            "",
            "plain",
            r#"<script>alert("x")</script> & 'y'"#,
            "&&<<>>\"\"",
            "naïve → ü <é> & ✓\n\ttabs",
            "ends with &",
        ] {
            assert_eq!(
                html! { p title=(Esc(t)) { (Esc(t)) } }.into_string(),
                html! { p title=(t) { (t) } }.into_string()
            );
        }
    }

    #[test]
    fn spliced_text_is_escaped_and_junit_escaping_is_unchanged() {
        let hostile = r#"<script>alert("x")</script> & 'y'"#;
        assert_eq!(
            html! { p title=(hostile) { (hostile) } }.into_string(),
            "<p title=\"&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; 'y'\">\
             &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; 'y'</p>"
        );
        assert_eq!(
            escape_markup(hostile, Markup::Xml),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &apos;y&apos;"
        );
    }

    #[test]
    fn notes_show_code_spans_as_code_not_backticks() {
        assert_eq!(
            note("variant `aggressive`: priced as `<m>` & more").into_string(),
            "variant <code>aggressive</code>: priced as <code>&lt;m&gt;</code> &amp; more"
        );
        // An odd backtick is text, and nothing becomes markup.
        assert_eq!(note("a ` b <i>").into_string(), "a ` b &lt;i&gt;");
        // Parts as report.md reads them: touching spans are one, an empty pair is text.
        assert_eq!(
            note("model `x``y` and `` here").into_string(),
            "model <code>x``y</code> and `` here"
        );
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
        let linked = Html::table_linked(&t, "go", &|r| {
            (r == 0).then(|| ("#a\"<".to_string(), "<x>".to_string()))
        })
        .into_string();
        assert!(linked.contains("<th>go</th>"));
        assert!(linked.contains("<td><a href=\"#a&quot;&lt;\">&lt;x&gt;</a></td></tr>"));
        assert!(linked.contains("<td>–</td><td></td></tr>"));
    }
}
