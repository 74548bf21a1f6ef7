//! The OpenAI-compatible chat-completions wire format (`POST {base_url}/chat/completions`), for
//! OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM, OpenRouter, DeepSeek and the like.
//!
//! Requests: messages with `tool_calls` (arguments JSON-encoded as a string, as the API wants)
//! and `role: tool` results; `tools` as `{"type":"function","function":{…}}`; sampling fields
//! only when set; `Sampling::extra` merged into the body. Responses are decoded into serde
//! structs (errors name the JSON path): `choices[0].message`, usage
//! with `prompt_tokens_details.cached_tokens` (DeepSeek's `prompt_cache_hit_tokens` as a
//! fallback); `prompt_tokens` already includes cached tokens, so it is the normalized input.
//!
//! `tool_protocol = "text"` does not change this file: it is applied around it through
//! [`super::http::ToolAdapter`] (see the HOOK in `http.rs`).

use reqwest::header::{HeaderMap, AUTHORIZATION};
use reqwest::Url;
use serde_json::{json, Value};

use serde::Deserialize;

use super::http::{bad_at as bad, secret_header, ApiKey, HttpProvider, Parsed, Wire};
use super::{Message, Outgoing, ProviderError, ToolCall, Usage};
use encode::ChatBody;

mod encode;

/// Default endpoint when the configuration gives no `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An OpenAI-compatible provider.
pub type OpenAiProvider = HttpProvider<OpenAiWire>;

#[derive(Debug, Clone, Default)]
pub struct OpenAiWire;

/// OpenAI's reasoning models reject `max_tokens` and want `max_completion_tokens` (the field a
/// model name implies; `max_tokens_field` overrides it, see `http::WireTraits`).
pub(crate) fn wants_max_completion_tokens(model: &str) -> bool {
    let m = model.rsplit('/').next().unwrap_or(model);
    m.starts_with("gpt-5")
        || (m.len() >= 2 && m.starts_with('o') && m.as_bytes()[1].is_ascii_digit())
}

/// The `reasoning_effort` values each OpenAI reasoning model takes, by its id as the price table
/// normalizes ids ([`crate::pricing::normalized_id`]: no routing prefix or date, `.` as `-`).
/// The API answers any other value 400: "Unsupported value: 'reasoning_effort' does not support
/// 'minimal' with this model. Supported values are: 'none', 'low', 'medium', and 'high'."
/// Sources: openai-python's `reasoning_effort` docstring up to 2.44 ("`gpt-5.1` defaults to
/// `none` … The supported reasoning values for `gpt-5.1` are `none`, `low`, `medium`, and
/// `high`", "All models before `gpt-5.1` … do not support `none`", "`xhigh` is supported for
/// all models after `gpt-5.1-codex-max`"), and the API's refusals quoted for `o1` and `o4-mini`
/// ("Supported values are: 'low', 'medium', and 'high'"), `gpt-5-mini` ("'minimal', 'low',
/// 'medium', and 'high'"), `gpt-5-codex` and `gpt-5.1-codex` ("'low', 'medium', and 'high'").
/// A model not listed is not checked.
const REASONING_EFFORTS_BY_MODEL: &[(&str, &[&str])] = &[
    ("o1", O_SERIES),
    ("o3", O_SERIES),
    ("o3-mini", O_SERIES),
    ("o4-mini", O_SERIES),
    ("gpt-5", GPT_5),
    ("gpt-5-mini", GPT_5),
    ("gpt-5-nano", GPT_5),
    ("gpt-5-codex", O_SERIES),
    ("gpt-5-1", &["none", "low", "medium", "high"]),
    ("gpt-5-1-codex", O_SERIES),
];
const O_SERIES: &[&str] = &["low", "medium", "high"];
const GPT_5: &[&str] = &["minimal", "low", "medium", "high"];

/// The `reasoning_effort` values `model` takes, when it is a model of
/// `REASONING_EFFORTS_BY_MODEL`.
pub fn reasoning_efforts(model: &str) -> Option<&'static [&'static str]> {
    let m = crate::pricing::normalized_id(model);
    REASONING_EFFORTS_BY_MODEL
        .iter()
        .find(|(id, _)| *id == m)
        .map(|&(_, efforts)| efforts)
}

impl Wire for OpenAiWire {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn endpoint(&self, base: &Url) -> Result<Url, ProviderError> {
        let s = format!("{}/chat/completions", base.as_str().trim_end_matches('/'));
        Url::parse(&s).map_err(|e| ProviderError::config(format!("bad base_url {base}: {e}")))
    }

