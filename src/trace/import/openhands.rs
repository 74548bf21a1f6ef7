//! OpenHands → canonical traces: event arrays (`[events]`), evaluation rows
//! (`{instance_id, history:[events], metrics, …}`, one per line in `output.jsonl`), and the
//! older 2024 resolver schema (flat action/observation dicts without ids).
//!
//! Current schema (as the deepagents golden converter reads it):
//! - `action: system` → system message (`args.content`; `args.tools` → `meta.tools`);
//!   `source: user, action: message` → user message, its images (`args.image_urls`) a
//!   placeholder line each (`fn images`; `args.file_urls` are not read: see there);
//! - an action with `tool_call_metadata` → one assistant message per distinct
//!   `model_response.id` (content = `choices[0].message.content`, calls = its `tool_calls`, usage
//!   = its `usage`, counted once per response even when several actions share it);
//! - an observation with `tool_call_metadata` → tool result paired with the action whose `id`
//!   is its `cause` (call ids like `toolu_01` repeat across sessions; duplicates get rewritten),
//!   its images (`extras.image_urls`, an IPython cell's plots) a placeholder line each, as a
//!   message's;
//! - an observation without it (e.g. `error`) → user message `kind: "observation"`;
//! - agent `message`/`finish` without metadata → assistant message (a `message`'s images as a
//!   user message's);
//! - a `recall` observation → the user message (`kind: "meta"`) the agent rendered from it
//!   (workspace context, microagent knowledge; see `openhands/recall.rs`) when the agent had
//!   prompt extensions on: as `metadata.agent_config.enable_prompt_extensions` records, else on
//!   (the default) except in evaluation rows, whose harnesses turn them off (left out with a
//!   warning);
//! - bookkeeping (the `recall` action, `agent_state_changed`, `change_agent_state`, `null`) is
//!   skipped: the agent sends none of it to the model.
//!
//! 2024 resolver schema: a `message` before the agent's first action is the user's, a later one
//! the agent's (each with its `images_urls`, as above), `run`/`run_ipython`/… actions become
//! assistant messages (`thought` as content) with one tool call (`execute_bash {command}`,
//! `execute_ipython_cell {code}`, else the action name with its arguments) and synthetic ids
//! `call_<n>`; the next observation is its result. It records no usage, only `metrics.costs`.

use super::json::{content_text, placeholder, Node, Res};
use super::mini_swe::openai_usage;
use super::{tool_calls as tool_calls_of, CallShape, Calls};
use crate::trace::model::{
    Message, Outcome, Role, SourceFormat, ToolCall, Trace, TraceMeta, Usage,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use super::detect::{arr_of, Shape};
use super::{Importer, Input};
use recall::{Extensions, Recall};
use crate::output::quoted;

/// An optional field of an event, quoted ([`quoted`]) or `none`.
fn shown(v: Option<&str>) -> String {
    v.map_or_else(|| "none".to_string(), quoted)
}

mod recall;

/// OpenHands: an evaluation row whose `history[]` holds `{action|observation…}` events (one
/// document or JSON Lines of rows), or an array of such events.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Openhands,
    detect: |shape| match shape {
        Shape::Object(o) => match arr_of(o, "history") {
            Some(h) => match h.first().and_then(|e| e.as_object()) {
                Some(e) => {
                    !e.contains_key("role")
                        && (e.contains_key("action") || e.contains_key("observation"))
                }
                None => {
                    !o.contains_key("trajectory")
                        && (o.contains_key("instance_id") || o.contains_key("metrics"))
                }
            },
            None => false,
        },
        Shape::Array(_, e) => {
            (e.contains_key("action") || e.contains_key("observation"))
                && (e.contains_key("source") || e.contains_key("id"))
        }
        Shape::Lines(..) => false,
    },
    import: |input, stem| match input {
        Input::Lines(lines) => import_rows(std::mem::take(lines), stem),
        Input::Json(v) => import_doc_value(v, "$".into(), stem),
    },
};

/// JSON Lines of evaluation rows: one trace per row, id `<stem>__<instance_id>` (or the issue
/// number, or `L<line>`); a single row keeps the plain stem.
/// Each row is dropped once imported.
pub fn import_rows(lines: Vec<(usize, Value)>, stem: &str) -> Res<Vec<Trace>> {
    let one = lines.len() == 1;
    let mut out = Vec::new();
    for (n, mut v) in lines {
        let r = Node::line_root(&v, n);
        let id = if one {
            stem.to_string()
        } else {
            let key = match r.key("instance_id").scalar_text().ok().flatten() {
                Some(k) => k,
                None => match r.key("issue").key("number").scalar_text().ok().flatten() {
                    Some(num) => format!("issue-{num}"),
                    None => format!("L{n}"),
                },
            };
            format!("{stem}__{key}")
        };
        let path = r.path;
        out.push(row(&mut v, path, &id)?);
    }
    Ok(out)
}

