//! Provider configuration (the `[providers.*]` tables a suite embeds), its validation, and
//! [`build_provider`], which turns one into a ready `Arc<dyn Provider>`.
//!
//! ```toml
//! kind = "openai"                      # openai | anthropic | offline
//! model = "gpt-4.1-mini"
//! base_url = "http://127.0.0.1:8080/v1"  # default: the vendor's public endpoint
//! api_key_env = "OPENAI_API_KEY"       # the key is read from this variable, nowhere else
//! max_retries = 3                      # 0 disables retries
//! timeout_secs = 120                   # per HTTP attempt
//! concurrency = 4
//! rpm = 500                            # requests per minute (unset = unlimited)
//! tpm = 200000                         # tokens per minute (unset = unlimited)
//! temperature = 0.0
//! max_tokens = 1024
//! cache = true                         # false = `--no-cache`
//! tool_protocol = "native"             # native | text
//! # reasoning models (see `ProviderConfig::check_parameters`):
//! reasoning = true                     # default: guessed from the model name (o3, gpt-5, …)
//! max_tokens_field = "max_completion_tokens"  # openai: which field carries the limit
//! reasoning_effort = "low"             # openai reasoning models
//! thinking = 2048                      # anthropic extended thinking budget (≥ 1024)
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::confcore::newtypes::{timeout_duration, wait_duration};
use reqwest::Url;
use serde::{Deserialize, Serialize};

use super::cache::{CachedProvider, ResponseCache};
use super::http::{ApiKey, HttpSettings, WireTraits};
use super::limits::Limits;
use super::retry::RetryPolicy;
use super::text_tools::{TextToolOptions, TextToolProvider};
use super::{Provider, ProviderError, ProviderInfo, ProviderKind, Sampling};

/// Environment variable that overrides the default cache directory.
pub const CACHE_DIR_ENV: &str = "CTXBENCH_CACHE_DIR";
/// The cache directory [`CACHE_DIR_ENV`] names, when it is set and not empty.
pub fn cache_dir_from_env() -> Option<PathBuf> {
    std::env::var_os(CACHE_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// Cache directory used when neither the configuration nor [`CACHE_DIR_ENV`] names one
/// (relative to the current directory).
pub const DEFAULT_CACHE_DIR: &str = ".cache/ctxbench";

/// How tool calls travel: the API's own tool fields, or described in the prompt and parsed from
/// the reply text (for small local models whose server leaves `tool_calls` empty).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ToolProtocol {
    #[default]
    Native,
    Text,
}

/// Which request field carries the output limit on an OpenAI-compatible API: reasoning models
/// (and every newer OpenAI model) take `max_completion_tokens`, many compatible servers only
/// `max_tokens`. Default: `max_completion_tokens` for reasoning models, else `max_tokens`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

/// `reasoning_effort` values OpenAI documents (`ReasoningEffort` in openai-openapi; see
/// tests/data/openai-openapi/).
pub const REASONING_EFFORTS: [&str; 7] =
    ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// The smallest extended-thinking budget Anthropic accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// True when `model` names an OpenAI reasoning model by its public name: the o-series (`o1`,
/// `o3-mini`, `o4-mini`…), `gpt-5*` except the `gpt-5*-chat*` models, `codex-mini*`. A
/// deployment with another name (Azure) says so with `reasoning = true`.
pub fn is_reasoning_model_name(model: &str) -> bool {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let o_series = m.len() >= 2 && m.starts_with('o') && m.as_bytes()[1].is_ascii_digit();
    o_series || (m.starts_with("gpt-5") && !m.contains("-chat")) || m.starts_with("codex-mini")
}

fn default_max_retries() -> u32 {
    3
}
fn default_retry_initial_ms() -> u64 {
    500
}
fn default_retry_max_secs() -> f64 {
    60.0
}
fn default_timeout_secs() -> f64 {
    120.0
}
fn default_concurrency() -> usize {
    4
}
fn default_true() -> bool {
    true
}

/// Request-body keys the clients set themselves; `extra_body` may not override them.
/// (Sampling keys such as `temperature` have fields of their own but stay allowed here, for
/// servers that take them under another shape.)
pub const RESERVED_BODY_KEYS: [&str; 7] = [
    "model",
    "messages",
    "tools",
    "tool_choice",
    "stream",
    "stream_options",
    "system",
];

fn extra_body<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, serde_json::Value>, D::Error> {
    let m = BTreeMap::<String, serde_json::Value>::deserialize(d)?;
    if let Some(k) = m.keys().find(|k| RESERVED_BODY_KEYS.contains(&k.as_str())) {
        return Err(serde::de::Error::custom(format!(
            "`{k}` is set by ctxbench and may not appear in `extra_body` (reserved: {}); use the provider's own key for it where there is one",
            RESERVED_BODY_KEYS.join(", ")
        )));
    }
    Ok(m)
}

/// One provider as a suite configures it. Unknown keys are errors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Model id sent to the API (and looked up in the price table).
    #[serde(default)]
    pub model: String,
    /// API root: for `openai` the part before `/chat/completions` (e.g.
    /// `http://127.0.0.1:8080/v1`), for `anthropic` the part before `/v1/messages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key. Unset = no key sent (local
    /// servers); required for the vendors' public endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// Backoff before the first retry, doubling each time (with jitter).
    #[serde(default = "default_retry_initial_ms")]
    pub retry_initial_ms: u64,
    /// Cap on one backoff wait and on the total time one call waits out rate limits (429s are
    /// retried past `max_retries` while their waits fit in it); a server wait (`Retry-After`,
    /// `retry-after-ms`, a rate-limit reset header) longer than this fails the call instead.
    /// Seconds ≥ 0 and at most a day (86400), the bound of `timeout_secs`.
    #[serde(
        default = "default_retry_max_secs",
        deserialize_with = "crate::confcore::newtypes::wait_secs"
    )]
    pub retry_max_secs: f64,
    /// Per-attempt timeout, from sending the request to the last byte of the response, in
    /// seconds: more than 0 and at most a day (86400), as `external.timeout_secs`.
    #[serde(
        default = "default_timeout_secs",
        deserialize_with = "crate::confcore::newtypes::timeout_secs"
    )]
    pub timeout_secs: f64,
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Extra request-body fields (e.g. llama.cpp's `repeat_penalty = 1.15`); never one of
    /// [`RESERVED_BODY_KEYS`], which the client writes itself.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "extra_body"
    )]
    pub extra_body: BTreeMap<String, serde_json::Value>,
    /// Response cache on/off (`--no-cache` sets it to false).
    #[serde(default = "default_true")]
    pub cache: bool,
    /// Cache directory; default [`CACHE_DIR_ENV`], then [`DEFAULT_CACHE_DIR`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_dir: Option<PathBuf>,
    #[serde(default)]
    pub tool_protocol: ToolProtocol,
    /// The model is a reasoning model (only the default temperature/top_p; its output limit
    /// covers its reasoning). Default: guessed from the model name
    /// ([`is_reasoning_model_name`]); set it for deployments with other names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// OpenAI-compatible: the request field carrying the output limit (see [`MaxTokensField`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<MaxTokensField>,
    /// OpenAI reasoning models: `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Anthropic extended thinking: the budget in tokens (≥ 1024, below `max_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<u32>,
    /// Anthropic: ask for prompt caching (`cache_control` breakpoints on the tools, the system
    /// prompt and the history before the last turn), so the needle's and drift's questions,
    /// which re-send one long prefix, read it from the cache. Cache writes and reads are
    /// recorded and priced. (OpenAI caches long prefixes without being asked.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompt_cache: bool,
}

