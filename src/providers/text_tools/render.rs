//! Text tool protocol, outgoing side: the "# Tools" prompt section, calls and results rendered
//! as text, correction messages and the final-answer request.

use serde_json::{Map, Value};

use super::super::{ChatRequest, Message, Role, ToolCall, ToolDef};

/// The reply format, shown after the tool list.
const FORMAT_RULES: &str = "To call a tool, reply with exactly one JSON block in this form and \
nothing after it:";
const AFTER_EXAMPLE: &str = "The result comes back in the next message. Call one tool per reply.\n\
When you have the final answer, reply with it in plain text, without a JSON block.";

/// The "# Tools" section added to the system message: one entry per tool (name, description,
/// arguments with type, required flag and description) and the reply format with an example
/// call of the first tool.
pub fn tool_instructions(tools: &[ToolDef]) -> String {
    let mut s = String::from("# Tools\nYou can call these tools:\n");
    for t in tools {
        s.push_str("- ");
        s.push_str(&t.name);
        let desc = t.description.trim();
        if !desc.is_empty() {
            s.push_str(": ");
            s.push_str(&one_line(desc));
        }
        s.push('\n');
        s.push_str("  arguments: ");
        s.push_str(&describe_arguments(&t.parameters));
        s.push('\n');
    }
    s.push('\n');
    s.push_str(FORMAT_RULES);
    s.push_str("\n```json\n");
    if let Some(first) = tools.first() {
        s.push_str(&example_call(first));
    }
    s.push_str("\n```\n");
    s.push_str(AFTER_EXAMPLE);
    s
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `{"pattern": string (required): what to search for, "path": string}` from a JSON Schema.
fn describe_arguments(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "{}".into();
    };
    let required = required_names(schema);
    let parts: Vec<String> = props
        .iter()
        .map(|(name, p)| {
            let mut d = format!("\"{name}\": {}", type_name(p));
            if required.iter().any(|r| r == name) {
                d.push_str(" (required)");
            }
            if let Some(desc) = p.get("description").and_then(Value::as_str) {
                d.push_str(": ");
                d.push_str(&one_line(desc));
            }
            d
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

fn type_name(p: &Value) -> String {
    match p.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".into(),
    }
}

pub(super) fn required_names(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `{"tool": "grep", "arguments": {"pattern": "..."}}`: required arguments (or the first one)
/// with a placeholder of their type.
fn example_call(t: &ToolDef) -> String {
    let mut args = Map::new();
    if let Some(props) = t.parameters.get("properties").and_then(Value::as_object) {
        let required = required_names(&t.parameters);
        for (name, p) in props {
            if required.is_empty() && !args.is_empty() {
                break;
            }
            if !required.is_empty() && !required.contains(name) {
                continue;
            }
            let placeholder = match p.get("type").and_then(Value::as_str) {
                Some("integer" | "number") => Value::from(1),
                Some("boolean") => Value::Bool(true),
                Some("array") => Value::Array(vec![]),
                Some("object") => Value::Object(Map::new()),
                _ => Value::String("...".into()),
            };
            args.insert(name.clone(), placeholder);
        }
    }
    call_json(&t.name, &Value::Object(args))
}

fn call_json(name: &str, arguments: &Value) -> String {
    let mut o = Map::new();
    o.insert("tool".into(), Value::String(name.into()));
    o.insert("arguments".into(), arguments.clone());
    Value::Object(o).to_string()
}

/// A call as the model is asked to write it: a fenced `json` block.
pub fn render_call(call: &ToolCall) -> String {
    let args = match &call.arguments {
        // Arguments recorded as raw text (malformed in the source) go back as they were.
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| call.arguments.clone()),
        v => v.clone(),
    };
    format!("```json\n{}\n```", call_json(&call.name, &args))
}

/// The text of a user message carrying consecutive tool results.
pub fn render_results(results: &[&Message]) -> String {
    results
        .iter()
        .map(|m| {
            let name = m.name.as_deref().unwrap_or("the tool");
            let head = if m.is_error {
                format!("Error from {name}:")
            } else {
                format!("Result of {name}:")
            };
            format!("{head}\n{}", m.content)
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The request as sent to the wrapped provider: no `tools`; the tools described in the system
/// message (added when the request has tools); assistant calls as fenced blocks; tool results
/// as user messages. Everything else (model, sampling, nonce) is kept.
pub fn render_request(request: &ChatRequest) -> ChatRequest {
    let mut messages: Vec<Message> = Vec::with_capacity(request.messages.len() + 1);
    let mut pending: Vec<&Message> = Vec::new();
    let flush = |pending: &mut Vec<&Message>, out: &mut Vec<Message>| {
        if !pending.is_empty() {
            out.push(Message::user(render_results(pending)));
            pending.clear();
        }
    };
    for m in &request.messages {
        if m.role == Role::Tool {
            pending.push(m);
            continue;
        }
        flush(&mut pending, &mut messages);
        let mut out = Message::new(m.role, m.content.clone());
        out.is_error = m.is_error && m.role != Role::Assistant;
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            let mut text = m.content.trim_end().to_string();
            for c in &m.tool_calls {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&render_call(c));
            }
            out.content = text;
        }
        messages.push(out);
    }
    flush(&mut pending, &mut messages);
    if !request.tools.is_empty() {
        let section = tool_instructions(&request.tools);
        match messages.first_mut() {
            Some(first) if first.role == Role::System => {
                let base = first.content.trim_end();
                first.content = if base.is_empty() {
                    section
                } else {
                    format!("{base}\n\n{section}")
                };
            }
            _ => messages.insert(0, Message::system(section)),
        }
    }
    ChatRequest {
        model: request.model.clone(),
        messages,
        tools: std::borrow::Cow::Borrowed(&[]),
        sampling: request.sampling.clone(),
        repeat_nonce: request.repeat_nonce.clone(),
        asking: request.asking,
    }
}

/// The user message answering an unusable call.
pub fn correction_message(reason: &str, tools: &[ToolDef]) -> String {
    let example = tools
        .first()
        .map(example_call)
        .unwrap_or_else(|| call_json("NAME", &Value::Object(Map::new())));
    format!(
        "Your tool call could not be used: {reason}.\nReply with exactly one JSON block like \
         ```json\n{example}\n``` or, if you know the answer, with the answer in plain text."
    )
}

/// Instruction closing the final-answer request.
pub(super) const FINAL_ANSWER: &str =
    "Do not call any tool again. Answer the question above in plain \
text, using these results.";

/// The request sent when the model repeats a call: no tools; the conversation up to the
/// caller's last user message (the task) rendered as text; then one user message holding the
/// task, every call made since with its result, and `FINAL_ANSWER`. Measured with the 0.5B
/// model: with the calls left in the history as JSON blocks it answered with one more JSON
/// block, even with the tools withheld; collapsed into evidence, it answered.
pub fn final_answer_request(request: &ChatRequest) -> ChatRequest {
    let task_at = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::User && !m.content.trim().is_empty());
    let (before, task, after) = match task_at {
        Some(i) => (
            &request.messages[..i],
            request.messages[i].content.trim(),
            &request.messages[i + 1..],
        ),
        None => (&request.messages[..], "", &request.messages[..0]),
    };
    let mut head = render_request(&ChatRequest {
        messages: before.to_vec(),
        tools: std::borrow::Cow::Borrowed(&[]),
        ..request.clone()
    });
    let mut evidence = Vec::new();
    for m in after {
        match m.role {
            Role::Assistant => {
                if !m.content.trim().is_empty() {
                    evidence.push(format!("- (assistant) {}", m.content.trim()));
                }
                for c in &m.tool_calls {
                    let result = after
                        .iter()
                        .find(|r| r.role == Role::Tool && r.tool_call_id.as_deref() == Some(&c.id));
                    let outcome = match result {
                        Some(r) if r.is_error => format!("failed:\n{}", r.content),
                        Some(r) => format!("returned:\n{}", r.content),
                        None => "returned nothing".to_string(),
                    };
                    evidence.push(format!(
                        "- {} {} {outcome}",
                        c.name,
                        normalized_args(&c.arguments)
                    ));
                }
            }
            Role::Tool => {}
            _ if m.content.trim().is_empty() => {}
            _ => evidence.push(format!("- ({}) {}", m.role.as_str(), m.content.trim())),
        }
    }
    let mut text = String::new();
    if !task.is_empty() {
        text.push_str(task);
        text.push_str("\n\n");
    }
    if !evidence.is_empty() {
        text.push_str("Your tool calls so far and their results:\n");
        text.push_str(&evidence.join("\n"));
        text.push_str("\n\n");
    }
    text.push_str(FINAL_ANSWER);
    head.messages.push(Message::user(text));
    head
}

/// Call arguments as an object (arguments recorded as a JSON-encoded string are decoded).
pub(super) fn normalized_args(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{call, conversation, tools};
    use super::super::parse::{parse_reply, Reply};
    use super::*;
    use serde_json::json;

    #[test]
    fn instructions_list_tools_arguments_and_format() {
        let s = tool_instructions(&tools());
        assert!(s.starts_with("# Tools\n"), "{s}");
        assert!(
            s.contains(
                "- grep: Search every file for a pattern; returns path:line:text.\n  arguments: \
                 {\"pattern\": string (required): text to search for, \"path\": string: \
                 directory to search in}"
            ),
            "{s}"
        );
        assert!(
            s.contains("- read_file: Read one file.\n  arguments: {\"path\": string (required), \"offset\": integer}"),
            "{s}"
        );
        // The example is a call of the first tool with its required argument only, and it
        // parses as a valid call itself.
        let example = "```json\n{\"tool\":\"grep\",\"arguments\":{\"pattern\":\"...\"}}\n```";
        assert!(s.contains(example), "{s}");
        assert_eq!(
            parse_reply(example, &tools()),
            call("grep", json!({"pattern": "..."}))
        );
        assert!(s.ends_with("without a JSON block."));
    }

    #[test]
    fn requests_render_tools_calls_and_results_as_text() {
        let r = render_request(&conversation());
        assert!(r.tools.is_empty());
        assert_eq!(r.repeat_nonce.as_deref(), Some("r1"));
        assert_eq!(r.sampling.temperature, Some(0.0));
        let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::User]
        );
        assert!(r.messages[0]
            .content
            .starts_with("You answer questions about files.\n\n# Tools\n"));
        assert_eq!(
            r.messages[2].content,
            "Searching.\n\n```json\n{\"tool\":\"grep\",\"arguments\":{\"pattern\":\"port\"}}\n```"
        );
        assert!(r.messages[2].tool_calls.is_empty());
        assert_eq!(
            r.messages[3].content,
            "Result of grep:\nnotes/db.md:3:staging port 6117\n\nError from read_file:\nno such file: x"
        );
        // Each rendered assistant call parses back to itself.
        assert_eq!(
            parse_reply(&r.messages[2].content, &tools()),
            Reply::Call {
                prose: "Searching.".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "port"})
            }
        );
        // No system message: one is added; no tools: no section.
        let mut plain = conversation();
        plain.messages.remove(0);
        assert_eq!(render_request(&plain).messages[0].role, Role::System);
        plain.tools.to_mut().clear();
        let r = render_request(&plain);
        assert_eq!(r.messages[0].role, Role::User);
        assert!(!r.messages.iter().any(|m| m.content.contains("# Tools")));
    }
}
