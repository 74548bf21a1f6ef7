//! OpenAI chat messages → canonical traces. Accepted shapes: a JSON array of messages, an object
//! `{messages:[…], model?, tools?}`, an array of such conversation objects, JSON Lines of
//! messages (one trace), or JSON Lines of conversations (one trace per line, id
//! `<stem>__L<line>`).
//!
//! Content: a string, or parts (`json::content_text`): text parts, a `refusal` part by its
//! `refusal` text, other parts as a `[type]` placeholder with a warning; an assistant message's
//! own `refusal` (what Chat Completions returns, `content` null) is its text too, each refusal
//! with a warning ([`refusal_warning`]) saying the message is one. A message list carries no
//! `finish_reason` (it is the response's `choices[i]`, not the message's): none is read here.
//!
//! Roles `system`/`developer` → system, `function` (legacy) → tool. Tool calls
//! `{id, function:{name, arguments}}` (arguments parsed from their JSON string, key order kept)
//! and the legacy `function_call`. A tool message pairs with the most recent open call of its
//! `tool_call_id`; a reused id is rewritten to stay unique (see `Calls`).

use super::json::{content_text, parse_arguments, Node, Res};
use super::mini_swe::openai_usage;
use super::{tool_calls, CallShape, Calls, Input};
use serde_json::Value;
use crate::trace::model::{Message, SourceFormat, ToolCall, Trace, TraceMeta};
use super::detect::chat_flavor;
use super::Importer;

/// OpenAI chat conversations: any list of `{role, content}` messages not claimed by another
/// format (plain-text conversations read the same in both chat formats).
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Openai,
    detect: |shape| chat_flavor(shape).is_some(),
    import,
};

pub fn import(input: &mut Input, stem: &str) -> Res<Vec<Trace>> {
    import_shapes(input, stem, SourceFormat::Openai, convert_message)
}

/// Converter of one message of a chat format into `t`; `calls` carries the open tool calls
/// from one message to the next.
pub type Convert = fn(&Node<'_>, &mut Trace, &mut Calls) -> Res<()>;

/// The container shapes shared by OpenAI and Anthropic message lists (see the module docs).
/// Conversations and messages are moved out of the input and each is dropped once converted,
/// so the parsed tree shrinks while the trace grows.
pub fn import_shapes(
    input: &mut Input,
    stem: &str,
    format: SourceFormat,
    convert: Convert,
) -> Res<Vec<Trace>> {
    match input {
        Input::Json(v) => {
            if let Value::Array(items) = v {
                let items = std::mem::take(items);
                if items.first().is_some_and(|c| Node::root(c).has("messages")) {
                    return items
                        .into_iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let path = format!("$[{i}]");
                            let id = conv_id(&Node::at(&c, path.clone()), stem, &format!("{i}"))?;
                            conversation(c, path, &id, format, convert)
                        })
                        .collect();
                }
                let mut t = Trace::new(TraceMeta::new(stem, format));
                messages(items, "$", &mut t, convert)?;
                Ok(vec![t])
            } else {
                let v = std::mem::take(v);
                Ok(vec![conversation(v, "$".into(), stem, format, convert)?])
            }
        }
        Input::Lines(lines) => {
            let lines = std::mem::take(lines);
            if lines
                .first()
                .is_some_and(|(_, v)| v.get("messages").is_some())
            {
                let one = lines.len() == 1;
                lines
                    .into_iter()
                    .map(|(n, v)| {
                        let node = Node::line_root(&v, n);
                        let id = if one {
                            stem.to_string()
                        } else {
                            conv_id(&node, stem, &format!("L{n}"))?
                        };
                        let path = node.path;
                        conversation(v, path, &id, format, convert)
                    })
                    .collect()
            } else {
                let mut t = Trace::new(TraceMeta::new(stem, format));
                let mut calls = Calls::default();
                for (n, v) in lines {
                    convert(&Node::line_root(&v, n), &mut t, &mut calls)?;
                }
                Ok(vec![t])
            }
        }
    }
}

/// Convert the messages of the array at `path` one by one, dropping each once converted.
fn messages(items: Vec<Value>, path: &str, t: &mut Trace, convert: Convert) -> Res<()> {
    let mut calls = Calls::default();
    for (i, m) in items.into_iter().enumerate() {
        convert(&Node::at(&m, format!("{path}[{i}]")), t, &mut calls)?;
    }
    Ok(())
}

/// `<stem>__<id field>` when the conversation has an id, else `<stem>__<fallback>`.
fn conv_id(c: &Node<'_>, stem: &str, fallback: &str) -> Res<String> {
    let key = c.key("id").scalar_text().ok().flatten();
    Ok(format!(
        "{stem}__{}",
        key.unwrap_or_else(|| fallback.to_string())
    ))
}

