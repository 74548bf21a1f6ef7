//! The per-sample part of the page: which samples are shown in full ([`select`]), their index
//! table (failures first, sortable and filterable like every table) and one collapsible view
//! per sample (`view`) — scores, error, the needle questions with the answer and tool calls, the
//! summaries of each fold (side by side with the baseline's summary of the same unit and fold,
//! word-level diff), and the context timeline.
//!
//! Which samples are shown (the page must stay small for a 100,000-sample run, and for a
//! sweep of many variants):
//! 1. every failed unit (error), at most [`MAX_ERRORED_SAMPLES`], and the flagged ones (a
//!    summary failed, a compaction was futile, a request was larger than without compression,
//!    an agent ran out of steps), at most
//!    [`Caps::flagged`] per variant — both the first in the report's order
//!    ([`problems_shown`]);
//! 2. the units of [`Caps::keys`] pairing keys (trace × eval × sample × repeat) in every
//!    variant, the keys taken round-robin over traces, each trace's evals first;
//! 3. up to [`Caps::failed`] units per variant whose verdict is fail, each with the
//!    baseline's unit of the same key.
//!
//! The caps per variant ([`Caps::for_variants`]) are [`MAX_FLAGGED_PER_VARIANT`],
//! [`SHOWN_PAIR_KEYS`] and [`MAX_FAILED_PER_VARIANT`] for a run of up to
//! [`FULL_CAPS_VARIANTS`] variants, and shrink with more, so that the page's totals stay
//! under what such a run's can reach (not below a few per variant: every variant is shown).
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
/// variants' fill the page). The cap of a run of up to [`FULL_CAPS_VARIANTS`] variants; more
/// share [`FULL_CAPS_VARIANTS`] times as many ([`Caps::for_variants`]).
pub const MAX_FLAGGED_PER_VARIANT: usize = 20;
/// Pairing keys whose units are shown in full in every variant (a run of up to
/// [`FULL_CAPS_VARIANTS`] variants; [`Caps::for_variants`]).
pub const SHOWN_PAIR_KEYS: usize = 12;
/// Most units with a fail verdict shown per variant (beyond rule 1 and 2; a run of up to
/// [`FULL_CAPS_VARIANTS`] variants, [`Caps::for_variants`]).
pub const MAX_FAILED_PER_VARIANT: usize = 5;
/// Variants a run may have with the caps per variant above (the needle sweep's 5). A run of
/// more shares the totals such a run can reach — 100 flagged units, the units of 60 pairing
/// keys × variants, 25 failed verdicts each with its baseline's unit: with the 200 errored
/// units, at most 410 views (~40 KB a view in the needle sweep) — each cap divided by the
/// variants, down to [`MIN_PER_VARIANT`]. A 30-variant sweep showed 660 samples (a 28 MB page,
/// as many stores kept) with the caps of 5 variants.
pub const FULL_CAPS_VARIANTS: usize = 5;
/// The least of each cap per variant, however many variants ([`Caps::for_variants`]): every
/// variant keeps two flagged units, the units of two pairing keys (two examples beside every
/// other variant's) and a failed verdict to look at. Past 50 variants the page grows again,
/// by at most 6 views a variant (two flagged, two keys, a failed verdict and its baseline).
pub const MIN_PER_VARIANT: Caps = Caps {
    flagged: 2,
    keys: 2,
    failed: 1,
};

/// The caps per variant of the samples shown in full (rules 1 to 3 of [`select`]): those of a
/// run of up to [`FULL_CAPS_VARIANTS`] variants ([`MAX_FLAGGED_PER_VARIANT`],
/// [`SHOWN_PAIR_KEYS`], [`MAX_FAILED_PER_VARIANT`]), shrunk for a run of more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Flagged units per variant (rule 1).
    pub flagged: usize,
    /// Pairing keys whose units are shown in every variant (rule 2).
    pub keys: usize,
    /// Units with a fail verdict per variant (rule 3).
    pub failed: usize,
}

