//! mini-swe-agent `.traj.json` (`trajectory_format: mini-swe-agent-1`) → canonical trace,
//! converting exactly as the deepagents golden converter (`convert_trace.py mini-swe`) does.
//!
//! - An assistant message with exactly one ```` ```bash ```` block (mini-swe-agent's own
//!   `action_regex`) gets one tool call `{id: "call_<k>", name: "bash", args: {command}}`, k
//!   counting only such messages; its whole content is kept. The next user message is the tool
//!   result (`role: tool`, `name: "bash"`).
//! - An assistant message with 0 or ≥ 2 blocks was rejected by mini-swe-agent: it stays plain, and
//!   the user message after it (the "Please always provide EXACTLY ONE action" feedback) is kept as
//!   a user message with `kind: "format_error"`.
//! - Usage per call from `extra.response.usage` (`prompt_tokens` already includes cached
//!   tokens); reasoning from `extra.response.choices[0].message.reasoning`.
//!
//! In both versions a refusal LiteLLM recorded (1.x: `extra.response.choices[0].message.refusal`;
//! 2.x: the message's `provider_specific_fields.refusal`, or its `refusal`) follows the message's
//! text, with a warning, and a completion `extra.response.choices[0].finish_reason`
//! `"content_filter"` or `"length"` says stopped is warned of (`refusal_and_finish`).
//!
//! mini-swe-agent 2 (`trajectory_format: mini-swe-agent-1.1`, `info.mini_version` 2.x) keeps the
//! messages it sent as the model's chat messages, with its own fields under `extra`
//! ([`import_v2`]): assistant messages carry OpenAI `tool_calls` (the `bash` tool), results are
//! role `tool` messages with their `tool_call_id`, a rejected model response leaves only the
//! user feedback (`extra.interrupt_type: "FormatError"`), and the run ends with a role `exit`
//! message (not sent to the model) whose content is the submission or the exit status.

use super::calls::{tool_calls, CallShape, Calls};
use super::detect::str_of;
use super::json::{content_text, Node, Res};
use super::openai::{content_filter_warning, token_limit_warning, with_refusal};
use super::Importer;
use crate::trace::model::{Message, Outcome, SourceFormat, ToolCall, Trace, TraceMeta, Usage};
use regex::Regex;
use serde_json::Value;
use std::sync::OnceLock;

/// What mini-swe-agent's submit command prints: the call that ran it ends the run.
const SUBMIT_MARKER: &str = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

/// The call of `calls` that submitted: mini-swe-agent ends the run when a command's output
/// starts with [`SUBMIT_MARKER`], so the one whose command echoes (or printf's) it; else the
/// last that names it (a `grep` for the marker before it is no submission).
fn submit_call(calls: &[ToolCall]) -> Option<&ToolCall> {
    let command = |c: &ToolCall| {
        c.arguments
            .get("command")
            .and_then(Value::as_str)
            .map_or_else(|| c.arguments.to_string(), str::to_string)
    };
    calls
        .iter()
        .find(|c| {
            let cmd = command(c);
            let cmd = cmd.trim_start();
            (cmd.starts_with("echo") || cmd.starts_with("printf")) && cmd.contains(SUBMIT_MARKER)
        })
        .or_else(|| calls.iter().rev().find(|c| command(c).contains(SUBMIT_MARKER)))
}

/// Python's `re` `\s` (Unicode) also matches U+001C..U+001F, which Rust's `\s` does not.
fn action_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?s)```bash[\s\x1c-\x1f]*\n(.*?)\n```").expect("static regex compiles")
    })
}

/// Python's `str.strip()` with no arguments: Unicode whitespace plus U+001C..U+001F.
/// mini-swe-agent `.traj.json`: `trajectory_format: "mini-swe-agent…"`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::MiniSwe,
    detect: |shape| {
        shape
            .object()
            .and_then(|o| str_of(o, "trajectory_format"))
            .is_some_and(|f| f.starts_with("mini-swe-agent"))
    },
    import: |input, stem| {
        super::each_document_mut(input, stem, |v, path, id| {
            import_value(v, path, id).map(|t| vec![t])
        })
    },
};

pub fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// The bash actions of an assistant message, as mini-swe-agent finds them.
pub fn actions(content: &str) -> Vec<&str> {
    action_regex()
        .captures_iter(content)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect()
}