impl ProviderConfig {
    /// A configuration with every default, for code and tests.
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> Self {
        ProviderConfig {
            kind,
            model: model.into(),
            base_url: None,
            api_key_env: None,
            max_retries: default_max_retries(),
            retry_initial_ms: default_retry_initial_ms(),
            retry_max_secs: default_retry_max_secs(),
            timeout_secs: default_timeout_secs(),
            concurrency: default_concurrency(),
            rpm: None,
            tpm: None,
            temperature: None,
            max_tokens: None,
            top_p: None,
            seed: None,
            frequency_penalty: None,
            presence_penalty: None,
            extra_body: BTreeMap::new(),
            cache: true,
            cache_dir: None,
            tool_protocol: ToolProtocol::Native,
            reasoning: None,
            max_tokens_field: None,
            reasoning_effort: None,
            thinking: None,
            prompt_cache: false,
        }
    }

    /// Whether the model is a reasoning model: `reasoning`, else its name.
    pub fn is_reasoning(&self) -> bool {
        self.reasoning.unwrap_or_else(|| {
            self.kind == ProviderKind::Openai && is_reasoning_model_name(&self.model)
        })
    }

    /// What the wire format needs beyond the sampling defaults.
    pub fn wire_traits(&self) -> WireTraits {
        WireTraits {
            max_completion_tokens: match self.max_tokens_field {
                Some(f) => f == MaxTokensField::MaxCompletionTokens,
                None => self.is_reasoning(),
            },
            thinking_budget: self.thinking,
            prompt_cache: self.prompt_cache,
            max_tokens: self.max_tokens,
            reasoning: self.kind == ProviderKind::Openai && self.is_reasoning(),
            max_output: match self.kind {
                ProviderKind::Anthropic => super::anthropic::max_output_tokens(&self.model),
                _ => None,
            },
        }
    }