impl Default for Caps {
    /// The caps of a run of up to [`FULL_CAPS_VARIANTS`] variants.
    fn default() -> Caps {
        Caps {
            flagged: MAX_FLAGGED_PER_VARIANT,
            keys: SHOWN_PAIR_KEYS,
            failed: MAX_FAILED_PER_VARIANT,
        }
    }
}

impl Caps {
    /// The caps of a run of `variants` variants (a report's: run.json's and any other its
    /// samples name; a plan's: its variants): each full cap times [`FULL_CAPS_VARIANTS`],
    /// divided by the variants, rounded down, between [`MIN_PER_VARIANT`] and the full cap.
    pub fn for_variants(variants: usize) -> Caps {
        let share = |full: usize, min: usize| {
            (full * FULL_CAPS_VARIANTS / variants.max(1)).clamp(min, full)
        };
        Caps {
            flagged: share(MAX_FLAGGED_PER_VARIANT, MIN_PER_VARIANT.flagged),
            keys: share(SHOWN_PAIR_KEYS, MIN_PER_VARIANT.keys),
            failed: share(MAX_FAILED_PER_VARIANT, MIN_PER_VARIANT.failed),
        }
    }

    /// Whether these are below the caps of a run of up to [`FULL_CAPS_VARIANTS`] variants.
    pub fn shrunk(&self) -> bool {
        *self != Caps::default()
    }
}

/// How many units [`select`] leaves out of the page past its caps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Errored or flagged units past rule 1's caps (and not shown by another rule).
    pub problems: usize,
    /// The flagged ones among `problems` (past the cap of flagged units of their variant).
    pub flagged: usize,
    /// Units whose verdict is fail (neither errored nor flagged) past rule 3's cap of their
    /// variant, and not shown by another rule.
    pub failed: usize,
}
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

