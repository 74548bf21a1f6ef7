//! Layer `summarize` (deepagents SummarizationMiddleware): when the request reaches the trigger
//! (or exceeds the input budget), find the cutoff that keeps the most recent `keep` tokens
//! (LangChain's binary search + move-back rule), append the raw messages leaving the context to
//! `<history_dir>/session_<hex>.md`, ask the [`Summarizer`](crate::engine::summarizer::Summarizer)
//! for a summary (chained with the previous one), and make `[summary] + kept` the persistent
//! base. If the request is still over budget, clip the trailing tool results (persistent), then
//! report a context overflow. `history` decides what the agent can still reach: `offload` (the
//! history file above, named by the summary), `memory` (only the summary, appended to
//! `<history_dir>/MEMORY.md`) or `none` (nothing written); `summary_role` puts the summary in a
//! user or a system message.

use super::fold::{
    emit_summary_error, history_file, install_record, leaving, record_text, request_summary, Record,
};
use super::preview::{read_file_clip, tool_stub, PreviewShape};
use super::{BuildCtx, LayerSpec};
use crate::confcore::ConfigError;
use crate::engine::config::err;
use crate::engine::cooldown::Cooldown;
use crate::engine::event::EventDetail;
use crate::engine::layer::{CallCtx, Layer, MessageCtx};
use crate::engine::layer_config::{History, Keep, SummaryRole, TextSource, Trigger};
use crate::engine::store::{LazyBytes, Rename};
use crate::engine::summarizer::DEFAULT_SUMMARY_PROMPT;
use crate::engine::view::{with_content, Entry, Item, Source};
use crate::engine::EngineError;
use crate::tokens::approx::code_points;
use crate::trace::memo::MessageMemo;
use crate::trace::{Message, Role};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Summarize older turns (persistent compaction), with deepagents' budget rule and tail clip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summarize {
    pub trigger: Trigger,
    /// Also summarize when the request exceeds `0.95·window − max_output_tokens`.
    pub trigger_over_budget: bool,
    pub keep: Keep,
    /// Summary prompt; `None` = the built-in default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<TextSource>,
    pub summary_max_tokens: u64,
    /// Directory of the history file (`<dir>/session_<hex>.md`) or of `MEMORY.md`.
    pub history_dir: String,
    /// What the agent can still reach of the summarized slice.
    #[serde(default, skip_serializing_if = "History::is_offload")]
    pub history: History,
    /// Role of the summary message.
    #[serde(default, skip_serializing_if = "SummaryRole::is_user")]
    pub summary_role: SummaryRole,
    /// After summarizing, clip the trailing tool results while the request is over budget.
    pub clip_tail_over_budget: bool,
    /// `read_file` results clipped over budget keep this many leading characters.
    pub read_file_slice_chars: usize,
    /// Stop the replay (context overflow) when the request is still over budget.
    pub stop_on_overflow: bool,
    /// core-agent: the trigger is the tier fraction of the trace's model (frontier 0.85, mid
    /// 0.65, small 0.35, by model-id substring); unknown models keep `trigger`. An explicit
    /// `tier` or `summarize.trigger` in the configuration turns this off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tier_from_model: bool,
    /// Seconds after a compaction during which no other runs (digitorn's hook `cooldown`,
    /// 30 s), measured on the trace's message timestamps; off when the trace has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_secs: Option<f64>,
}

impl LayerSpec for Summarize {
    const NAME: &'static str = "summarize";

    fn validate(&self) -> Result<(), ConfigError> {
        if self.summary_max_tokens == 0 {
            return Err(err("summarize.summary_max_tokens", "must be > 0"));
        }
        if self
            .cooldown_secs
            .is_some_and(|c| !(c.is_finite() && c > 0.0))
        {
            return Err(err(
                "summarize.cooldown_secs",
                "must be a number of seconds > 0",
            ));
        }
        if self.history != History::None && self.history_dir.is_empty() {
            return Err(err(
                "summarize.history_dir",
                "is empty; to keep nothing the agent can reach, set summarize.history = \"none\"",
            ));
        }
        Ok(())
    }

    fn compaction_trigger(&mut self) -> Option<&mut Trigger> {
        Some(&mut self.trigger)
    }

    fn tier_from_model(&mut self) -> Option<&mut bool> {
        Some(&mut self.tier_from_model)
    }

    fn build(&self, _: &BuildCtx<'_>) -> Result<Box<dyn Layer>, ConfigError> {
        let prompt = match &self.prompt {
            Some(src) => src.load()?,
            None => DEFAULT_SUMMARY_PROMPT.to_string(),
        };
        Ok(Box::new(SummarizeLayer::new(self.clone(), prompt)))
    }
}

