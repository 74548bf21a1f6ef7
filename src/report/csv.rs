//! `results.csv`: one flat row per sample, typed so that pandas, polars and DuckDB infer the
//! right column types with no options (`tests/cost_model/dataframes.rs` loads it with all
//! three).
//!
//! Columns: `unit_id, trace_id, variant, eval, sample, repeat, passed, status` (report.html's
//! word for the unit: `report::status`), then `params.<k>` for
//! every parameter seen in the run and `<eval>.<k>` for every score (`needle.recall`,
//! `drift.score`: the same names as the report's metrics; a row fills only its own eval's
//! columns) and `<eval>.pass` for an eval with verdicts (`passed` as `1.0`/`0.0`, the report's
//! `needle.pass`), `tokens.<role>.<kind>` for the roles agent/summarizer/judge/eval_agent and
//! kinds input/cached/cache_write/output, `tokens` (input + output of every role),
//! `cost.<role>` and `cost` in USD, `compactions.<k>` (missing = 0), `latency_ms`,
//! `error_kind`, `error_message`. A figure the reports also show has their label: `tokens` and
//! `cost` are the report's metrics of those names (results.csv called them `tokens.total` and
//! `cost.total` before).
//!
//! Types: counts are integers; scores and dollars are floats and always written as floats
//! (`1.0`, never `1`, so a column of whole scores is not typed as an integer); booleans are
//! `true`/`false`; an empty cell means missing (a score of another eval, an unknown price — a
//! role that used no tokens costs a known `0.0`); nested parameter values are written as
//! compact JSON text in one cell.
//!
//! Also [`Csv`], the CSV writer of report tables (`sections`): raw values in full precision,
//! quoting by the csv crate.
//!
//! Formula injection: a text cell that starts with `=`, `+`, `-`, `@`, tab or CR (a trace id
//! taken from a hostile file name, an error message) is prefixed with `'`, as OWASP and the
//! spreadsheet tools expect, so Excel/LibreOffice show it as text instead of evaluating it.
//! A cell that is a plain number (`-1.5`, `+3`, `-2e-3`) is left alone, and numeric columns
//! are never touched: pandas, polars and DuckDB still read negative numbers as numbers.
//! Control characters in text cells other than newline and tab (ESC, CR, NUL, DEL, C1 and bidi
//! controls) are written as `\x1b`, `\u{202e}` ([`text_cell`]); the rest of a value is exact.

use super::model::ReportModel;
use super::table::{Cell, Table, TableWriter};
use crate::record::{Row, RunInfo, TokenSplit};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

const ROLES: [&str; 4] = ["agent", "summarizer", "judge", "eval_agent"];
const KINDS: [&str; 4] = ["input", "cached", "cache_write", "output"];

fn split(s: &Row<'_>, role: &str) -> TokenSplit {
    match role {
        "agent" => s.tokens.agent,
        "summarizer" => s.tokens.summarizer,
        "judge" => s.tokens.judge,
        _ => s.tokens.eval_agent,
    }
}

fn kind(t: &TokenSplit, kind: &str) -> u64 {
    match kind {
        "input" => t.input,
        "cached" => t.cached,
        "cache_write" => t.cache_write,
        _ => t.output,
    }
}

/// A float: the shortest representation that round-trips, always with a decimal point (`1.0`,
/// `-0.25`, `0.0000001`) so readers type the column as a float; non-finite values stay empty.
/// `n` in decimal, as `Display` writes it (without the formatting machinery: a big run's
/// CSV has some twenty integers a row).
fn uint(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

fn num(out: &mut String, x: f64) {
    if x.is_finite() {
        let start = out.len();
        let _ = write!(out, "{x}");
        if !out[start..].contains('.') {
            out.push_str(".0");
        }
    }
}

/// Whether `s` is a plain decimal number (digits, sign, point, exponent): such a cell is data,
/// not a formula, and keeps its sign.
fn plain_number(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// A text cell made safe for spreadsheets: cells starting with `=`, `+`, `-`, `@`, tab or CR
/// get a leading `'` unless they are a plain number.
pub fn escape_formula(s: &str) -> std::borrow::Cow<'_, str> {
    match s.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') if !plain_number(s) => {
            std::borrow::Cow::Owned(format!("'{s}"))
        }
        _ => std::borrow::Cow::Borrowed(s),
    }
}

