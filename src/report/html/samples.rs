//! The per-sample part of the page: which samples are shown in full ([`select`]), their index
//! table (failures first, sortable and filterable like every table) and one collapsible view
//! per sample (`view`) — scores, error, the needle questions with the answer and tool calls, the
//! summaries of each fold (side by side with the baseline's summary of the same unit and fold,
//! word-level diff), and the context timeline.
//!
//! Which samples are shown (the page must stay small for a 100,000-sample run):
//! 1. every failed unit (error), at most [`MAX_ERRORED_SAMPLES`], and the flagged ones (a
//!    summary failed, a compaction was futile, an agent ran out of steps), at most
//!    [`MAX_FLAGGED_PER_VARIANT`] per variant — both the first in the report's order
//!    ([`problems_shown`]);
//! 2. the units of [`SHOWN_PAIR_KEYS`] pairing keys (trace × eval × sample × repeat) in every
//!    variant, the keys taken round-robin over traces, each trace's evals first;
//! 3. up to [`MAX_FAILED_PER_VARIANT`] units per variant whose verdict is fail, each with the
//!    baseline's unit of the same key.
//!
//! Selection reads only the keys, error, verdict, scores and compaction counts of a sample;
//! timelines, evidence and summaries are read for the selected ones only.

use super::{view, Fragment, Html, SummaryTexts};
use crate::record::{Row, SummaryRecord};
use crate::report::model::ReportModel;
use crate::report::rows::Rows;
use crate::report::table::{Cell, Column, Table};
use maud::html;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

/// Most failed units (errors) shown in full, the first in the report's order (every errored
/// unit keeps its store anyway: `report::shown`).
pub const MAX_ERRORED_SAMPLES: usize = 200;
/// Most flagged units shown in full per variant, the first of the variant in the report's
/// order: every variant's flagged units are there to compare (a global cap let the first
/// variants' fill the page), and the page grows with the variants by at most this many views
/// each (~40 KB a view in the needle sweep).
pub const MAX_FLAGGED_PER_VARIANT: usize = 20;
/// Pairing keys whose units are shown in full in every variant.
pub const SHOWN_PAIR_KEYS: usize = 12;
/// Most units with a fail verdict shown per variant (beyond rule 1 and 2).
pub const MAX_FAILED_PER_VARIANT: usize = 5;
/// Folds whose summaries are shown per sample: the first ones and the last.
pub const MAX_FOLDS_SHOWN: usize = 5;

pub use crate::report::status::Status;

impl Status {
    pub(super) fn cell(self) -> Cell {
        match self {
            Status::Error | Status::Fail => Cell::Alert(self.label().into()),
            Status::Flagged => Cell::Strong(self.label().into()),
            Status::Pass | Status::Done => Cell::text(self.label()),
        }
    }
}

/// Indices into `samples` of the samples shown in full (rules in the module doc), failures
/// first, then in `samples`' order; and how many failed or flagged units were left out.
pub fn select(samples: &Rows, baseline: Option<&str>) -> (Vec<usize>, usize) {
    let mut sel = Select::default();
    for (i, s) in samples.iter().enumerate() {
        sel.first(i, &s);
    }
    sel.keys_chosen();
    for (i, s) in samples.iter().enumerate() {
        sel.second(i, &s);
    }
    if let Some(b) = baseline {
        if sel.wants_third() {
            for (i, s) in samples.iter().enumerate() {
                sel.third(i, &s, b);
            }
        }
    }
    sel.finish()
}

/// [`select`] over rows given one at a time in three passes (`first`, then `keys_chosen`,
/// `second`, then `third` when [`Select::wants_third`]), each over every row in the same order
/// with its index: what it holds is bounded (the chosen rows, a few keys per trace), not per
/// row, so a spilled report (`report::spill`) chooses the same samples.
#[derive(Debug, Default)]
pub struct Select {
    /// Chosen row → its status.
    chosen: FxHashMap<usize, Status>,
    /// Rule 1's counts.
    problems: ProblemCaps,
    /// Traces in first-seen order, each with the first key of every eval (first-seen order)
    /// and the first [`SHOWN_PAIR_KEYS`] of its other keys.
    traces: Vec<TraceKeys>,
    trace_at: FxHashMap<String, usize>,
    keys: FxHashSet<u64>,
    failed_per_variant: HashMap<String, usize>,
    fail_keys: FxHashSet<u64>,
    /// Errored or flagged rows past rule 1's cap that a later pass chose all the same (they
    /// are not left out).
    shown_past_cap: usize,
}

