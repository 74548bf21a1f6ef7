//! The preset against what the real system did (`ctxbench replay --compare-recorded`): the
//! compactions the recorded session carries (`compaction` markers: Claude Code
//! `compact_boundary`, Codex `compacted`, ATIF compaction steps) beside the compactions the
//! replay made, by model call, and one agreement figure: the fraction of recorded compactions
//! the preset reproduces within ±1 model call.

use super::replay::Replay;
use crate::trace::{ContextMarker, Role, Trace};
use serde::Serialize;

/// The marker kind importers give a compaction the real system made.
pub const COMPACTION_MARKER: &str = "compaction";

/// What the comparison needs of a trace, taken before the replay consumes it.
#[derive(Clone, Debug, Default)]
pub struct RecordedCalls {
    /// Trace index of every assistant message (every model call), in order.
    pub calls: Vec<usize>,
    /// Recorded input tokens of each of those calls (usage), if recorded.
    pub input: Vec<Option<u64>>,
    /// The trace's compaction markers.
    pub markers: Vec<ContextMarker>,
}

impl RecordedCalls {
    pub fn of(trace: &Trace) -> RecordedCalls {
        let mut r = RecordedCalls::default();
        for (i, m) in trace.messages.iter().enumerate() {
            if m.role == Role::Assistant {
                r.calls.push(i);
                r.input.push(m.usage.map(|u| u.input));
            }
        }
        r.markers = trace
            .markers
            .iter()
            .filter(|m| m.kind == COMPACTION_MARKER)
            .cloned()
            .collect();
        r
    }
}

/// One compaction, recorded or replayed, placed at a model call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactionAt {
    /// Trace index of the model call that first saw the compacted context.
    pub call_index: usize,
    /// Position of that call among the trace's model calls (0-based).
    pub call_ordinal: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    /// Recorded: the marker's detail (`auto`, `manual`…); replayed: the layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Recorded: a replayed compaction lies within ±1 call. Replayed: a recorded one does.
    pub matched: bool,
}

/// `--compare-recorded` for one trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordedComparison {
    pub trace_id: String,
    pub preset: String,
    pub recorded: Vec<CompactionAt>,
    pub replayed: Vec<CompactionAt>,
    /// Recorded compactions reproduced within ±1 model call / recorded compactions; `None`
    /// when the trace records none.
    pub agreement: Option<f64>,
}

/// Compare the replay's compactions with the trace's recorded ones. A recorded compaction
/// sits before marker index `m.index`; the call that first saw its result is the first
/// model call at or after it (`tokens_after`: that call's recorded input). A compaction
/// beyond the last call is placed at a virtual call after it.
pub fn compare(rec: &RecordedCalls, replay: &Replay) -> RecordedComparison {
    let ordinal = |trace_index: usize| rec.calls.partition_point(|&c| c < trace_index);
    let mut recorded: Vec<CompactionAt> = rec
        .markers
        .iter()
        .map(|m| {
            let k = ordinal(m.index);
            CompactionAt {
                call_index: rec.calls.get(k).copied().unwrap_or(m.index),
                call_ordinal: k,
                tokens_before: m.tokens_before,
                tokens_after: rec.input.get(k).copied().flatten(),
                detail: m.detail.clone(),
                matched: false,
            }
        })
        .collect();
    let mut replayed: Vec<CompactionAt> = replay
        .events
        .iter()
        .filter(|e| e.is_compaction())
        .filter_map(|e| {
            let call = e.call_index?;
            Some(CompactionAt {
                call_index: call,
                call_ordinal: ordinal(call),
                tokens_before: e.tokens_before,
                tokens_after: e.tokens_after,
                detail: Some(e.layer.clone()),
                matched: false,
            })
        })
        .collect();
    // Several compactions of one call (a summary, then a clip) are one compaction here.
    replayed.dedup_by_key(|c| c.call_ordinal);
    let near = |a: usize, b: usize| a.abs_diff(b) <= 1;
    for r in &mut recorded {
        r.matched = replayed
            .iter()
            .any(|p| near(p.call_ordinal, r.call_ordinal));
    }
    for p in &mut replayed {
        p.matched = recorded
            .iter()
            .any(|r| near(p.call_ordinal, r.call_ordinal));
    }
    let agreement = (!recorded.is_empty())
        .then(|| recorded.iter().filter(|r| r.matched).count() as f64 / recorded.len() as f64);
    RecordedComparison {
        trace_id: replay.trace_id.clone(),
        preset: replay.preset.clone(),
        recorded,
        replayed,
        agreement,
    }
}

impl RecordedComparison {
    /// The human table of `ctxbench replay --compare-recorded`.
    pub fn render(&self) -> String {
        self.render_as(&self.trace_id)
    }

    /// [`Self::render`] naming the trace `id` (its id as the timeline above shows it: a long
    /// one shortened); the first line wraps within `output::WIDTH` columns.
    pub fn render_as(&self, id: &str) -> String {
        use std::fmt::Write as _;
        let mut out = crate::output::wrap_whole(
            "",
            2,
            &format!(
                "compactions of trace {id}: recorded (the real system) vs preset {}",
                self.preset
            ),
            crate::output::WIDTH,
        );
        let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |t| t.to_string());
        let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
        for (who, list) in [("recorded", &self.recorded), ("preset", &self.replayed)] {
            for c in list {
                rows.push((
                    c.call_ordinal,
                    vec![
                        who.to_string(),
                        // Calls numbered from 1, as `replay`'s timeline and report.html number them.
                        (c.call_ordinal + 1).to_string(),
                        c.call_index.to_string(),
                        opt(c.tokens_before),
                        opt(c.tokens_after),
                        c.detail.clone().unwrap_or_default(),
                        if c.matched { "yes" } else { "no" }.to_string(),
                    ],
                ));
            }
        }
        rows.sort_by_key(|r| r.0);
        let rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.1).collect();
        out.push_str(&crate::output::table(
            &[
                "by",
                "call",
                "message",
                "tokens before",
                "tokens after",
                "detail",
                "within ±1 call",
            ],
            &rows,
        ));
        match self.agreement {
            Some(a) => {
                let hit = self.recorded.iter().filter(|r| r.matched).count();
                let _ = writeln!(
                    out,
                    "agreement: {hit}/{} recorded compactions reproduced within ±1 call ({:.0}%); the preset compacted {} times",
                    self.recorded.len(),
                    100.0 * a,
                    self.replayed.len()
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "agreement: n/a (the trace records no compaction); the preset compacted {} times",
                    self.replayed.len()
                );
            }
        }
        out
    }
}
