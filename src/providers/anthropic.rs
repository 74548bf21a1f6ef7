//! The Anthropic Messages API wire format (`POST {base_url}/v1/messages`).
//!
//! Requests: leading system messages → the top-level `system` string (later system messages,
//! which the API cannot place, become user text blocks); assistant tool calls → `tool_use`
//! blocks; `role: tool` results → `tool_result` blocks (with `is_error`) in a user turn;
//! consecutive same-role turns merged, as the API requires alternation; `max_tokens` is mandatory
//! (default [`DEFAULT_MAX_TOKENS`]). Responses (decoded into serde structs; errors name the JSON
//! path): text and `tool_use` blocks, `thinking` kept as
//! reasoning and, whole with its `signature` (and `redacted_thinking`), in the message's
//! `thinking_blocks`; usage normalized: `input = input_tokens + cache_read_input_tokens +
//! cache_creation_input_tokens` (Anthropic reports the three disjoint).
//!
//! Thinking blocks on replay. With extended thinking on (`thinking` in the request), an assistant
//! turn's recorded `thinking`/`redacted_thinking` blocks are sent back first in its content,
//! unchanged. The API requires it of the turn a tool loop continues from: "During tool use, you
//! must pass `thinking` and `redacted_thinking` blocks back to the API, and you must include the
//! complete unmodified block" (docs.claude.com, build-with-claude/extended-thinking, "Preserving
//! thinking blocks"); a request breaking it gets 400 "When `thinking` is enabled, a final
//! `assistant` message must start with a thinking block (preceeding the lastmost set of
//! `tool_use` and `tool_result` blocks)". A recorded history has no thinking for turns another
//! model or vendor wrote; when its last assistant turn has tool calls and no thinking blocks, that
//! turn's calls and their results go as text (`[tool call …]`, `[tool result …]`), which the rule
//! does not concern, so thinking stays on and nothing is lost. With thinking off, no thinking
//! block is sent (the API refuses them in a final assistant turn then, and needs none).

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Url;
use serde_json::{json, Map, Value};

use serde::Deserialize;

use super::http::{bad_at, secret_header, ApiKey, HttpProvider, Parsed, Wire};
use super::openai::{decode, lenient_str};
use super::{Message, Outgoing, ProviderError, Role, ThinkingBlock, ToolCall, Usage};

/// Default endpoint when the configuration gives no `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when neither the request nor the configuration sets one (the API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The most output tokens (`max_tokens`) each Claude model takes, by its id without a date or
/// `-latest` suffix (Anthropic's models overview, "Max output"; for the 4.6 to 4.8 models their
/// pages under platform.claude.com/docs/en/models/, "Max output: 128K tokens", and Amazon
/// Bedrock's model card of Claude Opus 4.7, "Max output tokens: 128K"). A larger `max_tokens`
/// is a 400: "max_tokens: 66096 > 64000, which is the maximum allowed number of output tokens
/// for claude-sonnet-4-5-20250929". Models not listed are not capped.
const MAX_OUTPUT: &[(&str, u32)] = &[
    ("claude-opus-4-8", 128_000),
    ("claude-opus-4-7", 128_000),
    ("claude-opus-4-6", 128_000),
    ("claude-sonnet-4-6", 128_000),
    ("claude-opus-4-5", 64_000),
    ("claude-opus-4-1", 32_000),
    ("claude-opus-4-0", 32_000),
    ("claude-opus-4", 32_000),
    ("claude-sonnet-4-5", 64_000),
    ("claude-sonnet-4-0", 64_000),
    ("claude-sonnet-4", 64_000),
    ("claude-3-7-sonnet", 64_000),
    ("claude-haiku-4-5", 64_000),
    ("claude-3-5-haiku", 8_192),
    ("claude-3-haiku", 4_096),
];

/// The most output tokens `model` takes (`MAX_OUTPUT`), when it is a Claude model of the
/// table: matched exactly once the id is normalized as the price table matches ids
/// ([`crate::pricing::normalized_id`]: no routing prefix, date, `@version` or `-latest`, `.` as
/// `-`), so a newer model is never capped by an older one's limit.
pub fn max_output_tokens(model: &str) -> Option<u32> {
    let m = crate::pricing::normalized_id(model);
    MAX_OUTPUT
        .iter()
        .find(|(id, _)| *id == m)
        .map(|&(_, max)| max)
}

