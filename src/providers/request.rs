//! The data a provider call carries: [`ChatRequest`] (messages, tools, sampling), the
//! [`ChatResponse`] it returns, and the static [`ProviderInfo`] that fills request defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::TextToolTelemetry;
use super::{Message, ToolProtocol, Usage};

/// Static facts about a provider, used for cache keys, provenance and pricing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProviderInfo {
    /// `openai`, `anthropic`, `offline`.
    pub kind: String,
    /// Default model id (what `ChatRequest::model = None` means).
    pub model: String,
    /// Endpoint with any userinfo and query removed; `None` for providers without one.
    pub endpoint: Option<String>,
    /// Sampling defaults from the configuration; a request's own values win field by field.
    pub defaults: Sampling,
    /// How tool calls travel; part of the cache key (the same request gets different answers
    /// under the native and the text protocol).
    #[serde(default)]
    pub tool_protocol: ToolProtocol,
}

impl ProviderInfo {
    /// The request as it will actually be sent: model and every unset sampling field filled from
    /// the provider's defaults. Cache keys are computed on this, so a request that relies on
    /// defaults and one that spells them out share a key.
    pub fn resolve(&self, request: &ChatRequest) -> ChatRequest {
        let mut r = request.clone();
        if r.model.as_deref().is_none_or(str::is_empty) {
            r.model = Some(self.model.clone());
        }
        r.sampling = r.sampling.or(&self.defaults);
        r
    }
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

impl ToolDef {
    /// Reads a recorded tool schema (`TraceMeta::tools`) in any of the common shapes: OpenAI
    /// `{"type":"function","function":{name, description, parameters}}`, a bare
    /// `{name, description, parameters}`, or Anthropic `{name, description, input_schema}`.
    /// `None` when there is no name.
    pub fn from_json(v: &serde_json::Value) -> Option<ToolDef> {
        let f = v.get("function").unwrap_or(v);
        let name = f.get("name")?.as_str()?.to_string();
        let description = f
            .get("description")
            .and_then(|d| d.as_str())
            .unwrap_or_default()
            .to_string();
        let parameters = f
            .get("parameters")
            .or_else(|| f.get("input_schema"))
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
        Some(ToolDef {
            name,
            description,
            parameters,
        })
    }
}

/// Sampling parameters. `None` = not sent (the provider's default applies).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Sampling seed, for APIs that take one (OpenAI-compatible servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Further body fields sent verbatim (OpenAI-compatible only), e.g. llama.cpp's
    /// `repeat_penalty`. Part of the cache key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Sampling {
    /// `self`'s fields, each falling back to `defaults` when unset (`extra` is merged, `self`
    /// winning on equal keys).
    pub fn or(&self, defaults: &Sampling) -> Sampling {
        let mut extra = defaults.extra.clone();
        extra.extend(self.extra.clone());
        Sampling {
            temperature: self.temperature.or(defaults.temperature),
            max_tokens: self.max_tokens.or(defaults.max_tokens),
            top_p: self.top_p.or(defaults.top_p),
            stop: if self.stop.is_empty() {
                defaults.stop.clone()
            } else {
                self.stop.clone()
            },
            seed: self.seed.or(defaults.seed),
            frequency_penalty: self.frequency_penalty.or(defaults.frequency_penalty),
            presence_penalty: self.presence_penalty.or(defaults.presence_penalty),
            extra,
        }
    }
}

/// One chat call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model id; `None` = the provider's configured model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The conversation: system/user/assistant (with tool calls)/tool (results, linked by
    /// `tool_call_id`). Only the fields a model sees are sent (role, content, tool calls, tool
    /// call id, tool name, error flag).
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef>,
    #[serde(default)]
    pub sampling: Sampling,
    /// Distinguishes repeats that must be independent samples: part of the cache key, never
    /// sent to the model. Use e.g. `format!("repeat-{n}")`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_nonce: Option<String>,
}

