//! Invariants checked after every model call of every replay (SPEC §4), reported, never
//! skipped: tool calls and results stay paired, the request fits the window (or an event says
//! why not), every pointer resolves to a store file holding exactly what was removed, no
//! summary is an error string or placeholder, and summaries chain.
//!
//! Checks are linear in the view per call and use no hashing on the hot path: call/result
//! pairing is precomputed once per trace. Problems already present in the recorded trace (a
//! result with no call, a call never answered) are reported as `trace_defects`, not failures.

use super::event::{Event, EventDetail, Summary};
use super::store::{OffloadStore, Rename};
use super::view::{Item, Override, State, View};
use crate::trace::{Message, Role};
use serde::Serialize;
// Fx hashing: the keys are the replay's own ids and texts, and the maps are rebuilt per
// unit (pairing at every fork): SipHash's DoS resistance buys nothing here.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

/// The rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// No orphan tool result, no dangling tool call in a view.
    ToolPairing,
    /// The request fits the window, or an `overflow` event says why not.
    FitsWindow,
    /// Every pointer resolves to a store file with exactly the removed bytes.
    PointersResolve,
    /// No summary is an error string or a placeholder.
    SummaryValid,
    /// A later summary includes the previous one and never re-summarizes summarized turns.
    SummariesChain,
    /// The request holds the message the model answers: the trace's newest message at the
    /// call (kept, or replaced by a stub), unless a summary made at this call covers it.
    KeepsNewest,
    /// A flag, not a violation: the request is larger than the same call without compression
    /// (built-in summaries can briefly be; a compactor that always is costs more than none).
    LargerThanInput,
}

/// One broken rule at one model call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    pub call_index: usize,
    pub rule: Rule,
    pub message: String,
}

/// What the invariant checks found over a replay.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InvariantReport {
    /// Model calls checked (every call of the replay).
    pub calls_checked: u64,
    pub violations: Vec<Violation>,
    /// Problems of the recorded trace itself (present without compression).
    pub trace_defects: Vec<Violation>,
    /// Calls worth a look that break no rule ([`Rule::LargerThanInput`]); not failures. Counted,
    /// with the first one kept: `ctxbench replay` shows them, and a run's unit carries the count
    /// (`flagged_calls` in its scores and evidence), which flags it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flagged_calls: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_flag: Option<Violation>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl InvariantReport {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Why a summary text is unusable (error text, placeholder, empty), or `None` if it is fine.
pub fn unusable_summary(text: &str) -> Option<&'static str> {
    let t = text.trim();
    if t.is_empty() {
        return Some("empty summary");
    }
    // Error strings and placeholders show at the start: look at the first 200 characters.
    let lower = match t.char_indices().nth(200) {
        Some((b, _)) => t[..b].to_ascii_lowercase(),
        None => t.to_ascii_lowercase(),
    };
    if lower.starts_with("error")
        || lower.contains("error generating summary")
        || lower.contains("traceback (most recent call last)")
        || lower.starts_with("exception")
    {
        return Some("error text stored as the summary");
    }
    const PLACEHOLDERS: [&str; 9] = [
        "no previous conversation history.",
        "summary",
        "[summary]",
        "[summary unavailable]",
        "n/a",
        "none",
        "todo",
        "placeholder",
        "...",
    ];
    if PLACEHOLDERS.contains(&lower.as_str()) {
        return Some("placeholder instead of a summary");
    }
    None
}

/// The summary inside a summary message (`<summary>…</summary>`), or the whole text.
fn inner_summary(content: &str) -> &str {
    match (content.find("<summary>\n"), content.rfind("\n</summary>")) {
        (Some(a), Some(b)) if a + 10 <= b => &content[a + 10..b],
        _ => content,
    }
}

const NONE: usize = usize::MAX;

/// Per-replay checker.
#[derive(Clone)]
pub(crate) struct Checker {
    /// For tool messages: index of the assistant message that issued the call (`NONE` if none).
    caller_of: Vec<usize>,
    /// For assistant messages with calls: index of the last result (`NONE` if one is missing).
    last_result_of: Vec<usize>,
    reported: HashSet<(Rule, usize)>,
    /// Path → (rewrites, length) verified so far.
    verified: HashMap<String, (u64, u64)>,
    last_summary_cutoff: Option<usize>,
    /// Head generation whose summaries were already checked.
    checked_head: Option<u64>,
    /// Incremental pairing state for views without drops: the `start` and `end` already
    /// checked, and the largest last-result index of the assistants in `start..end`.
    paired: Option<(usize, usize, usize)>,
    pub report: InvariantReport,
}