/// Claude models that take only adaptive thinking (`thinking.type: "adaptive"`): Amazon
/// Bedrock's adaptive-thinking guide, "Claude Opus 4.7 and Claude Mythos Preview only support
/// adaptive thinking. Manual extended thinking (thinking.type: "enabled" with budget_tokens) is
/// not supported on these models and will return a 400 error"; Anthropic's models overview
/// (Opus 4.7: "Extended thinking: No"). The API's 400, quoted in Anthropic's Agent SDK
/// quickstart: "\"thinking.type.enabled\" is not supported for this model. Use
/// \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior."
const ADAPTIVE_THINKING_ONLY: &[&str] = &["claude-opus-4-7", "claude-mythos-preview"];

/// Whether `model` takes a thinking budget (`thinking.type: "enabled"`, what the `thinking` key
/// sends): every model but those of `ADAPTIVE_THINKING_ONLY`, ids normalized as
/// [`max_output_tokens`] normalizes them.
pub fn takes_thinking_budget(model: &str) -> bool {
    let m = crate::pricing::normalized_id(model);
    !ADAPTIVE_THINKING_ONLY.contains(&m.as_str())
}

/// Claude models that take no sampling parameters (`temperature`, `top_p`, `top_k`): Claude
/// Opus 4.7 answers `temperature` 400 "`temperature` is deprecated for this model." (the API's
/// body quoted in github.com/Comfy-Org/ComfyUI issue 13923, sipeed/picoclaw issue 2939 and
/// RooCodeInc/Roo-Code issue 12162); Anthropic's "Migrating to Claude Opus 4.7" removes all
/// three, which guides to that migration report as 400s alike.
const NO_SAMPLING: &[&str] = &["claude-opus-4-7"];

/// Whether `model` takes `temperature`, `top_p` and `top_k`: every model but those of
/// `NO_SAMPLING`, ids normalized as [`max_output_tokens`] normalizes them.
pub fn takes_sampling(model: &str) -> bool {
    let m = crate::pricing::normalized_id(model);
    !NO_SAMPLING.contains(&m.as_str())
}

/// The `cache_control` of a prompt-cache breakpoint (5-minute cache).
const EPHEMERAL: &str = "ephemeral";

/// What an error tool result with no output is sent as: the API answers an empty one 400
/// ("messages.N.content.M.tool_result: content cannot be empty if `is_error` is true").
const EMPTY_ERROR: &str = "[the tool reported an error with no output]";

/// An Anthropic Messages API provider.
pub type AnthropicProvider = HttpProvider<AnthropicWire>;

#[derive(Debug, Clone, Default)]
pub struct AnthropicWire;

/// A recorded thinking block as the API returned it.
fn thinking_block(b: &ThinkingBlock) -> Value {
    match b {
        ThinkingBlock::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        ThinkingBlock::RedactedThinking { data } => {
            json!({"type": "redacted_thinking", "data": data})
        }
    }
}

/// Whether a content block can be a prompt-cache breakpoint: not a `thinking` or
/// `redacted_thinking` block. Their params have no `cache_control` field (anthropic-sdk-python
/// `ThinkingBlockParam`, `RedactedThinkingBlockParam`), and the API answers one that carries it
/// 400 "messages.N.content.M.thinking.cache_control: Extra inputs are not permitted". A
/// replayed assistant turn with thinking on can be thinking alone (its text blank, no calls).
fn cacheable(block: &Value) -> bool {
    !matches!(
        block["type"].as_str(),
        Some("thinking" | "redacted_thinking")
    )
}

/// Whether a request turns extended thinking on (`thinking` other than `{"type": "disabled"}`).
fn thinking_on(r: &Outgoing<'_>) -> bool {
    r.sampling
        .extra
        .get("thinking")
        .is_some_and(|t| !t.is_null() && t["type"] != "disabled")
}

