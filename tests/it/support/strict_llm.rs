//! Strict fake OpenAI and Anthropic servers: every request is checked against the structural
//! rules the real APIs enforce, and answered 400 (in the vendor's error shape, with the vendor's
//! wording) exactly where they document one; a request that passes gets the next queued
//! [`Scenario`] (or a plain answer). Sources of the rules: tests/data/provider-rules/SOURCES.md.
//!
//! Built on [`MockLlm`] (127.0.0.1, real TCP): `StrictLlm::start()` then
//! `openai_base_url()` / `base_url()`; `rejected()` lists the 400s given, with their reasons.
#![allow(dead_code)] // each test uses a different part of this module

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::mock_llm::{self as mock, MockLlm, Recorded, Reply};

/// What the server plays for one accepted request.
#[derive(Clone, Debug)]
pub enum Scenario {
    /// A plain text answer.
    Text(String),
    /// Tool calls `(name, arguments)`, played only to a request that offers tools (else the
    /// next such request gets them, and this one "ok"); OpenAI arguments as given (a string is sent verbatim, so
    /// invalid JSON can be played), Anthropic `input` as given.
    ToolCalls(Vec<(String, Value)>),
    /// The output limit was hit before any text: `finish_reason: "length"` /
    /// `stop_reason: "max_tokens"`, empty text, the limit spent on reasoning.
    LengthEmpty,
    /// `content` ended by finish (OpenAI) or stop (Anthropic) reason `reason`: `("stop", "")`
    /// is an empty answer, `("content_filter", "")` OpenAI's filtered one,
    /// `("model_context_window_exceeded", …)` Anthropic's answer stopped at the window.
    Finished(String, String),
    /// A `grep` tool call (an agent that never stops searching). Like [`Scenario::ToolCalls`],
    /// only played to a request that offers tools.
    Searching,
    /// A refusal: OpenAI's `refusal` field (content null), Anthropic's `stop_reason: "refusal"`.
    Refusal(String),
    /// 429 with one header `(name, value)`, then the request is answered normally.
    RateLimited(&'static str, String),
    /// OpenAI's 429 for an account out of credit (`insufficient_quota`; Anthropic answers 400
    /// "Your credit balance is too low").
    QuotaExhausted,
    /// Anthropic's 529 overloaded (OpenAI: 503).
    Overloaded,
    /// 500.
    ServerError,
    /// 400 context length exceeded, in the vendor's wording.
    ContextLength,
    /// A 200 whose JSON body is cut short.
    TruncatedJson,
    /// A 200 carrying `{"error": …}` (what some gateways send).
    ErrorIn200,
    /// A normal answer reporting only `fraction` of the prompt tokens sent (a server that cut
    /// the prompt to its context silently).
    UnderReportedPrompt(f64),
}

#[derive(Default)]
struct State {
    queue: VecDeque<Scenario>,
    /// Played when the queue is empty (else a plain "ok").
    default: Option<Scenario>,
    rejected: Vec<String>,
    accepted: usize,
    /// Every accepted 200 answer arrives in two pieces this far apart (a slow model).
    delay: Option<std::time::Duration>,
}

/// The running strict server (both APIs on one port: `/v1/chat/completions`, `/v1/messages`).
pub struct StrictLlm {
    pub mock: MockLlm,
    state: Arc<Mutex<State>>,
}

impl StrictLlm {
    pub async fn start() -> Self {
        let mock = MockLlm::start().await;
        let state = Arc::new(Mutex::new(State::default()));
        let st = Arc::clone(&state);
        mock.respond_with(move |r| respond(&st, r));
        StrictLlm { mock, state }
    }

    pub fn on_own_runtime() -> (tokio::runtime::Runtime, Self) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let s = rt.block_on(Self::start());
        (rt, s)
    }

    pub fn base_url(&self) -> String {
        self.mock.base_url()
    }
    pub fn openai_base_url(&self) -> String {
        self.mock.openai_base_url()
    }
    /// Plays `scenarios` for the next accepted requests, in order.
    pub fn play(&self, scenarios: impl IntoIterator<Item = Scenario>) {
        self.state.lock().unwrap().queue.extend(scenarios);
    }
    /// Plays `s` for every accepted request the queue does not cover.
    pub fn always(&self, s: Scenario) {
        self.state.lock().unwrap().default = Some(s);
    }
    /// Makes every accepted answer take about `d` (its body arrives in two pieces `d` apart).
    pub fn slow(&self, d: std::time::Duration) {
        self.state.lock().unwrap().delay = Some(d);
    }
    /// The reasons of every 400 given for a rule broken.
    pub fn rejected(&self) -> Vec<String> {
        self.state.lock().unwrap().rejected.clone()
    }
    pub fn accepted(&self) -> usize {
        self.state.lock().unwrap().accepted
    }
    pub fn requests(&self) -> Vec<Recorded> {
        self.mock.requests()
    }
}