impl ChatRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..Default::default()
        }
    }
    pub fn with_tools(mut self, tools: Vec<ToolDef>) -> Self {
        self.tools = tools;
        self
    }
    pub fn with_nonce(mut self, nonce: impl Into<String>) -> Self {
        self.repeat_nonce = Some(nonce.into());
        self
    }

    /// Rough size in tokens (`ceil(bytes / 4)` of contents, tool calls and tool schemas, plus
    /// 2 tokens of overhead per message) plus `max_tokens`: what tokens-per-minute limits are
    /// charged before the real usage is known (and corrected after it).
    pub fn estimated_tokens(&self) -> u64 {
        let mut chars = 0usize;
        for m in &self.messages {
            chars += m.content.len() + 8;
            for c in &m.tool_calls {
                chars += c.name.len() + c.arguments.to_string().len();
            }
        }
        for t in &self.tools {
            chars += t.name.len() + t.description.len() + t.parameters.to_string().len();
        }
        (chars as u64).div_ceil(4) + u64::from(self.sampling.max_tokens.unwrap_or(0))
    }
}

/// The model's answer to one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Role assistant; `content` and `tool_calls` as returned, `usage` set, `reasoning` where
    /// the API returned it separately.
    pub message: Message,
    /// Normalized usage: `input` includes `cache_read` and `cache_write`.
    pub usage: Usage,
    /// False when the API sent no usage block (then `usage` is all zeros and must not be priced
    /// as free: see [`Price::Unknown`](crate::pricing::Price::Unknown)).
    #[serde(default = "yes")]
    pub usage_reported: bool,
    /// Model id as the API reported it (may be a dated snapshot of the requested one).
    pub model: String,
    /// The API's own finish/stop reason (`stop`, `tool_calls`, `length`, `end_turn`, `tool_use`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Wall time of the successful attempt (for a cache hit: of the original call).
    #[serde(with = "duration_ms")]
    pub latency: Duration,
    /// HTTP attempts made (1 = no retry). 0 for a cache hit.
    #[serde(default)]
    pub attempts: u32,
    /// True when served from the response cache.
    #[serde(default)]
    pub from_cache: bool,
    /// Set by the text tool protocol (`tool_protocol = "text"`): wrapped calls, malformed and
    /// repeated tool calls reported back to the model. `None` under the native protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_tools: Option<TextToolTelemetry>,
}

fn yes() -> bool {
    true
}

impl ChatResponse {
    /// True when the model said something: non-blank text or at least one tool call. Empty
    /// answers are never cached.
    pub fn is_empty(&self) -> bool {
        self.message.content.trim().is_empty() && self.message.tool_calls.is_empty()
    }
}

mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ToolProtocol;
    use crate::trace::Message;

    #[test]
    fn resolve_fills_only_unset_fields() {
        let info = ProviderInfo {
            kind: "openai".into(),
            model: "m-default".into(),
            endpoint: None,
            tool_protocol: ToolProtocol::Native,
            defaults: Sampling {
                temperature: Some(0.0),
                max_tokens: Some(100),
                extra: [("repeat_penalty".to_string(), serde_json::json!(1.15))].into(),
                ..Default::default()
            },
        };
        let mut req = ChatRequest::new(vec![Message::user("hi")]);
        req.sampling.max_tokens = Some(7);
        let r = info.resolve(&req);
        assert_eq!(r.model.as_deref(), Some("m-default"));
        assert_eq!(r.sampling.temperature, Some(0.0));
        assert_eq!(r.sampling.max_tokens, Some(7));
        assert_eq!(r.sampling.extra["repeat_penalty"], serde_json::json!(1.15));
        req.model = Some("other".into());
        assert_eq!(info.resolve(&req).model.as_deref(), Some("other"));
    }

    #[test]
    fn tool_defs_from_recorded_shapes() {
        use serde_json::json;
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let openai = json!({"type": "function", "function": {"name": "read_file",
            "description": "Read", "parameters": schema}});
        let anthropic = json!({"name": "read_file", "description": "Read", "input_schema": schema});
        let want = ToolDef {
            name: "read_file".into(),
            description: "Read".into(),
            parameters: schema.clone(),
        };
        assert_eq!(ToolDef::from_json(&openai), Some(want.clone()));
        assert_eq!(ToolDef::from_json(&anthropic), Some(want));
        let bare = ToolDef::from_json(&json!({"name": "ls"})).unwrap();
        assert_eq!(bare.parameters["type"], "object");
        assert_eq!(ToolDef::from_json(&json!({"description": "no name"})), None);
    }
}
