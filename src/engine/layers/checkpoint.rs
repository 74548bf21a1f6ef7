//! Layer `checkpoint` (core-agent's task-boundary checkpoints, Mechanism C): where the trace
//! marks the end of a task (a `trace.markers` entry of a configured kind such as
//! `task_boundary`, or the result of a `mark_task_done` call), the next model call first writes
//! a six-section completion record: the prior task's raw messages are appended to
//! `<history_dir>/checkpoints_<hex>.md`, summarized (chained with the previous summary), and
//! sliced out of every later request, the record naming the history file. With `history =
//! "none"` (core-agent: its audit log is out of the agent's reach) nothing is written and the
//! record names no file; `"memory"` appends the record to `<history_dir>/MEMORY.md`.

use super::fold::{
    emit_summary_error, history_file, install_record, leaving, record_text, request_summary, Record,
};
use super::summarize::{render_history, safe_cutoff_point};
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::EventDetail;
use crate::engine::layer::{CallCtx, Layer, MessageCtx};
use crate::engine::layer_config::{History, TextSource};
use crate::engine::view::Source;
use crate::engine::EngineError;
use crate::trace::{ContextMarker, Message, Role};
use serde::{Deserialize, Serialize};

/// Task-boundary checkpoints (core-agent Mechanism C): at a boundary marker in the trace (or
/// after a `tools` call such as `mark_task_done`), the prior task is summarized into a
/// completion record and sliced out of later requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// `trace.markers` kinds that mark a boundary.
    pub marker_kinds: Vec<String>,
    /// Tool calls that mark the end of a task.
    pub tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<TextSource>,
    pub summary_max_tokens: u64,
    pub history_dir: String,
    /// `offload`: the raw messages go to `<history_dir>/checkpoints_<hex>.md`, named by the
    /// record; `memory`: the record is appended to `<history_dir>/MEMORY.md`; `none`: nothing.
    #[serde(default, skip_serializing_if = "History::is_offload")]
    pub history: History,
}

impl LayerSpec for Checkpoint {
    const NAME: &'static str = "checkpoint";

    fn validate(&self) -> Result<(), ConfigError> {
        if self.summary_max_tokens == 0 {
            return Err(err("checkpoint.summary_max_tokens", "must be > 0"));
        }
        Ok(())
    }

    fn build(&self, ctx: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        let prompt = match &self.prompt {
            Some(src) => src.load()?,
            None => CHECKPOINT_PROMPT.to_string(),
        };
        Ok(Box::new(CheckpointLayer::new(
            self.clone(),
            prompt,
            ctx.markers,
        )))
    }
}

/// core-agent's six-section completion record.
pub const CHECKPOINT_PROMPT: &str = "A task of this session is complete. Write a completion \
record so the next task can start from a clean working set, with exactly these sections:\n\n\
# Task\nWhat was the task? What's the headline outcome?\n\n\
# Files & changes\nFiles modified, read, or analyzed. Files considered and NOT changed (with why).\n\n\
# Technical context\nArchitectural decisions, patterns, commands that worked or failed.\n\n\
# Strategy & approach\nStrategy chosen, alternatives rejected, gotchas, lessons.\n\n\
# Verification & next steps\nWhat's been verified, what's known-good but unverified, follow-up work queued.\n\n\
# Where we are\nStatus framed as \"what the operator and I both know right now.\"";

pub struct CheckpointLayer {
    cfg: Checkpoint,
    prompt: String,
    /// Boundaries not yet applied: the first trace index of the next task, ascending.
    pending: Vec<usize>,
    next_pending: usize,
    history_file: Option<String>,
}

impl CheckpointLayer {
    pub fn new(cfg: Checkpoint, prompt: String, markers: &[ContextMarker]) -> Self {
        let mut pending: Vec<usize> = markers
            .iter()
            .filter(|m| cfg.marker_kinds.contains(&m.kind))
            .map(|m| m.index)
            .collect();
        pending.sort_unstable();
        pending.dedup();
        CheckpointLayer {
            cfg,
            prompt,
            pending,
            next_pending: 0,
            history_file: None,
        }
    }
}

impl Layer for CheckpointLayer {
    fn name(&self) -> &'static str {
        "checkpoint"
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        let m = &ctx.state.get(ctx.index).msg;
        if m.role == Role::Tool
            && m.name
                .as_deref()
                .is_some_and(|n| self.cfg.tools.iter().any(|t| t == n))
        {
            let b = ctx.index + 1;
            let at = self.pending.partition_point(|&p| p < b);
            if self.pending.get(at) != Some(&b) {
                self.pending.insert(at.max(self.next_pending), b);
            }
        }
        Ok(())
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let end = ctx.view.end;
        let mut boundary = None;
        while let Some(&b) = self.pending.get(self.next_pending) {
            if b > end {
                break;
            }
            self.next_pending += 1;
            if b > ctx.view.start {
                boundary = Some(b);
            }
        }
        let Some(b) = boundary else { return Ok(()) };
        let before = ctx.request_tokens();
        let entries = ctx.view.entries(ctx.state);
        let pos = entries
            .iter()
            .position(|e| matches!(e.source, Source::State(i) if i >= b))
            .unwrap_or(entries.len());
        let pos = safe_cutoff_point(&entries, pos);
        let (leaving, summarized_from) = leaving(&entries, pos);
        drop(entries);
        let Some(summarized_from) = summarized_from else {
            return Ok(());
        };

        let dir = self.cfg.history_dir.trim_end_matches('/').to_string();
        let mut writes = Vec::new();
        let mut history = String::new();
        if self.cfg.history == History::Offload {
            history = history_file(ctx, &mut self.history_file, &dir, "checkpoints");
            writes.push(ctx.env.store.append(
                &history,
                render_history(ctx.call_index, &leaving).as_bytes(),
            )?);
        }
        let outcome = request_summary(
            ctx,
            &leaving,
            &self.prompt,
            self.cfg.summary_max_tokens,
            "checkpoint record",
        );
        let out = match outcome {
            Ok(o) => o,
            Err(message) => {
                emit_summary_error(ctx, self.name(), before, writes, message);
                return Ok(());
            }
        };
        let content = record_text(
            ctx,
            self.cfg.history,
            &dir,
            &mut history,
            "Checkpoint",
            &out.text,
            &mut writes,
        )?;
        let mut msg = Message::user(content.clone());
        msg.kind = Some("checkpoint".into());
        let (state_cutoff, kept) = install_record(ctx, msg, &history, pos);

        let after = ctx.request_tokens();
        let record = Record {
            view_cutoff: pos,
            state_cutoff,
            summarized_from: Some(summarized_from),
            newly_summarized: leaving.len(),
            kept,
            history_file: history,
            content,
        };
        let ev = ctx.emit_record(self.name(), EventDetail::Checkpoint, record, out, before);
        ev.tokens_after = Some(after);
        ev.writes = writes;
        Ok(())
    }
}