fn respond(state: &Mutex<State>, r: &Recorded) -> Reply {
    let anthropic = r.path.ends_with("/messages");
    let violations = if anthropic {
        anthropic_violations(r)
    } else {
        openai_violations(&r.body)
    };
    let mut st = state.lock().unwrap();
    if let Some(first) = violations.first() {
        st.rejected
            .push(format!("{} {}: {}", r.path, violations.len(), first));
        return Reply::status(400, error_body(anthropic, "invalid_request_error", first));
    }
    st.accepted += 1;
    // Tools declared for a history's blocks only (`tool_choice: none`) are not offered: like
    // the real APIs, the server then calls none (a queued tool call waits for a request that
    // offers tools; `Searching` answers text).
    let choice = &r.body["tool_choice"];
    let offers_tools = r.body["tools"].as_array().is_some_and(|t| !t.is_empty())
        && *choice != json!("none")
        && choice["type"] != "none";
    let calls_tools = |s: &Scenario| matches!(s, Scenario::ToolCalls(_) | Scenario::Searching);
    let scenario = match st.queue.front() {
        Some(s) if calls_tools(s) && !offers_tools => None,
        Some(_) => st.queue.pop_front(),
        None => st
            .default
            .clone()
            .filter(|s| offers_tools || !calls_tools(s)),
    };
    let delay = st.delay;
    drop(st);
    let prompt = prompt_tokens(r);
    let scenario = match scenario {
        Some(Scenario::Searching) => Some(Scenario::ToolCalls(vec![(
            "grep".into(),
            json!({"pattern": "value"}),
        )])),
        other => other,
    };
    let reply = match scenario {
        None => Reply::ok(text(anthropic, "ok", prompt)),
        Some(s) => play(anthropic, s, prompt),
    };
    let thinking = anthropic && r.body["thinking"]["type"] == "enabled";
    let reply = if thinking {
        with_thinking(reply)
    } else {
        reply
    };
    match (delay, reply) {
        (
            Some(delay),
            Reply::Full {
                status: 200, body, ..
            },
        ) => Reply::Slow {
            body,
            chunks: 2,
            delay,
        },
        (_, reply) => reply,
    }
}

/// The signature this server gives the thinking text it issues (the real API's is opaque; a
/// fixed digest lets the server tell a block sent back unchanged from one that was edited).
pub fn signature_of(thinking: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in thinking.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{SIGNED}{h:016x}")
}

/// Prefix of the signatures this server issues (others, e.g. from recorded sessions, cannot be
/// checked here and are taken as they come).
const SIGNED: &str = "strict-sig-";

/// A 200 Anthropic answer made as the API makes it with thinking on: a signed thinking block
/// first (unless the scenario already has one).
fn with_thinking(reply: Reply) -> Reply {
    let Reply::Full {
        status: 200,
        headers,
        body,
    } = &reply
    else {
        return reply;
    };
    let Ok(mut v) = serde_json::from_str::<Value>(body) else {
        return reply;
    };
    let Some(content) = v["content"].as_array_mut() else {
        return reply;
    };
    if content.first().is_some_and(|b| b["type"] == "thinking") {
        return reply;
    }
    let n = content.len();
    let thought = format!("Thinking before {n} block(s).");
    content.insert(
        0,
        json!({"type": "thinking", "thinking": thought, "signature": signature_of(&thought)}),
    );
    Reply::Full {
        status: 200,
        headers: headers.clone(),
        body: v.to_string(),
    }
}

/// Prompt tokens as a server would count them (≈ 4 bytes a token of the body).
fn prompt_tokens(r: &Recorded) -> u64 {
    (r.raw_body.len() as u64).div_ceil(4).max(1)
}

fn error_body(anthropic: bool, kind: &str, message: &str) -> String {
    if anthropic {
        mock::anthropic_error(kind, message)
    } else {
        mock::openai_error(message, kind, "")
    }
}

fn text(anthropic: bool, content: &str, prompt: u64) -> String {
    if anthropic {
        mock::anthropic_text(content, prompt, 3)
    } else {
        mock::openai_text(content, prompt, 3)
    }
}