#[derive(Debug, Default)]
struct TraceKeys {
    evals: HashSet<String>,
    first: Vec<u64>,
    rest: Vec<u64>,
    seen: FxHashSet<u64>,
}

impl Select {
    /// Pass 1: failed and flagged rows, and each trace's pairing keys.
    pub fn first(&mut self, i: usize, s: &Row<'_>) {
        let status = Status::of(s);
        if self.problems.admit(s.variant, status) {
            self.chosen.insert(i, status);
        }
        let t = match self.trace_at.get(s.trace_id) {
            Some(&t) => t,
            None => {
                self.trace_at
                    .insert(s.trace_id.to_string(), self.traces.len());
                self.traces.push(TraceKeys::default());
                self.traces.len() - 1
            }
        };
        let keys = &mut self.traces[t];
        let h = s.pair_hash();
        if keys.seen.contains(&h) {
            return;
        }
        // A key belongs to one eval: once its eval has a first key and the trace's other keys
        // are enough, a later key is never taken, so it need not be remembered either.
        if !keys.evals.contains(s.eval) {
            keys.evals.insert(s.eval.to_string());
            keys.first.push(h);
            keys.seen.insert(h);
        } else if keys.rest.len() < SHOWN_PAIR_KEYS {
            keys.rest.push(h);
            keys.seen.insert(h);
        }
    }

    /// The pairing keys shown in every variant: round-robin over traces, each trace's evals
    /// first.
    pub fn keys_chosen(&mut self) {
        let mut queues: Vec<std::collections::VecDeque<u64>> = self
            .traces
            .iter()
            .map(|t| t.first.iter().chain(&t.rest).copied().collect())
            .collect();
        let keys = &mut self.keys;
        while keys.len() < SHOWN_PAIR_KEYS && queues.iter().any(|q| !q.is_empty()) {
            for q in &mut queues {
                if keys.len() < SHOWN_PAIR_KEYS {
                    if let Some(h) = q.pop_front() {
                        keys.insert(h);
                    }
                }
            }
        }
        self.traces = Vec::new();
        self.trace_at = FxHashMap::default();
    }

    /// Pass 2: the rows of the chosen keys, and a few failed verdicts per variant.
    pub fn second(&mut self, i: usize, s: &Row<'_>) {
        let h = s.pair_hash();
        if self.keys.contains(&h) {
            self.choose_again(i, Status::of(s));
            return;
        }
        let status = Status::of(s);
        if status == Status::Fail {
            let n = match self.failed_per_variant.get_mut(s.variant) {
                Some(n) => n,
                None => self
                    .failed_per_variant
                    .entry(s.variant.to_string())
                    .or_default(),
            };
            if *n < MAX_FAILED_PER_VARIANT {
                *n += 1;
                self.chosen.insert(i, status);
                self.fail_keys.insert(h);
            }
        }
    }

    /// Whether pass 3 can choose anything (some failed verdict was chosen).
    pub fn wants_third(&self) -> bool {
        !self.fail_keys.is_empty()
    }

    /// Pass 3: the baseline's rows of the chosen failed verdicts' keys; whether row `i` is
    /// chosen (by any pass so far).
    pub fn third(&mut self, i: usize, s: &Row<'_>, baseline: &str) -> bool {
        if s.variant == baseline && self.fail_keys.contains(&s.pair_hash()) {
            self.choose_again(i, Status::of(s));
        }
        self.chosen.contains_key(&i)
    }

    /// Choose row `i` in pass 2 or 3: an errored or flagged row not chosen yet is one rule 1
    /// left out past its cap (it chose every other), now shown.
    fn choose_again(&mut self, i: usize, status: Status) {
        let new = self.chosen.insert(i, status).is_none();
        if new && matches!(status, Status::Error | Status::Flagged) {
            self.shown_past_cap += 1;
        }
    }

    /// Whether row `i` is chosen so far.
    pub fn is_chosen(&self, i: usize) -> bool {
        self.chosen.contains_key(&i)
    }

