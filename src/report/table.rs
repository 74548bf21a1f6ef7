//! The table model every report format renders: columns (header, alignment, a Markdown length
//! cap) and rows of typed cells that keep their raw values. Which tables exist and what they
//! hold is declared once, in `sections`; how a table looks is the business of one
//! [`TableWriter`] per format (`markdown`, `html`, `terminal`, `csv`), each of which escapes
//! every cell in exactly one place. This follows hyperfine's `MarkupExporter`: one trait, a
//! renderer per format.
//!
//! Cells are typed rather than pre-formatted strings so that a writer can choose its own
//! markup (a CI in a muted span in HTML, `(n=…)` in Markdown, nothing in a terminal), and so
//! that machine formats (CSV, and later sortable HTML) get the number, not its text.

use super::model::{fmt_delta, fmt_num, fmt_p};
use crate::metrics::format::{fmt_change, fmt_mean_ci};
use crate::metrics::stats::Ci;

/// Horizontal alignment of a column (numbers right, text left).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One column: its header text (escaped by the writer like any text), alignment, the most
/// characters a text cell shows in Markdown before it is cut with `…`, and whether it is a
/// detail that narrow outputs (the terminal) leave out.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub header: String,
    pub align: Align,
    pub max_chars: usize,
    pub detail: bool,
}

/// Default Markdown length cap of a text cell.
pub const DEFAULT_MAX_CHARS: usize = 80;

impl Column {
    /// A left-aligned text column.
    pub fn text(header: impl Into<String>) -> Column {
        Column {
            header: header.into(),
            align: Align::Left,
            max_chars: DEFAULT_MAX_CHARS,
            detail: false,
        }
    }

    /// A right-aligned number column.
    pub fn num(header: impl Into<String>) -> Column {
        Column {
            align: Align::Right,
            ..Column::text(header)
        }
    }

    /// The same column marked as a detail: documents show it, the terminal leaves it out.
    pub fn detail(mut self) -> Column {
        self.detail = true;
        self
    }

    /// The same column with another Markdown length cap.
    pub fn max(mut self, max_chars: usize) -> Column {
        self.max_chars = max_chars;
        self
    }
}

/// One cell. Text variants hold untrusted text (trace ids, error messages, metric names):
/// writers escape it. Number variants hold the raw value; writers format it with
/// `metrics::format` (or, for CSV, write it in full precision).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Plain text.
    Text(String),
    /// Code-like text (a rule, an id): a code span in Markdown.
    Code(String),
    /// Emphasized text (e.g. a totals row label).
    Strong(String),
    /// Text that flags something the reader must see (e.g. a significant regression).
    Alert(String),
    /// Text that flags good news (e.g. a significant improvement).
    Good(String),
    /// A count.
    Int(u64),
    /// A measured value.
    Num(f64),
    /// A mean with its 95% CI and the number of values behind it, the mean and both bounds
    /// with one precision (`metrics::format::fmt_mean_ci`).
    MeanCi { mean: f64, ci: Option<Ci>, n: usize },
    /// A signed change with its percentage of the baseline, e.g. `+0.250 (+25.0%)`, each with
    /// the decimals it shares with its 95% CI (`ci`, `pct_ci`, not shown here:
    /// `metrics::format::fmt_delta`), so it reads as beside its interval in the CI column, the
    /// verdict line and the gate.
    Delta {
        delta: f64,
        pct: Option<f64>,
        ci: Option<Ci>,
        pct_ci: Option<Ci>,
    },
    /// The 95% CI of the change `delta` (`–` when there is none), with the decimals it shares
    /// with that change (`metrics::format::fmt_change`).
    Ci { ci: Option<Ci>, delta: f64 },
    /// A p-value (`–` when there is none).
    P(Option<f64>),
    /// No value for this row and column (`–`).
    Missing,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    /// The cell as plain text, without markup or escaping: numbers formatted for people.
    /// Writers that add markup handle the text variants themselves and use this for the rest.
    pub fn plain(&self) -> String {
        match self {
            Cell::Text(s) | Cell::Code(s) | Cell::Strong(s) | Cell::Alert(s) | Cell::Good(s) => {
                s.clone()
            }
            Cell::Int(v) => v.to_string(),
            Cell::Num(x) => fmt_num(*x),
            Cell::MeanCi { mean, ci, .. } => {
                let (m, ci) = fmt_mean_ci(*mean, ci.as_ref());
                format!("{m} {ci}")
            }
            Cell::Delta {
                delta,
                pct,
                ci,
                pct_ci,
            } => fmt_delta(*delta, ci.as_ref(), *pct, pct_ci.as_ref()),
            Cell::Ci { ci, delta } => fmt_change(*delta, ci.as_ref()).1,
            Cell::P(p) => fmt_p(*p),
            Cell::Missing => "–".to_string(),
        }
    }
}

/// A table: optional HTML id, columns, rows (each as long as `columns`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// `id` attribute of the HTML table (anchors and tests use it).
    pub id: Option<&'static str>,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(id: Option<&'static str>, columns: Vec<Column>) -> Table {
        Table {
            id,
            columns,
            rows: Vec::new(),
        }
    }

    /// Append a row; it must have one cell per column.
    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len(), "row width");
        self.rows.push(row);
    }
}

/// A renderer of tables for one output format.
pub trait TableWriter {
    /// Append `table` to `out` in this format, escaping every header and cell.
    fn write_table(&self, out: &mut String, table: &Table);

    /// `table` rendered on its own.
    fn render(&self, table: &Table) -> String {
        let mut out = String::new();
        self.write_table(&mut out, table);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::stats::CiMethod;

    #[test]
    fn plain_text_formats_numbers_like_the_report() {
        let ci = Ci {
            lo: 0.25,
            hi: 0.75,
            method: CiMethod::Bootstrap,
        };
        let mean = Cell::MeanCi {
            mean: 0.5,
            ci: Some(ci),
            n: 4,
        };
        assert_eq!(mean.plain(), "0.500 [0.250, 0.750]");
        let d = Cell::Delta {
            delta: -0.25,
            pct: Some(-25.0),
            ci: None,
            pct_ci: None,
        };
        assert_eq!(d.plain(), "-0.250 (-25.0%)");
        assert_eq!(Cell::P(Some(0.0001)).plain(), "<0.001");
        assert_eq!(Cell::Missing.plain(), "–");
        assert_eq!(Cell::Int(7).plain(), "7");
    }
}
