//! The external-engine protocol, version [`PROTOCOL_VERSION`]: JSON lines on the engine's
//! stdin (ctxbench → engine, [`ToEngine`]) and stdout (engine → ctxbench, [`FromEngine`]).
//! `ctxbench schema engine-protocol` prints the JSON Schema of both directions, generated from
//! these types; `docs/engines.md` describes the exchange.

use crate::engine::event::EventDetail;
use crate::trace::{Message, Usage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The protocol version sent in `begin` (bumped on an incompatible change). Version 2: `call`
/// carries a `seq` that the `view` and every `summarize` answering it carry back (version 1 had
/// none, and an extra line could be taken as a later call's answer).
pub const PROTOCOL_VERSION: u32 = 2;

/// A line ctxbench writes to the engine's stdin.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToEngine {
    /// A new replay starts: forget everything from the previous one (the process is reused).
    Begin {
        protocol: u32,
        trace_id: String,
        /// Context window of the replayed model, in tokens.
        window: u64,
        /// deepagents' input budget: `int(0.95·window) − max_output_tokens`.
        input_budget: u64,
        /// Name of ctxbench's token counter (`approx`, `o200k`, …): ctxbench counts every view
        /// with it.
        counter: String,
        /// Tokens of system prompt + tool schemas + `overhead_tokens`, sent with every call.
        overhead_tokens: u64,
        /// System prompt sent with every request, if any.
        system_prompt: Option<String>,
        /// Tool schemas sent with every request.
        tools: Vec<serde_json::Value>,
        /// The trace's recorded model, if any.
        model: Option<String>,
        /// The variant's `external.config` table, as given (free-form).
        config: serde_json::Value,
    },
    /// Trace message `index` enters the agent's state (every message, in trace order).
    Message { index: usize, message: Message },
    /// The model call producing assistant message `index` is about to be replayed (messages
    /// `0..index` have been sent): answer with one `view` line.
    Call {
        index: usize,
        /// This call's number for the engine process: 1, 2, … over the process's life (not
        /// reset by `begin`). The `view` answering the call, and every `summarize` asked on the
        /// way, carry it back as their `seq`: a line is matched to the call it names.
        seq: u64,
    },
    /// Answer to a `summarize` request.
    Summary {
        id: String,
        /// The summary text (empty when `error` is set).
        text: String,
        /// What the summary call cost (counted in the unit's summarizer usage).
        usage: Usage,
        /// Model that wrote the summary.
        model: String,
        /// Set when the summarizer failed; `text` is empty then.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The replay ended (no answer expected); the next line, if any, is a new `begin`.
    End,
}

/// A line the engine writes to its stdout.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromEngine {
    /// The request of the current `call`: exactly the messages the model sees.
    View {
        /// The `seq` of the `call` this view answers.
        seq: u64,
        messages: Vec<Message>,
        /// What the engine did, typed like ctxbench's own events.
        #[serde(default)]
        events: Vec<WireEvent>,
        /// Files written by the engine (virtual path → content), e.g. offloaded tool results
        /// or the summarized history; they land in the unit's offload store.
        #[serde(default)]
        files: BTreeMap<String, String>,
        /// Optional, one per message: the trace index the message stands for (kept as it is,
        /// or edited: a replacement), `null` for a message of the engine's own (a summary).
        /// Without it ctxbench maps the view by comparing messages, which only recognises
        /// unchanged messages and replaced tool results.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        indexes: Option<Vec<Option<usize>>>,
        /// Optional: the request size the engine compared against its triggers at this call,
        /// before its edits (deepagents' `effective_tokens`); default: ctxbench's count of the
        /// view sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effective_tokens: Option<u64>,
    },
    /// Ask ctxbench's summary provider for a summary (answered by one `summary` line).
    Summarize {
        /// The `seq` of the `call` being answered.
        seq: u64,
        id: String,
        /// The messages to summarize.
        messages: Vec<Message>,
        /// The summary prompt.
        prompt: String,
        /// Previous summary text, when summaries chain.
        #[serde(default)]
        previous_summary: Option<String>,
        /// Cap on the summary length, in tokens (default 2048).
        #[serde(default)]
        max_tokens: Option<u64>,
    },
}

impl FromEngine {
    /// The `seq` of the call the line answers.
    pub fn seq(&self) -> u64 {
        match self {
            FromEngine::View { seq, .. } | FromEngine::Summarize { seq, .. } => *seq,
        }
    }

    /// Its `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            FromEngine::View { .. } => "view",
            FromEngine::Summarize { .. } => "summarize",
        }
    }
}

/// An event as the engine reports it. Token counts are ctxbench's where it can count them:
/// `tokens_after` of a compaction event of the current call is ctxbench's count of the view
/// sent, and a tool-time replacement's `tokens_before`/`tokens_after` are ctxbench's counts of
/// the original and the replacement. `tokens_before` of an event of the call, and `tokens_after`
/// of another event of the call (e.g. an argument truncation followed by a summary in the same
/// call: a state ctxbench never sees), are the engine's figures when it gives them.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct WireEvent {
    /// The message concerned; default: the current call's index. An index below the call's
    /// marks a tool-time event (e.g. an eviction when the tool result arrived).
    #[serde(default)]
    pub trace_index: Option<usize>,
    /// Name of the engine part that did it (default `external`).
    #[serde(default)]
    pub layer: Option<String>,
    #[serde(default)]
    pub tokens_before: Option<u64>,
    #[serde(default)]
    pub tokens_after: Option<u64>,
    /// `{"type": kind, facts…}` exactly as ctxbench serializes an event's `detail`
    /// (`evicted`, `summarized`, `truncated`, `cleared`, …): a `summarized` may leave facts out
    /// (they take their defaults), the other kinds need all theirs (docs/engines.md lists them).
    #[schemars(with = "serde_json::Value")]
    pub detail: EventDetail,
}

/// The schema of both directions: `{"to_engine": …, "from_engine": …}`.
pub fn schema() -> schemars::Schema {
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    /// ctxbench's external-engine protocol: JSON lines, one object per line.
    struct EngineProtocol {
        /// Lines ctxbench writes to the engine's stdin.
        to_engine: ToEngine,
        /// Lines the engine writes to its stdout.
        from_engine: FromEngine,
    }
    schemars::schema_for!(EngineProtocol)
}
