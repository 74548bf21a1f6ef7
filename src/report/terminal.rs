//! Terminal output of report tables and gate verdicts: plain text, no markup, columns padded
//! by `output::table`. Cells are written as their plain text ([`Cell::plain`]); nothing needs
//! escaping, but a line break inside a cell would break the layout, so it becomes a space here
//! (the one place this format touches text).

use super::headline;
use super::model::ReportModel;
use super::sections;
use super::table::{Cell, Table, TableWriter};
use crate::gate::{GateOutcome, Verdict};
use crate::output::wrap;

/// Plain-text tables for a terminal. Every column is left-aligned, as the terminal summary
/// has always been (the model's alignment is for document formats); detail columns are left
/// out.
#[derive(Clone, Copy, Debug, Default)]
pub struct Terminal;

fn plain(c: &Cell) -> String {
    c.plain().replace(['\n', '\r', '\t'], " ")
}

impl TableWriter for Terminal {
    fn write_table(&self, out: &mut String, table: &Table) {
        let shown: Vec<usize> = (0..table.columns.len())
            .filter(|&i| !table.columns[i].detail)
            .collect();
        let header: Vec<String> = shown
            .iter()
            .map(|&i| plain(&Cell::text(&table.columns[i].header)))
            .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows: Vec<Vec<String>> = table
            .rows
            .iter()
            .map(|r| shown.iter().map(|&i| plain(&r[i])).collect())
            .collect();
        out.push_str(&crate::output::table(&header, &rows));
    }
}

/// Width the terminal summary fits in (every terminal output's, `output::WIDTH`).
pub const WIDTH: usize = crate::output::WIDTH;

/// The terminal summary of a run: verdict lines (wrapped at `width`), the legend, then the
/// per-variant means of the headline metrics (no CIs: they are in the verdict and report.md).
/// Metric columns that would make a line wider than `width` are left out and named.
pub fn summary(model: &ReportModel, width: usize) -> String {
    let mut out = String::new();
    if !model.verdicts.is_empty() {
        out.push_str(&headline::render_text(&model.verdicts, width));
        out.push_str(&wrap(headline::LEGEND, width));
        out.push('\n');
    }
    let names: Vec<&str> = model.headline.iter().map(String::as_str).collect();
    let mut t = sections::summary_of(model, &names, "summary-table");
    for row in &mut t.rows {
        for c in row.iter_mut() {
            if let Cell::MeanCi { mean, .. } = c {
                *c = Cell::Num(*mean);
            }
        }
    }
    let mut left_out = Vec::new();
    let mut text = Terminal.render(&t);
    while t.columns.len() > 3 && text.lines().any(|l| crate::output::columns(l) > width) {
        let col = t.columns.pop().expect("more than 3 columns");
        for row in &mut t.rows {
            row.pop();
        }
        left_out.push(col.header);
        text = Terminal.render(&t);
    }
    out.push_str(&text);
    if !left_out.is_empty() {
        left_out.reverse();
        out.push_str(&wrap(
            &format!(
                "(not shown for width: {}; see report.md)",
                left_out.join(", ")
            ),
            width,
        ));
    }
    // Flagged units (prompts a server cut silently, agents that ran out of steps before
    // answering, failed summaries kept, futile compactions), models with no price, a partial
    // run, trace files left out, traces altered on import, or units cancelled with money spent: the numbers above include such units, or are
    // of some units only, which the reader must hear at the end of the run, not only in
    // report.md.
    for n in model.notes.iter().filter(|n| {
        n.starts_with(FLAGGED)
            || n.starts_with(UNKNOWN_PRICE)
            || n.starts_with(PARTIAL)
            || n.starts_with(CANCELLED)
            || n.starts_with(crate::record::run_info::LEFT_OUT)
            || n.starts_with(crate::record::import_warnings::NOTE)
            || n.starts_with(super::headline::UNMATCHED)
            || n.starts_with(crate::report::model::NOT_APPLICABLE)
    }) {
        out.push_str(&wrap(n, width));
    }
    out
}

/// How the notes on flagged units start (`ReportModel`'s flag notes).
const FLAGGED: &str = "FLAGGED:";

/// How the notes on models with no price start (`report::pricing_notes`).
const UNKNOWN_PRICE: &str = "UNKNOWN PRICE:";

/// How [`crate::record::RunProgress::partial`]'s note starts.
const PARTIAL: &str = "partial run:";

/// How [`ReportModel::note_replaced`]'s note on cancelled units ends its count.
const CANCELLED: &str = crate::report::model::CANCELLED_NOTE;

/// `table` for a terminal `width` columns wide: while a line is wider, the columns named in
/// `droppable` are left out, in that order. Returns the text and the headers left out (to be
/// named to the reader, who finds them in the documents).
pub fn render_within(table: &Table, width: usize, droppable: &[&str]) -> (String, Vec<String>) {
    let mut t = table.clone();
    let mut left_out = Vec::new();
    let mut text = Terminal.render(&t);
    for name in droppable {
        if !text.lines().any(|l| crate::output::columns(l) > width) {
            break;
        }
        let Some(i) = t.columns.iter().position(|c| c.header == *name) else {
            continue;
        };
        left_out.push(t.columns.remove(i).header);
        for row in &mut t.rows {
            row.remove(i);
        }
        text = Terminal.render(&t);
    }
    (text, left_out)
}

