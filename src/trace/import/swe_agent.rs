//! SWE-agent `.traj` → canonical trace, from `history` (the LLM message list).
//!
//! - 1.x (function calling): assistant `tool_calls` are OpenAI format; `role: tool` messages
//!   answer `tool_call_ids[0]`.
//! - 0.x (text actions): an assistant message with a non-empty `action` gets one tool call named
//!   after the command's first word (`edit`, `create`, `python`, `submit`…) with arguments
//!   `{command: <action, trimmed>}` and id `call_<n>`; the user message after it is its result.
//!   The assistant content is kept whole.
//! - `is_demo: true` user messages (demonstrations rendered as text) get `kind: "demo"`.
//! - When `history` ends on an action whose observation is missing, the result is taken from
//!   `trajectory[-1].observation` (if that step's action is the same).
//! - No per-call usage exists; `info.model_stats` totals (`tokens_sent`, `tokens_received`,
//!   `instance_cost`) go to `meta.total_usage` / `meta.cost_usd` when non-zero.

use super::json::{content_text, Node, Res};
use serde_json::Value;
use super::{tool_calls, CallShape, Calls};
use crate::trace::model::{
    Message, Outcome, Role, SourceFormat, ToolCall, Trace, TraceMeta, Usage,
};
use super::detect::arr_of;
use super::Importer;

/// SWE-agent `.traj`: `history[]` of `{role…}` messages, or `{trajectory[], info}`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::SweAgent,
    detect: |shape| {
        let Some(o) = shape.object() else {
            return false;
        };
        if let Some(h) = arr_of(o, "history") {
            match h.first().and_then(|e| e.as_object()) {
                Some(e) if e.contains_key("role") => return true,
                // OpenHands' history of events.
                Some(e) if e.contains_key("action") || e.contains_key("observation") => {
                    return false
                }
                None if o.contains_key("trajectory") => return true,
                None if o.contains_key("instance_id") || o.contains_key("metrics") => {
                    return false
                }
                _ => {}
            }
        }
        arr_of(o, "trajectory").is_some() && o.contains_key("info")
    },
    import: |input, stem| {
        super::each_document_mut(input, stem, |v, path, id| {
            import_value(v, path, id).map(|t| vec![t])
        })
    },
};

pub fn import(root: &Node<'_>, id: &str) -> Res<Trace> {
    import_value(&mut root.v.clone(), root.path.clone(), id)
}