/// A text cell as results.csv and the report tables' CSV write it: [`escape_formula`], then
/// control characters other than newline and tab (C0, DEL, C1, bidi controls) shown as `\x1b`,
/// `\u{202e}` ([`crate::output::visible`]): a trace's id or error message would otherwise carry
/// them into a spreadsheet or a terminal that prints the file. Everything else is exact.
pub fn text_cell(s: &str) -> std::borrow::Cow<'_, str> {
    match escape_formula(s) {
        std::borrow::Cow::Borrowed(b) => crate::output::visible(b),
        std::borrow::Cow::Owned(o) => std::borrow::Cow::Owned(crate::output::visible(&o).into()),
    }
}

fn param_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// Report tables as CSV, for machines: a header line, then one record per row. Numbers are
/// raw values in full precision (a mean-with-CI cell is its mean, a CI `lo..hi`, a delta the
/// delta); missing values and absent CIs or p-values are empty.
#[derive(Clone, Copy, Debug, Default)]
pub struct Csv;

fn raw(c: &Cell) -> String {
    let mut out = String::new();
    match c {
        Cell::Text(s) | Cell::Code(s) | Cell::Strong(s) | Cell::Alert(s) | Cell::Good(s) => {
            out.push_str(s)
        }
        Cell::Int(v) => out.push_str(&v.to_string()),
        Cell::Num(x) | Cell::MeanCi { mean: x, .. } | Cell::Delta { delta: x, .. } => {
            num(&mut out, *x)
        }
        Cell::P(p) => {
            if let Some(p) = p {
                num(&mut out, *p)
            }
        }
        Cell::Ci { ci, .. } => {
            if let Some(ci) = ci {
                num(&mut out, ci.lo);
                out.push_str("..");
                num(&mut out, ci.hi);
            }
        }
        Cell::Missing => {}
    }
    out
}

impl TableWriter for Csv {
    fn write_table(&self, out: &mut String, table: &Table) {
        let mut w = ::csv::WriterBuilder::new().from_writer(Vec::new());
        // Writing to a Vec cannot fail.
        let _ = w.write_record(table.columns.iter().map(|c| c.header.as_str()));
        for row in &table.rows {
            let _ = w.write_record(row.iter().map(|c| {
                let numeric = matches!(
                    c,
                    Cell::Int(_)
                        | Cell::Num(_)
                        | Cell::MeanCi { .. }
                        | Cell::Delta { .. }
                        | Cell::P(_)
                        | Cell::Ci { .. }
                        | Cell::Missing
                );
                // Every text kind of cell (also ones added later) is escaped; numbers never.
                if numeric {
                    raw(c)
                } else {
                    text_cell(&raw(c)).into_owned()
                }
            }));
        }
        let bytes = w.into_inner().unwrap_or_default();
        out.push_str(&String::from_utf8_lossy(&bytes));
    }
}

/// The score key of the verdict's column: `<eval>.pass`, the report's metric name for it.
const PASS: &str = "pass";

/// The value of column `<eval>.<key>` that comes from the unit's verdict: for `key` = `pass`,
/// `1.0` for a pass and `0.0` for a fail, the value the report's `<eval>.pass` metric takes
/// (`metrics::aggregate::for_each_metric`), so the column's mean is the report's pass rate.
/// A unit without a verdict leaves it to a score of that name, if it recorded one.
fn pass_value(s: &Row<'_>, key: &str) -> Option<f64> {
    (key == PASS)
        .then_some(s.passed)
        .flatten()
        .map(|p| if p { 1.0 } else { 0.0 })
}

