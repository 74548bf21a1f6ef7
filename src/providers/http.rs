//! The HTTP provider shared by the OpenAI-compatible and Anthropic wire formats: the API key
//! (redacted everywhere), limits, per-call timeout, retries, status → error classification, and
//! the tool-protocol hook.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::Url;

use super::limits::Limits;
use super::retry::{server_wait, should_retry, RetryPolicy};
use super::{
    classify_overflow, clip, redact, BoxFuture, ChatRequest, ChatResponse, Message, Outgoing,
    Provider, ProviderError, ProviderInfo, Usage,
};

/// Longest server error text kept in a [`ProviderError`] message.
const MAX_ERROR_CHARS: usize = 600;

/// An API key read from the environment. It has no `Display`, no `Serialize`, and its `Debug`
/// prints `ApiKey(***)`; the only way out is [`ApiKey::expose`], used to build the header.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// Reads the key from environment variable `var`. Missing, empty or non-Unicode → a Config
    /// error naming the variable (never its value).
    pub fn from_env(var: &str) -> Result<Self, ProviderError> {
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => {
                // From here on the value is removed from everything stored or printed.
                super::secrets::register(v.trim());
                Ok(ApiKey(v.trim().to_string()))
            }
            Ok(_) => Err(ProviderError::config(format!(
                "environment variable {var} is empty (named by api_key_env)"
            ))),
            Err(std::env::VarError::NotPresent) => Err(ProviderError::config(format!(
                "environment variable {var} is not set (named by api_key_env); export it before the run"
            ))),
            Err(std::env::VarError::NotUnicode(_)) => Err(ProviderError::config(format!(
                "environment variable {var} is not valid UTF-8 (named by api_key_env)"
            ))),
        }
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// The parts of a successful response a wire format extracts.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub message: Message,
    pub usage: Usage,
    pub usage_reported: bool,
    pub model: String,
    pub finish_reason: Option<String>,
    /// See [`ChatResponse::refusal`].
    pub refusal: Option<String>,
    /// See [`ChatResponse::reasoning_tokens`].
    pub reasoning_tokens: Option<u64>,
}

/// One API's wire format: where to post, which headers, how to encode a request and decode a
/// response. Implemented by [`super::openai::OpenAiWire`] and [`super::anthropic::AnthropicWire`].
pub trait Wire: Send + Sync + fmt::Debug + 'static {
    /// `openai`, `anthropic`.
    fn kind(&self) -> &'static str;
    /// The endpoint URL for chat calls under `base`.
    fn endpoint(&self, base: &Url) -> Result<Url, ProviderError>;
    /// Authentication and version headers.
    fn headers(&self, key: Option<&ApiKey>) -> Result<HeaderMap, ProviderError>;
    /// The JSON body of a (resolved) request.
    fn body(&self, request: &Outgoing<'_>) -> Result<serde_json::Value, ProviderError>;
    /// The body's bytes, appended to `out`: what is sent. The default prints [`body`](Self::body);
    /// a wire format may write them straight from the borrowed request (the same bytes) to save
    /// building a JSON tree of the whole conversation for every call.
    fn encode(&self, request: &Outgoing<'_>, out: &mut Vec<u8>) -> Result<(), ProviderError> {
        serde_json::to_writer(out, &self.body(request)?)
            .map_err(|e| ProviderError::config(format!("cannot encode request: {e}")))
    }
    /// Decodes a 2xx body.
    fn parse(&self, body: &[u8]) -> Result<Parsed, ProviderError>;
}

/// Rewrites requests and responses for a tool-call protocol other than the API's native one.
///
/// HOOK for `tool_protocol = "text"` (implemented in `providers/text_tools.rs`): `prepare`
/// describes the tools in the prompt and drops `tools`; `interpret` parses the fenced JSON call
/// out of the reply text into `message.tool_calls`. [`HttpProvider::with_tool_adapter`] installs
/// it; the provider calls `prepare` before encoding and `interpret` after decoding, so retries,
/// limits and the cache see the rewritten exchange.
pub trait ToolAdapter: Send + Sync + fmt::Debug {
    fn prepare(&self, request: &ChatRequest) -> Result<ChatRequest, ProviderError>;
    fn interpret(
        &self,
        request: &ChatRequest,
        response: ChatResponse,
    ) -> Result<ChatResponse, ProviderError>;
}

/// Settings of an [`HttpProvider`] other than the wire format.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub info: ProviderInfo,
    pub base_url: Url,
    pub key: Option<ApiKey>,
    pub retry: RetryPolicy,
    pub timeout: Duration,
    pub limits: Limits,
    /// What the wire format needs beyond the sampling (from the configuration).
    pub traits: WireTraits,
}

