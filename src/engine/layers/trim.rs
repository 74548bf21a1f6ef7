//! Layer `turn_trim` (seed 001, `peer-docs/turn-trimming-agent-context.txt`). A turn starts at
//! a user message; it is complete once the next one arrives. Before every model call:
//! 1. tool results of complete turns longer than `tool_result_max_chars` keep their head and
//!    tail around a truncation notice (persistent, once per result);
//! 2. over `max_turns` complete turns, the oldest half is dropped — appended to the memory
//!    history file (and, with `memory_summary`, summarized into `MEMORY.md`), never re-sent;
//!    `history = "memory"` (the real agent) writes only the `MEMORY.md` note, `"none"` nothing;
//! 3. still over `max_tokens`: with fewer than `compress_below_turns` complete turns, each is
//!    text-compressed to its first user text and last reply (tool chains dropped whole);
//!    otherwise the oldest half is dropped again;
//! 4. over the window (the replayed overflow error): everything shown goes to memory, tool
//!    results and user texts are cut to their overflow limits, only the last
//!    `overflow_max_turns` turns stay, and if that still overflows only the current turn does.
//!
//! Cuts fall on turn starts, so a call and its results are never separated; system messages
//! of a dropped slice (the agent's prompt) stay at the front.

use super::summarize::render_history;
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::EventDetail;
use crate::engine::invariants::unusable_summary;
use crate::engine::layer::{CallCtx, Layer, MessageCtx};
use crate::engine::layer_config::{History, Trigger};
use crate::engine::summarizer::SummaryRequest;
use crate::engine::view::{Item, Override};
use crate::engine::EngineError;
use crate::trace::{Message, Role, Usage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Turn trimming (seed 001): historical tool results clipped head+tail; over `max_turns`
/// complete turns, the oldest half is dropped (to memory); over `max_tokens`, text-compress
/// (fewer than `compress_below_turns` turns) or trim again; on overflow, aggressive limits,
/// then only the current turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnTrim {
    /// Token budget of the context (seed 001 `agent_max_context_tokens`).
    pub max_tokens: Trigger,
    /// `agent_max_context_turns`.
    pub max_turns: usize,
    /// Historical tool results longer than this are clipped head+tail.
    pub tool_result_max_chars: usize,
    pub compress_below_turns: usize,
    /// Dropped turns are appended here (`<memory_dir>/history.md`, summary in `MEMORY.md`).
    pub memory_dir: String,
    /// Ask the summarizer for a memory note of the dropped turns (not sent to the model).
    pub memory_summary: bool,
    /// `offload`: dropped turns are appended to `<memory_dir>/history.md` (and the note to
    /// `MEMORY.md`); `memory`: only the note is written; `none`: nothing is written.
    #[serde(default, skip_serializing_if = "History::is_offload")]
    pub history: History,
    pub overflow_tool_result_chars: usize,
    pub overflow_user_chars: usize,
    pub overflow_max_turns: usize,
}

impl LayerSpec for TurnTrim {
    const NAME: &'static str = "turn_trim";

    fn validate(&self) -> Result<(), ConfigError> {
        if self.max_turns == 0 || self.overflow_max_turns == 0 {
            return Err(err(
                "turn_trim",
                "max_turns and overflow_max_turns must be > 0",
            ));
        }
        if self.tool_result_max_chars < 2
            || self.overflow_tool_result_chars < 2
            || self.overflow_user_chars < 2
        {
            return Err(err("turn_trim", "character limits must be >= 2"));
        }
        Ok(())
    }

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        Ok(Box::new(TurnTrimLayer::new(self.clone())))
    }
}

/// Prompt of the (optional) memory note of dropped turns.
pub const MEMORY_PROMPT: &str = "These turns are being removed from the agent's context. \
Write a short memory note of them.\n\n## SUMMARY\nWhat was asked, done and decided.\n\n\
## ARTIFACTS\nFiles and other outputs.";

/// `text` with its middle replaced by a truncation notice when longer than `max` characters.
pub fn clip_head_tail(text: &str, max: usize) -> Option<String> {
    let n = text.chars().count();
    if n <= max {
        return None;
    }
    let half = max / 2;
    let head_end = text.char_indices().nth(half).map_or(text.len(), |(b, _)| b);
    let tail_start = text
        .char_indices()
        .nth(n - half)
        .map_or(text.len(), |(b, _)| b);
    Some(format!(
        "{}\n\n[... {} characters truncated ...]\n\n{}",
        &text[..head_end],
        n - 2 * half,
        &text[tail_start..]
    ))
}