/// With thinking on, the last assistant turn of an unfinished tool loop must begin with its
/// thinking (see the module doc). When it has tool calls and no thinking (a history recorded
/// without it), its `tool_use` blocks and the `tool_result` blocks answering them become text.
fn unblock_last_tool_turn(turns: &mut [(&'static str, Vec<Value>)]) {
    let Some(at) = turns.iter().rposition(|(role, _)| *role == "assistant") else {
        return;
    };
    let blocks = &mut turns[at].1;
    let starts_with_thinking = blocks.first().is_some_and(|b| {
        matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking"))
    });
    if starts_with_thinking || !blocks.iter().any(|b| b["type"] == "tool_use") {
        return;
    }
    let mut ids = Vec::new();
    for b in blocks.iter_mut() {
        if b["type"] == "tool_use" {
            ids.push(b["id"].as_str().unwrap_or_default().to_string());
            let text = format!(
                "[tool call {} (id {}): {}]",
                b["name"].as_str().unwrap_or_default(),
                b["id"].as_str().unwrap_or_default(),
                b["input"]
            );
            *b = json!({"type": "text", "text": text});
        }
    }
    if let Some((_, next)) = turns.get_mut(at + 1) {
        for b in next.iter_mut() {
            let answers = b["type"] == "tool_result"
                && ids.iter().any(|id| b["tool_use_id"] == id.as_str());
            if answers {
                let error = if b["is_error"] == true { " error" } else { "" };
                let content = b["content"].as_str().unwrap_or_default();
                let text = format!(
                    "[tool result{error} (id {}): {content}]",
                    b["tool_use_id"].as_str().unwrap_or_default()
                );
                *b = json!({"type": "text", "text": text});
            }
        }
    }
}

/// The content blocks one canonical message becomes, and the API role they go under; an
/// assistant turn's thinking blocks lead its content when `thinking` is on.
fn blocks(m: &Message, thinking: bool) -> (&'static str, Vec<Value>) {
    match m.role {
        Role::Tool => {
            // "content cannot be empty if `is_error` is true": an error result recorded with no
            // output (a command that failed silently) says so instead.
            let content = if m.is_error && m.content.trim().is_empty() {
                EMPTY_ERROR
            } else {
                m.content.as_str()
            };
            let mut b = json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                "content": content,
            });
            if m.is_error {
                b["is_error"] = json!(true);
            }
            ("user", vec![b])
        }
        Role::Assistant => {
            let mut out = Vec::new();
            if thinking {
                out.extend(m.thinking_blocks.iter().map(thinking_block));
            }
            // "text content blocks must contain non-whitespace text": a blank text is left out.
            if !m.content.trim().is_empty() {
                out.push(json!({"type": "text", "text": m.content}));
            }
            for c in &m.tool_calls {
                let input = match &c.arguments {
                    Value::Object(_) => c.arguments.clone(),
                    // The API wants an object; malformed recorded arguments are wrapped.
                    other => json!({ "_raw": other }),
                };
                out.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            ("assistant", out)
        }
        // The API rejects text blocks with nothing but whitespace in them ("text content blocks
        // must contain non-whitespace text"); such a turn is dropped (and its neighbours merge).
        Role::User | Role::System if m.content.trim().is_empty() => ("user", Vec::new()),
        Role::User | Role::System => ("user", vec![json!({"type": "text", "text": m.content})]),
    }
}

impl Wire for AnthropicWire {
    fn kind(&self) -> &'static str {
        "anthropic"
    }

    fn endpoint(&self, base: &Url) -> Result<Url, ProviderError> {
        let base = base.as_str().trim_end_matches('/');
        let s = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Url::parse(&s).map_err(|e| ProviderError::config(format!("bad base_url {base}: {e}")))
    }

    fn headers(&self, key: Option<&ApiKey>) -> Result<HeaderMap, ProviderError> {
        let mut h = HeaderMap::new();
        h.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(k) = key {
            let (n, v) = secret_header("x-api-key", k.expose())?;
            h.insert(n, v);
        }
        Ok(h)
    }

    fn body(&self, r: &Outgoing<'_>) -> Result<Value, ProviderError> {
        let lead = r
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let system: Vec<&str> = r.messages[..lead]
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        let thinking = thinking_on(r);
        let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
        for m in &r.messages[lead..] {
            let (role, content) = blocks(m, thinking);
            if content.is_empty() {
                continue;
            }
            match turns.last_mut() {
                Some((last, blocks)) if *last == role => blocks.extend(content),
                _ => turns.push((role, content)),
            }
        }
        if thinking {
            unblock_last_tool_turn(&mut turns);
        }
        let mut b = Map::new();
        b.insert("model".into(), json!(r.model));
        if !system.is_empty() {
            let text = system.join("\n\n");
            if r.prompt_cache && !text.trim().is_empty() {
                b.insert(
                    "system".into(),
                    json!([{"type": "text", "text": text, "cache_control": {"type": EPHEMERAL}}]),
                );
            } else {
                b.insert("system".into(), json!(text));
            }
        }
        if r.prompt_cache && turns.len() >= 2 {
            // The end of the history before the question: everything up to here is the prefix
            // the next question about the same history sends again. A thinking block takes no
            // `cache_control` (see `cacheable`): the breakpoint goes on the last block before
            // the question that can carry one.
            let history = turns.len() - 1;
            let last = turns[..history]
                .iter_mut()
                .rev()
                .find_map(|(_, blocks)| blocks.iter_mut().rev().find(|b| cacheable(b)));
            if let Some(last) = last {
                last["cache_control"] = json!({"type": EPHEMERAL});
            }
        }
        b.insert(
            "messages".into(),
            Value::Array(
                turns
                    .into_iter()
                    .map(|(role, content)| json!({"role": role, "content": content}))
                    .collect(),
            ),
        );
        if !r.tools.is_empty() {
            let mut tools: Vec<Value> = r
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            if r.prompt_cache {
                if let Some(last) = tools.last_mut() {
                    last["cache_control"] = json!({"type": EPHEMERAL});
                }
            }
            b.insert("tools".into(), Value::Array(tools));
        }
        let s = &r.sampling;
        b.insert(
            "max_tokens".into(),
            json!(s.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        );
        if let Some(t) = s.temperature {
            b.insert("temperature".into(), json!(t));
        }
        if let Some(p) = s.top_p {
            b.insert("top_p".into(), json!(p));
        }
        if !s.stop.is_empty() {
            b.insert("stop_sequences".into(), json!(s.stop));
        }
        if s.seed.is_some() || s.frequency_penalty.is_some() || s.presence_penalty.is_some() {
            return Err(ProviderError::config(
                "the Anthropic Messages API has no seed, frequency_penalty or presence_penalty; \
                 remove them from this provider's sampling settings",
            ));
        }
        for (k, v) in &s.extra {
            b.insert(k.clone(), v.clone());
        }
        Ok(Value::Object(b))
    }

    fn parse(&self, body: &[u8]) -> Result<Parsed, ProviderError> {
        parse_response(body)
    }
}

/// A Messages API response, as far as it is read. `model` and `stop_reason` are read when they
/// are strings and ignored otherwise.
#[derive(Deserialize)]
struct MessagesResponse {
    content: Option<Vec<Block>>,
    #[serde(default, deserialize_with = "lenient_str")]
    model: Option<String>,
    #[serde(default, deserialize_with = "lenient_str")]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<MessagesUsage>,
}

/// One content block; which fields it must have depends on `type` (checked in
/// [`parse_response`], so errors name the missing field's path).
#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type", default, deserialize_with = "lenient_str")]
    kind: Option<String>,
    #[serde(default, deserialize_with = "lenient_str")]
    text: Option<String>,
    #[serde(default, deserialize_with = "lenient_str")]
    thinking: Option<String>,
    #[serde(default, deserialize_with = "lenient_str")]
    signature: Option<String>,
    /// A `redacted_thinking` block's encrypted thinking.
    #[serde(default, deserialize_with = "lenient_str")]
    data: Option<String>,
    #[serde(default, deserialize_with = "lenient_str")]
    id: Option<String>,
    #[serde(default, deserialize_with = "lenient_str")]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

/// Anthropic reports fresh, cache-read and cache-write input tokens disjoint.
#[derive(Deserialize)]
struct MessagesUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    /// Of the output tokens, those spent thinking (when the API reports them).
    #[serde(default)]
    output_tokens_details: Option<OutputTokensDetails>,
}

