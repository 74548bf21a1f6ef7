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

use super::json::{Node, Res};
use serde_json::Value;
use crate::trace::model::{Message, Outcome, SourceFormat, ToolCall, Trace, TraceMeta, Usage};
use regex::Regex;
use std::sync::OnceLock;
use super::detect::str_of;
use super::Importer;

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

/// Import the document `v` at `path`, moving its messages out and dropping each once converted.
pub fn import_value(v: &mut Value, path: String, id: &str) -> Res<Trace> {
    let root = Node::at(v, path.clone());
    root.obj()?;
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
    let mut t = Trace::new(meta);
    let mut k = 0usize;
    let mut pending: Option<String> = None;
    let mut after_rejected = false;
    for (m, m_path) in Node::take_items(v, path, "messages")? {
        let m = Node::at(&m, m_path);
        m.obj()?;
        let role = m.key("role").str()?;
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
            "tool" | "exit" => {
                // mini-swe-agent 2 writes tool-calling messages (`tool_calls`, role `tool`) and
                // an `exit` message under the same `trajectory_format`.
                return Err(m.key("role").error(format!(
                    "role {role:?}: a mini-swe-agent 2 (tool-calling) trajectory, which this \
                     importer does not read yet (it reads the text-action trajectories of \
                     mini-swe-agent 1); `--from openai` imports its chat messages without the \
                     recorded usage"
                )));
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A mini-swe-agent 2 trajectory (tool calls, role `tool`) under the same format string
    /// is named as such, with what imports it, not "expected … found a string".
    #[test]
    fn a_tool_calling_trajectory_is_named_not_misread() {
        let mut doc = json!({
            "trajectory_format": "mini-swe-agent-1.1",
            "info": {"mini_version": "2.2.8"},
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "a.py"}
            ]
        });
        let e = import_value(&mut doc, "$".into(), "t").unwrap_err();
        assert_eq!(e.location, "$.messages[3].role");
        assert!(e.message.contains("mini-swe-agent 2 (tool-calling)"), "{}", e.message);
        assert!(e.message.contains("--from openai"), "{}", e.message);
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