/// Render `results.csv`.
pub fn render(info: &RunInfo, model: &ReportModel) -> String {
    let mut out = Vec::with_capacity(model.units * 256 + 4096);
    // Writing to a Vec cannot fail.
    let _ = write(info, model, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Write `results.csv` to `out` row by row, each line a function of its row alone (nothing
/// of the file is held in memory; [`render`] gives the same bytes as a string).
pub fn write(
    _info: &RunInfo,
    model: &ReportModel,
    out: impl std::io::Write,
) -> std::io::Result<()> {
    let mut params: BTreeSet<String> = BTreeSet::new();
    // (eval, score key): one column per pair, `<eval>.<key>`.
    let mut scores: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut compactions: BTreeSet<String> = BTreeSet::new();
    let add = |set: &mut BTreeSet<String>, k: &str| {
        if !set.contains(k) {
            set.insert(k.to_string());
        }
    };
    model.for_each_row(|s| {
        for k in s.params.keys() {
            add(&mut params, k);
        }
        if !s.scores.is_empty() || s.passed.is_some() {
            if !scores.contains_key(s.eval) {
                scores.insert(s.eval.to_string(), BTreeSet::new());
            }
            let keys = scores.get_mut(s.eval).expect("inserted");
            for k in s.scores.keys() {
                add(keys, k);
            }
            // The verdict as the report's `<eval>.pass` metric ([`pass_value`]).
            if s.passed.is_some() {
                add(keys, PASS);
            }
        }
        for k in s.compactions.keys() {
            add(&mut compactions, k);
        }
    })?;
    let scores: Vec<(&str, &str)> = scores
        .iter()
        .flat_map(|(e, keys)| keys.iter().map(move |k| (e.as_str(), k.as_str())))
        .collect();
    let mut score_range: rustc_hash::FxHashMap<&str, std::ops::Range<usize>> =
        rustc_hash::FxHashMap::default();
    for (i, (e, _)) in scores.iter().enumerate() {
        score_range.entry(e).or_insert(i..i).end = i + 1;
    }
    let mut header: Vec<String> = [
        "unit_id", "trace_id", "variant", "eval", "sample", "repeat", "passed", "status",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(params.iter().map(|k| format!("params.{k}")));
    header.extend(scores.iter().map(|(e, k)| format!("{e}.{k}")));
    for r in ROLES {
        for k in KINDS {
            header.push(format!("tokens.{r}.{k}"));
        }
    }
    // The unit's totals, under the names of the report's metrics (`tokens`, `cost`).
    header.push("tokens".into());
    for r in ROLES {
        header.push(format!("cost.{r}"));
    }
    header.push("cost".into());
    header.extend(compactions.iter().map(|k| format!("compactions.{k}")));
    header.extend(["latency_ms", "error_kind", "error_message"].map(String::from));

    let mut w = ::csv::WriterBuilder::new().from_writer(out);
    let io = |e: ::csv::Error| match e.into_kind() {
        ::csv::ErrorKind::Io(e) => e,
        other => std::io::Error::other(format!("{other:?}")),
    };
    w.write_record(&header).map_err(io)?;
    // One reusable buffer for formatted cells: no allocation per cell. The csv writer buffers
    // its output and reports a failed write at the next flush; the first error is kept.
    let mut buf = String::with_capacity(64);
    let mut failed: Option<::csv::Error> = None;
    let mut cell = |w: &mut ::csv::Writer<_>, f: &dyn Fn(&mut String)| {
        buf.clear();
        f(&mut buf);
        if let Err(e) = w.write_field(buf.as_bytes()) {
            failed.get_or_insert(e);
        }
    };
    // The first error that ends the file (the rows after it are not written).
    let mut ended: Option<::csv::Error> = None;
    model.for_each_row(|s| {
        if ended.is_some() {
            return;
        }
        for text in [&s.unit_id, &s.trace_id, &s.variant, &s.eval, &s.sample] {
            let _ = w.write_field(text_cell(text).as_bytes());
        }
        cell(&mut w, &|b| {
            uint(b, u64::from(s.repeat));
        });
        let _ = w.write_field(match s.passed {
            Some(true) => "true",
            Some(false) => "false",
            None => "",
        });
        // report.html's word for the unit: `flagged` for a success whose numbers a failure
        // touched (a failed summary kept, a futile compaction, a question out of steps, a
        // prompt the server cut), which its score columns say why.
        let _ = w.write_field(crate::report::status::Status::of(&s).label());
        for k in &params {
            match s.params.get(k) {
                Some(serde_json::Value::String(t)) => {
                    let _ = w.write_field(text_cell(t).as_bytes());
                }
                // Compact JSON (a list, an object) stays JSON: its controls as `\u` escapes.
                Some(v) => cell(&mut w, &|b| {
                    b.push_str(&crate::output::visible_json(&escape_formula(&param_cell(
                        v,
                    ))))
                }),
                None => {
                    let _ = w.write_field("");
                }
            }
        }
        // Only the columns of the row's own eval can hold a value (one range: the columns
        // are sorted by eval); the others are empty without a look-up.
        let own = score_range.get(s.eval).cloned().unwrap_or(0..0);
        for (i, (_, k)) in scores.iter().enumerate() {
            if own.contains(&i) {
                cell(&mut w, &|b| {
                    if let Some(v) = pass_value(&s, k).or_else(|| s.scores.get(k).copied()) {
                        num(b, v)
                    }
                });
            } else {
                let _ = w.write_field("");
            }
        }
        for r in ROLES {
            let t = split(&s, r);
            for k in KINDS {
                cell(&mut w, &|b| {
                    uint(b, kind(&t, k));
                });
            }
        }
        cell(&mut w, &|b| {
            uint(b, s.tokens_total());
        });
        // A role that used no tokens costs a known 0 (as in the report's metrics); a role
        // with tokens and no price stays empty.
        let known =
            |tokens: &TokenSplit, c: Option<f64>| c.or((tokens.total() == 0).then_some(0.0));
        for c in [
            known(&s.tokens.agent, s.cost_usd.agent),
            known(&s.tokens.summarizer, s.cost_usd.summarizer),
            known(&s.tokens.judge, s.cost_usd.judge),
            known(&s.tokens.eval_agent, s.cost_usd.eval_agent),
            s.cost_total(),
        ] {
            cell(&mut w, &|b| {
                if let Some(v) = c {
                    num(b, v)
                }
            });
        }
        for k in &compactions {
            cell(&mut w, &|b| {
                uint(b, s.compactions.get(k).copied().unwrap_or(0));
            });
        }
        cell(&mut w, &|b| {
            uint(b, s.latency_ms);
        });
        let (error_kind, message) = s
            .error
            .as_ref()
            .map_or(("", ""), |e| (e.kind.as_str(), e.message.as_str()));
        let _ = w.write_field(text_cell(error_kind).as_bytes());
        let _ = w.write_field(text_cell(message).as_bytes());
        // An empty record ends the current row.
        if let Err(e) = w.write_record(std::iter::empty::<&[u8]>()) {
            ended = Some(e);
        }
    })?;
    if let Some(e) = ended {
        return Err(io(e));
    }
    if let Some(e) = failed {
        return Err(io(e));
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Sample;
    use crate::report::table::Column;

    #[test]
    fn integers_are_written_as_display_writes_them() {
        for n in [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            let mut b = String::from("x");
            uint(&mut b, n);
            assert_eq!(b, format!("x{n}"));
        }
    }

    #[test]
    fn formula_cells_are_escaped_and_numbers_are_not() {
        for hostile in [
            "=HYPERLINK(\"http://x\",\"y\")",
            "+cmd|' /C calc'!A0",
            "-2+3",
            "@SUM(A1)",
            "\tx",
            "\rx",
            "-inf",
            "-",
        ] {
            assert_eq!(
                escape_formula(hostile),
                format!("'{hostile}"),
                "{hostile:?}"
            );
        }
        for plain in ["-1.5", "+3", "-2e-3", "0", "abc", "", "a=b", "1-2"] {
            assert_eq!(escape_formula(plain), plain, "{plain:?}");
        }
        let mut t = Table::new(None, vec![Column::text("id"), Column::num("delta")]);
        t.push(vec![Cell::text("=1+1"), Cell::Num(-0.5)]);
        assert_eq!(Csv.render(&t), "id,delta\n'=1+1,-0.5\n");
    }

    #[test]
    fn control_characters_in_text_cells_are_shown() {
        assert_eq!(
            text_cell("a\x1b[31mb\0\u{7f}\u{9b}\u{202e}"),
            "a\\x1b[31mb\\x00\\x7f\\u{9b}\\u{202e}"
        );
        // Newlines and tabs are data (quoted by the csv crate); the formula rule comes first.
        assert_eq!(text_cell("line 1\nline\t2"), "line 1\nline\t2");
        assert_eq!(text_cell("=cmd\x1b"), "'=cmd\\x1b");
        assert_eq!(text_cell("\rx"), "'\\x0dx");
        assert!(matches!(text_cell("plain"), std::borrow::Cow::Borrowed(_)));
        let mut t = Table::new(None, vec![Column::text("id")]);
        t.push(vec![Cell::text("t\x1b]0;title\x07")]);
        assert_eq!(Csv.render(&t), "id\nt\\x1b]0;title\\x07\n");
        // results.csv: a trace id, a parameter and an error message from a hostile trace.
        let samples = vec![Sample::builder()
            .unit_id("u")
            .trace("t\x1b[2J\u{202e}")
            .param("tool", "bash\x07")
            .param("path", serde_json::json!(["a\u{7f}\u{202e}b", 1]))
            .error(
                "engine",
                "large_tool_results/x\0y: NUL\nsecond line\r\nthird",
            )
            .build()];
        let info = RunInfo::new("r");
        let text = render(&info, &ReportModel::build(&info, samples));
        assert!(!text.contains(['\x1b', '\x07', '\0', '\u{202e}']), "{text}");
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        let h = r.headers().unwrap().clone();
        let row = r.records().next().unwrap().unwrap();
        let get = |col: &str| &row[h.iter().position(|c| c == col).unwrap()];
        assert_eq!(get("trace_id"), "t\\x1b[2J\\u{202e}");
        assert_eq!(get("params.tool"), "bash\\x07");
        assert_eq!(
            get("error_message"),
            "large_tool_results/x\\x00y: NUL\nsecond line\r\nthird"
        );
        // A list or object parameter stays compact JSON that parses to the recorded value.
        let path: serde_json::Value = serde_json::from_str(get("params.path")).unwrap();
        assert_eq!(path, serde_json::json!(["a\u{7f}\u{202e}b", 1]));
        assert!(!get("params.path").contains(['\u{7f}', '\u{202e}']));
    }

    #[test]
    fn floats_always_have_a_decimal_point() {
        for (x, text) in [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-3.0, "-3.0"),
            (0.25, "0.25"),
            (1e-7, "0.0000001"),
            (204679.0, "204679.0"),
            (1e21, "1000000000000000000000.0"),
        ] {
            let mut out = String::new();
            num(&mut out, x);
            assert_eq!(out, text);
            assert_eq!(out.parse::<f64>().unwrap(), x, "round-trips");
        }
        let mut out = String::new();
        num(&mut out, f64::NAN);
        assert_eq!(out, "", "non-finite is missing");
    }

    #[test]
    fn scores_are_namespaced_by_eval_and_unpriced_roles_without_tokens_cost_zero() {
        use crate::record::{CostByRole, TokensByRole};
        let tokens = TokensByRole {
            agent: TokenSplit {
                input: 10,
                output: 2,
                ..TokenSplit::default()
            },
            ..TokensByRole::default()
        };
        let cost = CostByRole {
            agent: Some(0.5),
            summarizer: None,
            judge: None,
            eval_agent: None,
        };
        let samples = vec![
            Sample::builder()
                .unit_id("a")
                .eval("needle")
                .score("recall", 1.0)
                .tokens(tokens)
                .cost(cost)
                .build(),
            Sample::builder()
                .unit_id("b")
                .eval("drift")
                .score("score", 2.5)
                .tokens(tokens)
                .cost(CostByRole {
                    agent: None,
                    ..cost
                })
                .build(),
        ];
        let info = RunInfo::new("r");
        let model = ReportModel::build(&info, samples);
        let text = render(&info, &model);
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        let h = r.headers().unwrap().clone();
        let rows: Vec<_> = r.records().map(Result::unwrap).collect();
        let get = |row: usize, col: &str| {
            let i = h
                .iter()
                .position(|c| c == col)
                .unwrap_or_else(|| panic!("{col}"));
            rows[row][i].to_string()
        };
        let row = |id: &str| rows.iter().position(|r| &r[0] == id).unwrap();
        let (a, b) = (row("a"), row("b"));
        assert_eq!(get(a, "needle.recall"), "1.0");
        assert_eq!(get(a, "drift.score"), "");
        assert_eq!(get(b, "drift.score"), "2.5");
        assert_eq!(get(a, "tokens"), "12");
        assert_eq!(get(a, "cost.summarizer"), "0.0", "no tokens: a known $0");
        assert_eq!(get(a, "cost"), "0.5");
        assert_eq!(get(b, "cost.agent"), "", "tokens and no price: unknown");
        assert_eq!(get(b, "cost"), "");
    }

    /// Each row carries report.html's word for its unit: a success whose numbers a failure
    /// touched is `flagged` (results.csv had no such column: a reader had to re-derive it).
    #[test]
    fn every_row_says_its_units_status_as_the_page_does() {
        let mut kept = Sample::builder()
            .unit_id("kept")
            .sample("kept")
            .eval("needle")
            .score("recall", 1.0)
            .score("summary_failures", 1.0)
            .passed(true)
            .build();
        kept.compactions.insert("summarized".into(), 1);
        let mut broken = Sample::builder()
            .unit_id("broken")
            .sample("broken")
            .eval("needle")
            .build();
        broken.error = Some(crate::record::UnitError {
            kind: "summary_failed".into(),
            message: "x".into(),
        });
        let samples = vec![
            kept,
            broken,
            Sample::builder()
                .unit_id("ok")
                .sample("ok")
                .eval("needle")
                .score("recall", 1.0)
                .passed(true)
                .build(),
            Sample::builder()
                .unit_id("lost")
                .sample("lost")
                .eval("needle")
                .score("recall", 0.0)
                .passed(false)
                .build(),
        ];
        let info = RunInfo::new("r");
        let model = ReportModel::build(&info, samples);
        let text = render(&info, &model);
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        let at = r
            .headers()
            .unwrap()
            .iter()
            .position(|c| c == "status")
            .unwrap();
        let status: std::collections::BTreeMap<String, String> = r
            .records()
            .map(Result::unwrap)
            .map(|row| (row[0].to_string(), row[at].to_string()))
            .collect();
        for (unit, want) in [
            ("kept", "flagged"),
            ("broken", "error"),
            ("ok", "pass"),
            ("lost", "fail"),
        ] {
            assert_eq!(status[unit], want, "{unit}");
        }
    }

    #[test]
    fn table_csv_quotes_text_and_keeps_raw_numbers() {
        let mut t = Table::new(None, vec![Column::text("name"), Column::num("mean, CI")]);
        t.push(vec![
            Cell::text("a,\"b\"\nc"),
            Cell::MeanCi {
                mean: 0.123456789,
                ci: None,
                n: 2,
            },
        ]);
        t.push(vec![Cell::text("d"), Cell::Missing]);
        assert_eq!(
            Csv.render(&t),
            "name,\"mean, CI\"\n\"a,\"\"b\"\"\nc\",0.123456789\nd,\n"
        );
    }
}