fn play(anthropic: bool, s: Scenario, prompt: u64) -> Reply {
    match s {
        Scenario::Text(t) => Reply::ok(text(anthropic, &t, prompt)),
        Scenario::ToolCalls(calls) => Reply::ok(if anthropic {
            let blocks: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, input))| {
                    json!({"type": "tool_use", "id": format!("toolu_{i:02}"), "name": name,
                           "input": input})
                })
                .collect();
            json!({"id": "msg_s", "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5-20250929", "content": blocks,
                   "stop_reason": "tool_use", "stop_sequence": null,
                   "usage": {"input_tokens": prompt, "output_tokens": 12}})
            .to_string()
        } else {
            let tc: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| {
                    let arguments = match args {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    json!({"id": format!("call_{i:02}"), "type": "function",
                           "function": {"name": name, "arguments": arguments}})
                })
                .collect();
            json!({"id": "chatcmpl-s", "object": "chat.completion", "model": "gpt-5-mini",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                     "tool_calls": tc}, "finish_reason": "tool_calls"}],
                   "usage": {"prompt_tokens": prompt, "completion_tokens": 12,
                             "total_tokens": prompt + 12}})
            .to_string()
        }),
        Scenario::LengthEmpty => Reply::ok(if anthropic {
            json!({"id": "msg_s", "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5-20250929",
                   "content": [{"type": "thinking", "thinking": "Let me think at length",
                                "signature": "sig-1"}],
                   "stop_reason": "max_tokens", "stop_sequence": null,
                   "usage": {"input_tokens": prompt, "output_tokens": 200}})
            .to_string()
        } else {
            json!({"id": "chatcmpl-s", "object": "chat.completion", "model": "gpt-5-mini",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": ""},
                                "finish_reason": "length"}],
                   "usage": {"prompt_tokens": prompt, "completion_tokens": 200,
                             "total_tokens": prompt + 200,
                             "completion_tokens_details": {"reasoning_tokens": 200}}})
            .to_string()
        }),
        Scenario::Finished(reason, content) => Reply::ok(if anthropic {
            let blocks: Vec<Value> = if content.is_empty() {
                Vec::new()
            } else {
                vec![json!({"type": "text", "text": content})]
            };
            json!({"id": "msg_s", "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5-20250929", "content": blocks,
                   "stop_reason": if reason == "stop" { "end_turn" } else { reason.as_str() },
                   "stop_sequence": null,
                   "usage": {"input_tokens": prompt, "output_tokens": 7}})
            .to_string()
        } else {
            json!({"id": "chatcmpl-s", "object": "chat.completion", "model": "gpt-5-mini",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                "finish_reason": reason}],
                   "usage": {"prompt_tokens": prompt, "completion_tokens": 7,
                             "total_tokens": prompt + 7}})
            .to_string()
        }),
        Scenario::Searching => Reply::ok(text(anthropic, "ok", prompt)),
        Scenario::Refusal(why) => Reply::ok(if anthropic {
            json!({"id": "msg_s", "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5-20250929", "content": [],
                   "stop_reason": "refusal", "stop_sequence": null,
                   "usage": {"input_tokens": prompt, "output_tokens": 0}})
            .to_string()
        } else {
            json!({"id": "chatcmpl-s", "object": "chat.completion", "model": "gpt-5-mini",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                     "refusal": why}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": prompt, "completion_tokens": 9,
                             "total_tokens": prompt + 9}})
            .to_string()
        }),
        Scenario::RateLimited(name, value) => Reply::status(
            429,
            if anthropic {
                mock::anthropic_error(
                    "rate_limit_error",
                    "Number of request tokens has exceeded your per-minute rate limit",
                )
            } else {
                mock::openai_error(
                    "Rate limit reached for requests",
                    "requests",
                    "rate_limit_exceeded",
                )
            },
        )
        .header(name, value),
        Scenario::QuotaExhausted => {
            if anthropic {
                Reply::status(
                    400,
                    mock::anthropic_error(
                        "invalid_request_error",
                        "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
                    ),
                )
            } else {
                Reply::status(
                    429,
                    mock::openai_error(
                        "You exceeded your current quota, please check your plan and billing details.",
                        "insufficient_quota",
                        "insufficient_quota",
                    ),
                )
            }
        }
        Scenario::Overloaded => {
            if anthropic {
                Reply::status(529, mock::anthropic_error("overloaded_error", "Overloaded"))
            } else {
                Reply::status(
                    503,
                    mock::openai_error("The engine is currently overloaded", "server_error", ""),
                )
            }
        }
        Scenario::ServerError => Reply::status(
            500,
            error_body(anthropic, "api_error", "Internal server error"),
        ),
        Scenario::ContextLength => Reply::status(
            400,
            if anthropic {
                mock::anthropic_error(
                    "invalid_request_error",
                    &format!(
                        "prompt is too long: {} tokens > 200000 maximum",
                        200_000 + prompt
                    ),
                )
            } else {
                mock::openai_error(
                    &format!("This model's maximum context length is 128000 tokens. However, your messages resulted in {} tokens. Please reduce the length of the messages.", 128_000 + prompt),
                    "invalid_request_error",
                    "context_length_exceeded",
                )
            },
        ),
        Scenario::TruncatedJson => {
            let full = text(anthropic, "cut", prompt);
            Reply::ok(full[..full.len() / 2].to_string())
        }
        Scenario::ErrorIn200 => Reply::ok(
            json!({"error": {"message": "upstream provider error", "code": 502}}).to_string(),
        ),
        Scenario::UnderReportedPrompt(f) => {
            let reported = ((prompt as f64) * f).round() as u64;
            Reply::ok(text(anthropic, "ok", reported.max(1)))
        }
    }
}

// ------------------------------------------------------------------------ OpenAI rules

/// Request keys of `CreateChatCompletionRequest` (with `CreateModelResponseProperties` and
/// `ModelResponseProperties`), openai-openapi f85dbe2. Anything else: "Unrecognized request
/// argument supplied".
const OPENAI_KEYS: &[&str] = &[
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "messages",
    "metadata",
    "modalities",
    "model",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
];

/// The most tools a request, and tool calls a message, may carry (the live API).
const MAX_ARRAY: usize = 128;

/// `ReasoningEffort`, openai-openapi f85dbe2.
const REASONING_EFFORT: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// `model` is `id`, or `id` with a dated snapshot suffix (`-2025-08-07`, `-20250929`) or a
/// routing prefix (`openai/`).
fn model_is(model: &str, id: &str) -> bool {
    let m = model.rsplit('/').next().unwrap_or(model);
    m.strip_prefix(id).is_some_and(|rest| {
        let d = rest.strip_prefix('-').unwrap_or("x");
        rest.is_empty()
            || (d.len() == 8 && d.bytes().all(|c| c.is_ascii_digit()))
            || (d.len() == 10
                && d.bytes().enumerate().all(|(i, c)| {
                    if i == 4 || i == 7 {
                        c == b'-'
                    } else {
                        c.is_ascii_digit()
                    }
                }))
    })
}

