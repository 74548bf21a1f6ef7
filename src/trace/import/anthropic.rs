//! Anthropic Messages → canonical traces (same container shapes as `openai`: a message array,
//! `{system?, messages, model?, tools?}`, conversations, JSON Lines).
//!
//! Content blocks: `text` → content, `tool_use` → tool call (`input` kept as the arguments),
//! `thinking` → reasoning (and, with its `signature`, kept whole in `thinking_blocks` beside
//! `redacted_thinking`, so a replay can send them back), `tool_result` (in user turns) → one `role: tool` message each, with
//! `is_error`; `server_tool_use` (a call the API runs: web search, web fetch, code execution) →
//! a tool call, answered by its `*_tool_result` block of the same turn, a tool message right
//! after the assistant message (web search results as titles and URLs, their encrypted page
//! contents warned of). An assistant message with `stop_reason: "refusal"` is the text the model
//! produced, with a warning ([`stop_warning`], which warns of an answer the output token limit
//! or the context window stopped too). Usage is normalized: `input = input_tokens + cache_read_input_tokens +
//! cache_creation_input_tokens` (Anthropic reports the three disjoint). The block helpers here
//! are shared with the Claude Code importer.

use super::json::{content_text, placeholder, Node, Res};
use super::openai::import_shapes;
use super::{Calls, Input};
use crate::trace::model::{Message, SourceFormat, ThinkingBlock, ToolCall, Trace, Usage};
use super::detect::chat_flavor;
use super::Importer;
use crate::output::quoted;
use serde_json::Value;

/// Anthropic Messages conversations (content blocks `tool_use`, `tool_result`, `thinking`, or a
/// top-level `system`).
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Anthropic,
    detect: |shape| chat_flavor(shape) == Some(SourceFormat::Anthropic),
    import,
};

pub fn import(input: &mut Input, stem: &str) -> Res<Vec<Trace>> {
    import_shapes(input, stem, SourceFormat::Anthropic, convert_message)
}

/// Anthropic `usage`, normalized so `input` includes cache reads and writes.
pub fn anthropic_usage(u: &Node<'_>) -> Res<Option<Usage>> {
    if u.is_null() {
        return Ok(None);
    }
    u.obj()?;
    let base = u.key("input_tokens").opt_u64()?.unwrap_or(0);
    let cache_read = u.key("cache_read_input_tokens").opt_u64()?.unwrap_or(0);
    let cache_write = u.key("cache_creation_input_tokens").opt_u64()?.unwrap_or(0);
    Ok(Some(Usage {
        input: base + cache_read + cache_write,
        output: u.key("output_tokens").opt_u64()?.unwrap_or(0),
        cache_read,
        cache_write,
    }))
}

/// The parts of an assistant turn.
#[derive(Debug, Default)]
pub struct AssistantParts {
    pub texts: Vec<String>,
    pub calls: Vec<ToolCall>,
    pub thinking: Vec<String>,
    /// The signed `thinking` and the `redacted_thinking` blocks, in order.
    pub blocks: Vec<ThinkingBlock>,
    /// The results of server-side calls (`web_search_tool_result`, … blocks of the same
    /// assistant turn), as tool messages to place after the assistant message.
    pub results: Vec<Message>,
}

impl AssistantParts {
    /// The assistant message, and the tool messages answering its server-side calls (to place
    /// right after it).
    pub fn into_messages(self) -> (Message, Vec<Message>) {
        let mut m = Message::assistant(self.texts.join("\n"), self.calls);
        if !self.thinking.is_empty() {
            m.reasoning = Some(self.thinking.join("\n"));
        }
        m.thinking_blocks = self.blocks;
        (m, self.results)
    }
}

