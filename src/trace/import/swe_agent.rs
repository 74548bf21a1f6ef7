//! SWE-agent `.traj` → canonical trace, from `history` (the LLM message list).
//!
//! - 1.x (function calling): assistant `tool_calls` are OpenAI format; `role: tool` messages
//!   answer `tool_call_ids[0]`.
//! - 0.x (text actions): an assistant message with a non-empty `action` gets one tool call named
//!   after the command's first word (`edit`, `create`, `python`, `submit`…) with arguments
//!   `{command: <action, trimmed>}` and id `call_<n>`; the user message after it is its result.
//!   The assistant content is kept whole.
//! - `is_demo: true` user messages (demonstrations rendered as text) get `kind: "demo"`.
//! - `trajectory` holds one step per executed action (`{action, observation, response, thought}`)
//!   and may hold steps `history` lacks: SWE-agent writes the step to both, but older versions
//!   left the final step (the `submit` and its diff) out of `history`, and a step can be in the
//!   trajectory only (a requeried or hand-removed one). The steps are aligned in order with the
//!   history's non-demo assistant actions. When `history` ends on an action whose observation is
//!   missing, the result is taken from that action's step; steps after the last aligned one are
//!   appended (the assistant `response` with a call from its `action`, then the raw
//!   `observation`); a step between aligned ones is left out with a warning naming it, since the
//!   history says the model never saw it.
//! - No per-call usage exists; `info.model_stats` totals (`tokens_sent`, `tokens_received`,
//!   `instance_cost`) go to `meta.total_usage` / `meta.cost_usd` when non-zero.

use super::json::{content_text, Node, Res};
use crate::output::quoted;
use serde_json::Value;
use super::{tool_calls, CallShape, Calls};
use crate::trace::model::{
    Message, Outcome, Role, SourceFormat, ToolCall, Trace, TraceMeta, Usage,
};
use super::detect::arr_of;
use super::Importer;
use crate::output::ellipsize;

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

/// How the trajectory's steps line up with the history's assistant actions.
#[derive(Debug, Default, PartialEq)]
struct Alignment {
    /// The step of the history's final action, if that one is aligned.
    end: Option<usize>,
    /// Steps between aligned ones: in the trajectory only.
    skipped: Vec<usize>,
    /// The first step after the last aligned one (steps from here on are appended).
    tail: usize,
    /// The history has actions but none is a trajectory step: the trajectory is not read.
    unrelated: bool,
}

impl Alignment {
    /// Whether step `i` is read after the history is converted.
    fn keeps(&self, i: usize) -> bool {
        !self.unrelated && (Some(i) == self.end || i >= self.tail)
    }
}