/// Usage of an OpenAI-style `usage` object: `prompt_tokens` (cached included),
/// `completion_tokens`, `prompt_tokens_details.cached_tokens`, Anthropic-via-LiteLLM
/// `cache_read_input_tokens` / `cache_creation_input_tokens`.
pub fn openai_usage(u: &Node<'_>) -> Res<Option<Usage>> {
    if u.is_null() {
        return Ok(None);
    }
    u.obj()?;
    let input = u.key("prompt_tokens").opt_u64()?.unwrap_or(0);
    let output = u.key("completion_tokens").opt_u64()?.unwrap_or(0);
    let cache_read = match u
        .key("prompt_tokens_details")
        .key("cached_tokens")
        .opt_u64()?
    {
        Some(c) => c,
        None => u.key("cache_read_input_tokens").opt_u64()?.unwrap_or(0),
    };
    let cache_write = u.key("cache_creation_input_tokens").opt_u64()?.unwrap_or(0);
    Ok(Some(Usage {
        input,
        output,
        cache_read,
        cache_write,
    }))
}

pub fn import(root: &Node<'_>, id: &str) -> Res<Trace> {
    import_value(&mut root.v.clone(), root.path.clone(), id)
}

/// `trajectory_format` of mini-swe-agent 1 (and of files written before the key existed).
pub const FORMAT_V1: &str = "mini-swe-agent-1";
/// `trajectory_format` of mini-swe-agent 2.
pub const FORMAT_V2: &str = "mini-swe-agent-1.1";

/// Import the document `v` at `path`, moving its messages out and dropping each once converted:
/// a mini-swe-agent 1 trajectory (text actions) or a mini-swe-agent 2 one ([`import_v2`]), by
/// its `trajectory_format`.
pub fn import_value(v: &mut Value, path: String, id: &str) -> Res<Trace> {
    let root = Node::at(v, path.clone());
    root.obj()?;
    let format = root.key("trajectory_format");
    match format.opt_str()? {
        None | Some(FORMAT_V1) => import_v1(v, path, id),
        Some(FORMAT_V2) => import_v2(v, path, id),
        Some(other) => Err(format.error(format!(
            "trajectory_format {}: this importer reads {FORMAT_V1:?} (mini-swe-agent 1) \
             and {FORMAT_V2:?} (mini-swe-agent 2)",
            crate::output::quoted(other)
        ))),
    }
}

/// The metadata both versions record: instance id, model name, cost and exit status.
fn meta(root: &Node<'_>, id: &str) -> Res<TraceMeta> {
    let mut meta = TraceMeta::new(id, SourceFormat::MiniSwe);
    meta.task_id = root.key("instance_id").opt_str()?.map(String::from);
    let info = root.key("info");
    meta.model = info
        .key("config")
        .key("model")
        .key("model_name")
        .opt_str()?
        .map(String::from);
    meta.cost_usd = info.key("model_stats").key("instance_cost").opt_f64()?;
    if let Some(status) = info.key("exit_status").opt_str()? {
        meta.outcome = Some(Outcome {
            success: None,
            reward: None,
            status: Some(status.to_string()),
        });
    }
    Ok(meta)
}

/// A mini-swe-agent 1 trajectory: text actions in ```` ```bash ```` blocks (see the module doc).
fn import_v1(v: &mut Value, path: String, id: &str) -> Res<Trace> {
    let root = Node::at(v, path.clone());
    let mut t = Trace::new(meta(&root, id)?);
    let mut k = 0usize;
    let mut pending: Option<String> = None;
    let mut after_rejected = false;
    for (m, m_path) in Node::take_items(v, path, "messages")? {
        let m = Node::at(&m, m_path);
        m.obj()?;
        let role = m.key("role").str()?;
        // What mini-swe-agent 2 writes, whose files say `trajectory_format: mini-swe-agent-1.1`.
        let v2_sign = if matches!(role, "tool" | "exit") {
            Some((m.key("role"), format!("role {}", crate::output::quoted(role))))
        } else if !m.key("tool_calls").is_null() {
            Some((m.key("tool_calls"), "tool_calls".to_string()))
        } else {
            None
        };
        if let Some((at, what)) = v2_sign {
            return Err(at.error(format!(
                "{what} in a {FORMAT_V1:?} trajectory: mini-swe-agent 2 writes this, with \
                 trajectory_format {FORMAT_V2:?}"
            )));
        }
        let content = m.key("content").str()?;
        if role == "user" {
            if let Some(cid) = pending.take() {
                t.messages.push(Message::tool(cid, "bash", content));
                continue;
            }
            let mut msg = Message::user(content);
            if after_rejected {
                msg.kind = Some("format_error".into());
            }
            after_rejected = false;
            t.messages.push(msg);
            continue;
        }
        if let Some(cid) = pending.take() {
            t.meta.warnings.push(format!(
                "{}: expected the user observation answering {cid}, found a {role} message",
                m.path
            ));
        }
        after_rejected = false;
        match role {
            "system" => t.messages.push(Message::system(content)),
            "assistant" => {
                let found = actions(content);
                let mut msg = if found.len() == 1 {
                    k += 1;
                    let cid = format!("call_{k}");
                    pending = Some(cid.clone());
                    Message::assistant(
                        content,
                        vec![ToolCall {
                            id: cid,
                            name: "bash".into(),
                            arguments: serde_json::json!({"command": py_strip(found[0])}),
                        }],
                    )
                } else {
                    after_rejected = true;
                    Message::assistant(content, Vec::new())
                };
                let resp = m.key("extra").key("response");
                msg.content = refusal_and_finish(
                    std::mem::take(&mut msg.content),
                    &resp.key("choices").idx(0).key("message"),
                    &resp,
                    &mut t.meta.warnings,
                );
                msg.usage = openai_usage(&resp.key("usage"))?;
                msg.reasoning = resp
                    .key("choices")
                    .idx(0)
                    .key("message")
                    .key("reasoning")
                    .opt_str()?
                    .filter(|r| !r.is_empty())
                    .map(String::from);
                if t.meta.model.is_none() {
                    t.meta.model = resp.key("model").opt_str()?.map(String::from);
                }
                t.messages.push(msg);
            }
            _ => {
                return Err(m
                    .key("role")
                    .expected("\"system\", \"user\" or \"assistant\""));
            }
        }
    }
    Ok(t)
}