/// The warning for an assistant message whose answer was stopped before the model ended it, if
/// `msg` is one (the Messages API's `stop_reason`): a refusal (`"refusal"`, Anthropic's
/// streaming classifiers stopping the answer), the output token limit (`"max_tokens"`) or the
/// context window (`"model_context_window_exceeded"`). The message is imported as the text the
/// model produced before it stopped (possibly none), as a refusal is everywhere
/// (`json::part_text`), and this says so.
pub fn stop_warning(msg: &Node<'_>) -> Res<Option<String>> {
    let stop = msg.key("stop_reason");
    match stop.opt_str()? {
        Some("refusal") => {}
        Some(r @ "max_tokens") => return Ok(Some(super::openai::token_limit_warning(&stop, r))),
        Some("model_context_window_exceeded") => {
            return Ok(Some(format!(
                "{}: the model's output was stopped at its context window \
                 (\"model_context_window_exceeded\"): the message is the text it produced \
                 before it stopped",
                stop.path
            )))
        }
        _ => return Ok(None),
    }
    let details = msg.key("stop_details");
    let why = match (
        details.key("category").v.as_str(),
        details.key("explanation").v.as_str(),
    ) {
        (Some(c), Some(e)) => format!(" ({}: {})", quoted(c), quoted(e)),
        (Some(c), None) => format!(" ({})", quoted(c)),
        (None, Some(e)) => format!(" ({})", quoted(e)),
        (None, None) => String::new(),
    };
    Ok(Some(format!(
        "{}: the model refused (stop_reason \"refusal\"{why}): the message is the text it \
         produced before it stopped",
        msg.key("stop_reason").path
    )))
}

/// The text of a server-side tool's result block (`web_search_tool_result`,
/// `web_fetch_tool_result`, `code_execution_tool_result`, …): a string or text parts as they
/// are; web search results (whose page contents are encrypted, unreadable here) as their titles
/// and URLs, with a warning; an error object (`*_error`, its `error_code`) as that code; any
/// other content as its JSON. Whether it is an error is the second value.
fn server_result_text(
    b: &Node<'_>,
    warnings: &mut Vec<String>,
) -> Res<(String, bool)> {
    let content = b.key("content");
    match content.v {
        Value::String(_) | Value::Null => Ok((content_text(&content, warnings)?, false)),
        Value::Array(items)
            if items
                .iter()
                .all(|i| i.get("type").and_then(Value::as_str) == Some("web_search_result")) =>
        {
            let mut lines = Vec::new();
            for r in content.items()? {
                let title = r.key("title").opt_str()?.unwrap_or("");
                let url = r.key("url").opt_str()?.unwrap_or("");
                lines.push(format!("{title}\n{url}"));
            }
            if !lines.is_empty() {
                warnings.push(format!(
                    "{}: the encrypted page contents of {} web search result(s) are not readable: \
                     the result holds their titles and URLs; their tokens are not counted",
                    content.path,
                    lines.len()
                ));
            }
            Ok((lines.join("\n\n"), false))
        }
        Value::Array(items)
            if items.iter().all(|i| {
                i.is_string() || i.get("text").is_some_and(Value::is_string)
            }) =>
        {
            Ok((content_text(&content, warnings)?, false))
        }
        Value::Object(o)
            if o
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("_error")) =>
        {
            let code = content.key("error_code").opt_str()?.unwrap_or("error");
            Ok((format!("[error: {code}]"), true))
        }
        v => Ok((serde_json::to_string(v).unwrap_or_default(), false)),
    }
}

/// Add the blocks of an assistant `content` (string or block list) to `parts`.
pub fn assistant_blocks(
    content: &Node<'_>,
    parts: &mut AssistantParts,
    calls: &mut Calls,
    warnings: &mut Vec<String>,
) -> Res<()> {
    if let Some(s) = content.v.as_str() {
        parts.texts.push(s.to_string());
        return Ok(());
    }
    for b in content.opt_items()? {
        b.obj()?;
        match b.key("type").str()? {
            "text" => parts.texts.push(b.key("text").str()?.to_string()),
            // A server-side call (`server_tool_use`: web search, web fetch, code execution) is
            // a call of this turn; its result is a block of the same turn (below).
            "tool_use" | "server_tool_use" => {
                let name = b.key("name").str()?;
                let recorded = b.key("id").opt_str()?.unwrap_or("");
                let input = b.key("input");
                let arguments = if input.is_null() {
                    serde_json::json!({})
                } else {
                    input.v.clone()
                };
                let id = calls.issue(recorded, name, &b.path, warnings);
                parts.calls.push(ToolCall {
                    id,
                    name: name.to_string(),
                    arguments,
                });
            }
            "thinking" => {
                if let Some(t) = b.key("thinking").opt_str()? {
                    // Claude Code 2.1 records the thinking of recent models as an empty text
                    // beside its signature (the thinking itself is in the signature): no
                    // reasoning text, the block kept whole.
                    if !t.is_empty() {
                        parts.thinking.push(t.to_string());
                    }
                    if let Some(sig) = b.key("signature").opt_str()? {
                        parts.blocks.push(ThinkingBlock::Thinking {
                            thinking: t.to_string(),
                            signature: sig.to_string(),
                        });
                    }
                }
            }
            "redacted_thinking" => {
                if let Some(data) = b.key("data").opt_str()? {
                    parts.blocks.push(ThinkingBlock::RedactedThinking {
                        data: data.to_string(),
                    });
                }
            }
            ty if ty.ends_with("_tool_result") && b.has("tool_use_id") => {
                let recorded = b.key("tool_use_id").str()?;
                let (id, name) = match calls.answer(recorded) {
                    Some(x) => x,
                    None => {
                        warnings.push(format!(
                            "{}: {} for {} follows no open server_tool_use",
                            b.path,
                            quoted(ty),
                            quoted(recorded)
                        ));
                        (recorded.to_string(), String::new())
                    }
                };
                let (text, is_error) = server_result_text(&b, warnings)?;
                let mut m = Message::tool(id, name, text);
                m.is_error = is_error;
                parts.results.push(m);
            }
            other => warnings.push(format!(
                "{}: content block of type {} skipped",
                b.path,
                quoted(other)
            )),
        }
    }
    Ok(())
}