/// Indices into `samples` of the samples shown in full (rules in the module doc, with the caps
/// of a run of `variants` variants), failures first, then in `samples`' order; and how many
/// units the caps left out.
pub fn select(samples: &Rows, baseline: Option<&str>, variants: usize) -> (Vec<usize>, LeftOut) {
    let mut sel = Select::default();
    for (i, s) in samples.iter().enumerate() {
        sel.first(i, &s);
    }
    sel.keys_chosen(variants);
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
/// row, so a spilled report (`report::spill`) chooses the same samples. The run's variants
/// are known once pass 1 has seen every row (a spilled report's): pass 1 takes the flagged
/// units up to the largest cap, [`Select::keys_chosen`] keeps those within the run's.
#[derive(Debug, Default)]
pub struct Select {
    /// Chosen row → its status.
    chosen: FxHashMap<usize, Status>,
    /// The run's caps per variant (set by [`Select::keys_chosen`]).
    caps: Caps,
    /// Rule 1's counts (flagged units up to the largest cap).
    problems: ProblemCaps,
    /// The flagged rows rule 1 chose, by variant, in order.
    flagged: FxHashMap<String, Vec<usize>>,
    /// Traces in first-seen order, each with the first key of every eval (first-seen order)
    /// and the first [`SHOWN_PAIR_KEYS`] of its other keys.
    traces: Vec<TraceKeys>,
    trace_at: FxHashMap<String, usize>,
    keys: FxHashSet<u64>,
    failed_per_variant: HashMap<String, usize>,
    fail_keys: FxHashSet<u64>,
    /// Errored or flagged rows past rule 1's cap that a later pass chose all the same (they
    /// are not left out); and the flagged ones among them.
    shown_past_cap: usize,
    flagged_shown_past_cap: usize,
    /// Rows with a fail verdict past rule 3's cap; and those pass 3 chose all the same.
    failed_left_out: usize,
    failed_past_cap: usize,
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
            if status == Status::Flagged {
                match self.flagged.get_mut(s.variant) {
                    Some(rows) => rows.push(i),
                    None => {
                        self.flagged.insert(s.variant.to_string(), vec![i]);
                    }
                }
            }
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

    /// Settle the caps of a run of `variants` variants ([`Caps::for_variants`]): rule 1's
    /// flagged rows past the cap of their variant are left out; and choose the pairing keys
    /// shown in every variant: round-robin over traces, each trace's evals first.
    pub fn keys_chosen(&mut self, variants: usize) {
        self.caps = Caps::for_variants(variants);
        for rows in std::mem::take(&mut self.flagged).into_values() {
            for i in rows.into_iter().skip(self.caps.flagged) {
                self.chosen.remove(&i);
                self.problems.left_out += 1;
                self.problems.flagged_left_out += 1;
            }
        }
        let mut queues: Vec<std::collections::VecDeque<u64>> = self
            .traces
            .iter()
            .map(|t| t.first.iter().chain(&t.rest).copied().collect())
            .collect();
        let keys = &mut self.keys;
        let cap = self.caps.keys;
        while keys.len() < cap && queues.iter().any(|q| !q.is_empty()) {
            for q in &mut queues {
                if keys.len() < cap {
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
            if *n < self.caps.failed {
                *n += 1;
                self.chosen.insert(i, status);
                self.fail_keys.insert(h);
            } else {
                self.failed_left_out += 1;
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
            let status = Status::of(s);
            if status == Status::Fail && !self.chosen.contains_key(&i) {
                // (A row with a fail verdict that pass 2 did not choose is past its cap.)
                self.failed_past_cap += 1;
            }
            self.choose_again(i, status);
        }
        self.chosen.contains_key(&i)
    }

    /// Choose row `i` in pass 2 or 3: an errored or flagged row not chosen yet is one rule 1
    /// left out past its cap (it chose every other), now shown.
    fn choose_again(&mut self, i: usize, status: Status) {
        let new = self.chosen.insert(i, status).is_none();
        if new && matches!(status, Status::Error | Status::Flagged) {
            self.shown_past_cap += 1;
            self.flagged_shown_past_cap += usize::from(status == Status::Flagged);
        }
    }

    /// Whether row `i` is chosen so far.
    pub fn is_chosen(&self, i: usize) -> bool {
        self.chosen.contains_key(&i)
    }

    /// The chosen rows, failures first, then in order; and how many rows the caps left out.
    pub fn finish(self) -> (Vec<usize>, LeftOut) {
        let mut out: Vec<(Status, usize)> = self.chosen.into_iter().map(|(i, s)| (s, i)).collect();
        out.sort_unstable();
        let left_out = LeftOut {
            problems: self.problems.left_out() - self.shown_past_cap,
            flagged: self.problems.flagged_left_out - self.flagged_shown_past_cap,
            failed: self.failed_left_out - self.failed_past_cap,
        };
        (out.into_iter().map(|(_, i)| i).collect(), left_out)
    }
}

/// Rule 1 of [`select`], the one definition of which failed and flagged units are shown in
/// full (`runner::stores::ProblemWindow` follows it as units end): given each sample's variant
/// and status in the report's order, the indices of the errored units among the first
/// [`MAX_ERRORED_SAMPLES`] errored ones and of the flagged units among the first
/// [`Caps::flagged`] flagged ones of their variant (a run of `variants` variants); and how
/// many errored or flagged units are left out.
pub fn problems_shown<'a>(
    samples: impl IntoIterator<Item = (&'a str, Status)>,
    variants: usize,
) -> (Vec<usize>, usize) {
    let mut caps = ProblemCaps::new(Caps::for_variants(variants).flagged);
    let shown = samples
        .into_iter()
        .enumerate()
        .filter(|(_, (variant, status))| caps.admit(variant, *status))
        .map(|(i, _)| i)
        .collect();
    (shown, caps.left_out)
}

/// Rule 1 of [`select`] ([`problems_shown`]) one sample at a time, in the report's order.
#[derive(Debug)]
pub struct ProblemCaps {
    errored: usize,
    flagged: HashMap<String, usize>,
    /// Most flagged units shown per variant.
    flagged_cap: usize,
    left_out: usize,
    /// The flagged ones among `left_out`.
    flagged_left_out: usize,
}

impl Default for ProblemCaps {
    /// With the largest cap of flagged units per variant, [`MAX_FLAGGED_PER_VARIANT`].
    fn default() -> ProblemCaps {
        ProblemCaps::new(MAX_FLAGGED_PER_VARIANT)
    }
}

impl ProblemCaps {
    /// Showing at most `flagged_cap` flagged units per variant ([`Caps::flagged`]).
    pub fn new(flagged_cap: usize) -> ProblemCaps {
        ProblemCaps {
            errored: 0,
            flagged: HashMap::new(),
            flagged_cap,
            left_out: 0,
            flagged_left_out: 0,
        }
    }

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
                (n, self.flagged_cap)
            }
            _ => return false,
        };
        if *before < cap {
            *before += 1;
            true
        } else {
            self.left_out += 1;
            self.flagged_left_out += usize::from(status == Status::Flagged);
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
    let shown = model.shown().0;
    let left_out = model.left_out();
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
    let caps = model.shown_caps();
    let head = html! {
        h2 id="samples" { "Samples" } "\n"
        p {
            (shown.len()) " of " (model.units) " sample(s) shown in full: every failed \
            unit (at most " (MAX_ERRORED_SAMPLES) ") and flagged unit (at most "
            (caps.flagged) " per variant), the units of " (caps.keys)
            " trace/eval/sample keys in every variant, and up to " (caps.failed)
            @if caps.failed == 1 { " unit" } @else { " units" }
            " per variant whose verdict is fail (with the baseline's unit of the same key). "
            @if caps.shrunk() {
                "The caps per variant shrink with the run's " (model.variants.len())
                " variants so that the page stays small (a run of up to " (FULL_CAPS_VARIANTS)
                " variants shows " (MAX_FLAGGED_PER_VARIANT) " flagged units, " (SHOWN_PAIR_KEYS)
                " keys and " (MAX_FAILED_PER_VARIANT) " failed verdicts per variant). "
            }
            "Failures first; every sample is in results.csv and samples.jsonl. A flagged unit \
            keeps its verdict in the verdict column. Filter with words or "
            code { "column=value" } " (e.g. " code { "verdict=fail variant=aggressive" } ")."
        }
        "\n"
        @if left_out.problems > 0 {
            p class="alert" {
                (left_out.problems) " more failed or flagged unit(s) are not shown in full (past \
                the first " (MAX_ERRORED_SAMPLES) " failed units, or the first "
                (caps.flagged) " flagged units of their variant)."
            }
            "\n"
        }
        // (Whatever the number of variants: nothing is left out unsaid.)
        @if left_out.failed > 0 {
            p class="alert" {
                (left_out.failed) " more unit(s) whose verdict is fail are not shown in full \
                (past the first " (caps.failed) " of their variant)."
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
        let (shown, left_out) = select(&samples.iter().cloned().collect(), Some("base"), 2);
        assert_eq!(left_out, LeftOut::default());
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
        let (shown, left_out) = select(&samples.into_iter().collect(), None, 1);
        assert_eq!(left_out.problems, 5000 - MAX_ERRORED_SAMPLES);
        assert_eq!(left_out.flagged, 0, "none of them flagged");
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
        let (shown, left_out) = select(&samples.iter().cloned().collect(), None, 2);
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
        assert_eq!((left_out.problems, left_out.flagged), (5, 5));
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
        let (shown, left_out) = select(&rows, None, 3);
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
            left_out.problems,
            (50 - 20) + (30 - 20) + (250 - MAX_ERRORED_SAMPLES)
        );
        assert_eq!(
            left_out.flagged,
            (50 - 20) + (30 - 20),
            "the errored ones apart"
        );
        // Errors first, then the flagged units variant by variant.
        assert!(shown[..MAX_ERRORED_SAMPLES]
            .iter()
            .all(|&i| status(i) == Status::Error));
        assert_eq!(
            problems_shown(
                [
                    ("a", Status::Flagged),
                    ("a", Status::Pass),
                    ("b", Status::Error)
                ],
                2
            ),
            (vec![0, 2], 0)
        );
    }

    #[test]
    fn the_caps_per_variant_shrink_with_the_variants_within_the_budgets() {
        let full = Caps::default();
        assert_eq!(
            (full.flagged, full.keys, full.failed),
            (
                MAX_FLAGGED_PER_VARIANT,
                SHOWN_PAIR_KEYS,
                MAX_FAILED_PER_VARIANT
            )
        );
        // Up to five variants (the quickstart's 4, the needle sweep's 5): the caps as they were.
        for n in 0..=FULL_CAPS_VARIANTS {
            assert_eq!(Caps::for_variants(n), full, "{n} variants");
            assert!(!Caps::for_variants(n).shrunk());
        }
        assert_eq!(
            Caps::for_variants(6),
            Caps {
                flagged: 16,
                keys: 10,
                failed: 4
            }
        );
        assert_eq!(
            Caps::for_variants(30),
            Caps {
                flagged: 3,
                keys: 2,
                failed: 1
            }
        );
        assert_eq!(Caps::for_variants(1000), MIN_PER_VARIANT);
        let mut last = full;
        for n in 1..=1000 {
            let c = Caps::for_variants(n);
            // Never more than a small run's, never fewer than a few: every variant is shown.
            for (cap, min, max) in [
                (c.flagged, MIN_PER_VARIANT.flagged, full.flagged),
                (c.keys, MIN_PER_VARIANT.keys, full.keys),
                (c.failed, MIN_PER_VARIANT.failed, full.failed),
            ] {
                assert!(min <= cap && cap <= max, "{n} variants: {c:?}");
            }
            assert!(c.flagged <= last.flagged && c.keys <= last.keys && c.failed <= last.failed);
            last = c;
            // The totals stay within five variants' until the least per variant takes over.
            let within = |cap: usize, full: usize, min: usize| {
                cap == min || n * cap <= FULL_CAPS_VARIANTS * full
            };
            assert!(
                within(c.flagged, full.flagged, MIN_PER_VARIANT.flagged),
                "{n}"
            );
            assert!(within(c.keys, full.keys, MIN_PER_VARIANT.keys), "{n}");
            assert!(within(c.failed, full.failed, MIN_PER_VARIANT.failed), "{n}");
        }
    }

    /// A grid of 30 variants: the page shows every variant's units of a few pairing keys, a few
    /// flagged units and a failed verdict of each, within budgets a 5-variant run would use,
    /// and counts every flagged unit and failed verdict it leaves out.
    #[test]
    fn a_sweep_of_many_variants_shows_a_bounded_page_that_says_what_it_leaves_out() {
        use crate::record::RunInfo;
        let names: Vec<String> = (0..30).map(|v| format!("v{v:02}")).collect();
        let mut samples = Vec::new();
        for (v, name) in names.iter().enumerate() {
            for t in 0..20 {
                for k in 0..10 {
                    let mut s = unit(name, &format!("t{t:02}"), "needle", &format!("k{k}"));
                    s.unit_id = format!("{name}/{t}/{k}");
                    s.passed = Some((t * 7 + k + v) % 5 != 0);
                    if v % 2 == 1 && (t + k) % 3 == 0 {
                        s.compactions.insert("futile".into(), 1);
                    }
                    samples.push(s);
                }
            }
        }
        let mut info = RunInfo::new("r");
        info.variants = names.clone();
        info.baseline = Some("v00".into());
        let model = ReportModel::build(&info, samples);
        let caps = model.shown_caps();
        assert_eq!(caps, Caps::for_variants(30));
        let (shown, left_out) = model.shown();
        let rows = &model.samples;
        let status = |i: usize| Status::of(&rows.get(i));
        // The keys shown in every variant: the shrunk number of them.
        let keys_of = |v: &str| -> HashSet<u64> {
            shown
                .iter()
                .filter(|&&i| rows.get(i).variant == v)
                .map(|&i| rows.get(i).pair_hash())
                .collect()
        };
        let mut common = keys_of("v00");
        for v in &names {
            common.retain(|k| keys_of(v).contains(k));
        }
        assert_eq!(common.len(), caps.keys);
        let (mut flagged_shown, mut failed_shown) = (0, 0);
        let (mut flagged_all, mut failed_all) = (0, 0);
        for v in &names {
            // The variant's flagged units and failed verdicts in the report's order.
            let of = |st: Status| -> Vec<usize> {
                (0..rows.len())
                    .filter(|&i| rows.get(i).variant == v.as_str() && status(i) == st)
                    .collect()
            };
            let flagged = of(Status::Flagged);
            for (rank, i) in flagged.iter().enumerate() {
                let by_key = common.contains(&rows.get(*i).pair_hash());
                assert_eq!(
                    shown.contains(i),
                    rank < caps.flagged || by_key,
                    "{v} {rank}"
                );
            }
            // (Every odd variant has more flagged units than a 5-variant run would show.)
            assert!(
                flagged.is_empty() || flagged.len() > MAX_FLAGGED_PER_VARIANT,
                "{v}"
            );
            // Failed verdicts outside the keys: the first of each variant (and the baseline's
            // of their keys).
            let failed: Vec<usize> = of(Status::Fail)
                .into_iter()
                .filter(|i| !common.contains(&rows.get(*i).pair_hash()))
                .collect();
            let failed_here = failed.iter().filter(|i| shown.contains(i)).count();
            if v.as_str() != "v00" {
                assert_eq!(failed_here, caps.failed, "{v}");
                assert!(shown.contains(&failed[0]), "{v}");
            }
            flagged_all += flagged.len();
            failed_all += failed.len();
            flagged_shown += flagged.iter().filter(|i| shown.contains(i)).count();
            failed_shown += failed_here;
        }
        // (The keys' flagged units are among the first of their variant.)
        assert_eq!(flagged_shown, 15 * caps.flagged);
        assert_eq!(
            left_out,
            LeftOut {
                problems: flagged_all - flagged_shown,
                flagged: flagged_all - flagged_shown,
                failed: failed_all - failed_shown,
            }
        );
        // Within the budgets of a 5-variant run: the units of 60 keys × variants, 100 flagged
        // units, 25 failed verdicts with their baseline units (the least per variant: 30).
        let full = Caps::default();
        assert!(caps.keys * 30 <= FULL_CAPS_VARIANTS * full.keys);
        assert!(flagged_shown <= FULL_CAPS_VARIANTS * full.flagged);
        assert!(shown.len() <= 60 + 100 + 2 * 30, "{}", shown.len());
        // The page says how the caps shrank and what they leave out.
        let mut page = Vec::new();
        write_section(&mut page, &model, &SummaryTexts::new()).unwrap();
        let page = String::from_utf8(page).unwrap();
        for said in [
            "at most 3 per variant), the units of 2 trace/eval/sample keys in every variant, and \
             up to 1 unit per variant whose verdict is fail",
            "The caps per variant shrink with the run's 30 variants so that the page stays small \
             (a run of up to 5 variants shows 20 flagged units, 12 keys and 5 failed verdicts per \
             variant).",
            &format!(
                "{} more failed or flagged unit(s) are not shown in full (past the first 200 \
                 failed units, or the first 3 flagged units of their variant).",
                left_out.problems
            ),
            &format!(
                "{} more unit(s) whose verdict is fail are not shown in full (past the first 1 \
                 of their variant).",
                left_out.failed
            ),
        ] {
            assert!(page.contains(said), "{said}");
        }
        // Five of the variants: the caps of a small run, as the page always said them, and the
        // failed verdicts past them counted all the same.
        let five: Vec<Sample> = (0..model.samples.len())
            .map(|i| model.samples.get(i).to_sample())
            .filter(|s| s.variant.as_str() < "v05")
            .collect();
        info.variants.truncate(5);
        let small = ReportModel::build(&info, five);
        assert!(!small.shown_caps().shrunk());
        let failed = small.shown().1.failed;
        assert!(failed > 0);
        let mut page = Vec::new();
        write_section(&mut page, &small, &SummaryTexts::new()).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("up to 5 units per variant whose verdict is fail"));
        assert!(!page.contains("shrink"));
        assert!(
            page.contains(&format!(
                "{failed} more unit(s) whose verdict is fail are not shown in full (past the \
                 first 5 of their variant)."
            )),
            "{failed}"
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
