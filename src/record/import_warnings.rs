//! Import warnings summarised for a person: grouped by kind (the text with its ids and numbers
//! replaced), each kind with its count, the traces it is in and where it first happened.
//!
//! Read from each trace's `(id, source path, warnings)` (`trace::Trace::warned`): the
//! summary is part of a run's record (run.json), below the traces in the module layering.
//!
//! One owner for every command that imports: `import` prints the summary, `replay` prints it on
//! stderr, `run` records it in run.json (`import_warnings`), whose readers turn it into a note of
//! report.md, report.html and the terminal ([`ImportWarnings::note`]), and `run --dry-run`
//! prints it with the plan.

use crate::output;
use serde::{Deserialize, Serialize};

/// Kinds an [`ImportWarnings`] keeps, most frequent first: run.json stays bounded (a kind is one
/// line, whatever the number of warnings of it).
pub const MAX_KINDS: usize = 20;

/// Kinds [`ImportWarnings::note`] names; the rest are counted.
const NOTE_KINDS: usize = 3;

/// How [`ImportWarnings::note`] starts (the terminal shows the notes that start so).
pub const NOTE: &str = "import warnings:";

/// The import warnings of some traces, grouped by kind (run.json `import_warnings`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ImportWarnings {
    /// Warnings in all.
    pub total: u64,
    /// Traces with at least one warning.
    pub traces: u64,
    /// Each kind, most frequent first ([`MAX_KINDS`] at most).
    pub kinds: Vec<WarningKind>,
    /// Warnings of the kinds past [`MAX_KINDS`], not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unlisted: u64,
}

/// One kind of import warning.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WarningKind {
    /// The warning's text, quoted ids and names as `"…"`, numbers as `N`.
    pub kind: String,
    pub count: u64,
    /// Traces with a warning of this kind.
    pub traces: u64,
    /// Where the first happened: the input file (`FILE:LINE` in a JSON Lines file), the trace
    /// id in brackets, and a JSON path or message index.
    pub first: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ImportWarnings {
    /// The warnings of `traces`, grouped by kind (most frequent first; kinds of one count in
    /// the order first met).
    pub fn of<'a>(traces: impl IntoIterator<Item = Warned<'a>>) -> Self {
        let mut out = ImportWarnings::default();
        for t in traces {
            if t.2.is_empty() {
                continue;
            }
            out.traces += 1;
            let mut met: Vec<usize> = Vec::new();
            for w in t.2 {
                out.total += 1;
                let (loc, kind) = split(w);
                let i = match out.kinds.iter().position(|k| k.kind == kind) {
                    Some(i) => i,
                    None => {
                        out.kinds.push(WarningKind {
                            kind,
                            count: 0,
                            traces: 0,
                            first: place(t, loc),
                        });
                        out.kinds.len() - 1
                    }
                };
                out.kinds[i].count += 1;
                if !met.contains(&i) {
                    met.push(i);
                    out.kinds[i].traces += 1;
                }
            }
        }
        out.kinds.sort_by_key(|k| std::cmp::Reverse(k.count));
        if out.kinds.len() > MAX_KINDS {
            out.unlisted = out.kinds.drain(MAX_KINDS..).map(|k| k.count).sum();
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// One entry per kind, `  73× KIND (in 49 traces; first: PLACE)`, wrapped within
    /// `output::WIDTH` under the kind's text (a place's path is never cut: one too long for a
    /// line stands alone on its own).
    fn kind_lines(&self) -> String {
        let Some(top) = self.kinds.first() else {
            return String::new();
        };
        let width = top.count.max(self.unlisted).to_string().len();
        let mut out = String::new();
        for k in &self.kinds {
            let label = format!("  {:>width$}× ", k.count);
            out.push_str(&output::wrap_whole(
                &label,
                output::columns(&label),
                &format!("{} ({})", k.kind, k.where_()),
                output::WIDTH,
            ));
        }
        if self.unlisted > 0 {
            out.push_str(&format!("  {:>width$}× of other kinds\n", self.unlisted));
        }
        out
    }

    /// The summary as `import` prints it, after a blank line: how many warnings in how many
    /// traces (`hint` says where each is listed), then one entry per kind; every line within
    /// `output::WIDTH` columns but a path longer than a line, alone on its own. Empty when
    /// there is none.
    pub fn text(&self, hint: &str) -> String {
        if self.is_empty() {
            return String::new();
        }
        format!(
            "\n{}{}",
            output::wrap_whole(
                "",
                2,
                &format!(
                    "{} import warning(s) in {} trace(s) ({hint})",
                    self.total, self.traces
                ),
                output::WIDTH
            ),
            self.kind_lines()
        )
    }

    /// One sentence for the notes of a run's reports, naming the first few kinds.
    pub fn note(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut kinds: Vec<String> = self
            .kinds
            .iter()
            .take(NOTE_KINDS)
            .map(|k| format!("{}× {} ({})", k.count, k.kind, k.where_()))
            .collect();
        let rest: u64 = self
            .kinds
            .iter()
            .skip(NOTE_KINDS)
            .map(|k| k.count)
            .sum::<u64>()
            + self.unlisted;
        if rest > 0 {
            kinds.push(format!("{rest} of other kinds"));
        }
        Some(format!(
            "{NOTE} {} trace(s) were altered on import ({} warning(s); run.json \
             `import_warnings`; `run --verbose` or `ctxbench import TRACES -o DIR --verbose` \
             lists each): {}",
            self.traces,
            self.total,
            kinds.join(" · ")
        ))
    }
}

impl WarningKind {
    /// `first: PLACE`, after `in N traces; ` when there are several.
    fn where_(&self) -> String {
        if self.traces > 1 {
            format!("in {} traces; first: {}", self.traces, self.first)
        } else {
            format!("first: {}", self.first)
        }
    }
}

/// A trace's id, the file it was imported from and its warnings (`trace::Trace::warned`).
pub type Warned<'a> = (&'a str, Option<&'a str>, &'a [String]);

