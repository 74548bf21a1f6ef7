//! Model providers: the Provider interface, OpenAI-compatible and Anthropic HTTP clients,
//! retries, cache and pricing (the offline baseline agent lives in `evals::offline_agent`).
//!
//! Everything that talks to a model goes through [`Provider::chat`]: summarizers, eval agents,
//! drift probes and judges. A provider is built from a [`ProviderConfig`] by [`build_provider`],
//! which stacks the pieces in this order (outermost first):
//!
//! ```text
//! CachedProvider (only when `cache = true`)  → a hit never touches the network or the limits
//!   └ HttpProvider (openai | anthropic)       → per attempt: concurrency + rpm/tpm limits,
//!                                                per-call timeout; retries with backoff
//! ```
//!
//! Requests use the canonical trace types ([`Message`], [`ToolCall`]) so an engine's view goes
//! straight in; responses carry normalized [`Usage`] (input **includes** cache reads and writes).

pub mod cache;
pub mod config;
pub mod cost;
pub mod http;
pub mod limits;
pub mod retry;
pub mod secrets;
pub mod summarizer;
pub mod text_tools;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::pricing::{Price, PriceTable};
pub use crate::trace::{Message, Role, ToolCall, Usage};
pub use cache::CachedProvider;
pub use config::{build_provider, ProviderConfig, ToolProtocol};
pub use cost::cost_of_response;
pub use summarizer::{ProviderSummarizer, SummaryCancel};
pub use text_tools::{TextToolOptions, TextToolProvider, TextToolTelemetry};

/// Declares the HTTP wire protocols and [`ProviderKind`]: one line per protocol,
/// `Variant => "kind", module::Wire` (the module implements [`http::Wire`] and exports
/// `DEFAULT_BASE_URL`). `offline` is built in.
macro_rules! wire_protocols {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $module:ident::$wire:ident,)+) => {
        $(pub mod $module;)+

        /// `kind` of a provider table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum ProviderKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)+
            /// The built-in deterministic baseline (no network).
            #[serde(rename = "offline")]
            Offline,
        }

        impl ProviderKind {
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ProviderKind::$variant => $name,)+
                    ProviderKind::Offline => "offline",
                }
            }

            /// The vendor's public API root (`None` for the offline provider).
            pub fn default_base_url(self) -> Option<&'static str> {
                match self {
                    $(ProviderKind::$variant => Some($module::DEFAULT_BASE_URL),)+
                    ProviderKind::Offline => None,
                }
            }

            /// An HTTP provider speaking this kind's wire protocol (`None` for offline).
            pub(crate) fn http_provider(
                self,
                settings: http::HttpSettings,
            ) -> Option<Result<std::sync::Arc<dyn Provider>, ProviderError>> {
                match self {
                    $(ProviderKind::$variant => Some(
                        http::HttpProvider::new($module::$wire, settings)
                            .map(|p| std::sync::Arc::new(p) as std::sync::Arc<dyn Provider>),
                    ),)+
                    ProviderKind::Offline => None,
                }
            }
        }
    };
}

wire_protocols! {
    /// OpenAI chat completions and every compatible server.
    Openai => "openai", openai::OpenAiWire,
    /// Anthropic Messages API.
    Anthropic => "anthropic", anthropic::AnthropicWire,
}

/// A boxed, sendable future: the return type of [`Provider::chat`] (keeps the trait usable as
/// `dyn Provider` without an extra crate).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A chat model behind some API.
///
/// Implementations must be cheap to share (`Arc<dyn Provider>`) and safe to call concurrently;
/// they enforce their own concurrency and rate limits.
pub trait Provider: Send + Sync {
    /// What this provider is (kind, model, default sampling, endpoint without credentials).
    fn info(&self) -> &ProviderInfo;

    /// Send one chat request. Fields of `request` left unset (`model`, sampling parameters) take
    /// the provider's defaults; see [`ProviderInfo::resolve`].
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;

    /// Hit/miss counters when this provider is a [`CachedProvider`].
    fn cache_stats(&self) -> Option<cache::CacheStats> {
        None
    }
}

impl std::fmt::Debug for dyn Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("info", self.info())
            .finish()
    }
}

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
    /// as free: see [`Price::Unknown`]).
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

/// Why a call failed, classified so the runner and the engine can react (retry, shrink the
/// context, give up). Messages never contain an API key: server text is redacted before it gets
/// here and cut to a readable length.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// 401/403: missing, wrong or unauthorized key.
    #[error("authentication failed (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    /// 429. `retry_after` is the server's `Retry-After`, when it sent one.
    #[error("rate limited (HTTP 429{}): {message}", fmt_retry_after(*.retry_after))]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// 5xx (and Anthropic's 529 "overloaded").
    #[error("server error (HTTP {status}{}): {message}", fmt_retry_after(*.retry_after))]
    Server {
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    /// No complete response within the per-call timeout.
    #[error("no response within {}s (per-call timeout)", .after.as_secs_f64())]
    Timeout { after: Duration },
    /// The prompt does not fit the model's context window (see [`classify_overflow`]).
    #[error("context overflow (HTTP {status}): {message}")]
    ContextOverflow { status: u16, message: String },
    /// Any other 4xx: the request was rejected (unknown model, bad tool schema, …).
    #[error("request rejected (HTTP {status}): {message}")]
    InvalidRequest { status: u16, message: String },
    /// A 2xx response that is not what the API documents (truncated or invalid JSON, missing
    /// fields); `message` names the JSON path.
    #[error("bad response: {message}")]
    BadResponse { message: String },
    /// Could not connect, or the connection broke mid-response.
    #[error("connection error: {message}")]
    Connection { message: String },
    /// The response cache could not be read or written (names the database file).
    #[error("response cache: {message}")]
    Cache { message: String },
    /// Unusable provider configuration (missing key variable, bad URL, …).
    #[error("provider configuration: {message}")]
    Config { message: String },
}