/// A mini-swe-agent 2 trajectory (`trajectory_format: mini-swe-agent-1.1`), the messages as the
/// agent kept them (`DefaultAgent.serialize`):
///
/// - `assistant`: its OpenAI `tool_calls` (the `bash` tool; ids as recorded), usage from
///   `extra.response.usage`, reasoning from `reasoning_content` (LiteLLM) or
///   `provider_specific_fields.reasoning`. With the text-based model (no `tool_calls`), the
///   commands mini-swe-agent parsed out of the text (`extra.actions`) become `bash` calls.
/// - `tool`: the result of the call its `tool_call_id` names; an error when mini-swe-agent
///   recorded `extra.exception_info` (a timeout, an action not executed).
/// - `user`: the task, or the feedback to a response mini-swe-agent rejected
///   (`extra.interrupt_type: "FormatError"`, kept with `kind: "format_error"`; the rejected
///   response itself was never sent back to the model, so it is no message). A user message with
///   `extra.returncode` is an observation: the result of the oldest open text-based call.
/// - `exit` (never sent to the model): when a call is still open it is the submitting command,
///   whose observation mini-swe-agent replaced by this message: it becomes that call's result
///   (`kind: "submission"`). Otherwise it is no message: the exit status is the outcome, and a
///   text beyond the status is named in a warning.
///
/// Responses-API items (`object: "response"`, `type: "function_call_output"`, written by the
/// `*_response` models) are refused by position: no real trajectory of that shape has been read.
pub fn import_v2(v: &mut Value, path: String, id: &str) -> Res<Trace> {
    let root = Node::at(v, path.clone());
    let mut t = Trace::new(meta(&root, id)?);
    let mut calls = Calls::default();
    for (m, m_path) in Node::take_items(v, path, "messages")? {
        let m = Node::at(&m, m_path);
        m.obj()?;
        let role_n = m.key("role");
        let Some(role) = role_n.opt_str()? else {
            return Err(no_role(&m));
        };
        let extra = m.key("extra");
        let content = content_text(&m.key("content"), &mut t.meta.warnings)?;
        match role {
            "system" => t.messages.push(Message::system(content)),
            "user" => {
                let interrupt = extra.key("interrupt_type").opt_str()?;
                let msg = if interrupt == Some("FormatError") {
                    // Tool-calling models keep the rejected response in `extra.response`,
                    // text-based ones (2.2+) in `extra.model_response`.
                    if let Some(key) = ["response", "model_response"]
                        .into_iter()
                        .find(|k| extra.has(k))
                    {
                        t.meta.warnings.push(format!(
                            "{}: the model response mini-swe-agent rejected here is recorded only \
                             in extra.{key} (it was never sent back to the model, so it is no \
                             message, and its usage is not counted)",
                            m.path
                        ));
                    }
                    let mut u = Message::user(content);
                    u.kind = Some("format_error".into());
                    u
                } else if interrupt.is_none() && extra.has("returncode") {
                    match calls.answer_next() {
                        Some((cid, name)) => observation(Message::tool(cid, name, content), &extra)?,
                        None => {
                            let mut u = Message::user(content);
                            u.kind = Some("observation".into());
                            u
                        }
                    }
                } else {
                    Message::user(content)
                };
                t.messages.push(msg);
            }
            "assistant" => {
                let mut issued: Vec<ToolCall> = tool_calls(
                    &m.key("tool_calls"),
                    CallShape::OpenAi,
                    &mut calls,
                    &mut t.meta.warnings,
                )?
                .into_iter()
                .map(|(_, c)| c)
                .collect();
                if issued.is_empty() {
                    for a in extra.key("actions").opt_items()? {
                        let command = a.key("command").str()?;
                        let cid = calls.issue("", "bash", &a.path, &mut t.meta.warnings);
                        issued.push(ToolCall {
                            id: cid,
                            name: "bash".into(),
                            arguments: serde_json::json!({ "command": command }),
                        });
                    }
                }
                if !m.key("function_call").is_null() {
                    t.meta.warnings.push(format!(
                        "{}: a legacy function_call (mini-swe-agent 2 acts on tool_calls only) \
                         is not read",
                        m.key("function_call").path
                    ));
                }
                let resp = extra.key("response");
                let content = refusal_and_finish(content, &m, &resp, &mut t.meta.warnings);
                let mut a = Message::assistant(content, issued);
                a.usage = openai_usage(&resp.key("usage"))?;
                let recorded_reasoning = [
                    m.key("reasoning_content"),
                    m.key("provider_specific_fields").key("reasoning"),
                    resp.key("choices").idx(0).key("message").key("reasoning"),
                ];
                for r in recorded_reasoning {
                    if let Some(r) = r.opt_str()?.filter(|r| !r.is_empty()) {
                        a.reasoning = Some(r.to_string());
                        break;
                    }
                }
                if t.meta.model.is_none() {
                    t.meta.model = resp.key("model").opt_str()?.map(String::from);
                }
                t.messages.push(a);
            }
            "tool" => {
                let recorded = m.key("tool_call_id").opt_str()?;
                let (cid, name) = calls.answer_or_warn(recorded, &m.path, &mut t.meta.warnings);
                t.messages
                    .push(observation(Message::tool(cid, name, content), &extra)?);
            }
            "exit" => {
                let status = extra.key("exit_status").opt_str()?;
                // The call of the submit command when one is open (mini-swe-agent raises
                // Submitted on the command that prints the marker, so the calls before it in
                // the message got no output either), else the oldest open call.
                let submitting = t
                    .messages
                    .iter()
                    .rev()
                    .find(|m| !m.tool_calls.is_empty())
                    .and_then(|a| submit_call(&a.tool_calls))
                    .map(|c| c.id.clone());
                let answered = submitting
                    .and_then(|id| calls.answer_canonical(&id))
                    .or_else(|| calls.answer_next());
                if let Some((cid, name)) = answered {
                    let mut r = Message::tool(cid, name, content);
                    if status == Some("Submitted") {
                        r.kind = Some("submission".into());
                    } else {
                        r.kind = Some("exit".into());
                        r.is_error = true;
                    }
                    t.messages.push(r);
                    if calls.has_open() {
                        t.meta.warnings.push(format!(
                            "{}: the run ended here (exit status {}); the other tool calls of \
                             the last assistant message have no recorded result",
                            m.path,
                            status.unwrap_or("not recorded")
                        ));
                        calls.close_open();
                    }
                } else {
                    if t.meta.outcome.is_none() {
                        t.meta.outcome = status.map(|s| Outcome {
                            success: None,
                            reward: None,
                            status: Some(s.to_string()),
                        });
                    }
                    if !content.is_empty() && Some(content.as_str()) != status {
                        t.meta.warnings.push(format!(
                            "{}: the exit message (exit status {}, {} characters) was never sent \
                             to the model and answers no tool call: it is not imported as a \
                             message",
                            m.path,
                            status.unwrap_or("not recorded"),
                            content.chars().count()
                        ));
                    }
                }
            }
            other => {
                return Err(role_n.error(format!(
                    "expected \"system\", \"user\", \"assistant\", \"tool\" or \"exit\" (the roles \
                     mini-swe-agent 2 writes), found {other}", other = crate::output::quoted(other)
                )));
            }
        }
    }
    Ok(t)
}