/// The messages of a user turn: `tool_result` blocks become tool messages, runs of other blocks
/// one user message each, in block order.
pub fn user_blocks(
    content: &Node<'_>,
    calls: &mut Calls,
    warnings: &mut Vec<String>,
) -> Res<Vec<Message>> {
    if let Some(s) = content.v.as_str() {
        return Ok(vec![Message::user(s)]);
    }
    blocks_messages(content.opt_items()?, calls, warnings)
}

/// The messages of some blocks of a user turn (see [`user_blocks`]); a block of another type
/// than `tool_result` and `text` becomes its `[type]` placeholder, warned of in `warnings`.
pub fn blocks_messages(
    blocks: Vec<Node<'_>>,
    calls: &mut Calls,
    warnings: &mut Vec<String>,
) -> Res<Vec<Message>> {
    let mut out = Vec::new();
    let mut text: Vec<String> = Vec::new();
    for b in blocks {
        b.obj()?;
        match b.key("type").str()? {
            "tool_result" => {
                if !text.is_empty() {
                    out.push(Message::user(std::mem::take(&mut text).join("\n")));
                }
                let recorded = b.key("tool_use_id").str()?;
                let (id, name) = match calls.answer(recorded) {
                    Some(x) => x,
                    None => {
                        warnings.push(format!(
                            "{}: tool_result for {} follows no open tool_use",
                            b.path,
                            quoted(recorded)
                        ));
                        (recorded.to_string(), String::new())
                    }
                };
                let mut m = Message::tool(id, name, content_text(&b.key("content"), warnings)?);
                m.is_error = b.key("is_error").opt_bool()?.unwrap_or(false);
                out.push(m);
            }
            "text" => text.push(b.key("text").str()?.to_string()),
            other => text.push(placeholder(&b, other, warnings)),
        }
    }
    if !text.is_empty() {
        out.push(Message::user(text.join("\n")));
    }
    Ok(out)
}