pub struct TurnTrimLayer {
    cfg: TurnTrim,
    /// Trace indexes of turn-starting user messages, ascending.
    turn_starts: Vec<usize>,
    /// Trace indexes of tool results, ascending.
    tool_results: Vec<usize>,
    /// Tool results below this index were checked by stage 1.
    clipped_upto: usize,
    /// Complete turns starting below this index were text-compressed.
    compressed_upto: usize,
    /// Messages dropped by text compression (re-applied to every request).
    compressed: BTreeSet<usize>,
}

struct Dropped {
    messages: Vec<Arc<Message>>,
    writes: Vec<crate::engine::event::StoreWrite>,
    memory_file: String,
    usage: Option<Usage>,
}

impl TurnTrimLayer {
    pub fn new(cfg: TurnTrim) -> Self {
        TurnTrimLayer {
            cfg,
            turn_starts: Vec::new(),
            tool_results: Vec::new(),
            clipped_upto: 0,
            compressed_upto: 0,
            compressed: BTreeSet::new(),
        }
    }

    /// Turn starts in `a..b`.
    fn starts_in(&self, a: usize, b: usize) -> &[usize] {
        let lo = self.turn_starts.partition_point(|&s| s < a);
        let hi = self.turn_starts.partition_point(|&s| s < b);
        &self.turn_starts[lo..hi]
    }

    /// Start of the current (incomplete) turn: the last turn start in the request.
    fn current_turn(&self, start: usize, end: usize) -> usize {
        self.starts_in(start, end).last().copied().unwrap_or(start)
    }

    /// Persistently replace state entry `idx` by `content` when it differs.
    fn replace_content(ctx: &mut CallCtx<'_>, idx: usize, content: String) {
        let cur = ctx.state.get(idx);
        let mut m = (*cur.msg).clone();
        m.content = content;
        let item = Item::new(m, ctx.env.counter);
        ctx.state.replace(idx, item);
    }

    /// Clip every tool result in `a..b` (and, with `user_max`, user texts) over the limits.
    fn clip_range(
        &self,
        ctx: &mut CallCtx<'_>,
        a: usize,
        b: usize,
        tool_max: usize,
        user_max: Option<usize>,
    ) -> Vec<usize> {
        let mut done = Vec::new();
        let lo = self.tool_results.partition_point(|&t| t < a);
        let hi = self.tool_results.partition_point(|&t| t < b);
        let mut targets: Vec<(usize, usize)> = self.tool_results[lo..hi]
            .iter()
            .map(|&i| (i, tool_max))
            .collect();
        if let Some(u) = user_max {
            targets.extend(self.starts_in(a, b).iter().map(|&i| (i, u)));
        }
        for (idx, max) in targets {
            if let Some(c) = clip_head_tail(&ctx.state.get(idx).msg.content, max) {
                Self::replace_content(ctx, idx, c);
                done.push(idx);
            }
        }
        done.sort_unstable();
        done
    }

    /// Drop the request's messages before state index `cut` (a turn start) for good: written
    /// to memory first, system messages kept at the front.
    fn drop_before(&self, ctx: &mut CallCtx<'_>, cut: usize) -> Result<Dropped, EngineError> {
        let (start, end) = (ctx.view.start, ctx.view.end);
        let cut = cut.clamp(start, end);
        let mut messages = Vec::new();
        // System messages stay in front (once each); anything else in front (a cleared turn's
        // first message) leaves with the slice.
        let mut kept_system: Vec<Item> = Vec::new();
        let head = std::mem::take(&mut ctx.view.head);
        let dropped_state = (start..cut).filter_map(|i| ctx.view.state_item(ctx.state, i));
        for item in head.iter().chain(dropped_state.map(|(it, _)| it)) {
            if item.msg.role == Role::System {
                if !kept_system
                    .iter()
                    .any(|k| k.msg.content == item.msg.content)
                {
                    kept_system.push(item.clone());
                }
            } else {
                messages.push(item.msg.clone());
            }
        }
        let dir = self.cfg.memory_dir.trim_end_matches('/');
        let memory_file = format!("{dir}/history.md");
        let mut writes = Vec::new();
        if self.cfg.history == History::Offload {
            writes.push(ctx.env.store.append(
                &memory_file,
                render_history(ctx.call_index, &messages).as_bytes(),
            )?);
        }
        let mut usage = None;
        if self.cfg.memory_summary && self.cfg.history != History::None && !messages.is_empty() {
            let req = SummaryRequest {
                messages: &messages,
                previous_summary: None,
                prompt: MEMORY_PROMPT,
                max_tokens: 1024,
            };
            let out = ctx
                .env
                .summarizer
                .summarize(&req)
                .map_err(|e| e.to_string())
                .and_then(|o| match unusable_summary(&o.text) {
                    Some(why) => Err(format!("memory note rejected: {why}")),
                    None => Ok(o),
                });
            match out {
                Ok(o) => {
                    let note = format!(
                        "## Trimmed at model call {}\n\n{}\n\n",
                        ctx.call_index, o.text
                    );
                    writes.push(
                        ctx.env
                            .store
                            .append(&format!("{dir}/MEMORY.md"), note.as_bytes())?,
                    );
                    usage = Some(o.usage);
                }
                Err(message) => {
                    ctx.emit(self.name(), EventDetail::Error { message });
                }
            }
        }
        ctx.view.start = cut;
        ctx.view.overrides = ctx.view.overrides.split_off(&cut);
        ctx.view.head = kept_system;
        ctx.base.head = ctx.view.head.clone();
        ctx.base.start = cut;
        ctx.base.generation += 1;
        ctx.view.head_generation = ctx.base.generation;
        let memory_file = match self.cfg.history {
            History::Offload => memory_file,
            History::Memory => format!("{dir}/MEMORY.md"),
            History::None => String::new(),
        };
        Ok(Dropped {
            messages,
            writes,
            memory_file,
            usage,
        })
    }