    fn headers(&self, key: Option<&ApiKey>) -> Result<HeaderMap, ProviderError> {
        let mut h = HeaderMap::new();
        if let Some(k) = key {
            let (_, v) = secret_header("authorization", &format!("Bearer {}", k.expose()))?;
            h.insert(AUTHORIZATION, v);
        }
        Ok(h)
    }

    fn body(&self, r: &Outgoing<'_>) -> Result<Value, ProviderError> {
        serde_json::to_value(ChatBody::new(r))
            .map_err(|e| ProviderError::config(format!("cannot encode request: {e}")))
    }

    fn encode(&self, r: &Outgoing<'_>, out: &mut Vec<u8>) -> Result<(), ProviderError> {
        ChatBody::new(r)
            .write(out)
            .map_err(|e| ProviderError::config(format!("cannot encode request: {e}")))
    }

    fn parse(&self, body: &[u8]) -> Result<Parsed, ProviderError> {
        parse_response(body)
    }
}

/// A chat-completions response, as far as it is read. Fields that only describe (`model`,
/// `finish_reason`, call ids, reasoning) are read when they are strings and ignored otherwise;
/// the rest must have the documented types.
#[derive(Deserialize)]
struct Completion {
    #[serde(default, deserialize_with = "lenient_str")]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<CompletionUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ChoiceMessage>,
    #[serde(default, deserialize_with = "lenient_str")]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
    #[serde(default, deserialize_with = "lenient_str")]
    reasoning_content: Option<String>,
    #[serde(default, deserialize_with = "lenient_str")]
    reasoning: Option<String>,
    /// The refusal text (the `content` is null then).
    #[serde(default, deserialize_with = "lenient_str")]
    refusal: Option<String>,
}

/// `content`: a string, or (some servers) parts `[{"type":"text","text":…}]`.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a string, null or an array of content parts")]
enum Content {
    Text(String),
    Parts(Vec<Value>),
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default, deserialize_with = "lenient_str")]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct CompletionUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A string, or `None` for anything else (descriptive fields never fail a response).
pub(super) fn lenient_str<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// Decodes a response body into `T`; errors say whether the body is JSON at all, else the
/// JSON path (`$.usage.prompt_tokens`) and what was expected there.
pub(super) fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ProviderError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        ProviderError::bad_response(format!(
            "body is not valid JSON ({e}); {} bytes received",
            body.len()
        ))
    })?;
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." {
            "$".to_string()
        } else {
            format!("$.{path}")
        };
        ProviderError::bad_response(format!("at {path}: {}", e.inner()))
    })
}