/// Facts about the model that change how a request is written (from
/// `ProviderConfig::wire_traits`): applied to every request after the provider's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireTraits {
    /// OpenAI-compatible: the output limit goes in `max_completion_tokens` (else `max_tokens`).
    pub max_completion_tokens: bool,
    /// Anthropic extended thinking budget: `max_tokens` must exceed it, so an eval's own
    /// output limit is granted on top of it.
    pub thinking_budget: Option<u32>,
    /// Anthropic: mark the stable prefix for prompt caching (see `Outgoing::prompt_cache`).
    pub prompt_cache: bool,
    /// The provider's configured `max_tokens`: it wins over a request's smaller limit (an eval's
    /// answer limit must not cut a model the user gave more room).
    pub max_tokens: Option<u32>,
    /// An OpenAI reasoning model: its output limit covers its hidden reasoning, so a request's
    /// answer limit gets [`REASONING_ALLOWANCE`] on top when the provider sets no `max_tokens`.
    pub reasoning: bool,
    /// Anthropic: the most output tokens the model takes (`anthropic::max_output_tokens`); every
    /// limit sent is cut to it (an eval's `max_output_tokens`, a thinking budget plus an
    /// answer's limit).
    pub max_output: Option<u32>,
}

/// Tokens added to an answer limit for a reasoning model's hidden reasoning (OpenAI's reasoning
/// guide suggests reserving at least 25,000 tokens for reasoning and outputs); only what is
/// used is billed. Without it an eval's 200-token answer limit is spent on reasoning and the
/// answer comes back empty with `finish_reason: "length"`.
pub const REASONING_ALLOWANCE: u32 = 25_000;

impl WireTraits {
    /// The output limit a request asking for `asked` tokens gets on the wire of `kind`: the
    /// provider's `max_tokens` when larger; else, for an OpenAI reasoning model,
    /// [`REASONING_ALLOWANCE`] on top; for Anthropic with a thinking budget `b` and
    /// `asked <= b`, `b + asked` (the budget is part of `max_tokens`); always at most the
    /// model's [`max_output`](Self::max_output) (an eval section may ask up to 128,000 tokens,
    /// which Claude Sonnet 4.5 answers 400: "max_tokens: 100000 > 64000, which is the maximum
    /// allowed number of output tokens for …"). What [`apply`](Self::apply) writes, and the
    /// most a call can be billed for output.
    pub fn answer_limit(&self, kind: &str, asked: u32) -> u32 {
        let limit = match self.max_tokens {
            Some(configured) => asked.max(configured),
            None if self.reasoning && kind == "openai" => asked.saturating_add(REASONING_ALLOWANCE),
            None => asked,
        };
        self.capped(match (self.thinking_budget, kind) {
            (Some(b), "anthropic") if limit <= b => b.saturating_add(limit),
            _ => limit,
        })
    }

    /// `limit` cut to the model's [`max_output`](Self::max_output), which the configuration
    /// checks is above the thinking budget (the API answers a larger `max_tokens` 400).
    fn capped(&self, limit: u32) -> u32 {
        self.max_output.map_or(limit, |max| limit.min(max))
    }

    /// Rewrites `o`'s output limit for the wire of `kind`. An OpenAI-compatible request whose
    /// field differs from the one the model name implies carries the limit in `extra` under the
    /// configured name (the encoder writes `extra` keys verbatim); an Anthropic request with a
    /// thinking budget gets `max_tokens` = budget + the answer's own limit when it would not
    /// exceed the budget.
    pub fn apply(&self, kind: &str, o: &mut Outgoing<'_>) {
        o.prompt_cache = self.prompt_cache;
        if let Some(asked) = o.sampling.max_tokens {
            let limit = self.answer_limit(kind, asked);
            if limit != asked {
                o.sampling.to_mut().max_tokens = Some(limit);
            }
        }
        let Some(limit) = o.sampling.max_tokens else {
            if let (Some(b), "anthropic") = (self.thinking_budget, kind) {
                let answer = super::anthropic::DEFAULT_MAX_TOKENS;
                o.sampling.to_mut().max_tokens = Some(self.capped(b.saturating_add(answer)));
            }
            return;
        };
        // (Anthropic's thinking budget is in `answer_limit` above.)
        if kind == "openai" {
            let by_name = super::openai::wants_max_completion_tokens(o.model);
            if by_name != self.max_completion_tokens {
                let key = if self.max_completion_tokens {
                    "max_completion_tokens"
                } else {
                    "max_tokens"
                };
                let s = o.sampling.to_mut();
                s.max_tokens = None;
                s.extra
                    .entry(key.to_string())
                    .or_insert_with(|| serde_json::json!(limit));
            }
        }
    }
}

/// A provider speaking one [`Wire`] format over HTTP.
#[derive(Debug)]
pub struct HttpProvider<W: Wire> {
    wire: W,
    settings: HttpSettings,
    client: reqwest::Client,
    tool_adapter: Option<Arc<dyn ToolAdapter>>,
    /// Messages counted whole for the truncation check ([`PromptCounts`]).
    counted: PromptCounts,
}

impl<W: Wire> HttpProvider<W> {
    pub fn new(wire: W, settings: HttpSettings) -> Result<Self, ProviderError> {
        // The process's TLS provider, once (reqwest is built without one; see Cargo.toml).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder =
            reqwest::Client::builder().user_agent(concat!("ctxbench/", env!("CARGO_PKG_VERSION")));
        // A server on this machine is never reached through a proxy from the environment.
        if is_loopback(&settings.base_url) {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| ProviderError::config(format!("cannot build HTTP client: {e}")))?;
        Ok(HttpProvider {
            wire,
            settings,
            client,
            tool_adapter: None,
            counted: PromptCounts::default(),
        })
    }