/// One JSON document: an event array or one evaluation row.
pub fn import_doc(root: &Node<'_>, stem: &str) -> Res<Vec<Trace>> {
    import_doc_value(&mut root.v.clone(), root.path.clone(), stem)
}

/// [`import_doc`] of the document `v` at `path`, moving its events out and dropping each once
/// converted.
fn import_doc_value(v: &mut Value, path: String, stem: &str) -> Res<Vec<Trace>> {
    if let Value::Array(a) = v {
        let mut t = Trace::new(TraceMeta::new(stem, SourceFormat::Openhands));
        let evs = std::mem::take(a)
            .into_iter()
            .enumerate()
            .map(|(i, e)| (e, format!("{path}[{i}]")))
            .collect();
        events(evs, &mut t, Recall::new(Extensions::On, Vec::new()))?;
        Ok(vec![t])
    } else {
        Ok(vec![row(v, path, stem)?])
    }
}

fn row(v: &mut Value, path: String, id: &str) -> Res<Trace> {
    let r = Node::at(v, path.clone());
    r.obj()?;
    let mut meta = TraceMeta::new(id, SourceFormat::Openhands);
    meta.task_id = r.key("instance_id").scalar_text()?;
    meta.model = r
        .key("metadata")
        .key("llm_config")
        .key("model")
        .opt_str()?
        .map(String::from);
    let metrics = r.key("metrics");
    let acc = metrics.key("accumulated_token_usage");
    if !acc.is_null() {
        let cache_read = acc.key("cache_read_tokens").opt_u64()?.unwrap_or(0);
        let cache_write = acc.key("cache_write_tokens").opt_u64()?.unwrap_or(0);
        meta.total_usage = Some(Usage {
            input: acc.key("prompt_tokens").opt_u64()?.unwrap_or(0),
            output: acc.key("completion_tokens").opt_u64()?.unwrap_or(0),
            cache_read,
            cache_write,
        });
    }
    // 0.0 with no per-call costs means "not priced", not "free".
    meta.cost_usd = metrics
        .key("accumulated_cost")
        .opt_f64()?
        .filter(|c| *c > 0.0);
    let success = r.key("success").opt_bool()?;
    let error = r.key("error").opt_str()?;
    if success.is_some() || error.is_some() {
        meta.outcome = Some(Outcome {
            success,
            reward: None,
            status: error.map(|e| format!("error: {e}")),
        });
    }
    let recall = recall_of(&r.key("metadata"))?;
    let mut t = Trace::new(meta);
    events(Node::take_items(v, path.clone(), "history")?, &mut t, recall)?;
    let r = Node::at(v, path);
    if t.meta.goal.is_none() {
        if let Some(instr) = r.key("instruction").opt_str()? {
            t.meta.goal = Some(super::extract_goal(instr));
        }
    }
    Ok(t)
}

/// How an evaluation row's agent treated recall observations: `metadata.agent_config` when
/// recorded (`enable_prompt_extensions`, default true; `disabled_microagents`), else off for an
/// evaluation harness's row (`metadata.agent_class`) and on for anything else.
fn recall_of(metadata: &Node<'_>) -> Res<Recall> {
    let ac = metadata.key("agent_config");
    if ac.is_null() {
        let ext = if metadata.has("agent_class") {
            Extensions::AssumedOff
        } else {
            Extensions::On
        };
        return Ok(Recall::new(ext, Vec::new()));
    }
    ac.obj()?;
    let ext = match ac.key("enable_prompt_extensions").opt_bool()? {
        Some(false) => Extensions::Off,
        _ => Extensions::On,
    };
    let mut disabled = Vec::new();
    for d in ac.key("disabled_microagents").opt_items()? {
        disabled.push(d.str()?.to_string());
    }
    Ok(Recall::new(ext, disabled))
}

/// Events moved out of their document with their paths; each is dropped once converted.
fn events(evs: Vec<(Value, String)>, t: &mut Trace, recall: Recall) -> Res<()> {
    let has = |e: &Value, k: &str| e.get(k).is_some_and(|x| !x.is_null());
    let old_schema = evs.iter().all(|(e, _)| {
        !has(e, "id") && !has(e, "source") && (has(e, "action") || has(e, "observation"))
    });
    if old_schema && !evs.is_empty() {
        old_events(evs, t)
    } else {
        new_events(evs, t, recall)
    }
}

