//! Typed compression events: what each layer did, where, with tokens before/after and the
//! offload-store writes it made.

use super::store::Rename;
use crate::trace::Usage;
use serde::{Deserialize, Serialize};

/// One write into the offload store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoreWrite {
    /// Virtual path as shown in the context (`/large_tool_results/…`).
    pub path: String,
    /// Byte offset of this write in the file (appends land after earlier content).
    pub offset: u64,
    pub bytes: u64,
    pub append: bool,
}

/// One truncated tool call of an `args_truncated` event.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TruncatedCall {
    pub trace_index: usize,
    pub tool_call_id: String,
    pub tool: String,
    pub args: Vec<String>,
}

/// The facts of a summary record (`summarized` and `checkpoint` events). Deserialized from
/// external engines' events, where missing facts take their defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// State messages at this call (= the call's trace index).
    pub state_len: usize,
    /// Cutoff in the request as it was (which starts with the previous summary, if any).
    pub view_cutoff: usize,
    /// First state (trace) index kept after the summary.
    pub state_cutoff: usize,
    /// First raw state index summarized by this event.
    pub summarized_from: usize,
    /// The previous summary was passed to the summarizer.
    pub chained: bool,
    pub newly_summarized: usize,
    pub kept: usize,
    pub history_file: String,
    pub summary_chars: u64,
    pub summary_message: String,
    pub summarizer_model: String,
    pub summarizer_usage: Usage,
}

/// What happened: one variant per kind of event (SPEC §4 plus the store/error kinds),
/// carrying that kind's facts. Everything the engine and the CLI know about a kind is a
/// method here, each an exhaustive `match`, so a new variant does not compile until it has
/// its name ([`EventDetail::name`]), its classifications ([`EventDetail::persistent`],
/// [`EventDetail::is_compaction`], [`EventDetail::summarizer_usage`]) and its one-line
/// description ([`EventDetail::describe`]).
///
/// Serialized as an event's `detail`, `{"type": …, facts}`: `type` is the kind's name except
/// for `over_budget_clipped` (`clipped`) and `checkpoint` (`summarized`: a checkpoint is a
/// summary record).
///
/// Deserialized from the events external engines report (`engine::external`); a missing fact
/// is an error there, except in a summary record (defaults), and `summarized` always reads as
/// [`EventDetail::Summarized`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventDetail {
    /// A large tool result was offloaded and replaced by a stub (persistent).
    Evicted {
        tool: String,
        tool_call_id: String,
        chars_before: u64,
        chars_after: u64,
        path: String,
        replacement: String,
    },
    /// A large tool result was left alone: its tool is excluded ([`EXCLUDED_TOOL`]), or its
    /// file's path is another result's (deepagents does not write over a file).
    EvictionSkipped {
        tool: String,
        chars: u64,
        reason: String,
    },
    /// A large user message was offloaded; requests show a preview (per-request view).
    UserMessageEvicted {
        evicted_index: usize,
        path: String,
        chars_before: u64,
        chars_after: u64,
        preview: String,
    },
    /// Old write/edit arguments were truncated in this request (per-request view).
    ArgsTruncated {
        calls: Vec<TruncatedCall>,
        summarized_in_same_call: bool,
    },
    /// Old tool results shown as a placeholder in this request (`clear_tool_results`).
    Cleared {
        /// Tool results cleared in this request.
        cleared: usize,
        /// Trace indexes cleared for the first time (earlier calls cleared the rest).
        newly_cleared: Vec<usize>,
        /// Recent tool results kept verbatim.
        kept: usize,
        /// Older results left alone because their tool is excluded.
        excluded: usize,
        placeholder: String,
    },
    /// Older turns were replaced by a summary (persistent compaction).
    Summarized(Summary),
    /// Older messages dropped without an LLM; a reminder message replaces them (`truncate`).
    Truncated {
        /// First state (trace) index still shown.
        state_cutoff: usize,
        /// Raw trace messages dropped by this event.
        dropped: usize,
        /// Messages kept after the reminder.
        kept: usize,
        /// The injected reminder (empty when reminders are off).
        reminder: String,
    },
    /// Turn trimming (`turn_trim`, seed 001): `stage` is `tool_results` (historical results
    /// clipped head+tail), `turns` (oldest half of complete turns dropped, written to memory)
    /// or `compressed` (complete turns reduced to first user text + last reply).
    Trimmed {
        stage: String,
        /// Trace indexes affected (clipped results, or the messages dropped by compression).
        indexes: Vec<usize>,
        /// First state index still shown, when turns were dropped.
        state_cutoff: Option<usize>,
        /// Turns dropped (`turns`) or compressed (`compressed`).
        turns: usize,
        /// Memory file the dropped turns were appended to.
        memory_file: Option<String>,
        /// Usage of the memory-summary call, when one was made.
        summarizer_usage: Option<Usage>,
    },
    /// Trailing tool results were clipped because the request stayed over budget (persistent;
    /// emitted only when the clip makes the request smaller).
    #[serde(rename = "clipped")]
    OverBudgetClipped {
        clipped_index: usize,
        tool: String,
        chars_before: u64,
        chars_after: u64,
        replacement: String,
        path: Option<String>,
    },
    /// The request does not fit the window / input budget.
    Overflow {
        tokens: u64,
        limit: u64,
        message: String,
    },
    /// Emergency compaction after a (replayed) context-overflow error.
    Emergency {
        /// `keep_recent` after halving.
        keep_recent: usize,
        /// Halvings tried.
        attempts: usize,
        state_cutoff: usize,
        dropped: usize,
        /// The request fits the limit afterwards.
        fits: bool,
        limit: u64,
        /// Usage of memory-note summaries of what was dropped (turn_trim), if any: their sum.
        summarizer_usage: Option<Usage>,
        /// Each of those summaries' usage (up to three calls; priced call by call). Not
        /// serialized: a read-back event has only the sum, taken as one call.
        #[serde(skip)]
        summarizer_calls: Vec<Usage>,
    },
    /// Task-boundary checkpoint: a summary record installed at a boundary marker.
    #[serde(rename = "summarized", skip_deserializing)]
    Checkpoint(Summary),
    /// The same tool call with identical arguments repeated `repeats` times in a row.
    Watchdog {
        tool: String,
        arguments: String,
        repeats: usize,
        /// Trace index of the assistant message with the first call of the run.
        first_index: usize,
    },
    /// A cost ceiling was met: `bound` is `turn` or `session`; `action` is `stop` or `alert`.
    CostCeiling {
        bound: String,
        spent_usd: f64,
        limit_usd: f64,
        action: String,
    },
    /// A layer action failed (e.g. the summarizer returned an error); nothing was replaced.
    Error { message: String },
    /// A compaction (`compaction` = its kind) that removed no message or left the request no
    /// smaller (`reason`); a flag only.
    Futile { compaction: String, reason: String },
    /// A compaction was due but the layer's cooldown (digitorn: 30 s since the previous
    /// compaction, from trace timestamps) held it back (`since_secs` since the previous one,
    /// under `cooldown_secs`); nothing changed.
    Cooldown { since_secs: f64, cooldown_secs: f64 },
}

