//! Cline / Roo Code task histories (`tasks/<id>/api_conversation_history.json`) → one
//! canonical trace.
//!
//! The file is an Anthropic Messages array, but tools are called in the assistant's text as
//! XML (`<read_file>\n<path>src/a.rs</path>\n</read_file>`) and their output comes back as user
//! text blocks headed `[read_file for 'src/a.rs'] Result:` (or `[name] Result:`, `… Error:`),
//! so read as Anthropic it has calls without results. Here:
//! - each top-level XML element of a known Cline/Roo tool in an assistant text becomes a tool
//!   call (arguments: its child elements as strings), removed from the text; `<thinking>` →
//!   reasoning;
//! - a user text block headed `[<tool>…] Result:` (with the blocks that follow it, up to the
//!   next header or `<environment_details>`) is the result of the oldest open call (Cline runs
//!   one tool per message); `Error:` → `is_error`;
//! - native `tool_use` / `tool_result` blocks (newer versions) are read as Anthropic's;
//! - per-message metrics where recorded (`metrics.tokens {prompt, completion, cacheReads,
//!   cacheWrites}` or Roo's `tokensIn`/`tokensOut`) → usage; `ts` → timestamp.

use super::anthropic::{assistant_blocks, user_blocks, AssistantParts};
use super::detect::{str_of, Shape};
use super::json::{Node, Res};
use super::{Calls, Importer, Input};
use crate::trace::model::{Message, Role, SourceFormat, ToolCall, Trace, TraceMeta, Usage};
use serde_json::{Map, Value};

/// Tools Cline and Roo Code call in XML.
const TOOLS: [&str; 22] = [
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "apply_diff",
    "insert_content",
    "search_and_replace",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "codebase_search",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "ask_followup_question",
    "attempt_completion",
    "new_task",
    "plan_mode_respond",
    "load_mcp_documentation",
    "web_fetch",
    "switch_mode",
    "update_todo_list",
];

/// A user text block that carries a tool's output: `[name…] Result:` / `Error:`.
fn result_header(text: &str) -> Option<(&str, bool)> {
    let rest = text.strip_prefix('[')?;
    let end = rest.find(']')?;
    let head = &rest[..end];
    let name = head.split(' ').next()?;
    if !TOOLS.contains(&name) {
        return None;
    }
    let after = rest[end + 1..].trim_start();
    if after.starts_with("Result:") {
        Some((name, false))
    } else if after.starts_with("Error:") {
        Some((name, true))
    } else {
        None
    }
}

fn texts_of(o: &Map<String, Value>) -> impl Iterator<Item = &str> {
    o.get("content")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
}

/// Cline / Roo histories: an array of `{role, content: [blocks]}` where a user text block is a
/// `[tool…] Result:` header or holds `<environment_details>`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Cline,
    detect: |shape| match shape {
        Shape::Array(items, first) => {
            first.contains_key("role")
                && items.iter().filter_map(|v| v.as_object()).any(|o| {
                    str_of(o, "role") == Some("user")
                        && texts_of(o).any(|t| {
                            result_header(t).is_some() || t.contains("<environment_details>")
                        })
                })
        }
        _ => false,
    },
    import,
};