fn skipped(action: Option<&str>, obs: Option<&str>) -> bool {
    matches!(action, Some("recall" | "change_agent_state"))
        || matches!(obs, Some("recall" | "agent_state_changed" | "null"))
}

fn new_events(evs: Vec<(Value, String)>, t: &mut Trace, mut recall: Recall) -> Res<()> {
    let mut calls = Calls::default();
    // model_response.id → index of its assistant message
    let mut responses: HashMap<String, usize> = HashMap::new();
    // (response id, recorded call id) → canonical id
    let mut call_ids: HashMap<(String, String), String> = HashMap::new();
    // action event id → (canonical call id, tool name), until its observation arrives
    let mut action_calls: HashMap<String, (String, String)> = HashMap::new();
    for (e_value, e_path) in evs {
        let e = &Node::at(&e_value, e_path);
        e.obj()?;
        let action = e.key("action").opt_str()?;
        let obs = e.key("observation").opt_str()?;
        if obs == Some("recall") {
            if let Some(mut m) = recall.message(e, &mut t.meta.warnings)? {
                // ConversationMemory's formatting: a user message after a user message starts
                // with a blank line.
                if t.messages.last().is_some_and(|p| p.role == Role::User) {
                    m.content.insert_str(0, "\n\n");
                }
                m.timestamp = e.key("timestamp").opt_str()?.map(String::from);
                t.messages.push(m);
            }
            continue;
        }
        if skipped(action, obs) {
            continue;
        }
        let source = e.key("source").opt_str()?;
        let tcm = e.key("tool_call_metadata");
        let ts = e.key("timestamp").opt_str()?.map(String::from);
        let mut msg = if action == Some("system") {
            let args = e.key("args");
            if t.meta.tools.is_empty() {
                t.meta.tools = args
                    .key("tools")
                    .opt_items()?
                    .into_iter()
                    .map(|n| n.v.clone())
                    .collect();
            }
            Message::system(content_text(&args.key("content"), &mut t.meta.warnings)?)
        } else if action == Some("message") && source == Some("user") {
            let c = e.key("args").key("content");
            let mut text = if c.is_null() {
                e.key("message").opt_str()?.unwrap_or("").to_string()
            } else {
                content_text(&c, &mut t.meta.warnings)?
            };
            images(&e.key("args"), &mut text, &mut t.meta.warnings)?;
            Message::user(text)
        } else if let (Some(_), false) = (action, tcm.is_null()) {
            tcm.obj()?;
            let mr = tcm.key("model_response");
            let rid = mr.key("id").scalar_text()?.unwrap_or_default();
            let recorded = tcm.key("tool_call_id").str()?;
            let fname = tcm.key("function_name").str()?;
            if !responses.contains_key(&rid) {
                let m = mr.key("choices").idx(0).key("message");
                let mut tool_calls = Vec::new();
                let list = m.key("tool_calls");
                let issued =
                    tool_calls_of(&list, CallShape::OpenAi, &mut calls, &mut t.meta.warnings)?;
                for (rec, call) in issued {
                    call_ids.insert((rid.clone(), rec), call.id.clone());
                    tool_calls.push(call);
                }
                let mut a = Message::assistant(content_text(&m.key("content"), &mut t.meta.warnings)?, tool_calls);
                a.usage = openai_usage(&mr.key("usage"))?;
                a.timestamp = ts.clone();
                if t.meta.model.is_none() {
                    t.meta.model = mr.key("model").opt_str()?.map(String::from);
                }
                responses.insert(rid.clone(), t.messages.len());
                t.messages.push(a);
            }
            let key = (rid.clone(), recorded.to_string());
            let cid = match call_ids.get(&key) {
                Some(c) => c.clone(),
                None => {
                    // The action's call is missing from the recorded response: add it there.
                    let id = calls.issue(recorded, fname, &tcm.path, &mut t.meta.warnings);
                    t.meta.warnings.push(format!(
                        "{}: call {} is not in model_response {}; added from the action",
                        tcm.path,
                        quoted(recorded),
                        quoted(&rid)
                    ));
                    let args = e.key("args").v.clone();
                    t.messages[responses[&rid]].tool_calls.push(ToolCall {
                        id: id.clone(),
                        name: fname.to_string(),
                        arguments: args,
                    });
                    call_ids.insert(key, id.clone());
                    id
                }
            };
            if let Some(eid) = e.key("id").scalar_text()? {
                action_calls.insert(eid, (cid, fname.to_string()));
            }
            continue;
        } else if let (Some(_), false) = (obs, tcm.is_null()) {
            let cause = e.key("cause").scalar_text()?.unwrap_or_default();
            let mut content = content_text(&e.key("content"), &mut t.meta.warnings)?;
            // The images an observation carries (an IPython cell's plots: `extras.image_urls`)
            // are sent after its text, as a message's are.
            images(&e.key("extras"), &mut content, &mut t.meta.warnings)?;
            match action_calls.remove(&cause) {
                Some((cid, name)) => Message::tool(cid, name, content),
                None => {
                    t.meta.warnings.push(format!(
                        "{}: observation with cause {} answers no pending action; kept as a user message",
                        e.path,
                        quoted(&cause)
                    ));
                    let mut m = Message::user(content);
                    m.kind = Some("observation".into());
                    m
                }
            }
        } else if obs.is_some() {
            let mut m = Message::user(content_text(&e.key("content"), &mut t.meta.warnings)?);
            m.kind = Some("observation".into());
            m
        } else if matches!(action, Some("message" | "finish")) && source == Some("agent") {
            let args = e.key("args");
            let mut text = match args.key("content").opt_str()? {
                Some(c) if !c.is_empty() => c.to_string(),
                _ => e.key("message").opt_str()?.unwrap_or("").to_string(),
            };
            if action == Some("message") {
                images(&args, &mut text, &mut t.meta.warnings)?;
            }
            Message::assistant(text, Vec::new())
        } else {
            t.meta.warnings.push(format!(
                "{}: event skipped (action {}, observation {}, source {})",
                e.path,
                shown(action),
                shown(obs),
                shown(source)
            ));
            continue;
        };
        msg.timestamp = ts;
        t.messages.push(msg);
    }
    recall.finish(&mut t.meta.warnings);
    Ok(())
}