impl Summary {
    fn rename(&mut self, r: &Rename) {
        r.apply(&mut self.history_file);
        r.apply(&mut self.summary_message);
    }
}

impl Event {
    /// Replace the store names of `r` in every text of the event (see
    /// [`crate::engine::store::OffloadStore::fork`]).
    pub fn rename(&mut self, r: &Rename) {
        if r.is_empty() {
            return;
        }
        for w in &mut self.writes {
            r.apply(&mut w.path);
        }
        self.detail.rename(r);
    }
}

/// [`EventDetail::EvictionSkipped`]'s reason for a result of an excluded tool.
pub const EXCLUDED_TOOL: &str = "excluded tool";

impl EventDetail {
    /// Replace the store names of `r` in every text of the detail.
    pub fn rename(&mut self, r: &Rename) {
        use EventDetail::*;
        match self {
            Evicted {
                tool,
                tool_call_id,
                path,
                replacement,
                ..
            } => {
                for s in [tool, tool_call_id, path, replacement] {
                    r.apply(s);
                }
            }
            EvictionSkipped { tool, reason, .. } => {
                r.apply(tool);
                r.apply(reason);
            }
            UserMessageEvicted { path, preview, .. } => {
                r.apply(path);
                r.apply(preview);
            }
            ArgsTruncated { calls, .. } => {
                for c in calls {
                    r.apply(&mut c.tool_call_id);
                    r.apply(&mut c.tool);
                    for a in &mut c.args {
                        r.apply(a);
                    }
                }
            }
            Cleared { placeholder, .. } => r.apply(placeholder),
            Summarized(s) | Checkpoint(s) => s.rename(r),
            Truncated { reminder, .. } => r.apply(reminder),
            Trimmed {
                stage, memory_file, ..
            } => {
                r.apply(stage);
                if let Some(f) = memory_file {
                    r.apply(f);
                }
            }
            OverBudgetClipped {
                tool,
                replacement,
                path,
                ..
            } => {
                r.apply(tool);
                r.apply(replacement);
                if let Some(p) = path {
                    r.apply(p);
                }
            }
            Overflow { message, .. } | Error { message } => r.apply(message),
            Emergency { .. } | Cooldown { .. } => {}
            Watchdog {
                tool, arguments, ..
            } => {
                r.apply(tool);
                r.apply(arguments);
            }
            CostCeiling { bound, action, .. } => {
                r.apply(bound);
                r.apply(action);
            }
            Futile { compaction, reason } => {
                r.apply(compaction);
                r.apply(reason);
            }
        }
    }