/// Every warning of `traces` on its own line (wrapped within `output::WIDTH`, under itself),
/// after how many there are (`--verbose`). Empty when there is none.
pub fn listed<'a>(traces: impl IntoIterator<Item = Warned<'a>>) -> String {
    let traces: Vec<Warned<'a>> = traces.into_iter().filter(|t| !t.2.is_empty()).collect();
    let total: usize = traces.iter().map(|t| t.2.len()).sum();
    if total == 0 {
        return String::new();
    }
    let mut out = format!("\n{total} import warning(s) in {} trace(s)\n", traces.len());
    for (id, file, warnings) in traces {
        let file = file.unwrap_or("?");
        for w in warnings {
            out.push_str(&output::wrap_whole(
                "  ",
                4,
                &format!("{file} [{id}]: {w}"),
                output::WIDTH,
            ));
        }
    }
    out
}

/// One import warning split into where it happened (a JSON path such as `$[3].traj[8]`,
/// `message 12`, or a line of a JSON Lines file with the path in it, `line 17: $.payload`) and
/// its kind: the rest, with quoted names and numbers replaced, so that the same problem at
/// different places and with different ids groups together.
pub fn split(w: &str) -> (Option<&str>, String) {
    let numbered = |l: &str, prefix: &str| {
        l.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    let (loc, rest) = match w.split_once(": ") {
        Some((l, r)) if numbered(l, "line ") => {
            // The JSON path within the line is part of the place, not of the kind.
            match r.split_once(": ") {
                Some((p, r2)) if p.starts_with('$') => (Some(&w[..l.len() + 2 + p.len()]), r2),
                _ => (Some(l), r),
            }
        }
        Some((l, r)) if l.starts_with('$') || numbered(l, "message ") => (Some(l), r),
        _ => (None, w),
    };
    let mut kind = String::with_capacity(rest.len());
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            // A quoted value (an id, a name): its closing quote, or the rest of the text.
            let mut closed = false;
            for d in chars.by_ref() {
                if d == '"' {
                    closed = true;
                    break;
                }
            }
            kind.push_str(if closed { "\"…\"" } else { "\"…" });
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                chars.next();
            }
            kind.push('N');
        } else {
            kind.push(c);
        }
    }
    (loc, kind)
}

