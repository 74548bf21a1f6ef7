//! `report.md`: summary table per variant (means, 95% CIs), paired comparison against the
//! baseline with significance, pass@k, token/cost split by role and kind, errors, plots.
//!
//! Also the Markdown of `ctxbench compare` and of the gate summary. Tables come from
//! `sections` and are rendered by [`Markdown`]; untrusted text (ids, error messages) is escaped
//! for Markdown tables and for the raw HTML that Markdown renderers accept by [`cell`] and
//! [`code`], the only escaping of this format.

use super::headline::{self, VerdictLine};
use super::model::ReportModel;
use super::plots;
use super::sections;
use super::table::{Align, Cell, Column, Table, TableWriter};
use crate::gate::GateOutcome;
use crate::metrics::aggregate::Comparison;
use crate::metrics::format::fmt_mean_ci;
use crate::output::{is_control, push_visible};
use crate::record::RunInfo;
use std::fmt::Write;

/// Escape text for one Markdown table cell: HTML specials, pipes, backticks (as the entity
/// `&#96;`: text never holds a backtick that could pair with a code span's), line breaks;
/// control characters are shown (`\x1b`, `\u{202e}`); long text is cut at `max` characters.
pub fn cell(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 8);
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '|' => out.push_str("\\|"),
            '`' => out.push_str("&#96;"),
            '*' | '_' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            // `\x1b` with its backslash escaped: `\\x1b`.
            c if is_control(c) => {
                out.push('\\');
                push_visible(&mut out, c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A Markdown code span of untrusted text, safe in a table cell: inside a code span nothing is
/// interpreted (HTML shows as text), so the text is written as it is but for line breaks, `|`
/// (GitHub splits table cells on it even in code) and control characters (shown: `\x1b`). The
/// span is delimited by a backtick run longer than any inside it, with a space inside each end
/// when the text starts or ends with a backtick or a space (CommonMark strips one): whatever the
/// text holds, it cannot end the span early and become markup.
pub fn code(text: &str, max: usize) -> String {
    span(text, max, true)
}

/// [`code`]; `in_table`: `|` escaped (a note's span, in a list item, keeps it as it is: there
/// `\|` would show its backslash).
fn span(text: &str, max: usize, in_table: bool) -> String {
    let mut body = String::with_capacity(text.len().min(max) + 4);
    for (i, c) in text.chars().enumerate() {
        if i == max {
            body.push('…');
            break;
        }
        match c {
            '|' if in_table => body.push_str("\\|"),
            '\n' | '\r' | '\t' => body.push(' '),
            c if is_control(c) => push_visible(&mut body, c),
            c => body.push(c),
        }
    }
    // No code span is empty: the empty text is a blank span. A span of spaces only keeps them.
    if body.is_empty() {
        body.push(' ');
    }
    let blank = body.trim_matches(' ').is_empty();
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if !blank && (body.starts_with(['`', ' ']) || body.ends_with(['`', ' '])) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// A note line: text between pairs of backticks stays a code span (as the notes write model
/// names and keys), the rest is escaped like a cell; unpaired backticks are escaped. A note
/// interpolates untrusted values (a model name, a trace id) that may hold backticks
/// themselves, so which parts are code is a guess; it is a safe one: text parts hold no
/// backtick and no markup ([`cell`]), code parts are [`code`] spans that nothing ends early,
/// and no two spans touch (`` `a``b` `` is one span, as CommonMark reads it; an empty pair
/// ` `` ` is two backticks of text). A note is written whole, as report.html and the terminal
/// show it (a note naming a long path ran past a cut and lost its last items in report.md only).
pub fn note(text: &str) -> String {
    let max = usize::MAX;
    let Some(segments) = note_segments(text) else {
        return cell(text, max);
    };
    let mut out = String::with_capacity(text.len() + 8);
    for (is_code, s) in &segments {
        out.push_str(&if *is_code {
            span(s, max, false)
        } else {
            cell(s, max)
        });
    }
    out
}

/// A note's parts as [`note`] reads them, `(is code, text)`, consecutive parts of one kind
/// joined (`` `a``b` `` one code part, an empty pair two backticks of text); `None` when its
/// backticks do not pair (all of it is text). report.html's notes read them the same way
/// (`html::note`).
pub fn note_segments(text: &str) -> Option<Vec<(bool, String)>> {
    let parts: Vec<&str> = text.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return None;
    }
    let mut segments: Vec<(bool, String)> = Vec::new();
    let mut push = |code: bool, p: &str| match segments.last_mut() {
        Some((c, s)) if *c == code => {
            if code {
                s.push_str("``");
            }
            s.push_str(p);
        }
        _ => segments.push((code, p.to_string())),
    };
    for (i, p) in parts.iter().enumerate() {
        match (i % 2 == 1, p.is_empty()) {
            // Text between two code parts was empty: they are one span.
            (false, true) => {}
            (false, false) => push(false, p),
            (true, true) => push(false, "``"),
            (true, false) => push(true, p),
        }
    }
    Some(segments)
}

fn row(out: &mut String, cells: impl Iterator<Item = String>) {
    out.push('|');
    for c in cells {
        out.push(' ');
        out.push_str(&c);
        out.push_str(" |");
    }
    out.push('\n');
}

/// Markdown tables (GitHub-flavoured): escaped header, alignment row, one line per row.
#[derive(Clone, Copy, Debug, Default)]
pub struct Markdown;

impl Markdown {
    fn cell(col: &Column, c: &Cell) -> String {
        match c {
            Cell::Text(s) => cell(s, col.max_chars),
            Cell::Code(s) => code(s, col.max_chars),
            Cell::Strong(s) | Cell::Alert(s) | Cell::Good(s) => {
                format!("**{}**", cell(s, col.max_chars))
            }
            Cell::MeanCi { mean, ci, n } => {
                let (m, ci) = fmt_mean_ci(*mean, ci.as_ref());
                format!("{m} {ci} (n={n})")
            }
            // Formatted numbers hold digits, signs, `.`, `,`, `%`, `<`, `≈`, brackets, `–` or
            // `n/a`: nothing that ends a cell or a line, so they are written as they are.
            other => other.plain(),
        }
    }
}

impl TableWriter for Markdown {
    fn write_table(&self, out: &mut String, table: &Table) {
        row(
            out,
            table.columns.iter().map(|c| cell(&c.header, c.max_chars)),
        );
        out.push('|');
        for c in &table.columns {
            out.push_str(match c.align {
                Align::Right => "---:|",
                Align::Left => "---|",
            });
        }
        out.push('\n');
        for r in &table.rows {
            row(
                out,
                table
                    .columns
                    .iter()
                    .zip(r)
                    .map(|(col, c)| Markdown::cell(col, c)),
            );
        }
    }
}

/// Render `report.md`.
pub fn render(info: &RunInfo, model: &ReportModel) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# ctxbench report — run {}\n", code(&info.run_id, 120));
    let _ = writeln!(
        out,
        "Created {} by ctxbench {}. {} unit(s), {} variant(s).",
        cell(&info.created, 40),
        cell(&info.ctxbench_version, 40),
        model.units,
        model.variants.len()
    );
    // A partial run says so before any figure (and again in Notes), as report.html does.
    if let Some(partial) = model.notes.iter().find(|n| n.starts_with("partial run:")) {
        let _ = writeln!(out, "\n**{}**\n", cell(partial, 1000));
    }
    if let Some(b) = &model.baseline {
        let _ = writeln!(out, "Baseline variant: {}.", code(b, 80));
    }
    for p in &info.providers {
        let _ = writeln!(
            out,
            "- {}: {} {}",
            cell(&p.role, 40),
            cell(&p.provider, 40),
            code(&p.model, 80)
        );
    }
    out.push('\n');

    if !model.verdicts.is_empty() {
        out.push_str("## Verdict\n\n");
        write_verdicts(&mut out, &model.verdicts);
    }

    out.push_str(
        "## Summary per variant\n\nHeadline metrics: mean per unit with its 95% bootstrap CI.\n\n",
    );
    Markdown.write_table(&mut out, &sections::headline_summary(model));
    out.push_str("\n<details><summary>All metrics</summary>\n\n");
    Markdown.write_table(&mut out, &sections::summary(model));
    out.push_str("\n</details>\n\n");

    if let Some(b) = &model.baseline {
        let _ = writeln!(out, "## Paired comparison vs {}\n", code(b, 80));
        if model.comparisons.is_empty() {
            out.push_str("No variant shares units with the baseline.\n\n");
        } else {
            write_comparison(
                &mut out,
                &model.comparisons,
                &model.headline,
                "variant mean",
                "every unit's value is in results.csv",
            );
        }
    }

    if !model.pass_k.is_empty() {
        out.push_str("## pass@k and pass^k\n\n");
        Markdown.write_table(&mut out, &sections::pass_k(model));
        out.push('\n');
    }

    out.push_str("## Tokens and cost by role\n\nInput includes cached tokens. ");
    out.push_str("An unknown price is shown as unknown, never $0.\n\n");
    Markdown.write_table(&mut out, &sections::usage(model));
    let _ = writeln!(
        out,
        "\nRun total: {} tokens; {}.\n",
        model.totals.tokens_total(),
        model.totals.cost.headline.line()
    );

    out.push_str("## Errors\n\n");
    if model.errors.is_empty() {
        out.push_str("No unit failed.\n\n");
    } else {
        Markdown.write_table(&mut out, &sections::errors(model));
        out.push('\n');
    }

    let (specs, skipped) = plots::plan(model);
    if !specs.is_empty() || !skipped.is_empty() {
        out.push_str("## Plots\n\n");
        for s in &specs {
            let _ = writeln!(
                out,
                "- [{}](plots/{}.svg) ([PNG](plots/{}.png))",
                cell(&s.title, 120),
                s.name,
                s.name
            );
        }
        for n in &skipped {
            let _ = writeln!(out, "- skipped: {}", cell(n, 300));
        }
        out.push('\n');
    }

    if !model.notes.is_empty() {
        out.push_str("## Notes\n\n");
        for n in &model.notes {
            let _ = writeln!(out, "- {}", note(n));
        }
        out.push('\n');
    }
    out
}

/// The verdict lines as a list: `**variant** vs `baseline`: item; item; …`, then the legend.
pub fn write_verdicts(out: &mut String, verdicts: &[VerdictLine]) {
    for l in verdicts {
        let items: Vec<String> = l.items.iter().map(|i| cell(&i.text, 200)).collect();
        let _ = writeln!(
            out,
            "- **{}** vs {}: {}",
            cell(&l.variant, 80),
            code(&l.baseline, 80),
            items.join("; ")
        );
    }
    let _ = writeln!(out, "\n{}\n", cell(headline::LEGEND, 400));
}

/// The paired comparison, headline metrics first, rows without any change dropped (and
/// counted).
fn write_comparison(
    out: &mut String,
    comparisons: &[Comparison],
    headline: &[String],
    candidate: &str,
    all_in: &str,
) {
    let (rows, dropped) = headline::ordered(comparisons, headline);
    // The run's report compares variants (report.html says the same), `compare` runs.
    let side = candidate.split(' ').next().unwrap_or(candidate);
    let _ = write!(
        out,
        "Δ = {side} − baseline on the same trace/eval/sample/repeat; 95% paired-bootstrap \
         CI; significant at p < 0.05 (McNemar for pass/fail metrics); better/WORSE by the \
         metric's direction. Headline metrics first. Units of one trace are not independent: \
         when a trace gives several pairs, the CI and p resample whole traces (cluster \
         bootstrap), and with fewer than 6 traces there is no verdict (\"too few traces to \
         tell\").\n\n",
    );
    Markdown.write_table(out, &sections::comparison(&rows, candidate));
    if dropped > 0 {
        let _ = writeln!(
            out,
            "\n{dropped} other metric(s) with no change on any pair are not listed ({all_in})."
        );
    }
    out.push('\n');
}

/// Render the Markdown of `ctxbench compare`: the candidate run's variants against the same
/// variants of the baseline run.
pub fn render_compare(
    baseline: &RunInfo,
    candidate: &RunInfo,
    comparisons: &[Comparison],
    headline: &[String],
    notes: &[String],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# ctxbench compare — {} vs baseline {}\n",
        code(&candidate.run_id, 120),
        code(&baseline.run_id, 120)
    );
    out.push_str(
        "Δ = candidate − baseline for the same variant, paired by trace/eval/sample/repeat; \
         95% paired-bootstrap CI (by trace when a trace gives several pairs); significant at \
         p < 0.05 (McNemar for pass/fail metrics) with at least 6 traces.\n\n",
    );
    if comparisons.is_empty() {
        out.push_str(
            "Nothing to compare: no variant and unit has a successful sample in both runs.\n\n",
        );
    } else {
        let verdicts = headline::verdicts(comparisons, headline);
        if !verdicts.is_empty() {
            write_verdicts(&mut out, &verdicts);
        }
        write_comparison(
            &mut out,
            comparisons,
            headline,
            "candidate",
            "every comparison is in compare.json",
        );
    }
    for n in notes {
        let _ = writeln!(out, "- {}", note(n));
    }
    out
}