    /// The kind's name: an event's `kind` in JSON, timelines and event counts.
    pub fn name(&self) -> &'static str {
        use EventDetail::*;
        match self {
            Evicted { .. } => "evicted",
            EvictionSkipped { .. } => "eviction_skipped",
            UserMessageEvicted { .. } => "user_message_evicted",
            ArgsTruncated { .. } => "args_truncated",
            Cleared { .. } => "cleared",
            Summarized(_) => "summarized",
            Truncated { .. } => "truncated",
            Trimmed { .. } => "trimmed",
            OverBudgetClipped { .. } => "over_budget_clipped",
            Overflow { .. } => "overflow",
            Emergency { .. } => "emergency",
            Checkpoint(_) => "checkpoint",
            Watchdog { .. } => "watchdog",
            CostCeiling { .. } => "cost_ceiling",
            Error { .. } => "error",
            Futile { .. } => "futile",
            Cooldown { .. } => "cooldown",
        }
    }

    /// The change stays in the state for later calls (`false`: a per-request view or a
    /// flag). The default of [`Event::persistent`]; an emergency is persistent when it dropped
    /// messages (turn_trim's also when its overflow clip replaced results, which it says).
    pub fn persistent(&self) -> bool {
        use EventDetail::*;
        match self {
            Evicted { .. }
            | Summarized(_)
            | Truncated { .. }
            | Trimmed { .. }
            | OverBudgetClipped { .. }
            | Checkpoint(_) => true,
            Emergency { dropped, .. } => *dropped > 0,
            EvictionSkipped { .. }
            | UserMessageEvicted { .. }
            | ArgsTruncated { .. }
            | Cleared { .. }
            | Overflow { .. }
            | Watchdog { .. }
            | CostCeiling { .. }
            | Error { .. }
            | Futile { .. }
            | Cooldown { .. } => false,
        }
    }

    /// A compaction kind: a persistent event of it ([`Event::is_compaction`]) compacts the
    /// history of a model call; that is what `KeepViews::AfterCompaction` keeps a view for and
    /// what is flagged `futile` when it achieves nothing. Tool-time evictions and per-request
    /// views are not compactions. The over-budget clip is one (it replaces history in the
    /// state); it is only emitted when it makes the request smaller, so it is never futile.
    pub fn is_compaction(&self) -> bool {
        use EventDetail::*;
        match self {
            Summarized(_)
            | Truncated { .. }
            | Trimmed { .. }
            | OverBudgetClipped { .. }
            | Emergency { .. }
            | Checkpoint(_) => true,
            Evicted { .. }
            | EvictionSkipped { .. }
            | UserMessageEvicted { .. }
            | ArgsTruncated { .. }
            | Cleared { .. }
            | Overflow { .. }
            | Watchdog { .. }
            | CostCeiling { .. }
            | Error { .. }
            | Futile { .. }
            | Cooldown { .. } => false,
        }
    }

    /// Messages a compaction removed from the request, for the kinds that count them.
    pub fn removed_messages(&self) -> Option<usize> {
        match self {
            EventDetail::Summarized(s) | EventDetail::Checkpoint(s) => Some(s.newly_summarized),
            EventDetail::Truncated { dropped, .. } | EventDetail::Emergency { dropped, .. } => {
                Some(*dropped)
            }
            _ => None,
        }
    }

    /// The summary record of a `summarized` or `checkpoint` event.
    pub fn summary(&self) -> Option<&Summary> {
        match self {
            EventDetail::Summarized(s) | EventDetail::Checkpoint(s) => Some(s),
            _ => None,
        }
    }

    /// The usage of each summarizer call this event made, in order (one for a summary; up to
    /// three memory notes for turn_trim's emergency).
    pub fn summarizer_call_usages(&self) -> &[Usage] {
        match self {
            EventDetail::Emergency {
                summarizer_calls, ..
            } if !summarizer_calls.is_empty() => summarizer_calls,
            _ => self.summarizer_usage().map_or(&[], std::slice::from_ref),
        }
    }

    /// The usage of the summarizer calls this event made (summed), if it made any.
    pub fn summarizer_usage(&self) -> Option<&Usage> {
        match self {
            EventDetail::Summarized(s) | EventDetail::Checkpoint(s) => Some(&s.summarizer_usage),
            EventDetail::Trimmed {
                summarizer_usage, ..
            }
            | EventDetail::Emergency {
                summarizer_usage, ..
            } => summarizer_usage.as_ref(),
            _ => None,
        }
    }

    /// The kind's facts in a few words for the `ctxbench replay` timeline (after the kind and
    /// the token change); `trace_index` is the event's.
    pub fn describe(&self, trace_index: usize) -> String {
        use EventDetail::*;
        match self {
            Evicted { path, .. } => format!(" #{trace_index} → {path}"),
            EvictionSkipped { tool, reason, .. } if reason == EXCLUDED_TOOL => {
                format!(" #{trace_index} ({tool} excluded)")
            }
            EvictionSkipped { tool, reason, .. } => format!(" #{trace_index} ({tool}: {reason})"),
            UserMessageEvicted {
                evicted_index,
                path,
                ..
            } => format!(" #{evicted_index} → {path}"),
            ArgsTruncated { calls, .. } => format!(" {} calls", calls.len()),
            Summarized(s) | Checkpoint(s) => format!(
                " {} msgs, keep from #{}{}",
                s.newly_summarized,
                s.state_cutoff,
                // A preset that keeps no raw history (codex, claude-code) has no file to name.
                if s.history_file.is_empty() {
                    String::new()
                } else {
                    format!(", history {}", s.history_file)
                }
            ),
            OverBudgetClipped {
                clipped_index,
                path,
                ..
            } => format!(
                " #{clipped_index}{}",
                path.as_ref().map(|p| format!(" → {p}")).unwrap_or_default()
            ),
            Overflow { message, .. } | Error { message } => format!(": {message}"),
            Cleared {
                cleared, excluded, ..
            } => format!(" {cleared} results ({excluded} excluded)"),
            Truncated {
                dropped,
                state_cutoff,
                ..
            } => format!(" {dropped} msgs dropped, keep from #{state_cutoff}"),
            Trimmed {
                stage,
                indexes,
                turns,
                state_cutoff,
                ..
            } => match state_cutoff {
                Some(c) => format!(" {stage}: {turns} turns, keep from #{c}"),
                None => format!(" {stage}: {} msgs", indexes.len()),
            },
            Emergency {
                keep_recent,
                dropped,
                fits,
                ..
            } => format!(
                " keep {keep_recent}, {dropped} msgs dropped{}",
                if *fits { "" } else { ", still over" }
            ),
            Watchdog { tool, repeats, .. } => {
                format!(" {tool} ×{repeats} with identical arguments")
            }
            CostCeiling {
                bound,
                spent_usd,
                limit_usd,
                action,
            } => format!(" {bound} ${spent_usd:.4} ≥ ${limit_usd:.4} ({action})"),
            Futile { compaction, reason } => format!(" {compaction} {reason}"),
            Cooldown {
                since_secs,
                cooldown_secs,
            } => format!(" {since_secs:.1} s since the last compaction (< {cooldown_secs} s)"),
        }
    }
}

