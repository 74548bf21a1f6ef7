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

use super::anthropic::{assistant_blocks, blocks_messages, user_blocks, AssistantParts};
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

/// A user text block that carries a tool's output, `[name] Result:` or
/// `[name for '<args>'] Result:` (also `… Error:`): (tool name, is error, the text after the
/// header). The arguments may hold `]`, quotes and newlines (a multi-line command), so the header
/// ends at the first `'] Result:` after ` for '`. With `known_only`, the name must be one of
/// [`TOOLS`]; otherwise any identifier is accepted (newer Cline versions call tools natively and
/// still return their output this way, under names such as `subagents` or `use_mcp_tool`).
fn result_header(text: &str, known_only: bool) -> Option<(&str, bool, &str)> {
    let rest = text.strip_prefix('[')?;
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    let name = &rest[..len];
    if name.is_empty() || (known_only && !TOOLS.contains(&name)) {
        return None;
    }
    let after_name = &rest[len..];
    let close = if let Some(t) = after_name.strip_prefix(']') {
        t
    } else if after_name.starts_with(" for ") {
        // The arguments are quoted; the header closes at the first quote-bracket followed by
        // the verdict.
        let (mut best, mut err) = (None, false);
        for (marker, is_err) in [("'] Result:", false), ("'] Error:", true)] {
            if let Some(i) = after_name.find(marker) {
                if best.is_none_or(|b| i < b) {
                    best = Some(i);
                    err = is_err;
                }
            }
        }
        let i = best?;
        let marker = if err { "'] Error:" } else { "'] Result:" };
        return Some((name, err, body_after(&after_name[i + marker.len()..])));
    } else {
        return None;
    };
    let close = close.trim_start_matches(' ');
    if let Some(b) = close.strip_prefix("Result:") {
        Some((name, false, body_after(b)))
    } else if let Some(b) = close.strip_prefix("Error:") {
        Some((name, true, body_after(b)))
    } else {
        None
    }
}

/// Cline's answer to a call it skipped (one tool per message):
/// `Tool [name] was not executed because …` → the tool's name.
fn not_executed(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("Tool [")?;
    let (name, after) = rest.split_once(']')?;
    after.starts_with(" was not executed").then_some(name)
}

