//! Layer `condense` (OpenHands `LLMSummarizingCondenser`, openhands-sdk 1.58.2): counts the
//! request in OpenHands **events** (an assistant message with N tool calls is N action events,
//! every other message one event, the summary one event). It condenses when the view has more
//! than `max_size` events (soft: skipped when impossible), when the request is over
//! `max_tokens` (hard) or over the window (hard: OpenHands' condensation request after a
//! context-window error). It keeps `events_from_tail = target − keep_first − 1` events at the
//! end (`target` = `max_size / 2`, half the view on a request, the suffix that brings the
//! tokens to `max_tokens / 2`; the strictest wins), protects the first `keep_first` events and
//! the leading system prompt, moves both ends of the forgotten range forward to the next
//! boundary that does not split an assistant message from its tool results (the SDK's
//! manipulation indices), and puts one summary event (a user message holding only the
//! summary) where the forgotten range began. The previous summary is forgotten with the rest
//! and passed to the summarizer (summaries of summaries). Forgetting fewer than
//! `minimum_progress` of the events is no condensation; a hard one then resets the context:
//! everything after the system prompt is summarized. Nothing is written the agent could read
//! back.

use super::fold::{emit_summary_error, request_summary, Record};
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::event::EventDetail;
use crate::engine::layer::{CallCtx, Layer};
use crate::engine::layer_config::TextSource;
use crate::engine::view::{Item, Source};
use crate::engine::EngineError;
use crate::trace::{Message, Role};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// OpenHands `LLMSummarizingCondenser` parameters (the SDK's field names and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condense {
    /// Condense when the view holds more events than this.
    pub max_size: usize,
    /// Also condense (hard) when the request has more tokens than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Events always kept at the start of the view.
    pub keep_first: usize,
    /// Forgetting fewer than this fraction of the view's events is no condensation.
    pub minimum_progress: f64,
    /// A request over the window condenses to half the view, else resets the context
    /// (OpenHands' condensation request after a context-window error, `hard_context_reset`).
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
        if !(self.minimum_progress > 0.0 && self.minimum_progress < 1.0) {
            return Err(err("condense.minimum_progress", "must be in (0, 1)"));
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

/// OpenHands events of one message: an assistant message is one action event per tool call.
fn event_weight(m: &Message) -> usize {
    match m.role {
        Role::Assistant => m.tool_calls.len().max(1),
        _ => 1,
    }
}

/// The view in events: `cum[e]` = events before entry `e` (`cum[n]` = all), and whether a
/// forgotten range may start or end at entry `e` (not on a tool result: an action and its
/// observations are one unit; the end of the view always may).
struct Events {
    cum: Vec<usize>,
    boundary: Vec<bool>,
    tokens: Vec<u64>,
}

impl Events {
    fn of(entries: &[crate::engine::view::Entry<'_>]) -> Events {
        let mut cum = Vec::with_capacity(entries.len() + 1);
        let mut boundary = Vec::with_capacity(entries.len() + 1);
        let mut tokens = Vec::with_capacity(entries.len());
        let mut n = 0;
        for e in entries {
            cum.push(n);
            boundary.push(e.item.msg.role != Role::Tool);
            tokens.push(e.item.tokens);
            n += event_weight(&e.item.msg);
        }
        cum.push(n);
        boundary.push(true);
        Events {
            cum,
            boundary,
            tokens,
        }
    }
    fn len(&self) -> usize {
        *self.cum.last().unwrap_or(&0)
    }
    /// `manipulation_indices.find_next(x)`: the first boundary entry at or after event `x`.
    fn find_next(&self, x: usize) -> usize {
        (0..self.cum.len())
            .find(|&e| self.boundary[e] && self.cum[e] >= x)
            .unwrap_or(self.cum.len() - 1)
    }
}

/// Why the view is condensed (the SDK's `Reason`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Reasons {
    request: bool,
    tokens: bool,
    events: bool,
}

impl CondenseLayer {
    /// The forgotten entry range (`start..end`) for `reasons`, or `None` when no
    /// condensation is available (nothing to forget, or below `minimum_progress`).
    fn forgotten(
        &self,
        ev: &Events,
        protected_prefix: usize,
        reasons: Reasons,
        overhead: u64,
    ) -> Option<(usize, usize)> {
        let n = ev.len();
        let keep_first = self.cfg.keep_first as i64;
        let mut from_tail: Vec<i64> = Vec::new();
        if reasons.request {
            from_tail.push((n / 2) as i64 - keep_first - 1);
        }
        if reasons.events {
            from_tail.push((self.cfg.max_size / 2) as i64 - keep_first - 1);
        }
        if let (true, Some(max)) = (reasons.tokens, self.cfg.max_tokens) {
            // `get_suffix_length_for_token_reduction` over the events after keep_first.
            let total = overhead + ev.tokens.iter().sum::<u64>();
            let reduce = total.saturating_sub(max / 2);
            let first = ev.find_next(self.cfg.keep_first).min(ev.tokens.len());
            let mut removed = 0u64;
            let mut cut = first;
            while cut < ev.tokens.len() && removed < reduce {
                removed += ev.tokens[cut];
                cut += 1;
            }
            from_tail.push((n - ev.cum[cut]) as i64);
        }
        let events_from_tail = from_tail.into_iter().min()?;
        // Python slicing: `len - k` with k ≤ 0 is at or past the end.
        let naive_end = if events_from_tail <= 0 {
            n
        } else {
            n.saturating_sub(events_from_tail as usize)
        };
        let start = ev.find_next(protected_prefix);
        let end = ev.find_next(naive_end);
        if end <= start {
            return None;
        }
        let forgotten = ev.cum[end] - ev.cum[start];
        if (forgotten as f64) < n as f64 * self.cfg.minimum_progress {
            return None;
        }
        Some((start, end))
    }

    fn condense(
        &mut self,
        ctx: &mut CallCtx<'_>,
        effective: u64,
        reasons: Reasons,
    ) -> Result<(), EngineError> {
        let entries = ctx.view.entries(ctx.state);
        let ev = Events::of(&entries);
        // The leading system prompt is never forgotten.
        let system = entries
            .iter()
            .position(|e| e.item.msg.role == Role::System && !e.item.is_summary);
        let protected_prefix = match system {
            Some(i) => self.cfg.keep_first.max(ev.cum[i] + 1),
            None => self.cfg.keep_first,
        };
        let hard = reasons.request || reasons.tokens;
        let range = match self.forgotten(&ev, protected_prefix, reasons, ctx.env.overhead) {
            Some(r) => r,
            // Hard context reset: forget everything after the system prompt.
            None if hard => (system.map_or(0, |i| i + 1), entries.len()),
            None => return Ok(()),
        };
        let (start, end) = range;
        if end <= start {
            return Ok(());
        }
        let head: Vec<Item> = entries[..start].iter().map(|e| e.item.clone()).collect();
        let leaving: Vec<Arc<Message>> = entries[start..end]
            .iter()
            .filter(|e| !e.item.is_summary)
            .map(|e| e.item.msg.clone())
            .collect();
        let summarized_from = entries[start..end].iter().find_map(|e| match e.source {
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

        let state_cutoff = ctx.view.cut_before(ctx.state, end);
        let kept = ctx.view.len();
        let mut new_head = head;
        new_head.push(summary);
        new_head.append(&mut ctx.view.head);
        ctx.view.head = new_head;
        ctx.base.head = ctx.view.head.clone();
        ctx.base.start = state_cutoff;
        ctx.base.generation += 1;
        ctx.view.head_generation = ctx.base.generation;

        let after = ctx.request_tokens();
        let record = Record {
            view_cutoff: end,
            state_cutoff,
            summarized_from,
            newly_summarized: leaving.len(),
            kept,
            history_file: String::new(),
            content: out.text.clone(),
        };
        let ev = ctx.emit_record(self.name(), EventDetail::Summarized, record, out, effective);
        ev.tokens_after = Some(after);
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
        let events: usize = {
            let entries = ctx.view.entries(ctx.state);
            entries.iter().map(|e| event_weight(&e.item.msg)).sum()
        };
        let reasons = Reasons {
            request: self.cfg.on_context_overflow && tokens > ctx.env.window,
            tokens: self.cfg.max_tokens.is_some_and(|m| tokens > m),
            events: events > self.cfg.max_size,
        };
        if reasons.request || reasons.tokens || reasons.events {
            self.condense(ctx, effective, reasons)?;
        }
        Ok(())
    }
}