    /// Installs a tool-protocol adapter (see [`ToolAdapter`]).
    pub fn with_tool_adapter(mut self, adapter: Arc<dyn ToolAdapter>) -> Self {
        self.tool_adapter = Some(adapter);
        self
    }

    fn key(&self) -> Option<&str> {
        self.settings.key.as_ref().map(ApiKey::expose)
    }

    async fn attempt(
        &self,
        request: &reqwest::Request,
        estimate: u64,
    ) -> Result<(Parsed, Duration), ProviderError> {
        let limits = &self.settings.limits;
        let slot = limits.acquire(estimate).await;
        let start = Instant::now();
        let timeout = self.settings.timeout;
        let outcome = tokio::time::timeout(timeout, self.exchange(request)).await;
        drop(slot);
        let result = match outcome {
            Err(_) => Err(ProviderError::Timeout { after: timeout }),
            Ok(r) => r,
        };
        match &result {
            Ok(p) => {
                limits
                    .settle(estimate, p.usage.input + p.usage.output)
                    .await
            }
            // The server counted a rate-limited request; anything else is given back.
            Err(ProviderError::RateLimited { .. }) => {}
            Err(_) => limits.settle(estimate, 0).await,
        }
        result.map(|p| (p, start.elapsed()))
    }

    /// One HTTP exchange of `request` (a copy of it: its body is shared, never copied).
    async fn exchange(&self, request: &reqwest::Request) -> Result<Parsed, ProviderError> {
        let url = request.url();
        let request = request
            .try_clone()
            .ok_or_else(|| ProviderError::config("the request body cannot be sent twice"))?;
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|e| self.transport_error(e))?;
        let status = response.status().as_u16();
        let headers = response.headers();
        let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
        let retry_after = server_wait(header, status, SystemTime::now());
        let retry_verdict = should_retry(header);
        let raw = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(e))?;
        // The one point where provider output enters the program: echoed keys go here, before
        // anything is decoded, cached, returned or put in an error.
        let bytes = super::secrets::redact_body(&raw);
        if (200..300).contains(&status) {
            if let Some(err) = embedded_error(&bytes, self.key()) {
                return Err(err);
            }
            return self.wire.parse(&bytes).map_err(|e| match e {
                ProviderError::BadResponse { message } => ProviderError::BadResponse {
                    message: format!("{} response from {}: {message}", self.wire.kind(), url),
                },
                other => other,
            });
        }
        let error = classify_status(
            status,
            retry_after,
            &String::from_utf8_lossy(&bytes),
            self.key(),
        );
        Err(apply_retry_verdict(error, retry_verdict))
    }

    fn transport_error(&self, e: reqwest::Error) -> ProviderError {
        let timeout = e.is_timeout();
        let text = redact(&error_chain(&e.without_url()), self.key());
        if timeout {
            ProviderError::Timeout {
                after: self.settings.timeout,
            }
        } else {
            ProviderError::Connection { message: text }
        }
    }
}

impl<W: Wire> Provider for HttpProvider<W> {
    fn info(&self) -> &ProviderInfo {
        &self.settings.info
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            // HOOK(tool_protocol = "text"): the adapter rewrites the (resolved) request here …
            let adapted = match &self.tool_adapter {
                Some(a) => {
                    let resolved = self.settings.info.resolve(request);
                    let sent = a.prepare(&resolved)?;
                    Some((a, resolved, sent))
                }
                None => None,
            };
            // Without an adapter the conversation is encoded from the caller's request as it
            // is (borrowed), with the provider's defaults applied.
            let mut sent = match &adapted {
                Some((_, _, sent)) => Outgoing::from(sent),
                None => self.settings.info.outgoing(request),
            };
            self.settings.traits.apply(self.wire.kind(), &mut sent);
            // Rules both APIs share (tool names, tool-call ids, a result for every call): met
            // here, once, before either wire format encodes the request (`wire_rules`).
            let conformed = super::wire_rules::conform(sent.messages, sent.tools);
            if let Some(m) = &conformed.messages {
                sent.messages = m;
            }
            if let Some(t) = &conformed.tools {
                sent.tools = t;
            }
            // A history with tool calls or results must come with tool definitions (Anthropic
            // answers 400 without them; strict OpenAI-compatible servers too): when the caller
            // sent none, the tools the history used are defined, and not offered.
            let mut history_tools = match adapted {
                None if sent.tools.is_empty() => tools_of_history(sent.messages),
                _ => Vec::new(),
            };
            // OpenAI takes at most 128 tools ("Invalid 'tools': array too long. Expected an array
            // with maximum length 128"), and so do the compatible servers that copy its limits;
            // it checks no history call against the declared tools. The strict compatible
            // servers above ask for some declaration when tool blocks are present, none known
            // for one per call: on the OpenAI wire the first 128 used are declared (a server
            // that checked every call's tool would refuse calls past them: docs/providers.md).
            if self.wire.kind() == "openai" {
                history_tools.truncate(MAX_OPENAI_TOOLS);
            }
            if !history_tools.is_empty() {
                sent.tools = &history_tools;
                let choice = match self.wire.kind() {
                    "anthropic" => serde_json::json!({"type": "none"}),
                    _ => serde_json::json!("none"),
                };
                sent.sampling
                    .to_mut()
                    .extra
                    .entry("tool_choice".into())
                    .or_insert(choice);
            }
            let url = self.wire.endpoint(&self.settings.base_url)?;
            let mut headers = self.wire.headers(self.settings.key.as_ref())?;
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            let mut body = Vec::with_capacity(encoded_size_hint(&sent));
            self.wire.encode(&sent, &mut body)?;
            let estimate = sent.estimated_tokens();
            // Built once; every attempt sends a copy whose body shares these bytes.
            let template = self
                .client
                .post(url)
                .headers(headers)
                .body(body)
                .build()
                .map_err(|e| ProviderError::config(format!("cannot build the request: {e}")))?;
            let ((parsed, latency), attempts) = self
                .settings
                .retry
                .run(|_| self.attempt(&template, estimate))
                .await?;
            let mut message = parsed.message;
            conformed.restore(&mut message);
            message.usage = Some(parsed.usage);
            let response = ChatResponse {
                message,
                usage: parsed.usage,
                usage_reported: parsed.usage_reported,
                model: parsed.model,
                finish_reason: parsed.finish_reason,
                latency,
                attempts,
                from_cache: false,
                text_tools: None,
                refusal: parsed.refusal,
                reasoning_tokens: parsed.reasoning_tokens,
                prompt_truncated: parsed.usage_reported
                    && prompt_truncated(parsed.usage.input, |at_least| {
                        counted_prompt(&sent, at_least, &self.counted)
                    }),
            };
            // … and reads the tool call back out of the reply here.
            match &adapted {
                Some((a, resolved, _)) => a.interpret(resolved, response),
                None => Ok(response),
            }
        })
    }
}