/// The body after a result header: the rest of the header line is dropped if blank.
fn body_after(s: &str) -> &str {
    let t = s.trim_start_matches([' ', '\t']);
    t.strip_prefix("\r\n").or_else(|| t.strip_prefix('\n')).unwrap_or(t)
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
                            result_header(t, true).is_some() || t.contains("<environment_details>")
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
    // Read from `tasks/<task id>/api_conversation_history.json`, the stem is the task id.
    if !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()) {
        t.meta.task_id = Some(stem.to_string());
    }
    let mut calls = Calls::default();
    for (i, v) in items.into_iter().enumerate() {
        let m = Node::at(&v, format!("$[{i}]"));
        m.obj()?;
        let ts = m.key("ts").v.as_u64().map(|x| x.to_string());
        match m.key("role").str()? {
            "assistant" => {
                // A call's result comes in the user message right after it: calls still open
                // now were never answered (the task was interrupted and resumed), and must not
                // take the results of the calls that follow.
                calls.close_open();
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
                // The results of its server-side calls, if any (Anthropic's API writes them).
                t.messages.extend(parts.results);
            }
            "user" => {
                let content = m.key("content");
                // Text blocks: split at result headers; other blocks as Anthropic's.
                let mut pending: Vec<String> = Vec::new();
                let mut result: Option<(String, bool, Vec<String>)> = None;
                let flush_result = |t: &mut Trace, calls: &mut Calls, r: Option<(String, bool, Vec<String>)>| {
                    if let Some((name, err, body)) = r {
                        match calls.answer_named(&name).or_else(|| calls.answer_next()) {
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
                            if let Some((name, err, body)) = result_header(text, !calls.has_open()) {
                                flush_result(&mut t, &mut calls, result.take());
                                let body = (!body.is_empty()).then(|| body.to_string());
                                result = Some((name.to_string(), err, body.into_iter().collect()));
                            } else if let Some(name) = not_executed(text).filter(|_| calls.has_open()) {
                                // Cline runs one tool per message and answers the others so.
                                flush_result(&mut t, &mut calls, result.take());
                                flush_result(&mut t, &mut calls, Some((name.to_string(), true, vec![text.to_string()])));
                            } else if text.trim_start().starts_with("<environment_details>") || result.is_none() {
                                flush_result(&mut t, &mut calls, result.take());
                                pending.push(text.to_string());
                            } else if let Some((_, _, body)) = result.as_mut() {
                                body.push(text.to_string());
                            }
                        }
                        _ => {
                            flush_result(&mut t, &mut calls, result.take());
                            let ms = blocks_messages(vec![b.clone()], &mut calls, &mut t.meta.warnings)?;
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
                    "expected \"user\" or \"assistant\", found {other}", other = crate::output::quoted(other)
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
        let t = import(&mut Input::Json(v), "1700000000000").unwrap().remove(0);
        assert_eq!(t.meta.task_id.as_deref(), Some("1700000000000"));
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

    /// An image block of a user turn (a screenshot the person attached) becomes `[image]`,
    /// warned of at the block's own path (not at a path inside a list made for it).
    #[test]
    fn an_image_block_is_warned_of_at_its_path() {
        let v = json!([
            {"role": "user", "content": [{"type": "text", "text": "<task>\nmatch this\n</task>"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Looks done."}]}
        ]);
        let t = import(&mut Input::Json(v), "1").unwrap().remove(0);
        assert!(t.messages[0].content.ends_with("\n[image]"), "{:?}", t.messages[0].content);
        assert_eq!(
            t.meta.warnings,
            ["$[0].content[1]: an image was replaced by the placeholder \"[image]\"; its tokens are not counted"]
        );
    }

    /// The shape of newer Cline histories (seen in real task folders): native `tool_use` calls
    /// whose output still comes back as `[name for '…'] Result:` text; arguments holding `]`
    /// and newlines; a header name that differs from the call's (`subagents` for
    /// `use_subagents`); skipped calls answered "Tool [x] was not executed"; and a call left
    /// open by an interrupted task, which must not take the next call's result.
    #[test]
    fn native_calls_with_text_results_as_newer_cline_writes_them() {
        let env = "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>";
        let call = |id: &str, name: &str, input: Value| {
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}],
                   "metrics": {"tokens": {"prompt": 10, "completion": 5, "cached": 90}}, "ts": 1})
        };
        let v = json!([
            {"role": "user", "content": [{"type": "text", "text": "<task>\nfix\n</task>"}, {"type": "text", "text": env}]},
            call("t1", "execute_command", json!({"command": "node -e \"x[0]\"\necho 'a'"})),
            {"role": "user", "content": [{"type": "text", "text": "[execute_command for 'node -e \"x[0]\"\necho 'a''] Result:\nok"}, {"type": "text", "text": env}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t3", "name": "read_file", "input": {"path": "b"}}]},
            {"role": "user", "content": [
                {"type": "text", "text": "[read_file for 'a'] Result:\nA"},
                {"type": "text", "text": "Tool [read_file] was not executed because a tool has already been used in this message."},
                {"type": "text", "text": env}]},
            call("t4", "ask_followup_question", json!({"question": "?"})),
            {"role": "user", "content": [{"type": "text", "text": "[TASK RESUMPTION] This task was interrupted 3 days ago."}, {"type": "text", "text": env}]},
            call("t5", "use_subagents", json!({"prompt_1": "look"})),
            {"role": "user", "content": [{"type": "text", "text": "[subagents] Result:\nSubagent results"}, {"type": "text", "text": env}]}
        ]);
        assert_eq!(detect(&Input::Json(v.clone())), Ok(SourceFormat::Cline));
        let t = import(&mut Input::Json(v), "c").unwrap().remove(0);
        let answers: Vec<(&str, &str, bool)> = t
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| (m.tool_call_id.as_deref().unwrap(), m.content.as_str(), m.is_error))
            .collect();
        assert_eq!(answers.len(), 4, "{answers:?}");
        assert_eq!(answers[0], ("t1", "ok", false));
        assert_eq!(answers[1], ("t2", "A", false));
        assert_eq!(answers[2].0, "t3");
        assert!(answers[2].2, "a skipped call is an error result");
        assert_eq!(answers[3], ("t5", "Subagent results", false));
        // t4 stays unanswered: the resumption notice is the person's message.
        let problems = crate::trace::import::pairing_problems(&t);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("has no result"));
        assert!(t.messages.iter().any(|m| m.role == Role::User && m.content.starts_with("[TASK RESUMPTION]")));
        let u = t.messages[1].usage.unwrap();
        assert_eq!((u.input, u.cache_read, u.output), (100, 90, 5));
    }

    #[test]
    fn headers_close_at_the_quote_bracket_before_the_verdict() {
        assert_eq!(
            result_header("[search_files for 'a]b' in '*.rs'] Result:\nx", true),
            Some(("search_files", false, "x"))
        );
        assert_eq!(result_header("[subagents] Result:", true), None);
        assert_eq!(result_header("[subagents] Result:", false), Some(("subagents", false, "")));
        assert_eq!(result_header("[read_file for 'a'] Error: gone", true), Some(("read_file", true, "gone")));
        assert_eq!(result_header("[read_file for 'a'] said", true), None);
        assert_eq!(result_header("[TASK RESUMPTION] This task", false), None);
    }

    #[test]
    fn text_that_only_mentions_a_tool_is_kept() {
        let (rest, calls, _) = split_xml("use <read_file> to read, a < b");
        assert_eq!(rest, "use <read_file> to read, a < b");
        assert!(calls.is_empty());
    }
}