    /// The chosen rows, failures first, then in order; and how many errored or flagged rows
    /// are not among them.
    pub fn finish(self) -> (Vec<usize>, usize) {
        let mut out: Vec<(Status, usize)> = self.chosen.into_iter().map(|(i, s)| (s, i)).collect();
        out.sort_unstable();
        let left_out = self.problems.left_out() - self.shown_past_cap;
        (out.into_iter().map(|(_, i)| i).collect(), left_out)
    }
}

/// Rule 1 of [`select`], the one definition of which failed and flagged units are shown in
/// full (`runner::stores::ProblemWindow` follows it as units end): given each sample's variant
/// and status in the report's order, the indices of the errored units among the first
/// [`MAX_ERRORED_SAMPLES`] errored ones and of the flagged units among the first
/// [`MAX_FLAGGED_PER_VARIANT`] flagged ones of their variant; and how many errored or flagged
/// units are left out.
pub fn problems_shown<'a>(
    samples: impl IntoIterator<Item = (&'a str, Status)>,
) -> (Vec<usize>, usize) {
    let mut caps = ProblemCaps::default();
    let shown = samples
        .into_iter()
        .enumerate()
        .filter(|(_, (variant, status))| caps.admit(variant, *status))
        .map(|(i, _)| i)
        .collect();
    (shown, caps.left_out)
}

/// Rule 1 of [`select`] ([`problems_shown`]) one sample at a time, in the report's order.
#[derive(Debug, Default)]
pub struct ProblemCaps {
    errored: usize,
    flagged: HashMap<String, usize>,
    left_out: usize,
}

impl ProblemCaps {
    /// Whether the next sample in the report's order, of `variant` with `status`, is shown
    /// under rule 1 (an errored or flagged one within its cap); one past its cap is counted as
    /// left out.
    pub fn admit(&mut self, variant: &str, status: Status) -> bool {
        let (before, cap) = match status {
            Status::Error => (&mut self.errored, MAX_ERRORED_SAMPLES),
            Status::Flagged => {
                if !self.flagged.contains_key(variant) {
                    self.flagged.insert(variant.to_string(), 0);
                }
                let n = self.flagged.get_mut(variant).expect("inserted above");
                (n, MAX_FLAGGED_PER_VARIANT)
            }
            _ => return false,
        };
        if *before < cap {
            *before += 1;
            true
        } else {
            self.left_out += 1;
            false
        }
    }

    /// Errored or flagged samples past their cap so far.
    pub fn left_out(&self) -> usize {
        self.left_out
    }
}

/// Summary records of the samples [`select`] shows whose text is in a file (the caller reads
/// them into a [`SummaryTexts`]).
pub fn summaries_in_files(model: &ReportModel) -> Vec<&SummaryRecord> {
    model
        .shown()
        .0
        .iter()
        .flat_map(|&i| folds_shown(model.samples.get(i).summaries))
        .filter(|r| r.text.is_none())
        .collect()
}

/// The first folds and the last one, at most [`MAX_FOLDS_SHOWN`].
pub(super) fn folds_shown(all: &[SummaryRecord]) -> Vec<&SummaryRecord> {
    if all.len() <= MAX_FOLDS_SHOWN {
        return all.iter().collect();
    }
    let mut v: Vec<&SummaryRecord> = all.iter().take(MAX_FOLDS_SHOWN - 1).collect();
    v.extend(all.last());
    v
}

/// Anchor of the sample at `index` of `model.samples`.
pub fn anchor(index: usize) -> String {
    format!("s{index}")
}

/// `#filter=samples-table:…` link that shows the rows of the samples table whose columns
/// equal the given values (`[("variant", "aggressive"), ("eval", "needle")]`).
pub fn filter_link(terms: &[(&str, &str)]) -> String {
    let f: Vec<String> = terms
        .iter()
        .map(|(k, v)| format!("{}={}", url_component(k), url_component(v)))
        .collect();
    format!("#filter=samples-table:{}", f.join("%20"))
}

