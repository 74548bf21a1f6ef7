//! Codex CLI session rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) → one canonical
//! trace.
//!
//! Each line is `{timestamp, type, payload}`:
//! - `session_meta`: `payload.id` (else `payload.session_id`) → `task_id`,
//!   `payload.base_instructions.text` (the
//!   instructions the model got) → the first, system message;
//! - `turn_context`: `payload.model` → `meta.model`;
//! - `response_item`: an OpenAI Responses item, converted as the `openai-responses` importer
//!   does (consecutive output items are one model call; reasoning kept as reasoning);
//! - `event_msg` with `payload.type: "token_count"`: `info.last_token_usage` is the usage of the
//!   model call just made (`input_tokens` includes `cached_input_tokens`, `output_tokens`
//!   includes `reasoning_output_tokens`); it is set on the latest assistant message and ends
//!   that call. Codex until about 0.4x wrote the event before the items of its response (see
//!   `usage_comes_first`): there it goes on the response that follows. A repeated event
//!   (same `total_token_usage`) is counted once. Without `last_token_usage` (a rollout
//!   trimmed or written by another tool: Codex always writes it), the call's usage is what
//!   `total_token_usage` grew by since the previous event (Codex's total is the sum of the
//!   calls' last usages, `TokenUsageInfo::append_last_usage`), warned of once; a total below
//!   the previous one (reset or replaced) gives that call no usage, warned of;
//!   `info.model_context_window` → `meta.window`; `cache_write_input_tokens` (Codex 0.146 and
//!   later) → `cache_write`. `thread_rolled_back` (the person edited an earlier message):
//!   Codex drops their last `num_turns` turns from the model's context, and so does the trace
//!   (`Conv::rollback`), with a warning (more turns than there are: every turn, keeping what
//!   precedes the first, as Codex's `drop_last_n_user_turns`). `user_message` is the person's
//!   message, which Codex writes as a user message item and then as this event: skipped after
//!   such an item; without one (a rollout trimmed or written by another tool), its text is the
//!   only record of the message and is imported as the item would be, warned of once per file.
//!   The events that repeat what the
//!   response items and the other records hold are skipped (`REPEATED_EVENTS`:
//!   `agent_message`, `agent_reasoning`, a call's `*_end`, the turn's `task_started` /
//!   `task_complete`, `context_compacted`); any other event (`turn_aborted`,
//!   `entered_review_mode`, `undo_completed`, …) is counted in the warning below;
//! - `compacted` (Codex's own compaction): a `compaction` marker, followed by the context that
//!   replaced the history: `payload.replacement_history` (items, each message marked
//!   `kind: "compaction_summary"`) when recorded, else the summary `payload.message` as one
//!   `compaction_summary` user message. The history's own `compaction` item holds the server's
//!   summary encrypted: a warning says the model got a summary the trace cannot hold;
//! - `world_state` (Codex 0.14x): the state Codex derives its context messages from, which are
//!   `response_item`s too: skipped.
//!
//! Records of another type and the events not read are skipped with one warning per file,
//! naming each kind with its count (`"thread_note" ×2, event_msg "turn_aborted" ×1`), so
//! nothing is dropped without a word, and the bookkeeping every rollout has is no warning.
//!
//! Rollouts written before `session_meta` existed (Codex CLI until about September 2025) have
//! no envelope: line 1 is a bare header `{id, timestamp, instructions, git?}` (also with `cwd`,
//! `originator`, `cli_version` in later ones), then `{"record_type": "state"}` lines (Codex's
//! bookkeeping, skipped) and bare Responses items with no `payload` and usually no timestamp.
//! The header's `id` → `task_id`; its `instructions` are the person's instructions (AGENTS.md),
//! which Codex also sent as a `<user_instructions>` message item, so they are not added again.
//! No usage was recorded in these files.
//!
//! User messages Codex injects (`<environment_context>`, AGENTS.md, `<user_instructions>`) get
//! `kind: "meta"` (in the shared item conversion), so the goal is the person's first request.

use super::detect::{str_of, Shape};
use super::json::{Node, Res};
use super::responses::{is_item, Conv};
use super::{Importer, Input};
use crate::trace::model::{Message, Role, SourceFormat, Trace, Usage};
use serde_json::{Map, Value};

