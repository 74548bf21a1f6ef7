//! The offline provider's agent: a deterministic, lexical stand-in for a model that answers the
//! evals' questions by reading the context and calling the same file tools a model would get.
//!
//! It is a real baseline, not a canned answer: it only answers from text it actually saw — in
//! the request's messages or in tool results it asked for — so its score moves with whether the
//! information survived compaction or is recoverable from the offload store.
//!
//! Policy, decided afresh from the request each turn (the agent is stateless, like a model), by
//! what the request says it asks (`ChatRequest::asking`, an [`Asking`]; never by reading the
//! prompt):
//! - a drift probe ([`Asking::Drift`]) is answered extractively from the view: the latest
//!   summary's sections when there is one, else the first human turn and the recorded actions;
//! - a continuation question ([`Asking::Continuation`]) is answered with
//!   what followed the latest action before in view, else the most frequent action in view
//!   ([`super::continuation::offline_next_action`]);
//! - a rules question ([`Asking::Rules`]) with the instruction-like lines of the
//!   human turns, summaries and reminders in view ([`super::rules::offline_answer`]); a
//!   decision probe ([`Asking::Decision`]) with the choice sentences in view;
//! - a recall question ([`Asking::Recall`], also a request that says nothing): take its key phrase (`What … is the <phrase>?`,
//!   else its content words); if a line of the context states it, answer from that line; else
//!   `grep` the store for the phrase (then for its longest words), answer from a matching line
//!   (the phrase verbatim, else the statement sharing most words with it, so a statement about
//!   a neighbouring key can fool it),
//!   and say it does not know when nothing matches. Among statements of the same key, an
//!   update (`… is now …`) wins over an earlier statement, as it would for a careful reader;
//!   an update that was compacted away cannot win, so the first value comes back (`stale`).
//!   A search bound (`[evals.needle] search`)
//!   changes the order: `never` answers from the context alone, `always` greps the store first
//!   and falls back to the context only when the store has nothing.

use crate::evalspec::needle::NeedleSearch;
use crate::evalspec::Asking;
use crate::trace::{Message, Role, ToolCall};
use std::sync::Arc;

mod drift;
mod provider;
mod recall;

pub use drift::{drift_answer, summary_section};
pub use provider::{build_provider, OfflineProvider, OFFLINE_MODEL};
pub use recall::{key_phrase, phrase_matcher, stems, value_after};
use recall::{recall, Seen};

/// Reply of the offline agent for one turn.
#[derive(Clone, Debug, PartialEq)]
pub struct OfflineReply {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
}

/// What the agent says when the information is nowhere it can see.
pub const DONT_KNOW: &str =
    "I don't know: I could not find it in the conversation or the saved history.";

/// Decide the next turn for a recall question. `tool_names` are the tools offered in the
/// request.
pub fn respond(messages: &[Message], tool_names: &[&str]) -> OfflineReply {
    respond_with(messages, tool_names, NeedleSearch::Auto)
}

/// [`respond`] with a search bound for recall questions (`[evals.needle] search`).
pub fn respond_with(
    messages: &[Message],
    tool_names: &[&str],
    search: NeedleSearch,
) -> OfflineReply {
    respond_to(Asking::Recall, messages, tool_names, search)
}

/// Decide the next turn for a conversation whose question asks for `asking` (the request's
/// typed field: the prompt text is never searched to find out).
pub fn respond_to(
    asking: Asking,
    messages: &[Message],
    tool_names: &[&str],
    search: NeedleSearch,
) -> OfflineReply {
    let q = question_index(messages);
    let Some(q) = q else {
        return answer(DONT_KNOW);
    };
    let question = &messages[q].content;
    let context = &messages[..q];
    let loop_msgs = &messages[q + 1..];
    match asking {
        Asking::Continuation => answer(&super::continuation::offline_next_action(context).render()),
        Asking::Decision => answer(&super::probes::offline_decision_answer(context)),
        Asking::Rules => answer(&super::rules::offline_answer(context)),
        Asking::Drift => answer(&drift_answer(context).render()),
        Asking::Recall => recall(
            question,
            context.iter().map(Seen::Own),
            loop_msgs,
            tool_names,
            search,
        ),
    }
}

/// [`respond_to`] on `history` followed by `messages` without joining them, when the question
/// is a recall question among `messages`; `None` otherwise (answer the joined conversation).
pub fn respond_after(
    asking: Asking,
    history: &[Arc<Message>],
    messages: &[Message],
    tool_names: &[&str],
    search: NeedleSearch,
) -> Option<OfflineReply> {
    if asking != Asking::Recall {
        return None;
    }
    let q = question_index(messages)?;
    let context = history
        .iter()
        .map(Seen::Shared)
        .chain(messages[..q].iter().map(Seen::Own));
    Some(recall(
        &messages[q].content,
        context,
        &messages[q + 1..],
        tool_names,
        search,
    ))
}

fn answer(text: &str) -> OfflineReply {
    OfflineReply {
        content: text.to_string(),
        tool_calls: Vec::new(),
    }
}

/// The question is the last user message; only the probe's own tool loop may follow it.
fn question_index(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|m| m.role == Role::User)
}
