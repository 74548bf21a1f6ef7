//! Gemini CLI chat sessions (`~/.gemini/tmp/<project hash>/chats/session-*.json`) → one
//! canonical trace.
//!
//! `{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`; each message is
//! `{id, timestamp, type: "user" | "gemini" | "info" | "error" | "warning", content, …}`:
//! - `user` → a user message (`content` a `PartListUnion`, read by `fn content`: a string, a
//!   part or a list of strings and parts; a file the person named with `@` is in it, inline data for an
//!   image or a PDF, which becomes a placeholder line with a warning);
//! - `gemini` → an assistant message: `content` its text, `thoughts [{subject, description}]`
//!   its reasoning (never its text), `toolCalls [{id, name, args, result, status}]` its calls,
//!   each followed by its result (`result` holds the parts the model got: the
//!   `functionResponse`, its own inline data, and beside it the inline or file data of a tool
//!   that read an image or a PDF, each a placeholder line with a warning;
//!   `status: "error"` → `is_error`), `tokens {input, output, cached, thoughts, tool, total}`
//!   its usage (`input` includes `cached`; `output` counts the thought tokens too, as the
//!   other formats' output does), `model` the model;
//! - `info`, `error`, `warning` are messages the CLI showed the person, not the model: skipped.

use super::detect::{arr_of, str_of, Shape};
use super::gemini::{media, response_content, Conv};
use super::json::{placeholder, Node, Res};
use super::Importer;
use crate::trace::model::{Message, SourceFormat, ToolCall, Trace, Usage};
use serde_json::{json, Value};

/// Gemini CLI sessions: `{sessionId, messages: [{type: user|gemini, …}]}`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::GeminiCli,
    detect: |shape| match shape {
        Shape::Object(o) => {
            o.contains_key("sessionId")
                && arr_of(o, "messages").is_some_and(|ms| {
                    ms.iter().any(|m| {
                        m.as_object()
                            .is_some_and(|m| matches!(str_of(m, "type"), Some("gemini" | "user")) && !m.contains_key("role"))
                    })
                })
        }
        _ => false,
    },
    import: |input, stem| {
        super::each_document_mut(input, stem, |v, path, id| {
            import_value(&Node::at(v, path), id).map(|t| vec![t])
        })
    },
};

fn import_value(root: &Node<'_>, id: &str) -> Res<Trace> {
    root.obj()?;
    let mut c = Conv::new(id, SourceFormat::GeminiCli);
    c.t.meta.task_id = root.key("sessionId").opt_str()?.map(String::from);
    for m in root.key("messages").items()? {
        m.obj()?;
        let ts = m.key("timestamp").opt_str()?.map(String::from);
        match m.key("type").str()? {
            "user" => {
                let mut u = Message::user(content(&m.key("content"), &mut c.t.meta.warnings)?);
                u.timestamp = ts;
                c.t.messages.push(u);
            }
            "gemini" => {
                if c.t.meta.model.is_none() {
                    c.t.meta.model = m.key("model").opt_str()?.map(String::from);
                }
                let mut results = Vec::new();
                let mut calls = Vec::new();
                for tc in m.key("toolCalls").opt_items()? {
                    tc.obj()?;
                    let name = tc.key("name").str()?;
                    let recorded = tc.key("id").opt_str()?;
                    let id = c.pairs.issue(recorded, name, &mut c.t.meta.warnings, &tc.path);
                    let args = tc.key("args");
                    calls.push(ToolCall {
                        id: id.clone(),
                        name: name.to_string(),
                        arguments: if args.is_null() { json!({}) } else { args.v.clone() },
                    });
                    // The result the model got: its parts, in order (the functionResponse, then the
                    // inline or file data the CLI sends beside it).
                    let mut texts = Vec::new();
                    for part in parts(&tc.key("result"))? {
                        let fr = part.key("functionResponse");
                        let text = if fr.is_null() {
                            self::part(&part, &mut c.t.meta.warnings)?
                        } else {
                            Some(response_content(&fr, &mut c.t.meta.warnings)?)
                        };
                        texts.extend(text.filter(|t| !t.is_empty()));
                    }
                    let status = tc.key("status").opt_str()?;
                    if tc.key("result").is_null() && status != Some("error") {
                        // Not run (cancelled, or the session ended first): the call stays open.
                        continue;
                    }
                    c.pairs.answer(recorded, name);
                    let mut r = Message::tool(id, name, texts.join("\n"));
                    r.is_error = matches!(status, Some("error" | "cancelled"));
                    r.timestamp = tc.key("timestamp").opt_str()?.map(String::from);
                    results.push(r);
                }
                let mut a = Message::assistant(content(&m.key("content"), &mut c.t.meta.warnings)?, calls);
                let mut thoughts = Vec::new();
                for th in m.key("thoughts").opt_items()? {
                    let subject = th.key("subject").opt_str()?.unwrap_or("");
                    let desc = th.key("description").opt_str()?.unwrap_or("");
                    thoughts.push(format!("{subject}: {}", desc.trim()));
                }
                if !thoughts.is_empty() {
                    a.reasoning = Some(thoughts.join("\n"));
                }
                let tok = m.key("tokens");
                if !tok.is_null() {
                    a.usage = Some(Usage {
                        input: tok.key("input").opt_u64()?.unwrap_or(0),
                        output: tok.key("output").opt_u64()?.unwrap_or(0)
                            + tok.key("thoughts").opt_u64()?.unwrap_or(0),
                        cache_read: tok.key("cached").opt_u64()?.unwrap_or(0),
                        cache_write: 0,
                    });
                }
                a.timestamp = ts;
                c.t.messages.push(a);
                c.t.messages.extend(results);
            }
            _ => {}
        }
    }
    Ok(c.finish())
}