/// Codex rollouts: JSON Lines of `{type: session_meta|response_item|turn_context|event_msg|
/// compacted, payload}` with a `session_meta` or `response_item` record; or the older shape, a
/// bare `{id, timestamp, …}` header followed by `record_type: state` lines or bare Responses
/// items.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Codex,
    detect: |shape| match shape {
        Shape::Lines(lines, first) => {
            lines.iter().filter_map(|(_, v)| v.as_object()).any(|o| {
                matches!(str_of(o, "type"), Some("session_meta" | "response_item"))
                    && o.get("payload").is_some_and(|p| p.is_object())
            }) || (is_legacy_header(first)
                && lines.iter().skip(1).filter_map(|(_, v)| v.as_object()).any(|o| {
                    o.contains_key("record_type") || is_item(o)
                }))
        }
        Shape::Object(o) => {
            str_of(o, "type") == Some("session_meta") && o.contains_key("payload")
        }
        Shape::Array(..) => false,
    },
    import: |input, stem| match input {
        Input::Lines(lines) => import(std::mem::take(lines), stem),
        Input::Json(v) => import(vec![(1, std::mem::take(v))], stem),
    },
};

/// Line 1 of a rollout written before `session_meta`: `{id, timestamp, …}` with no `type`,
/// `payload` or `record_type`.
fn is_legacy_header(o: &Map<String, Value>) -> bool {
    str_of(o, "id").is_some_and(|id| !id.is_empty())
        && str_of(o, "timestamp").is_some()
        && !o.contains_key("type")
        && !o.contains_key("payload")
        && !o.contains_key("record_type")
}

/// Model output: the items a model response is made of.
fn is_output(p: &Map<String, Value>) -> bool {
    match str_of(p, "type") {
        Some("message") => str_of(p, "role") == Some("assistant"),
        Some(t) => matches!(
            t,
            "reasoning" | "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call"
        ),
        None => false,
    }
}

/// True when the rollout writes each call's `token_count` before the items of its response, as
/// Codex did until about 0.4x (a real 0.39 rollout: `agent_message`, `token_count`, then the
/// `reasoning`, `message` and `function_call` items of that response); later versions write it
/// after them. Told by both ends of the rollout: the older order starts with a `token_count`
/// before any model output and ends with model output after the last one; the later order
/// starts with output and ends with a `token_count`. A `token_count` of no tokens (Codex fills
/// the usage with the window's size on a context-window error, input and output 0) does not
/// count, and the assistant items a `compacted` record's `replacement_history` holds are model
/// output. When the ends disagree (a rollout cut off after a call's usage), the later order.
fn usage_comes_first(lines: &[(usize, Value)]) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum Seen {
        Output,
        Usage,
    }
    let is_usage = |p: &Map<String, Value>| {
        str_of(p, "type") == Some("token_count")
            && p.get("info").is_some_and(|i| {
                let tokens = |u: &Value| {
                    ["input_tokens", "output_tokens"]
                        .iter()
                        .any(|k| u.get(*k).and_then(Value::as_u64).unwrap_or(0) > 0)
                };
                match i.get("last_token_usage").filter(|u| !u.is_null()) {
                    Some(u) => tokens(u),
                    None => i.get("total_token_usage").is_some_and(tokens),
                }
            })
    };
    let (mut first, mut last) = (None, None);
    for (_, v) in lines {
        let (Some(ty), Some(p)) = (v.get("type"), v.get("payload").and_then(Value::as_object))
        else {
            continue;
        };
        let seen = match ty.as_str() {
            Some("response_item") if is_output(p) => Seen::Output,
            Some("compacted")
                if p
                    .get("replacement_history")
                    .and_then(Value::as_array)
                    .is_some_and(|h| h.iter().filter_map(Value::as_object).any(is_output)) =>
            {
                Seen::Output
            }
            Some("event_msg") if is_usage(p) => Seen::Usage,
            _ => continue,
        };
        first.get_or_insert(seen);
        last = Some(seen);
    }
    first == Some(Seen::Usage) && last == Some(Seen::Output)
}

/// Sets `usage` on the first assistant message from index `from` on (the response a
/// `token_count` written before its items belongs to); warned of when no response followed, or
/// when that response already has usage (added).
fn usage_on_response(conv: &mut Conv, usage: Usage, from: usize, at: &str) {
    let from = from.min(conv.t.messages.len());
    let t = &mut conv.t;
    let response = t.messages[from..].iter_mut().find(|m| m.role == Role::Assistant);
    put_usage(response, usage, at, "with no model output after it", &mut t.meta.warnings);
}

/// Sets `usage` on `response`, or adds it to the usage it has (a second call with no new item
/// between, e.g. a retried request), warned of; without a response, warned of as skipped
/// (`none`: why there is none).
fn put_usage(
    response: Option<&mut Message>,
    usage: Usage,
    at: &str,
    none: &str,
    warnings: &mut Vec<String>,
) {
    match response {
        Some(m) if m.usage.is_none() => m.usage = Some(usage),
        Some(m) => {
            let mut sum = m.usage.unwrap_or_default();
            sum.add(&usage);
            m.usage = Some(sum);
            warnings.push(format!(
                "{at}: token_count for a model call that already has usage; added"
            ));
        }
        None => warnings.push(format!("{at}: token_count {none}; skipped")),
    }
}