/// ctxbench's count of a prompt: the o200k tokens of every message as sent (tool schemas not
/// counted, so the count is a lower bound of what the server sees), until the sum reaches
/// `at_least` (the rest cannot change a comparison with `at_least`). A message `counted` holds
/// is not counted again: the sum may then pass `at_least` by the whole of the message that
/// reaches it, which answers [`prompt_truncated`] the same.
fn counted_prompt(sent: &Outgoing<'_>, at_least: u64, counted: &PromptCounts) -> u64 {
    // DEFAULT_COUNTER (o200k), as the BPE counter itself: it can stop inside a message.
    let c = crate::tokens::BpeCounter::o200k();
    let mut sum = 0u64;
    for m in sent.messages {
        if sum >= at_least {
            break;
        }
        let key = PromptCounts::key(m);
        if let Some(n) = counted.get(&key) {
            sum += n;
            continue;
        }
        let left = at_least - sum;
        let n = c.count_message_up_to(m, left);
        if n < left {
            // Below the limit it was given, the counter counted the whole message.
            counted.insert(key, n);
        }
        sum += n;
    }
    sum
}

/// Whole-message o200k counts of the prompts a provider checked for truncation, by the SHA-256
/// of what is counted. A server that reports its prompt tokens has every prompt counted to its
/// end, ~1 ms of CPU for a 20,000-token prompt, and the prompts of a run repeat their messages
/// (a needle unit's two questions, the units of a trace): each is counted once. At most
/// [`PromptCounts::MAX`] are kept (the memo starts again when full).
#[derive(Debug, Default)]
struct PromptCounts(std::sync::Mutex<rustc_hash::FxHashMap<[u8; 32], u64>>);

impl PromptCounts {
    const MAX: usize = 1 << 16;

    /// The digest of what [`crate::tokens::BpeCounter::count_message_up_to`] counts, each part
    /// after its length.
    fn key(m: &Message) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let mut part = |bytes: Option<&[u8]>| match bytes {
            Some(b) => {
                h.update([1]);
                h.update((b.len() as u64).to_le_bytes());
                h.update(b);
            }
            None => h.update([0]),
        };
        part(Some(m.role.as_str().as_bytes()));
        part(Some(m.content.as_bytes()));
        part(m.name.as_deref().map(str::as_bytes));
        part(m.tool_call_id.as_deref().map(str::as_bytes));
        for call in &m.tool_calls {
            part(Some(call.name.as_bytes()));
            part(Some(
                crate::tokens::bpe::json_text(&call.arguments).as_bytes(),
            ));
        }
        h.finalize().into()
    }

    fn get(&self, key: &[u8; 32]) -> Option<u64> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .copied()
    }

    fn insert(&self, key: [u8; 32], n: u64) {
        let mut memo = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if memo.len() >= Self::MAX {
            memo.clear();
        }
        memo.insert(key, n);
    }
}

/// True when `reported` prompt tokens are below [`PROMPT_TRUNCATION_RATIO`] of ctxbench's own
/// count (computed only when the report is small enough to matter). `counted(at_least)` may
/// stop counting once its count reaches `at_least`: the answer is the same for every count from
/// there on (counting a long prompt costs ~1 ms of CPU; a server that reports far fewer tokens
/// than a long prompt has is known to have cut it after the first messages).
pub(crate) fn prompt_truncated(reported: u64, counted: impl FnOnce(u64) -> u64) -> bool {
    use super::request::{PROMPT_TRUNCATION_MIN_TOKENS, PROMPT_TRUNCATION_RATIO};
    if reported == 0 {
        return false;
    }
    let counted = counted(truncation_threshold(reported));
    counted >= PROMPT_TRUNCATION_MIN_TOKENS
        && (reported as f64) < PROMPT_TRUNCATION_RATIO * counted as f64
}