/// One compression event. Serialized as `{kind, trace_index, call_index, layer, persistent,
/// tokens_before, tokens_after, writes, detail}`; `kind` is the name of `detail`'s variant.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The message concerned: the tool result for tool-time events, else the model call
    /// (assistant message) during which it happened.
    pub trace_index: usize,
    /// The model call (assistant trace index) that built the request; `None` for events that
    /// happen when a message arrives.
    pub call_index: Option<usize>,
    /// Name of the layer that emitted it.
    pub layer: String,
    /// `true` when the change stays in the state for later calls; `false` for per-request
    /// views. Set from [`EventDetail::persistent`] when the event is made.
    pub persistent: bool,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub writes: Vec<StoreWrite>,
    /// What happened (the kind and its facts).
    pub detail: EventDetail,
}

impl Event {
    /// An event about message `trace_index` outside a model call (`call_index` = `None`).
    pub fn new(trace_index: usize, layer: &str, detail: EventDetail) -> Self {
        Event {
            trace_index,
            call_index: None,
            layer: layer.to_string(),
            persistent: detail.persistent(),
            tokens_before: None,
            tokens_after: None,
            writes: Vec::new(),
            detail,
        }
    }

    /// An event of the model call at `call_index` (its `trace_index` too).
    pub fn at_call(call_index: usize, layer: &str, detail: EventDetail) -> Self {
        Event {
            call_index: Some(call_index),
            ..Event::new(call_index, layer, detail)
        }
    }

