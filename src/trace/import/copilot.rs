//! GitHub Copilot CLI sessions (`~/.copilot/session-state/<session id>/events.jsonl`) → one
//! canonical trace.
//!
//! Each line is an event `{type, data, id, timestamp, parentId}`:
//! - `session.start`: `data.sessionId` → `task_id`, and the trace's id when the file is
//!   `events.jsonl` (every session's file has that name);
//! - `session.model_change`: `data.newModel` → model (the first one);
//! - `system.message`: the system prompt; Copilot writes it again at the start of each
//!   interaction (each prompt of the person): one that repeats the last system message is not
//!   added a second time, a different one is added where it was given;
//! - `user.message`: `data.transformedContent` (what the model was given: the person's text
//!   behind Copilot's `<current_datetime>` and reminders) → the user message, or `data.content`
//!   when there is no transformed text; the first non-empty `data.content` → goal. A message
//!   whose `content` is empty but whose `transformedContent` is not was written by Copilot, not
//!   the person (autopilot's "You have not yet marked the task as complete…"): `kind: "meta"`;
//! - `assistant.message`: one model response: `data.content` → text, `data.toolRequests[]`
//!   (`{toolCallId, name, arguments}`) → tool calls, `data.reasoningText` → reasoning.
//!   `data.reasoningOpaque` is the reasoning encrypted: a response with it and no
//!   `reasoningText` has reasoning the trace cannot hold, counted in one warning. Only
//!   `outputTokens` is recorded per response, no input: no per-call usage;
//! - `tool.execution_complete`: the result of the call `data.toolCallId`: `data.result.content`
//!   (what the model got; `detailedContent` is Copilot's display copy), or
//!   `data.error.message` when the call failed (`success: false` → `is_error`);
//! - `session.shutdown`: `data.modelMetrics.<model>.usage` summed over models → `total_usage`
//!   (`inputTokens` counts the cached tokens, `cacheReadTokens` ≤ it).
//!
//! Events that repeat the above or are Copilot's bookkeeping are skipped without a warning
//! (`REPEATED`). Warned of, each in one warning: a sub-agent's events (`data.parentToolCallId`:
//! skipped), events that changed the model's context (`RESHAPING`: not applied), a new system
//! prompt after the conversation began, the person's attachments, several `session.shutdown`s;
//! any other event is counted in one warning naming the line of the first and each kind.

use super::detect::{str_of, Shape};
use super::json::{parse_arguments, Node, Res};
use super::{Calls, Importer, Input, Skipped};
use crate::trace::model::{Message, Role, SourceFormat, ToolCall, Trace, TraceMeta, Usage};
use serde_json::Value;

/// GitHub Copilot CLI `events.jsonl`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Copilot,
    detect: |shape| match shape {
        Shape::Lines(lines, _) => lines.iter().filter_map(|(_, v)| v.as_object()).any(|o| {
            matches!(
                str_of(o, "type"),
                Some("session.start" | "user.message" | "assistant.message")
            ) && o.get("data").is_some_and(|d| d.is_object())
        }),
        _ => false,
    },
    import: |input, stem| match input {
        Input::Lines(lines) => import(std::mem::take(lines), stem),
        Input::Json(v) => import(vec![(1, std::mem::take(v))], stem),
    },
};

/// Events whose content the trace already holds (`tool.execution_start` repeats the
/// response's `toolRequests`, `session.task_complete` the `task_complete` call's summary) or
/// that hold nothing the model was given (turn and mode bookkeeping, the UI's info lines).
const REPEATED: [&str; 6] = [
    "session.mode_changed",
    "session.info",
    "session.task_complete",
    "assistant.turn_start",
    "assistant.turn_end",
    "tool.execution_start",
];

/// Events by which Copilot changed the model's context (rewound to an earlier event, cut old
/// messages, compacted them): not applied, warned of (the trace keeps what they removed).
const RESHAPING: [&str; 3] = [
    "session.snapshot_rewind",
    "session.truncation",
    "session.compaction_complete",
];

/// The name (without extension) Copilot gives every session's file.
const SESSION_FILE_STEM: &str = "events";