/// Import the document `v` at `path`, moving its history out and dropping each message once
/// converted. Of the trajectory (which repeats the history's text) only the last step is read,
/// so the others are dropped first.
pub fn import_value(v: &mut Value, path: String, id: &str) -> Res<Trace> {
    if let Some(Value::Array(steps)) = v.get_mut("trajectory") {
        let keep = steps.len().saturating_sub(1);
        steps[..keep].iter_mut().for_each(|s| *s = Value::Null);
    }
    let root = Node::at(v, path.clone());
    root.obj()?;
    let mut meta = TraceMeta::new(id, SourceFormat::SweAgent);
    let info = root.key("info");
    let stats = info.key("model_stats");
    let sent = stats.key("tokens_sent").opt_u64()?.unwrap_or(0);
    let received = stats.key("tokens_received").opt_u64()?.unwrap_or(0);
    if sent > 0 || received > 0 {
        meta.total_usage = Some(Usage {
            input: sent,
            output: received,
            cache_read: 0,
            cache_write: 0,
        });
    }
    meta.cost_usd = stats.key("instance_cost").opt_f64()?.filter(|c| *c > 0.0);
    if let Some(status) = info.key("exit_status").opt_str()? {
        meta.outcome = Some(Outcome {
            success: None,
            reward: None,
            status: Some(status.to_string()),
        });
    }
    let mut t = Trace::new(meta);
    let mut calls = Calls::default();
    // 0.x: the text-action call waiting for its observation.
    let mut pending: Option<(String, String)> = None;
    // The last history message, kept for its `action` after the loop.
    let mut last_history: Option<Value> = None;
    for (m_value, m_path) in Node::take_items(v, path.clone(), "history")? {
        let m = Node::at(&m_value, m_path);
        m.obj()?;
        let role = m.key("role").str()?;
        let content = content_text(&m.key("content"))?;
        let msg = match role {
            "system" => Message::system(content),
            "user" => match pending.take() {
                Some((cid, name)) => Message::tool(cid, name, content),
                None => {
                    let mut u = Message::user(content);
                    if m.key("is_demo").opt_bool()? == Some(true) {
                        u.kind = Some("demo".into());
                    }
                    u
                }
            },
            "assistant" => {
                if let Some((cid, _)) = pending.take() {
                    t.meta
                        .warnings
                        .push(format!("{}: call {cid:?} got no observation", m.path));
                }
                let mut tool_calls: Vec<ToolCall> = tool_calls(
                    &m.key("tool_calls"),
                    CallShape::OpenAi,
                    &mut calls,
                    &mut t.meta.warnings,
                )?
                .into_iter()
                .map(|(_, c)| c)
                .collect();
                if tool_calls.is_empty() {
                    let action = m.key("action").opt_str()?.unwrap_or("").trim();
                    if !action.is_empty() {
                        let name = action
                            .split_whitespace()
                            .next()
                            .unwrap_or("bash")
                            .to_string();
                        let id = calls.issue("", &name, &m.path, &mut t.meta.warnings);
                        pending = Some((id.clone(), name.clone()));
                        tool_calls.push(ToolCall {
                            id,
                            name,
                            arguments: serde_json::json!({"command": action}),
                        });
                    }
                }
                Message::assistant(content, tool_calls)
            }
            "tool" => {
                let ids = m.key("tool_call_ids").opt_items()?;
                let recorded = match ids.first() {
                    Some(i) => Some(i.str()?),
                    None => m.key("tool_call_id").opt_str()?,
                };
                if ids.len() > 1 {
                    t.meta.warnings.push(format!(
                        "{}: one observation for {} calls; paired with the first",
                        m.key("tool_call_ids").path,
                        ids.len()
                    ));
                }
                let answered = match recorded {
                    Some(r) => calls.answer(r),
                    None => calls.answer_next(),
                };
                let (id, name) = answered.unwrap_or_else(|| {
                    t.meta
                        .warnings
                        .push(format!("{}: observation follows no open call", m.path));
                    (recorded.unwrap_or("").to_string(), String::new())
                });
                Message::tool(id, name, content)
            }
            _ => {
                return Err(m
                    .key("role")
                    .expected("\"system\", \"user\", \"assistant\" or \"tool\""))
            }
        };
        t.messages.push(msg);
        last_history = Some(m_value);
    }
    let root = Node::at(v, path);
    // History ending on an action: its observation is in the last trajectory step.
    if let Some(last) = t
        .messages
        .last()
        .filter(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    {
        let call = last.tool_calls[0].clone();
        let history_action = last_history
            .as_ref()
            .and_then(|h| h.get("action"))
            .and_then(|a| a.as_str().map(|s| s.trim().to_string()));
        let steps = root.key("trajectory").opt_items()?;
        if let Some(step) = steps.last() {
            let step_action = step.key("action").opt_str()?.map(|s| s.trim().to_string());
            let obs = step.key("observation").opt_str()?;
            if let (Some(obs), true) = (obs, step_action == history_action) {
                t.messages.push(Message::tool(call.id, call.name, obs));
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_actions_and_final_observation_from_trajectory() {
        let doc = json!({
            "info": {"exit_status": "submitted", "model_stats": {"tokens_sent": 0, "tokens_received": 0, "api_calls": 0}},
            "trajectory": [{"action": "ls -F\n", "observation": "a b"}, {"action": "submit\n", "observation": "diff"}],
            "history": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "ISSUE:\nbug\n\nINSTRUCTIONS:\n…", "is_demo": false},
                {"role": "assistant", "content": "look\n```\nls -F\n```", "action": "ls -F\n"},
                {"role": "user", "content": "a b"},
                {"role": "assistant", "content": "done\n```\nsubmit\n```", "action": "submit\n"}]});
        let t = import(&Node::root(&doc), "s").unwrap();
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::Tool
            ]
        );
        assert_eq!(t.messages[2].tool_calls[0].name, "ls");
        assert_eq!(
            t.messages[2].tool_calls[0].arguments,
            json!({"command": "ls -F"})
        );
        assert_eq!(t.messages[5].content, "diff");
        assert_eq!(t.messages[5].tool_call_id.as_deref(), Some("call_2"));
        assert!(t.meta.total_usage.is_none());
    }

    #[test]
    fn function_calling() {
        let doc = json!({"history": [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "x", "action": "create r.py", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "create", "arguments": "{\"filename\":\"r.py\"}"}}]},
            {"role": "tool", "content": "ok", "tool_call_ids": ["call_a"]}],
            "info": {"model_stats": {"tokens_sent": 70, "tokens_received": 3, "instance_cost": 0.1}}});
        let t = import(&Node::root(&doc), "s").unwrap();
        assert_eq!(t.messages[2].tool_call_id.as_deref(), Some("call_a"));
        assert_eq!(t.messages[2].name.as_deref(), Some("create"));
        assert_eq!(t.meta.total_usage.unwrap().input, 70);
        assert_eq!(t.meta.cost_usd, Some(0.1));
    }
}