/// The `reasoning_effort` values a model takes, where a source says: openai-python's
/// `reasoning_effort` docstring up to 2.44 ("The supported reasoning values for `gpt-5.1` are
/// `none`, `low`, `medium`, and `high`"; "All models before `gpt-5.1` … do not support `none`";
/// "`xhigh` is supported for all models after `gpt-5.1-codex-max`"), and the API's 400s quoted
/// in public issues: gpt-5.1 "Unsupported value: 'reasoning_effort' does not support 'minimal'
/// with this model. Supported values are: 'none', 'low', 'medium', and 'high'."
/// (nextai-translator/nextai-translator issue 1841, livekit/agents PR 3966), gpt-5-mini
/// "… does not support 'xhigh' … Supported values are: 'minimal', 'low', 'medium', and 'high'."
/// (kaitranntt/ccs issue 344), gpt-5.1-codex "'none' is not supported … Supported values are:
/// 'low', 'medium', and 'high'" (openai/codex issue 6647), gpt-5-codex, o1 and o4-mini the same
/// three (public client tests quoting the API).
fn efforts_of(model: &str) -> Option<&'static [&'static str]> {
    const LMH: &[&str] = &["low", "medium", "high"];
    const GPT5: &[&str] = &["minimal", "low", "medium", "high"];
    const GPT51: &[&str] = &["none", "low", "medium", "high"];
    [
        ("o1", LMH),
        ("o3", LMH),
        ("o3-mini", LMH),
        ("o4-mini", LMH),
        ("gpt-5", GPT5),
        ("gpt-5-mini", GPT5),
        ("gpt-5-nano", GPT5),
        ("gpt-5-codex", LMH),
        ("gpt-5.1", GPT51),
        ("gpt-5.1-codex", LMH),
    ]
    .into_iter()
    .find(|(id, _)| model_is(model, id))
    .map(|(_, v)| v)
}

fn is_reasoning(model: &str) -> bool {
    ctxbench::providers::config::is_reasoning_model_name(model)
}

fn number_in(v: &Value, key: &str, lo: f64, hi: f64, out: &mut Vec<String>) {
    match v.get(key) {
        None | Some(Value::Null) => {}
        Some(x) => match x.as_f64() {
            Some(n) if (lo..=hi).contains(&n) => {}
            _ => out.push(format!(
                "Invalid '{key}': {x}; expected a number in {lo}..={hi}"
            )),
        },
    }
}