/// The smallest count of a prompt at which `reported` prompt tokens mean it was cut: every count
/// at or above it answers [`prompt_truncated`] with true, every count below with false.
fn truncation_threshold(reported: u64) -> u64 {
    use super::request::{PROMPT_TRUNCATION_MIN_TOKENS, PROMPT_TRUNCATION_RATIO};
    let cut = |n: u64| (reported as f64) < PROMPT_TRUNCATION_RATIO * n as f64;
    if reported > 1 << 40 {
        // Past f64's exact integers the stepping below may not move: count everything.
        return u64::MAX;
    }
    // reported / ratio, then stepped to the exact boundary of the float comparison.
    let mut n = ((reported as f64) / PROMPT_TRUNCATION_RATIO) as u64;
    while n > 0 && cut(n - 1) {
        n -= 1;
    }
    while !cut(n) {
        n += 1;
    }
    n.max(PROMPT_TRUNCATION_MIN_TOKENS)
}

/// The most tools an OpenAI chat-completions request may declare (the live API's limit).
const MAX_OPENAI_TOOLS: usize = 128;

/// Definitions for the tools a history's calls and results name (in order of first use), for
/// a request that carries tool blocks but no tools. Their schemas accept any object: the model
/// is not offered them (`tool_choice: none`), the API only needs them declared.
pub(crate) fn tools_of_history(messages: &[Message]) -> Vec<super::ToolDef> {
    let mut names: Vec<&str> = Vec::new();
    for m in messages {
        let used = m
            .tool_calls
            .iter()
            .map(|c| c.name.as_str())
            .chain(m.tool_call_id.as_ref().and(m.name.as_deref()));
        for n in used {
            if !n.is_empty() && !names.contains(&n) {
                names.push(n);
            }
        }
    }
    // Tool results whose call named no tool still need some tool declared.
    if names.is_empty() && messages.iter().any(|m| m.tool_call_id.is_some()) {
        names.push("tool");
    }
    names
        .into_iter()
        .map(|name| super::ToolDef {
            name: name.to_string(),
            description: "A tool the conversation used earlier (not available now).".into(),
            parameters: serde_json::json!({"type": "object"}),
        })
        .collect()
}

/// Capacity to reserve for an encoded body: the texts it carries, an eighth more for escapes
/// (newlines and quotes: ~8% of the needle sweep's ~75 KB bodies), room for the JSON around
/// each message and tool call. Too small a guess costs a doubling copy of the whole body.
fn encoded_size_hint(r: &Outgoing<'_>) -> usize {
    let texts: usize = r
        .messages
        .iter()
        .map(|m| {
            let calls: usize = m.tool_calls.iter().map(|c| c.name.len() + 256).sum();
            m.content.len() + m.content.len() / 8 + 64 + calls
        })
        .sum();
    texts + 1024 * (1 + r.tools.len())
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Builds a header value that is marked sensitive (never printed by the HTTP stack).
pub(crate) fn secret_header(
    name: &'static str,
    value: &str,
) -> Result<(HeaderName, HeaderValue), ProviderError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        ProviderError::config(format!(
            "the API key contains characters not allowed in the {name} header"
        ))
    })?;
    v.set_sensitive(true);
    Ok((HeaderName::from_static(name), v))
}

/// `reqwest` errors keep their cause (e.g. "connection reset") in `source()`.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The human part of an error body: `error.message` (OpenAI, Anthropic, most compatible
/// servers), `message`, or the raw text; redacted and clipped.
pub(crate) fn error_text(body: &str, key: Option<&str>) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let msg = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = msg.unwrap_or_else(|| body.trim().to_string());
    let text = if text.is_empty() {
        "(empty body)".to_string()
    } else {
        text
    };
    clip(&redact(&text, key), MAX_ERROR_CHARS)
}

/// Whether an error body says the account's quota is exhausted (`error.code` or `error.type`
/// `insufficient_quota`, OpenAI's billing error, sent with a 429): no wait refills it.
fn quota_exhausted(body: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return false;
    };
    ["/error/code", "/error/type"]
        .iter()
        .any(|p| v.pointer(p).and_then(|c| c.as_str()) == Some("insufficient_quota"))
}

/// Whether a 400 body is Anthropic's account out of credit: an `invalid_request_error` whose
/// message says the credit balance is too low ("Your credit balance is too low to access the
/// Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."). Not a bad
/// request: the same request passes once the account is paid for.
fn credit_too_low(body: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return false;
    };
    v.pointer("/error/type").and_then(|t| t.as_str()) == Some("invalid_request_error")
        && v.pointer("/error/message")
            .and_then(|m| m.as_str())
            .is_some_and(|m| m.to_ascii_lowercase().contains("credit balance is too low"))
}