fn fmt_retry_after(d: Option<Duration>) -> String {
    match d {
        Some(d) => format!(", retry after {}s", d.as_secs_f64()),
        None => String::new(),
    }
}

impl ProviderError {
    /// Stable short name for results (`UnitError::kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderError::Auth { .. } => "provider_auth",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Server { .. } => "provider_server",
            ProviderError::Timeout { .. } => "timeout",
            ProviderError::ContextOverflow { .. } => "context_overflow",
            ProviderError::InvalidRequest { .. } => "invalid_request",
            ProviderError::BadResponse { .. } => "bad_response",
            ProviderError::Connection { .. } => "connection",
            ProviderError::Cache { .. } => "cache",
            ProviderError::Config { .. } => "provider_config",
        }
    }

    /// Worth another attempt: 429, 5xx, timeouts and broken connections.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::Server { .. }
                | ProviderError::Timeout { .. }
                | ProviderError::Connection { .. }
        )
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after, .. }
            | ProviderError::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        ProviderError::Config {
            message: message.into(),
        }
    }

    pub(crate) fn bad_response(message: impl Into<String>) -> Self {
        ProviderError::BadResponse {
            message: message.into(),
        }
    }
}

/// Lower-case fragments of the error text real providers return when the prompt does not fit.
/// digitorn's `is_context_overflow` list first, then OpenAI, Anthropic, Google, llama.cpp, vLLM.
pub const OVERFLOW_PATTERNS: &[&str] = &[
    // digitorn (peer-docs/digitorn-context-management.txt)
    "maximum context length",
    "context_length_exceeded",
    "context window",
    "reduce the length of the messages",
    "too many tokens",
    "token limit",
    // Anthropic: "prompt is too long: 208310 tokens > 200000 maximum";
    // "input length and `max_tokens` exceed context limit: …"
    "prompt is too long",
    "exceed context limit",
    // llama.cpp server: "the request exceeds the available context size, try increasing it"
    "exceeds the available context size",
    "exceed_context_size_error",
    // Google: "The input token count (1200000) exceeds the maximum number of tokens allowed"
    "exceeds the maximum number of tokens",
    // OpenAI Responses API / others: "Your input exceeds the context window of this model"
    "context length",
];

/// True when an error response means "the prompt does not fit the model's context window".
///
/// Only client errors count (4xx other than 429: a rate-limit message about "tokens per minute"
/// is not an overflow); the body is matched case-insensitively against [`OVERFLOW_PATTERNS`].
pub fn classify_overflow(status: u16, body: &str) -> bool {
    if !(400..500).contains(&status) || status == 429 {
        return false;
    }
    let lower = body.to_lowercase();
    OVERFLOW_PATTERNS.iter().any(|p| lower.contains(p))
}

/// Replaces every registered key and `secret` in `text` with `***` (see [`secrets`]).
pub(crate) fn redact(text: &str, secret: Option<&str>) -> String {
    secrets::redact(text, secret)
}

/// Cuts `text` to at most `max` characters (on a char boundary), marking the cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}… [{} bytes total]", &text[..i], text.len()),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real error bodies, as providers send them.
    const OVERFLOWS: &[(u16, &str)] = &[
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130521 tokens (129000 in the messages, 1521 in the functions). Please reduce the length of the messages or functions.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#,
        ),
        (
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#,
        ),
        (
            400,
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        ),
        (
            400,
            r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
        ),
        (
            400,
            r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
        ),
        (413, "Too many tokens in request: token limit is 32768"),
    ];

    const NOT_OVERFLOWS: &[(u16, &str)] = &[
        // A TPM rate limit mentions tokens but is a 429.
        (
            429,
            r#"{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 50000. The input or output tokens must be reduced in order to run successfully.","type":"tokens","code":"rate_limit_exceeded"}}"#,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929"}}"#,
        ),
        (
            401,
            r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        ),
        (500, "maximum context length"),
        (
            404,
            r#"{"error":{"message":"The model `gpt-9` does not exist","code":"model_not_found"}}"#,
        ),
    ];

    #[test]
    fn overflow_detected_on_real_messages() {
        for (status, body) in OVERFLOWS {
            assert!(classify_overflow(*status, body), "missed: {status} {body}");
        }
    }

    #[test]
    fn other_errors_are_not_overflow() {
        for (status, body) in NOT_OVERFLOWS {
            assert!(
                !classify_overflow(*status, body),
                "false positive: {status} {body}"
            );
        }
    }

    #[test]
    fn every_digitorn_string_matches() {
        for s in [
            "maximum context length",
            "context_length_exceeded",
            "context window",
            "reduce the length of the messages",
            "too many tokens",
            "token limit",
        ] {
            assert!(classify_overflow(
                400,
                &format!("Error: {}", s.to_uppercase())
            ));
        }
    }

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

    #[test]
    fn redact_and_clip() {
        assert_eq!(
            redact("key sk-123 and sk-123", Some("sk-123")),
            "key *** and ***"
        );
        assert_eq!(redact("x", Some("")), "x");
        assert_eq!(clip("héllo", 10), "héllo");
        assert!(clip("héllo world", 3).starts_with("hél…"));
    }

    #[test]
    fn errors_classify_retryability() {
        assert!(ProviderError::Timeout {
            after: Duration::from_secs(1)
        }
        .is_retryable());
        assert!(!ProviderError::ContextOverflow {
            status: 400,
            message: String::new()
        }
        .is_retryable());
        let e = ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(2)),
            message: "slow down".into(),
        };
        assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(
            e.to_string(),
            "rate limited (HTTP 429, retry after 2s): slow down"
        );
    }
}