/// A Codex `TokenUsage` (`last_token_usage`, `total_token_usage`) as a call's [`Usage`].
fn usage_of(u: &Node) -> Res<Usage> {
    Ok(Usage {
        input: u.key("input_tokens").opt_u64()?.unwrap_or(0),
        output: u.key("output_tokens").opt_u64()?.unwrap_or(0),
        cache_read: u.key("cached_input_tokens").opt_u64()?.unwrap_or(0),
        // Recorded since about Codex 0.146 (zero with OpenAI models).
        cache_write: u.key("cache_write_input_tokens").opt_u64()?.unwrap_or(0),
    })
}

/// What `total` grew by since `before`; `None` when a count went down (a total that was reset
/// or replaced: Codex's `fill_to_context_window` after a context-window error) and the
/// difference is no call's usage.
fn since(total: Usage, before: Usage) -> Option<Usage> {
    Some(Usage {
        input: total.input.checked_sub(before.input)?,
        output: total.output.checked_sub(before.output)?,
        cache_read: total.cache_read.checked_sub(before.cache_read)?,
        cache_write: total.cache_write.checked_sub(before.cache_write)?,
    })
}

pub fn import(lines: Vec<(usize, Value)>, stem: &str) -> Res<Vec<Trace>> {
    let mut conv = Conv::new(stem, SourceFormat::Codex);
    let usage_first = usage_comes_first(&lines);
    // In that order: the usage waiting for its response, from which message on, and where.
    let mut pending: Option<(Usage, usize, String)> = None;
    let mut last_total: Option<Value> = None;
    // `total_token_usage` of the latest token_count that had one, and whether a call's usage
    // was derived from it (warned of once).
    let mut running_total: Option<Usage> = None;
    let mut derived = false;
    let mut legacy = false;
    // Records and events not read here, counted for one warning.
    // The records and events of the rollout not read, by kind, for one warning.
    let mut unread = super::Skipped::default();
    // Whether the latest `response_item` is a user message: the item a `user_message` event
    // repeats (Codex writes the item, then the event). The lines of the events that follow no
    // such item, whose text is the only record of the person's message.
    let mut after_user_item = false;
    let mut unrepeated: Vec<usize> = Vec::new();
    for (i, (n, v)) in lines.into_iter().enumerate() {
        let n_line = n;
        let r = Node::line_root(&v, n);
        let o = r.obj()?;
        let ts = r.key("timestamp").opt_str()?;
        if i == 0 && is_legacy_header(o) {
            legacy = true;
            conv.t.meta.task_id = Some(r.key("id").str()?.to_string());
            continue;
        }
        if legacy {
            // Codex's bookkeeping, and the bare items of the older shape.
            if o.contains_key("record_type") {
                continue;
            }
            if !o.contains_key("payload") && is_item(o) {
                conv.item_at(&r, ts)?;
                continue;
            }
        }
        let p = r.key("payload");
        match r.key("type").str()? {
            "session_meta" => {
                if conv.t.meta.task_id.is_none() {
                    // `session_id` alone in the rollouts of Codex 0.152 and later that drop `id`.
                    conv.t.meta.task_id = match p.key("id").opt_str()? {
                        Some(id) => Some(id.to_string()),
                        None => p.key("session_id").opt_str()?.map(String::from),
                    };
                }
                let instr = p.key("base_instructions").key("text");
                if let Some(text) = instr.opt_str()? {
                    if conv.t.messages.is_empty() {
                        conv.t.messages.push(Message::system(text));
                    }
                }
            }
            "turn_context" => {
                if let Some(m) = p.key("model").opt_str()? {
                    if conv.t.meta.model.is_none() {
                        conv.t.meta.model = Some(m.to_string());
                    }
                }
            }
            "response_item" => {
                after_user_item = p.key("type").v.as_str() == Some("message")
                    && p.key("role").v.as_str() == Some("user");
                conv.item_at(&p, ts)?;
            }
            // The person's message. Codex records it twice: as a user message item and, right
            // after it, as this event (for its UI), so the event is skipped. A rollout trimmed
            // or written by another tool may hold the event alone: its text is then the only
            // record of what the person said, and is imported as the user message item would
            // be (one warning per file).
            "event_msg" if p.key("type").opt_str()? == Some("user_message") => {
                if !std::mem::take(&mut after_user_item) {
                    if let Some(text) = p.key("message").opt_str()? {
                        // The images the person attached (`images`: data URLs; `local_images`:
                        // paths) are parts of the item as they are of a user message item, so
                        // they get its placeholder and warning rather than vanish (an image
                        // alone has an empty `message`).
                        let mut content = Vec::new();
                        if !text.is_empty() {
                            content.push(serde_json::json!({"type": "input_text", "text": text}));
                        }
                        for key in ["images", "local_images"] {
                            if let Some(images) = p.key(key).v.as_array() {
                                content.extend(images.iter().map(|i| {
                                    serde_json::json!({"type": "input_image", "image_url": i})
                                }));
                            }
                        }
                        let item = serde_json::json!({"type": "message", "role": "user",
                            "content": content});
                        conv.item_at(&Node::at(&item, p.path.clone()), ts)?;
                        unrepeated.push(n);
                    }
                }
            }
            "event_msg" if p.key("type").opt_str()? == Some("token_count") => {
                let info = p.key("info");
                if info.is_null() {
                    continue;
                }
                if let Some(w) = info.key("model_context_window").opt_u64()? {
                    conv.t.meta.window = Some(w);
                }
                let total_node = info.key("total_token_usage");
                let total = total_node.v.clone();
                if !total.is_null() && last_total.as_ref() == Some(&total) {
                    continue;
                }
                last_total = Some(total);
                // The session's usage so far, and before this event.
                let (total, before) = if total_node.is_null() {
                    (None, running_total)
                } else {
                    let t = usage_of(&total_node)?;
                    (Some(t), running_total.replace(t))
                };
                let u = info.key("last_token_usage");
                let usage = if !u.is_null() {
                    usage_of(&u)?
                } else if let Some(total) = total {
                    // Codex adds each call's `last_token_usage` to `total_token_usage`
                    // (`TokenUsageInfo::append_last_usage`): without the first, the call's
                    // usage is what the total grew by.
                    match since(total, before.unwrap_or_default()) {
                        Some(usage) => {
                            if !derived {
                                derived = true;
                                conv.t.meta.warnings.push(format!(
                                    "{}: token_count without `last_token_usage`: a call's \
                                     usage is taken as what `total_token_usage` grew by since \
                                     the previous token_count",
                                    r.path
                                ));
                            }
                            usage
                        }
                        None => {
                            conv.t.meta.warnings.push(format!(
                                "{}: token_count without `last_token_usage` whose \
                                 `total_token_usage` is below the previous one's: no usage \
                                 for this call; skipped",
                                r.path
                            ));
                            conv.end_call();
                            continue;
                        }
                    }
                } else {
                    continue;
                };
                if usage_first {
                    if let Some((usage, from, at)) = pending.take() {
                        usage_on_response(&mut conv, usage, from, &at);
                    }
                    pending = Some((usage, conv.t.messages.len(), r.path.clone()));
                    conv.end_call();
                    continue;
                }
                let t = &mut conv.t;
                let last = t.messages.iter_mut().rev().find(|m| m.role == Role::Assistant);
                let before = "before any model output";
                put_usage(last, usage, &r.path, before, &mut t.meta.warnings);
                conv.end_call();
            }
            "compacted" => {
                let history = p.key("replacement_history");
                if history.is_null() {
                    let summary = p.key("message").opt_str()?.map(String::from);
                    conv.compaction(summary, Some("codex".into()));
                } else {
                    // The whole context after the compaction: converted, each message marked.
                    conv.compaction(None, Some("codex".into()));
                    let before = conv.t.messages.len();
                    for it in history.items()? {
                        // The opaque compaction item itself is not a second compaction; the
                        // summary it carries (encrypted by the server) is in the model's
                        // context but not readable here.
                        if matches!(it.key("type").v.as_str(), Some("compaction" | "compaction_summary")) {
                            if it.has("encrypted_content") {
                                conv.t.meta.warnings.push(format!(
                                    "{}: the compaction summary the model was given is encrypted \
                                     (`encrypted_content`): it is not in the trace; its tokens \
                                     are not counted",
                                    it.path
                                ));
                            }
                        } else {
                            conv.item_at(&it, ts)?;
                        }
                    }
                    conv.end_call();
                    for m in &mut conv.t.messages[before..] {
                        m.kind = Some("compaction_summary".into());
                    }
                }
            }
            // The person rolled the thread back (Codex's "edit a previous message"): Codex
            // drops their last `num_turns` turns from the model's context.
            "event_msg" if p.key("type").opt_str()? == Some("thread_rolled_back") => {
                let n = p.key("num_turns").u64()?;
                let removed = conv.rollback(usize::try_from(n).unwrap_or(usize::MAX));
                conv.t.meta.warnings.push(if removed > 0 {
                    format!(
                        "line {n_line}: the thread was rolled back {n} turn(s) \
                         (thread_rolled_back): the {removed} message(s) of those turns are \
                         removed, as Codex removed them from the model's context",
                        n_line = n_line
                    )
                } else {
                    format!(
                        "line {n_line}: the thread was rolled back {n} turn(s) \
                         (thread_rolled_back): no turn of the person to remove, nothing \
                         removed"
                    )
                });
            }
            "event_msg" => {
                let kind = p.key("type").opt_str()?.unwrap_or("");
                if !REPEATED_EVENTS.contains(&kind) {
                    unread.note(format!("event_msg {}", crate::output::quoted(kind)), n);
                }
            }
            // The state Codex derives its context messages from (Codex 0.14x): those messages
            // are `response_item`s too.
            "world_state" => {}
            other => unread.note(crate::output::quoted(other), n),
        }
    }
    if let Some((usage, from, at)) = pending.take() {
        usage_on_response(&mut conv, usage, from, &at);
    }
    if let Some(first) = unrepeated.first() {
        conv.t.meta.warnings.push(format!(
            "line {first}: {} `user_message` event(s) follow no user message item (Codex records \
             each message of the person as both, the item first: this rollout was trimmed or \
             written by another tool): the event's text is imported as the user message",
            unrepeated.len()
        ));
    }
    conv.t.meta.warnings.extend(unread.counted().map(|(first, total, kinds)| {
        format!(
            "line {first}: {total} record(s) of kinds this importer does not read skipped \
             ({kinds}); what they held is not in the trace"
        )
    }));
    Ok(vec![conv.finish()])
}

