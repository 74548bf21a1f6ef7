//! What the layers that fold history into a model-written record share (summarize,
//! checkpoint, compact, condense): asking the summarizer, the `error` event when it fails, the
//! record's text by history exposure, installing the record as the new head of the view, and
//! the record's event ([`CallCtx::emit_record`]).

use crate::engine::event::{Event, EventDetail, StoreWrite, Summary};
use crate::engine::invariants::unusable_summary;
use crate::engine::layer::CallCtx;
use crate::engine::layer_config::History;
use crate::engine::summarizer::{SummaryOutput, SummaryRequest};
use crate::engine::view::{Entry, Item, Source};
use crate::engine::EngineError;
use crate::tokens::approx::code_points;
use crate::trace::Message;
use std::sync::Arc;

use super::preview::{summary_message, summary_message_without_history};

/// Ask the summarizer for a summary of `leaving` (chained after the current one) and reject
/// error strings and placeholders: `Err` carries the message for the `error` event. Shared by
/// every layer that replaces history with a model-written record (summarize, checkpoint).
pub(crate) fn request_summary(
    ctx: &CallCtx<'_>,
    leaving: &[Arc<Message>],
    prompt: &str,
    max_tokens: u64,
    what: &str,
) -> Result<SummaryOutput, String> {
    let req = SummaryRequest {
        messages: leaving,
        previous_summary: ctx.base.summary_text.as_deref(),
        prompt,
        max_tokens,
    };
    ctx.env
        .summarizer
        .summarize(&req)
        .map_err(|e| e.to_string())
        .and_then(|o| match unusable_summary(&o.text) {
            Some(why) => Err(format!("{what} rejected: {why}")),
            None => Ok(o),
        })
}

/// What a fold that cuts the request before position `cut` takes out: the raw messages before
/// the cut (the previous record, a summary item, is chained through `previous_summary`, not
/// re-sent as history) and the first state (trace) index among them (`None`: nothing but the
/// head is before the cut).
pub(crate) fn leaving(entries: &[Entry<'_>], cut: usize) -> (Vec<Arc<Message>>, Option<usize>) {
    let before = &entries[..cut];
    let messages = before
        .iter()
        .filter(|e| !e.item.is_summary)
        .map(|e| e.item.msg.clone())
        .collect();
    let from = before.iter().find_map(|e| match e.source {
        Source::State(i) => Some(i),
        Source::Head(_) => None,
    });
    (messages, from)
}

/// The layer's raw-history file under `dir`, named `<prefix>_<uuid>.md` on first use and the
/// same file for every later fold of the replay.
pub(crate) fn history_file(
    ctx: &mut CallCtx<'_>,
    file: &mut Option<String>,
    dir: &str,
    prefix: &str,
) -> String {
    file.get_or_insert_with(|| format!("{dir}/{prefix}_{}.md", ctx.env.store.uuid4_hex()))
        .clone()
}

/// The `error` event of a fold whose summary failed: the offload writes already made stay
/// recorded, the view is left as it was.
pub(crate) fn emit_summary_error(
    ctx: &mut CallCtx<'_>,
    layer: &str,
    tokens_before: u64,
    writes: Vec<StoreWrite>,
    message: String,
) {
    let ev = ctx.emit(layer, EventDetail::Error { message });
    ev.tokens_before = Some(tokens_before);
    ev.writes = writes;
}

/// A fold's record as its event reports it: where the request was cut, what left it and what
/// stayed, and the record's text as installed (the summary, with its history note if any).
pub(crate) struct Record {
    /// Cutoff in the request as it was.
    pub view_cutoff: usize,
    /// First state (trace) index kept after the record.
    pub state_cutoff: usize,
    /// First raw state index folded (`None`: `state_cutoff`).
    pub summarized_from: Option<usize>,
    /// Raw messages folded.
    pub newly_summarized: usize,
    /// Entries kept beside the record.
    pub kept: usize,
    /// The raw-history file the record names (empty: none).
    pub history_file: String,
    /// The record's message text.
    pub content: String,
}

impl CallCtx<'_> {
    /// Record a fold's event — `kind` is [`EventDetail::Summarized`] or
    /// [`EventDetail::Checkpoint`] — with the request's tokens before it, and chain its summary:
    /// the next fold sends `out.text` as the previous summary. Returns the event for the
    /// layer's store writes and `tokens_after`.
    pub(crate) fn emit_record(
        &mut self,
        layer: &str,
        kind: fn(Summary) -> EventDetail,
        record: Record,
        out: SummaryOutput,
        tokens_before: u64,
    ) -> &mut Event {
        let detail = kind(Summary {
            state_len: self.state.len(),
            view_cutoff: record.view_cutoff,
            state_cutoff: record.state_cutoff,
            summarized_from: record.summarized_from.unwrap_or(record.state_cutoff),
            chained: self.base.summary_text.is_some(),
            newly_summarized: record.newly_summarized,
            kept: record.kept,
            history_file: record.history_file,
            summary_chars: code_points(&record.content) as u64,
            summary_message: record.content,
            summarizer_model: out.model,
            summarizer_usage: out.usage,
        });
        self.base.summary_text = Some(out.text);
        let ev = self.emit(layer, detail);
        ev.tokens_before = Some(tokens_before);
        ev
    }
}

/// The record's text by history exposure: `offload` names the raw-history file `history`;
/// `memory` appends the summary under `heading` to `<dir>/MEMORY.md` (the turn-trimming agent's
/// memory file: the summary, not the raw turns) and names it, setting `history` to it; `none`
/// is the summary alone.
pub(crate) fn record_text(
    ctx: &mut CallCtx<'_>,
    exposure: History,
    dir: &str,
    history: &mut String,
    heading: &str,
    summary: &str,
    writes: &mut Vec<StoreWrite>,
) -> Result<String, EngineError> {
    Ok(match exposure {
        History::Offload => summary_message(history, summary),
        History::Memory => {
            *history = format!("{dir}/MEMORY.md");
            let note = format!(
                "## {heading} at model call {}\n\n{summary}\n\n",
                ctx.call_index
            );
            writes.push(ctx.env.store.append(history, note.as_bytes())?);
            summary_message_without_history(Some(history), summary)
        }
        History::None => summary_message_without_history(None, summary),
    })
}

/// Put the record `msg` at the head of the view (pointing at `history` when there is one) and
/// start the new base after the view's `cutoff`. Returns the state cutoff and how many view
/// entries were kept.
pub(crate) fn install_record(
    ctx: &mut CallCtx<'_>,
    msg: Message,
    history: &str,
    cutoff: usize,
) -> (usize, usize) {
    let mut item = Item::new(msg, ctx.env.counter);
    if !history.is_empty() {
        item = item.with_pointer(history, None);
    }
    item.is_summary = true;
    let state_cutoff = ctx.view.cut_before(ctx.state, cutoff);
    let kept = ctx.view.len();
    ctx.view.head.insert(0, item);
    ctx.base.head = ctx.view.head.clone();
    ctx.base.start = state_cutoff;
    ctx.base.generation += 1;
    ctx.view.head_generation = ctx.base.generation;
    (state_cutoff, kept)
}