/// The parts of a `PartListUnion` (a string, one part, or a list of strings and parts; `null`
/// or missing: none).
fn parts<'a>(n: &Node<'a>) -> Res<Vec<Node<'a>>> {
    match n.v {
        Value::Null => Ok(Vec::new()),
        Value::Array(_) => n.items(),
        Value::String(_) | Value::Object(_) => Ok(vec![n.clone()]),
        _ => Err(n.expected("a string, a part or a list of parts")),
    }
}

/// A message's `content` as text: its parts ([`part`]) joined by newlines.
fn content(n: &Node<'_>, warnings: &mut Vec<String>) -> Res<String> {
    let mut text = Vec::new();
    for p in parts(n)? {
        text.extend(part(&p, warnings)?);
    }
    Ok(text.join("\n"))
}

/// One part that is no function response: a string or a `text` part as it is, inline or file
/// data as its placeholder (`[image/png]`, `[application/pdf]`: [`media`]), any other part as
/// the placeholder of its field (`[functionCall]`, …); each placeholder warned of at the part's
/// path in `warnings`. `None` for an empty part.
fn part(p: &Node<'_>, warnings: &mut Vec<String>) -> Res<Option<String>> {
    match p.v {
        Value::String(s) => Ok(Some(s.clone())),
        Value::Object(o) => {
            if let Some(t) = p.key("text").opt_str()? {
                return Ok(Some(t.to_string()));
            }
            if let Some(m) = media(p, warnings)? {
                return Ok(Some(m));
            }
            Ok(o.keys().next().map(|k| placeholder(p, k, warnings)))
        }
        _ => Err(p.expected("a string or a part object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::import::detect::detect;
    use crate::trace::model::Role;

    #[test]
    fn calls_results_thoughts_and_tokens() {
        let v = json!({"sessionId": "s", "messages": [
            {"type": "user", "content": "list"},
            {"type": "info", "content": "shown to the person only"},
            {"type": "gemini", "content": "", "model": "gemini-3",
             "thoughts": [{"subject": "Plan", "description": "list the dir"}],
             "toolCalls": [{"id": "ls-1", "name": "list_directory", "args": {"dir_path": "/"},
                 "result": [{"functionResponse": {"id": "ls-1", "name": "list_directory", "response": {"output": "a\nb"}}}],
                 "status": "success"}],
             "tokens": {"input": 100, "output": 5, "cached": 40, "thoughts": 7, "tool": 0, "total": 112}},
            {"type": "gemini", "content": "two files"}
        ]});
        assert_eq!(detect(&crate::trace::import::Input::Json(v.clone())), Ok(SourceFormat::GeminiCli));
        let t = (IMPORTER.import)(&mut crate::trace::import::Input::Json(v), "g").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
        assert_eq!(t.messages[1].reasoning.as_deref(), Some("Plan: list the dir"));
        assert_eq!(
            t.messages[1].usage,
            Some(Usage { input: 100, output: 12, cache_read: 40, cache_write: 0 })
        );
        assert_eq!(t.messages[2].content, "a\nb");
        assert_eq!(t.messages[2].tool_call_id.as_deref(), Some("ls-1"));
        assert_eq!(t.meta.model.as_deref(), Some("gemini-3"));
    }

    fn warned(at: &str, noun: &str, p: &str) -> String {
        format!("{at}: {noun} was replaced by the placeholder \"[{p}]\"; its tokens are not counted")
    }

    /// A session detected as a Gemini CLI one, imported.
    fn import_json(v: serde_json::Value) -> Trace {
        use crate::trace::import::Input;
        assert_eq!(detect(&Input::Json(v.clone())), Ok(SourceFormat::GeminiCli));
        (IMPORTER.import)(&mut Input::Json(v), "g").unwrap().remove(0)
    }

    /// What the CLI records when the person names an image with `@`: a user `content` list
    /// holding inline data, which becomes a placeholder line in its place, warned of at its
    /// path (the import used to fail: "expected a string"); a content that is one part reads
    /// as a list of it.
    #[test]
    fn a_user_content_with_inline_data_is_imported() {
        let t = import_json(json!({"sessionId": "s", "messages": [
            {"type": "user", "content": [
                {"text": "what is wrong in @shot.png?"},
                {"text": "\n--- Content from referenced files ---"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"text": "\n--- End of content ---"}]},
            {"type": "gemini", "content": {"text": "The button is cut off."}}
        ]}));
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "what is wrong in @shot.png?\n\n--- Content from referenced files ---\n[image/png]\n\n--- End of content ---",
                "The button is cut off.",
            ]
        );
        assert_eq!(t.meta.warnings, [warned("$.messages[0].content[2]", "an image", "image/png")]);
    }

    /// What the CLI records when a tool reads a PDF or an image: inline data beside the
    /// functionResponse, or in its own `parts` (a model that takes multimodal function
    /// responses). Each is a placeholder line after the response's text, warned of at its path
    /// (they were dropped without a word).
    #[test]
    fn a_tool_results_inline_data_is_a_placeholder() {
        let t = import_json(json!({"sessionId": "s", "messages": [
            {"type": "user", "content": "read both"},
            {"type": "gemini", "content": "", "toolCalls": [
                {"id": "r1", "name": "read_file", "args": {"absolute_path": "/w/spec.pdf"},
                 "result": [
                    {"functionResponse": {"id": "r1", "name": "read_file",
                        "response": {"output": "Binary content provided (1 item(s))."}}},
                    {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}}],
                 "status": "success"},
                {"id": "r2", "name": "read_file", "args": {"absolute_path": "/w/b.png"},
                 "result": [{"functionResponse": {"id": "r2", "name": "read_file",
                    "response": {"output": "Binary content provided (1 item(s))."},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}}],
                 "status": "success"}]},
            {"type": "gemini", "content": "done"}
        ]}));
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "read both",
                "",
                "Binary content provided (1 item(s)).\n[application/pdf]",
                "Binary content provided (1 item(s)).\n[image/png]",
                "done",
            ]
        );
        assert_eq!(
            t.meta.warnings,
            [
                warned("$.messages[1].toolCalls[0].result[1]", "a document part", "application/pdf"),
                warned(
                    "$.messages[1].toolCalls[1].result[0].functionResponse.parts[0]",
                    "an image",
                    "image/png"
                ),
            ]
        );
    }
}