/// One `{messages, model?, tools?, system?}` object at `path` (`system`, Anthropic's top-level
/// system prompt, becomes the first message).
fn conversation(
    mut c: Value,
    path: String,
    id: &str,
    format: SourceFormat,
    convert: Convert,
) -> Res<Trace> {
    let node = Node::at(&c, path);
    node.obj()?;
    let mut meta = TraceMeta::new(id, format);
    meta.model = node.key("model").opt_str()?.map(String::from);
    meta.tools = node
        .key("tools")
        .opt_items()?
        .into_iter()
        .map(|n| n.v.clone())
        .collect();
    let mut t = Trace::new(meta);
    let system = node.key("system");
    if !system.is_null() {
        t.messages.push(Message::system(content_text(&system, &mut t.meta.warnings)?));
    }
    let msgs = node.key("messages");
    if !msgs.v.is_array() {
        return Err(msgs.expected("an array"));
    }
    let msgs_path = msgs.path;
    let items = match c.get_mut("messages") {
        Some(Value::Array(a)) => std::mem::take(a),
        _ => Vec::new(),
    };
    messages(items, &msgs_path, &mut t, convert)?;
    Ok(t)
}

/// The warning for a refusal imported as an assistant message's text: at `at`, the field or
/// part that held it (`what`: "`refusal`", "a `refusal` part", …). The refusal is the model's
/// answer and is kept as text, as everywhere (`json::part_text`); this says the message is one,
/// in the wording of `anthropic::stop_warning`.
pub fn refusal_warning(at: &str, what: &str) -> String {
    format!("{at}: the model refused ({what}): the message is the refusal's text")
}

/// `content` with the refusal `refusal` (held at `at`, the `what` of [`refusal_warning`])
/// after it on a line of its own (the refusal alone when there is no other text), and the
/// warning saying the message is one.
pub fn with_refusal(
    content: String,
    refusal: &str,
    at: &Node<'_>,
    what: &str,
    warnings: &mut Vec<String>,
) -> String {
    warnings.push(refusal_warning(&at.path, what));
    if content.is_empty() {
        refusal.to_string()
    } else {
        format!("{content}\n{refusal}")
    }
}

/// The warning for a model call a content filter stopped (`finish_reason` or `stop_reason`
/// `"content_filter"`, the field at `at`): its message is what the model produced before the
/// filter stopped it (possibly nothing).
pub fn content_filter_warning(at: &Node<'_>) -> String {
    format!(
        "{}: the model's output was stopped by a content filter (\"content_filter\"): the \
         message is the text it produced before it stopped",
        at.path
    )
}

/// The warning for a model call its output token limit stopped (`finish_reason: "length"`,
/// a Responses `incomplete_details.reason: "max_output_tokens"`: `value`, the field at `at`): its
/// message is what the model produced before the limit, cut short (its usage counts every
/// token it generated).
pub fn token_limit_warning(at: &Node<'_>, value: &str) -> String {
    format!(
        "{}: the model's output was stopped at its output token limit ({}): the message is \
         the text it produced before it stopped",
        at.path,
        crate::output::quoted(value)
    )
}