/// A refusal LiteLLM recorded on the chat message `msg` (a dump of its `Message`): `refusal`
/// (older LiteLLM: the 1.x files' `extra.response.choices[0].message.refusal`) or
/// `provider_specific_fields.refusal` (the 2.x files' messages): the field and its text, if
/// not empty.
fn litellm_refusal<'a>(msg: &Node<'a>) -> Option<(Node<'a>, &'a str)> {
    [msg.key("refusal"), msg.key("provider_specific_fields").key("refusal")]
        .into_iter()
        .find_map(|n| n.v.as_str().filter(|r| !r.is_empty()).map(|r| (n, r)))
}

/// The text of an assistant message whose content is `content`: the refusal LiteLLM recorded on
/// `msg` (its chat message) follows the content, as in the OpenAI chat importer, with a warning
/// that the message is one; a finish reason of the raw completion `resp`
/// (`choices[0].finish_reason`) that cut the answer short, `content_filter` or `length`, is
/// warned of.
fn refusal_and_finish(
    content: String,
    msg: &Node<'_>,
    resp: &Node<'_>,
    warnings: &mut Vec<String>,
) -> String {
    let content = match litellm_refusal(msg) {
        Some((at, r)) => with_refusal(content, r, &at, "`refusal`", warnings),
        None => content,
    };
    let finish = resp.key("choices").idx(0).key("finish_reason");
    match finish.v.as_str() {
        Some("content_filter") => warnings.push(content_filter_warning(&finish)),
        Some(r @ "length") => warnings.push(token_limit_warning(&finish, r)),
        _ => {}
    }
    content
}

