//! τ²-bench simulation results → canonical traces, one per simulation, id
//! `<stem>__task<task_id>_trial<trial>`.
//!
//! - The system prompt is not in `messages`: it is rebuilt from `info.environment_info.policy`;
//!   `tool_defs` go to `meta.tools`, `info.agent_info.llm` to `meta.model`.
//! - Tool calls are τ²'s own shape `{id, name, arguments:{…}, requestor}`; results are
//!   `{role: tool, id: <call id>, content, error}`.
//! - User messages come from the user-simulator LLM: they get `kind: "user_simulator"` and their
//!   `usage`/`cost` is dropped, so only agent (assistant) usage is counted. The canned opening
//!   assistant greeting (no usage, no `raw_data`) gets `kind: "canned"`.
//! - `meta.instruction` is the task's `user_scenario` (persona and instructions) rendered as text;
//!   `meta.cost_usd` is the simulation's `agent_cost`; reward and termination reason → outcome.

use super::json::{content_text, Node, Res};
use super::mini_swe::openai_usage;
use super::{tool_calls, CallShape, Calls};
use crate::trace::model::{Message, Outcome, SourceFormat, ToolCall, Trace, TraceMeta};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use super::detect::arr_of;
use super::Importer;

fn title(k: &str) -> String {
    let s = k.replace('_', " ");
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => s,
    }
}

/// A task's `user_scenario` as text: persona, then each instruction field as `Field: value`.
fn render_scenario(s: &Node<'_>) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(p) = s.key("persona").v.as_str() {
        parts.push(format!("Persona: {p}"));
    }
    match s.key("instructions").v {
        Value::String(i) => parts.push(i.clone()),
        Value::Object(o) => {
            for (k, v) in o {
                if let Some(text) = v.as_str().filter(|t| !t.is_empty()) {
                    parts.push(format!("{}: {text}", title(k)));
                }
            }
        }
        _ => {}
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// τ²-bench results: an object with `simulations[]`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Tau2,
    detect: |shape| shape.object().is_some_and(|o| arr_of(o, "simulations").is_some()),
    import: |input, stem| super::each_document_mut(input, stem, import_value),
};

pub fn import(root: &Node<'_>, stem: &str) -> Res<Vec<Trace>> {
    import_value(&mut root.v.clone(), root.path.clone(), stem)
}

/// Import the document `v` at `path`, moving its simulations out and dropping each once
/// converted.
pub fn import_value(v: &mut Value, path: String, stem: &str) -> Res<Vec<Trace>> {
    let root = Node::at(v, path.clone());
    root.obj()?;
    let info = root.key("info");
    let env = info.key("environment_info");
    let policy = env.key("policy").opt_str()?.map(String::from);
    let tools: Vec<Value> = env
        .key("tool_defs")
        .opt_items()?
        .into_iter()
        .map(|n| n.v.clone())
        .collect();
    let model = info
        .key("agent_info")
        .key("llm")
        .opt_str()?
        .map(String::from);
    let mut scenarios: HashMap<String, String> = HashMap::new();
    for task in root.key("tasks").opt_items()? {
        if let (Some(id), Some(text)) = (
            task.key("id").scalar_text()?,
            render_scenario(&task.key("user_scenario")),
        ) {
            scenarios.insert(id, text);
        }
    }
    let mut out = Vec::new();
    let mut ids = HashSet::new();
    for (s_value, s_path) in Node::take_items(v, path, "simulations")? {
        let s = Node::at(&s_value, s_path);
        s.obj()?;
        let task = s.key("task_id").scalar_text()?;
        let trial = s.key("trial").scalar_text()?;
        let mut id = format!(
            "{stem}__task{}_trial{}",
            task.as_deref().unwrap_or("?"),
            trial.as_deref().unwrap_or("?")
        );
        if !ids.insert(id.clone()) {
            let sim = s
                .key("id")
                .scalar_text()?
                .unwrap_or_else(|| out.len().to_string());
            id = format!("{id}_{sim}");
            ids.insert(id.clone());
        }
        let mut meta = TraceMeta::new(id, SourceFormat::Tau2);
        meta.model = model.clone();
        meta.tools = tools.clone();
        meta.instruction = task.as_ref().and_then(|t| scenarios.get(t).cloned());
        meta.task_id = task;
        meta.cost_usd = s.key("agent_cost").opt_f64()?;
        let reward = s.key("reward_info").key("reward").opt_f64()?;
        let status = s.key("termination_reason").opt_str()?.map(String::from);
        if reward.is_some() || status.is_some() {
            meta.outcome = Some(Outcome {
                success: reward.map(|r| r >= 1.0),
                reward,
                status,
            });
        }
        let mut t = Trace::new(meta);
        if let Some(p) = &policy {
            t.messages.push(Message::system(p.as_str()));
        }
        convert(&s.key("messages").items()?, &mut t)?;
        out.push(t);
    }
    Ok(out)
}

