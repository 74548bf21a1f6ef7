//! How a provider call fails: [`ProviderError`] and its classification (retryable, context
//! overflow), plus the redaction and clipping applied to server text before it lands in one.

use std::time::Duration;

use super::secrets;

/// Why a call failed, classified so the runner and the engine can react (retry, shrink the
/// context, give up). Messages never contain an API key: server text is redacted before it gets
/// here and cut to a readable length.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// 401/403: missing, wrong or unauthorized key.
    #[error("authentication failed (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    /// The account cannot pay for the call: a 429 whose `error.code` or `error.type` is
    /// `insufficient_quota` (OpenAI: "You exceeded your current quota, please check your plan
    /// and billing details"), or Anthropic's 400 `invalid_request_error` saying "Your credit
    /// balance is too low to access the Anthropic API". Not retried: waiting does not refill a
    /// quota.
    #[error("quota or credit exhausted (HTTP {status}), not retried: {message}; check the account's plan and billing")]
    Billing { status: u16, message: String },
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
    #[error("context overflow{}: {message}", http_status(*status))]
    ContextOverflow { status: u16, message: String },
    /// Any other 4xx: the request was rejected (unknown model, bad tool schema, …).
    #[error("request rejected (HTTP {status}): {message}")]
    InvalidRequest { status: u16, message: String },
    /// A client error worth repeating: 408 (request timeout), 409 (conflict, e.g. a lock held by
    /// another request), or any 4xx the server marked `x-should-retry: true`.
    #[error("transient error (HTTP {status}{}): {message}", fmt_retry_after(*.retry_after))]
    Transient {
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    /// The model refused to answer (OpenAI's `refusal`, Anthropic's `stop_reason: "refusal"`).
    /// Raised by the eval agent, never retried: a refusal is not a wrong answer.
    #[error("the model refused to answer{}", if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    Refused { message: String },
    /// The answer stopped at its output limit (`finish_reason: "length"`, `stop_reason:
    /// "max_tokens"`), possibly empty because a reasoning model spent the limit thinking. Raised
    /// by the eval agent: a cut-off answer is not scored as a miss.
    #[error(
        "the answer was cut off at its output limit (finish reason `{finish_reason}`, {output_tokens} output tokens{}, {answer_chars} characters of answer); raise the provider's `max_tokens`",
        .reasoning_tokens.map(|r| format!(", {r} of them reasoning")).unwrap_or_default()
    )]
    AnswerCutOff {
        finish_reason: String,
        output_tokens: u64,
        reasoning_tokens: Option<u64>,
        answer_chars: usize,
    },
    /// The answer was empty: no text and no tool call, though the model stopped on its own
    /// (`stop`, `end_turn`). Raised by the eval agent: an empty answer is not a wrong one.
    #[error("the model returned an empty answer (finish reason `{finish_reason}`)")]
    EmptyAnswer { finish_reason: String },
    /// An error the server marked `x-should-retry: false` (e.g. a 429 for an exhausted quota):
    /// not retried, whatever its status.
    #[error("HTTP {status}, not retried (the server sent x-should-retry: false): {message}")]
    NotRetryable { status: u16, message: String },
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
            ProviderError::Billing { .. } => "provider_billing",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Server { .. } => "provider_server",
            ProviderError::Timeout { .. } => "timeout",
            ProviderError::ContextOverflow { .. } => "context_overflow",
            ProviderError::InvalidRequest { .. } => "invalid_request",
            ProviderError::Transient { .. } => "provider_transient",
            ProviderError::NotRetryable { .. } => "provider_not_retryable",
            ProviderError::Refused { .. } => "answer_refused",
            ProviderError::AnswerCutOff { .. } => "answer_cut_off",
            ProviderError::EmptyAnswer { .. } => "answer_empty",
            ProviderError::BadResponse { .. } => "bad_response",
            ProviderError::Connection { .. } => "connection",
            ProviderError::Cache { .. } => "cache",
            ProviderError::Config { .. } => "provider_config",
        }
    }

    /// Worth another attempt: 408, 409, 429, 5xx, timeouts and broken connections (and what the
    /// server marked `x-should-retry: true`).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::Server { .. }
                | ProviderError::Transient { .. }
                | ProviderError::Timeout { .. }
                | ProviderError::Connection { .. }
        )
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after, .. }
            | ProviderError::Server { retry_after, .. }
            | ProviderError::Transient { retry_after, .. } => *retry_after,
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

/// Replaces every registered key and `secret` in `text` with `***` (see `providers::secrets`).
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

/// ` (HTTP 400)` for an error status; nothing for 200, an answer that stopped at the model's
/// window (Anthropic's `model_context_window_exceeded`), where no HTTP error occurred.
fn http_status(status: u16) -> String {
    if status == 200 {
        String::new()
    } else {
        format!(" (HTTP {status})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overflow_without_an_http_error_names_no_status() {
        let e = |status| {
            ProviderError::ContextOverflow {
                status,
                message: "m".into(),
            }
            .to_string()
        };
        assert_eq!(e(400), "context overflow (HTTP 400): m");
        assert_eq!(e(200), "context overflow: m");
    }

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
