//! Layer `condense` (OpenHands `LLMSummarizingCondenser`, openhands-sdk): counts the request
//! in **events** (one canonical message = one event; the summary is an event too). When the
//! view has more than `max_size` events (or, with `max_tokens`, more tokens than that), it
//! keeps the first `keep_first` events, forgets the events up to the tail of
//! `max_size / 2 − keep_first − 1` events, and puts one summary event (a user message holding
//! the summary alone) at position `keep_first`. The previous summary is forgotten with the
//! rest and passed to the summarizer (summaries of summaries). On a request over the window
//! (OpenHands' context-window error → `CondensationRequest`) the target is half the view
//! instead of half of `max_size`. The tail never starts on a tool result (the SDK's view keeps
//! an action with its observations). Nothing is written the agent could read back.

use super::fold::{emit_summary_error, request_summary};
use super::summarize::safe_cutoff_point;
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::{EventDetail, Summary};
use crate::engine::layer::{CallCtx, Layer};
use crate::engine::layer_config::TextSource;
use crate::engine::view::{Item, Source};
use crate::engine::EngineError;
use crate::tokens::approx::code_points;
use crate::trace::{Message, Role};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// OpenHands `LLMSummarizingCondenser` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condense {
    /// Condense when the view holds more events than this.
    pub max_size: usize,
    /// Also condense when the request has more tokens than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Events always kept at the start of the view.
    pub keep_first: usize,
    /// A request over the window condenses to half the view (OpenHands' condensation request
    /// after a context-window error).
    pub on_context_overflow: bool,
    pub prompt: TextSource,
    pub summary_max_tokens: u64,
}

impl LayerSpec for Condense {
    const NAME: &'static str = "condense";

    fn validate(&self) -> Result<(), ConfigError> {
        // The SDK's `validate_keep_first_vs_max_size`.
        if (self.max_size / 2) as i64 - self.keep_first as i64 - 1 <= 0 {
            return Err(err(
                "condense.keep_first",
                "must be less than max_size // 2 to leave room for condensation",
            ));
        }
        if self.summary_max_tokens == 0 {
            return Err(err("condense.summary_max_tokens", "must be > 0"));
        }
        Ok(())
    }

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        let prompt = self.prompt.load()?;
        Ok(Box::new(CondenseLayer {
            cfg: self.clone(),
            prompt,
        }))
    }
}

pub struct CondenseLayer {
    cfg: Condense,
    prompt: String,
}

impl CondenseLayer {
    fn condense(
        &mut self,
        ctx: &mut CallCtx<'_>,
        effective: u64,
        target: usize,
    ) -> Result<(), EngineError> {
        let entries = ctx.view.entries(ctx.state);
        let n = entries.len();
        let keep_first = self.cfg.keep_first.min(n);
        let from_tail = target.saturating_sub(keep_first + 1);
        let tail_start = safe_cutoff_point(&entries, n.saturating_sub(from_tail).max(keep_first));
        if tail_start <= keep_first {
            return Ok(());
        }
        let head: Vec<Item> = entries[..keep_first]
            .iter()
            .map(|e| e.item.clone())
            .collect();
        let leaving: Vec<Arc<Message>> = entries[keep_first..tail_start]
            .iter()
            .filter(|e| !e.item.is_summary)
            .map(|e| e.item.msg.clone())
            .collect();
        let summarized_from = entries[keep_first..tail_start]
            .iter()
            .find_map(|e| match e.source {
                Source::State(i) => Some(i),
                Source::Head(_) => None,
            });
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
        let mut msg = Message::new(Role::User, out.text.clone());
        msg.kind = Some("summary".into());
        let mut summary = Item::new(msg, ctx.env.counter);
        summary.is_summary = true;

        let state_cutoff = ctx.view.cut_before(ctx.state, tail_start);
        let kept = ctx.view.len();
        let mut new_head = head;
        new_head.push(summary);
        new_head.append(&mut ctx.view.head);
        ctx.view.head = new_head;
        ctx.base.head = ctx.view.head.clone();
        ctx.base.start = state_cutoff;
        ctx.base.generation += 1;
        ctx.view.head_generation = ctx.base.generation;

        let detail = EventDetail::Summarized(Summary {
            state_len: ctx.state.len(),
            view_cutoff: tail_start,
            state_cutoff,
            summarized_from: summarized_from.unwrap_or(state_cutoff),
            chained: ctx.base.summary_text.is_some(),
            newly_summarized: leaving.len(),
            kept,
            history_file: String::new(),
            summary_chars: code_points(&out.text) as u64,
            summary_message: out.text.clone(),
            summarizer_model: out.model,
            summarizer_usage: out.usage,
        });
        let after = ctx.request_tokens();
        let ev = ctx.emit(self.name(), detail);
        ev.tokens_before = Some(effective);
        ev.tokens_after = Some(after);
        ctx.base.summary_text = Some(out.text);
        Ok(())
    }
}

impl Layer for CondenseLayer {
    fn name(&self) -> &'static str {
        Condense::NAME
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let effective = ctx.effective_tokens();
        let tokens = ctx.request_tokens();
        let events = ctx.view.len();
        if self.cfg.on_context_overflow && tokens > ctx.env.window {
            return self.condense(ctx, effective, events / 2);
        }
        let wanted =
            events > self.cfg.max_size || self.cfg.max_tokens.is_some_and(|m| tokens > m);
        if wanted {
            self.condense(ctx, effective, self.cfg.max_size / 2)?;
        }
        Ok(())
    }
}