pub fn import(input: &mut Input, stem: &str) -> Res<Vec<Trace>> {
    let items = match input {
        Input::Json(Value::Array(items)) => std::mem::take(items),
        Input::Json(v) => return Err(Node::root(v).expected("an array of messages")),
        Input::Lines(lines) => std::mem::take(lines).into_iter().map(|(_, v)| v).collect(),
    };
    let mut t = Trace::new(TraceMeta::new(stem, SourceFormat::Cline));
    let mut calls = Calls::default();
    for (i, v) in items.into_iter().enumerate() {
        let m = Node::at(&v, format!("$[{i}]"));
        m.obj()?;
        let ts = m.key("ts").v.as_u64().map(|x| x.to_string());
        match m.key("role").str()? {
            "assistant" => {
                let mut parts = AssistantParts::default();
                assistant_blocks(&m.key("content"), &mut parts, &mut calls, &mut t.meta.warnings)?;
                let mut texts = Vec::new();
                let mut reasoning = parts.thinking.clone();
                let mut xml_calls = Vec::new();
                for text in &parts.texts {
                    let (rest, found, thinking) = split_xml(text);
                    texts.push(rest);
                    reasoning.extend(thinking);
                    for (name, args) in found {
                        let id = calls.issue("", &name, &m.path, &mut t.meta.warnings);
                        xml_calls.push(ToolCall {
                            id,
                            name,
                            arguments: Value::Object(args),
                        });
                    }
                }
                let mut a = Message::assistant(
                    texts.into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n"),
                    parts.calls,
                );
                a.tool_calls.extend(xml_calls);
                if !reasoning.is_empty() {
                    a.reasoning = Some(reasoning.join("\n"));
                }
                a.usage = metrics(&m)?;
                a.timestamp = ts;
                t.messages.push(a);
            }
            "user" => {
                let content = m.key("content");
                // Text blocks: split at result headers; other blocks as Anthropic's.
                let mut pending: Vec<String> = Vec::new();
                let mut result: Option<(bool, Vec<String>)> = None;
                let flush_result = |t: &mut Trace, calls: &mut Calls, r: Option<(bool, Vec<String>)>| {
                    if let Some((err, body)) = r {
                        match calls.answer_next() {
                            Some((id, name)) => {
                                let mut msg = Message::tool(id, name, body.join("\n"));
                                msg.is_error = err;
                                t.messages.push(msg);
                            }
                            None => t.messages.push(Message::user(body.join("\n"))),
                        }
                    }
                };
                if content.v.is_string() {
                    t.messages.extend(user_blocks(&content, &mut calls, &mut t.meta.warnings)?);
                    continue;
                }
                for b in content.opt_items()? {
                    let text = b.key("text").v.as_str();
                    match (b.key("type").v.as_str(), text) {
                        (Some("text"), Some(text)) => {
                            if let Some((_, err)) = result_header(text) {
                                flush_result(&mut t, &mut calls, result.take());
                                let body = text.split_once('\n').map(|x| x.1).unwrap_or("");
                                result = Some((err, vec![body.to_string()].into_iter().filter(|s| !s.is_empty()).collect()));
                            } else if text.trim_start().starts_with("<environment_details>") || result.is_none() {
                                flush_result(&mut t, &mut calls, result.take());
                                pending.push(text.to_string());
                            } else if let Some((_, body)) = result.as_mut() {
                                body.push(text.to_string());
                            }
                        }
                        _ => {
                            flush_result(&mut t, &mut calls, result.take());
                            let one = Value::Array(vec![b.v.clone()]);
                            let ms = user_blocks(&Node::at(&one, b.path.clone()), &mut calls, &mut t.meta.warnings)?;
                            for x in ms {
                                if x.role == Role::User {
                                    pending.push(x.content);
                                } else {
                                    t.messages.push(x);
                                }
                            }
                        }
                    }
                }
                flush_result(&mut t, &mut calls, result.take());
                if !pending.is_empty() {
                    let mut u = Message::user(pending.join("\n"));
                    u.timestamp = ts;
                    t.messages.push(u);
                }
            }
            other => {
                return Err(m.key("role").error(format!(
                    "expected \"user\" or \"assistant\", found {other:?}"
                )))
            }
        }
    }
    Ok(vec![t])
}

/// Usage recorded beside a message: Cline `metrics.tokens` or Roo `tokensIn`/`tokensOut`.
fn metrics(m: &Node<'_>) -> Res<Option<Usage>> {
    let tk = m.key("metrics").key("tokens");
    let (input, output, read, write) = if !tk.is_null() {
        (
            tk.key("prompt").opt_u64()?,
            tk.key("completion").opt_u64()?,
            tk.key("cacheReads").opt_u64()?.or(tk.key("cached").opt_u64()?),
            tk.key("cacheWrites").opt_u64()?,
        )
    } else {
        (
            m.key("tokensIn").opt_u64()?,
            m.key("tokensOut").opt_u64()?,
            m.key("cacheReads").opt_u64()?,
            m.key("cacheWrites").opt_u64()?,
        )
    };
    if input.is_none() && output.is_none() {
        return Ok(None);
    }
    let (read, write) = (read.unwrap_or(0), write.unwrap_or(0));
    // Anthropic-style counts: the prompt size is the three disjoint parts together.
    Ok(Some(Usage {
        input: input.unwrap_or(0) + read + write,
        output: output.unwrap_or(0),
        cache_read: read,
        cache_write: write,
    }))
}