/// The `event_msg` kinds whose content the trace already holds, skipped without a word (every
/// real rollout has them): Codex writes them beside the `response_item`s for its UI and for
/// resuming a thread (`codex-rs/core/src/rollout/policy.rs`, which events are persisted).
/// `token_count`, `thread_rolled_back` and `user_message` (the person's message item again,
/// read when no such item comes before it) are read and never reach this list.
const REPEATED_EVENTS: &[&str] = &[
    // The assistant message items' text.
    "agent_message",
    // The reasoning items' summary and content.
    "agent_reasoning",
    "agent_reasoning_raw_content",
    // A call's end, whose output is its `*_call_output` item (a web search: its
    // `web_search_call` item).
    "exec_command_end",
    "patch_apply_end",
    "mcp_tool_call_end",
    "web_search_end",
    // Turn bookkeeping: `task_complete.last_agent_message` is the last message item's text,
    // `task_started.model_context_window` is `token_count`'s too.
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    // A compaction, which the `compacted` record holds.
    "context_compacted",
];

#[cfg(test)]
mod tests {
    use super::*;

    use crate::trace::import::numbered;

    /// Each message's role and text.
    fn roles_and_texts(t: &Trace) -> Vec<(Role, &str)> {
        t.messages
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect()
    }
    use crate::trace::import::detect::detect;
    use crate::trace::model::Role;
    use serde_json::json;