    /// Parameters this provider's API refuses, each with the key to fix: ranges per kind
    /// (Anthropic's temperature is 0..=1, OpenAI's 0..=2), the sampling a reasoning model does
    /// not take, keys of the other vendor, the thinking budget's bounds. Checked at load (each
    /// problem names its key and line) and again by [`validate`](Self::validate).
    pub fn check_parameters(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        let model = &self.model;
        let range = |out: &mut Vec<(&'static str, String)>,
                     key,
                     v: Option<f64>,
                     lo: f64,
                     hi: f64,
                     api: &str| {
            if let Some(x) = v {
                if !(lo..=hi).contains(&x) {
                    out.push((key, format!("`{key}` = {x}: {api} accepts {lo}..={hi}")));
                }
            }
        };
        match self.kind {
            ProviderKind::Offline => {}
            ProviderKind::Openai => {
                range(
                    &mut out,
                    "temperature",
                    self.temperature,
                    0.0,
                    2.0,
                    "the OpenAI API",
                );
                range(&mut out, "top_p", self.top_p, 0.0, 1.0, "the OpenAI API");
                range(
                    &mut out,
                    "frequency_penalty",
                    self.frequency_penalty,
                    -2.0,
                    2.0,
                    "the OpenAI API",
                );
                range(
                    &mut out,
                    "presence_penalty",
                    self.presence_penalty,
                    -2.0,
                    2.0,
                    "the OpenAI API",
                );
                // The `reasoning_effort` sent: `extra_body`'s when it has one (sent as is).
                let sent = match self.extra_body.get("reasoning_effort") {
                    Some(v) => v.as_str().map(|e| ("extra_body", e)),
                    None => self
                        .reasoning_effort
                        .as_deref()
                        .map(|e| ("reasoning_effort", e)),
                };
                if self.is_reasoning() {
                    // With `reasoning_effort` "none" (gpt-5.1 and later: no reasoning), OpenAI
                    // takes `temperature` and `top_p` again ("Logprobs, temperature and top-p
                    // are controllable parameters on gpt-5.1 when reasoning effort is set to
                    // \"none\"", vercel/ai issue 10932 citing OpenAI's GPT-5.1 guide); a
                    // model known not to take "none" is refused for its effort below.
                    let no_reasoning = sent.is_some_and(|(_, e)| e == "none")
                        && super::openai::reasoning_efforts(model)
                            .is_none_or(|takes| takes.contains(&"none"));
                    let defaults = [
                        ("temperature", self.temperature, 1.0, no_reasoning),
                        ("top_p", self.top_p, 1.0, no_reasoning),
                        ("frequency_penalty", self.frequency_penalty, 0.0, false),
                        ("presence_penalty", self.presence_penalty, 0.0, false),
                    ];
                    // A model that takes effort "none" takes the key then: say so.
                    let takes_none = super::openai::reasoning_efforts(model)
                        .is_some_and(|takes| takes.contains(&"none"));
                    for (key, v, default, allowed) in defaults {
                        if !allowed && v.is_some_and(|x| x != default) {
                            let or_none = if takes_none && default == 1.0 {
                                format!(
                                    ", or `reasoning_effort = \"none\"`: without reasoning it \
                                     takes `{key}`"
                                )
                            } else {
                                String::new()
                            };
                            out.push((
                                key,
                                format!(
                                "`{key}`: `{model}` is a reasoning model, which accepts only the \
                                 default ({default}); remove `{key}` (or set `reasoning = false` \
                                 if this deployment is not a reasoning model{or_none})"
                            ),
                            ));
                        }
                    }
                    if self.max_tokens_field == Some(MaxTokensField::MaxTokens) {
                        out.push(("max_tokens_field", format!(
                            "`max_tokens_field` = \"max_tokens\": reasoning models such as `{model}` \
                             refuse `max_tokens` and take `max_completion_tokens`"
                        )));
                    }
                } else {
                    // OpenAI answers 400 "Unsupported parameter: 'reasoning_effort' is not
                    // supported with this model."; `extra_body`'s is sent as it is.
                    let from_extra = self
                        .extra_body
                        .get("reasoning_effort")
                        .is_some_and(|v| !v.is_null());
                    for (key, set) in [
                        ("reasoning_effort", self.reasoning_effort.is_some()),
                        ("extra_body", from_extra),
                    ] {
                        if set {
                            out.push((
                                key,
                                format!(
                                    "`reasoning_effort`: `{model}` is not a reasoning model (set \
                                     `reasoning = true` if this deployment is one)"
                                ),
                            ));
                        }
                    }
                }
                if let Some(e) = &self.reasoning_effort {
                    if !REASONING_EFFORTS.contains(&e.as_str()) {
                        out.push((
                            "reasoning_effort",
                            format!(
                                "`reasoning_effort` = {e:?}: expected one of {}",
                                REASONING_EFFORTS.join(", ")
                            ),
                        ));
                    }
                }
                // The values this model takes (`openai::reasoning_efforts`): the API answers
                // another 400, "Unsupported value: 'reasoning_effort' does not support 'none'
                // with this model. Supported values are: 'minimal', 'low', 'medium', and
                // 'high'." The value sent is `extra_body`'s when it has one (`sent`).
                if let (Some((key, e)), Some(takes)) =
                    (sent, super::openai::reasoning_efforts(model))
                {
                    if REASONING_EFFORTS.contains(&e) && !takes.contains(&e) {
                        out.push((
                            key,
                            format!(
                                "`reasoning_effort` = {e:?}: `{model}` takes only {} (OpenAI \
                                 answers another value 400 \"Unsupported value: \
                                 'reasoning_effort' does not support '{e}' with this model\")",
                                takes.join(", ")
                            ),
                        ));
                    }
                }
                // `stop` (only `extra_body` sets it: ctxbench sends none of its own):
                // `StopConfiguration` of the OpenAPI spec is a string or 1 to 4 strings ("Invalid
                // 'stop': array too long. Expected an array with maximum length 4"), and "Not
                // supported with latest reasoning models `o3` and `o4-mini`" ("Unsupported
                // parameter: 'stop' is not supported with this model.", quoted for the gpt-5
                // family, o1 and o3-mini too).
                if let Some(stop) = self.extra_body.get("stop").filter(|v| !v.is_null()) {
                    if let Some(n) = stop
                        .as_array()
                        .map(Vec::len)
                        .filter(|n| !(1..=4).contains(n))
                    {
                        out.push((
                            "extra_body",
                            format!(
                                "`stop` in `extra_body`: {n} sequences; the OpenAI API takes 1 to 4 \
                                 (\"Invalid 'stop': array too long. Expected an array with maximum \
                                 length 4\")"
                            ),
                        ));
                    }
                    if self.is_reasoning() {
                        out.push((
                            "extra_body",
                            format!(
                                "`stop` in `extra_body`: reasoning models such as `{model}` refuse \
                                 it (\"Unsupported parameter: 'stop' is not supported with this \
                                 model.\"); remove it"
                            ),
                        ));
                    }
                }
                if self.thinking.is_some() {
                    out.push((
                        "thinking",
                        "`thinking` is Anthropic's extended thinking; for an \
                        OpenAI reasoning model use `reasoning_effort`"
                            .into(),
                    ));
                }
                if self.prompt_cache {
                    out.push((
                        "prompt_cache",
                        "`prompt_cache` asks Anthropic for caching; OpenAI-compatible APIs \
                         cache long prefixes without being asked (remove it)"
                            .into(),
                    ));
                }
            }
            ProviderKind::Anthropic => {
                range(
                    &mut out,
                    "temperature",
                    self.temperature,
                    0.0,
                    1.0,
                    "the Anthropic Messages API",
                );
                range(
                    &mut out,
                    "top_p",
                    self.top_p,
                    0.0,
                    1.0,
                    "the Anthropic Messages API",
                );
                // Claude Opus 4.7 takes no sampling parameters ("`temperature` is deprecated for
                // this model.", `anthropic::takes_sampling`).
                if !super::anthropic::takes_sampling(model) {
                    // `extra_body` is sent as it is: its sampling keys count as much as the
                    // provider's own (which `extra_body` may carry instead).
                    let extra = |k: &str| self.extra_body.get(k).is_some_and(|v| !v.is_null());
                    for (key, name, set) in [
                        ("temperature", "temperature", self.temperature.is_some()),
                        ("top_p", "top_p", self.top_p.is_some()),
                        ("extra_body", "temperature", extra("temperature")),
                        ("extra_body", "top_p", extra("top_p")),
                        ("extra_body", "top_k", extra("top_k")),
                    ] {
                        if set {
                            out.push((
                                key,
                                format!(
                                    "`{name}`: `{model}` takes no sampling parameters (Anthropic \
                                     answers 400 \"`{name}` is deprecated for this model.\"); \
                                     remove it"
                                ),
                            ));
                        }
                    }
                }
                // "`temperature` and `top_p` cannot both be specified for this model": Claude
                // Sonnet 4.5, Haiku 4.5, Opus 4.1 and later answer 400 to both; refused for every
                // Anthropic model (older ones take either alone alike, and Anthropic advises
                // changing only one).
                if self.temperature.is_some() && self.top_p.is_some() {
                    out.push((
                        "top_p",
                        "`top_p` with `temperature`: Anthropic models (Claude Sonnet 4.5, Haiku \
                         4.5, Opus 4.1 and later) refuse both in one request (\"`temperature` and \
                         `top_p` cannot both be specified for this model\"); keep one of them"
                            .into(),
                    ));
                }
                for (key, set) in [
                    ("seed", self.seed.is_some()),
                    ("frequency_penalty", self.frequency_penalty.is_some()),
                    ("presence_penalty", self.presence_penalty.is_some()),
                ] {
                    if set {
                        out.push((
                            key,
                            format!("`{key}`: the Anthropic Messages API has no {key}; remove it"),
                        ));
                    }
                }
                if self.reasoning_effort.is_some() {
                    out.push((
                        "reasoning_effort",
                        "`reasoning_effort` is OpenAI's; for Anthropic \
                        extended thinking set `thinking = <budget tokens>`"
                            .into(),
                    ));
                }
                if self.max_tokens_field.is_some() {
                    out.push((
                        "max_tokens_field",
                        "`max_tokens_field` is for OpenAI-compatible \
                        APIs; the Messages API always takes `max_tokens`"
                            .into(),
                    ));
                }
                if let Some(b) = self.thinking {
                    if b < MIN_THINKING_BUDGET {
                        out.push(("thinking", format!(
                            "`thinking` = {b}: the budget must be at least {MIN_THINKING_BUDGET} tokens"
                        )));
                    }
                    if let Some(m) = self.max_tokens {
                        if m <= b {
                            out.push((
                                "max_tokens",
                                format!(
                                "`max_tokens` = {m}: with `thinking` = {b} it must be larger than \
                                 the thinking budget (the budget is part of max_tokens)"
                            ),
                            ));
                        }
                    }
                    if self.temperature.is_some_and(|t| t != 1.0) {
                        out.push((
                            "temperature",
                            "`temperature`: extended thinking (`thinking`) \
                            accepts only the default temperature; remove it"
                                .into(),
                        ));
                    }
                    if self.top_p.is_some_and(|p| !(0.95..=1.0).contains(&p)) {
                        out.push((
                            "top_p",
                            "`top_p`: with extended thinking (`thinking`) top_p \
                            must be within 0.95..=1"
                                .into(),
                        ));
                    }
                }
                // "max_tokens: N > M, which is the maximum allowed number of output tokens for
                // <model>": the configured limit, or a thinking budget that leaves no room below
                // the model's, is refused here rather than on every call.
                if let Some(max) = super::anthropic::max_output_tokens(model) {
                    if let Some(m) = self.max_tokens.filter(|&m| m > max) {
                        out.push((
                            "max_tokens",
                            format!(
                                "`max_tokens` = {m}: `{model}` writes at most {max} output tokens"
                            ),
                        ));
                    }
                    if let Some(b) = self.thinking.filter(|&b| b >= max) {
                        out.push((
                            "thinking",
                            format!(
                                "`thinking` = {b}: the budget must be below `{model}`'s {max} \
                                 output tokens (the budget is part of max_tokens)"
                            ),
                        ));
                    }
                }
                // The extended-thinking guide: "Thinking isn't compatible with `temperature` or
                // `top_k` modifications"; `top_k` has no key of its own, so it can only come
                // from `extra_body` (which the Anthropic encoder sends verbatim).
                let thinking = self.thinking.is_some()
                    || self
                        .extra_body
                        .get("thinking")
                        .is_some_and(|t| t["type"] == "enabled");
                // Claude Opus 4.7 (and Mythos Preview) take only adaptive thinking; the budget
                // form `thinking` sends is answered 400 "\"thinking.type.enabled\" is not
                // supported for this model" (`anthropic::takes_thinking_budget`).
                if thinking && !super::anthropic::takes_thinking_budget(model) {
                    let key = if self.thinking.is_some() {
                        "thinking"
                    } else {
                        "extra_body"
                    };
                    out.push((
                        key,
                        format!(
                            "`thinking`: `{model}` takes only adaptive thinking, and Anthropic \
                             answers a thinking budget (`thinking.type` \"enabled\", what \
                             `thinking` sends) 400 \"thinking.type.enabled is not supported for \
                             this model\"; remove it (ctxbench does not send adaptive thinking)"
                        ),
                    ));
                }
                if thinking && self.extra_body.get("top_k").is_some_and(|k| !k.is_null()) {
                    out.push((
                        "extra_body",
                        "`top_k` in `extra_body`: extended thinking (`thinking`) is not \
                         compatible with top_k; remove it"
                            .into(),
                    ));
                }
            }
        }
        out
    }

    /// The default sampling parameters requests inherit.
    pub fn sampling(&self) -> Sampling {
        let mut extra = self.extra_body.clone();
        // Vendor parameters travel as body fields (they are part of the cache key there too).
        if let Some(e) = &self.reasoning_effort {
            extra
                .entry("reasoning_effort".into())
                .or_insert_with(|| serde_json::json!(e));
        }
        if let Some(b) = self.thinking {
            extra
                .entry("thinking".into())
                .or_insert_with(|| serde_json::json!({"type": "enabled", "budget_tokens": b}));
        }
        Sampling {
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            top_p: self.top_p,
            stop: Vec::new(),
            seed: self.seed,
            frequency_penalty: self.frequency_penalty,
            presence_penalty: self.presence_penalty,
            extra,
        }
    }

    /// The API root actually used.
    pub fn effective_base_url(&self) -> Option<&str> {
        let default = self.kind.default_base_url()?;
        Some(self.base_url.as_deref().unwrap_or(default))
    }

    /// The cache directory: `cache_dir`, else `$CTXBENCH_CACHE_DIR`, else `.cache/ctxbench`.
    pub fn cache_dir(&self) -> PathBuf {
        self.cache_dir
            .clone()
            .or_else(cache_dir_from_env)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CACHE_DIR))
    }

    fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            initial_delay: Duration::from_millis(self.retry_initial_ms),
            // Checked by `problems` (a value no `Duration` holds is refused there).
            max_delay: Duration::try_from_secs_f64(self.retry_max_secs).unwrap_or(Duration::MAX),
        }
    }

    /// Checks everything that can be checked before the first call, including that the API key
    /// variable is set. The runner calls this for every provider before any unit runs.
    pub fn validate(&self) -> Result<(), ProviderError> {
        if let Some((_, message)) = self.problems().into_iter().next() {
            return Err(ProviderError::config(message));
        }
        if let Some(var) = &self.api_key_env {
            ApiKey::from_env(var)?;
        }
        Ok(())
    }

    /// What [`validate`](Self::validate) refuses in the configuration itself (everything but
    /// the environment: whether the key variable is set), each with the key to fix. Checked at
    /// load, so a suite's dry run refuses what its run would, at the key's line, with no network
    /// and no key.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        if self.kind != ProviderKind::Offline && self.model.trim().is_empty() {
            out.push((
                "model",
                format!("{} provider: `model` is required", self.kind.as_str()),
            ));
        }
        // What deserialization checks, again for a configuration built in code: a value no
        // `Duration` holds would panic where it becomes one.
        if let Err(e) = timeout_duration(self.timeout_secs) {
            out.push(("timeout_secs", format!("timeout_secs: {e}")));
        }
        if let Err(e) = wait_duration(self.retry_max_secs) {
            out.push(("retry_max_secs", format!("retry_max_secs: {e}")));
        }
        if self.concurrency == 0 {
            out.push(("concurrency", "concurrency must be ≥ 1".into()));
        }
        if self.rpm == Some(0) || self.tpm == Some(0) {
            let key = if self.rpm == Some(0) { "rpm" } else { "tpm" };
            out.push((
                key,
                "rpm and tpm must be ≥ 1 when set (leave them out for no limit)".into(),
            ));
        }
        out.extend(self.check_parameters());
        if let Some(base) = self.effective_base_url() {
            match parse_base_url(base) {
                Err(ProviderError::Config { message }) => out.push(("base_url", message)),
                Err(e) => out.push(("base_url", e.to_string())),
                Ok(url) => {
                    let public = url.host_str().is_some_and(|h| HOSTED_APIS.contains(&h));
                    if public && self.api_key_env.is_none() {
                        out.push((
                            "api_key_env",
                            format!(
                                "{} provider at {base}: set `api_key_env` to the environment \
                                 variable that holds the API key",
                                self.kind.as_str()
                            ),
                        ));
                    }
                }
            }
        }
        out
    }
}