/// A tool call written in XML: (tool name, arguments).
type XmlCall = (String, Map<String, Value>);

/// Split an assistant text into (text without tool elements, its calls, thinking).
fn split_xml(text: &str) -> (String, Vec<XmlCall>, Vec<String>) {
    let mut rest = String::new();
    let mut calls = Vec::new();
    let mut thinking = Vec::new();
    let mut s = text;
    while let Some(open) = s.find('<') {
        let tail = &s[open + 1..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let close = format!("</{name}>");
        let is_tool = TOOLS.contains(&name.as_str());
        let opened = tail[name.len()..].starts_with('>');
        match (opened && (is_tool || name == "thinking"), tail.find(&close)) {
            (true, Some(end)) => {
                rest.push_str(&s[..open]);
                let inner = &tail[name.len() + 1..end];
                if is_tool {
                    calls.push((name.clone(), params(inner)));
                } else {
                    thinking.push(inner.trim().to_string());
                }
                s = &tail[end + close.len()..];
            }
            _ => {
                rest.push_str(&s[..open + 1]);
                s = tail;
            }
        }
    }
    rest.push_str(s);
    (rest.trim().to_string(), calls, thinking)
}

/// The child elements of a tool element, as string arguments.
fn params(inner: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let mut s = inner;
    while let Some(open) = s.find('<') {
        let tail = &s[open + 1..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || !tail[name.len()..].starts_with('>') {
            s = tail;
            continue;
        }
        let close = format!("</{name}>");
        match tail.find(&close) {
            Some(end) => {
                let v = tail[name.len() + 1..end].trim_matches('\n');
                out.insert(name.clone(), Value::String(v.to_string()));
                s = &tail[end + close.len()..];
            }
            None => s = tail,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::import::detect::detect;
    use serde_json::json;

    #[test]
    fn xml_calls_pair_with_result_blocks() {
        let v = json!([
            {"role": "user", "content": [{"type": "text", "text": "<task>\nfix x\n</task>"}, {"type": "text", "text": "<environment_details>\n# cwd\n</environment_details>"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "<thinking>look first</thinking>\nReading.\n<read_file>\n<path>src/a.rs</path>\n</read_file>"}],
             "metrics": {"tokens": {"prompt": 10, "completion": 5, "cacheReads": 100, "cacheWrites": 20}}},
            {"role": "user", "content": [{"type": "text", "text": "[read_file for 'src/a.rs'] Result:"}, {"type": "text", "text": "fn a() {}"},
                {"type": "text", "text": "<environment_details>\n...\n</environment_details>"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "<attempt_completion>\n<result>done</result>\n</attempt_completion>"}]},
            {"role": "user", "content": [{"type": "text", "text": "[attempt_completion] Result:\nThe user denied this operation."}]}
        ]);
        assert_eq!(detect(&Input::Json(v.clone())), Ok(SourceFormat::Cline));
        let t = import(&mut Input::Json(v), "c").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::User, Role::Assistant, Role::Tool]
        );
        let a = &t.messages[1];
        assert_eq!(a.content, "Reading.");
        assert_eq!(a.reasoning.as_deref(), Some("look first"));
        assert_eq!(a.tool_calls[0].name, "read_file");
        assert_eq!(a.tool_calls[0].arguments, json!({"path": "src/a.rs"}));
        assert_eq!(a.usage.unwrap().input, 130);
        assert_eq!(t.messages[2].content, "fn a() {}");
        assert_eq!(t.messages[2].tool_call_id.as_deref(), Some(a.tool_calls[0].id.as_str()));
        assert!(t.messages[3].content.starts_with("<environment_details>"));
        assert_eq!(t.messages[5].content, "The user denied this operation.");
    }

    #[test]
    fn text_that_only_mentions_a_tool_is_kept() {
        let (rest, calls, _) = split_xml("use <read_file> to read, a < b");
        assert_eq!(rest, "use <read_file> to read, a < b");
        assert!(calls.is_empty());
    }
}
