//! Layer `compact` (Codex CLI auto-compaction, Claude Code auto-compact): when the request
//! reaches the trigger, the whole conversation is summarized and the history is **rebuilt**
//! rather than cut: the initial context (the system messages and harness messages before the
//! first user turn), then the most recent user turns that fit in `keep_user_tokens` (newest
//! first, the oldest one kept truncated), then one user message `summary_prefix` + `"\n"` +
//! the summary. Every assistant message and tool result before the call leaves the context;
//! nothing is written the agent could read back (`history = none` in the other layers' terms).
//!
//! Codex: `codex-rs/core/src/compact.rs` (`build_compacted_history_with_limit`,
//! `COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000`, `SUMMARY_PREFIX`, `SUMMARIZATION_PROMPT`).
//! Claude Code: the `/compact` summary replaces everything (`keep_user_tokens = 0`), its
//! message starts "This session is being continued from a previous conversation…".

use super::fold::{emit_summary_error, request_summary, Record};
use super::{is_user_turn, BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::EventDetail;
use crate::engine::layer::{CallCtx, Layer};
use crate::engine::layer_config::{TextSource, Trigger};
use crate::engine::view::{Item, Source};
use crate::engine::EngineError;
use crate::trace::{Message, Role};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Summarize everything and rebuild the history (initial context + recent user turns +
/// summary), as Codex and Claude Code compact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compact {
    /// Compact when the request reaches this (Codex: `model_auto_compact_token_limit`).
    pub trigger: Trigger,
    /// The compaction prompt sent with the whole history.
    pub prompt: TextSource,
    /// Text put before the summary in the rebuilt history (a newline separates them).
    pub summary_prefix: String,
    /// Budget of the recent user turns carried over verbatim, counted with the replay's
    /// counter, newest first (Codex: 20,000; Claude Code: 0).
    pub keep_user_tokens: u64,
    /// Carry over the messages before the first user turn (system prompt, instructions,
    /// environment context): Codex rebuilds its initial context.
    pub keep_initial_context: bool,
    pub summary_max_tokens: u64,
}

impl LayerSpec for Compact {
    const NAME: &'static str = "compact";

    fn validate(&self) -> Result<(), ConfigError> {
        if self.summary_max_tokens == 0 {
            return Err(err("compact.summary_max_tokens", "must be > 0"));
        }
        Ok(())
    }

    fn compaction_trigger(&mut self) -> Option<&mut Trigger> {
        Some(&mut self.trigger)
    }

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        let prompt = self.prompt.load()?;
        Ok(Box::new(CompactLayer {
            cfg: self.clone(),
            prompt,
        }))
    }
}

pub struct CompactLayer {
    cfg: Compact,
    prompt: String,
}

/// Codex `truncate_text(message, TruncationPolicy::Tokens(n))` in spirit: keep the head of the
/// text within about `tokens` tokens (4 chars each) and say how much was cut.
fn truncate_to_tokens(text: &str, tokens: u64) -> String {
    let keep = (tokens as usize).saturating_mul(4);
    let total = text.chars().count();
    if total <= keep {
        return text.to_string();
    }
    let head: String = text.chars().take(keep).collect();
    let cut = (total - keep).div_ceil(4);
    format!("{head}…{cut} tokens truncated…")
}

impl CompactLayer {
    fn compact(&mut self, ctx: &mut CallCtx<'_>, effective: u64) -> Result<(), EngineError> {
        let entries = ctx.view.entries(ctx.state);
        // The initial context: everything before the first user turn (never a summary).
        let first_turn = entries
            .iter()
            .position(|e| !e.item.is_summary && is_user_turn(&e.item.msg))
            .unwrap_or(entries.len());
        let initial: Vec<Item> = if self.cfg.keep_initial_context {
            entries[..first_turn]
                .iter()
                .filter(|e| !e.item.is_summary)
                .map(|e| e.item.clone())
                .collect()
        } else {
            Vec::new()
        };
        let leaving: Vec<Arc<Message>> = entries
            .iter()
            .filter(|e| !e.item.is_summary)
            .map(|e| e.item.msg.clone())
            .collect();
        if leaving.is_empty() {
            return Ok(());
        }
        // Recent user turns (not the initial context, not a previous summary), newest first.
        let mut users: Vec<Item> = Vec::new();
        let mut remaining = self.cfg.keep_user_tokens;
        for e in entries[first_turn..].iter().rev() {
            if remaining == 0 {
                break;
            }
            if e.item.is_summary || !is_user_turn(&e.item.msg) {
                continue;
            }
            if e.item.tokens <= remaining {
                users.push(e.item.clone());
                remaining -= e.item.tokens;
            } else {
                let text = truncate_to_tokens(&e.item.msg.content, remaining);
                let mut m = (*e.item.msg).clone();
                m.content = text;
                users.push(Item::new(m, ctx.env.counter));
                break;
            }
        }
        users.reverse();
        let summarized_from = entries.iter().find_map(|e| match e.source {
            Source::State(i) => Some(i),
            Source::Head(_) => None,
        });
        let view_len = entries.len();
        drop(entries);

        let out = match request_summary(
            ctx,
            &leaving,
            &self.prompt,
            self.cfg.summary_max_tokens,
            "summary",
        ) {
            Ok(o) => o,
            Err(message) => {
                emit_summary_error(ctx, self.name(), effective, Vec::new(), message);
                return Ok(());
            }
        };
        let content = format!("{}\n{}", self.cfg.summary_prefix, out.text);
        let mut msg = Message::new(Role::User, content.clone());
        msg.kind = Some("summary".into());
        let mut summary = Item::new(msg, ctx.env.counter);
        summary.is_summary = true;

        let kept = initial.len() + users.len();
        let mut head = initial;
        head.extend(users);
        head.push(summary);
        let end = ctx.view.end;
        ctx.view.head = head;
        ctx.view.start = end;
        ctx.view.overrides.clear();
        ctx.base.head = ctx.view.head.clone();
        ctx.base.start = end;
        ctx.base.generation += 1;
        ctx.view.head_generation = ctx.base.generation;

        let after = ctx.request_tokens();
        let record = Record {
            view_cutoff: view_len,
            state_cutoff: end,
            summarized_from,
            newly_summarized: leaving.len(),
            kept,
            history_file: String::new(),
            content,
        };
        let ev = ctx.emit_record(self.name(), EventDetail::Summarized, record, out, effective);
        ev.tokens_after = Some(after);
        Ok(())
    }
}

impl Layer for CompactLayer {
    fn name(&self) -> &'static str {
        Compact::NAME
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let effective = ctx.effective_tokens();
        if ctx.request_tokens() < self.cfg.trigger.tokens(ctx.env.window) {
            return Ok(());
        }
        self.compact(ctx, effective)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_the_head_and_says_how_much_went() {
        assert_eq!(truncate_to_tokens("abcd", 1), "abcd");
        let t = truncate_to_tokens(&"x".repeat(100), 5);
        assert!(t.starts_with(&"x".repeat(20)));
        assert!(t.ends_with("…20 tokens truncated…"), "{t}");
    }
}