/// Convert a list of OpenAI messages into `t`.
pub fn convert(msgs: &[Node<'_>], t: &mut Trace) -> Res<()> {
    let mut calls = Calls::default();
    for m in msgs {
        convert_message(m, t, &mut calls)?;
    }
    Ok(())
}

/// Convert one OpenAI message into `t`.
pub fn convert_message(m: &Node<'_>, t: &mut Trace, calls: &mut Calls) -> Res<()> {
    {
        m.obj()?;
        let role = m.key("role").str()?;
        let content = content_text(&m.key("content"), &mut t.meta.warnings)?;
        let msg = match role {
            "system" | "developer" => Message::system(content),
            "user" => Message::user(content),
            "assistant" => {
                let mut tool_calls: Vec<ToolCall> = tool_calls(
                    &m.key("tool_calls"),
                    CallShape::OpenAi,
                    calls,
                    &mut t.meta.warnings,
                )?
                .into_iter()
                .map(|(_, c)| c)
                .collect();
                let fc = m.key("function_call");
                if !fc.is_null() {
                    let name = fc.key("name").str()?;
                    let arguments = parse_arguments(&fc.key("arguments"), &mut t.meta.warnings)?;
                    let id = calls.issue("", name, &fc.path, &mut t.meta.warnings);
                    tool_calls.push(ToolCall {
                        id,
                        name: name.to_string(),
                        arguments,
                    });
                }
                // A refusal is the model's answer: Chat Completions returns it as the message's
                // `refusal` beside a null `content` (a `refusal` content part is read by
                // `content_text`). It is the message's text, and a warning says it is a refusal.
                let parts = m.key("content");
                if parts.v.is_array() {
                    for p in parts.items()? {
                        if p.key("refusal").v.is_string() {
                            t.meta.warnings.push(refusal_warning(&p.path, "a `refusal` part"));
                        }
                    }
                }
                let refusal = m.key("refusal");
                let content = match refusal.opt_str()? {
                    Some(r) if !r.is_empty() => {
                        with_refusal(content, r, &refusal, "`refusal`", &mut t.meta.warnings)
                    }
                    _ => content,
                };
                let mut a = Message::assistant(content, tool_calls);
                a.usage = openai_usage(&m.key("usage"))?;
                a.reasoning = match m.key("reasoning_content").opt_str()? {
                    Some(r) => Some(r.to_string()),
                    None => m
                        .key("reasoning")
                        .opt_str()
                        .ok()
                        .flatten()
                        .map(String::from),
                }
                .filter(|r| !r.is_empty());
                a
            }
            "tool" | "function" => {
                let recorded = m.key("tool_call_id").opt_str()?;
                let (id, name) =
                    calls.answer_or_warn(recorded, &m.path, &mut t.meta.warnings);
                let name = m.key("name").opt_str()?.map(String::from).unwrap_or(name);
                Message::tool(id, name, content)
            }
            other => {
                return Err(m.key("role").error(format!(
                    "expected \"system\", \"developer\", \"user\", \"assistant\", \"tool\" or \"function\", found {other}", other = crate::output::quoted(other)
                )))
            }
        };
        t.messages.push(msg);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::Role;
    use serde_json::json;

    fn one(v: serde_json::Value) -> Trace {
        import(&mut Input::Json(v), "s").unwrap().remove(0)
    }

    #[test]
    fn array_object_and_parts() {
        let msgs = json!([
            {"role": "developer", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"q\": 1}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "r"}
        ]);
        let t = one(msgs.clone());
        assert_eq!(t.messages.len(), 4);
        assert_eq!(t.messages[0].role, Role::System);
        assert_eq!(t.messages[3].name.as_deref(), Some("f"));
        assert_eq!(t.messages[2].tool_calls[0].arguments, json!({"q": 1}));
        let t2 = one(json!({"model": "gpt", "messages": msgs}));
        assert_eq!(t2.messages, t.messages);
        assert_eq!(t2.meta.model.as_deref(), Some("gpt"));
    }

    #[test]
    fn conversations_split_with_ids() {
        let v =
            json!([{"id": "c7", "messages": []}, {"messages": [{"role": "user", "content": "x"}]}]);
        let ts = import(&mut Input::Json(v), "s").unwrap();
        assert_eq!(
            ts.iter().map(|t| t.meta.id.as_str()).collect::<Vec<_>>(),
            ["s__c7", "s__1"]
        );
        let lines = vec![(1, json!({"messages": []})), (3, json!({"messages": []}))];
        let ts = import(&mut Input::Lines(lines), "s").unwrap();
        assert_eq!(ts[1].meta.id, "s__L3");
    }

    /// A refusal is text, whether a content part or the message's own `refusal` field: it is
    /// imported, with a warning naming where each refusal was (the message read as an ordinary
    /// answer, nothing said it was a refusal); a null `refusal` is none.
    #[test]
    fn a_refusal_is_imported_as_text() {
        let t = one(json!({"messages": [
            {"role": "user", "content": "how do I pick a lock?"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]},
            {"role": "user", "content": "why not?"},
            {"role": "assistant", "content": null, "refusal": "It could be used to break in."},
            {"role": "assistant", "content": "ok", "refusal": null}
        ]}));
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "how do I pick a lock?",
                "I can't help with that.",
                "why not?",
                "It could be used to break in.",
                "ok"
            ]
        );
        assert_eq!(
            t.meta.warnings,
            [
                "$.messages[1].content[0]: the model refused (a `refusal` part): the message is \
                 the refusal's text",
                "$.messages[3].refusal: the model refused (`refusal`): the message is the \
                 refusal's text"
            ]
        );
    }

    #[test]
    fn wrong_function_type_names_path() {
        let v = json!({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "",
            "tool_calls": [{"id": "a", "function": "oops"}]}]});
        let e = import(&mut Input::Json(v), "s").unwrap_err();
        assert_eq!(e.location, "$.messages[1].tool_calls[0].function");
        assert_eq!(e.message, "expected an object, found the string \"oops\"");
    }
}