    fn rollout() -> Vec<(usize, Value)> {
        let usage = |i: u64, t: u64| json!({"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": t}, "model_context_window": 258400,
            "last_token_usage": {"input_tokens": i, "cached_input_tokens": 10, "output_tokens": 5}}});
        let v = vec![
            json!({"type": "session_meta", "payload": {"id": "S", "base_instructions": {"text": "You are Codex"}}}),
            json!({"type": "turn_context", "payload": {"model": "gpt-5.5"}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}}),
            json!({"type": "response_item", "payload": {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}}),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "call_id": "c1"}}),
            json!({"type": "event_msg", "payload": usage(100, 100)}),
            json!({"type": "event_msg", "payload": usage(100, 100)}),
            json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "a\nb"}}),
            json!({"type": "compacted", "payload": {"message": "summary of the work"}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}}),
            json!({"type": "event_msg", "payload": usage(40, 140)}),
        ];
        v.into_iter().enumerate().map(|(i, v)| (i + 1, v)).collect()
    }

    /// Which order a rollout writes usage in is told by both its ends: a modern rollout whose
    /// first `token_count` comes before any output (Codex's context-window fill, 0 tokens in
    /// and out; or any usage before output) still ends with a `token_count`, so each usage
    /// stays on the response before it; the older order starts with usage and ends with output.
    #[test]
    fn the_order_of_usage_is_told_by_both_ends_of_the_rollout() {
        let said = |t: &str| json!({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}});
        let user = |t: &str| json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}});
        let used = |i: u64, o: u64| json!({"type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": i, "output_tokens": o, "total_tokens": 272000},
            "last_token_usage": {"input_tokens": i, "output_tokens": o, "total_tokens": 272000}}}});
        let numbered = |v: Vec<Value>| -> Vec<(usize, Value)> {
            v.into_iter().enumerate().map(|(i, v)| (i + 1, v)).collect()
        };
        let usage_of = |v: Vec<Value>| -> Vec<Option<u64>> {
            let t = import(numbered(v), "r").unwrap().remove(0);
            t.messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .map(|m| m.usage.map(|u| u.input))
                .collect()
        };
        // Modern, opened by a context-window fill: A and B keep their own usage.
        let fill = vec![user("huge"), used(0, 0), user("smaller"), said("A"), used(1000, 10), user("go on"), said("B"), used(1400, 12)];
        assert_eq!(usage_of(fill.clone()), [Some(1000), Some(1400)]);
        assert!(!usage_comes_first(&numbered(fill)));
        // Modern with real usage before any output (e.g. resumed): still ends with usage.
        let early = vec![user("q"), used(500, 5), said("A"), used(1000, 10), user("go on"), said("B"), used(1400, 12)];
        assert!(!usage_comes_first(&numbered(early)));
        // The older order: usage, then its response's items, to the end.
        let older = vec![user("q"), used(1000, 10), said("A"), user("go on"), used(1400, 12), said("B")];
        assert!(usage_comes_first(&numbered(older.clone())));
        assert_eq!(usage_of(older), [Some(1000), Some(1400)]);
        // A compaction's replacement history is model output.
        let compacted = json!({"type": "compacted", "payload": {"replacement_history": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "before"}]}]}});
        let forked = vec![compacted, used(1000, 10), said("A"), user("go on"), used(1400, 12), said("B")];
        assert!(!usage_comes_first(&numbered(forked)));
    }

    /// A token_count with `total_token_usage` and no `last_token_usage` (usage was lost
    /// without a word): the call's usage is what the total grew by (Codex adds each call's
    /// last usage to the total), said once in a warning; a total that went down gives no usage
    /// and its own warning.
    #[test]
    fn usage_without_last_token_usage_is_what_the_total_grew_by() {
        let total = |i: u64, c: u64, o: u64| json!({"type": "event_msg", "payload": {
            "type": "token_count", "info": {"total_token_usage":
                {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o}}}});
        let answer = |text: &str| json!({"type": "response_item", "payload": {"type": "message",
            "role": "assistant", "content": [{"type": "output_text", "text": text}]}});
        let user = |text: &str| json!({"type": "response_item", "payload": {"type": "message",
            "role": "user", "content": [{"type": "input_text", "text": text}]}});
        let lines = vec![
            json!({"type": "session_meta", "payload": {"id": "S"}}),
            user("one"),
            answer("a"),
            total(100, 10, 5),
            total(100, 10, 5),
            user("two"),
            answer("b"),
            total(250, 90, 12),
            user("three"),
            answer("c"),
            total(50, 0, 1),
        ];
        let t = import(numbered(lines), "r").unwrap().remove(0);
        let usage: Vec<_> = t
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .map(|m| m.usage)
            .collect();
        let u = |input, cache_read, output| Usage {
            input,
            output,
            cache_read,
            cache_write: 0,
        };
        assert_eq!(usage, [Some(u(100, 10, 5)), Some(u(150, 80, 7)), None]);
        let derived: Vec<_> = t
            .meta
            .warnings
            .iter()
            .filter(|w| w.contains("without `last_token_usage`"))
            .collect();
        assert_eq!(derived.len(), 2, "{:?}", t.meta.warnings);
        assert!(derived[0].contains("grew by"), "{derived:?}");
        assert!(derived[1].contains("below the previous"), "{derived:?}");
    }

    /// The shape Codex wrote before `session_meta` (as documented by the tools that read old
    /// `~/.codex/sessions`; no licensed real file of it was found).
    #[test]
    fn pre_session_meta_rollouts_read_their_bare_items() {
        let lines = vec![
            json!({"id": "c27a914d", "timestamp": "2025-08-20T13:20:47.060Z", "instructions": "Follow AGENTS.md", "git": {"branch": "main"}}),
            json!({"record_type": "state"}),
            json!({"type": "message", "id": null, "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]}),
            json!({"type": "message", "id": null, "role": "user", "content": [{"type": "input_text", "text": "list the files"}]}),
            json!({"record_type": "state"}),
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Listing"}], "encrypted_content": "opaque"}),
            json!({"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_1"}),
            json!({"type": "function_call_output", "call_id": "call_1", "output": "README.md"}),
            json!({"type": "ghost_snapshot", "ghost_commit": {"id": "g1"}}),
            json!({"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "One file"}]}),
            json!({"record_type": "state"}),
        ];
        assert_eq!(detect(&Input::Lines(numbered(lines.clone()))), Ok(SourceFormat::Codex));
        let t = import(numbered(lines), "r").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert_eq!(t.meta.task_id.as_deref(), Some("c27a914d"));
        assert_eq!(t.messages[0].kind.as_deref(), Some("meta"));
        assert_eq!(t.messages[2].reasoning.as_deref(), Some("Listing"));
        assert_eq!(t.messages[3].tool_call_id.as_deref(), Some("call_1"));
        assert!(crate::trace::import::pairing_problems(&t).is_empty());
        // A header alone, or a header followed by unrelated lines, is not a rollout.
        let lone = vec![(1, json!({"id": "x", "timestamp": "t"})), (2, json!({"a": 1}))];
        assert_ne!(detect(&Input::Lines(lone)), Ok(SourceFormat::Codex));
    }

    /// What Codex 0.14x–0.15x write beside the items: `cache_write_input_tokens` is read; an
    /// encrypted compaction summary in a `replacement_history`, and a record type not known
    /// here, are warned of (were dropped without a word); `world_state` is skipped (its
    /// messages are items too); a `session_meta` with `session_id` and no `id` gives the task id.
    #[test]
    fn newer_rollout_records_are_read_or_warned_of() {
        let lines = vec![
            json!({"type": "session_meta", "ordinal": 0, "payload": {"session_id": "S2", "cli_version": "0.152.0"}}),
            json!({"type": "world_state", "payload": {"full": true, "state": {"model": "gpt-5.6"}}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}}),
            json!({"type": "event_msg", "payload": {"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": 9},
                "last_token_usage": {"input_tokens": 9, "cached_input_tokens": 2, "cache_write_input_tokens": 5, "output_tokens": 1}}}}),
            json!({"type": "compacted", "payload": {"message": "", "replacement_history": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"type": "compaction", "encrypted_content": "gAAAAB"}]}}),
            json!({"type": "thread_note", "payload": {}}),
            json!({"type": "thread_note", "payload": {}}),
        ];
        assert_eq!(detect(&Input::Lines(numbered(lines.clone()))), Ok(SourceFormat::Codex));
        let t = import(numbered(lines), "r").unwrap().remove(0);
        assert_eq!(t.meta.task_id.as_deref(), Some("S2"));
        assert_eq!(t.messages[1].usage.unwrap().cache_write, 5);
        assert_eq!(t.messages.len(), 3);
        assert_eq!(
            t.meta.warnings,
            [
                "line 6: $.payload.replacement_history[1]: the compaction summary the model was \
                 given is encrypted (`encrypted_content`): it is not in the trace; its tokens are \
                 not counted",
                "line 7: 2 record(s) of kinds this importer does not read skipped \
                 (\"thread_note\" ×2); what they held is not in the trace"
            ]
        );
    }

    /// A `thread_rolled_back` event removes the person's last `num_turns` turns, as Codex
    /// removes them from the model's context (they stayed in the trace, as if the model had
    /// seen them), with a warning; injected context messages do not count as turns. More turns
    /// than the trace holds drop every turn, keeping what precedes the first, as Codex's
    /// `drop_last_n_user_turns` does (it used to remove nothing).
    #[test]
    fn a_rolled_back_thread_loses_its_last_turns() {
        let user = |t: &str| json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}});
        let said = |t: &str| json!({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}});
        let lines = vec![
            json!({"type": "session_meta", "payload": {"id": "S"}}),
            user("<environment_context>x</environment_context>"),
            user("first question"),
            said("first answer"),
            user("dropped question"),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}}),
            json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "x"}}),
            said("dropped answer"),
            json!({"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 1}}),
            user("edited question"),
            said("edited answer"),
            json!({"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 5}}),
            user("fresh start"),
            json!({"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 0}}),
        ];
        let t = import(numbered(lines), "r").unwrap().remove(0);
        let texts: Vec<&str> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "<environment_context>x</environment_context>",
                "fresh start"
            ]
        );
        assert_eq!(
            t.meta.warnings,
            [
                "line 9: the thread was rolled back 1 turn(s) (thread_rolled_back): the 4 \
                 message(s) of those turns are removed, as Codex removed them from the model's \
                 context",
                "line 12: the thread was rolled back 5 turn(s) (thread_rolled_back): the 4 \
                 message(s) of those turns are removed, as Codex removed them from the model's \
                 context",
                "line 14: the thread was rolled back 0 turn(s) (thread_rolled_back): no turn of \
                 the person to remove, nothing removed"
            ]
        );
        assert!(crate::trace::import::pairing_problems(&t).is_empty());
    }

    /// An event this importer does not read (an interrupted turn, a review, an undo) is counted
    /// in one warning with the records of unknown types (such events were skipped without a
    /// word); the events that repeat the items (`user_message`, `agent_message`,
    /// `agent_reasoning`, a call's `*_end`, the turn's `task_*`) are no warning.
    #[test]
    fn unread_events_are_counted_in_one_warning() {
        let ev = |ty: &str| json!({"type": "event_msg", "payload": {"type": ty}});
        let lines = vec![
            json!({"type": "session_meta", "payload": {"id": "S"}}),
            ev("task_started"),
            json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}}),
            json!({"type": "event_msg", "payload": {"type": "user_message", "message": "go"}}),
            json!({"type": "response_item", "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hm"}]}}),
            json!({"type": "event_msg", "payload": {"type": "agent_reasoning", "text": "hm"}}),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}}),
            json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "x"}}),
            json!({"type": "event_msg", "payload": {"type": "exec_command_end", "call_id": "c1", "stdout": "x"}}),
            ev("turn_aborted"),
            json!({"type": "thread_note", "payload": {}}),
            ev("entered_review_mode"),
            ev("turn_aborted"),
            ev("task_complete"),
        ];
        let t = import(numbered(lines), "r").unwrap().remove(0);
        assert_eq!(t.messages.len(), 3);
        assert_eq!(
            t.meta.warnings,
            [
                "line 10: 4 record(s) of kinds this importer does not read skipped (event_msg \
                 \"turn_aborted\" ×2, \"thread_note\" ×1, event_msg \"entered_review_mode\" ×1); \
                 what they held is not in the trace"
            ]
        );
    }

    /// A `user_message` event that follows no user message item is the only record of the
    /// person's message (the real rollout of Codex 0.128.0-alpha.1 in codemie-ai/codemie-code's
    /// fixtures keeps the events and drops those items: its three requests were lost without a
    /// word, a trace with no user message): it is imported as that item would be, with one
    /// warning. After the item (Codex writes both, the item first), the event is skipped.
    #[test]
    fn a_user_message_event_without_its_item_is_the_user_message() {
        let user_ev = |text: &str| {
            json!({"type": "event_msg", "payload": {"type": "user_message", "message": text, "images": []}})
        };
        let say = |text: &str| {
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}})
        };
        let lines = vec![
            json!({"type": "session_meta", "payload": {"id": "S"}}),
            user_ev("first request"),
            say("done"),
            json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "second"}]}}),
            user_ev("second"),
            say("ok"),
            user_ev("third"),
            say("fine"),
        ];
        let t = import(numbered(lines), "r").unwrap().remove(0);
        let got = roles_and_texts(&t);
        assert_eq!(
            got,
            [
                (Role::User, "first request"),
                (Role::Assistant, "done"),
                (Role::User, "second"),
                (Role::Assistant, "ok"),
                (Role::User, "third"),
                (Role::Assistant, "fine"),
            ]
        );
        assert_eq!(
            t.meta.warnings,
            [
                "line 2: 2 `user_message` event(s) follow no user message item (Codex records \
                 each message of the person as both, the item first: this rollout was trimmed or \
                 written by another tool): the event's text is imported as the user message"
            ]
        );
    }

    /// A person's message of images alone has an empty `message`: it became an empty user
    /// message and the images vanished without a word.
    #[test]
    fn a_user_message_event_of_images_keeps_them_as_placeholders() {
        let lines = vec![
            json!({"type": "session_meta", "payload": {"id": "S"}}),
            json!({"type": "event_msg", "payload": {"type": "user_message", "message": "", "images": ["data:image/png;base64,AAAA"]}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I see a chart"}]}}),
            json!({"type": "event_msg", "payload": {"type": "user_message", "message": "and this", "local_images": ["/tmp/a.png"]}}),
        ];
        let t = import(numbered(lines), "r").unwrap().remove(0);
        let got = roles_and_texts(&t);
        assert_eq!(
            got,
            [
                (Role::User, "[input_image]"),
                (Role::Assistant, "I see a chart"),
                (Role::User, "and this\n[input_image]"),
            ]
        );
        assert!(
            t.meta.warnings.iter().any(|w| w.contains("input_image")),
            "{:?}",
            t.meta.warnings
        );
    }

    #[test]
    fn rollout_items_usage_and_compaction() {
        assert_eq!(detect(&Input::Lines(rollout())), Ok(SourceFormat::Codex));
        let t = import(rollout(), "r").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::User, Role::Assistant, Role::Tool, Role::User, Role::Assistant]
        );
        assert_eq!(t.messages[1].kind.as_deref(), Some("meta"));
        assert_eq!(t.meta.task_id.as_deref(), Some("S"));
        assert_eq!(t.meta.model.as_deref(), Some("gpt-5.5"));
        assert_eq!(t.meta.window, Some(258400));
        // the repeated token_count is counted once
        assert_eq!(t.recorded_usage().input, 140);
        assert_eq!(t.messages[3].usage.unwrap().cache_read, 10);
        assert_eq!(t.markers[0].index, 5);
        assert_eq!(t.messages[5].kind.as_deref(), Some("compaction_summary"));
        assert_eq!(t.messages[4].tool_call_id.as_deref(), Some("c1"));
    }
}