/// Maps a non-2xx status and body to an error class.
pub(crate) fn classify_status(
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
    key: Option<&str>,
) -> ProviderError {
    let message = error_text(body, key);
    match status {
        401 | 403 => ProviderError::Auth { status, message },
        429 if quota_exhausted(body) => ProviderError::Billing { status, message },
        400 if credit_too_low(body) => ProviderError::Billing { status, message },
        429 => ProviderError::RateLimited {
            retry_after,
            message,
        },
        500..=599 => ProviderError::Server {
            status,
            retry_after,
            message,
        },
        // Anthropic's "overloaded" is a 529, which is inside 500..=599 above.
        s if classify_overflow(s, body) => ProviderError::ContextOverflow { status, message },
        // Request timeout and conflict: the SDKs of both vendors retry them.
        408 | 409 => ProviderError::Transient {
            status,
            retry_after,
            message,
        },
        400..=499 => ProviderError::InvalidRequest { status, message },
        _ => ProviderError::bad_response(format!("unexpected HTTP status {status}: {message}")),
    }
}

/// The server's `x-should-retry` verdict over the status class: `false` makes any error final,
/// `true` makes a client error retryable (what the vendors' SDKs do).
fn apply_retry_verdict(error: ProviderError, verdict: Option<bool>) -> ProviderError {
    match (verdict, error) {
        (Some(false), e) if e.is_retryable() => {
            let status = match &e {
                ProviderError::RateLimited { .. } => 429,
                ProviderError::Server { status, .. } | ProviderError::Transient { status, .. } => {
                    *status
                }
                _ => 0,
            };
            let message = match e {
                ProviderError::RateLimited { message, .. }
                | ProviderError::Server { message, .. }
                | ProviderError::Transient { message, .. } => message,
                other => other.to_string(),
            };
            ProviderError::NotRetryable { status, message }
        }
        (Some(true), ProviderError::InvalidRequest { status, message }) => {
            ProviderError::Transient {
                status,
                retry_after: None,
                message,
            }
        }
        (_, e) => e,
    }
}

/// Some OpenAI-compatible gateways (OpenRouter, LiteLLM) answer 200 with `{"error": {...}}` and
/// no result; classify those like the status they carry.
fn embedded_error(body: &[u8], key: Option<&str>) -> Option<ProviderError> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let err = v.get("error").filter(|e| e.is_object())?;
    if v.get("choices").is_some() || v.get("content").is_some() {
        return None;
    }
    let code = err
        .get("code")
        .and_then(|c| c.as_u64())
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(if quota_exhausted(&v.to_string()) {
            429
        } else {
            502
        });
    Some(classify_status(code, None, &v.to_string(), key))
}