impl Checker {
    pub fn new(messages: &[Arc<Message>]) -> Self {
        let (caller_of, last_result_of) = Self::pairing(messages);
        Checker {
            caller_of,
            last_result_of,
            reported: HashSet::default(),
            verified: HashMap::default(),
            last_summary_cutoff: None,
            checked_head: None,
            paired: None,
            report: InvariantReport::default(),
        }
    }

    /// This checker, part way through a replay, for the rest of the replay over `messages`,
    /// whose first `at` are those it checked so far: its pairing is recomputed over
    /// `messages`, and `None` when that pairing differs from the old one before `at` (what
    /// was checked would then have been checked differently). Store names in `rename` are
    /// replaced in what it remembers.
    pub fn fork(&self, messages: &[Arc<Message>], at: usize, rename: &Rename) -> Option<Checker> {
        let (caller_of, last_result_of) = Self::pairing(messages);
        let n = at.min(caller_of.len());
        if at > caller_of.len()
            || at > self.caller_of.len()
            || caller_of[..n] != self.caller_of[..n]
            || last_result_of[..n] != self.last_result_of[..n]
        {
            return None;
        }
        let mut out = Checker {
            caller_of,
            last_result_of,
            reported: self.reported.clone(),
            verified: self.verified.clone(),
            last_summary_cutoff: self.last_summary_cutoff,
            checked_head: self.checked_head,
            paired: self.paired,
            report: self.report.clone(),
        };
        if !rename.is_empty() {
            out.verified = self
                .verified
                .iter()
                .map(|(k, &v)| (rename.text(k).unwrap_or_else(|| k.clone()), v))
                .collect();
            for v in out
                .report
                .violations
                .iter_mut()
                .chain(out.report.trace_defects.iter_mut())
            {
                rename.apply(&mut v.message);
            }
        }
        Some(out)
    }

    /// For each message, the assistant message that issued it (tool results) and the last
    /// result of its calls (assistant messages with calls).
    fn pairing(messages: &[Arc<Message>]) -> (Vec<usize>, Vec<usize>) {
        let n = messages.len();
        let mut caller_of = vec![NONE; n];
        let mut last_result_of = vec![NONE; n];
        let mut open: HashMap<&str, usize> = HashMap::default();
        let mut pending: Vec<usize> = vec![0; n];
        for (i, m) in messages.iter().enumerate() {
            match m.role {
                Role::Assistant if !m.tool_calls.is_empty() => {
                    for c in &m.tool_calls {
                        open.insert(c.id.as_str(), i);
                    }
                    pending[i] = m.tool_calls.len();
                }
                Role::Tool => {
                    let id = m.tool_call_id.as_deref().unwrap_or("");
                    if let Some(a) = open.remove(id) {
                        caller_of[i] = a;
                        pending[a] -= 1;
                        if pending[a] == 0 {
                            last_result_of[a] = i;
                        }
                    }
                }
                _ => {}
            }
        }
        (caller_of, last_result_of)
    }

