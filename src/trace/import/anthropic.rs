//! Anthropic Messages → canonical traces (same container shapes as `openai`: a message array,
//! `{system?, messages, model?, tools?}`, conversations, JSON Lines).
//!
//! Content blocks: `text` → content, `tool_use` → tool call (`input` kept as the arguments),
//! `thinking` → reasoning (and, with its `signature`, kept whole in `thinking_blocks` beside
//! `redacted_thinking`, so a replay can send them back), `tool_result` (in user turns) → one `role: tool` message each, with
//! `is_error`. Usage is normalized: `input = input_tokens + cache_read_input_tokens +
//! cache_creation_input_tokens` (Anthropic reports the three disjoint). The block helpers here
//! are shared with the Claude Code importer.

use super::json::{content_text, placeholder, Node, Res};
use super::openai::import_shapes;
use super::{Calls, Input};
use crate::trace::model::{Message, SourceFormat, ThinkingBlock, ToolCall, Trace, Usage};
use super::detect::chat_flavor;
use super::Importer;
use crate::output::quoted;

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
}

impl AssistantParts {
    pub fn into_message(self) -> Message {
        let mut m = Message::assistant(self.texts.join("\n"), self.calls);
        if !self.thinking.is_empty() {
            m.reasoning = Some(self.thinking.join("\n"));
        }
        m.thinking_blocks = self.blocks;
        m
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
                    parts.thinking.push(t.to_string());
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
                let mut a = parts.into_message();
                a.usage = anthropic_usage(&m.key("usage"))?;
                if t.meta.model.is_none() {
                    t.meta.model = m.key("model").opt_str()?.map(String::from);
                }
                t.messages.push(a);
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

    #[test]
    fn bad_block_names_path() {
        let v =
            json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": 7}]}]);
        let e = import(&mut Input::Json(v), "s").unwrap_err();
        assert_eq!(e.location, "$[0].content[0].name");
    }
}