/// Align the trimmed `action` of each non-demo assistant history message, in order, with the
/// first later step of the same action. A history action no step has is passed over.
fn align(v: &Value) -> Alignment {
    let action = |x: &Value| {
        x.get("action")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let steps: Vec<String> = match v.get("trajectory") {
        Some(Value::Array(a)) => a.iter().map(action).collect(),
        _ => return Alignment::default(),
    };
    let history: Vec<String> = match v.get("history") {
        Some(Value::Array(h)) => h
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .filter(|m| m.get("is_demo").and_then(Value::as_bool) != Some(true))
            .map(action)
            .collect(),
        _ => Vec::new(),
    };
    let mut out = Alignment::default();
    let mut aligned = false;
    for a in &history {
        out.end = steps[out.tail..].iter().position(|s| s == a).map(|k| {
            out.skipped.extend(out.tail..out.tail + k);
            out.tail += k + 1;
            out.tail - 1
        });
        aligned |= out.end.is_some();
    }
    out.unrelated = !history.is_empty() && !aligned && !steps.is_empty();
    out
}

/// The tool call of a text action: named after the command's first word, `{command: action}`.
fn text_call(action: &str, at: &str, calls: &mut Calls, warnings: &mut Vec<String>) -> ToolCall {
    let name = action
        .split_whitespace()
        .next()
        .unwrap_or("bash")
        .to_string();
    let id = calls.issue("", &name, at, warnings);
    ToolCall {
        id,
        name,
        arguments: serde_json::json!({"command": action}),
    }
}

/// Append trajectory step `step`, which the history lacks: the assistant `response` (or
/// `thought`) with a call from its `action`, then its `observation` as the call's result.
fn push_step(step: &Node<'_>, t: &mut Trace, calls: &mut Calls) -> Res<()> {
    step.obj()?;
    let action = step.key("action").opt_str()?.unwrap_or("").trim();
    let content = match step.key("response").opt_str()? {
        Some(r) => r,
        None => step.key("thought").opt_str()?.unwrap_or(""),
    };
    let observation = step.key("observation").opt_str()?;
    if action.is_empty() {
        t.messages.push(Message::assistant(content, Vec::new()));
        if let Some(obs) = observation.filter(|o| !o.is_empty()) {
            t.messages.push(Message::user(obs));
        }
        return Ok(());
    }
    let call = text_call(action, &step.path, calls, &mut t.meta.warnings);
    let (id, name) = (call.id.clone(), call.name.clone());
    t.messages.push(Message::assistant(content, vec![call]));
    match observation {
        Some(obs) => t.messages.push(Message::tool(id, name, obs)),
        None => t
            .meta
            .warnings
            .push(format!("{}: call {} got no observation", step.path, quoted(&id))),
    }
    Ok(())
}

/// Import the document `v` at `path`, moving its history out and dropping each message once
/// converted. The trajectory repeats the history's text, so only its steps the history lacks
/// (and the one whose observation a history ending on an action needs) are kept to be read.
pub fn import_value(v: &mut Value, path: String, id: &str) -> Res<Trace> {
    let root = Node::at(v, path.clone());
    root.obj()?;
    let plan = align(v);
    let trajectory = root.key("trajectory");
    let mut warnings: Vec<String> = plan
        .skipped
        .iter()
        .map(|&i| {
            let step = trajectory.idx(i);
            let action = step.key("action").v.as_str().unwrap_or("").trim();
            format!(
                "{}: step (action {}) is not in history, the model's context; skipped",
                step.path,
                quoted(&ellipsize(action.lines().next().unwrap_or(""), 60))
            )
        })
        .collect();
    if plan.unrelated {
        warnings.push(format!(
            "{}: none of its {} step(s) has the action of a history message; not read",
            trajectory.path,
            trajectory.v.as_array().map_or(0, Vec::len)
        ));
    }
    if let Some(Value::Array(steps)) = v.get_mut("trajectory") {
        for (i, s) in steps.iter_mut().enumerate() {
            if !plan.keeps(i) {
                *s = Value::Null;
            }
        }
    }
    let root = Node::at(v, path.clone());
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
    t.meta.warnings.extend(warnings);
    let mut calls = Calls::default();
    // 0.x: the text-action call waiting for its observation.
    let mut pending: Option<(String, String)> = None;
    for (m_value, m_path) in Node::take_items(v, path.clone(), "history")? {
        let m = Node::at(&m_value, m_path);
        m.obj()?;
        let role = m.key("role").str()?;
        let content = content_text(&m.key("content"), &mut t.meta.warnings)?;
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
                        .push(format!("{}: call {} got no observation", m.path, quoted(&cid)));
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
                        let call = text_call(action, &m.path, &mut calls, &mut t.meta.warnings);
                        pending = Some((call.id.clone(), call.name.clone()));
                        tool_calls.push(call);
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
    }
    let root = Node::at(v, path);
    let steps = root.key("trajectory").opt_items()?;
    // History ending on an action: its observation is in that action's step.
    if let Some(last) = t
        .messages
        .last()
        .filter(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    {
        let call = last.tool_calls[0].clone();
        if let Some(step) = plan.end.and_then(|i| steps.get(i)) {
            match step.key("observation").opt_str()? {
                Some(obs) => t.messages.push(Message::tool(call.id, call.name, obs)),
                None => t.meta.warnings.push(format!(
                    "{}: call {} got no observation",
                    step.path,
                    quoted(&call.id)
                )),
            }
        }
    }
    if !plan.unrelated {
        for step in steps.iter().skip(plan.tail) {
            push_step(step, &mut t, &mut calls)?;
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

    /// A 0.x history of `actions`, each answered by `obs <action>`, after a system and a task.
    fn history(actions: &[&str]) -> Vec<Value> {
        let mut h = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": "task"}),
        ];
        for a in actions {
            h.push(json!({"role": "assistant", "content": format!("run {a}"), "action": format!("{a}\n")}));
            h.push(json!({"role": "user", "content": format!("obs {a}")}));
        }
        h
    }

    fn step(action: &str) -> Value {
        json!({"action": format!("{action}\n"), "observation": format!("out {action}"),
               "response": format!("said {action}"), "thought": "t"})
    }

    fn contents(t: &Trace) -> Vec<&str> {
        t.messages.iter().map(|m| m.content.as_str()).collect()
    }

    #[test]
    fn steps_after_a_history_ending_on_an_observation_are_appended() {
        let doc = json!({"info": {}, "history": history(&["ls"]),
            "trajectory": [step("ls"), step("python x.py"), step("submit")]});
        let t = import(&Node::root(&doc), "s").unwrap();
        assert_eq!(
            contents(&t)[2..],
            ["run ls", "obs ls", "said python x.py", "out python x.py", "said submit", "out submit"]
        );
        assert_eq!(t.messages[6].tool_calls[0].name, "submit");
        assert_eq!(
            t.messages[6].tool_calls[0].arguments,
            json!({"command": "submit"})
        );
        assert_eq!(t.messages[7].role, Role::Tool);
        assert_eq!(t.messages[7].tool_call_id, Some(t.messages[6].tool_calls[0].id.clone()));
        assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
        assert!(crate::trace::import::pairing_problems(&t).is_empty());
    }

    #[test]
    fn a_step_only_in_the_trajectory_between_history_steps_is_named() {
        let doc = json!({"info": {}, "history": history(&["ls", "cat a"]),
            "trajectory": [step("ls"), step("edit 1:1\nx\nend_of_edit"), step("cat a")]});
        let t = import(&Node::root(&doc), "s").unwrap();
        assert_eq!(contents(&t)[2..], ["run ls", "obs ls", "run cat a", "obs cat a"]);
        assert_eq!(
            t.meta.warnings,
            ["$.trajectory[1]: step (action \"edit 1:1\") is not in history, the model's \
              context; skipped"]
        );
    }

    #[test]
    fn a_trajectory_sharing_no_action_with_the_history_is_not_read() {
        let doc = json!({"info": {}, "history": history(&["ls"]),
            "trajectory": [step("pwd"), step("submit")]});
        let t = import(&Node::root(&doc), "s").unwrap();
        assert_eq!(t.messages.len(), 4);
        assert_eq!(
            t.meta.warnings,
            ["$.trajectory: none of its 2 step(s) has the action of a history message; not read"]
        );
    }

    #[test]
    fn a_final_action_missing_from_the_trajectory_takes_no_other_step_s_observation() {
        let mut h = history(&["ls"]);
        h.push(json!({"role": "assistant", "content": "run submit", "action": "submit"}));
        let doc = json!({"info": {}, "history": h, "trajectory": [step("ls")]});
        let t = import(&Node::root(&doc), "s").unwrap();
        assert_eq!(contents(&t)[2..], ["run ls", "obs ls", "run submit"]);
    }

    #[test]
    fn an_appended_step_without_observation_is_named() {
        let mut last = step("submit");
        last["observation"] = Value::Null;
        let doc = json!({"info": {}, "history": history(&["ls"]), "trajectory": [step("ls"), last]});
        let t = import(&Node::root(&doc), "s").unwrap();
        assert_eq!(contents(&t)[2..], ["run ls", "obs ls", "said submit"]);
        assert_eq!(
            t.meta.warnings,
            ["$.trajectory[1]: call \"call_2\" got no observation"]
        );
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