    fn violate(&mut self, call: usize, rule: Rule, key: usize, in_trace: bool, msg: String) {
        if !self.reported.insert((rule, key)) {
            return;
        }
        let v = Violation {
            call_index: call,
            rule,
            message: msg,
        };
        if in_trace {
            self.report.trace_defects.push(v);
        } else {
            self.report.violations.push(v);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn check_call(
        &mut self,
        call: usize,
        view: &View,
        state: &State,
        store: &OffloadStore,
        call_events: &[Event],
        sent: u64,
        reference: u64,
        window: u64,
        trace: &[Arc<Message>],
    ) {
        self.report.calls_checked += 1;
        self.check_pairing(call, view, state);
        self.check_newest(call, view, state, call_events);
        if sent > reference {
            self.report.flagged_calls += 1;
            if self.report.first_flag.is_none() {
                self.report.first_flag = Some(Violation {
                    call_index: call,
                    rule: Rule::LargerThanInput,
                    message: format!("request of {sent} tokens is larger than the {reference} tokens of the same call without compression"),
                });
            }
        }
        if sent > window
            && !call_events
                .iter()
                .any(|e| matches!(e.detail, EventDetail::Overflow { .. }))
        {
            self.violate(
                call,
                Rule::FitsWindow,
                call,
                false,
                format!("request of {sent} tokens exceeds the {window}-token window and no overflow event was recorded"),
            );
        }
        let new_head = self.checked_head != Some(view.head_generation);
        for item in &view.head {
            self.check_item(call, item, store, trace);
            if item.is_summary && new_head {
                if let Some(why) = unusable_summary(inner_summary(&item.msg.content)) {
                    self.violate(call, Rule::SummaryValid, call, false, why.to_string());
                }
            }
        }
        self.checked_head = Some(view.head_generation);
        // Entries with pointers: state stubs in range (unless overridden) and overrides.
        for idx in state.pointer_indexes(view.start, view.end) {
            if view.overrides.contains_key(&idx) {
                continue;
            }
            self.check_item(call, state.get(idx), store, trace);
        }
        for (_, o) in view.overrides.range(view.start..view.end) {
            if let Override::Replace(item) = o {
                self.check_item(call, item, store, trace);
            }
        }
        for e in call_events {
            if let Some(Summary {
                state_cutoff,
                summarized_from,
                chained,
                ..
            }) = e.detail.summary()
            {
                if let Some(prev) = self.last_summary_cutoff {
                    if *summarized_from < prev {
                        self.violate(call, Rule::SummariesChain, call, false, format!(
                            "summary re-summarizes raw messages from index {summarized_from}, already summarized before index {prev}"
                        ));
                    }
                    if !chained {
                        self.violate(
                            call,
                            Rule::SummariesChain,
                            call,
                            false,
                            "the previous summary was not passed to the summarizer".into(),
                        );
                    }
                }
                self.last_summary_cutoff = Some(*state_cutoff);
            }
        }
    }

    /// The newest message of the state (the one the model answers) must be in the request:
    /// in the range and not dropped, or as a message of the head (a view sent as synthetic
    /// messages) equal to it or replacing its tool result, or summarized at this call (a
    /// summary in the head and a summary event of the call whose cutoff is past it: Codex's
    /// compaction replaces the whole history).
    fn check_newest(&mut self, call: usize, view: &View, state: &State, call_events: &[Event]) {
        let Some(n) = view.end.checked_sub(1) else {
            return;
        };
        if n >= state.len() {
            return;
        }
        if (view.start..view.end).contains(&n) && !Self::dropped(view, n) {
            return;
        }
        let newest = &state.get(n).msg;
        let in_head = view.head.iter().any(|h| {
            *h.msg == **newest
                || (newest.role == Role::Tool
                    && h.msg.role == Role::Tool
                    && newest.tool_call_id.is_some()
                    && h.msg.tool_call_id == newest.tool_call_id)
        });
        let summarized = view.head.iter().any(|h| h.is_summary)
            && call_events
                .iter()
                .filter_map(|e| e.detail.summary())
                .any(|s| s.state_cutoff > n);
        if !in_head && !summarized {
            self.violate(
                call,
                Rule::KeepsNewest,
                call,
                false,
                format!(
                    "the request leaves out message {n}, the newest one (what the model answers)"
                ),
            );
        }
    }

    fn dropped(view: &View, idx: usize) -> bool {
        !view.overrides.is_empty() && matches!(view.overrides.get(&idx), Some(Override::Drop))
    }

    fn check_pairing(&mut self, call: usize, view: &View, state: &State) {
        self.check_head_pairing(call, view);
        let has_drops = view.overrides.values().any(|o| matches!(o, Override::Drop));
        // Fast path: the same start as last time and no drops. Only the new messages can hold
        // an orphan; a dangling call shows as a last result at or after `end`.
        if !has_drops {
            if let Some((start, end, max_last)) = self.paired {
                if start == view.start && end <= view.end {
                    let mut max_last = max_last;
                    let mut clean = true;
                    for j in end..view.end {
                        let m = &state.get(j).msg;
                        match m.role {
                            Role::Tool => {
                                let c = self.caller_of[j];
                                clean &= c != NONE && c >= view.start;
                            }
                            Role::Assistant if !m.tool_calls.is_empty() => {
                                let r = self.last_result_of[j];
                                max_last = if r == NONE { NONE } else { max_last.max(r) };
                            }
                            _ => {}
                        }
                    }
                    if clean && (max_last == 0 || max_last < view.end) {
                        self.paired = Some((view.start, view.end, max_last));
                        return;
                    }
                }
            }
        }
        self.paired = None;
        let mut max_last = 0usize;
        let mut clean = true;
        for j in view.start..view.end {
            if Self::dropped(view, j) {
                continue;
            }
            let m = &state.get(j).msg;
            match m.role {
                Role::Tool => {
                    let c = self.caller_of[j];
                    clean &= c != NONE && c >= view.start;
                    if c == NONE {
                        self.violate(
                            call,
                            Rule::ToolPairing,
                            j,
                            true,
                            format!(
                            "tool result at index {j} answers no earlier tool call in the trace"
                        ),
                        );
                    } else if c < view.start || Self::dropped(view, c) {
                        self.violate(call, Rule::ToolPairing, j, false, format!(
                            "orphan tool result at index {j}: its call (index {c}) is not in the request"
                        ));
                    }
                }
                Role::Assistant if !m.tool_calls.is_empty() => {
                    let r = self.last_result_of[j];
                    max_last = if r == NONE || max_last == NONE {
                        NONE
                    } else {
                        max_last.max(r)
                    };
                    if r == NONE {
                        self.violate(
                            call,
                            Rule::ToolPairing,
                            j,
                            true,
                            format!("tool call at index {j} is never answered in the trace"),
                        );
                    } else if r >= view.end {
                        self.violate(call, Rule::ToolPairing, j, false, format!(
                            "dangling tool call at index {j}: its results end at index {r}, after the request"
                        ));
                    } else if has_drops
                        && (j + 1..=r).any(|k| self.caller_of[k] == j && Self::dropped(view, k))
                    {
                        self.violate(
                            call,
                            Rule::ToolPairing,
                            j,
                            false,
                            format!(
                            "dangling tool call at index {j}: a result was dropped from the request"
                        ),
                        );
                    }
                }
                _ => {}
            }
        }
        if !has_drops && clean && (max_last == 0 || max_last < view.end) {
            self.paired = Some((view.start, view.end, max_last));
        }
    }

    fn check_head_pairing(&mut self, call: usize, view: &View) {
        for item in &view.head {
            if item.msg.role == Role::Tool || !item.msg.tool_calls.is_empty() {
                // Synthetic tool traffic must be self-contained within the head.
                let calls: HashSet<&str> = view
                    .head
                    .iter()
                    .flat_map(|h| h.msg.tool_calls.iter().map(|c| c.id.as_str()))
                    .collect();
                let mut results: HashSet<&str> = HashSet::default();
                let mut twice = None;
                for id in view
                    .head
                    .iter()
                    .filter_map(|h| h.msg.tool_call_id.as_deref())
                {
                    if !results.insert(id) && twice.is_none() {
                        twice = Some(id);
                    }
                }
                if let Some(id) = twice {
                    self.violate(
                        call,
                        Rule::ToolPairing,
                        NONE - 2,
                        false,
                        format!("the request holds more than one tool result for tool call `{id}`"),
                    );
                }
                if calls != results {
                    self.violate(
                        call,
                        Rule::ToolPairing,
                        NONE - 1,
                        false,
                        "synthetic messages hold unpaired tool calls or results".into(),
                    );
                }
                break;
            }
        }
    }

    fn check_item(
        &mut self,
        call: usize,
        item: &Item,
        store: &OffloadStore,
        trace: &[Arc<Message>],
    ) {
        let Some(path) = &item.pointer else { return };
        let Some((rewrites, len)) = store.file_version(path) else {
            self.violate(
                call,
                Rule::PointersResolve,
                call,
                false,
                format!("pointer {path} does not resolve to a file in the offload store"),
            );
            return;
        };
        // Appends only add bytes: those already verified are not read again.
        let verified = match self.verified.get(path) {
            Some(&(r, l)) if r == rewrites && l == len => return,
            Some(&(r, l)) if r == rewrites && l < len => l,
            _ => 0,
        };
        if let Some(o) = item.origin {
            let same = store.contents(path).is_some_and(|b| {
                trace.get(o).is_some_and(|m| {
                    let want = m.content.as_bytes();
                    // Shared with the original message: same bytes without comparing them.
                    (std::ptr::eq(want.as_ptr(), b.as_ptr()) && want.len() == b.len())
                        || want == &*b
                })
            });
            if !same {
                self.violate(
                    call,
                    Rule::PointersResolve,
                    o,
                    false,
                    format!("{path} does not hold the exact original content of message {o}"),
                );
                return;
            }
        }
        let from = verified;
        match store.read_disk_from(path, from) {
            Ok(None) => {}
            Ok(Some(disk)) if Some(&disk) == store.contents_from(path, from).as_ref() => {}
            Ok(Some(_)) => {
                self.violate(
                    call,
                    Rule::PointersResolve,
                    call,
                    false,
                    format!("{path} on disk differs from what was removed"),
                );
                return;
            }
            Err(e) => {
                self.violate(call, Rule::PointersResolve, call, false, e.to_string());
                return;
            }
        }
        self.verified.insert(path.clone(), (rewrites, len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::view::{Base, Item};
    use crate::tokens::approx::ApproxCounter;
    use crate::tokens::TokenCounter;
    use crate::trace::ToolCall;

    fn trace() -> Vec<Arc<Message>> {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: serde_json::json!({}),
        };
        vec![
            Arc::new(Message::user("go")),
            Arc::new(Message::assistant("", vec![call("a"), call("b")])),
            Arc::new(Message::tool("a", "bash", "1")),
            Arc::new(Message::tool("b", "bash", "2")),
            Arc::new(Message::assistant("done", vec![])),
        ]
    }

    /// The counter and the state holding every message of `msgs`.
    fn state_of(msgs: &[Arc<Message>]) -> (ApproxCounter, State) {
        let c = ApproxCounter::langchain();
        let mut state = State::new();
        for m in msgs {
            state.push(Item::counted(m.clone(), c.count_message(m)));
        }
        (c, state)
    }

    fn check(start: usize, end: usize, drop: Option<usize>) -> InvariantReport {
        let msgs = trace();
        let (_, state) = state_of(&msgs);
        let base = Base {
            start,
            ..Base::default()
        };
        let mut view = View::from_base(&base, end);
        if let Some(d) = drop {
            view.overrides.insert(d, Override::Drop);
        }
        let store = OffloadStore::in_memory(0);
        let mut ch = Checker::new(&msgs);
        ch.check_call(end, &view, &state, &store, &[], 10, 10, 1000, &msgs);
        ch.report
    }

    #[test]
    fn pairing_violations_are_found() {
        assert!(check(0, 4, None).passed());
        let orphan = check(2, 4, None);
        assert_eq!(orphan.violations.len(), 2, "{orphan:?}");
        assert!(orphan.violations[0].message.contains("orphan"));
        let dangling = check(0, 3, None);
        assert!(dangling.violations[0].message.contains("dangling"));
        let dropped = check(0, 4, Some(3));
        assert!(dropped.violations[0].message.contains("dropped"));
    }

    #[test]
    fn a_request_without_the_newest_message_or_larger_than_the_input_is_a_violation() {
        let msgs = trace();
        let (c, state) = state_of(&msgs);
        let store = OffloadStore::in_memory(0);
        let rules = |view: &View, sent: u64| {
            let mut ch = Checker::new(&msgs);
            ch.check_call(4, view, &state, &store, &[], sent, 10, 1000, &msgs);
            ch.report
                .violations
                .iter()
                .map(|v| v.rule)
                .collect::<Vec<_>>()
        };
        // Kept, or sent again as a synthetic message: fine.
        assert_eq!(rules(&View::from_base(&Base::default(), 4), 10), []);
        let mut synthetic = View::from_base(
            &Base {
                start: 4,
                ..Base::default()
            },
            4,
        );
        synthetic.head = msgs[..4]
            .iter()
            .map(|m| Item::new((**m).clone(), &c))
            .collect();
        assert_eq!(rules(&synthetic, 10), []);
        // An empty request, a dropped newest message.
        let empty = View::from_base(
            &Base {
                start: 4,
                ..Base::default()
            },
            4,
        );
        assert_eq!(rules(&empty, 1), [Rule::KeepsNewest]);
        let mut dropped = View::from_base(&Base::default(), 4);
        dropped.overrides.insert(3, Override::Drop);
        assert!(rules(&dropped, 10).contains(&Rule::KeepsNewest));
        // More tokens than without compression: a flag.
        let mut ch = Checker::new(&msgs);
        let whole = View::from_base(&Base::default(), 4);
        ch.check_call(4, &whole, &state, &store, &[], 11, 10, 1000, &msgs);
        assert!(ch.report.passed());
        assert_eq!(ch.report.flagged_calls, 1);
        assert_eq!(
            ch.report.first_flag.as_ref().map(|f| f.rule),
            Some(Rule::LargerThanInput)
        );
        // A tool result sent twice.
        synthetic.head.push(Item::new((*msgs[3]).clone(), &c));
        let mut ch = Checker::new(&msgs);
        ch.check_call(4, &synthetic, &state, &store, &[], 10, 10, 1000, &msgs);
        let v = &ch.report.violations;
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].rule, Rule::ToolPairing);
        assert!(
            v[0].message
                .contains("more than one tool result for tool call `b`"),
            "{v:?}"
        );
    }

    #[test]
    fn incremental_pairing_catches_what_the_full_check_does() {
        let msgs = trace();
        let (_, state) = state_of(&msgs);
        let store = OffloadStore::in_memory(0);
        let mut ch = Checker::new(&msgs);
        let view = |start: usize, end: usize| {
            View::from_base(
                &Base {
                    start,
                    ..Base::default()
                },
                end,
            )
        };
        ch.check_call(1, &view(0, 1), &state, &store, &[], 1, 1, 1000, &msgs);
        assert!(ch.paired.is_some(), "clean view enables the fast path");
        // Grows to include the call but only one of its results: dangling.
        ch.check_call(3, &view(0, 3), &state, &store, &[], 1, 1, 1000, &msgs);
        assert!(ch.report.violations[0].message.contains("dangling"));
        ch.check_call(4, &view(0, 4), &state, &store, &[], 1, 1, 1000, &msgs);
        assert!(ch.paired.is_some());
        // The start moves past the call: orphans, found by the full check.
        ch.check_call(5, &view(2, 5), &state, &store, &[], 1, 1, 1000, &msgs);
        assert_eq!(ch.report.violations.len(), 3, "{:?}", ch.report.violations);
    }

    #[test]
    fn unresolved_pointers_and_overflows_are_found() {
        let msgs = trace();
        let (c, state) = state_of(&msgs);
        let mut view = View::from_base(&Base::default(), 4);
        view.head
            .push(Item::new(Message::user("see /x"), &c).with_pointer("/x", Some(2)));
        let mut store = OffloadStore::in_memory(0);
        let mut ch = Checker::new(&msgs);
        ch.check_call(4, &view, &state, &store, &[], 2000, 2000, 1000, &msgs);
        let rules: Vec<Rule> = ch.report.violations.iter().map(|v| v.rule).collect();
        assert_eq!(rules, [Rule::FitsWindow, Rule::PointersResolve]);
        store.write("/x", b"wrong").unwrap();
        let mut ch = Checker::new(&msgs);
        ch.check_call(4, &view, &state, &store, &[], 10, 10, 1000, &msgs);
        assert!(ch.report.violations[0]
            .message
            .contains("exact original content"));
        store.write("/x", b"1").unwrap();
        let mut ch = Checker::new(&msgs);
        ch.check_call(4, &view, &state, &store, &[], 10, 10, 1000, &msgs);
        assert!(ch.report.passed());
    }

    #[test]
    fn detects_error_and_placeholder_summaries() {
        assert!(unusable_summary("Error generating summary: 500").is_some());
        assert!(unusable_summary("  ").is_some());
        assert!(unusable_summary("No previous conversation history.").is_some());
        assert!(unusable_summary("## SUMMARY\nFixed the parser.").is_none());
        assert_eq!(inner_summary("x\n<summary>\nabc\n</summary>"), "abc");
    }
}