/// Where a warning of `t` happened, for a person: the input file (with the line of a JSON Lines
/// file), and the trace id unless the location is a JSON path of the whole file (a file may hold
/// several traces).
pub fn place((id, file, _): Warned<'_>, loc: Option<&str>) -> String {
    let file = file.unwrap_or("?");
    match loc {
        Some(l) if l.starts_with('$') => format!("{file} {l}"),
        // `line 17: $.payload` → `FILE:17 [id] $.payload` (a JSON Lines file may hold several
        // traces).
        Some(l) if l.starts_with("line ") => {
            let (n, path) = l["line ".len()..]
                .split_once(": ")
                .unwrap_or((&l["line ".len()..], ""));
            let path = if path.is_empty() {
                String::new()
            } else {
                format!(" {path}")
            };
            format!("{file}:{n} [{id}]{path}")
        }
        Some(l) => format!("{file} [{id}] {l}"),
        None => format!("{file} [{id}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_split_into_place_and_kind() {
        let (loc, kind) = split(
            "$[178].traj[32].tool_calls[0]: tool call id \"call_2J\" was already used in this \
             trace; renamed to \"call_2J__2\"",
        );
        assert_eq!(loc, Some("$[178].traj[32].tool_calls[0]"));
        assert_eq!(
            kind,
            "tool call id \"…\" was already used in this trace; renamed to \"…\""
        );
        let (loc, kind) = split("message 46: tool call \"toolu_23\" (finish) has no result");
        assert_eq!(loc, Some("message 46"));
        assert_eq!(kind, "tool call \"…\" (finish) has no result");
        // No location prefix: the whole text is the kind (numbers taken out).
        assert_eq!(
            split("skipped 3 sidechain records").1,
            "skipped N sidechain records"
        );
        assert_eq!(split("a: b").0, None);
        // A line of a JSON Lines file, with the path in it or not: the place.
        assert_eq!(
            split("line 17: $.payload.arguments: arguments are not valid JSON (x)"),
            (
                Some("line 17: $.payload.arguments"),
                "arguments are not valid JSON (x)".to_string()
            )
        );
        assert_eq!(split("line 4: odd record").0, Some("line 4"));
        assert_eq!(split("unterminated \"x").1, "unterminated \"…");
    }

    /// Kinds count their warnings and their traces, the first place kept; past `MAX_KINDS`
    /// kinds only a count (run.json stays bounded), and the note names three.
    #[test]
    fn a_summary_counts_kinds_and_traces_and_stays_bounded() {
        let trace = |id: &str, ws: Vec<String>| (id.to_string(), format!("in/{id}.jsonl"), ws);
        let of = |ts: &[(String, String, Vec<String>)]| {
            ImportWarnings::of(
                ts.iter()
                    .map(|(i, f, w)| (i.as_str(), Some(f.as_str()), w.as_slice())),
            )
        };
        let renamed = |at: usize| {
            format!("$[{at}]: tool call id \"x{at}\" was already used in this trace; renamed to \"x{at}__2\"")
        };
        let traces = [
            trace("a", vec![renamed(1), renamed(4), "line 9: $.p: odd".into()]),
            trace("b", vec![renamed(2)]),
            trace("c", vec![]),
        ];
        let w = of(&traces);
        assert_eq!((w.total, w.traces, w.kinds.len(), w.unlisted), (4, 2, 2, 0));
        assert_eq!(
            w.kinds[0],
            WarningKind {
                kind: "tool call id \"…\" was already used in this trace; renamed to \"…\"".into(),
                count: 3,
                traces: 2,
                first: "in/a.jsonl $[1]".into(),
            }
        );
        assert_eq!(w.kinds[1].first, "in/a.jsonl:9 [a] $.p");
        // Within 100 columns, wrapped under the kind's text.
        assert_eq!(
            w.text("hint"),
            "\n4 import warning(s) in 2 trace(s) (hint)\n\
             \x20 3× tool call id \"…\" was already used in this trace; renamed to \"…\" (in 2 traces; first: in/a.jsonl\n\
             \x20    $[1])\n\
             \x20 1× odd (first: in/a.jsonl:9 [a] $.p)\n"
        );
        assert!(w
            .note()
            .unwrap()
            .starts_with("import warnings: 2 trace(s) were altered on import (4 warning(s);"));
        assert_eq!(of(&traces[2..]), ImportWarnings::default());
        assert_eq!(ImportWarnings::default().note(), None);
        assert_eq!(ImportWarnings::default().text("hint"), "");

        let many: Vec<String> = (0..MAX_KINDS + 5)
            .map(|k| format!("kind{} odd", "x".repeat(k)))
            .collect();
        let w = of(&[trace("m", many)]);
        assert_eq!(
            (w.kinds.len(), w.unlisted, w.total),
            (MAX_KINDS, 5, MAX_KINDS as u64 + 5)
        );
        assert!(
            w.text("h").ends_with("\n  5× of other kinds\n"),
            "{}",
            w.text("h")
        );
        let note = w.note().unwrap();
        assert!(
            note.ends_with(&format!("{} of other kinds", MAX_KINDS + 2)),
            "{note}"
        );
    }

    /// The summary and the `--verbose` list keep to 100 columns: a kind's text wraps under
    /// itself, a warning under its file, and a path longer than a line is never cut (it
    /// stands alone on its line, for a reader to copy).
    #[test]
    fn the_summary_and_the_list_fit_100_columns_and_keep_paths_whole() {
        let long = format!("datasets/codex/{}.jsonl", "rollout-2026-02-23".repeat(7));
        let warnings = vec![
            "line 17: $.payload.arguments: arguments are not valid JSON (expected value at line 1 \
             column 2); kept as a string"
                .to_string(),
            "message 3: a message the user typed while the agent worked (`queue-operation` \
             enqueue, then remove) is placed after the tool results that followed it"
                .to_string(),
        ];
        let traced = [("rollout-1", Some(long.as_str()), warnings.as_slice())];
        let summary = ImportWarnings::of(traced).text("`ctxbench import FILE -o DIR --verbose`");
        let listed = listed(traced);
        for text in [&summary, &listed] {
            for line in text.lines() {
                assert!(
                    line.chars().count() <= 100 || line.trim().starts_with(&long),
                    "{line}\n{text}"
                );
            }
            assert!(text.lines().any(|l| l.trim().starts_with(&long)), "{text}");
        }
        assert!(
            summary.contains(
                "\n  1× arguments are not valid JSON (expected value at line N column N); kept as a \
                 string (first:\n"
            ),
            "{summary}"
        );
        assert!(
            listed.contains("\n    [rollout-1]: line 17: $.payload.arguments: arguments are not"),
            "{listed}"
        );
    }
}