/// A BadResponse naming the JSON path (`$.a.b[0]`) and what was expected there.
pub(crate) fn bad_at(path: &str, expected: &str) -> ProviderError {
    ProviderError::bad_response(format!("at {path}: expected {expected}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for (u, want) in [
            ("http://127.0.0.1:8080/v1", true),
            ("http://localhost:11434/v1", true),
            ("http://[::1]:8080", true),
            ("https://api.openai.com/v1", false),
            ("http://10.0.0.5:8000/v1", false),
        ] {
            assert_eq!(is_loopback(&Url::parse(u).unwrap()), want, "{u}");
        }
    }

    #[test]
    fn truncation_answer_is_the_same_with_a_count_stopped_at_the_threshold() {
        use crate::providers::request::{PROMPT_TRUNCATION_MIN_TOKENS, PROMPT_TRUNCATION_RATIO};
        let full = |reported: u64, counted: u64| {
            reported > 0
                && counted >= PROMPT_TRUNCATION_MIN_TOKENS
                && (reported as f64) < PROMPT_TRUNCATION_RATIO * counted as f64
        };
        for reported in (0..3000).chain([9_999, 16_000, 123_457, 1 << 41]) {
            for counted in (0..4000).step_by(7).chain([20_000, 155_555, 1 << 42]) {
                // A counter that stops once it reaches the limit it is given, overshooting by
                // up to one message.
                let stopped = |at_least: u64| {
                    if counted >= at_least {
                        at_least.saturating_add(counted % 13).min(counted)
                    } else {
                        counted
                    }
                };
                assert_eq!(
                    prompt_truncated(reported, stopped),
                    full(reported, counted),
                    "reported {reported}, counted {counted}"
                );
            }
        }
    }

    /// A request of `messages` alone, as the truncation check reads it.
    fn outgoing(messages: &[Message]) -> Outgoing<'_> {
        Outgoing {
            model: "m",
            messages,
            tools: &[],
            sampling: std::borrow::Cow::Owned(Default::default()),
            prompt_cache: false,
        }
    }

    /// Each message's count by the default counter (o200k), as the check counts it.
    fn default_counts(messages: &[Message]) -> Vec<u64> {
        let default = crate::tokens::counter(crate::tokens::DEFAULT_COUNTER).unwrap();
        messages.iter().map(|m| default.count_message(m)).collect()
    }

    #[test]
    fn a_prompt_is_counted_only_up_to_the_threshold() {
        let messages: Vec<Message> = (0..200)
            .map(|i| Message::user(format!("message {i} ").repeat(40)))
            .collect();
        let sent = outgoing(&messages);
        // Counted with an empty memo each time (as a provider's first prompt is).
        let cold = |n| counted_prompt(&sent, n, &PromptCounts::default());
        let whole = cold(u64::MAX);
        // The whole count is the default counter's, message by message.
        let each = default_counts(&messages);
        assert_eq!(whole, each.iter().sum::<u64>());
        let first = cold(1);
        assert!(
            whole > 20_000 && first > 0 && first < each[0],
            "{whole} {first}"
        );
        let stopped = cold(512);
        assert!((512..530).contains(&stopped), "{stopped}");
        // A server reporting 100 tokens cut this prompt; one reporting most of it did not.
        assert!(prompt_truncated(100, cold));
        assert!(!prompt_truncated(whole, cold));
    }

    #[test]
    fn a_message_counted_whole_is_not_counted_again_and_a_part_is_not_kept() {
        let messages: Vec<Message> = (0..50)
            .map(|i| Message::user(format!("line {i} of the log ").repeat(30)))
            .collect();
        let sent = outgoing(&messages);
        let each = default_counts(&messages);
        let cold = |n| counted_prompt(&sent, n, &PromptCounts::default());
        let memo = PromptCounts::default();
        // Stopped inside the first message: nothing is kept.
        assert!(counted_prompt(&sent, 1, &memo) < each[0]);
        assert!(memo.0.lock().unwrap().is_empty());
        // Counted whole: every message is kept, with the counter's own count.
        let whole = counted_prompt(&sent, u64::MAX, &memo);
        assert_eq!(whole, each.iter().sum::<u64>());
        assert_eq!(memo.0.lock().unwrap().len(), 50);
        for (m, n) in messages.iter().zip(&each) {
            assert_eq!(memo.get(&PromptCounts::key(m)), Some(*n));
        }
        // From the memo, whole messages until the sum reaches the limit.
        let expected = each
            .iter()
            .scan(0, |s, n| {
                *s += n;
                Some(*s)
            })
            .find(|&s| s >= 512)
            .unwrap();
        assert_eq!(counted_prompt(&sent, 512, &memo), expected);
        assert_eq!(counted_prompt(&sent, u64::MAX, &memo), whole);
        // The answers are the fresh counter's.
        for reported in [1, 100, 400, whole / 2, whole * 3 / 4, whole - 1, whole] {
            assert_eq!(
                prompt_truncated(reported, |n| counted_prompt(&sent, n, &memo)),
                prompt_truncated(reported, cold),
                "reported {reported}"
            );
        }
    }

    fn any_message() -> impl proptest::strategy::Strategy<Value = Message> {
        use proptest::prelude::*;
        let text = || {
            prop_oneof![
                "[a-z \n]{0,300}",
                "\\PC{0,200}",
                "[0-9]{0,400}",
                "[ \t\n]{0,200}",
                "(🦀|é|中|\\n| |a|1|\\{|\"){0,300}",
            ]
        };
        (
            0..4u8,
            text(),
            proptest::option::of("\\PC{0,10}"),
            proptest::option::of("[a-z_0-9]{0,10}"),
            proptest::collection::vec(("\\PC{0,8}", text(), any::<bool>()), 0..3),
        )
            .prop_map(|(role, content, name, id, calls)| {
                let mut m = Message::user(content);
                m.role = match role {
                    0 => crate::trace::Role::User,
                    1 => crate::trace::Role::Assistant,
                    2 => crate::trace::Role::Tool,
                    _ => crate::trace::Role::System,
                };
                m.name = name;
                m.tool_call_id = id;
                m.tool_calls = calls
                    .into_iter()
                    .map(|(name, args, raw)| crate::trace::ToolCall {
                        id: "x".into(),
                        name,
                        arguments: if raw {
                            serde_json::Value::String(args)
                        } else {
                            serde_json::json!({ "a": args })
                        },
                    })
                    .collect();
                m
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// Whatever the memo holds (counts of earlier prompts, a count stopped at a limit), the
        /// check answers as the whole count does, and the memo holds only whole counts.
        #[test]
        fn the_memo_never_changes_the_answer(
            messages in proptest::collection::vec(any_message(), 0..30),
            warm in proptest::collection::vec(proptest::prelude::any::<bool>(), 30),
            warm_limit in 0u64..5000,
            frac in 0.0f64..2.5,
        ) {
            let each = default_counts(&messages);
            let whole: u64 = each.iter().sum();
            let sent = outgoing(&messages);
            let memo = PromptCounts::default();
            counted_prompt(&sent, warm_limit, &memo);
            let some: Vec<Message> = messages
                .iter()
                .zip(&warm)
                .filter(|(_, w)| **w)
                .map(|(m, _)| m.clone())
                .collect();
            let earlier = outgoing(&some);
            counted_prompt(&earlier, u64::MAX, &memo);
            for reported in [
                (whole as f64 * frac) as u64,
                whole * 4 / 5,
                whole * 4 / 5 + 1,
                409,
                410,
                512,
            ] {
                let expected = prompt_truncated(reported, |_| whole);
                proptest::prop_assert_eq!(
                    prompt_truncated(reported, |n| counted_prompt(&sent, n, &memo)),
                    expected,
                    "reported {}",
                    reported
                );
            }
            for (m, n) in messages.iter().zip(&each) {
                if let Some(k) = memo.get(&PromptCounts::key(m)) {
                    proptest::prop_assert_eq!(k, *n);
                }
            }
        }
    }

    #[test]
    fn the_memo_key_tells_apart_every_part_that_is_counted() {
        let base = Message::tool("call_1", "bash", "out");
        let mut keys = vec![PromptCounts::key(&base)];
        let mut other = base.clone();
        other.content = "out2".into();
        keys.push(PromptCounts::key(&other));
        let mut other = base.clone();
        other.name = Some(String::new());
        keys.push(PromptCounts::key(&other));
        let mut other = base.clone();
        other.name = None;
        other.tool_call_id = None;
        keys.push(PromptCounts::key(&other));
        let mut other = base.clone();
        other.role = crate::trace::Role::User;
        keys.push(PromptCounts::key(&other));
        let mut call = Message::assistant(
            "",
            vec![crate::trace::ToolCall {
                id: "c".into(),
                name: "ls".into(),
                arguments: serde_json::json!({"path": "/"}),
            }],
        );
        keys.push(PromptCounts::key(&call));
        call.tool_calls[0].arguments = serde_json::json!({"path": "/x"});
        keys.push(PromptCounts::key(&call));
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len());
        // The same parts, the same key (the call's id is not counted).
        call.tool_calls[0].id = "d".into();
        assert_eq!(PromptCounts::key(&call), keys[6]);
    }

    #[test]
    fn api_key_debug_is_redacted() {
        let k = ApiKey("sk-very-secret".into());
        assert_eq!(format!("{k:?}"), "ApiKey(***)");
        let settings_dbg = format!("{:?}", Some(k));
        assert!(!settings_dbg.contains("sk-very-secret"));
    }

    #[test]
    fn missing_key_names_the_variable() {
        let e = ApiKey::from_env("CTXBENCH_TEST_SURELY_UNSET_VAR").unwrap_err();
        assert!(
            e.to_string()
                .contains("CTXBENCH_TEST_SURELY_UNSET_VAR is not set"),
            "{e}"
        );
    }

    #[test]
    fn statuses_are_classified() {
        let c = |s, b: &str| classify_status(s, None, b, Some("sk-abc"));
        assert!(matches!(
            c(401, "{}"),
            ProviderError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            c(403, "{}"),
            ProviderError::Auth { status: 403, .. }
        ));
        assert!(matches!(c(429, "{}"), ProviderError::RateLimited { .. }));
        assert!(matches!(
            c(503, ""),
            ProviderError::Server { status: 503, .. }
        ));
        assert!(matches!(
            c(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            ProviderError::Server { status: 529, .. }
        ));
        assert!(matches!(
            c(
                400,
                r#"{"error":{"message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#
            ),
            ProviderError::ContextOverflow { status: 400, .. }
        ));
        assert!(matches!(
            c(404, "no such model"),
            ProviderError::InvalidRequest { status: 404, .. }
        ));
        let e = c(
            401,
            r#"{"error":{"message":"Incorrect API key provided: sk-abc"}}"#,
        );
        assert_eq!(
            e.to_string(),
            "authentication failed (HTTP 401): Incorrect API key provided: ***"
        );
    }

    #[test]
    fn an_exhausted_quota_is_a_billing_error_not_a_rate_limit() {
        // OpenAI's body for an account out of credit (HTTP 429).
        let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        let e = classify_status(429, Some(Duration::from_secs(1)), body, None);
        assert!(
            matches!(e, ProviderError::Billing { status: 429, .. }),
            "{e:?}"
        );
        assert!(!e.is_retryable());
        assert_eq!(e.kind(), "provider_billing");
        assert!(
            e.to_string().contains("You exceeded your current quota"),
            "{e}"
        );
        // Either field alone says it.
        let typed = r#"{"error":{"message":"quota","type":"insufficient_quota"}}"#;
        assert!(matches!(
            classify_status(429, None, typed, None),
            ProviderError::Billing { .. }
        ));
        // A rate limit is still one.
        let limit = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert!(matches!(
            classify_status(429, None, limit, None),
            ProviderError::RateLimited { .. }
        ));
        // The same inside a 200 from a gateway.
        let e = embedded_error(body.as_bytes(), None);
        assert!(matches!(e, Some(ProviderError::Billing { .. })), "{e:?}");
    }

    #[test]
    fn anthropics_credit_balance_too_low_is_a_billing_error_not_a_bad_request() {
        // Anthropic's body for an account out of credit (HTTP 400).
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011"}"#;
        let e = classify_status(400, None, body, None);
        assert!(
            matches!(e, ProviderError::Billing { status: 400, .. }),
            "{e:?}"
        );
        assert!(!e.is_retryable());
        assert!(e.to_string().contains("Plans & Billing"), "{e}");
        // Another bad request is still one.
        let other = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#;
        assert!(matches!(
            classify_status(400, None, other, None),
            ProviderError::InvalidRequest { .. }
        ));
    }

    #[test]
    fn gateway_errors_inside_200_are_classified() {
        let e = embedded_error(br#"{"error":{"code":429,"message":"upstream busy"}}"#, None);
        assert!(
            matches!(e, Some(ProviderError::RateLimited { .. })),
            "{e:?}"
        );
        let e = embedded_error(br#"{"error":{"message":"boom"}}"#, None);
        assert!(
            matches!(e, Some(ProviderError::Server { status: 502, .. })),
            "{e:?}"
        );
        assert_eq!(
            embedded_error(br#"{"choices":[],"error":null}"#, None),
            None
        );
    }
}
