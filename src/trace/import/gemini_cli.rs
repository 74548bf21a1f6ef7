//! Gemini CLI chat sessions (`~/.gemini/tmp/<project hash>/chats/session-*.json`) → one
//! canonical trace.
//!
//! `{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`; each message is
//! `{id, timestamp, type: "user" | "gemini" | "info" | "error" | "warning", content, …}`:
//! - `user` → a user message (`content` a string or a list of parts with `text`);
//! - `gemini` → an assistant message: `content` its text, `thoughts [{subject, description}]`
//!   its reasoning (never its text), `toolCalls [{id, name, args, result, status}]` its calls,
//!   each followed by its result (`result` holds the `functionResponse` parts the model got;
//!   `status: "error"` → `is_error`), `tokens {input, output, cached, thoughts, tool, total}`
//!   its usage (`input` includes `cached`; `output` counts the thought tokens too, as the
//!   other formats' output does), `model` the model;
//! - `info`, `error`, `warning` are messages the CLI showed the person, not the model: skipped.

use super::detect::{arr_of, str_of, Shape};
use super::gemini::{response_text, Conv};
use super::json::{content_text, Node, Res};
use super::Importer;
use crate::trace::model::{Message, SourceFormat, ToolCall, Trace, Usage};
use serde_json::json;

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
                let mut u = Message::user(content_text(&m.key("content"), &mut c.t.meta.warnings)?);
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
                    // The result the model got: the functionResponse parts, in order.
                    let mut texts = Vec::new();
                    for part in tc.key("result").opt_items()? {
                        let fr = part.key("functionResponse");
                        if fr.is_null() {
                            if let Some(t) = part.key("text").opt_str()? {
                                texts.push(t.to_string());
                            }
                        } else {
                            texts.push(response_text(&fr.key("response")));
                        }
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
                let mut a = Message::assistant(content_text(&m.key("content"), &mut c.t.meta.warnings)?, calls);
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
}