    /// The kind's name ([`EventDetail::name`]).
    pub fn kind(&self) -> &'static str {
        self.detail.name()
    }

    /// A persistent event of a compaction kind ([`EventDetail::is_compaction`]).
    pub fn is_compaction(&self) -> bool {
        self.persistent && self.detail.is_compaction()
    }

    /// One line for `ctxbench replay`: kind, token change, the kind's facts.
    pub fn describe(&self) -> String {
        let tokens = match (self.tokens_before, self.tokens_after) {
            (Some(b), Some(a)) => format!(" {b}→{a}"),
            _ => String::new(),
        };
        // A kind whose facts name no file names the files it wrote (`cleared` with offload),
        // as `evicted` names its path.
        let wrote = match self.detail {
            EventDetail::Cleared { .. } if !self.writes.is_empty() => {
                let paths: Vec<&str> = self.writes.iter().map(|w| w.path.as_str()).collect();
                format!(" → {}", paths.join(", "))
            }
            _ => String::new(),
        };
        format!(
            "{}{tokens}{}{wrote}",
            self.kind(),
            self.detail.describe(self.trace_index)
        )
    }

    /// One line for a run's context timeline: what happened at which message, the token
    /// change, where the removed content went.
    pub fn timeline_note(&self) -> String {
        use std::fmt::Write as _;
        // One buffer, sized for the usual note (one allocation per event, not one per part).
        let paths: usize = self.writes.iter().map(|w| w.path.len() + 2).sum();
        let mut d = String::with_capacity(64 + paths);
        // Writing into a String cannot fail.
        let _ = write!(d, "{} at message {}", self.kind(), self.trace_index);
        if let (Some(b), Some(a)) = (self.tokens_before, self.tokens_after) {
            let _ = write!(d, ": {b} → {a} tokens");
        }
        for (i, w) in self.writes.iter().enumerate() {
            d.push_str(if i == 0 { "; wrote " } else { ", " });
            d.push_str(&w.path);
        }
        d
    }
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Event", 9)?;
        st.serialize_field("kind", self.kind())?;
        st.serialize_field("trace_index", &self.trace_index)?;
        st.serialize_field("call_index", &self.call_index)?;
        st.serialize_field("layer", &self.layer)?;
        st.serialize_field("persistent", &self.persistent)?;
        st.serialize_field("tokens_before", &self.tokens_before)?;
        st.serialize_field("tokens_after", &self.tokens_after)?;
        st.serialize_field("writes", &self.writes)?;
        st.serialize_field("detail", &self.detail)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(u: Usage) -> Summary {
        Summary {
            state_len: 1,
            view_cutoff: 2,
            state_cutoff: 3,
            summarized_from: 4,
            chained: true,
            newly_summarized: 5,
            kept: 6,
            history_file: "h".into(),
            summary_chars: 7,
            summary_message: "m".into(),
            summarizer_model: "x".into(),
            summarizer_usage: u,
        }
    }

    #[test]
    fn an_emergency_keeps_each_memory_note_call_beside_their_sum() {
        let (a, b) = (
            Usage {
                input: 150_000,
                output: 500,
                ..Usage::default()
            },
            Usage {
                input: 60_000,
                output: 300,
                ..Usage::default()
            },
        );
        let mut sum = a;
        sum.add(&b);
        let e = EventDetail::Emergency {
            keep_recent: 1,
            attempts: 2,
            state_cutoff: 3,
            dropped: 4,
            fits: true,
            limit: 5,
            summarizer_usage: Some(sum),
            summarizer_calls: vec![a, b],
        };
        // Two calls, priced and counted one by one; the sum is what is written.
        assert_eq!(e.summarizer_call_usages(), &[a, b]);
        assert_eq!(e.summarizer_usage(), Some(&sum));
        let json = serde_json::to_value(&e).unwrap();
        assert!(json.get("summarizer_calls").is_none(), "{json}");
        assert_eq!(json["summarizer_usage"]["input"], 210_000);
        // Read back, the sum is one call; a summary's usage is its one call; no usage, none.
        let back: EventDetail = serde_json::from_value(json).unwrap();
        assert_eq!(back.summarizer_call_usages(), &[sum]);
        assert_eq!(
            EventDetail::Summarized(summary(a)).summarizer_call_usages(),
            &[a]
        );
        let quiet = one_of_each()
            .into_iter()
            .find(|e| matches!(e, EventDetail::Emergency { .. }))
            .unwrap();
        assert!(quiet.summarizer_call_usages().is_empty());
    }

    /// One event of every kind, in the order of the expected lines below.
    fn one_of_each() -> Vec<EventDetail> {
        use EventDetail::*;
        let u = Usage {
            input: 5,
            output: 7,
            ..Default::default()
        };
        vec![
            Evicted {
                tool: "t".into(),
                tool_call_id: "c".into(),
                chars_before: 1,
                chars_after: 2,
                path: "p".into(),
                replacement: "r".into(),
            },
            EvictionSkipped {
                tool: "t".into(),
                chars: 3,
                reason: "why".into(),
            },
            UserMessageEvicted {
                evicted_index: 2,
                path: "p".into(),
                chars_before: 1,
                chars_after: 2,
                preview: "pv".into(),
            },
            ArgsTruncated {
                calls: vec![TruncatedCall {
                    trace_index: 1,
                    tool_call_id: "c".into(),
                    tool: "t".into(),
                    args: vec!["a".into()],
                }],
                summarized_in_same_call: true,
            },
            Cleared {
                cleared: 1,
                newly_cleared: vec![2, 3],
                kept: 4,
                excluded: 5,
                placeholder: "ph".into(),
            },
            Summarized(summary(u)),
            Truncated {
                state_cutoff: 1,
                dropped: 2,
                kept: 3,
                reminder: "r".into(),
            },
            Trimmed {
                stage: "turns".into(),
                indexes: vec![1],
                state_cutoff: Some(2),
                turns: 3,
                memory_file: Some("m".into()),
                summarizer_usage: Some(u),
            },
            OverBudgetClipped {
                clipped_index: 1,
                tool: "t".into(),
                chars_before: 2,
                chars_after: 3,
                replacement: "r".into(),
                path: None,
            },
            Overflow {
                tokens: 1,
                limit: 2,
                message: "m".into(),
            },
            Emergency {
                keep_recent: 1,
                attempts: 2,
                state_cutoff: 3,
                dropped: 4,
                fits: false,
                limit: 5,
                summarizer_usage: None,
                summarizer_calls: Vec::new(),
            },
            Checkpoint(summary(u)),
            Watchdog {
                tool: "t".into(),
                arguments: "{}".into(),
                repeats: 3,
                first_index: 1,
            },
            CostCeiling {
                bound: "turn".into(),
                spent_usd: 1.5,
                limit_usd: 1.0,
                action: "stop".into(),
            },
            Error {
                message: "e".into(),
            },
            Futile {
                compaction: "summarized".into(),
                reason: "r".into(),
            },
            Cooldown {
                since_secs: 1.5,
                cooldown_secs: 30.0,
            },
        ]
    }

    /// The position of `d`'s variant in [`one_of_each`]: a new variant does not compile until
    /// it is numbered here, and then [`one_of_each_has_every_kind`] wants a sample of it.
    fn position(d: &EventDetail) -> usize {
        use EventDetail::*;
        match d {
            Evicted { .. } => 0,
            EvictionSkipped { .. } => 1,
            UserMessageEvicted { .. } => 2,
            ArgsTruncated { .. } => 3,
            Cleared { .. } => 4,
            Summarized(_) => 5,
            Truncated { .. } => 6,
            Trimmed { .. } => 7,
            OverBudgetClipped { .. } => 8,
            Overflow { .. } => 9,
            Emergency { .. } => 10,
            Checkpoint(_) => 11,
            Watchdog { .. } => 12,
            CostCeiling { .. } => 13,
            Error { .. } => 14,
            Futile { .. } => 15,
            Cooldown { .. } => 16,
        }
    }

    #[test]
    fn timeline_notes_name_the_kind_the_tokens_and_the_writes() {
        let write = |path: &str| StoreWrite {
            path: path.into(),
            offset: 0,
            bytes: 1,
            append: false,
        };
        let mut e = Event::new(7, "l", one_of_each().remove(0));
        let kind = e.kind();
        assert_eq!(e.timeline_note(), format!("{kind} at message 7"));
        e.tokens_before = Some(900);
        assert_eq!(e.timeline_note(), format!("{kind} at message 7"));
        e.tokens_after = Some(120);
        assert_eq!(
            e.timeline_note(),
            format!("{kind} at message 7: 900 → 120 tokens")
        );
        e.writes = vec![write("/large_tool_results/a")];
        assert_eq!(
            e.timeline_note(),
            format!("{kind} at message 7: 900 → 120 tokens; wrote /large_tool_results/a")
        );
        e.tokens_before = None;
        e.writes.push(write("/conversation_history/s.md"));
        assert_eq!(
            e.timeline_note(),
            format!("{kind} at message 7; wrote /large_tool_results/a, /conversation_history/s.md")
        );
    }

    #[test]
    fn one_of_each_has_every_kind() {
        let at: Vec<usize> = one_of_each().iter().map(position).collect();
        assert_eq!(at, (0..at.len()).collect::<Vec<_>>());
        assert_eq!(at.len(), 17, "a new kind: add its sample to one_of_each");
    }

    #[test]
    fn detail_type_is_the_kind_but_for_two_aliases() {
        for d in one_of_each() {
            let v = serde_json::to_value(&d).unwrap();
            let ty = v["type"].as_str().unwrap().to_string();
            let want = match d.name() {
                "over_budget_clipped" => "clipped",
                "checkpoint" => "summarized",
                n => n,
            };
            assert_eq!(ty, want);
        }
    }

    #[test]
    fn every_kind_is_documented() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/engine.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let events = text
            .split("## Events")
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .expect("docs/engine.md has an Events section");
        for d in one_of_each() {
            assert!(
                events.contains(&format!("`{}`", d.name())),
                "event kind {} is not listed under Events in docs/engine.md",
                d.name()
            );
        }
    }

    /// Serialized by the two-enum `Event` (`kind: EventKind` + `detail: EventDetail`, derived
    /// `Serialize`) before the enums became one: run.json, samples.jsonl and `replay --json`
    /// read the same bytes.
    const BEFORE: &[&str] = &[
        r#"{"kind":"evicted","trace_index":10,"call_index":10,"layer":"layer","persistent":true,"tokens_before":100,"tokens_after":50,"writes":[{"path":"/p","offset":3,"bytes":9,"append":true}],"detail":{"type":"evicted","tool":"t","tool_call_id":"c","chars_before":1,"chars_after":2,"path":"p","replacement":"r"}}"#,
        r#"{"kind":"eviction_skipped","trace_index":11,"call_index":null,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":null,"writes":[],"detail":{"type":"eviction_skipped","tool":"t","chars":3,"reason":"why"}}"#,
        r#"{"kind":"user_message_evicted","trace_index":12,"call_index":12,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":50,"writes":[],"detail":{"type":"user_message_evicted","evicted_index":2,"path":"p","chars_before":1,"chars_after":2,"preview":"pv"}}"#,
        r#"{"kind":"args_truncated","trace_index":13,"call_index":null,"layer":"layer","persistent":true,"tokens_before":100,"tokens_after":null,"writes":[],"detail":{"type":"args_truncated","calls":[{"trace_index":1,"tool_call_id":"c","tool":"t","args":["a"]}],"summarized_in_same_call":true}}"#,
        r#"{"kind":"cleared","trace_index":14,"call_index":14,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":50,"writes":[{"path":"/p","offset":3,"bytes":9,"append":true}],"detail":{"type":"cleared","cleared":1,"newly_cleared":[2,3],"kept":4,"excluded":5,"placeholder":"ph"}}"#,
        r#"{"kind":"summarized","trace_index":15,"call_index":null,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":null,"writes":[],"detail":{"type":"summarized","state_len":1,"view_cutoff":2,"state_cutoff":3,"summarized_from":4,"chained":true,"newly_summarized":5,"kept":6,"history_file":"h","summary_chars":7,"summary_message":"m","summarizer_model":"x","summarizer_usage":{"input":5,"output":7,"cache_read":0,"cache_write":0}}}"#,
        r#"{"kind":"truncated","trace_index":16,"call_index":16,"layer":"layer","persistent":true,"tokens_before":100,"tokens_after":50,"writes":[],"detail":{"type":"truncated","state_cutoff":1,"dropped":2,"kept":3,"reminder":"r"}}"#,
        r#"{"kind":"trimmed","trace_index":17,"call_index":null,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":null,"writes":[],"detail":{"type":"trimmed","stage":"turns","indexes":[1],"state_cutoff":2,"turns":3,"memory_file":"m","summarizer_usage":{"input":5,"output":7,"cache_read":0,"cache_write":0}}}"#,
        r#"{"kind":"over_budget_clipped","trace_index":18,"call_index":18,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":50,"writes":[{"path":"/p","offset":3,"bytes":9,"append":true}],"detail":{"type":"clipped","clipped_index":1,"tool":"t","chars_before":2,"chars_after":3,"replacement":"r","path":null}}"#,
        r#"{"kind":"overflow","trace_index":19,"call_index":null,"layer":"layer","persistent":true,"tokens_before":100,"tokens_after":null,"writes":[],"detail":{"type":"overflow","tokens":1,"limit":2,"message":"m"}}"#,
        r#"{"kind":"emergency","trace_index":20,"call_index":20,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":50,"writes":[],"detail":{"type":"emergency","keep_recent":1,"attempts":2,"state_cutoff":3,"dropped":4,"fits":false,"limit":5,"summarizer_usage":null}}"#,
        r#"{"kind":"checkpoint","trace_index":21,"call_index":null,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":null,"writes":[],"detail":{"type":"summarized","state_len":1,"view_cutoff":2,"state_cutoff":3,"summarized_from":4,"chained":true,"newly_summarized":5,"kept":6,"history_file":"h","summary_chars":7,"summary_message":"m","summarizer_model":"x","summarizer_usage":{"input":5,"output":7,"cache_read":0,"cache_write":0}}}"#,
        r#"{"kind":"watchdog","trace_index":22,"call_index":22,"layer":"layer","persistent":true,"tokens_before":100,"tokens_after":50,"writes":[{"path":"/p","offset":3,"bytes":9,"append":true}],"detail":{"type":"watchdog","tool":"t","arguments":"{}","repeats":3,"first_index":1}}"#,
        r#"{"kind":"cost_ceiling","trace_index":23,"call_index":null,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":null,"writes":[],"detail":{"type":"cost_ceiling","bound":"turn","spent_usd":1.5,"limit_usd":1.0,"action":"stop"}}"#,
        r#"{"kind":"error","trace_index":24,"call_index":24,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":50,"writes":[],"detail":{"type":"error","message":"e"}}"#,
        r#"{"kind":"futile","trace_index":25,"call_index":null,"layer":"layer","persistent":true,"tokens_before":100,"tokens_after":null,"writes":[],"detail":{"type":"futile","compaction":"summarized","reason":"r"}}"#,
        r#"{"kind":"cooldown","trace_index":26,"call_index":26,"layer":"layer","persistent":false,"tokens_before":100,"tokens_after":50,"writes":[{"path":"/p","offset":3,"bytes":9,"append":true}],"detail":{"type":"cooldown","since_secs":1.5,"cooldown_secs":30.0}}"#,
    ];

    #[test]
    fn events_serialize_as_before_the_enums_were_merged() {
        let w = StoreWrite {
            path: "/p".into(),
            offset: 3,
            bytes: 9,
            append: true,
        };
        let all = one_of_each();
        assert_eq!(all.len(), BEFORE.len());
        for (i, (d, want)) in all.into_iter().zip(BEFORE).enumerate() {
            let mut e = Event::new(10 + i, "layer", d);
            e.call_index = (i % 2 == 0).then_some(10 + i);
            e.persistent = i % 3 == 0;
            e.tokens_before = Some(100);
            e.tokens_after = (i % 2 == 0).then_some(50);
            e.writes = if i % 4 == 0 { vec![w.clone()] } else { vec![] };
            assert_eq!(serde_json::to_string(&e).unwrap(), *want, "{}", e.kind());
        }
    }

    #[test]
    fn classifications() {
        // The kinds, in `one_of_each` order, whose sample `is` holds for.
        let kinds = |is: fn(&EventDetail) -> bool| -> Vec<&'static str> {
            one_of_each()
                .iter()
                .filter(|d| is(d))
                .map(EventDetail::name)
                .collect()
        };
        assert_eq!(
            kinds(EventDetail::persistent),
            [
                "evicted",
                "summarized",
                "truncated",
                "trimmed",
                "over_budget_clipped",
                "emergency",
                "checkpoint"
            ]
        );
        assert_eq!(
            kinds(EventDetail::is_compaction),
            [
                "summarized",
                "truncated",
                "trimmed",
                "over_budget_clipped",
                "emergency",
                "checkpoint"
            ]
        );
        // An emergency that dropped nothing is not persistent, hence not a compaction.
        let quiet = EventDetail::Emergency {
            keep_recent: 1,
            attempts: 1,
            state_cutoff: 0,
            dropped: 0,
            fits: false,
            limit: 1,
            summarizer_usage: None,
            summarizer_calls: Vec::new(),
        };
        assert!(!Event::at_call(3, "emergency", quiet).is_compaction());
        // Names are unique; every kind says something beyond its name.
        let names: std::collections::BTreeSet<&str> =
            one_of_each().iter().map(EventDetail::name).collect();
        assert_eq!(names.len(), one_of_each().len());
        for d in one_of_each() {
            assert!(!d.describe(7).is_empty(), "{}", d.name());
        }
        assert_eq!(
            kinds(|d| d.summarizer_usage().is_some()),
            ["summarized", "trimmed", "checkpoint"]
        );
    }

    #[test]
    fn emit_helpers_fill_the_call() {
        let e = Event::at_call(
            9,
            "truncate",
            EventDetail::Error {
                message: "x".into(),
            },
        );
        assert_eq!((e.trace_index, e.call_index), (9, Some(9)));
        assert!(!e.persistent);
        assert_eq!(e.describe(), "error: x");
    }
}