fn convert(msgs: &[Node<'_>], t: &mut Trace) -> Res<()> {
    let mut calls = Calls::default();
    for m in msgs {
        m.obj()?;
        let role = m.key("role").str()?;
        let content = content_text(&m.key("content"), &mut t.meta.warnings)?;
        let mut msg = match role {
            "assistant" => {
                let shape = CallShape::Flat {
                    id: "id",
                    name: "name",
                };
                let tool_calls: Vec<ToolCall> = tool_calls(
                    &m.key("tool_calls"),
                    shape,
                    &mut calls,
                    &mut t.meta.warnings,
                )?
                .into_iter()
                .map(|(_, c)| c)
                .collect();
                let mut a = Message::assistant(content, tool_calls);
                a.usage = openai_usage(&m.key("usage"))?;
                a.reasoning = m
                    .key("raw_data")
                    .key("message")
                    .key("reasoning_content")
                    .opt_str()
                    .ok()
                    .flatten()
                    .filter(|r| !r.is_empty())
                    .map(String::from);
                if a.usage.is_none() && m.key("raw_data").is_null() {
                    a.kind = Some("canned".into());
                }
                a
            }
            "user" => {
                if !m.key("tool_calls").opt_items()?.is_empty() {
                    t.meta.warnings.push(format!(
                        "{}: user-simulator tool calls dropped (not agent actions)",
                        m.key("tool_calls").path
                    ));
                }
                let mut u = Message::user(content);
                u.kind = Some("user_simulator".into());
                u
            }
            "tool" => {
                let recorded = m.key("id").str()?;
                if m.key("requestor").opt_str()? == Some("user") {
                    let mut u = Message::user(content);
                    u.kind = Some("user_tool_result".into());
                    u
                } else {
                    let (id, name) = match calls.answer(recorded) {
                        Some(x) => x,
                        None => {
                            t.meta.warnings.push(format!(
                                "{}: tool result for {} follows no open call",
                                m.path,
                                crate::output::quoted(recorded)
                            ));
                            (recorded.to_string(), String::new())
                        }
                    };
                    let mut r = Message::tool(id, name, content);
                    r.is_error = m.key("error").opt_bool()?.unwrap_or(false);
                    r
                }
            }
            "system" => Message::system(content),
            _ => {
                return Err(m
                    .key("role")
                    .expected("\"assistant\", \"user\", \"tool\" or \"system\""))
            }
        };
        msg.timestamp = m.key("timestamp").opt_str()?.map(String::from);
        t.messages.push(msg);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::Role;
    use serde_json::json;

    #[test]
    fn user_simulator_usage_is_not_agent_usage() {
        let doc = json!({
            "info": {"agent_info": {"llm": "grok"}, "environment_info": {"policy": "POLICY", "tool_defs": [{"name": "get"}]}},
            "tasks": [{"id": "8", "user_scenario": {"instructions": {"reason_for_call": "book", "known_info": "id 7"}}}],
            "simulations": [{"id": "s1", "task_id": "8", "trial": 0, "agent_cost": 0.3, "termination_reason": "user_stop",
                "reward_info": {"reward": 0.0},
                "messages": [
                    {"role": "assistant", "content": "Hi!", "tool_calls": null, "usage": null, "raw_data": null},
                    {"role": "user", "content": "book", "usage": {"prompt_tokens": 600, "completion_tokens": 50}},
                    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "get", "arguments": {"u": 1}, "requestor": "assistant"}],
                     "usage": {"prompt_tokens": 4000, "completion_tokens": 30}, "raw_data": {}},
                    {"role": "tool", "id": "c1", "content": "{}", "requestor": "assistant", "error": true}]}]});
        let t = import(&Node::root(&doc), "t2").unwrap().remove(0);
        assert_eq!(t.meta.id, "t2__task8_trial0");
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::Tool
            ]
        );
        assert_eq!(t.messages[0].content, "POLICY");
        assert_eq!(t.messages[1].kind.as_deref(), Some("canned"));
        assert_eq!(t.messages[2].kind.as_deref(), Some("user_simulator"));
        assert!(t.messages[2].usage.is_none());
        assert_eq!(t.recorded_usage().input, 4000);
        assert!(t.messages[4].is_error);
        assert_eq!(t.messages[4].name.as_deref(), Some("get"));
        assert_eq!(
            t.meta.instruction.as_deref(),
            Some("Reason for call: book\nKnown info: id 7")
        );
        assert_eq!(
            t.meta.outcome.as_ref().unwrap().status.as_deref(),
            Some("user_stop")
        );
    }
}