/// The images of a `message` action, found in `args` (the event's `args`; the event itself in
/// the 2024 resolver schema): each URL of `image_urls` (`images_urls` until OpenHands renamed it
/// in November 2024; it still reads both) is a placeholder line `[image_url]` appended to
/// `text`, warned of at the URL's path. OpenHands sends the model each as an `image_url` part
/// after the message's text (when the model has vision; the trace does not say, nor whether it
/// wrote its `Image N:` labels, which are not added).
///
/// The URL itself is not kept in the text: the model got the image, not its address, and the
/// address is often the image (the web UI sends `data:image/png;base64,…` URLs, the whole file
/// as text); the warning's path locates it in the source.
///
/// `file_urls` are not read: OpenHands never sends them to the model (its
/// `ConversationMemory` reads `content` and `image_urls` only); the web UI that uploads the
/// files writes their paths into `content` itself ("NEW FILES ADDED: …"), which is imported.
fn images(args: &Node<'_>, text: &mut String, warnings: &mut Vec<String>) -> Res<()> {
    for key in ["image_urls", "images_urls"] {
        for url in args.key(key).opt_items()? {
            url.str()?;
            let p = placeholder(&url, "image_url", warnings);
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&p);
        }
    }
    Ok(())
}

const BOOKKEEPING_KEYS: [&str; 9] = [
    "action",
    "thought",
    "keep_prompt",
    "is_confirmed",
    "action_risk",
    "security_risk",
    "kernel_init_code",
    "confirmation_state",
    "wait_for_response",
];