/// Percent-encode everything but unreserved characters (RFC 3986).
fn url_component(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The main score of a sample: the first headline metric of its eval it has.
fn main_score(model: &ReportModel, s: &Row<'_>) -> Option<(String, f64)> {
    model.headline.iter().find_map(|m| {
        let key = m.strip_prefix(s.eval)?.strip_prefix('.')?;
        s.scores.get(key).map(|v| (key.to_string(), *v))
    })
}

/// The "Samples" section, written to `w`: its heading, the table, then each sample's view as it
/// is drawn (a big run's views, megabytes of markup, are never gathered into one string and
/// copied into the page's: those copies were most of the report's page faults).
pub fn write_section(
    w: &mut dyn std::io::Write,
    model: &ReportModel,
    texts: &SummaryTexts,
) -> std::io::Result<()> {
    if model.units == 0 {
        let empty = html! {
            h2 id="samples" { "Samples" } "\n"
            p class="muted" { "No sample recorded." } "\n"
        };
        return w.write_all(empty.0.as_bytes());
    }
    let (shown, left_out) = model.shown();
    let mut t = Table::new(
        Some("samples-table"),
        vec![
            Column::text("status"),
            Column::text("verdict"),
            Column::text("variant"),
            Column::text("trace"),
            Column::text("eval"),
            Column::text("sample"),
            Column::num("repeat"),
            Column::text("score"),
            Column::num("value"),
            Column::num("tokens"),
            Column::text("compactions"),
        ],
    );
    for &i in shown {
        let s = &model.samples.get(i);
        let score = main_score(model, s);
        t.push(vec![
            Status::of(s).cell(),
            // Its own column: "flagged" (futile compaction, summary failure) outranks "fail" in
            // the status, and a filter on status=fail would miss those units.
            match s.passed {
                Some(true) => Cell::text("pass"),
                Some(false) => Cell::Alert("fail".into()),
                None => Cell::Missing,
            },
            Cell::text(s.variant),
            Cell::Code(s.trace_id.to_string()),
            Cell::text(s.eval),
            Cell::Code(s.sample.to_string()),
            Cell::Int(s.repeat.into()),
            score
                .as_ref()
                .map_or(Cell::Missing, |(k, _)| Cell::text(k.clone())),
            score.map_or(Cell::Missing, |(_, v)| Cell::Num(v)),
            Cell::Int(s.tokens_total()),
            Cell::text(compactions(s)),
        ]);
    }
    // Shown units by (pairing key, variant), for the links between variants and the A/B view.
    let mut by_key: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for &i in shown {
        by_key
            .entry(model.samples.get(i).pair_hash())
            .or_default()
            .push(i);
    }
    let head = html! {
        h2 id="samples" { "Samples" } "\n"
        p {
            (shown.len()) " of " (model.units) " sample(s) shown in full: every failed \
            unit (at most " (MAX_ERRORED_SAMPLES) ") and flagged unit (at most "
            (MAX_FLAGGED_PER_VARIANT) " per variant), the units of " (SHOWN_PAIR_KEYS)
            " trace/eval/sample keys in every variant, and up to " (MAX_FAILED_PER_VARIANT)
            " units per variant whose verdict is fail (with the baseline's unit of the same key). \
            Failures first; every sample is in results.csv and samples.jsonl. A flagged unit \
            keeps its verdict in the verdict column. Filter with words or "
            code { "column=value" } " (e.g. " code { "verdict=fail variant=aggressive" } ")."
        }
        "\n"
        @if left_out > 0 {
            p class="alert" {
                (left_out) " more failed or flagged unit(s) are not shown in full (past the \
                first " (MAX_ERRORED_SAMPLES) " failed units, or the first "
                (MAX_FLAGGED_PER_VARIANT) " flagged units of their variant)."
            }
            "\n"
        }
        div class="scroll" {
            (Html::table_linked(&t, "view", &|row| {
                Some((format!("#{}", anchor(model.index_of(shown[row]))), "view".to_string()))
            }))
        }
        "\n"
    };
    w.write_all(head.0.as_bytes())?;
    // The views (the word diffs and timelines are most of the page's work) drawn a few at a time
    // on rayon's pool and written in order: at most VIEWS_AT_ONCE of them wait beside the page.
    const VIEWS_AT_ONCE: usize = 8;
    for chunk in shown.chunks(VIEWS_AT_ONCE) {
        use rayon::prelude::*;
        let drawn: Vec<Fragment> = chunk
            .par_iter()
            .map(|&i| view::sample(model, i, &by_key[&model.samples.get(i).pair_hash()], texts))
            .collect();
        for v in drawn {
            w.write_all(v.0.as_bytes())?;
        }
    }
    Ok(())
}

pub(super) fn compactions(s: &Row<'_>) -> String {
    s.compactions
        .iter()
        .map(|(k, v)| format!("{k}×{v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Sample, UnitError};

    fn unit(variant: &str, trace: &str, eval: &str, sample: &str) -> Sample {
        Sample::builder()
            .trace(trace)
            .variant(variant)
            .eval(eval)
            .sample(sample)
            .build()
    }

    #[test]
    fn an_agent_out_of_steps_flags_its_sample() {
        let mut s = unit("base", "t", "needle", "k");
        s.passed = Some(false);
        assert_eq!(Status::of(&s.row()), Status::Fail);
        s.scores.insert("step_limit".into(), 1.0);
        assert_eq!(Status::of(&s.row()), Status::Flagged);
    }

    #[test]
    fn a_prompt_the_server_cut_flags_its_sample() {
        let mut s = unit("base", "t", "needle", "k");
        s.passed = Some(true);
        s.scores.insert("prompt_truncated".into(), 0.0);
        assert_eq!(Status::of(&s.row()), Status::Pass);
        s.scores.insert("prompt_truncated".into(), 2.0);
        assert_eq!(Status::of(&s.row()), Status::Flagged);
    }

    #[test]
    fn a_request_left_over_the_window_flags_its_sample() {
        let mut s = unit("base", "t", "needle", "k");
        s.passed = Some(true);
        s.compactions.insert("overflow".into(), 0);
        assert_eq!(Status::of(&s.row()), Status::Pass);
        s.compactions.insert("overflow".into(), 3);
        assert_eq!(Status::of(&s.row()), Status::Flagged);
    }

    #[test]
    fn selection_puts_failures_first_and_covers_every_variant_of_a_key() {
        let mut samples = Vec::new();
        for v in ["base", "cand"] {
            for t in 0..10 {
                for k in 0..5 {
                    samples.push(unit(v, &format!("t{t}"), "needle", &format!("k{k}")));
                }
                samples.push(unit(v, &format!("t{t}"), "drift", "d"));
            }
        }
        let n = samples.len();
        samples[n - 1].error = Some(UnitError {
            kind: "timeout".into(),
            message: "slow".into(),
        });
        samples[3].passed = Some(false);
        samples[7].scores.insert("summary_failures".into(), 1.0);
        let (shown, left_out) = select(&samples.iter().cloned().collect(), Some("base"));
        assert_eq!(left_out, 0);
        assert_eq!(shown[0], n - 1, "the error first");
        assert_eq!(shown[1], 7, "then the flagged unit");
        assert_eq!(shown[2], 3, "then the failed verdict");
        // 12 keys over 10 traces (each trace's needle key first, then its drift key), both
        // variants: 24 units, plus the error, the flagged and the failed unit (their peers in
        // the other variant come only when chosen by key), plus the baseline of the fail.
        let keys: HashSet<u64> = shown.iter().map(|&i| samples[i].pair_hash()).collect();
        for &i in &shown {
            let h = samples[i].pair_hash();
            if Status::of(&samples[i].row()) >= Status::Pass {
                assert!(
                    shown
                        .iter()
                        .filter(|&&j| samples[j].pair_hash() == h)
                        .count()
                        == 2,
                    "a key shown by rule 2 is shown in both variants"
                );
            }
        }
        let traces: HashSet<&str> = shown
            .iter()
            .map(|&i| samples[i].trace_id.as_str())
            .collect();
        assert_eq!(traces.len(), 10, "round-robin reaches every trace");
        assert!(keys.len() >= SHOWN_PAIR_KEYS);
        assert!(shown.len() <= 2 * SHOWN_PAIR_KEYS + 3 + 1);
    }

    #[test]
    fn selection_is_bounded_on_a_big_broken_run() {
        let mut samples = Vec::new();
        for i in 0..5000 {
            let mut s = unit("v", &format!("t{}", i % 50), "needle", &i.to_string());
            s.error = Some(UnitError {
                kind: "timeout".into(),
                message: String::new(),
            });
            samples.push(s);
        }
        let (shown, left_out) = select(&samples.into_iter().collect(), None);
        assert_eq!(left_out, 5000 - MAX_ERRORED_SAMPLES);
        assert!(shown.len() <= MAX_ERRORED_SAMPLES + SHOWN_PAIR_KEYS);
    }

    #[test]
    fn a_flagged_unit_past_the_cap_shown_for_its_key_is_not_left_out() {
        let flagged = |v: &str, t: &str| {
            let mut s = unit(v, t, "needle", "k");
            s.compactions.insert("futile".into(), 1);
            s
        };
        // The baseline's units pass on traces k00-k11 (the keys shown in every variant); a's
        // first 20 flagged units are on other traces, then 5 on k00-k04 and 5 more elsewhere.
        let mut samples: Vec<Sample> = (0..SHOWN_PAIR_KEYS)
            .map(|t| unit("base", &format!("k{t:02}"), "needle", "k"))
            .collect();
        for t in 0..MAX_FLAGGED_PER_VARIANT {
            samples.push(flagged("a", &format!("x{t:02}")));
        }
        for t in 0..5 {
            samples.push(flagged("a", &format!("k{t:02}")));
        }
        for t in 0..5 {
            samples.push(flagged("a", &format!("y{t:02}")));
        }
        let (shown, left_out) = select(&samples.iter().cloned().collect(), None);
        let shown_of = |prefix: &str| {
            shown
                .iter()
                .filter(|&&i| samples[i].variant == "a" && samples[i].trace_id.starts_with(prefix))
                .count()
        };
        assert_eq!(
            (shown_of("x"), shown_of("k"), shown_of("y")),
            (MAX_FLAGGED_PER_VARIANT, 5, 0)
        );
        // Only the y units are not shown (the page says so).
        assert_eq!(left_out, 5);
    }

    #[test]
    fn flagged_units_are_capped_per_variant_errored_ones_overall() {
        // In the report's order: variant a's 50 flagged units, b's 30 flagged units and 250
        // errored ones interleaved, c's 5 flagged units.
        let mut samples = Vec::new();
        let flagged = |v: &str, t: usize| {
            let mut s = unit(v, &format!("t{t:03}"), "needle", "k");
            s.passed = Some(true);
            s.compactions.insert("futile".into(), 1);
            s
        };
        for t in 0..50 {
            samples.push(flagged("a", t));
        }
        for t in 0..280 {
            let mut s = flagged("b", t);
            if t % 28 >= 3 {
                s.error = Some(UnitError {
                    kind: "timeout".into(),
                    message: String::new(),
                });
            }
            samples.push(s);
        }
        for t in 0..5 {
            samples.push(flagged("c", t));
        }
        let rows: Rows = samples.iter().cloned().collect();
        let (shown, left_out) = select(&rows, None);
        // (Rule 2's keys are those of traces t000-t011, whose flagged units are among the first
        // of every variant.)
        let status = |i: usize| Status::of(&samples[i].row());
        let firsts = |v: &str, st: Status| -> Vec<usize> {
            (0..samples.len())
                .filter(|&i| samples[i].variant == v && status(i) == st)
                .collect()
        };
        for (v, n) in [("a", 50), ("b", 30), ("c", 5)] {
            let all = firsts(v, Status::Flagged);
            assert_eq!(all.len(), n);
            let cap = n.min(MAX_FLAGGED_PER_VARIANT);
            for (rank, i) in all.iter().enumerate() {
                assert_eq!(
                    shown.contains(i),
                    rank < cap,
                    "variant {v}, flagged unit {rank}"
                );
            }
        }
        let errored = firsts("b", Status::Error);
        assert_eq!(errored.len(), 250);
        for (rank, i) in errored.iter().enumerate() {
            assert_eq!(
                shown.contains(i),
                rank < MAX_ERRORED_SAMPLES,
                "error {rank}"
            );
        }
        assert_eq!(
            left_out,
            (50 - 20) + (30 - 20) + (250 - MAX_ERRORED_SAMPLES)
        );
        // Errors first, then the flagged units variant by variant.
        assert!(shown[..MAX_ERRORED_SAMPLES]
            .iter()
            .all(|&i| status(i) == Status::Error));
        assert_eq!(
            problems_shown([
                ("a", Status::Flagged),
                ("a", Status::Pass),
                ("b", Status::Error)
            ]),
            (vec![0, 2], 0)
        );
    }

    #[test]
    fn filter_links_are_url_encoded() {
        assert_eq!(
            filter_link(&[("variant", "a b&<"), ("eval", "needle")]),
            "#filter=samples-table:variant=a%20b%26%3C%20eval=needle"
        );
    }
}