/// Convert one Anthropic message into `t`.
pub fn convert_message(m: &Node<'_>, t: &mut Trace, calls: &mut Calls) -> Res<()> {
    {
        m.obj()?;
        match m.key("role").str()? {
            "user" => {
                let ms = user_blocks(&m.key("content"), calls, &mut t.meta.warnings)?;
                t.messages.extend(ms);
            }
            "assistant" => {
                let mut parts = AssistantParts::default();
                assistant_blocks(
                    &m.key("content"),
                    &mut parts,
                    calls,
                    &mut t.meta.warnings,
                )?;
                let (mut a, results) = parts.into_messages();
                a.usage = anthropic_usage(&m.key("usage"))?;
                if t.meta.model.is_none() {
                    t.meta.model = m.key("model").opt_str()?.map(String::from);
                }
                t.meta.warnings.extend(stop_warning(m)?);
                t.messages.push(a);
                t.messages.extend(results);
            }
            "system" => t
                .messages
                .push(Message::system(content_text(&m.key("content"), &mut t.meta.warnings)?)),
            other => {
                return Err(m.key("role").error(format!(
                    "expected \"user\", \"assistant\" or \"system\", found {other}", other = crate::output::quoted(other)
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::Role;
    use serde_json::json;

    #[test]
    fn blocks_usage_and_results() {
        let v = json!({"system": "be brief", "model": "claude", "messages": [
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "plan"},
                {"type": "thinking", "thinking": "signed plan", "signature": "EpMCsig"},
                {"type": "redacted_thinking", "data": "EmwKAhiddenxyz"},
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls", "a": 1}}],
             "usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 9}},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "out"}], "is_error": true},
                {"type": "text", "text": "and then?"}]}
        ]});
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::User
            ]
        );
        let a = &t.messages[2];
        assert_eq!(a.content, "ok");
        assert_eq!(a.reasoning.as_deref(), Some("plan\nsigned plan"));
        // Signed and redacted blocks are kept whole, in order (an unsigned one cannot be sent
        // back, so it lives in `reasoning` only).
        assert_eq!(
            a.thinking_blocks,
            [
                ThinkingBlock::Thinking {
                    thinking: "signed plan".into(),
                    signature: "EpMCsig".into()
                },
                ThinkingBlock::RedactedThinking {
                    data: "EmwKAhiddenxyz".into()
                }
            ]
        );
        assert_eq!(
            a.usage,
            Some(Usage {
                input: 123,
                output: 9,
                cache_read: 100,
                cache_write: 20
            })
        );
        assert_eq!(t.messages[3].name.as_deref(), Some("Bash"));
        assert!(t.messages[3].is_error);
        assert_eq!(t.messages[3].content, "out");
        assert_eq!(t.meta.model.as_deref(), Some("claude"));
    }

    /// A server-side call (`server_tool_use`) is answered by its result block of the same
    /// turn, a tool message right after the assistant message (was: the result block skipped
    /// with a warning, the call left open: a request no API accepts); web search results are
    /// their titles and URLs (their page contents are encrypted), an error its code.
    #[test]
    fn server_tool_results_answer_their_calls() {
        let v = json!([
            {"role": "user", "content": "news about rust?"},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                    {"type": "web_search_result", "title": "Rust 2.0", "url": "https://e.com/r", "encrypted_content": "Eq"},
                    {"type": "web_search_result", "title": "Blog", "url": "https://e.com/b", "encrypted_content": "Er"}]},
                {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_fetch", "input": {"url": "https://e.com/r"}},
                {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_2", "content": {"type": "web_fetch_tool_error", "error_code": "url_not_accessible"}},
                {"type": "text", "text": "Rust 2.0 is out."}]}
        ]);
        let mut t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Tool]);
        assert_eq!(t.messages[1].content, "Rust 2.0 is out.");
        assert_eq!(t.messages[1].tool_calls.len(), 2);
        assert_eq!(t.messages[2].tool_call_id.as_deref(), Some("srvtoolu_1"));
        assert_eq!(t.messages[2].name.as_deref(), Some("web_search"));
        assert_eq!(t.messages[2].content, "Rust 2.0\nhttps://e.com/r\n\nBlog\nhttps://e.com/b");
        assert!(!t.messages[2].is_error);
        assert_eq!(t.messages[3].content, "[error: url_not_accessible]");
        assert!(t.messages[3].is_error);
        assert_eq!(
            t.meta.warnings,
            ["$[1].content[1].content: the encrypted page contents of 2 web search result(s) are \
              not readable: the result holds their titles and URLs; their tokens are not counted"]
        );
        crate::trace::import::finalize(&mut t);
        assert!(crate::trace::import::pairing_problems(&t).is_empty());
    }

    /// A message the model ended with a refusal (`stop_reason: "refusal"`) is the text it
    /// produced, with a warning that says it refused (was: nothing said).
    #[test]
    fn a_refusal_stop_is_the_text_produced_and_a_warning() {
        let v = json!([
            {"role": "user", "content": "write the exploit"},
            {"role": "assistant", "content": [{"type": "text", "text": "I can"}],
             "stop_reason": "refusal", "stop_details": {"type": "refusal", "category": "cyber"}},
            {"role": "assistant", "content": [], "stop_reason": "refusal"},
            {"role": "assistant", "content": "fine", "stop_reason": "end_turn"}
        ]);
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["write the exploit", "I can", "", "fine"]);
        assert_eq!(
            t.meta.warnings,
            [
                "$[1].stop_reason: the model refused (stop_reason \"refusal\" (\"cyber\")): the \
                 message is the text it produced before it stopped",
                "$[2].stop_reason: the model refused (stop_reason \"refusal\"): the message is the \
                 text it produced before it stopped"
            ]
        );
    }

    #[test]
    fn bad_block_names_path() {
        let v =
            json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": 7}]}]);
        let e = import(&mut Input::Json(v), "s").unwrap_err();
        assert_eq!(e.location, "$[0].content[0].name");
    }
}