pub fn import(lines: Vec<(usize, Value)>, stem: &str) -> Res<Vec<Trace>> {
    let mut t = Trace::new(TraceMeta::new(stem, SourceFormat::Copilot));
    let mut calls = Calls::default();
    let mut unread = Skipped::default();
    // Events that changed the model's context (a rewind, a truncation, a compaction) and the
    // sub-agents' events, each counted for one warning.
    let mut reshaped = Skipped::default();
    let mut sub_agent = Skipped::default();
    let mut opaque: Option<(usize, usize)> = None;
    // Where a system prompt other than the first was added after the conversation began.
    let mut new_system: Option<(usize, usize)> = None;
    let mut shutdowns = 0usize;
    // Where the first user message with attachments was, and how many attachments in all.
    let mut attached: Option<(usize, usize)> = None;
    for (n, v) in lines {
        let r = Node::line_root(&v, n);
        r.obj()?;
        let d = r.key("data");
        let ts = r.key("timestamp").opt_str()?.map(String::from);
        let kind = r.key("type").str()?;
        // A sub-agent's events (`data.parentToolCallId`: the call that started it) are not the
        // main model's conversation: counted, not merged into it.
        if d.has("parentToolCallId") {
            sub_agent.note(crate::output::quoted(kind), n);
            continue;
        }
        match kind {
            "session.start" => {
                t.meta.task_id = d
                    .key("sessionId")
                    .opt_str()?
                    .filter(|id| !id.is_empty())
                    .map(String::from);
                // Every session's file is `events.jsonl` (in a folder named by the session's
                // id): the id names the trace, not the file (a renamed file keeps its name).
                if let Some(id) = t.meta.task_id.as_ref().filter(|_| stem == SESSION_FILE_STEM) {
                    t.meta.id = id.clone();
                }
            }
            "session.model_change" => {
                if t.meta.model.is_none() {
                    t.meta.model = d.key("newModel").opt_str()?.map(String::from);
                }
            }
            "system.message" => {
                let text = d.key("content").str()?;
                let last = t.messages.iter().rev().find(|m| m.role == Role::System);
                if last.is_none_or(|m| m.content != text) {
                    if t.messages.iter().any(|m| m.role != Role::System) {
                        new_system.get_or_insert((n, 0)).1 += 1;
                    }
                    let mut m = Message::system(text);
                    m.timestamp = ts;
                    t.messages.push(m);
                }
            }
            "user.message" => {
                let said = d.key("content").opt_str()?.unwrap_or("");
                let given = d
                    .key("transformedContent")
                    .opt_str()?
                    .filter(|g| !g.trim().is_empty());
                let files = d.key("attachments").opt_items()?.len();
                if files > 0 {
                    attached.get_or_insert((n, 0)).1 += files;
                }
                let mut m = Message::user(given.unwrap_or(said));
                if said.trim().is_empty() && given.is_some() {
                    m.kind = Some("meta".into());
                } else if t.meta.goal.is_none() && !said.trim().is_empty() {
                    t.meta.goal = Some(super::extract_goal(said));
                }
                m.timestamp = ts;
                t.messages.push(m);
            }
            "assistant.message" => {
                let mut tool_calls = Vec::new();
                for q in d.key("toolRequests").opt_items()? {
                    let name = q.key("name").str()?;
                    let id = calls.issue(
                        q.key("toolCallId").opt_str()?.unwrap_or(""),
                        name,
                        &q.path,
                        &mut t.meta.warnings,
                    );
                    tool_calls.push(ToolCall {
                        id,
                        name: name.to_string(),
                        arguments: parse_arguments(&q.key("arguments"), &mut t.meta.warnings)?,
                    });
                }
                let mut m = Message::assistant(d.key("content").opt_str()?.unwrap_or(""), tool_calls);
                m.reasoning = d
                    .key("reasoningText")
                    .opt_str()?
                    .filter(|s| !s.is_empty())
                    .map(String::from);
                if m.reasoning.is_none() && d.key("reasoningOpaque").opt_str()?.is_some() {
                    let (_, count) = opaque.get_or_insert((n, 0));
                    *count += 1;
                }
                m.timestamp = ts;
                t.messages.push(m);
            }
            "tool.execution_complete" => {
                let recorded = d.key("toolCallId").opt_str()?;
                let (id, name) = calls.answer_or_warn(recorded, &r.path, &mut t.meta.warnings);
                let failed = d.key("success").opt_bool()? == Some(false);
                let result = d.key("result").key("content");
                let text = match result.opt_str()? {
                    Some(s) => s.to_string(),
                    None => match d.key("error").key("message").opt_str()? {
                        Some(e) => e.to_string(),
                        None => String::new(),
                    },
                };
                let mut m = Message::new(Role::Tool, text);
                m.tool_call_id = Some(id);
                m.name = Some(name).filter(|s| !s.is_empty());
                m.is_error = failed;
                m.timestamp = ts;
                t.messages.push(m);
                if t.meta.model.is_none() {
                    t.meta.model = d.key("model").opt_str()?.map(String::from);
                }
            }
            "session.shutdown" => {
                shutdowns += 1;
                let mut total: Option<Usage> = None;
                if let Value::Object(models) = d.key("modelMetrics").v {
                    for name in models.keys() {
                        let u = d.key("modelMetrics").key(name).key("usage");
                        let sum = total.get_or_insert_with(Usage::default);
                        sum.add(&Usage {
                            input: u.key("inputTokens").opt_u64()?.unwrap_or(0),
                            output: u.key("outputTokens").opt_u64()?.unwrap_or(0),
                            cache_read: u.key("cacheReadTokens").opt_u64()?.unwrap_or(0),
                            cache_write: u.key("cacheWriteTokens").opt_u64()?.unwrap_or(0),
                        });
                    }
                }
                if total.is_some() {
                    t.meta.total_usage = total;
                }
            }
            k if REPEATED.contains(&k) => {}
            k if RESHAPING.contains(&k) => reshaped.note(crate::output::quoted(k), n),
            other => unread.note(crate::output::quoted(other), n),
        }
    }
    if let Some((first, count)) = opaque {
        t.meta.warnings.push(format!(
            "line {first}: {count} response(s) carry the model's reasoning encrypted \
             (reasoningOpaque): it is not in the trace"
        ));
    }
    if let Some((first, count)) = new_system {
        t.meta.warnings.push(format!(
            "line {first}: {count} new system prompt(s) after the conversation began: each is \
             added where Copilot gave it, after the ones before (the model was sent only the \
             latest), so the trace replays them all"
        ));
    }
    if let Some((first, count)) = attached {
        t.meta.warnings.push(format!(
            "line {first}: {count} attachment(s) of the person's messages (`data.attachments`: \
             files, images, selections): what Copilot sent of them beside the text is not in \
             the trace"
        ));
    }
    if shutdowns > 1 {
        t.meta.warnings.push(format!(
            "{shutdowns} session.shutdown events (a resumed session): the usage totals are the \
             last one's"
        ));
    }
    t.meta.warnings.extend(sub_agent.counted().map(|(first, total, kinds)| {
        format!(
            "line {first}: {total} event(s) of sub-agents (with `parentToolCallId`) skipped \
             ({kinds}): a sub-agent's conversation is not the main model's; its result is the \
             call's result"
        )
    }));
    t.meta.warnings.extend(reshaped.counted().map(|(first, total, kinds)| {
        format!(
            "line {first}: {total} event(s) that changed the model's context skipped ({kinds}): \
             the trace still holds the messages Copilot removed or replaced"
        )
    }));
    t.meta.warnings.extend(unread.counted().map(|(first, total, kinds)| {
        format!(
            "line {first}: {total} event(s) of kinds this importer does not read skipped \
             ({kinds}); what they held is not in the trace"
        )
    }));
    Ok(vec![t])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::trace::import::numbered as lines;

    #[test]
    fn reads_calls_results_and_skips_repeats() {
        let t = import(
            lines(vec![
                json!({"type": "session.start", "data": {"sessionId": "s1"}}),
                json!({"type": "session.model_change", "data": {"newModel": "m"}}),
                json!({"type": "system.message", "data": {"role": "system", "content": "sys"}}),
                json!({"type": "user.message", "data": {"content": "do x", "transformedContent": "<t/>\n\ndo x"}}),
                json!({"type": "assistant.message", "data": {"content": "", "toolRequests": [
                    {"toolCallId": "c1", "name": "bash", "arguments": {"command": "ls"}}],
                    "reasoningOpaque": "zz"}}),
                json!({"type": "tool.execution_start", "data": {"toolCallId": "c1"}}),
                json!({"type": "tool.execution_complete", "data": {"toolCallId": "c1", "success": false,
                    "error": {"message": "boom"}}}),
                json!({"type": "system.message", "data": {"role": "system", "content": "sys"}}),
                json!({"type": "user.message", "data": {"content": "", "transformedContent": "keep going"}}),
                json!({"type": "abort", "data": {"reason": "user"}}),
                json!({"type": "assistant.message", "data": {"content": "done", "reasoningText": "hm"}}),
                json!({"type": "session.shutdown", "data": {"modelMetrics": {"m": {"usage": {
                    "inputTokens": 10, "outputTokens": 2, "cacheReadTokens": 4, "cacheWriteTokens": 0}}}}}),
            ]),
            "x",
        )
        .unwrap()
        .remove(0);
        let roles: Vec<Role> = t.messages.iter().map(|m| m.role).collect();
        use Role::*;
        assert_eq!(roles, [System, User, Assistant, Tool, User, Assistant]);
        assert_eq!(t.meta.task_id.as_deref(), Some("s1"));
        assert_eq!(t.meta.model.as_deref(), Some("m"));
        assert_eq!(t.meta.goal.as_deref(), Some("do x"));
        assert_eq!(t.messages[1].content, "<t/>\n\ndo x");
        assert_eq!(t.messages[3].content, "boom");
        assert!(t.messages[3].is_error);
        assert_eq!(t.messages[3].name.as_deref(), Some("bash"));
        assert_eq!(t.messages[4].kind.as_deref(), Some("meta"));
        assert_eq!(t.messages[5].reasoning.as_deref(), Some("hm"));
        assert_eq!(t.meta.total_usage.unwrap().input, 10);
        assert_eq!(t.meta.warnings.len(), 2, "{:?}", t.meta.warnings);
        assert!(t.meta.warnings[0].starts_with("line 5: 1 response(s)"));
        assert!(t.meta.warnings[1].starts_with("line 10: 1 event(s)"));
        assert!(t.meta.warnings[1].contains("\"abort\" ×1"));
        assert_eq!(t.meta.id, "x", "a file of another name keeps its name");
    }

    /// What the trace cannot hold as Copilot had it is said, never merged or dropped silently:
    /// a sub-agent's events (skipped, counted), events that changed the context (a rewind),
    /// a new system prompt after the conversation began, several shutdowns; an empty
    /// `transformedContent` falls back to the person's words; an empty session id renames
    /// nothing.
    #[test]
    fn sub_agents_rewinds_and_new_system_prompts_are_said() {
        let t = import(
            lines(vec![
                json!({"type": "session.start", "data": {"sessionId": ""}}),
                json!({"type": "system.message", "data": {"content": "sys 1"}}),
                json!({"type": "user.message", "data": {"content": "do x", "transformedContent": "",
                    "attachments": [{"type": "file", "path": "/a.rs"}, {"type": "file", "path": "/b.rs"}]}}),
                json!({"type": "assistant.message", "data": {"content": "", "toolRequests": [
                    {"toolCallId": "T", "name": "task", "arguments": {"prompt": "look"}}]}}),
                json!({"type": "assistant.message", "data": {"parentToolCallId": "T", "content": "inner", "toolRequests": [
                    {"toolCallId": "c9", "name": "bash", "arguments": {"command": "ls"}}]}}),
                json!({"type": "tool.execution_complete", "data": {"parentToolCallId": "T", "toolCallId": "c9", "success": true, "result": {"content": "a"}}}),
                json!({"type": "tool.execution_complete", "data": {"toolCallId": "T", "success": true, "result": {"content": "found a"}}}),
                json!({"type": "session.snapshot_rewind", "data": {"upToEventId": "e1"}}),
                json!({"type": "system.message", "data": {"content": "sys 2"}}),
                json!({"type": "assistant.message", "data": {"content": "done"}}),
                json!({"type": "session.shutdown", "data": {}}),
                json!({"type": "session.shutdown", "data": {}}),
            ]),
            "events",
        )
        .unwrap()
        .remove(0);
        let said: Vec<(Role, &str)> = t.messages.iter().map(|m| (m.role, m.content.as_str())).collect();
        use Role::*;
        assert_eq!(
            said,
            [(System, "sys 1"), (User, "do x"), (Assistant, ""), (Tool, "found a"), (System, "sys 2"), (Assistant, "done")]
        );
        assert_eq!(t.meta.id, "events", "an empty session id names nothing");
        let w = &t.meta.warnings;
        assert_eq!(w.len(), 5, "{w:?}");
        assert!(w[0].starts_with("line 9: 1 new system prompt(s)"), "{w:?}");
        assert!(w[1].starts_with("line 3: 2 attachment(s)"), "{w:?}");
        assert!(w[2].starts_with("2 session.shutdown events"), "{w:?}");
        assert!(w[3].starts_with("line 5: 2 event(s) of sub-agents"), "{w:?}");
        assert!(w[4].starts_with("line 8: 1 event(s) that changed the model's context"), "{w:?}");
    }

    /// Copilot names every session's file `events.jsonl`: such a file's trace is named by its
    /// session's id (the name of its folder), so the sessions of a folder keep their own ids.
    #[test]
    fn a_session_file_named_events_is_named_by_its_session() {
        let t = |stem: &str| {
            let start = json!({"type": "session.start", "data": {"sessionId": "96ef38f0-9d09"}});
            let said = json!({"type": "user.message", "data": {"content": "hi"}});
            import(lines(vec![start, said]), stem).unwrap().remove(0)
        };
        assert_eq!(t("events").meta.id, "96ef38f0-9d09");
        assert_eq!(t("session-1").meta.id, "session-1");
    }
}