    /// Drop the oldest half (at least one) of the complete turns; `None` when there are none.
    fn trim_half(&self, ctx: &mut CallCtx<'_>, stage: &str) -> Result<bool, EngineError> {
        let (start, end) = (ctx.view.start, ctx.view.end);
        let cur = self.current_turn(start, end);
        let complete: Vec<usize> = self.starts_in(start, cur).to_vec();
        if complete.is_empty() {
            return Ok(false);
        }
        let n = (complete.len() / 2).max(1);
        let cut = complete.get(n).copied().unwrap_or(cur);
        let before = ctx.request_tokens();
        let d = self.drop_before(ctx, cut)?;
        let after = ctx.request_tokens();
        let detail = EventDetail::Trimmed {
            stage: stage.into(),
            indexes: Vec::new(),
            state_cutoff: Some(cut),
            turns: n,
            memory_file: Some(d.memory_file),
            summarizer_usage: d.usage,
        };
        let ev = ctx.emit(self.name(), detail);
        ev.tokens_before = Some(before);
        ev.tokens_after = Some(after);
        ev.writes = d.writes;
        Ok(true)
    }

    /// Text-compress the complete turns not compressed yet: keep the first user text and the
    /// last reply (an assistant message without tool calls); drop the rest, chains whole.
    fn compress(&mut self, ctx: &mut CallCtx<'_>) -> Vec<usize> {
        let (start, end) = (ctx.view.start, ctx.view.end);
        let cur = self.current_turn(start, end);
        let from = start.max(self.compressed_upto);
        let starts: Vec<usize> = self.starts_in(from, cur).to_vec();
        let mut dropped = Vec::new();
        for (k, &u) in starts.iter().enumerate() {
            let next = starts.get(k + 1).copied().unwrap_or(cur);
            let reply = (u + 1..next).rev().find(|&i| {
                let m = &ctx.state.get(i).msg;
                m.role == Role::Assistant && m.tool_calls.is_empty()
            });
            for i in u + 1..next {
                if Some(i) != reply && self.compressed.insert(i) {
                    dropped.push(i);
                }
            }
        }
        if cur > self.compressed_upto {
            self.compressed_upto = cur;
        }
        for &i in &dropped {
            ctx.view.overrides.insert(i, Override::Drop);
        }
        dropped
    }
}

impl Layer for TurnTrimLayer {
    fn name(&self) -> &'static str {
        "turn_trim"
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        let m = &ctx.state.get(ctx.index).msg;
        match m.role {
            _ if super::is_user_turn(m) => self.turn_starts.push(ctx.index),
            Role::Tool => self.tool_results.push(ctx.index),
            _ => {}
        }
        Ok(())
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let (start, end) = (ctx.view.start, ctx.view.end);
        // Earlier compression decisions hold for every later request.
        for &i in self.compressed.range(start..end) {
            ctx.view.overrides.insert(i, Override::Drop);
        }
        let cur = self.current_turn(start, end);

        // 1. Historical tool results, once each.
        let from = start.max(self.clipped_upto);
        if cur > from {
            let before = ctx.request_tokens();
            let clipped = self.clip_range(ctx, from, cur, self.cfg.tool_result_max_chars, None);
            self.clipped_upto = cur;
            if !clipped.is_empty() {
                let after = ctx.request_tokens();
                let detail = EventDetail::Trimmed {
                    stage: "tool_results".into(),
                    indexes: clipped,
                    state_cutoff: None,
                    turns: 0,
                    memory_file: None,
                    summarizer_usage: None,
                };
                let ev = ctx.emit(self.name(), detail);
                ev.tokens_before = Some(before);
                ev.tokens_after = Some(after);
            }
        }

