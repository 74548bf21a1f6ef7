//! Typed compression events: what each layer did, where, with tokens before/after and the
//! offload-store writes it made.

use crate::trace::Usage;
use serde::Serialize;

/// The kinds of event a layer can emit (SPEC §4 plus the store/error kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A large tool result was offloaded and replaced by a stub (persistent).
    Evicted,
    /// A large tool result was left alone because its tool is excluded.
    EvictionSkipped,
    /// A large user message was offloaded; requests show a preview (per-request view).
    UserMessageEvicted,
    /// Old write/edit arguments were truncated in this request (per-request view).
    ArgsTruncated,
    /// Old tool results were replaced by a placeholder.
    Cleared,
    /// Older turns were replaced by a summary (persistent compaction).
    Summarized,
    /// Older turns were dropped without an LLM and a reminder injected.
    Truncated,
    /// Oldest turns were trimmed.
    Trimmed,
    /// Trailing tool results were clipped because the request stayed over budget (persistent).
    OverBudgetClipped,
    /// The request does not fit the window / input budget.
    Overflow,
    /// Emergency compaction after a provider overflow error.
    Emergency,
    /// Task-boundary checkpoint.
    Checkpoint,
    /// Same tool with identical arguments repeated.
    Watchdog,
    /// A cost ceiling was reached.
    CostCeiling,
    /// A layer action failed (e.g. the summarizer returned an error); nothing was replaced.
    Error,
    /// A compaction that removed no message or left the request no smaller (flag only).
    Futile,
    /// A compaction was due but the layer's cooldown (digitorn: 30 s since the previous
    /// compaction, from trace timestamps) held it back; nothing changed.
    Cooldown,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Evicted => "evicted",
            EventKind::EvictionSkipped => "eviction_skipped",
            EventKind::UserMessageEvicted => "user_message_evicted",
            EventKind::ArgsTruncated => "args_truncated",
            EventKind::Cleared => "cleared",
            EventKind::Summarized => "summarized",
            EventKind::Truncated => "truncated",
            EventKind::Trimmed => "trimmed",
            EventKind::OverBudgetClipped => "over_budget_clipped",
            EventKind::Overflow => "overflow",
            EventKind::Emergency => "emergency",
            EventKind::Checkpoint => "checkpoint",
            EventKind::Watchdog => "watchdog",
            EventKind::CostCeiling => "cost_ceiling",
            EventKind::Error => "error",
            EventKind::Futile => "futile",
            EventKind::Cooldown => "cooldown",
        }
    }
}

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
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TruncatedCall {
    pub trace_index: usize,
    pub tool_call_id: String,
    pub tool: String,
    pub args: Vec<String>,
}

/// Kind-specific facts of an event.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventDetail {
    None,
    Evicted {
        tool: String,
        tool_call_id: String,
        chars_before: u64,
        chars_after: u64,
        path: String,
        replacement: String,
    },
    EvictionSkipped {
        tool: String,
        chars: u64,
        reason: String,
    },
    UserMessageEvicted {
        evicted_index: usize,
        path: String,
        chars_before: u64,
        chars_after: u64,
        preview: String,
    },
    ArgsTruncated {
        calls: Vec<TruncatedCall>,
        summarized_in_same_call: bool,
    },
    Summarized {
        /// State messages at this call (= the call's trace index).
        state_len: usize,
        /// Cutoff in the request as it was (which starts with the previous summary, if any).
        view_cutoff: usize,
        /// First state (trace) index kept after the summary.
        state_cutoff: usize,
        /// First raw state index summarized by this event.
        summarized_from: usize,
        /// The previous summary was passed to the summarizer.
        chained: bool,
        newly_summarized: usize,
        kept: usize,
        history_file: String,
        summary_chars: u64,
        summary_message: String,
        summarizer_model: String,
        summarizer_usage: Usage,
    },
    Clipped {
        clipped_index: usize,
        tool: String,
        chars_before: u64,
        chars_after: u64,
        replacement: String,
        path: Option<String>,
    },
    Overflow {
        tokens: u64,
        limit: u64,
        message: String,
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
        /// Usage of memory-note summaries of what was dropped (turn_trim), if any.
        summarizer_usage: Option<Usage>,
    },
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
    Error {
        message: String,
    },
    /// A compaction (`compaction` = its kind) that achieved nothing (`reason`).
    Futile {
        compaction: String,
        reason: String,
    },
    /// A compaction held back: `since_secs` since the previous one, under `cooldown_secs`.
    Cooldown {
        since_secs: f64,
        cooldown_secs: f64,
    },
}

/// One compression event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    pub kind: EventKind,
    /// The message concerned: the tool result for tool-time events, else the model call
    /// (assistant message) during which it happened.
    pub trace_index: usize,
    /// The model call (assistant trace index) that built the request; `None` for events that
    /// happen when a message arrives.
    pub call_index: Option<usize>,
    /// Name of the layer that emitted it.
    pub layer: String,
    /// `true` when the change stays in the state for later calls; `false` for per-request views.
    pub persistent: bool,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub writes: Vec<StoreWrite>,
    pub detail: EventDetail,
}

impl Event {
    pub fn new(kind: EventKind, trace_index: usize, layer: &str) -> Self {
        Event {
            kind,
            trace_index,
            call_index: None,
            layer: layer.to_string(),
            persistent: false,
            tokens_before: None,
            tokens_after: None,
            writes: Vec::new(),
            detail: EventDetail::None,
        }
    }
}
