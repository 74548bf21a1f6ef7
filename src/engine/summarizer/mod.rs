//! The summarizer interface the engine calls (it knows nothing about HTTP), the deterministic
//! offline extractive summarizer, and a fixed-text summarizer for fixtures.
//!
//! Providers implement [`Summarizer`] elsewhere; the engine only builds a [`SummaryRequest`]
//! (messages to summarize, previous summary, prompt text, `max_tokens`) and records the
//! returned usage. An `Err` becomes an `error` event and nothing is replaced.

use crate::trace::{Message, Usage};
use std::sync::Arc;

mod offline;
mod sections;

pub use offline::OfflineSummarizer;
pub use sections::{asks_for_values, prompt_sections, Body, Section};

/// The default summary prompt (deepagents-style sections). Presets may override it from a
/// file or inline text; the offline summarizer fills only the sections the prompt names.
pub const DEFAULT_SUMMARY_PROMPT: &str = "You are compressing the earlier part of an agent's \
conversation so the agent can continue the task without it. Write a structured summary with \
exactly these sections:\n\n## SESSION INTENT\nThe user's goal and constraints, including later \
corrections.\n\n## SUMMARY\nWhat was done, key decisions and findings, errors and how they were \
resolved.\n\n## ARTIFACTS\nFiles created or modified (paths) and other outputs.\n\n## NEXT STEPS\n\
What the agent was about to do next.\n\nBe concise and keep exact identifiers, paths and values.";

/// What the engine asks a summarizer for.
#[derive(Clone, Copy, Debug)]
pub struct SummaryRequest<'a> {
    /// The raw messages leaving the context (previous summaries excluded), in order.
    pub messages: &'a [Arc<Message>],
    /// Text of the previous summary, when summaries chain.
    pub previous_summary: Option<&'a str>,
    /// The summary prompt (from config: a file or inline text).
    pub prompt: &'a str,
    /// Cap on the summary length, in tokens.
    pub max_tokens: u64,
}

/// A summary and what producing it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryOutput {
    pub text: String,
    pub usage: Usage,
    pub model: String,
}

/// A summary call that failed. The engine records it as an `error` event.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("summarizer failed: {0}")]
    Failed(String),
    #[error("summarizer returned an unusable summary: {0}")]
    Unusable(String),
    /// The call was abandoned: its unit was cancelled or the runtime serving it shut down.
    #[error("summarizer call cancelled: {0}")]
    Cancelled(String),
}

/// Produces summaries for the summarize layer.
pub trait Summarizer: Send + Sync {
    fn summarize(&self, req: &SummaryRequest<'_>) -> Result<SummaryOutput, SummaryError>;
}

/// Usage estimate of the built-in summarizers: 4 bytes per token (they call no model, so
/// this only models what a model call of that size would cost).
fn approx_tokens(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

fn request_bytes(req: &SummaryRequest<'_>) -> usize {
    req.prompt.len()
        + req.previous_summary.map_or(0, str::len)
        + req.messages.iter().map(|m| m.content.len()).sum::<usize>()
}

/// Always returns the same text (what the golden fixtures' fake summarizer does).
#[derive(Clone, Debug)]
pub struct FixedSummarizer(pub String);

impl Summarizer for FixedSummarizer {
    fn summarize(&self, req: &SummaryRequest<'_>) -> Result<SummaryOutput, SummaryError> {
        Ok(SummaryOutput {
            text: self.0.clone(),
            usage: Usage {
                input: approx_tokens(request_bytes(req)),
                output: approx_tokens(self.0.len()),
                ..Usage::default()
            },
            model: "fixed".into(),
        })
    }
}