/// A result with mini-swe-agent's `extra.exception_info` (a timeout, an action not executed)
/// is an error.
fn observation(mut r: Message, extra: &Node<'_>) -> Res<Message> {
    r.is_error = extra
        .key("exception_info")
        .opt_str()?
        .is_some_and(|e| !e.is_empty());
    Ok(r)
}

/// The error for a message without `role`: a Responses-API item is named as such.
fn no_role(m: &Node<'_>) -> super::json::Located {
    let object = m.key("object").opt_str().ok().flatten();
    let ty = m.key("type").opt_str().ok().flatten();
    if object == Some("response") || ty.is_some() {
        let what = match object {
            Some(o) => format!("object {}", crate::output::quoted(o)),
            None => format!("type {}", crate::output::quoted(ty.unwrap_or_default())),
        };
        return m.error(format!(
            "a Responses-API item ({what}), as mini-swe-agent 2's response models \
             (LitellmResponseModel and the like) write: not read yet (no real trajectory of that \
             shape has been seen)"
        ));
    }
    m.key("role").expected("a string")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The shape of mini-swe-agent 2's trajectories with the tool-calling model (as in the real
    /// files of `datasets/mini-swe-agent-2` and the 45 measured in `docs/formats/mini-swe-agent.md`):
    /// calls keep their recorded ids, results pair by `tool_call_id`, the rejected response's
    /// feedback is a `format_error` user message, and the `exit` message that replaced the
    /// submitting command's observation becomes its result.
    fn v2_doc() -> Value {
        json!({
            "trajectory_format": "mini-swe-agent-1.1",
            "info": {"mini_version": "2.2.4", "exit_status": "Submitted", "submission": "diff",
                     "model_stats": {"instance_cost": 0.25, "api_calls": 3},
                     "config": {"model": {"model_name": "openai/gpt-5-mini"}}},
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": null, "function_call": null,
                 "provider_specific_fields": {"refusal": null}, "annotations": [],
                 "tool_calls": [{"id": "call_A", "type": "function",
                                 "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}],
                 "extra": {"actions": [{"command": "ls", "tool_call_id": "call_A"}], "cost": 0.1,
                           "response": {"model": "gpt-5-mini-2025-08-07",
                                        "usage": {"prompt_tokens": 100, "completion_tokens": 7,
                                                  "prompt_tokens_details": {"cached_tokens": 64}}}}},
                {"role": "tool", "tool_call_id": "call_A", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>",
                 "extra": {"raw_output": "a.py\n", "returncode": 0, "exception_info": ""}},
                {"role": "user", "content": "No tool calls found in the response.",
                 "extra": {"interrupt_type": "FormatError"}},
                {"role": "assistant", "content": "submit", "reasoning_content": "done",
                 "tool_calls": [{"id": "call_B", "type": "function",
                                 "function": {"name": "bash", "arguments": "{\"command\":\"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\"}"}}],
                 "extra": {"actions": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "tool_call_id": "call_B"}],
                           "response": {"usage": {"prompt_tokens": 150, "completion_tokens": 9}}}},
                {"role": "exit", "content": "diff", "extra": {"exit_status": "Submitted", "submission": "diff"}}
            ]
        })
    }

    #[test]
    fn v2_tool_calls_pair_with_tool_messages_and_exit_answers_the_submit() {
        let t = import(&Node::root(&v2_doc()), "x").unwrap();
        let roles: Vec<_> = t.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "tool", "user", "assistant", "tool"]
        );
        assert_eq!(t.messages[2].tool_calls[0].id, "call_A");
        assert_eq!(t.messages[2].tool_calls[0].arguments, json!({"command": "ls"}));
        assert_eq!(t.messages[2].content, "");
        assert_eq!(t.messages[3].tool_call_id.as_deref(), Some("call_A"));
        assert_eq!(t.messages[3].name.as_deref(), Some("bash"));
        assert!(!t.messages[3].is_error);
        assert_eq!(t.messages[4].kind.as_deref(), Some("format_error"));
        assert_eq!(t.messages[5].reasoning.as_deref(), Some("done"));
        let last = &t.messages[6];
        assert_eq!(last.tool_call_id.as_deref(), Some("call_B"));
        assert_eq!(last.kind.as_deref(), Some("submission"));
        assert_eq!(last.content, "diff");
        assert_eq!(t.messages[2].usage.unwrap().cache_read, 64);
        assert_eq!(t.recorded_usage().input, 250);
        assert_eq!(t.meta.model.as_deref(), Some("openai/gpt-5-mini"));
        assert_eq!(t.meta.cost_usd, Some(0.25));
        assert_eq!(
            t.meta.outcome.as_ref().and_then(|o| o.status.as_deref()),
            Some("Submitted")
        );
        assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    }

    #[test]
    fn v2_exit_answers_the_submit_call_not_an_earlier_one_of_its_message() {
        // Two calls in the last message naming the marker, the submit second: mini-swe-agent
        // ran the grep, then raised Submitted on the submit command; neither got an
        // observation.
        let mut doc = v2_doc();
        let msgs = doc["messages"].as_array_mut().unwrap();
        msgs[5]["tool_calls"] = json!([
            {"id": "call_L", "type": "function",
             "function": {"name": "bash", "arguments": "{\"command\":\"grep -rn COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT .\"}"}},
            {"id": "call_B", "type": "function",
             "function": {"name": "bash", "arguments": "{\"command\":\"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\"}"}}
        ]);
        let t = import(&Node::root(&doc), "x").unwrap();
        let last = t.messages.last().unwrap();
        assert_eq!(last.tool_call_id.as_deref(), Some("call_B"));
        assert_eq!(last.kind.as_deref(), Some("submission"));
        assert!(
            t.meta.warnings.iter().any(|w| w.contains("have no recorded result")),
            "{:?}",
            t.meta.warnings
        );
    }

    /// An exit that answers no call (limits, an API error) is no message: its status is the
    /// outcome, and a text beyond the status (an exception) is named, not dropped silently.
    #[test]
    fn v2_exit_without_an_open_call_is_the_outcome_and_a_longer_text_is_named() {
        let mut doc = v2_doc();
        let msgs = doc["messages"].as_array_mut().unwrap();
        msgs.truncate(4);
        msgs.push(json!({"role": "exit", "content": "LimitsExceeded",
                         "extra": {"exit_status": "LimitsExceeded", "submission": ""}}));
        doc["info"]["exit_status"] = json!("LimitsExceeded");
        let t = import(&Node::root(&doc), "x").unwrap();
        assert_eq!(t.messages.len(), 4);
        assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
        assert_eq!(
            t.meta.outcome.as_ref().and_then(|o| o.status.as_deref()),
            Some("LimitsExceeded")
        );

        let msgs = doc["messages"].as_array_mut().unwrap();
        msgs[4] = json!({"role": "exit", "content": "litellm.RateLimitError: quota",
                         "extra": {"exit_status": "RateLimitError", "submission": ""}});
        let t = import(&Node::root(&doc), "x").unwrap();
        assert_eq!(t.messages.len(), 4);
        assert_eq!(t.meta.warnings.len(), 1, "{:?}", t.meta.warnings);
        assert!(t.meta.warnings[0].starts_with("$.messages[4]: the exit message (exit status RateLimitError, 29 characters)"));
    }

    /// A result mini-swe-agent marked with `exception_info` (a timeout, an action it did not
    /// execute) is an error; a rejected response recorded in `extra.response` (mini-swe-agent
    /// 2.4 keeps it) is named in a warning, since it never became a message.
    #[test]
    fn v2_exception_results_are_errors_and_a_kept_rejected_response_is_named() {
        let mut doc = v2_doc();
        doc["messages"][3]["extra"]["exception_info"] = json!("action was not executed");
        doc["messages"][4]["extra"]["response"] = json!({"usage": {"prompt_tokens": 120}});
        let t = import(&Node::root(&doc), "x").unwrap();
        assert!(t.messages[3].is_error);
        assert_eq!(t.meta.warnings.len(), 1, "{:?}", t.meta.warnings);
        assert!(t.meta.warnings[0].starts_with("$.messages[4]: the model response mini-swe-agent rejected"));
        // The text-based model keeps it in `extra.model_response`.
        let mut doc = v2_doc();
        doc["messages"][4]["extra"]["model_response"] = json!("THOUGHT: no command");
        let t = import(&Node::root(&doc), "x").unwrap();
        assert!(
            t.meta.warnings.iter().any(|w| w.contains("only in extra.model_response")),
            "{:?}",
            t.meta.warnings
        );
    }

    /// The text-based model of mini-swe-agent 2 (`LitellmTextbasedModel`): no `tool_calls`; the
    /// commands it parsed (`extra.actions`) are the calls, and the user observations after them
    /// (`extra.returncode`) their results.
    #[test]
    fn v2_text_based_actions_become_calls_answered_by_observations() {
        let doc = json!({
            "trajectory_format": "mini-swe-agent-1.1",
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "THOUGHT\n```mswea_bash_command\nls\n```",
                 "extra": {"actions": [{"command": "ls"}]}},
                {"role": "user", "content": "<returncode>0</returncode>", "extra": {"returncode": 0, "raw_output": ""}},
                {"role": "user", "content": "<returncode>1</returncode>", "extra": {"returncode": 1}}
            ]
        });
        let t = import(&Node::root(&doc), "x").unwrap();
        assert_eq!(t.messages[2].tool_calls[0].arguments, json!({"command": "ls"}));
        assert_eq!(t.messages[3].role.as_str(), "tool");
        assert_eq!(
            t.messages[3].tool_call_id.as_deref(),
            Some(t.messages[2].tool_calls[0].id.as_str())
        );
        // An observation with no call open (a human's command) stays a user message.
        assert_eq!(t.messages[4].role.as_str(), "user");
        assert_eq!(t.messages[4].kind.as_deref(), Some("observation"));
    }

    /// Shapes the importer does not read are refused where they are: a Responses-API item, a
    /// role mini-swe-agent 2 does not write, a trajectory_format of another version, and a v2
    /// role inside a v1 file.
    #[test]
    fn unread_shapes_are_refused_by_position() {
        let mut doc = v2_doc();
        doc["messages"][3] = json!({"type": "function_call_output", "call_id": "call_A", "output": "x"});
        let e = import(&Node::root(&doc), "x").unwrap_err();
        assert_eq!(e.location, "$.messages[3]");
        assert!(e.message.contains("Responses-API item (type \"function_call_output\")"), "{}", e.message);

        let mut doc = v2_doc();
        doc["messages"][2] = json!({"object": "response", "output": []});
        let e = import(&Node::root(&doc), "x").unwrap_err();
        assert!(e.message.contains("(object \"response\")"), "{}", e.message);

        let mut doc = v2_doc();
        doc["messages"][1]["role"] = json!("robot");
        let e = import(&Node::root(&doc), "x").unwrap_err();
        assert_eq!(e.location, "$.messages[1].role");

        let mut doc = v2_doc();
        doc["trajectory_format"] = json!("mini-swe-agent-2");
        let e = import(&Node::root(&doc), "x").unwrap_err();
        assert_eq!(e.location, "$.trajectory_format");

        let mut doc = v2_doc();
        doc["trajectory_format"] = json!("mini-swe-agent-1");
        let e = import(&Node::root(&doc), "x").unwrap_err();
        assert_eq!(e.location, "$.messages[2].tool_calls");
        assert!(e.message.contains("mini-swe-agent 2 writes this"), "{}", e.message);
    }

    /// A refusal LiteLLM recorded on a 2.x message (`provider_specific_fields.refusal`, as in
    /// the real files, where it is null) is its text, with a warning; a completion a content
    /// filter or the token limit stopped (`extra.response.choices[0].finish_reason`) is warned
    /// of; the real files' `tool_calls` finish is not.
    #[test]
    fn v2_refusal_and_a_cut_finish_are_warned_of() {
        let mut doc = v2_doc();
        let a = &mut doc["messages"][2];
        a["provider_specific_fields"]["refusal"] = json!("I can't help with that.");
        a["extra"]["response"]["choices"] =
            json!([{"finish_reason": "content_filter", "message": {"content": null}}]);
        doc["messages"][5]["extra"]["response"]["choices"] = json!([{"finish_reason": "length"}]);
        let t = import(&Node::root(&doc), "x").unwrap();
        assert_eq!(t.messages[2].content, "I can't help with that.");
        assert_eq!(t.messages[2].tool_calls.len(), 1);
        assert_eq!(t.meta.warnings.len(), 3, "{:?}", t.meta.warnings);
        assert_eq!(
            t.meta.warnings[0],
            "$.messages[2].provider_specific_fields.refusal: the model refused (`refusal`): the \
             message is the refusal's text"
        );
        assert!(t.meta.warnings[1].starts_with(
            "$.messages[2].extra.response.choices[0].finish_reason: the model's output was \
             stopped by a content filter"
        ));
        assert!(t.meta.warnings[2].starts_with(
            "$.messages[5].extra.response.choices[0].finish_reason: the model's output was \
             stopped at its output token limit (\"length\")"
        ));
        let mut doc = v2_doc();
        doc["messages"][2]["extra"]["response"]["choices"] =
            json!([{"finish_reason": "tool_calls"}]);
        assert!(import(&Node::root(&doc), "x").unwrap().meta.warnings.is_empty());
    }

    /// 1.x: the refusal is in the raw completion's message
    /// (`extra.response.choices[0].message.refusal`, null in the real files) and follows the
    /// content; a `length` finish (one in `datasets/mini-swe-agent`) is warned of.
    #[test]
    fn v1_refusal_and_a_length_finish_are_warned_of() {
        let doc = json!({
            "trajectory_format": "mini-swe-agent-1",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "",
                 "extra": {"response": {"choices": [{"finish_reason": "stop",
                           "message": {"content": null, "refusal": "No."}}]}}},
                {"role": "user", "content": "Please always provide EXACTLY ONE action"},
                {"role": "assistant", "content": "THOUGHT: first I will",
                 "extra": {"response": {"choices": [{"finish_reason": "length",
                           "message": {"content": "THOUGHT: first I will", "refusal": null}}]}}}
            ]
        });
        let t = import(&Node::root(&doc), "x").unwrap();
        assert_eq!(t.messages[2].content, "No.");
        assert_eq!(t.messages[4].content, "THOUGHT: first I will");
        assert_eq!(
            t.meta.warnings,
            [
                "$.messages[2].extra.response.choices[0].message.refusal: the model refused \
                 (`refusal`): the message is the refusal's text",
                "$.messages[4].extra.response.choices[0].finish_reason: the model's output was \
                 stopped at its output token limit (\"length\"): the message is the text it \
                 produced before it stopped"
            ]
        );
    }

    #[test]
    fn action_regex_matches_python_semantics() {
        assert_eq!(actions("THOUGHT\n```bash\nls -la\n```"), ["ls -la"]);
        assert_eq!(actions("```bash  \n a \n b\n```\n```bash\nc\n```").len(), 2);
        assert!(actions("```bash\nno closing fence").is_empty());
        assert_eq!(py_strip("\u{1f} x \u{a0}\n"), "x");
    }

    #[test]
    fn converts_calls_observations_and_format_errors() {
        let doc = json!({
            "trajectory_format": "mini-swe-agent-1", "instance_id": "i-1",
            "info": {"exit_status": "Submitted", "model_stats": {"instance_cost": 0.5, "api_calls": 2},
                     "config": {"model": {"model_name": "m"}}},
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "<pr_description>\nConsider the following PR description:\nfix it\n</pr_description>"},
                {"role": "assistant", "content": "two\n```bash\na\n```\n```bash\nb\n```",
                 "extra": {"response": {"usage": {"prompt_tokens": 10, "completion_tokens": 2,
                           "prompt_tokens_details": {"cached_tokens": 4}}}}},
                {"role": "user", "content": "Please always provide EXACTLY ONE action"},
                {"role": "assistant", "content": "ok\n```bash\n  ls  \n```",
                 "extra": {"response": {"usage": {"prompt_tokens": 20, "completion_tokens": 3},
                           "choices": [{"message": {"reasoning": "hmm"}}]}}},
                {"role": "user", "content": "<returncode>0</returncode>"}
            ]
        });
        let t = import(&Node::root(&doc), "x").unwrap();
        let roles: Vec<_> = t.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "user", "assistant", "tool"]
        );
        assert_eq!(t.messages[3].kind.as_deref(), Some("format_error"));
        assert_eq!(t.messages[4].tool_calls[0].id, "call_1");
        assert_eq!(
            t.messages[4].tool_calls[0].arguments,
            json!({"command": "ls"})
        );
        assert_eq!(t.messages[5].tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(t.messages[2].usage.unwrap().cache_read, 4);
        assert_eq!(t.messages[4].reasoning.as_deref(), Some("hmm"));
        assert_eq!(t.recorded_usage().input, 30);
        assert_eq!(t.meta.model.as_deref(), Some("m"));
    }

    #[test]
    fn wrong_types_name_the_path() {
        let doc = json!({"messages": [{"role": "user", "content": ["x"]}]});
        let e = import(&Node::root(&doc), "x").unwrap_err();
        assert_eq!(e.location, "$.messages[0].content");
        let doc = json!({"messages": [{"role": "robot", "content": ""}]});
        assert_eq!(
            import(&Node::root(&doc), "x").unwrap_err().location,
            "$.messages[0].role"
        );
    }
}
