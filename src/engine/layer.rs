//! The layer interface: one small unit with its own config, trigger and action.
//!
//! A layer has two hooks, both optional:
//! * [`Layer::on_message`] runs when a trace message enters the state (deepagents' tool-time
//!   eviction happens here). Changes made with [`State::replace`] persist.
//! * [`Layer::before_call`] runs before every replayed model call, in pipeline order, on the
//!   request [`View`] built from the persistent [`Base`]. Per-request changes go into
//!   `view.overrides`; persistent ones into `state` / `base`.
//!
//! Layers emit [`Event`]s through the context and write removed content to the offload store
//! **before** it leaves the context.

use super::event::{Event, EventDetail};
use super::store::{OffloadStore, Rename};
use super::summarizer::Summarizer;
use super::view::{Base, State, View};
use super::EngineError;
use crate::tokens::TokenCounter;

/// Shared services of one replay.
pub struct Env<'a> {
    pub counter: &'a dyn TokenCounter,
    pub summarizer: &'a dyn Summarizer,
    pub store: &'a mut OffloadStore,
    pub events: &'a mut Vec<Event>,
    /// Context window (tokens).
    pub window: u64,
    /// Input budget: `0.95·window − max_output_tokens`.
    pub budget: u64,
    /// Tokens of the request's system prompt + tool schemas (sent with every call).
    pub overhead: u64,
}

impl Env<'_> {
    /// Record an event; returns its index in the replay's event list.
    pub fn emit(&mut self, event: Event) -> usize {
        self.events.push(event);
        self.events.len() - 1
    }
}

/// Per-call facts layers share.
#[derive(Clone, Debug, Default)]
pub struct CallNotes {
    /// Request tokens as the compaction layers first saw them (deepagents' `effective_tokens`),
    /// set by [`CallCtx::effective_tokens`].
    pub effective_tokens: Option<u64>,
    /// Index of this call's `args_truncated` event, if any.
    pub args_truncated_event: Option<usize>,
    /// Set by a layer to stop the replay after this call (e.g. deepagents' context overflow).
    pub stop: Option<String>,
}

/// Context of one model call.
pub struct CallCtx<'a> {
    /// Trace index of the assistant message whose request this is.
    pub call_index: usize,
    pub state: &'a mut State,
    pub base: &'a mut Base,
    pub view: &'a mut View,
    pub env: Env<'a>,
    pub notes: &'a mut CallNotes,
}

impl CallCtx<'_> {
    /// Full request tokens: system prompt + tools + view messages.
    pub fn request_tokens(&self) -> u64 {
        self.env.overhead + self.view.message_tokens(self.state)
    }

    /// Record an event of this call (`trace_index` = `call_index` = this call) emitted by
    /// `layer`; returns it for the token counts and store writes.
    pub fn emit(&mut self, layer: &str, detail: EventDetail) -> &mut Event {
        let at = self
            .env
            .emit(Event::at_call(self.call_index, layer, detail));
        &mut self.env.events[at]
    }

    /// The request size the compaction layers compare against their triggers; fixed by the
    /// first layer that asks (later per-request edits do not change it).
    pub fn effective_tokens(&mut self) -> u64 {
        if let Some(t) = self.notes.effective_tokens {
            return t;
        }
        let t = self.request_tokens();
        self.notes.effective_tokens = Some(t);
        t
    }
}

/// Context of a message arriving in the state.
pub struct MessageCtx<'a> {
    /// Its trace (= state) index; the entry is already in `state`.
    pub index: usize,
    pub state: &'a mut State,
    pub env: Env<'a>,
}

impl MessageCtx<'_> {
    /// Record an event about the arriving message (no model call) emitted by `layer`;
    /// returns it for the token counts and store writes.
    pub fn emit(&mut self, layer: &str, detail: EventDetail) -> &mut Event {
        let at = self.env.emit(Event::new(self.index, layer, detail));
        &mut self.env.events[at]
    }
}

/// One compression layer.
pub trait Layer: Send {
    /// Stable name (config table name, `layer` field of events).
    fn name(&self) -> &'static str;

    /// A message entered the state (tool results arrive here).
    fn on_message(&mut self, _ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        Ok(())
    }

    /// Before a model call: adjust the request view (and, for persistent layers, the state).
    fn before_call(&mut self, _ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        Ok(())
    }

    /// The replay took its last message (or stopped): a layer that talks to something outside
    /// checks here that the exchange ended cleanly.
    fn end(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    /// A copy of this layer's state for a replay forked at the current message (see
    /// [`crate::engine::Prefix`]), with the store names in `rename` replaced; `None` when the
    /// layer cannot be forked (it read the trace ahead when it was built, or runs elsewhere):
    /// the fork is then not made and the replay runs whole.
    fn fork(&self, _rename: &Rename) -> Option<Box<dyn Layer>> {
        None
    }
}