        // 2. Turn limit.
        let complete = self.starts_in(ctx.view.start, cur).len();
        if complete > self.cfg.max_turns {
            self.trim_half(ctx, "turns")?;
        }

        // 3. Token budget.
        let budget = self.cfg.max_tokens.tokens(ctx.env.window);
        while ctx.request_tokens() > budget {
            let cur = self.current_turn(ctx.view.start, ctx.view.end);
            let complete = self.starts_in(ctx.view.start, cur).len();
            if complete == 0 {
                break;
            }
            if complete < self.cfg.compress_below_turns {
                let before = ctx.request_tokens();
                let dropped = self.compress(ctx);
                if !dropped.is_empty() {
                    let after = ctx.request_tokens();
                    let detail = EventDetail::Trimmed {
                        stage: "compressed".into(),
                        indexes: dropped,
                        state_cutoff: None,
                        turns: complete,
                        memory_file: None,
                        summarizer_usage: None,
                    };
                    let ev = ctx.emit(self.name(), detail);
                    ev.tokens_before = Some(before);
                    ev.tokens_after = Some(after);
                }
                break;
            }
            if !self.trim_half(ctx, "turns")? {
                break;
            }
        }

        // 4. Overflow emergency.
        let window = ctx.env.window;
        let before = ctx.request_tokens();
        if before <= window {
            return Ok(());
        }
        let (start, end) = (ctx.view.start, ctx.view.end);
        let mut writes = Vec::new();
        // Each memory note's usage (one summarizer call per drop).
        let mut calls: Vec<Usage> = Vec::new();
        let mut attempts = 1;
        self.clip_range(
            ctx,
            start,
            end,
            self.cfg.overflow_tool_result_chars,
            Some(self.cfg.overflow_user_chars),
        );
        let starts = self.starts_in(start, end).to_vec();
        let mut dropped = 0;
        if starts.len() > self.cfg.overflow_max_turns {
            let cut = starts[starts.len() - self.cfg.overflow_max_turns];
            let d = self.drop_before(ctx, cut)?;
            dropped += d.messages.len();
            writes.extend(d.writes);
            calls.extend(d.usage);
        }
        if ctx.request_tokens() > window {
            attempts += 1;
            let cur = self.current_turn(ctx.view.start, ctx.view.end);
            if cur > ctx.view.start {
                let d = self.drop_before(ctx, cur)?;
                dropped += d.messages.len();
                writes.extend(d.writes);
                calls.extend(d.usage);
            }
        }
        if ctx.request_tokens() > window {
            // Clear the rest: the current turn keeps its first message and the in-flight call
            // with its results; everything between goes (to memory first), for good. The
            // first message moves to the front so the request starts at the in-flight call.
            attempts += 1;
            let (start, end) = (ctx.view.start, ctx.view.end);
            let cur = self.current_turn(start, end);
            let last_call = (cur + 1..end)
                .rev()
                .find(|&i| ctx.state.get(i).msg.role == Role::Assistant);
            if let Some(a) = last_call {
                let first = (self.turn_starts.binary_search(&cur).is_ok())
                    .then(|| {
                        ctx.view
                            .state_item(ctx.state, cur)
                            .map(|(it, _)| it.clone())
                    })
                    .flatten();
                let d = self.drop_before(ctx, a)?;
                dropped += d.messages.len();
                writes.extend(d.writes);
                calls.extend(d.usage);
                if let Some(f) = first {
                    ctx.view.head.push(f);
                    ctx.base.head = ctx.view.head.clone();
                }
            }
        }
        let after = ctx.request_tokens();
        let detail = EventDetail::Emergency {
            keep_recent: self.cfg.overflow_max_turns,
            attempts,
            state_cutoff: ctx.view.start,
            dropped,
            fits: after <= window,
            limit: window,
            summarizer_usage: (!calls.is_empty()).then(|| {
                calls.iter().fold(Usage::default(), |mut sum, u| {
                    sum.add(u);
                    sum
                })
            }),
            summarizer_calls: calls,
        };
        let ev = ctx.emit(self.name(), detail);
        // Persistent even when no message was dropped: the overflow clip above replaced
        // results in the state.
        ev.persistent = true;
        ev.tokens_before = Some(before);
        ev.tokens_after = Some(after);
        ev.writes = writes;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_head_and_tail_around_a_notice() {
        assert_eq!(clip_head_tail("abcdef", 6), None);
        let c = clip_head_tail("abcdefghij", 4).unwrap();
        assert_eq!(c, "ab\n\n[... 6 characters truncated ...]\n\nij");
        let c = clip_head_tail("ééééé", 2).unwrap();
        assert_eq!(c, "é\n\n[... 3 characters truncated ...]\n\né");
    }
}