/// The gate's lines: the candidate run's checks (`FAIL  run complete  MESSAGE`), one per rule ×
/// variant (`pass|FAIL|skip  RULE  [VARIANT]  MESSAGE`), then the notes (`note: …`); each
/// wrapped to [`WIDTH`] columns, its continuation lines indented under the rule.
pub fn gate_lines(outcome: &GateOutcome) -> String {
    let tag = |v: Verdict| match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "FAIL",
        Verdict::Skipped => "skip",
    };
    let mut out = String::new();
    for c in &outcome.run_checks {
        let head = format!("{:<4}  run {}", tag(c.verdict), c.check);
        out.push_str(&hanging(&head, &c.message, WIDTH));
    }
    for r in &outcome.results {
        let head = format!("{:<4}  {}  [{}]", tag(r.verdict), r.rule, r.variant);
        out.push_str(&hanging(&head, &r.message, WIDTH));
    }
    for n in &outcome.notes {
        // One space after `note:`, as every other note (two align a verdict's text).
        out.push_str(&hanging_at("note:", "", n, WIDTH));
    }
    out
}

/// Indent of a gate line's continuation lines (under the rule, past the verdict).
const HANG: &str = "      ";

/// `head`, two spaces and `text`, wrapped at word boundaries to `width` columns; continuation
/// lines are indented by [`HANG`] (a word longer than a line gets one of its own). `head` is
/// kept whole, its spacing too.
fn hanging(head: &str, text: &str, width: usize) -> String {
    hanging_at(head, " ", text, width)
}

/// [`hanging`] with `gap` and one space between `head` and `text`.
fn hanging_at(head: &str, gap: &str, text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = format!("{head}{gap}");
    for word in text.split_whitespace() {
        let at_start = line.len() == HANG.len() && line == HANG;
        if !at_start && crate::output::columns(&line) + 1 + crate::output::columns(word) > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = HANG.to_string();
        }
        if line != HANG {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::Column;

    /// A `[report] metrics` name no variant recorded (a typo) is said at the end of the run,
    /// not only in report.md: the headline table without it was all the terminal showed.
    #[test]
    fn a_headline_metric_no_variant_recorded_is_said() {
        let mut info = crate::record::RunInfo::new("r");
        info.variants = vec!["base".into()];
        info.suite = serde_json::json!({ "report": { "metrics": ["nosuch.metric"] } });
        let sample = crate::record::Sample::builder()
            .unit_id("u")
            .variant("base")
            .eval("needle")
            .score("recall", 1.0)
            .build();
        let model = ReportModel::build(&info, vec![sample]);
        let text = summary(&model, 100)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            text.contains("[report] metrics names nosuch.metric that no variant recorded"),
            "{text}"
        );
    }

    #[test]
    fn gate_lines_wrap_under_their_rule() {
        let text = hanging(
            "FAIL  cost.delta_pct <= 5  [aggressive]",
            &"word ".repeat(40),
            40,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "FAIL  cost.delta_pct <= 5  [aggressive]");
        assert!(
            lines[1..]
                .iter()
                .all(|l| l.starts_with(HANG) && l.len() <= 40),
            "{text}"
        );
        assert_eq!(text.split_whitespace().filter(|w| *w == "word").count(), 40);
        assert_eq!(hanging("pass  r  [v]", "ok", 100), "pass  r  [v]  ok\n");
        assert_eq!(hanging_at("note:", "", "a b", 100), "note: a b\n");
    }

    #[test]
    fn terminal_tables_pad_columns_and_flatten_line_breaks() {
        let mut t = Table::new(
            None,
            vec![
                Column::text("a"),
                Column::num("bbb"),
                Column::text("c").detail(),
            ],
        );
        t.push(vec![Cell::text("x\ny"), Cell::Int(3), Cell::text("hidden")]);
        t.push(vec![
            Cell::Alert("yes".into()),
            Cell::Missing,
            Cell::Missing,
        ]);
        assert_eq!(Terminal.render(&t), "a    bbb\nx y  3\nyes  –\n");
    }

    #[test]
    fn render_within_drops_the_named_columns_in_order_only_while_too_wide() {
        let mut t = Table::new(
            None,
            vec![Column::text("name"), Column::num("n"), Column::num("wide")],
        );
        t.push(vec![
            Cell::text("a"),
            Cell::Int(1),
            Cell::text("w".repeat(20)),
        ]);
        // name(4) n(1) wide(20) + 2 gaps = 29 columns.
        let (text, out) = render_within(&t, 29, &["n", "wide"]);
        assert_eq!(
            (text.lines().next().unwrap(), out.len()),
            ("name  n  wide", 0)
        );
        let (text, out) = render_within(&t, 28, &["n", "wide"]);
        assert_eq!(out, ["n"]);
        assert!(text.starts_with("name  wide\n"), "{text}");
        let (text, out) = render_within(&t, 10, &["n", "absent", "wide"]);
        assert_eq!(out, ["n", "wide"]);
        assert_eq!(text, "name\na\n");
    }
}