fn old_events(evs: Vec<(Value, String)>, t: &mut Trace) -> Res<()> {
    let mut calls = Calls::default();
    let mut pending: Option<(String, String)> = None;
    let mut seen_assistant = false;
    for (e_value, e_path) in evs {
        let e = &Node::at(&e_value, e_path);
        let o = e.obj()?;
        let action = e.key("action").opt_str()?;
        let obs = e.key("observation").opt_str()?;
        if skipped(action, obs) {
            continue;
        }
        if let Some(o_kind) = obs {
            let content = content_text(&e.key("content"), &mut t.meta.warnings)?;
            let msg = match pending.take() {
                Some((cid, name)) => Message::tool(cid, name, content),
                None => {
                    let mut m = Message::user(content);
                    m.kind = Some(format!("observation:{o_kind}"));
                    m
                }
            };
            t.messages.push(msg);
            continue;
        }
        let Some(action) = action else {
            return Err(e.expected("an object with \"action\" or \"observation\""));
        };
        if let Some((cid, _)) = pending.take() {
            t.meta
                .warnings
                .push(format!("{}: call {} got no observation", e.path, quoted(&cid)));
        }
        let thought = e.key("thought").opt_str()?.unwrap_or("").to_string();
        match action {
            "message" => {
                let mut text = content_text(&e.key("content"), &mut t.meta.warnings)?;
                images(e, &mut text, &mut t.meta.warnings)?;
                // The user's until the agent has acted.
                if seen_assistant {
                    t.messages.push(Message::assistant(text, Vec::new()));
                } else {
                    t.messages.push(Message::user(text));
                }
            }
            "finish" => {
                seen_assistant = true;
                t.messages.push(Message::assistant(thought, Vec::new()));
            }
            other => {
                seen_assistant = true;
                let (name, arguments) = match other {
                    "run" => (
                        "execute_bash".to_string(),
                        serde_json::json!({"command": e.key("command").str()?}),
                    ),
                    "run_ipython" => (
                        "execute_ipython_cell".to_string(),
                        serde_json::json!({"code": e.key("code").str()?}),
                    ),
                    _ => {
                        let args: Map<String, Value> = o
                            .iter()
                            .filter(|(k, _)| !BOOKKEEPING_KEYS.contains(&k.as_str()))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        (other.to_string(), Value::Object(args))
                    }
                };
                let cid = calls.issue("", &name, &e.path, &mut t.meta.warnings);
                t.messages.push(Message::assistant(
                    thought,
                    vec![ToolCall {
                        id: cid.clone(),
                        name: name.clone(),
                        arguments,
                    }],
                ));
                pending = Some((cid, name));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tcm(call: &str, rid: &str, calls: Value, usage: Value) -> Value {
        json!({"function_name": "execute_bash", "tool_call_id": call, "model_response": {
            "id": rid, "model": "m", "usage": usage,
            "choices": [{"message": {"content": "thinking", "tool_calls": calls}}]}})
    }

    #[test]
    fn one_message_per_response_pairs_by_cause() {
        let calls = json!([
            {"id": "toolu_01", "function": {"name": "execute_bash", "arguments": "{\"command\": \"ls\"}"}},
            {"id": "toolu_02", "function": {"name": "execute_bash", "arguments": "{\"command\": \"pwd\"}"}}]);
        let u = json!({"prompt_tokens": 100, "completion_tokens": 5});
        let evs = json!([
            {"id": 0, "source": "agent", "action": "system", "args": {"content": "sys", "tools": [{"name": "execute_bash"}]}},
            {"id": 1, "source": "user", "action": "message", "args": {"content": "do"}},
            {"id": 2, "source": "environment", "observation": "agent_state_changed"},
            {"id": 3, "source": "agent", "action": "run", "tool_call_metadata": tcm("toolu_01", "r1", calls.clone(), u.clone())},
            {"id": 4, "source": "agent", "action": "run", "tool_call_metadata": tcm("toolu_02", "r1", calls.clone(), u.clone())},
            {"id": 5, "source": "agent", "observation": "run", "cause": 4, "content": "pwd out", "tool_call_metadata": tcm("toolu_02", "r1", calls.clone(), u.clone())},
            {"id": 6, "source": "agent", "observation": "run", "cause": 3, "content": "ls out", "tool_call_metadata": tcm("toolu_01", "r1", calls, u)},
            {"id": 7, "source": "agent", "observation": "error", "content": "bad"}
        ]);
        let t = import_doc(&Node::root(&evs), "oh").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool,
                Role::User
            ]
        );
        assert_eq!(t.messages[3].tool_call_id.as_deref(), Some("toolu_02"));
        assert_eq!(t.messages[3].content, "pwd out");
        assert_eq!(t.messages[4].tool_call_id.as_deref(), Some("toolu_01"));
        assert_eq!(
            t.recorded_usage().input,
            100,
            "usage counted once per response"
        );
        assert_eq!(t.meta.tools.len(), 1);
        assert_eq!(t.messages[5].kind.as_deref(), Some("observation"));
    }

    #[test]
    fn old_resolver_schema() {
        let row = json!({"instruction": "# Problem Statement\nAdd a licence\n\nIMPORTANT: x", "success": true,
            "metrics": {"accumulated_cost": 0.5, "costs": [0.2, 0.3]},
            "history": [
                {"content": "fix it", "action": "message"},
                {"command": "ls", "thought": "look", "action": "run", "is_confirmed": "confirmed"},
                {"content": "a b", "command": "ls", "exit_code": 0, "observation": "run"},
                {"outputs": {}, "thought": "done", "action": "finish"}]});
        let t = import_doc(&Node::root(&row), "r").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert_eq!(t.messages[1].tool_calls[0].name, "execute_bash");
        assert_eq!(
            t.messages[1].tool_calls[0].arguments,
            json!({"command": "ls"})
        );
        assert_eq!(t.messages[2].tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(t.meta.cost_usd, Some(0.5));
        assert_eq!(t.meta.outcome.as_ref().unwrap().success, Some(true));
        assert_eq!(t.meta.goal.as_deref(), Some("Add a licence"));
    }

    /// The recall pair of the multi_swe_bench trace (history[2..4]), microagent contents cut.
    fn recall_events(extras: Value) -> Vec<Value> {
        vec![
            json!({"id": 0, "source": "agent", "action": "system", "args": {"content": "sys"}}),
            json!({"id": 1, "source": "user", "action": "message", "args": {"content": "fix it"}}),
            json!({"id": 2, "timestamp": "2025-04-30T16:32:54.729188", "source": "user",
                "message": "Retrieving content for: fix it", "action": "recall",
                "args": {"recall_type": "workspace_context", "query": "fix it", "thought": ""}}),
            json!({"id": 4, "timestamp": "2025-04-30T16:32:54.730878", "source": "environment",
                "message": "Added workspace context", "cause": 2, "observation": "recall",
                "content": "Added workspace context", "extras": extras}),
            json!({"id": 5, "source": "agent", "action": "message", "args": {"content": "ok"}}),
        ]
    }

    fn ponyc_extras() -> Value {
        json!({"recall_type": "workspace_context", "repo_name": "", "repo_directory": "",
            "repo_instructions": "",
            "runtime_hosts": {"http://localhost:54079": 54079, "http://localhost:58272": 58272},
            "additional_agent_instructions": "", "date": "2025-04-30",
            "microagent_knowledge": [
                {"name": "github", "trigger": "github",
                    "content": "You have access to an environment variable, `GITHUB_TOKEN`."},
                {"name": "gitlab", "trigger": "git",
                    "content": "You have access to an environment variable, `GITLAB_TOKEN`."}]})
    }

    /// What OpenHands b5338c69's templates render for `ponyc_extras` (jinja2 3.1.6).
    const PONYC_RECALL: &str = concat!(
        "<RUNTIME_INFORMATION>\n",
        "\n",
        "The user has access to the following hosts for accessing a web application,\n",
        "each of which has a corresponding port:\n",
        "* http://localhost:54079 (port 54079)\n",
        "* http://localhost:58272 (port 58272)\n",
        "\n",
        "When starting a web server, use the corresponding ports. You should also\n",
        "set any options to allow iframes and CORS requests, and allow the server to\n",
        "be accessed from any host (e.g. 0.0.0.0).\n",
        "For example, if you are using vite.config.js, you should set server.host and server.allowedHosts to true\n",
        "\n",
        "\n",
        "\n",
        "Today's date is 2025-04-30 (UTC).\n",
        "\n",
        "</RUNTIME_INFORMATION>\n",
        "<EXTRA_INFO>\n",
        "The following information has been included based on a keyword match for \"github\".\n",
        "It may or may not be relevant to the user's request.\n",
        "\n",
        "You have access to an environment variable, `GITHUB_TOKEN`.\n",
        "</EXTRA_INFO>\n",
        "\n",
        "<EXTRA_INFO>\n",
        "The following information has been included based on a keyword match for \"git\".\n",
        "It may or may not be relevant to the user's request.\n",
        "\n",
        "You have access to an environment variable, `GITLAB_TOKEN`.\n",
        "</EXTRA_INFO>",
    );

    #[test]
    fn recall_observation_becomes_the_workspace_context_message() {
        let evs = Value::Array(recall_events(ponyc_extras()));
        let t = import_doc(&Node::root(&evs), "oh").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        // the recall action is bookkeeping; its observation sits where the model saw it
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::User, Role::Assistant]
        );
        let m = &t.messages[2];
        assert_eq!(m.content, format!("\n\n{PONYC_RECALL}"));
        assert_eq!(m.kind.as_deref(), Some("meta"));
        assert_eq!(m.timestamp.as_deref(), Some("2025-04-30T16:32:54.730878"));
        assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    }

    #[test]
    fn recall_follows_agent_config_and_evaluation_rows_leave_it_out_with_a_warning() {
        let row = |metadata: Value| {
            let r = json!({"instance_id": "i", "metadata": metadata,
                "history": recall_events(ponyc_extras())});
            import_doc(&Node::root(&r), "oh").unwrap().remove(0)
        };
        // an evaluation harness's row with no agent_config: the harness turned extensions off
        let t = row(json!({"agent_class": "CodeActAgent", "agent_config": null}));
        assert_eq!(t.messages.len(), 3);
        assert_eq!(t.meta.warnings.len(), 1, "{:?}", t.meta.warnings);
        assert!(
            t.meta.warnings[0].starts_with("$.history[3]: recall observation not imported"),
            "{:?}",
            t.meta.warnings
        );
        // recorded off: left out, as the model saw it, without a warning
        let t = row(json!({"agent_class": "CodeActAgent",
            "agent_config": {"enable_prompt_extensions": false}}));
        assert_eq!(t.messages.len(), 3);
        assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
        // recorded on, with a disabled microagent
        let t = row(json!({"agent_class": "CodeActAgent",
            "agent_config": {"enable_prompt_extensions": true, "disabled_microagents": ["gitlab"]}}));
        assert_eq!(t.messages.len(), 4);
        assert!(t.messages[2].content.contains("`GITHUB_TOKEN`"));
        assert!(!t.messages[2].content.contains("GITLAB"));
        // not an evaluation row (resolver output): the AgentConfig default, on
        let t = row(json!({}));
        assert_eq!(t.messages[2].content, format!("\n\n{PONYC_RECALL}"));
    }

    #[test]
    fn knowledge_recall_skips_microagents_already_shown_and_unknown_types_warn() {
        let mut evs = recall_events(ponyc_extras());
        let knowledge = |id: u64, agents: Value| {
            json!({"id": id, "source": "environment", "observation": "recall", "cause": 6,
                "content": "Added microagent knowledge",
                "extras": {"recall_type": "knowledge", "microagent_knowledge": agents}})
        };
        evs.push(json!({"id": 6, "source": "user", "action": "message", "args": {"content": "push it"}}));
        // github was in the workspace context: only npm is new
        evs.push(knowledge(
            7,
            json!([{"name": "github", "trigger": "github", "content": "G"},
                {"name": "npm", "trigger": "npm", "content": "Use npm ci."}]),
        ));
        // nothing new: no message
        evs.push(knowledge(8, json!([{"name": "npm", "trigger": "npm", "content": "Use npm ci."}])));
        evs.push(json!({"id": 9, "source": "environment", "observation": "recall",
            "extras": {"recall_type": "sensor", "microagent_knowledge": []}}));
        let evs = Value::Array(evs);
        let t = import_doc(&Node::root(&evs), "oh").unwrap().remove(0);
        assert_eq!(t.messages.len(), 6);
        assert_eq!(
            t.messages[5].content,
            "\n\n<EXTRA_INFO>\nThe following information has been included based on a keyword \
             match for \"npm\".\nIt may or may not be relevant to the user's request.\n\n\
             Use npm ci.\n</EXTRA_INFO>"
        );
        assert_eq!(
            t.meta.warnings,
            ["$[8]: recall observation with recall_type \"sensor\" skipped (OpenHands \
              renders only workspace_context and knowledge)"]
        );
    }

    #[test]
    fn later_recall_fields_use_the_later_template() {
        let extras = json!({"recall_type": "workspace_context", "repo_name": "acme/app",
            "repo_directory": "app", "repo_branch": "fix-1", "repo_instructions": "Run make test.",
            "runtime_hosts": {}, "additional_agent_instructions": "", "date": "2025-08-02",
            "custom_secrets_descriptions": {"API_KEY": "the staging key"},
            "conversation_instructions": "Open a PR when done.", "working_dir": "/workspace",
            "microagent_knowledge": []});
        let evs = Value::Array(recall_events(extras));
        let t = import_doc(&Node::root(&evs), "oh").unwrap().remove(0);
        // OpenHands 156d0686's additional_info.j2, rendered by jinja2 3.1.6
        assert_eq!(
            t.messages[2].content,
            concat!(
                "\n",
                "\n",
                "<REPOSITORY_INFO>\n",
                "At the user's request, repository acme/app has been cloned to app in the current working directory.\n",
                "The repository has been checked out to branch \"fix-1\".\n",
                "\n",
                "IMPORTANT: You should work within the current branch \"fix-1\" unless:\n",
                "    1. the user explicitly instructs otherwise\n",
                "    2. the current branch is \"main\", \"master\", or another default branch where direct pushes may be unsafe\n",
                "\n",
                "</REPOSITORY_INFO>\n",
                "\n",
                "<REPOSITORY_INSTRUCTIONS>\n",
                "Run make test.\n",
                "</REPOSITORY_INSTRUCTIONS>\n",
                "\n",
                "<RUNTIME_INFORMATION>\n",
                "\n",
                "The current working directory is /workspace\n",
                "\n",
                "\n",
                "\n",
                "\n",
                "<CUSTOM_SECRETS>\n",
                "You have access to the following environment variables\n",
                "\n",
                "* **$API_KEY**: the staging key\n",
                "\n",
                "</CUSTOM_SECRETS>\n",
                "\n",
                "\n",
                "Today's date is 2025-08-02 (UTC).\n",
                "\n",
                "</RUNTIME_INFORMATION>\n",
                "<CONVERSATION_INSTRUCTIONS>\n",
                "Open a PR when done.\n",
                "</CONVERSATION_INSTRUCTIONS>",
            )
        );
    }

    fn image_warning(at: &str) -> String {
        format!("{at}: an image was replaced by the placeholder \"[image_url]\"; its tokens are not counted")
    }

    /// The images of an observation (an IPython cell's plots, `extras.image_urls`) are
    /// placeholder lines after its text, warned of at each URL's path, as a message's are (they
    /// were not read: the result said nothing of them).
    #[test]
    fn an_observations_images_are_placeholders() {
        let tcm = json!({"function_name": "execute_ipython_cell", "tool_call_id": "toolu_01",
            "model_response": {"id": "r1", "choices": [{"message": {"content": "", "tool_calls": [
                {"id": "toolu_01", "type": "function", "function": {"name": "execute_ipython_cell", "arguments": "{\"code\": \"plot()\"}"}}]}}]},
            "total_calls_in_response": 1});
        let evs = json!([
            {"id": 1, "source": "user", "action": "message", "args": {"content": "plot it"}},
            {"id": 2, "source": "agent", "action": "run_ipython", "args": {"code": "plot()"}, "tool_call_metadata": tcm.clone()},
            {"id": 3, "source": "agent", "observation": "run_ipython", "cause": 2, "content": "<Figure>",
             "extras": {"code": "plot()", "image_urls": ["data:image/png;base64,iVBORw0KGgo="]}, "tool_call_metadata": tcm}
        ]);
        let t = import_doc(&Node::root(&evs), "oh").unwrap().remove(0);
        assert_eq!(t.messages[2].role, Role::Tool);
        assert_eq!(t.messages[2].content, "<Figure>\n[image_url]");
        assert_eq!(t.meta.warnings, [image_warning("$[2].extras.image_urls[0]")]);
    }

    /// Each image of a message (`args.image_urls`; `images_urls` before OpenHands renamed it)
    /// is a placeholder line after its text, warned of at the URL's path, the URL itself not
    /// kept (the web UI sends `data:` URLs, the whole image); `file_urls` are not read, their
    /// paths being in the text already (they are never sent to the model). The images were
    /// not read at all.
    #[test]
    fn a_messages_images_are_placeholders_and_its_files_are_in_its_text() {
        let evs = json!([
            {"id": 0, "source": "agent", "action": "system", "args": {"content": "sys"}},
            {"id": 1, "source": "user", "message": "What is wrong on this page?", "action": "message",
             "args": {"content": "What is wrong on this page?\n\nNEW FILES ADDED: /workspace/report.pdf",
                      "image_urls": ["data:image/png;base64,iVBORw0KGgo=", "https://example.com/b.png"],
                      "file_urls": ["/workspace/report.pdf"], "wait_for_response": false}},
            {"id": 2, "source": "agent", "message": "Here is the fix:", "action": "message",
             "args": {"content": "Here is the fix:", "image_urls": ["data:image/png;base64,AAAA"],
                      "file_urls": null, "wait_for_response": true}},
            {"id": 3, "source": "user", "message": "", "action": "message",
             "args": {"content": "", "images_urls": ["data:image/jpeg;base64,/9j/"], "wait_for_response": false}}
        ]);
        let t = import_doc(&Node::root(&evs), "oh").unwrap().remove(0);
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "sys",
                "What is wrong on this page?\n\nNEW FILES ADDED: /workspace/report.pdf\n[image_url]\n[image_url]",
                "Here is the fix:\n[image_url]",
                "[image_url]",
            ]
        );
        assert_eq!(
            t.meta.warnings,
            [
                image_warning("$[1].args.image_urls[0]"),
                image_warning("$[1].args.image_urls[1]"),
                image_warning("$[2].args.image_urls[0]"),
                image_warning("$[3].args.images_urls[0]"),
            ]
        );
    }

    /// The 2024 resolver schema keeps a message's images on the event itself (`images_urls`).
    #[test]
    fn an_old_schema_messages_images_are_placeholders() {
        let row = json!({"history": [
            {"content": "fix the layout", "images_urls": ["data:image/png;base64,iVBORw0KGgo="],
             "wait_for_response": false, "action": "message", "action_risk": null},
            {"outputs": {}, "thought": "done", "action": "finish"}]});
        let t = import_doc(&Node::root(&row), "r").unwrap().remove(0);
        assert_eq!(t.messages[0].content, "fix the layout\n[image_url]");
        assert_eq!(t.meta.warnings, [image_warning("$.history[0].images_urls[0]")]);
    }

    #[test]
    fn wrong_types_name_path() {
        let evs = json!([{"id": 1, "source": "agent", "action": "run", "tool_call_metadata": {"tool_call_id": 5}}]);
        let e = import_doc(&Node::root(&evs), "oh").unwrap_err();
        assert_eq!(e.location, "$[0].tool_call_metadata.tool_call_id");
    }
}