/// The Markdown summary of a gate (appended to `GITHUB_STEP_SUMMARY` by `ctxbench gate`).
pub fn gate_summary(outcome: &GateOutcome) -> String {
    let mut out = format!(
        "### ctxbench gate: {} — run {} vs baseline {}\n\n",
        if outcome.passed() {
            "passed ✅"
        } else {
            "FAILED ❌"
        },
        code(&outcome.candidate_run, 80),
        code(&outcome.baseline_run, 80)
    );
    Markdown.write_table(&mut out, &sections::gate(outcome));
    out.push('\n');
    for n in &outcome.notes {
        out.push_str(&format!("- note: {}\n", note(n)));
    }
    if !outcome.notes.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Markdown as a CommonMark renderer reads its inline code: (the text outside code spans,
    /// backslash escapes applied; the code spans' contents). A backtick run opens a span closed
    /// by the next run of the same length; one space is stripped from each end of a span that
    /// starts and ends with one and is not all spaces. HTML can only come from outside a span.
    fn read_code_spans(md: &str) -> (String, Vec<String>) {
        let b: Vec<char> = md.chars().collect();
        let (mut outside, mut spans) = (String::new(), Vec::new());
        let mut i = 0;
        while i < b.len() {
            if b[i] == '\\' && b.get(i + 1).is_some_and(char::is_ascii_punctuation) {
                outside.push(b[i + 1]);
                i += 2;
            } else if b[i] == '`' {
                let start = i;
                while i < b.len() && b[i] == '`' {
                    i += 1;
                }
                let len = i - start;
                let mut j = i;
                let mut close = None;
                while j < b.len() {
                    if b[j] == '`' {
                        let s = j;
                        while j < b.len() && b[j] == '`' {
                            j += 1;
                        }
                        if j - s == len {
                            close = Some(s);
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                match close {
                    Some(s) => {
                        let mut c: String = b[i..s].iter().collect();
                        if c.len() >= 2
                            && c.starts_with(' ')
                            && c.ends_with(' ')
                            && !c.trim_matches(' ').is_empty()
                        {
                            c = c[1..c.len() - 1].to_string();
                        }
                        spans.push(c);
                        i = s + len;
                    }
                    None => outside.extend(&b[start..i]),
                }
            } else {
                outside.push(b[i]);
                i += 1;
            }
        }
        (outside, spans)
    }

    #[test]
    fn notes_keep_code_spans_and_escape_the_rest() {
        assert_eq!(
            note("model `gpt-4o` has *no* price"),
            "model `gpt-4o` has \\*no\\* price"
        );
        // Markup inside a code span stays text; an unpaired backtick is text.
        assert_eq!(note("`<b>` & `x"), "&#96;&lt;b&gt;&#96; &amp; &#96;x");
        assert_eq!(note("a `<b>` c"), "a `<b>` c");
        // A note is no table cell: a pipe in its code stays a pipe.
        assert_eq!(note("key `a|b`"), "key `a|b`");
    }

    /// The import warnings' note names a file per kind: from a clone deeper than 14 characters
    /// its last kind was cut at 500 characters in report.md only (CI's clone failed
    /// `import_warnings_are_shown_wherever_the_run_is_shown` on it).
    #[test]
    fn a_long_note_is_written_whole() {
        let path = format!("/{}/rollout.jsonl", "deep/".repeat(200));
        let text = format!("2× a (first: {path}:17) · 1× tool call (finish) has no result");
        let md = note(&text);
        assert!(md.ends_with("1× tool call (finish) has no result"), "{md}");
        assert!(md.contains(&path), "{md}");
    }

    /// The auditor's report: a model name of two backticks and an `<img>` made the note
    /// ``model ```<img src=x onerror=alert(1)>` (agent)…``, whose `<img>` a CommonMark renderer
    /// emitted as HTML.
    #[test]
    fn a_value_with_backticks_cannot_end_a_code_span_and_become_markup() {
        let img = "<img src=x onerror=alert(1)>";
        let values = [
            format!("``{img}"),
            format!("`{img}`"),
            format!("{img}`"),
            format!("```{img}``"),
            format!("x`` ``{img}` `y"),
            format!("a\\`{img}\\"),
            " ` ".to_string(),
            "`".to_string(),
            String::new(),
            format!("model{img} | pipe |\n`tick` ``` fence\n\x1b[2J\u{202e}"),
        ];
        for v in &values {
            for text in [
                format!("UNKNOWN PRICE: model `{v}` (agent) has no price: add `[pricing.\"{v}\"]`"),
                format!("trace `{v}`: window from `{v}`"),
                v.to_string(),
                format!("`{v}``{v}`"),
            ] {
                let md = note(&text);
                let (outside, spans) = read_code_spans(&md);
                assert!(
                    !outside.contains(['<', '>', '`']),
                    "{text:?}\n{md}\n{outside}"
                );
                assert!(!md.contains('\x1b') && !md.contains('\u{202e}'), "{md}");
                // What a code span shows is the value's text, markup as text.
                if text.starts_with("UNKNOWN") && v.contains(img) {
                    assert!(
                        spans.iter().any(|s| s.contains(img)) || outside.contains("&lt;img"),
                        "{md}"
                    );
                }
            }
        }
        // The value's two backticks are text (an empty pair), its `<img>` code.
        let md = note(&format!("model `{}` has no price", values[0]));
        assert_eq!(
            md,
            "model &#96;&#96;`<img src=x onerror=alert(1)>` has no price"
        );
        assert_eq!(read_code_spans(&md).1, [img]);
    }

    proptest::proptest! {
        /// Any value of backticks, spaces, backslashes, pipes and tag characters, in any note.
        #[test]
        fn no_value_makes_a_note_emit_markup(v in "[`a <>/\\\\|&]{0,16}", w in "[`b <]{0,6}") {
            for text in [
                format!("model `{v}` (agent) has no price: add `[pricing.\"{v}\"]`"),
                format!("{w}`{v}`{w}`{v}``{w}"),
                format!("`{v}{w}"),
            ] {
                let md = note(&text);
                let (outside, _) = read_code_spans(&md);
                proptest::prop_assert!(!outside.contains(['<', '>', '`']), "{text:?}\n{md}");
            }
        }
    }

    #[test]
    fn code_spans_hold_any_text_exactly() {
        for text in [
            "a",
            "a`b",
            "``x",
            "x``",
            "` `",
            " a ",
            "a ",
            "   ",
            "",
            "a```b``c`",
        ] {
            let md = code(text, 100);
            let (outside, spans) = read_code_spans(&md);
            assert_eq!(outside, "", "{md}");
            let want = if text.is_empty() { " " } else { text };
            assert_eq!(spans, [want], "{md}");
        }
    }

    #[test]
    fn cell_escapes_html_pipes_and_newlines() {
        assert_eq!(cell("<script>|x\ny", 100), "&lt;script&gt;\\|x y");
        assert_eq!(cell("abcdef", 3), "abc…");
        assert_eq!(cell("a_b*c", 10), "a\\_b\\*c");
        assert_eq!(code("a_b|<x>`", 20), "`` a_b\\|<x>` ``");
    }

    #[test]
    fn cells_and_code_show_control_characters() {
        let hostile = "a\x1b[2J\x07\0\u{7f}\u{9b}\u{202e}b";
        // In a cell the escape's backslash is itself escaped, so it renders as `\x1b`.
        let c = cell(hostile, 100);
        assert_eq!(c, "a\\\\x1b\\[2J\\\\x07\\\\x00\\\\x7f\\\\u{9b}\\\\u{202e}b");
        assert_eq!(
            read_code_spans(&c).0,
            "a\\x1b[2J\\x07\\x00\\x7f\\u{9b}\\u{202e}b"
        );
        assert_eq!(
            code(hostile, 100),
            "`a\\x1b[2J\\x07\\x00\\x7f\\u{9b}\\u{202e}b`"
        );
    }
}