fn tool_name_ok(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Tool-call ids (`tool_calls[].id`, `tool_call_id`) of at most 40 characters: not in the
/// OpenAPI spec, but the live API's 400 (quoted in microsoft/autogen#6377, Portkey-AI/gateway#1062
/// and BerriAI/litellm#17343): "Invalid 'messages[3].tool_calls[0].id': string too long.
/// Expected a string with maximum length 40, but got a string with length 41 instead."
fn id_length(id: &str, at: &str, out: &mut Vec<String>) {
    let n = id.chars().count();
    if n > 40 {
        out.push(format!("Invalid '{at}': string too long. Expected a string with maximum length 40, but got a string with length {n} instead."));
    }
}

/// Every rule of the chat-completions API this server enforces; empty = accepted.
pub fn openai_violations(b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(obj) = b.as_object() else {
        return vec!["We could not parse the JSON body of your request.".into()];
    };
    for k in obj.keys() {
        if !OPENAI_KEYS.contains(&k.as_str()) {
            out.push(format!("Unrecognized request argument supplied: {k}"));
        }
    }
    let model = b["model"].as_str().unwrap_or_default();
    if model.is_empty() {
        out.push("you must provide a model parameter".into());
    }
    // ModelResponseProperties / CreateChatCompletionRequest ranges.
    number_in(b, "temperature", 0.0, 2.0, &mut out);
    number_in(b, "top_p", 0.0, 1.0, &mut out);
    number_in(b, "frequency_penalty", -2.0, 2.0, &mut out);
    number_in(b, "presence_penalty", -2.0, 2.0, &mut out);
    for key in ["max_tokens", "max_completion_tokens"] {
        if let Some(v) = b.get(key).filter(|v| !v.is_null()) {
            if v.as_u64().is_none_or(|n| n < 1) {
                out.push(format!("Invalid '{key}': expected an integer ≥ 1, got {v}"));
            }
        }
    }
    if is_reasoning(model) {
        if b.get("max_tokens").is_some() {
            out.push("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.".into());
        }
        // gpt-5.1 and later with `reasoning_effort` "none" do not reason and take `temperature`
        // and `top_p` again (OpenAI's GPT-5.1 guide, as vercel/ai issue 10932 quotes it).
        let no_reasoning = b.get("reasoning_effort").and_then(Value::as_str) == Some("none")
            && efforts_of(model).is_none_or(|takes| takes.contains(&"none"));
        for (key, default) in [("temperature", 1.0), ("top_p", 1.0)] {
            if let Some(x) = b.get(key).and_then(Value::as_f64).filter(|_| !no_reasoning) {
                if x != default {
                    out.push(format!("Unsupported value: '{key}' does not support {x} with this model. Only the default ({default}) value is supported."));
                }
            }
        }
    } else if b.get("reasoning_effort").is_some() {
        // The live API's 400 (quoted in many public client tests that recover from it).
        out.push(
            "Unsupported parameter: 'reasoning_effort' is not supported with this model.".into(),
        );
    }
    if let Some(e) = b.get("reasoning_effort") {
        if !e.as_str().is_some_and(|e| REASONING_EFFORT.contains(&e)) {
            out.push(format!("Invalid value for 'reasoning_effort': {e}"));
        }
        if let (Some(e), Some(takes)) = (e.as_str(), efforts_of(model)) {
            if REASONING_EFFORT.contains(&e) && !takes.contains(&e) {
                let quoted: Vec<String> = takes.iter().map(|t| format!("'{t}'")).collect();
                let (last, rest) = quoted.split_last().expect("a model takes some value");
                out.push(format!("Unsupported value: 'reasoning_effort' does not support '{e}' with this model. Supported values are: {}, and {last}.", rest.join(", ")));
            }
        }
    }
    // `StopConfiguration` (openai-openapi f85dbe2): a string or an array of 1 to 4 strings (the
    // 400 "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an
    // array with length 5 instead.", which FastChat's OpenAI-compatible server copies), "Not
    // supported with latest reasoning models `o3` and `o4-mini`" ("Unsupported parameter:
    // 'stop' is not supported with this model.", quoted in public client fixes for o3, o4-mini
    // and the gpt-5 family).
    match b.get("stop") {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(Value::Array(a)) if a.len() > 4 => out.push(format!("Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length {} instead.", a.len())),
        Some(Value::Array(a)) if a.is_empty() => out.push("Invalid 'stop': empty array. Expected an array with minimum length 1, but got an empty array instead.".into()),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        Some(other) => out.push(format!("Invalid type for 'stop': expected a string or an array of strings, got {other}")),
    }
    let refuses_stop = ["o3", "o4-mini"].iter().any(|id| model_is(model, id))
        || model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .starts_with("gpt-5")
            && !model.contains("-chat");
    if refuses_stop && b.get("stop").is_some_and(|v| !v.is_null()) {
        out.push("Unsupported parameter: 'stop' is not supported with this model.".into());
    }
    // `tool_choice` and `parallel_tool_calls` need `tools`: the live API's 400s "Invalid value
    // for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified." and "Invalid
    // value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are
    // specified." (quoted in Upsonic/Upsonic issue 323 and camel-ai/camel PR 3706; vLLM's
    // `serving_chat` gives the first one too); and `tools` is never empty ("Invalid 'tools':
    // empty array. Expected an array with minimum length 1").
    let no_tools = b.get("tools").is_none_or(Value::is_null);
    for key in ["tool_choice", "parallel_tool_calls"] {
        if no_tools && b.get(key).is_some_and(|v| !v.is_null()) {
            out.push(format!(
                "Invalid value for '{key}': '{key}' is only allowed when 'tools' are specified."
            ));
        }
    }
    if b["tools"].as_array().is_some_and(Vec::is_empty) {
        out.push("Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.".into());
    }
    // ChatCompletionTool / FunctionObject.
    if let Some(tools) = b.get("tools") {
        match tools.as_array() {
            Some(ts) => {
                // The live API's 400 "Invalid 'tools': array too long. Expected an array with
                // maximum length 128, but got an array with length 129 instead." (quoted in
                // cgoinglove/better-chatbot issue 197 and Coder's AI Bridge docs).
                if ts.len() > MAX_ARRAY {
                    out.push(format!("Invalid 'tools': array too long. Expected an array with maximum length {MAX_ARRAY}, but got an array with length {} instead.", ts.len()));
                }
                for (i, t) in ts.iter().enumerate() {
                    if t["type"] != "function" {
                        out.push(format!("Invalid 'tools[{i}].type': expected 'function'"));
                    }
                    let name = t["function"]["name"].as_str().unwrap_or_default();
                    if !tool_name_ok(name) {
                        out.push(format!("Invalid 'tools[{i}].function.name': string does not match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"));
                    }
                    if let Some(p) = t["function"].get("parameters") {
                        if !p.is_object() {
                            out.push(format!(
                                "Invalid 'tools[{i}].function.parameters': expected an object"
                            ));
                        }
                    }
                }
            }
            None => out.push("Invalid 'tools': expected an array".into()),
        }
    }
    // ChatCompletionRequestMessage and the tool-call protocol.
    let Some(messages) = b["messages"].as_array() else {
        out.push("Missing required parameter: 'messages'.".into());
        return out;
    };
    if messages.is_empty() {
        out.push("Invalid 'messages': empty array. Expected an array with minimum length 1".into());
    }
    let mut open: Vec<String> = Vec::new(); // tool_call ids awaiting their tool message
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "tool" && !open.is_empty() {
            out.push(format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", open.join(", ")));
            open.clear();
        }
        match role {
            "system" | "developer" | "user" => {
                let c = &m["content"];
                let ok = c.as_str().is_some() || c.as_array().is_some_and(|a| !a.is_empty());
                if !ok {
                    out.push(format!("Invalid 'messages[{i}].content': expected a string or a non-empty array"));
                }
            }
            "assistant" => {
                let c = &m["content"];
                if !(c.is_null() || c.is_string() || c.as_array().is_some_and(|a| !a.is_empty())) {
                    out.push(format!("Invalid 'messages[{i}].content'"));
                }
                let calls = m.get("tool_calls").and_then(Value::as_array);
                if (c.is_null() || c.as_str() == Some("")) && calls.is_none_or(|a| a.is_empty()) {
                    out.push(format!("Invalid 'messages[{i}]': an assistant message needs 'content' or 'tool_calls'"));
                }
                // "Invalid 'messages[i].tool_calls': array too long. Expected an array with
                // maximum length 128" (GPT-5-mini's 400, quoted in a published agent benchmark).
                if let Some(n) = calls.map(Vec::len).filter(|&n| n > MAX_ARRAY) {
                    out.push(format!("Invalid 'messages[{i}].tool_calls': array too long. Expected an array with maximum length {MAX_ARRAY}, but got an array with length {n} instead."));
                }
                for (j, tc) in calls.into_iter().flatten().enumerate() {
                    let id = tc["id"].as_str().unwrap_or_default();
                    if id.is_empty() {
                        out.push(format!("Missing required parameter: 'messages[{i}].tool_calls[{j}].id'."));
                    }
                    id_length(id, &format!("messages[{i}].tool_calls[{j}].id"), &mut out);
                    if tc["type"] != "function" {
                        out.push(format!("Invalid 'messages[{i}].tool_calls[{j}].type'"));
                    }
                    if tc["function"]["name"].as_str().is_none_or(str::is_empty) {
                        out.push(format!("Missing required parameter: 'messages[{i}].tool_calls[{j}].function.name'."));
                    }
                    // ChatCompletionMessageToolCall: arguments is a string; vLLM (and the
                    // chat templates it renders) also need it to be a JSON object.
                    match tc["function"]["arguments"].as_str() {
                        None => out.push(format!("Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': expected a string")),
                        Some(a) => {
                            if !serde_json::from_str::<Value>(a).is_ok_and(|v| v.is_object()) {
                                out.push(format!("messages[{i}].tool_calls[{j}].function.arguments is not a JSON object (vLLM rejects it): {a:?}"));
                            }
                        }
                    }
                    open.push(id.to_string());
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                id_length(id, &format!("messages[{i}].tool_call_id"), &mut out);
                if m.get("content").is_none_or(Value::is_null) {
                    out.push(format!("Missing required parameter: 'messages[{i}].content'."));
                }
                match open.iter().position(|o| o == id) {
                    Some(p) => {
                        open.remove(p);
                    }
                    None => out.push(format!("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{i}], tool_call_id {id:?})")),
                }
            }
            other => out.push(format!("Invalid value: '{other}'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.")),
        }
    }
    if !open.is_empty() {
        out.push(format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", open.join(", ")));
    }
    out
}

// --------------------------------------------------------------------- Anthropic rules

/// `MessageCreateParams` keys (anthropic-sdk-python). Anything else: "Extra inputs are not
/// permitted".
const ANTHROPIC_KEYS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "metadata",
    "stop_sequences",
    "stream",
    "temperature",
    "top_k",
    "top_p",
    "tools",
    "tool_choice",
    "thinking",
    "service_tier",
    "container",
    "mcp_servers",
];

/// Every rule of the Messages API this server enforces; empty = accepted.
pub fn anthropic_violations(r: &Recorded) -> Vec<String> {
    let mut out = Vec::new();
    if r.header("anthropic-version").is_none() {
        out.push("anthropic-version: header is required".into());
    }
    out.extend(anthropic_body_violations(&r.body));
    out
}

pub fn anthropic_body_violations(b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(obj) = b.as_object() else {
        return vec!["invalid JSON body".into()];
    };
    for k in obj.keys() {
        if !ANTHROPIC_KEYS.contains(&k.as_str()) {
            out.push(format!("{k}: Extra inputs are not permitted"));
        }
    }
    if b["model"].as_str().is_none_or(str::is_empty) {
        out.push("model: Field required".into());
    }
    let max_tokens = b["max_tokens"].as_u64();
    if max_tokens.is_none_or(|n| n < 1) {
        out.push("max_tokens: Field required (an integer ≥ 1)".into());
    }
    // A model's most output tokens: "max_tokens: 64096 > 64000, which is the maximum allowed
    // number of output tokens for claude-sonnet-4-5-20250929" (the API's 400, quoted for
    // claude-sonnet-4-5-20250929 at 64000, claude-opus-4-1-20250805 at 32000 and
    // claude-3-7-sonnet-20250219 at 64000 in public bug reports and client tests; "max_tokens:
    // 9999999 > 128000, which is the maximum allowed number of output tokens for
    // claude-opus-4-8", quoted in Effect-TS/effect PR 7129).
    let model = b["model"].as_str().unwrap_or_default();
    let cap = [
        ("claude-opus-4-8", 128_000),
        ("claude-sonnet-4-5", 64_000),
        ("claude-opus-4-1", 32_000),
        ("claude-3-7-sonnet", 64_000),
    ]
    .into_iter()
    .find(|(id, _)| {
        model.strip_prefix(id).is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix('-')
                    .is_some_and(|d| d.len() == 8 && d.bytes().all(|c| c.is_ascii_digit()))
        })
    });
    if let (Some((_, cap)), Some(m)) = (cap, max_tokens) {
        if m > cap {
            out.push(format!("max_tokens: {m} > {cap}, which is the maximum allowed number of output tokens for {model}"));
        }
    }
    // Claude Opus 4.7 takes no temperature: the API's 400 "`temperature` is deprecated for this
    // model." (its body quoted in Comfy-Org/ComfyUI issue 13923, sipeed/picoclaw issue 2939 and
    // RooCodeInc/Roo-Code issue 12162).
    if model_is(model, "claude-opus-4-7") && b.get("temperature").is_some_and(|t| !t.is_null()) {
        out.push("`temperature` is deprecated for this model.".into());
    }
    // MessageCreateParams docs: temperature "Ranges from 0.0 to 1.0", top_p likewise.
    number_in(b, "temperature", 0.0, 1.0, &mut out);
    number_in(b, "top_p", 0.0, 1.0, &mut out);
    // ThinkingConfigEnabledParam: "Must be ≥1024 and less than `max_tokens`."
    let thinking = b.get("thinking").filter(|t| t["type"] == "enabled");
    // Claude Opus 4.7 and Claude Mythos Preview take only adaptive thinking: "Manual extended
    // thinking (thinking.type: "enabled" with budget_tokens) is not supported on these models
    // and will return a 400 error" (Amazon Bedrock's adaptive-thinking guide; Anthropic's models
    // overview: Opus 4.7 "Extended thinking: No"). The API's 400, quoted in Anthropic's Agent SDK
    // quickstart (code.claude.com/docs/en/agent-sdk/quickstart) for claude-opus-4-7.
    if thinking.is_some()
        && ["claude-opus-4-7", "claude-mythos-preview"]
            .iter()
            .any(|id| model_is(model, id))
    {
        out.push("\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior.".into());
    }
    if let Some(t) = thinking {
        match t["budget_tokens"].as_u64() {
            Some(n) if n >= 1024 && max_tokens.is_some_and(|m| n < m) => {}
            _ => out.push(format!("thinking.budget_tokens: must be ≥ 1024 and less than max_tokens (got {}, max_tokens {})", t["budget_tokens"], b["max_tokens"])),
        }
        if b.get("temperature")
            .and_then(Value::as_f64)
            .is_some_and(|x| x != 1.0)
        {
            out.push("`temperature` may only be set to 1 when thinking is enabled.".into());
        }
        // The extended-thinking guide ("Feature compatibility"): "Thinking isn't compatible
        // with `temperature` or `top_k` modifications as well as forced tool use", and "you can
        // set `top_p` to values between 1 and 0.95". Forced tool use (`tool_choice` `any` or
        // `tool`) gets the API's 400 "Thinking may not be enabled when tool_choice forces tool
        // use." (quoted in many public client fixes; the guide: "Tool use with thinking only
        // supports `tool_choice: {"type": "auto"}` (the default) or `tool_choice:
        // {"type": "none"}`").
        if b.get("top_k").is_some_and(|k| !k.is_null()) {
            out.push("`top_k` is not supported when thinking is enabled.".into());
        }
        if b.get("top_p")
            .and_then(Value::as_f64)
            .is_some_and(|p| !(0.95..=1.0).contains(&p))
        {
            out.push(
                "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled."
                    .into(),
            );
        }
        if matches!(b["tool_choice"]["type"].as_str(), Some("any" | "tool")) {
            out.push("Thinking may not be enabled when tool_choice forces tool use.".into());
        }
    }
    match &b.get("system") {
        None => {}
        Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for bl in blocks {
                text_block_rules(bl, "system", &mut out);
            }
        }
        Some(_) => out.push("system: Input should be a valid string or list of text blocks".into()),
    }
    let has_tools = b
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if let Some(tools) = b.get("tools").and_then(Value::as_array) {
        // The API's 400 "tools: Tool names must be unique." (quoted in anthropics/claude-code
        // issue 10687, eclipse-theia/theia issue 16122, danny-avila/LibreChat issue 13162).
        let mut names = HashSet::new();
        if !tools.iter().all(|t| names.insert(t["name"].as_str())) {
            out.push("tools: Tool names must be unique.".into());
        }
        for (i, t) in tools.iter().enumerate() {
            if !t["name"].as_str().is_some_and(tool_name_ok) {
                out.push(format!(
                    "tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                ));
            }
            if t["input_schema"]["type"] != "object" {
                out.push(format!(
                    "tools.{i}.input_schema.type: Input should be 'object'"
                ));
            }
        }
    }
    let Some(messages) = b["messages"].as_array() else {
        out.push("messages: Field required".into());
        return out;
    };
    let mut uses_tools = false;
    let mut pending: Vec<String> = Vec::new(); // tool_use ids of the previous assistant turn
    let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant");
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => {
                if s.is_empty() {
                    out.push(format!("messages.{i}: all messages must have non-empty content except for the optional final assistant message"));
                }
                vec![json!({"type": "text", "text": s})]
            }
            Value::Array(a) => a.clone(),
            _ => {
                out.push(format!(
                    "messages.{i}.content: Input should be a valid string or list"
                ));
                Vec::new()
            }
        };
        match role {
            "user" => {
                let mut answered: HashSet<String> = HashSet::new();
                let mut seen_other = false;
                for (j, bl) in blocks.iter().enumerate() {
                    match bl["type"].as_str().unwrap_or_default() {
                        "tool_result" => {
                            uses_tools = true;
                            if seen_other {
                                out.push(format!("messages.{i}: `tool_result` blocks must come first in the user message content, before any other content"));
                            }
                            let id = bl["tool_use_id"].as_str().unwrap_or_default().to_string();
                            if !pending.contains(&id) {
                                out.push(format!("messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."));
                            }
                            // The API's 400 for an error result with nothing in it:
                            // "messages.14.content.0.tool_result: content cannot be empty if
                            // `is_error` is true" (quoted in public bug reports from Claude on
                            // AWS Bedrock and the Claude Agent SDK's session logs).
                            let empty = match bl.get("content") {
                                None | Some(Value::Null) => true,
                                Some(Value::String(c)) => c.is_empty(),
                                Some(Value::Array(a)) => a.is_empty(),
                                Some(_) => false,
                            };
                            if bl["is_error"] == true && empty {
                                out.push(format!("messages.{i}.content.{j}.tool_result: content cannot be empty if `is_error` is true"));
                            }
                            answered.insert(id);
                        }
                        "text" => {
                            seen_other = true;
                            text_block_rules(bl, &format!("messages.{i}"), &mut out);
                        }
                        "tool_use" | "thinking" | "redacted_thinking" => out.push(format!(
                            "messages.{i}: `{}` blocks are only allowed in assistant messages",
                            bl["type"].as_str().unwrap_or_default()
                        )),
                        _ => seen_other = true,
                    }
                }
                let missing: Vec<&String> =
                    pending.iter().filter(|p| !answered.contains(*p)).collect();
                if !missing.is_empty() {
                    out.push(format!("messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
                }
                pending.clear();
            }
            "assistant" => {
                if !pending.is_empty() {
                    out.push(format!("messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}", pending.join(", ")));
                    pending.clear();
                }
                let mut has_tool_use = false;
                for (j, bl) in blocks.iter().enumerate() {
                    // `ThinkingBlockParam` and `RedactedThinkingBlockParam` have no
                    // `cache_control` (anthropic-sdk-python); the API's 400, quoted in
                    // BerriAI/litellm PR 39815 and inspect_ai's Anthropic provider tests:
                    // "messages.N.content.M.thinking.cache_control: Extra inputs are not
                    // permitted".
                    let kind = bl["type"].as_str().unwrap_or_default();
                    if matches!(kind, "thinking" | "redacted_thinking")
                        && bl.get("cache_control").is_some()
                    {
                        out.push(format!("messages.{i}.content.{j}.{kind}.cache_control: Extra inputs are not permitted"));
                    }
                    match bl["type"].as_str().unwrap_or_default() {
                        "tool_use" => {
                            uses_tools = true;
                            has_tool_use = true;
                            let id = bl["id"].as_str().unwrap_or_default();
                            if id.is_empty()
                                || !id
                                    .bytes()
                                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
                            {
                                out.push(format!("messages.{i}.content: tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$' (got {id:?})"));
                            }
                            if !bl["input"].is_object() {
                                out.push(format!("messages.{i}.content: tool_use.input: Input should be a valid dictionary"));
                            }
                            pending.push(id.to_string());
                        }
                        "text" => text_block_rules(bl, &format!("messages.{i}"), &mut out),
                        "thinking" => match bl["signature"].as_str() {
                            None | Some("") => out.push(format!(
                                "messages.{i}.content: thinking.signature: Field required"
                            )),
                            // A block this server issued must come back unmodified.
                            Some(sig)
                                if sig.starts_with(SIGNED)
                                    && signature_of(bl["thinking"].as_str().unwrap_or(""))
                                        != sig =>
                            {
                                out.push(format!(
                                    "messages.{i}.content: Invalid `signature` in `thinking` block"
                                ))
                            }
                            Some(_) => {}
                        },
                        "redacted_thinking" if bl["data"].as_str().is_none_or(str::is_empty) => {
                            out.push(format!(
                                "messages.{i}.content: redacted_thinking.data: Field required"
                            ));
                        }
                        "tool_result" => out.push(format!(
                            "messages.{i}: `tool_result` blocks are only allowed in user messages"
                        )),
                        _ => {}
                    }
                }
                // With thinking on, the last assistant turn, when it holds tool calls, must start
                // with its thinking block. The API's 400: "messages.1.content.0.type: Expected
                // `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is
                // enabled, a final `assistant` message must start with a thinking block
                // (preceeding the lastmost set of `tool_use` and `tool_result` blocks)"; the
                // extended-thinking guide ("Preserving thinking blocks"): "During tool use, you
                // must pass `thinking` and `redacted_thinking` blocks back to the API, and you
                // must include the complete unmodified block back to the API", while they "can
                // [be omitted] from prior assistant role turns". Enforced here whenever the last
                // assistant turn has a `tool_use` (the strictest reading of "final"), and a
                // thinking block this server signed must come back unmodified.
                if thinking.is_some() && has_tool_use && Some(i) == last_assistant {
                    let first = blocks
                        .first()
                        .and_then(|bl| bl["type"].as_str())
                        .unwrap_or_default();
                    if first != "thinking" && first != "redacted_thinking" {
                        out.push(format!("messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block."));
                    }
                }
            }
            other => out.push(format!(
                "messages.{i}.role: Input should be 'user' or 'assistant' (got {other:?})"
            )),
        }
    }
    if !pending.is_empty() {
        out.push(format!(
            "`tool_use` ids were found without `tool_result` blocks immediately after: {}",
            pending.join(", ")
        ));
    }
    // Prompt caching: at most 4 `cache_control` breakpoints, each `{"type": "ephemeral"}`.
    let mut breakpoints = Vec::new();
    collect_cache_control(b, &mut breakpoints);
    if breakpoints.len() > 4 {
        out.push(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {}.",
            breakpoints.len()
        ));
    }
    for c in breakpoints {
        if c["type"] != "ephemeral" {
            out.push(format!(
                "cache_control.type: Input should be 'ephemeral' (got {c})"
            ));
        }
    }
    if uses_tools && !has_tools {
        out.push(
            "Requests which include `tool_use` or `tool_result` blocks must define tools.".into(),
        );
    }
    out
}

fn collect_cache_control(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "cache_control" {
                    out.push(x.clone());
                } else {
                    collect_cache_control(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_cache_control(x, out)),
        _ => {}
    }
}

/// `TextBlockParam`: a string `text` with something besides whitespace in it.
fn text_block_rules(bl: &Value, at: &str, out: &mut Vec<String>) {
    match bl["text"].as_str() {
        None => out.push(format!("{at}: text.text: Field required")),
        Some(t) if t.trim().is_empty() => out.push(format!(
            "{at}: text content blocks must contain non-whitespace text"
        )),
        Some(_) => {}
    }
}