pub struct SummarizeLayer {
    cfg: Summarize,
    prompt: String,
    history_file: Option<String>,
    cooldown: Cooldown,
}

impl SummarizeLayer {
    pub fn new(cfg: Summarize, prompt: String) -> Self {
        SummarizeLayer {
            cfg,
            prompt,
            history_file: None,
            cooldown: Cooldown::default(),
        }
    }
}

/// LangChain `_find_safe_cutoff_point`: a cutoff on a tool result moves back to the assistant
/// message that issued that run of results (forward past them if none is found).
pub fn safe_cutoff_point(entries: &[Entry<'_>], cutoff: usize) -> usize {
    if cutoff >= entries.len() || entries[cutoff].item.msg.role != Role::Tool {
        return cutoff;
    }
    let mut ids: Vec<&str> = Vec::new();
    let mut idx = cutoff;
    while idx < entries.len() && entries[idx].item.msg.role == Role::Tool {
        if let Some(id) = entries[idx].item.msg.tool_call_id.as_deref() {
            if !id.is_empty() {
                ids.push(id);
            }
        }
        idx += 1;
    }
    for i in (0..cutoff).rev() {
        let m = &entries[i].item.msg;
        if m.role == Role::Assistant
            && m.tool_calls
                .iter()
                .any(|c| !c.id.is_empty() && ids.contains(&c.id.as_str()))
        {
            return i;
        }
    }
    idx
}

/// LangChain `_find_token_based_cutoff`, literally: binary search for the earliest index whose
/// suffix fits `keep` (`bit_length + 1` iterations, fallbacks to `left` and `len − 1`), then
/// the safe-cutoff rule. 0 when everything fits.
pub fn token_cutoff(entries: &[Entry<'_>], keep: u64) -> usize {
    let n = entries.len();
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0u64);
    for e in entries {
        prefix.push(prefix.last().copied().unwrap_or(0) + e.item.tokens);
    }
    let total = prefix[n];
    if n == 0 || total <= keep {
        return 0;
    }
    let suffix = |k: usize| total - prefix[k];
    let (mut left, mut right) = (0usize, n);
    let mut candidate = n;
    let max_iterations = (usize::BITS - n.leading_zeros()) as usize + 1;
    for _ in 0..max_iterations {
        if left >= right {
            break;
        }
        let mid = (left + right) / 2;
        if suffix(mid) <= keep {
            candidate = mid;
            right = mid;
        } else {
            left = mid + 1;
        }
    }
    if candidate == n {
        candidate = left;
    }
    if candidate >= n {
        if n == 1 {
            return 0;
        }
        candidate = n - 1;
    }
    safe_cutoff_point(entries, candidate)
}

/// Message-count cutoff (`keep = {messages = N}`), with the same safe-cutoff rule.
pub fn message_cutoff(entries: &[Entry<'_>], keep: usize) -> usize {
    if entries.len() <= keep {
        return 0;
    }
    safe_cutoff_point(entries, entries.len() - keep)
}

/// One section of the history file: the messages that left the context at one model call,
/// rendered as markdown when read (its exact length is computed up front).
#[derive(Debug)]
struct HistorySection {
    call_index: usize,
    messages: Vec<Arc<Message>>,
    len: u64,
}

/// An `io::Write` that only counts.
struct Count(u64);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl HistorySection {
    fn new(call_index: usize, messages: Vec<Arc<Message>>) -> Self {
        let mut header = Count(0);
        // Counting cannot fail.
        let _ = Self::render_header(call_index, &mut header);
        let len = header.0 + messages.iter().map(Self::message_len).sum::<u64>() + 1;
        HistorySection {
            call_index,
            messages,
            len,
        }
    }

    /// Generic over the writer, so a `Vec` or a count is written without a call through a
    /// vtable per piece (the arguments' JSON is written in many small pieces).
    fn render<W: std::io::Write + ?Sized>(&self, out: &mut W) -> std::io::Result<()> {
        Self::render_header(self.call_index, out)?;
        for m in &self.messages {
            Self::render_message(m, out)?;
        }
        out.write_all(b"\n")
    }

    fn render_header<W: std::io::Write + ?Sized>(call: usize, out: &mut W) -> std::io::Result<()> {
        write!(out, "## Summarized at model call {call}\n\n")
    }

    fn render_message<W: std::io::Write + ?Sized>(m: &Message, out: &mut W) -> std::io::Result<()> {
        let who = match m.role {
            Role::System => "System",
            Role::User => "Human",
            Role::Assistant => "AI",
            Role::Tool => "Tool",
        };
        out.write_all(who.as_bytes())?;
        out.write_all(b": ")?;
        out.write_all(m.content.as_bytes())?;
        out.write_all(b"\n")?;
        for c in &m.tool_calls {
            // `Tool call {name} ({id}): {arguments}`; the arguments written as their
            // `Display` writes them (compact JSON), without a formatter between.
            out.write_all(b"Tool call ")?;
            out.write_all(c.name.as_bytes())?;
            out.write_all(b" (")?;
            out.write_all(c.id.as_bytes())?;
            out.write_all(b"): ")?;
            serde_json::to_writer(&mut *out, &c.arguments).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Bytes [`render_message`](Self::render_message) writes for `m`, remembered per thread
    /// while the message lives: the same trace messages leave the context in every unit of a
    /// trace × variant, and counting a tool call's arguments escapes their JSON.
    fn message_len(m: &Arc<Message>) -> u64 {
        thread_local! {
            static LENS: std::cell::RefCell<MessageMemo<u64>> = std::cell::RefCell::default();
        }
        LENS.with(|memo| {
            *memo.borrow_mut().get_or_insert_with(m, || {
                let mut count = Count(0);
                // Counting cannot fail.
                let _ = Self::render_message(m, &mut count);
                count.0
            })
        })
    }
}

impl LazyBytes for HistorySection {
    fn len(&self) -> u64 {
        self.len
    }
    fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.render(out)
    }
    fn append_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.len as usize);
        // Writing into a Vec cannot fail.
        let _ = self.render(out);
    }
    fn renamed(&self, rename: &Rename) -> Option<Box<dyn LazyBytes>> {
        // Many sections name nothing drawn: nothing is copied until a message changes.
        let (at, first) = self.messages.iter().enumerate().find_map(|(k, m)| {
            let renamed = rename.message(m);
            (!Arc::ptr_eq(&renamed, m)).then_some((k, renamed))
        })?;
        let mut messages = Vec::with_capacity(self.messages.len());
        messages.extend_from_slice(&self.messages[..at]);
        messages.push(first);
        messages.extend(self.messages[at + 1..].iter().map(|m| rename.message(m)));
        Some(Box::new(HistorySection::new(self.call_index, messages)))
    }
}

/// Markdown of the messages appended to a history file (the same rendering as the summarize
/// layer's lazily written sections), for layers that write history eagerly.
pub(crate) fn render_history(call_index: usize, messages: &[Arc<Message>]) -> String {
    let section = HistorySection::new(call_index, messages.to_vec());
    let mut out = Vec::with_capacity(section.len as usize);
    // Writing into a Vec cannot fail.
    let _ = section.render(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

impl SummarizeLayer {
    /// Steps (e)–(f): cutoff, history, summary, new base. Returns true when it summarized.
    fn summarize(&mut self, ctx: &mut CallCtx<'_>, effective: u64) -> Result<bool, EngineError> {
        let window = ctx.env.window;
        let entries = ctx.view.entries(ctx.state);
        let cutoff = match self.cfg.keep {
            Keep::Messages(n) => message_cutoff(&entries, n),
            keep => token_cutoff(&entries, keep.tokens(window).unwrap_or(0)),
        };
        if cutoff == 0 {
            return Ok(false);
        }
        let (leaving, summarized_from) = leaving(&entries, cutoff);
        drop(entries);

        // Offload: the raw turns are on disk before they leave the context.
        let dir = self.cfg.history_dir.trim_end_matches('/').to_string();
        let mut writes = Vec::new();
        let mut history = String::new();
        if self.cfg.history == History::Offload {
            history = history_file(ctx, &mut self.history_file, &dir, "session");
            let section = HistorySection::new(ctx.call_index, leaving.clone());
            writes.push(ctx.env.store.append_lazy(&history, Box::new(section))?);
        }

        let outcome = request_summary(
            ctx,
            &leaving,
            &self.prompt,
            self.cfg.summary_max_tokens,
            "summary",
        );
        let out = match outcome {
            Ok(o) => o,
            Err(message) => {
                emit_summary_error(ctx, self.name(), effective, writes, message);
                return Ok(false);
            }
        };

        let content = record_text(
            ctx,
            self.cfg.history,
            &dir,
            &mut history,
            "Summarized",
            &out.text,
            &mut writes,
        )?;
        let mut msg = match self.cfg.summary_role {
            SummaryRole::User => Message::user(content.clone()),
            SummaryRole::System => Message::system(content.clone()),
        };
        msg.kind = Some("summary".into());
        let (state_cutoff, kept) = install_record(ctx, msg, &history, cutoff);

        let record = Record {
            view_cutoff: cutoff,
            state_cutoff,
            summarized_from,
            newly_summarized: leaving.len(),
            kept,
            history_file: history,
            content,
        };
        let ev = ctx.emit_record(self.name(), EventDetail::Summarized, record, out, effective);
        ev.writes = writes;
        if let Some(at) = ctx.notes.args_truncated_event {
            if let EventDetail::ArgsTruncated {
                summarized_in_same_call,
                ..
            } = &mut ctx.env.events[at].detail
            {
                *summarized_in_same_call = true;
            }
        }
        Ok(true)
    }

    /// Step (g): clip the trailing run of tool results, persistently, while it is worth it.
    fn clip_tail(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let window = ctx.env.window;
        let entries = ctx.view.entries(ctx.state);
        let mut start = entries.len();
        while start > 0
            && entries[start - 1].item.msg.role == Role::Tool
            && matches!(entries[start - 1].source, Source::State(_))
        {
            start -= 1;
        }
        if start == entries.len() {
            return Ok(());
        }
        let threshold = self.cfg.keep.tokens(window).unwrap_or(5_000);
        let mut current: u64 = entries[start..].iter().map(|e| e.item.tokens).sum();
        if current < threshold {
            return Ok(());
        }
        struct Tail {
            idx: usize,
            item: Item,
            read_file_path: Option<String>,
        }
        let tail: Vec<Tail> = entries[start..]
            .iter()
            .filter_map(|e| {
                let Source::State(idx) = e.source else {
                    return None;
                };
                let id = e.item.msg.tool_call_id.as_deref().unwrap_or("");
                let read_file_path = entries[..start].iter().rev().find_map(|a| {
                    a.item
                        .msg
                        .tool_calls
                        .iter()
                        .find(|c| !id.is_empty() && c.id == id)
                        .and_then(|c| {
                            (c.name == "read_file")
                                .then(|| c.arguments.get("file_path")?.as_str().map(String::from))
                                .flatten()
                        })
                        .filter(|p| !p.is_empty())
                });
                Some(Tail {
                    idx,
                    item: e.item.clone(),
                    read_file_path,
                })
            })
            .collect();
        drop(entries);
        let shape = PreviewShape {
            head: 5,
            tail: 5,
            line_chars: 1000,
        };
        for t in tail {
            let m = &t.item.msg;
            let id = m.tool_call_id.clone().unwrap_or_default();
            let (content, write_to) = match &t.read_file_path {
                Some(p) => (
                    read_file_clip(&m.content, p, self.cfg.read_file_slice_chars),
                    None,
                ),
                None => {
                    // A result already offloaded (evicted at tool time, or clipped by an
                    // earlier call: its message is the stub, and its file holds the original)
                    // is not clipped again. deepagents gets there because its backends refuse
                    // to `write` over the existing `/large_tool_results/<id>`, and the offload
                    // leaves the message unchanged when the write fails.
                    if t.item.pointer.is_some() {
                        continue;
                    }
                    // deepagents' path (one of its own when that is no file name); a path
                    // another result's file has is refused, as deepagents' backends refuse
                    // the write: the result is not clipped
                    // (`OffloadStore::deepagents_result_path`).
                    let Ok(path) = ctx
                        .env
                        .store
                        .deepagents_result_path("/large_tool_results", &id)
                    else {
                        continue;
                    };
                    (tool_stub(&id, &path, &m.content, shape), Some(path))
                }
            };
            let nm = with_content(m, content.clone());
            let mut item = Item::new(nm, ctx.env.counter);
            let candidate = current - t.item.tokens + item.tokens;
            if candidate >= current {
                continue;
            }
            let mut writes = Vec::new();
            if let Some(path) = &write_to {
                writes.push(ctx.env.store.write_content(path, m)?);
                item = item.with_pointer(path, Some(t.idx));
            }
            let (tokens_before, tokens_after) = (t.item.tokens, item.tokens);
            let detail = EventDetail::OverBudgetClipped {
                clipped_index: t.idx,
                tool: m.name.clone().unwrap_or_default(),
                chars_before: code_points(&m.content) as u64,
                chars_after: code_points(&content) as u64,
                replacement: content,
                path: write_to,
            };
            ctx.state.replace(t.idx, item);
            current = candidate;
            let ev = ctx.emit(self.name(), detail);
            ev.tokens_before = Some(tokens_before);
            ev.tokens_after = Some(tokens_after);
            ev.writes = writes;
        }
        Ok(())
    }
}

impl Layer for SummarizeLayer {
    fn name(&self) -> &'static str {
        "summarize"
    }

    fn fork(&self, rename: &Rename) -> Option<Box<dyn Layer>> {
        let mut history_file = self.history_file.clone();
        if let Some(f) = &mut history_file {
            rename.apply(f);
        }
        Some(Box::new(SummarizeLayer {
            cfg: self.cfg.clone(),
            prompt: self.prompt.clone(),
            history_file,
            cooldown: self.cooldown.clone(),
        }))
    }

    fn on_message(&mut self, ctx: &mut MessageCtx<'_>) -> Result<(), EngineError> {
        if self.cfg.cooldown_secs.is_some() {
            let m = &ctx.state.get(ctx.index).msg;
            self.cooldown.saw(m.timestamp.as_deref());
        }
        Ok(())
    }

    fn before_call(&mut self, ctx: &mut CallCtx<'_>) -> Result<(), EngineError> {
        let effective = ctx.effective_tokens();
        let count = ctx.request_tokens();
        let budget = ctx.env.budget;
        let wanted = count >= self.cfg.trigger.tokens(ctx.env.window)
            || (self.cfg.trigger_over_budget && count > budget);
        if !wanted {
            return Ok(());
        }
        if self
            .cooldown
            .hold(self.cfg.cooldown_secs, ctx, "summarize", effective)
        {
            return Ok(());
        }
        let first_event = ctx.env.events.len();
        let summarized = self.summarize(ctx, effective)?;
        if summarized {
            self.cooldown.compacted();
        }
        if self.cfg.clip_tail_over_budget && ctx.request_tokens() > budget {
            self.clip_tail(ctx)?;
        }
        let sent = ctx.request_tokens();
        if summarized {
            if let Some(ev) = ctx.env.events[first_event..]
                .iter_mut()
                .find(|e| matches!(e.detail, EventDetail::Summarized(_)))
            {
                ev.tokens_after = Some(sent);
            }
        }
        if sent > budget && self.cfg.stop_on_overflow {
            let message = format!(
                "request of {sent} tokens still exceeds the input budget of {budget} tokens after compaction"
            );
            let detail = EventDetail::Overflow {
                tokens: sent,
                limit: budget,
                message: message.clone(),
            };
            let ev = ctx.emit(self.name(), detail);
            ev.tokens_before = Some(effective);
            ev.tokens_after = Some(sent);
            ctx.notes.stop = Some(message);
        }
        Ok(())
    }
}

#[cfg(test)]
mod history_tests {
    use super::*;
    use crate::trace::ToolCall;
    use serde_json::json;

    /// The history section is the text its `Display`-based recipe gives, tool arguments
    /// (escapes, non-ASCII, nesting, numbers) included, and its length is that text's.
    #[test]
    fn history_section_renders_tool_calls_as_their_display() {
        let args = [
            json!({"command": "grep -n \"x\\ty\" a.py\nécho ✓", "n": 1.5, "k": [1, null, true]}),
            json!("plain"),
            json!({}),
            json!({"nested": {"a": {"b": "\u{1}\u{7f}"}}, "big": 12345678901234567890u64}),
        ];
        let mut m = Message::assistant(
            "calling",
            args.iter()
                .enumerate()
                .map(|(i, a)| ToolCall {
                    id: format!("call_{i}"),
                    name: "bash".into(),
                    arguments: a.clone(),
                })
                .collect(),
        );
        m.content.push_str(" now");
        let msgs = vec![Arc::new(Message::user("hi")), Arc::new(m.clone())];
        let mut want =
            String::from("## Summarized at model call 7\n\nHuman: hi\nAI: calling now\n");
        for c in &m.tool_calls {
            want.push_str(&format!(
                "Tool call {} ({}): {}\n",
                c.name, c.id, c.arguments
            ));
        }
        want.push('\n');
        assert_eq!(render_history(7, &msgs), want);
        assert_eq!(HistorySection::new(7, msgs.clone()).len, want.len() as u64);
        // Again, the messages' lengths remembered; and a changed copy counted afresh.
        assert_eq!(HistorySection::new(7, msgs.clone()).len, want.len() as u64);
        let mut changed = msgs;
        Arc::make_mut(&mut changed[0]).content.push_str(" there");
        assert_eq!(
            HistorySection::new(7, changed).len,
            want.len() as u64 + " there".len() as u64
        );
    }
}