/// Decodes a chat-completions response body.
pub fn parse_response(body: &[u8]) -> Result<Parsed, ProviderError> {
    let r: Completion = decode(body)?;
    let usage_reported = r.usage.is_some();
    let mut choices = r.choices;
    let (msg, finish_reason) = match choices.drain(..).next() {
        Some(Choice {
            message: Some(m),
            finish_reason,
        }) => (m, finish_reason),
        _ => return Err(bad("$.choices[0].message", "an object")),
    };
    let content = match msg.content {
        None => String::new(),
        Some(Content::Text(s)) => s,
        Some(Content::Parts(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
    };
    let tool_calls = msg
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c.id.unwrap_or_else(|| format!("call_{i}")),
            name: c.function.name,
            arguments: match c.function.arguments {
                None | Some(Value::Null) => json!({}),
                // Arguments are a JSON string; a model may write invalid JSON, which is kept
                // verbatim as a string so evals can count it.
                Some(Value::String(s)) if s.trim().is_empty() => json!({}),
                Some(Value::String(s)) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                Some(other) => other,
            },
        })
        .collect();
    let u = r.usage;
    let field = |f: fn(&CompletionUsage) -> Option<u64>| u.as_ref().and_then(f).unwrap_or(0);
    let input = field(|u| u.prompt_tokens);
    let output = field(|u| u.completion_tokens);
    let mut cache_read = field(|u| u.prompt_tokens_details.as_ref()?.cached_tokens);
    if cache_read == 0 {
        cache_read = field(|u| u.prompt_cache_hit_tokens);
    }
    let reasoning_tokens = u
        .as_ref()
        .and_then(|u| u.completion_tokens_details.as_ref()?.reasoning_tokens);
    let refusal = msg.refusal.filter(|s| !s.is_empty());
    let mut message = Message::assistant(content, tool_calls);
    message.reasoning = msg
        .reasoning_content
        .or(msg.reasoning)
        .filter(|s| !s.is_empty());
    Ok(Parsed {
        message,
        usage: Usage {
            input,
            output,
            cache_read: cache_read.min(input),
            cache_write: 0,
        },
        usage_reported,
        model: r.model.unwrap_or_default(),
        finish_reason,
        refusal,
        reasoning_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::{ChatRequest, Sampling, ToolDef};

    #[test]
    fn encodes_tool_turns_and_sampling() {
        let mut req = ChatRequest::new(vec![
            Message::system("sys"),
            Message::user("find it"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "grep".into(),
                    arguments: json!({"pattern": "x"}),
                }],
            ),
            Message::tool("c1", "grep", "a.txt:3: x"),
        ])
        .with_tools(vec![ToolDef {
            name: "grep".into(),
            description: "search".into(),
            parameters: json!({"type": "object"}),
        }])
        .with_nonce("repeat-1");
        req.model = Some("gpt-4o".into());
        req.sampling = Sampling {
            temperature: Some(0.0),
            max_tokens: Some(64),
            extra: [("repeat_penalty".to_string(), json!(1.15))].into(),
            ..Default::default()
        };
        let b = OpenAiWire.body(&(&req).into()).unwrap();
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"pattern\":\"x\"}"
        );
        assert_eq!(
            b["messages"][3],
            json!({"role":"tool","tool_call_id":"c1","content":"a.txt:3: x"})
        );
        assert_eq!(b["tools"][0]["function"]["name"], "grep");
        assert_eq!(b["max_tokens"], 64);
        assert_eq!(b["repeat_penalty"], 1.15);
        assert!(b.get("top_p").is_none() && b.get("seed").is_none());
        assert!(
            !b.to_string().contains("repeat-1"),
            "the nonce is never sent"
        );
        req.model = Some("o4-mini".into());
        let b = OpenAiWire.body(&(&req).into()).unwrap();
        assert_eq!(b["max_completion_tokens"], 64);
        assert!(b.get("max_tokens").is_none());
    }

    #[test]
    fn reasoning_efforts_are_known_per_model_family() {
        for (model, want) in [
            ("gpt-5-mini", Some(GPT_5)),
            ("openai/gpt-5-2025-08-07", Some(GPT_5)),
            ("gpt-5.1", Some(&["none", "low", "medium", "high"][..])),
            ("gpt-5.1-2025-11-13", Some(&["none", "low", "medium", "high"][..])),
            ("gpt-5.1-codex", Some(O_SERIES)),
            ("o4-mini-2025-04-16", Some(O_SERIES)),
            ("gpt-5-chat-latest", None),
            ("gpt-5.2", None),
            ("gpt-4o", None),
        ] {
            assert_eq!(reasoning_efforts(model), want, "{model}");
        }
    }

    #[test]
    fn parses_tool_calls_and_cached_usage() {
        let body = br#"{"id":"x","model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"/a\",\"offset\":0}"}},{"id":"call_2","type":"function","function":{"name":"grep","arguments":"{bad json"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":2000,"completion_tokens":30,"total_tokens":2030,"prompt_tokens_details":{"cached_tokens":1536}}}"#;
        let p = parse_response(body).unwrap();
        assert_eq!(p.model, "gpt-4o-2024-08-06");
        assert_eq!(p.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(p.message.tool_calls.len(), 2);
        assert_eq!(p.message.tool_calls[0].arguments["path"], "/a");
        assert_eq!(p.message.tool_calls[1].arguments, json!("{bad json"));
        assert_eq!(
            p.usage,
            Usage {
                input: 2000,
                output: 30,
                cache_read: 1536,
                cache_write: 0
            }
        );
        assert!(p.usage_reported);
    }

    #[test]
    fn parses_deepseek_cache_fields_and_reasoning() {
        let body = br#"{"model":"deepseek-reasoner","choices":[{"message":{"role":"assistant","content":"42","reasoning_content":"think"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}"#;
        let p = parse_response(body).unwrap();
        assert_eq!(p.message.content, "42");
        assert_eq!(p.message.reasoning.as_deref(), Some("think"));
        assert_eq!(p.usage.cache_read, 64);
        assert_eq!(p.usage.input, 100);
    }

    #[test]
    fn bad_bodies_name_the_path() {
        let e = parse_response(br#"{"choices":[{"message":{"content":"x"#).unwrap_err();
        assert!(e.to_string().contains("not valid JSON"), "{e}");
        let e = parse_response(br#"{"choices":[]}"#).unwrap_err();
        assert!(e.to_string().contains("$.choices[0].message"), "{e}");
        let e = parse_response(
            br#"{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":"many"}}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("$.usage.prompt_tokens"), "{e}");
        let p = parse_response(br#"{"choices":[{"message":{"content":"x"}}]}"#).unwrap();
        assert!(!p.usage_reported);
    }
}