/// Hosted APIs that always need a key: a configuration pointing at one without `api_key_env`
/// is an error at validation rather than a 401 at the first call.
const HOSTED_APIS: &[&str] = &[
    "api.openai.com",
    "api.anthropic.com",
    "api.deepseek.com",
    "openrouter.ai",
    "generativelanguage.googleapis.com",
    "api.groq.com",
    "api.together.xyz",
    "api.mistral.ai",
];

/// Parses a base URL; credentials in it are refused (keys come only from `api_key_env`).
fn parse_base_url(base: &str) -> Result<Url, ProviderError> {
    let url = Url::parse(base)
        .map_err(|e| ProviderError::config(format!("base_url {base:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ProviderError::config(format!(
            "base_url {base:?}: expected an http:// or https:// URL"
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ProviderError::config(format!(
            "base_url {:?}: expected no query or fragment (the API path is appended to it)",
            url.origin().ascii_serialization()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ProviderError::config(
            "base_url must not contain credentials; put the key in the variable named by \
             api_key_env",
        ));
    }
    Ok(url)
}

/// The endpoint as recorded in provenance and cache keys: scheme, host, port and path only.
fn public_endpoint(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.as_str().trim_end_matches('/').to_string()
}

fn offline_is_not_http() -> ProviderError {
    ProviderError::Config {
        message: "the offline provider is built by `evals::offline_agent::build_provider` \
                  (it answers the evals' questions)"
            .into(),
    }
}

/// Builds the HTTP provider a configuration describes (the offline agent is built by
/// `evals::offline_agent::build_provider`): validated, limits and retries in place, and
/// wrapped in the response cache when `cache = true`.
pub fn build_provider(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    config.validate()?;
    let base = match config.kind {
        ProviderKind::Offline => return Err(offline_is_not_http()),
        _ => parse_base_url(config.effective_base_url().unwrap_or_default())?,
    };
    let key = config
        .api_key_env
        .as_deref()
        .map(ApiKey::from_env)
        .transpose()?;
    let settings = HttpSettings {
        info: ProviderInfo {
            kind: config.kind.as_str().to_string(),
            model: config.model.clone(),
            endpoint: Some(public_endpoint(&base)),
            defaults: config.sampling(),
            tool_protocol: config.tool_protocol,
        },
        base_url: base,
        key,
        retry: config.retry_policy(),
        // Checked by `problems` (a value no `Duration` holds is refused there).
        timeout: Duration::try_from_secs_f64(config.timeout_secs).unwrap_or(Duration::MAX),
        limits: Limits::new(config.concurrency, config.rpm, config.tpm),
        traits: config.wire_traits(),
    };
    let provider = match config.kind.http_provider(settings) {
        Some(p) => p?,
        None => return Err(offline_is_not_http()),
    };
    let provider: Arc<dyn Provider> = if config.cache {
        let cache = ResponseCache::open(&config.cache_dir())?;
        Arc::new(CachedProvider::new(provider, cache))
    } else {
        provider
    };
    // The text protocol wraps the whole stack: each of its calls (a correction included) is an
    // ordinary cached, rate-limited, retried request of the wrapped provider.
    Ok(match config.tool_protocol {
        ToolProtocol::Native => provider,
        ToolProtocol::Text => Arc::new(TextToolProvider::new(provider, TextToolOptions::default())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_rejected_and_defaults_apply() {
        let c: ProviderConfig = toml::from_str("kind = \"openai\"\nmodel = \"m\"").unwrap();
        assert_eq!(c, ProviderConfig::new(ProviderKind::Openai, "m"));
        let e = toml::from_str::<ProviderConfig>("kind = \"openai\"\nmodel = \"m\"\nretries = 2")
            .unwrap_err();
        assert!(e.to_string().contains("unknown field `retries`"), "{e}");
        let e = toml::from_str::<ProviderConfig>("kind = \"gemini\"").unwrap_err();
        assert!(e.to_string().contains("unknown variant"), "{e}");
    }

    #[test]
    fn validate_catches_problems_before_any_call() {
        let mut c = ProviderConfig::new(ProviderKind::Openai, "gpt-4o");
        let e = c.validate().unwrap_err();
        assert!(
            e.to_string().contains("api_key_env"),
            "public endpoint needs a key: {e}"
        );
        c.api_key_env = Some("CTXBENCH_TEST_KEY_THAT_IS_NOT_SET".into());
        let e = c.validate().unwrap_err();
        assert!(
            e.to_string()
                .contains("CTXBENCH_TEST_KEY_THAT_IS_NOT_SET is not set"),
            "{e}"
        );
        c.api_key_env = None;
        c.base_url = Some("http://127.0.0.1:8080/v1".into());
        c.validate().unwrap();
        c.base_url = Some("http://user:pw@127.0.0.1:8080/v1".into());
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("credentials"));
        c.base_url = Some("127.0.0.1:8080".into());
        assert!(c.validate().is_err());
        c.base_url = None;
        c.kind = ProviderKind::Anthropic;
        c.model = " ".into();
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("`model` is required"));
        c.model = "x".into();
        c.base_url = Some("http://127.0.0.1:1".into());
        c.concurrency = 0;
        assert!(c.validate().is_err());
        c.concurrency = 1;
        c.seed = Some(7);
        assert!(c.validate().unwrap_err().to_string().contains("no seed"));
        c.seed = None;
        c.timeout_secs = 0.0;
        assert!(c.validate().is_err());
        // A configuration built in code is checked as a file's is: no `Duration` holds 1e30.
        for (timeout, retry_max) in [
            (1e30, 60.0),
            (f64::INFINITY, 60.0),
            (60.0, 1e300),
            (1e15, 60.0),
            (86_401.0, 60.0),
            (60.0, 1e15),
            (60.0, 86_401.0),
            (60.0, -1.0),
        ] {
            c.timeout_secs = timeout;
            c.retry_max_secs = retry_max;
            assert!(c.validate().is_err(), "{timeout} {retry_max}");
        }
        c.timeout_secs = 60.0;
        c.retry_max_secs = 60.0;
        let mut ds = ProviderConfig::new(ProviderKind::Openai, "deepseek-chat");
        ds.base_url = Some("https://api.deepseek.com".into());
        assert!(ds
            .validate()
            .unwrap_err()
            .to_string()
            .contains("api_key_env"));
    }

    #[test]
    fn offline_is_not_built_here_and_text_protocol_wraps() {
        let c = ProviderConfig::new(ProviderKind::Offline, "");
        assert!(
            build_provider(&c).is_err(),
            "the evals build the offline agent"
        );
        let mut c = ProviderConfig::new(ProviderKind::Openai, "m");
        c.base_url = Some("http://127.0.0.1:9/v1".into());
        c.cache = false;
        c.tool_protocol = ToolProtocol::Text;
        let p = build_provider(&c).unwrap();
        assert_eq!(p.info().tool_protocol, ToolProtocol::Text);
        assert_eq!(p.info().model, "m");
    }

    #[test]
    fn base_url_must_be_plain() {
        let e = parse_base_url("http://127.0.0.1:8080/v1/?token=abc").unwrap_err();
        assert!(
            !e.to_string().contains("abc"),
            "the query may hold a secret: {e}"
        );
        let u = parse_base_url("http://127.0.0.1:8080/v1/").unwrap();
        assert_eq!(public_endpoint(&u), "http://127.0.0.1:8080/v1");
    }

    #[test]
    fn parameters_are_checked_per_kind() {
        let keys = |c: &ProviderConfig| -> Vec<&'static str> {
            c.check_parameters().into_iter().map(|(k, _)| k).collect()
        };
        let mut a = ProviderConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5");
        a.temperature = Some(1.5);
        assert_eq!(keys(&a), ["temperature"], "Anthropic takes 0..=1");
        a.temperature = Some(0.0);
        a.top_p = Some(0.9);
        assert_eq!(keys(&a), ["top_p"], "Anthropic takes one of the two");
        a.temperature = None;
        assert!(keys(&a).is_empty());
        let mut o = ProviderConfig::new(ProviderKind::Openai, "gpt-4.1-mini");
        o.temperature = Some(1.5);
        assert!(keys(&o).is_empty(), "OpenAI takes 0..=2");
        o.top_p = Some(0.9);
        assert!(keys(&o).is_empty(), "OpenAI takes both");
        o.top_p = None;
        o.temperature = Some(2.5);
        assert_eq!(keys(&o), ["temperature"]);
        // Reasoning models: only the defaults; by name or by `reasoning = true`.
        for model in [
            "o3",
            "o4-mini",
            "gpt-5-mini",
            "openai/gpt-5",
            "codex-mini-latest",
        ] {
            let mut r = ProviderConfig::new(ProviderKind::Openai, model);
            r.temperature = Some(0.0);
            assert_eq!(keys(&r), ["temperature"], "{model}");
            r.temperature = Some(1.0);
            assert!(keys(&r).is_empty(), "{model}: the default is accepted");
        }
        let mut azure = ProviderConfig::new(ProviderKind::Openai, "my-deployment");
        azure.temperature = Some(0.0);
        azure.reasoning_effort = Some("low".into());
        assert_eq!(keys(&azure), ["reasoning_effort"]);
        azure.reasoning = Some(true);
        assert_eq!(keys(&azure), ["temperature"]);
        assert!(azure.wire_traits().max_completion_tokens);
        let chat = ProviderConfig::new(ProviderKind::Openai, "gpt-5-chat-latest");
        assert!(!chat.is_reasoning());
        azure.temperature = None;
        azure.reasoning_effort = Some("extreme".into());
        assert_eq!(keys(&azure), ["reasoning_effort"]);
        azure.reasoning_effort = None;
        azure.max_tokens_field = Some(MaxTokensField::MaxTokens);
        assert_eq!(keys(&azure), ["max_tokens_field"]);
        // Extended thinking: ≥ 1024, below max_tokens, default temperature.
        let mut t = ProviderConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5");
        t.thinking = Some(512);
        assert_eq!(keys(&t), ["thinking"]);
        t.thinking = Some(2048);
        t.max_tokens = Some(1024);
        t.temperature = Some(0.0);
        assert_eq!(keys(&t), ["max_tokens", "temperature"]);
        t.max_tokens = Some(4096);
        t.temperature = None;
        assert!(keys(&t).is_empty());
        assert_eq!(
            t.sampling().extra["thinking"],
            serde_json::json!({"type": "enabled", "budget_tokens": 2048})
        );
        // top_k (from extra_body) with thinking, set either way: the API answers 400.
        t.extra_body.insert("top_k".into(), serde_json::json!(40));
        assert_eq!(keys(&t), ["extra_body"]);
        let mut raw = ProviderConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5");
        raw.extra_body = t.extra_body.clone();
        assert!(keys(&raw).is_empty(), "top_k without thinking is fine");
        raw.extra_body.insert(
            "thinking".into(),
            serde_json::json!({"type": "enabled", "budget_tokens": 1024}),
        );
        assert_eq!(keys(&raw), ["extra_body"]);
        // Claude Opus 4.7 takes no sampling parameters.
        let mut no_sampling = ProviderConfig::new(ProviderKind::Anthropic, "claude-opus-4-7");
        no_sampling.temperature = Some(0.0);
        assert_eq!(keys(&no_sampling), ["temperature"]);
        no_sampling.temperature = None;
        no_sampling
            .extra_body
            .insert("top_k".into(), serde_json::json!(40));
        assert_eq!(keys(&no_sampling), ["extra_body"]);
        // `extra_body` is sent as it is: its temperature and top_p too.
        for k in ["temperature", "top_p"] {
            no_sampling.extra_body.clear();
            no_sampling
                .extra_body
                .insert(k.into(), serde_json::json!(0.5));
            assert_eq!(keys(&no_sampling), ["extra_body"], "{k}");
        }
        // Claude Opus 4.7 takes no thinking budget, from `thinking` or from `extra_body`.
        let mut adaptive = ProviderConfig::new(ProviderKind::Anthropic, "claude-opus-4-7");
        adaptive.thinking = Some(2048);
        assert_eq!(keys(&adaptive), ["thinking"]);
        adaptive.thinking = None;
        adaptive.extra_body.insert(
            "thinking".into(),
            serde_json::json!({"type": "enabled", "budget_tokens": 1024}),
        );
        assert_eq!(keys(&adaptive), ["extra_body"]);
        t.extra_body.clear();
        t.reasoning_effort = Some("low".into());
        t.seed = Some(1);
        assert_eq!(keys(&t), ["seed", "reasoning_effort"]);
        let e = t.validate().unwrap_err().to_string();
        assert!(e.contains("no seed"), "{e}");
    }

    #[test]
    fn reasoning_effort_is_checked_against_the_models_values() {
        let keys = |model: &str, effort: Option<&str>, extra: Option<&str>| {
            let mut c = ProviderConfig::new(ProviderKind::Openai, model);
            c.reasoning_effort = effort.map(String::from);
            if let Some(e) = extra {
                c.extra_body
                    .insert("reasoning_effort".into(), serde_json::json!(e));
            }
            c.check_parameters()
                .into_iter()
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        };
        // Before gpt-5.1 no `none`; gpt-5.1 no `minimal`; the o-series neither.
        assert_eq!(keys("gpt-5-mini", Some("none"), None), ["reasoning_effort"]);
        assert!(keys("gpt-5-mini", Some("minimal"), None).is_empty());
        assert_eq!(keys("gpt-5.1", Some("minimal"), None), ["reasoning_effort"]);
        assert!(keys("gpt-5.1-2025-11-13", Some("none"), None).is_empty());
        assert_eq!(keys("o3", Some("minimal"), None), ["reasoning_effort"]);
        assert_eq!(keys("gpt-5", Some("xhigh"), None), ["reasoning_effort"]);
        // `extra_body`'s value is the one sent, so it is the one checked.
        assert_eq!(keys("gpt-5", Some("low"), Some("none")), ["extra_body"]);
        assert!(keys("gpt-5", Some("none"), Some("low")).is_empty());
        // A model not in the table is not checked.
        assert!(keys("gpt-5.2", Some("none"), None).is_empty());
        // Effort "none" (no reasoning) takes temperature and top_p again, where "none" is
        // taken; the penalties stay refused.
        let sampled = |model: &str, effort: &str| {
            let mut c = ProviderConfig::new(ProviderKind::Openai, model);
            c.reasoning_effort = Some(effort.into());
            c.temperature = Some(0.0);
            c.top_p = Some(0.5);
            c.presence_penalty = Some(0.5);
            let mut k: Vec<_> = c.check_parameters().into_iter().map(|(k, _)| k).collect();
            k.sort_unstable();
            k
        };
        assert_eq!(sampled("gpt-5.1", "none"), ["presence_penalty"]);
        assert_eq!(sampled("gpt-5.2", "none"), ["presence_penalty"]);
        assert_eq!(
            sampled("gpt-5.1", "low"),
            ["presence_penalty", "temperature", "top_p"]
        );
        // Its refusal says what would take the key.
        let mut c = ProviderConfig::new(ProviderKind::Openai, "gpt-5.1");
        c.temperature = Some(0.0);
        let why = c.check_parameters().remove(0).1;
        assert!(
            why.ends_with(
                "model, or `reasoning_effort = \"none\"`: without reasoning it takes `temperature`)"
            ),
            "{why}"
        );
        c.model = "o3".into();
        let why = c.check_parameters().remove(0).1;
        assert!(!why.contains("reasoning_effort"), "{why}");
        assert_eq!(
            sampled("gpt-5-mini", "none"),
            [
                "presence_penalty",
                "reasoning_effort",
                "temperature",
                "top_p"
            ]
        );
        // None at all on a model that does not reason, from either key.
        assert_eq!(keys("gpt-4o", None, Some("low")), ["extra_body"]);
        assert_eq!(keys("gpt-4o", Some("low"), None), ["reasoning_effort"]);
        // `stop` from `extra_body`: 1 to 4 sequences, none for a reasoning model.
        let stop = |model: &str, v: serde_json::Value| {
            let mut c = ProviderConfig::new(ProviderKind::Openai, model);
            c.extra_body.insert("stop".into(), v);
            c.check_parameters().len()
        };
        assert_eq!(stop("gpt-4o", serde_json::json!(["a", "b", "c", "d"])), 0);
        assert_eq!(stop("gpt-4o", serde_json::json!("\n\n")), 0);
        assert_eq!(
            stop("gpt-4o", serde_json::json!(["a", "b", "c", "d", "e"])),
            1
        );
        assert_eq!(stop("gpt-4o", serde_json::json!([])), 1);
        assert_eq!(stop("o3", serde_json::json!(["a"])), 1);
        assert_eq!(stop("gpt-5-mini", serde_json::json!("x")), 1);
        let mut c = ProviderConfig::new(ProviderKind::Openai, "gpt-5-nano");
        c.reasoning_effort = Some("none".into());
        let (_, message) = c.check_parameters().remove(0);
        assert!(
            message.contains("`gpt-5-nano` takes only minimal, low, medium, high"),
            "{message}"
        );
    }
}