/// `usage.output_tokens_details`.
#[derive(Deserialize)]
struct OutputTokensDetails {
    #[serde(default)]
    thinking_tokens: Option<u64>,
}

/// Decodes a Messages API response body.
pub fn parse_response(body: &[u8]) -> Result<Parsed, ProviderError> {
    let r: MessagesResponse = decode(body)?;
    let content = r
        .content
        .ok_or_else(|| bad_at("$.content", "an array of content blocks"))?;
    let mut text = String::new();
    let mut thinking = String::new();
    let mut thinking_blocks = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, block) in content.into_iter().enumerate() {
        let path = format!("$.content[{i}]");
        let need = |v: Option<String>, f: &str| {
            v.ok_or_else(|| bad_at(&format!("{path}.{f}"), "a string"))
        };
        match block.kind.as_deref() {
            Some("text") => text.push_str(&need(block.text, "text")?),
            Some("thinking") => {
                let text = block.thinking.unwrap_or_default();
                thinking.push_str(&text);
                // Kept whole: a tool loop sends it back unchanged (see the module doc).
                if let Some(signature) = block.signature {
                    thinking_blocks.push(ThinkingBlock::Thinking {
                        thinking: text,
                        signature,
                    });
                }
            }
            Some("redacted_thinking") => {
                if let Some(data) = block.data {
                    thinking_blocks.push(ThinkingBlock::RedactedThinking { data });
                }
            }
            Some("tool_use") => tool_calls.push(ToolCall {
                id: need(block.id, "id")?,
                name: need(block.name, "name")?,
                arguments: block.input.unwrap_or_else(|| json!({})),
            }),
            // server tool blocks, …: not part of the answer.
            Some(_) => {}
            None => return Err(bad_at(&format!("{path}.type"), "a string")),
        }
    }
    let usage_reported = r.usage.is_some();
    let u = r.usage;
    let field = |f: fn(&MessagesUsage) -> Option<u64>| u.as_ref().and_then(f).unwrap_or(0);
    let fresh = field(|u| u.input_tokens);
    let cache_read = field(|u| u.cache_read_input_tokens);
    let cache_write = field(|u| u.cache_creation_input_tokens);
    let output = field(|u| u.output_tokens);
    let thinking_tokens = u
        .as_ref()
        .and_then(|u| u.output_tokens_details.as_ref())
        .and_then(|d| d.thinking_tokens);
    let mut message = Message::assistant(text, tool_calls);
    if !thinking.is_empty() {
        message.reasoning = Some(thinking);
    }
    message.thinking_blocks = thinking_blocks;
    Ok(Parsed {
        message,
        usage: Usage {
            input: fresh + cache_read + cache_write,
            output,
            cache_read,
            cache_write,
        },
        usage_reported,
        model: r.model.unwrap_or_default(),
        refusal: (r.stop_reason.as_deref() == Some("refusal")).then(String::new),
        finish_reason: r.stop_reason,
        reasoning_tokens: thinking_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ChatRequest;
    use crate::providers::ToolDef;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "grep".into(),
            arguments: json!({"pattern": "token"}),
        }
    }

    #[test]
    fn encodes_system_tool_use_and_merged_results() {
        let mut err = Message::tool("c2", "grep", "no such file");
        err.is_error = true;
        let mut req = ChatRequest::new(vec![
            Message::system("be brief"),
            Message::system("use tools"),
            Message::user("where is the token?"),
            Message::assistant("Searching.", vec![call("c1"), call("c2")]),
            Message::tool("c1", "grep", "a:1: token"),
            err,
            Message::system("late note"),
            Message::assistant("", vec![]),
            Message::user(""),
        ])
        .with_tools(vec![ToolDef {
            name: "grep".into(),
            description: "search".into(),
            parameters: json!({"type": "object"}),
        }]);
        req.model = Some("claude-sonnet-4-5".into());
        let b = AnthropicWire.body(&(&req).into()).unwrap();
        assert_eq!(b["system"], "be brief\n\nuse tools");
        assert_eq!(b["max_tokens"], DEFAULT_MAX_TOKENS);
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3, "{b:#}");
        assert_eq!(
            msgs[1]["content"][1],
            json!({"type":"tool_use","id":"c1","name":"grep","input":{"pattern":"token"}})
        );
        // Both results and the late system note share one user turn.
        let results = msgs[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results[0]["tool_use_id"], "c1");
        assert!(results[0].get("is_error").is_none());
        assert_eq!(results[1]["is_error"], true);
        assert_eq!(results[2], json!({"type":"text","text":"late note"}));
        assert_eq!(b["tools"][0]["input_schema"], json!({"type":"object"}));
    }

    fn thinking_history(blocks: Vec<ThinkingBlock>) -> Vec<Message> {
        let mut a = Message::assistant("Looking.", vec![call("toolu_1")]);
        a.thinking_blocks = blocks;
        vec![
            Message::user("where is the token?"),
            a,
            Message::tool("toolu_1", "grep", "a:1: token"),
        ]
    }

    fn body_with_thinking(messages: Vec<Message>, on: bool) -> Value {
        let mut req = ChatRequest::new(messages).with_tools(vec![ToolDef {
            name: "grep".into(),
            description: "search".into(),
            parameters: json!({"type": "object"}),
        }]);
        req.model = Some("claude-sonnet-4-5".into());
        if on {
            req.sampling.extra.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": 1024}),
            );
        }
        AnthropicWire.body(&(&req).into()).unwrap()
    }

    #[test]
    fn thinking_blocks_lead_a_replayed_turn_unchanged_when_thinking_is_on() {
        let signed = ThinkingBlock::Thinking {
            thinking: "grep first".into(),
            signature: "EpMCsig==".into(),
        };
        let redacted = ThinkingBlock::RedactedThinking {
            data: "EmwKAhidden".into(),
        };
        let b = body_with_thinking(thinking_history(vec![signed, redacted]), true);
        let content = &b["messages"][1]["content"];
        assert_eq!(
            content[0],
            json!({"type": "thinking", "thinking": "grep first", "signature": "EpMCsig=="})
        );
        assert_eq!(
            content[1],
            json!({"type": "redacted_thinking", "data": "EmwKAhidden"})
        );
        assert_eq!(content[2]["type"], "text");
        assert_eq!(content[3]["type"], "tool_use");
        assert_eq!(b["messages"][2]["content"][0]["type"], "tool_result");
        // Thinking off: no thinking block is sent.
        let off = body_with_thinking(
            thinking_history(vec![ThinkingBlock::RedactedThinking { data: "x".into() }]),
            false,
        );
        let types: Vec<&str> = off["messages"][1]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["text", "tool_use"]);
    }

    #[test]
    fn a_last_tool_turn_recorded_without_thinking_goes_as_text_when_thinking_is_on() {
        let mut messages = thinking_history(Vec::new());
        messages.push(Message::user("so where?"));
        let b = body_with_thinking(messages.clone(), true);
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(
            msgs[1]["content"][1],
            json!({"type": "text", "text": "[tool call grep (id toolu_1): {\"pattern\":\"token\"}]"})
        );
        assert_eq!(
            msgs[2]["content"][0],
            json!({"type": "text", "text": "[tool result (id toolu_1): a:1: token]"})
        );
        assert_eq!(msgs[2]["content"][1]["text"], "so where?");
        // An earlier tool turn keeps its blocks; thinking off changes nothing.
        let mut longer = thinking_history(Vec::new());
        longer.extend(thinking_history(Vec::new()).into_iter().skip(1).map(|mut m| {
            if let Some(c) = m.tool_calls.first_mut() {
                c.id = "toolu_2".into();
            }
            if m.tool_call_id.is_some() {
                m.tool_call_id = Some("toolu_2".into());
            }
            m
        }));
        let b = body_with_thinking(longer, true);
        assert_eq!(b["messages"][1]["content"][1]["type"], "tool_use");
        assert_eq!(b["messages"][3]["content"][1]["type"], "text");
        let off = body_with_thinking(messages, false);
        assert_eq!(off["messages"][1]["content"][1]["type"], "tool_use");
    }

    #[test]
    fn max_output_matches_known_ids_only() {
        for (model, want) in [
            ("claude-sonnet-4-5", Some(64_000)),
            ("claude-sonnet-4-5-20250929", Some(64_000)),
            ("anthropic/claude-opus-4-1@20250805", Some(32_000)),
            ("claude-opus-4-20250514", Some(32_000)),
            ("claude-3-7-sonnet-latest", Some(64_000)),
            ("claude-3-haiku-20240307", Some(4_096)),
            // As routers write it (the price table's matching).
            ("anthropic/Claude-Sonnet-4.5", Some(64_000)),
            ("claude-opus-4-6", Some(128_000)),
            ("claude-sonnet-4-6", Some(128_000)),
            ("anthropic/claude-opus-4.7", Some(128_000)),
            ("claude-opus-4-8", Some(128_000)),
            ("claude-opus-4-9", None),
            ("claude-sonnet-4-5-x", None),
            ("gpt-5", None),
        ] {
            assert_eq!(max_output_tokens(model), want, "{model}");
        }
    }

    #[test]
    fn adaptive_only_models_take_no_thinking_budget() {
        for (model, takes) in [
            ("claude-opus-4-7", false),
            ("anthropic/claude-opus-4.7", false),
            ("claude-mythos-preview", false),
            ("claude-opus-4-6", true),
            ("claude-sonnet-4-5-20250929", true),
        ] {
            assert_eq!(takes_thinking_budget(model), takes, "{model}");
        }
        assert!(!takes_sampling("claude-opus-4-7"));
        assert!(!takes_sampling("anthropic/claude-opus-4.7"));
        assert!(takes_sampling("claude-opus-4-6"));
    }

    #[test]
    fn seed_is_rejected_not_dropped() {
        let mut req = ChatRequest::new(vec![Message::user("x")]);
        req.sampling.seed = Some(1);
        assert!(matches!(
            AnthropicWire.body(&(&req).into()),
            Err(ProviderError::Config { .. })
        ));
    }

    #[test]
    fn parses_tool_use_and_normalizes_cache_usage() {
        let body = br#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"/x","limit":10}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":1000,"cache_read_input_tokens":5000,"output_tokens":40}}"#;
        let p = parse_response(body).unwrap();
        assert_eq!(p.message.content, "Let me look.");
        assert_eq!(p.message.reasoning.as_deref(), Some("hmm"));
        assert_eq!(
            p.message.thinking_blocks,
            [ThinkingBlock::Thinking {
                thinking: "hmm".into(),
                signature: "s".into()
            }]
        );
        let redacted = parse_response(
            br#"{"content":[{"type":"redacted_thinking","data":"EmwK"},{"type":"text","text":"hi"}]}"#,
        )
        .unwrap();
        assert_eq!(
            redacted.message.thinking_blocks,
            [ThinkingBlock::RedactedThinking {
                data: "EmwK".into()
            }]
        );
        assert_eq!(p.message.tool_calls[0].name, "read_file");
        assert_eq!(p.message.tool_calls[0].arguments["limit"], 10);
        assert_eq!(p.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            p.usage,
            Usage {
                input: 6012,
                output: 40,
                cache_read: 5000,
                cache_write: 1000
            }
        );
    }

    #[test]
    fn thinking_tokens_are_the_reasoning_tokens() {
        let p = parse_response(br#"{"content":[],"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":200,"output_tokens_details":{"thinking_tokens":190}}}"#).unwrap();
        assert_eq!(p.reasoning_tokens, Some(190));
        let p = parse_response(br#"{"content":[],"usage":{"input_tokens":5,"output_tokens":2}}"#)
            .unwrap();
        assert_eq!(p.reasoning_tokens, None);
    }

    #[test]
    fn whitespace_only_text_is_never_a_text_block() {
        let req = ChatRequest::new(vec![
            Message::user("where?"),
            Message::assistant("\n  ", vec![call("c1")]),
            Message::tool("c1", "grep", "a:1"),
            Message::user(" \n\t"),
            Message::assistant("  ", vec![]),
            Message::system("\n"),
            Message::user("so?"),
        ])
        .with_tools(vec![ToolDef {
            name: "grep".into(),
            description: "search".into(),
            parameters: json!({"type": "object"}),
        }]);
        let b = AnthropicWire.body(&(&req).into()).unwrap();
        for m in b["messages"].as_array().unwrap() {
            for bl in m["content"].as_array().unwrap() {
                if bl["type"] == "text" {
                    assert!(!bl["text"].as_str().unwrap().trim().is_empty(), "{b:#}");
                }
            }
        }
        assert_eq!(b["messages"][1]["content"][0]["type"], "tool_use");
        assert_eq!(b["messages"][2]["content"][1]["text"], "so?");
    }

    #[test]
    fn bad_bodies_name_the_path() {
        let e = parse_response(br#"{"content":[{"type":"tool_use","id":"t"}]}"#).unwrap_err();
        assert!(e.to_string().contains("$.content[0].name"), "{e}");
        let e = parse_response(br#"{"content":"hi"}"#).unwrap_err();
        assert!(e.to_string().contains("$.content"), "{e}");
    }

    #[test]
    fn endpoint_accepts_base_with_or_without_v1() {
        let w = AnthropicWire;
        let a = w
            .endpoint(&Url::parse("http://127.0.0.1:9/").unwrap())
            .unwrap();
        let b = w
            .endpoint(&Url::parse("http://127.0.0.1:9/v1").unwrap())
            .unwrap();
        assert_eq!(a.as_str(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(a, b);
    }
}
