//! The OpenAI and Anthropic providers against a local fault-injecting server: wire format,
//! usage and cost, retries and their timing, timeouts, broken bodies, error classes, limits.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::support::mock_llm::{self as mock, MockLlm, Reply};
use ctxbench::pricing::{self, Price};
use ctxbench::providers::{
    build_provider, ChatRequest, Message, Provider, ProviderConfig, ProviderError, ProviderKind,
    ToolCall, ToolDef, Usage,
};
use serde_json::json;

fn openai(server: &MockLlm) -> ProviderConfig {
    let mut c = ProviderConfig::new(ProviderKind::Openai, "gpt-4o");
    c.base_url = Some(server.openai_base_url());
    c.cache = false;
    c.retry_initial_ms = 20;
    c.retry_max_secs = 3.0;
    c.timeout_secs = 5.0;
    c
}

fn anthropic(server: &MockLlm) -> ProviderConfig {
    let mut c = openai(server);
    c.kind = ProviderKind::Anthropic;
    c.model = "claude-sonnet-4-5".into();
    c.base_url = Some(server.base_url());
    c
}

fn build(c: &ProviderConfig) -> Arc<dyn Provider> {
    build_provider(c).expect("valid test config")
}

fn ask() -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("Be brief."),
        Message::user("What is 2+2?"),
    ])
}

fn grep_tool() -> ToolDef {
    ToolDef {
        name: "grep".into(),
        description: "Search files with a regex".into(),
        parameters: json!({"type": "object", "properties": {"pattern": {"type": "string"}},
                           "required": ["pattern"]}),
    }
}

/// A conversation that went through one tool round trip.
fn tool_conversation() -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("Answer from the files."),
        Message::user("What is the deploy token?"),
        Message::assistant(
            "",
            vec![ToolCall {
                id: "call_1".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "deploy token"}),
            }],
        ),
        Message::tool(
            "call_1",
            "grep",
            "notes.md:12: deploy token: teal-otter-7731",
        ),
    ])
    .with_tools(vec![grep_tool()])
}

#[tokio::test]
async fn openai_round_trip_with_tools_usage_and_cost() {
    let server = MockLlm::start().await;
    server.push([Reply::ok(mock::openai_tool_call(
        "read_file",
        json!({"path": "/notes.md", "offset": 10}),
        (2_000, 1_536, 30),
    ))]);
    let key_var = "CTXBENCH_TEST_OPENAI_ROUNDTRIP_KEY";
    std::env::set_var(key_var, "sk-roundtrip-123");
    let mut cfg = openai(&server);
    cfg.api_key_env = Some(key_var.into());
    cfg.temperature = Some(0.0);
    cfg.max_tokens = Some(256);
    let p = build(&cfg);
    let r = p.chat(&tool_conversation()).await.unwrap();

    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer sk-roundtrip-123"));
    assert_eq!(req.body["model"], "gpt-4o");
    assert_eq!(req.body["temperature"], 0.0);
    assert_eq!(req.body["max_tokens"], 256);
    assert_eq!(req.body["tools"][0]["function"]["name"], "grep");
    assert_eq!(req.body["messages"][2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(req.body["messages"][3]["role"], "tool");
    assert_eq!(req.body["messages"][3]["tool_call_id"], "call_1");

    assert_eq!(r.model, "gpt-4o-2024-08-06");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.attempts, 1);
    assert!(!r.from_cache);
    let call = &r.message.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_abc", "read_file")
    );
    assert_eq!(call.arguments, json!({"path": "/notes.md", "offset": 10}));
    let usage = Usage {
        input: 2_000,
        output: 30,
        cache_read: 1_536,
        cache_write: 0,
    };
    assert_eq!(r.usage, usage);
    assert_eq!(r.message.usage, Some(usage));

    // Priced by the reported snapshot id: 464 fresh × $2.50 + 1,536 cached × $1.25 + 30 × $10.
    let want = (464.0 * 2.50 + 1_536.0 * 1.25 + 30.0 * 10.0) / 1e6;
    match pricing::cost(&r.model, &r.usage) {
        Price::Known { usd, priced_as, .. } => {
            assert!((usd - want).abs() < 1e-12, "{usd} vs {want}");
            assert_eq!(priced_as, "gpt-4o");
        }
        other => panic!("expected a price, got {other:?}"),
    }
}

#[tokio::test]
async fn anthropic_round_trip_with_tools_usage_and_cost() {
    let server = MockLlm::start().await;
    server.push([Reply::ok(mock::anthropic_tool_use(
        "grep",
        json!({"pattern": "token"}),
        (12, 5_000, 1_000, 40),
    ))]);
    let key_var = "CTXBENCH_TEST_ANTHROPIC_ROUNDTRIP_KEY";
    std::env::set_var(key_var, "sk-ant-roundtrip-456");
    let mut cfg = anthropic(&server);
    cfg.api_key_env = Some(key_var.into());
    let p = build(&cfg);
    let r = p.chat(&tool_conversation()).await.unwrap();

    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-roundtrip-456"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.body["system"], "Answer from the files.");
    assert_eq!(req.body["max_tokens"], 4096);
    assert_eq!(
        req.body["tools"][0]["input_schema"]["required"][0],
        "pattern"
    );
    let msgs = req.body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1]["content"][0]["type"], "tool_use");
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "call_1");

    assert_eq!(r.message.content, "Searching.");
    assert_eq!(r.message.tool_calls[0].name, "grep");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
    let usage = Usage {
        input: 6_012,
        output: 40,
        cache_read: 5_000,
        cache_write: 1_000,
    };
    assert_eq!(r.usage, usage);
    let want = (12.0 * 3.0 + 5_000.0 * 0.30 + 1_000.0 * 3.75 + 40.0 * 15.0) / 1e6;
    let got = pricing::cost(&r.model, &r.usage)
        .usd()
        .expect("sonnet 4.5 is priced");
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}

#[tokio::test]
async fn retry_after_seconds_is_honoured() {
    let server = MockLlm::start().await;
    server.push([
        Reply::status(
            429,
            mock::openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
        )
        .header("retry-after", "1"),
        Reply::ok(mock::openai_text("4", 20, 1)),
    ]);
    let p = build(&openai(&server));
    let start = Instant::now();
    let r = p.chat(&ask()).await.unwrap();
    assert_eq!(r.message.content, "4");
    assert_eq!(r.attempts, 2);
    let reqs = server.requests();
    let gap = reqs[1].at - reqs[0].at;
    assert!(
        gap >= Duration::from_secs(1),
        "retried after {gap:?}, server asked for 1 s"
    );
    assert!(
        gap < Duration::from_secs(3),
        "no extra backoff on top: {gap:?}"
    );
    assert!(start.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn retry_after_ms_alone_is_waited_out() {
    let server = MockLlm::start().await;
    server.push([
        Reply::status(
            429,
            mock::openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
        )
        .header("retry-after-ms", "3000"),
        Reply::ok(mock::openai_text("4", 20, 1)),
    ]);
    let r = build(&openai(&server)).chat(&ask()).await.unwrap();
    assert_eq!((r.message.content.as_str(), r.attempts), ("4", 2));
    let reqs = server.requests();
    let gap = reqs[1].at - reqs[0].at;
    assert!(
        gap >= Duration::from_secs(3) && gap < Duration::from_millis(3600),
        "retried after {gap:?}, server asked for 3 s"
    );
}

#[tokio::test]
async fn rate_limit_reset_headers_are_waited_out() {
    let server = MockLlm::start().await;
    let reset = record_rfc3339(SystemTime::now() + Duration::from_millis(1500));
    server.push([
        Reply::status(
            429,
            mock::openai_error("Rate limit reached", "tokens", "rate_limit_exceeded"),
        )
        .header("x-ratelimit-remaining-tokens", "0")
        .header("x-ratelimit-reset-tokens", "1s250ms")
        .header("x-ratelimit-remaining-requests", "10")
        .header("x-ratelimit-reset-requests", "20ms"),
        Reply::ok(mock::openai_text("4", 20, 1)),
    ]);
    build(&openai(&server)).chat(&ask()).await.unwrap();
    let reqs = server.requests();
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_millis(1250), "{gap:?}");
    // Anthropic: an RFC 3339 reset time for the exhausted limit.
    let server = MockLlm::start().await;
    server.push([
        Reply::status(429, mock::anthropic_error("rate_limit_error", "slow down"))
            .header("anthropic-ratelimit-input-tokens-remaining", "0")
            .header("anthropic-ratelimit-input-tokens-reset", reset.clone()),
        Reply::ok(mock::anthropic_text("4", 20, 1)),
    ]);
    build(&anthropic(&server)).chat(&ask()).await.unwrap();
    let second = server.requests()[1].at_wall;
    let until = SystemTime::UNIX_EPOCH
        + Duration::from_secs_f64(ctxbench::engine::cooldown::rfc3339_secs(&reset).unwrap());
    assert!(second >= until, "retried before the reset time {reset}");
}

/// `2026-01-02T03:04:05.678Z` for `t` (millisecond precision, rounded up).
fn record_rfc3339(t: SystemTime) -> String {
    let ms = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 1;
    let secs = (ms / 1000) as u64;
    let base =
        ctxbench::record::run_info::rfc3339_utc(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
    format!("{}.{:03}Z", base.trim_end_matches('Z'), ms % 1000)
}

#[tokio::test]
async fn request_timeout_and_conflict_are_retried_should_retry_false_is_not() {
    let server = MockLlm::start().await;
    server.push([
        Reply::status(408, mock::openai_error("timeout", "server", "timeout")),
        Reply::status(409, mock::openai_error("conflict", "server", "conflict")),
        Reply::ok(mock::openai_text("4", 20, 1)),
    ]);
    let mut cfg = openai(&server);
    cfg.retry_initial_ms = 5;
    let r = build(&cfg).chat(&ask()).await.unwrap();
    assert_eq!(r.attempts, 3);
    // A rate limit the server marks final is not waited out.
    let server = MockLlm::start().await;
    server.push([Reply::status(
        429,
        mock::openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
    )
    .header("x-should-retry", "false")]);
    let mut cfg = openai(&server);
    cfg.retry_initial_ms = 5;
    let e = build(&cfg).chat(&ask()).await.unwrap_err();
    assert!(
        matches!(e, ProviderError::NotRetryable { status: 429, .. }),
        "{e:?}"
    );
    assert_eq!(server.request_count(), 1);
    // An exhausted quota is not retried either, header or not: a billing error.
    for header in [Some("false"), None] {
        let server = MockLlm::start().await;
        let reply = Reply::status(
            429,
            mock::openai_error(
                "You exceeded your current quota",
                "insufficient_quota",
                "insufficient_quota",
            ),
        );
        server.push([match header {
            Some(v) => reply.header("x-should-retry", v),
            None => reply,
        }]);
        let mut cfg = openai(&server);
        cfg.retry_initial_ms = 5;
        let e = build(&cfg).chat(&ask()).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Billing { status: 429, .. }),
            "{e:?}"
        );
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn a_per_minute_limit_outlasts_the_retry_count() {
    // Five 429s without any header, max_retries 2: still retried while the waits fit the cap.
    let server = MockLlm::start().await;
    server.push((0..5).map(|_| {
        Reply::status(
            429,
            mock::openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
        )
    }));
    server.push([Reply::ok(mock::openai_text("4", 20, 1))]);
    let mut cfg = openai(&server);
    cfg.max_retries = 2;
    cfg.retry_initial_ms = 10;
    cfg.retry_max_secs = 5.0;
    let r = build(&cfg).chat(&ask()).await.unwrap();
    assert_eq!(r.attempts, 6);
}

#[tokio::test]
async fn retry_after_http_date_is_honoured() {
    let server = MockLlm::start().await;
    let until = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    let until_time = httpdate::parse_http_date(&until).unwrap();
    server.push([
        Reply::status(503, mock::anthropic_error("overloaded_error", "Overloaded"))
            .header("retry-after", until.clone()),
        Reply::ok(mock::anthropic_text("4", 20, 1)),
    ]);
    let p = build(&anthropic(&server));
    let r = p.chat(&ask()).await.unwrap();
    assert_eq!((r.message.content.as_str(), r.attempts), ("4", 2));
    let second = server.requests()[1].at_wall;
    assert!(
        second >= until_time,
        "retried before the Retry-After date {until}"
    );
}

#[tokio::test]
async fn server_errors_back_off_then_succeed() {
    let server = MockLlm::start().await;
    server.push([
        Reply::status(500, "{}"),
        Reply::status(503, "Service Unavailable"),
        Reply::ok(mock::openai_text("fine", 5, 1)),
    ]);
    let mut cfg = openai(&server);
    cfg.retry_initial_ms = 100;
    let p = build(&cfg);
    let r = p.chat(&ask()).await.unwrap();
    assert_eq!((r.message.content.as_str(), r.attempts), ("fine", 3));
    let reqs = server.requests();
    // Equal jitter: the first wait is in [50, 100] ms, the second in [100, 200] ms.
    let g1 = reqs[1].at - reqs[0].at;
    let g2 = reqs[2].at - reqs[1].at;
    assert!(g1 >= Duration::from_millis(50), "{g1:?}");
    assert!(g2 >= Duration::from_millis(100), "{g2:?}");
}

#[tokio::test]
async fn max_retries_zero_disables_retries() {
    let server = MockLlm::start().await;
    server.push([
        Reply::status(503, "busy"),
        Reply::ok(mock::openai_text("late", 1, 1)),
    ]);
    let mut cfg = openai(&server);
    cfg.max_retries = 0;
    let e = build(&cfg).chat(&ask()).await.unwrap_err();
    assert!(
        matches!(e, ProviderError::Server { status: 503, .. }),
        "{e:?}"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_error_is_returned() {
    let server = MockLlm::start().await;
    server.push((0..5).map(|_| Reply::status(502, "bad gateway")));
    let mut cfg = openai(&server);
    cfg.max_retries = 2;
    cfg.retry_initial_ms = 5;
    let e = build(&cfg).chat(&ask()).await.unwrap_err();
    assert!(
        matches!(e, ProviderError::Server { status: 502, .. }),
        "{e:?}"
    );
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_fails_at_once() {
    let server = MockLlm::start().await;
    server.push([Reply::status(
        429,
        mock::openai_error("slow down", "requests", "rate_limit_exceeded"),
    )
    .header("retry-after", "3600")]);
    let start = Instant::now();
    let e = build(&openai(&server)).chat(&ask()).await.unwrap_err();
    match &e {
        ProviderError::RateLimited {
            retry_after,
            message,
        } => {
            assert_eq!(*retry_after, Some(Duration::from_secs(3600)));
            assert_eq!(message, "slow down");
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
    assert_eq!(e.kind(), "rate_limited");
    assert_eq!(server.request_count(), 1);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "no wait for an over-long Retry-After"
    );
}

#[tokio::test]
async fn a_hung_connection_times_out_and_is_retried() {
    let server = MockLlm::start().await;
    server.push([Reply::Hang, Reply::Hang]);
    let mut cfg = openai(&server);
    cfg.timeout_secs = 0.3;
    cfg.max_retries = 1;
    cfg.retry_initial_ms = 10;
    let start = Instant::now();
    let e = build(&cfg).chat(&ask()).await.unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(e, ProviderError::Timeout { after } if after == Duration::from_millis(300)),
        "{e:?}"
    );
    assert_eq!(
        server.request_count(),
        2,
        "one retry after the first timeout"
    );
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_hang_then_success_recovers() {
    let server = MockLlm::start().await;
    server.push([Reply::Hang, Reply::ok(mock::anthropic_text("back", 3, 1))]);
    let mut cfg = anthropic(&server);
    cfg.timeout_secs = 0.3;
    let r = build(&cfg).chat(&ask()).await.unwrap();
    assert_eq!((r.message.content.as_str(), r.attempts), ("back", 2));
}

#[tokio::test]
async fn a_slow_body_within_the_timeout_succeeds_and_counts_its_latency() {
    let server = MockLlm::start().await;
    server.push([Reply::Slow {
        body: mock::openai_text("slow but sure", 9, 3),
        chunks: 4,
        delay: Duration::from_millis(100),
    }]);
    let mut cfg = openai(&server);
    cfg.timeout_secs = 3.0;
    let r = build(&cfg).chat(&ask()).await.unwrap();
    assert_eq!(r.message.content, "slow but sure");
    assert!(
        r.latency >= Duration::from_millis(390),
        "latency {:?}",
        r.latency
    );
}

#[tokio::test]
async fn a_slow_body_past_the_timeout_is_a_timeout() {
    let server = MockLlm::start().await;
    server.push([Reply::Slow {
        body: mock::openai_text("too slow", 9, 3),
        chunks: 5,
        delay: Duration::from_millis(150),
    }]);
    let mut cfg = openai(&server);
    cfg.timeout_secs = 0.3;
    cfg.max_retries = 0;
    let e = build(&cfg).chat(&ask()).await.unwrap_err();
    assert!(
        matches!(e, ProviderError::Timeout { .. }),
        "the timeout covers the body: {e:?}"
    );
}

#[tokio::test]
async fn truncated_json_is_a_bad_response_and_not_retried() {
    let server = MockLlm::start().await;
    let full = mock::openai_text("never complete", 5, 5);
    server.push([Reply::ok(&full[..full.len() / 2])]);
    let e = build(&openai(&server)).chat(&ask()).await.unwrap_err();
    match &e {
        ProviderError::BadResponse { message } => {
            assert!(message.contains("not valid JSON"), "{message}");
            assert!(
                message.contains("/v1/chat/completions"),
                "names the endpoint: {message}"
            );
        }
        other => panic!("expected BadResponse, got {other:?}"),
    }
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_connection_cut_mid_body_is_retried() {
    let server = MockLlm::start().await;
    let full = mock::anthropic_text("whole", 5, 5);
    server.push([
        Reply::CutOff {
            body: full[..20].to_string(),
            declared_extra: 500,
        },
        Reply::Close,
        Reply::ok(full),
    ]);
    let r = build(&anthropic(&server)).chat(&ask()).await.unwrap();
    assert_eq!((r.message.content.as_str(), r.attempts), ("whole", 3));
}

#[tokio::test]
async fn a_connection_reset_is_retried() {
    let server = MockLlm::start().await;
    server.push([
        Reply::Reset,
        Reply::ok(mock::openai_text("after reset", 5, 1)),
    ]);
    let r = build(&openai(&server)).chat(&ask()).await.unwrap();
    assert_eq!((r.message.content.as_str(), r.attempts), ("after reset", 2));
}

#[tokio::test]
async fn a_broken_connection_without_retries_is_a_connection_error() {
    let server = MockLlm::start().await;
    server.push([Reply::Reset]);
    let mut cfg = openai(&server);
    cfg.max_retries = 0;
    let e = build(&cfg).chat(&ask()).await.unwrap_err();
    assert!(matches!(e, ProviderError::Connection { .. }), "{e:?}");
    server.push([Reply::Close]);
    let e = build(&cfg).chat(&ask()).await.unwrap_err();
    assert!(matches!(e, ProviderError::Connection { .. }), "{e:?}");
    assert_eq!(e.kind(), "connection");
}

#[tokio::test]
async fn context_overflow_is_classified_for_both_apis_and_not_retried() {
    let server = MockLlm::start().await;
    server.push([
        Reply::status(400, mock::openai_error(
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130521 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
        )),
        Reply::status(400, mock::anthropic_error(
            "invalid_request_error",
            "prompt is too long: 208310 tokens > 200000 maximum",
        )),
        Reply::status(400, r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#),
    ]);
    let e1 = build(&openai(&server)).chat(&ask()).await.unwrap_err();
    let e2 = build(&anthropic(&server)).chat(&ask()).await.unwrap_err();
    let e3 = build(&openai(&server)).chat(&ask()).await.unwrap_err();
    for e in [&e1, &e2, &e3] {
        assert!(
            matches!(e, ProviderError::ContextOverflow { status: 400, .. }),
            "{e:?}"
        );
        assert_eq!(e.kind(), "context_overflow");
    }
    assert!(e2.to_string().contains("prompt is too long"), "{e2}");
    assert_eq!(server.request_count(), 3, "no retries on overflow");
}

#[tokio::test]
async fn other_client_errors_are_classified() {
    let server = MockLlm::start().await;
    server.push([
        Reply::status(
            401,
            mock::anthropic_error("authentication_error", "invalid x-api-key"),
        ),
        Reply::status(
            404,
            mock::openai_error(
                "The model `gpt-9` does not exist",
                "invalid_request_error",
                "model_not_found",
            ),
        ),
        Reply::status(200, r#"{"choices":[]}"#),
    ]);
    let e = build(&anthropic(&server)).chat(&ask()).await.unwrap_err();
    assert!(
        matches!(e, ProviderError::Auth { status: 401, .. }),
        "{e:?}"
    );
    let e = build(&openai(&server)).chat(&ask()).await.unwrap_err();
    assert!(
        matches!(e, ProviderError::InvalidRequest { status: 404, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("gpt-9"));
    let e = build(&openai(&server)).chat(&ask()).await.unwrap_err();
    assert!(e.to_string().contains("$.choices[0].message"), "{e}");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn a_missing_key_fails_before_any_call() {
    let server = MockLlm::start().await;
    let mut cfg = openai(&server);
    cfg.api_key_env = Some("CTXBENCH_TEST_KEY_NEVER_SET_ANYWHERE".into());
    let e = build_provider(&cfg).expect_err("a missing key is a build error");
    assert!(matches!(e, ProviderError::Config { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("CTXBENCH_TEST_KEY_NEVER_SET_ANYWHERE"),
        "{e}"
    );
    assert_eq!(server.request_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_capped_per_provider() {
    let server = MockLlm::start().await;
    let slow = || Reply::Slow {
        body: mock::openai_text("x", 1, 1),
        chunks: 1,
        delay: Duration::from_millis(150),
    };
    server.push((0..6).map(|_| slow()));
    let mut cfg = openai(&server);
    cfg.concurrency = 2;
    let p = build(&cfg);
    let req = ask();
    let start = Instant::now();
    let calls = (0..6).map(|_| p.chat(&req));
    let results = futures_join_all(calls).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(server.max_in_flight(), 2);
    assert!(
        start.elapsed() >= Duration::from_millis(440),
        "3 waves of 150 ms: {:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn requests_per_minute_paces_calls() {
    let server = MockLlm::start().await;
    let mut cfg = openai(&server);
    cfg.rpm = Some(60); // a burst of 60, then one a second
    let p = build(&cfg);
    let start = Instant::now();
    for _ in 0..61 {
        p.chat(&ask()).await.unwrap();
    }
    // The 61st request needs one unit of refill: a full second after the bucket started.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(990),
        "61 requests at 60 rpm took {took:?}"
    );
    assert_eq!(server.request_count(), 61);
}

/// Polls every future to completion concurrently (no extra crate needed).
async fn futures_join_all<F: std::future::Future>(
    futs: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futs {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(Option::unwrap).collect()
}

#[tokio::test]
async fn a_two_step_tool_loop_driven_by_a_responder() {
    let server = MockLlm::start().await;
    // The "model" calls grep first, then answers from the tool result it was sent back.
    server.respond_with(|req| {
        let msgs = req.body["messages"].as_array().cloned().unwrap_or_default();
        match msgs.iter().rev().find(|m| m["role"] == "tool") {
            None => Reply::ok(mock::openai_tool_call(
                "grep",
                json!({"pattern": "deploy token"}),
                (50, 0, 5),
            )),
            Some(result) => {
                let found = result["content"].as_str().unwrap_or_default();
                let token = found.rsplit(": ").next().unwrap_or_default();
                Reply::ok(mock::openai_text(&format!("The token is {token}."), 80, 8))
            }
        }
    });
    let p = build(&openai(&server));
    let mut req = ChatRequest::new(vec![Message::user("What is the deploy token?")])
        .with_tools(vec![grep_tool()]);
    let first = p.chat(&req).await.unwrap();
    let call = first.message.tool_calls[0].clone();
    assert_eq!(call.name, "grep");
    req.messages.push(first.message);
    req.messages.push(Message::tool(
        &call.id,
        &call.name,
        "notes.md:12: deploy token: teal-otter-7731",
    ));
    let second = p.chat(&req).await.unwrap();
    assert_eq!(second.message.content, "The token is teal-otter-7731.");
    let sent = &server.requests()[1].body["messages"];
    assert_eq!(sent[1]["tool_calls"][0]["id"], call.id.as_str());
    assert_eq!(sent[2]["tool_call_id"], call.id.as_str());
}

/// A toy text protocol: tools listed in a system line, calls written as `CALL <name> <json>`.
#[derive(Debug)]
struct LineTools;

impl ctxbench::providers::http::ToolAdapter for LineTools {
    fn prepare(&self, request: &ChatRequest) -> Result<ChatRequest, ProviderError> {
        let mut r = request.clone();
        let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
        let line = format!("Tools: {}. Reply `CALL <name> <json>`.", names.join(", "));
        r.messages.insert(0, Message::system(line));
        r.tools.to_mut().clear();
        Ok(r)
    }

    fn interpret(
        &self,
        _request: &ChatRequest,
        mut response: ctxbench::providers::ChatResponse,
    ) -> Result<ctxbench::providers::ChatResponse, ProviderError> {
        if let Some((name, args)) = response
            .message
            .content
            .strip_prefix("CALL ")
            .and_then(|rest| rest.split_once(' '))
        {
            let arguments = serde_json::from_str(args).map_err(|e| ProviderError::BadResponse {
                message: format!("tool call arguments: {e}"),
            })?;
            response.message.tool_calls.push(ToolCall {
                id: "text-1".into(),
                name: name.into(),
                arguments,
            });
            response.message.content.clear();
        }
        Ok(response)
    }
}

#[tokio::test]
async fn the_tool_adapter_hook_rewrites_request_and_response() {
    use ctxbench::providers::http::{HttpProvider, HttpSettings};
    use ctxbench::providers::limits::Limits;
    use ctxbench::providers::openai::OpenAiWire;
    use ctxbench::providers::retry::RetryPolicy;
    use ctxbench::providers::{ProviderInfo, Sampling, ToolProtocol};

    let server = MockLlm::start().await;
    server.push([Reply::ok(mock::openai_text(
        r#"CALL grep {"pattern":"token"}"#,
        30,
        9,
    ))]);
    let settings = HttpSettings {
        info: ProviderInfo {
            kind: "openai".into(),
            model: "local".into(),
            endpoint: Some(server.openai_base_url()),
            defaults: Sampling::default(),
            tool_protocol: ToolProtocol::Text,
        },
        base_url: reqwest::Url::parse(&server.openai_base_url()).unwrap(),
        key: None,
        retry: RetryPolicy::none(),
        timeout: Duration::from_secs(5),
        limits: Limits::unlimited(),
        traits: Default::default(),
    };
    let p = HttpProvider::new(OpenAiWire, settings)
        .unwrap()
        .with_tool_adapter(Arc::new(LineTools));
    let req = ChatRequest::new(vec![Message::user("find the token")]).with_tools(vec![grep_tool()]);
    let r = p.chat(&req).await.unwrap();
    let sent = &server.requests()[0].body;
    assert!(
        sent.get("tools").is_none(),
        "the adapter removed native tools: {sent}"
    );
    assert_eq!(
        sent["messages"][0]["content"],
        "Tools: grep. Reply `CALL <name> <json>`."
    );
    assert_eq!(r.message.content, "");
    assert_eq!(r.message.tool_calls[0].name, "grep");
    assert_eq!(
        r.message.tool_calls[0].arguments,
        json!({"pattern": "token"})
    );
    assert_eq!(r.usage.output, 9);
}

#[tokio::test]
async fn the_output_limit_field_and_vendor_parameters_reach_the_wire() {
    let server = MockLlm::start().await;
    let mut req = ask();
    req.sampling.max_tokens = Some(200);
    // codex-mini is a reasoning model its name does not give away to the encoder's prefix test.
    let mut c = openai(&server);
    c.model = "codex-mini-latest".into();
    c.reasoning_effort = Some("low".into());
    build(&c).chat(&req).await.unwrap();
    // An Azure deployment name with the explicit override.
    let mut c = openai(&server);
    c.model = "prod-deployment".into();
    c.max_tokens_field = Some(ctxbench::providers::config::MaxTokensField::MaxCompletionTokens);
    build(&c).chat(&req).await.unwrap();
    // A compatible server that only knows max_tokens, serving a model named like gpt-5.
    let mut c = openai(&server);
    c.model = "gpt-5-local".into();
    c.reasoning = Some(false);
    c.max_tokens_field = Some(ctxbench::providers::config::MaxTokensField::MaxTokens);
    build(&c).chat(&req).await.unwrap();
    let bodies: Vec<serde_json::Value> = server.requests().into_iter().map(|r| r.body).collect();
    // A reasoning model's answer limit gets the reasoning allowance on top.
    assert_eq!(
        bodies[0]["max_completion_tokens"],
        200 + 25_000,
        "{}",
        bodies[0]
    );
    assert!(bodies[0].get("max_tokens").is_none());
    assert_eq!(bodies[0]["reasoning_effort"], "low");
    assert_eq!(bodies[1]["max_completion_tokens"], 200);
    assert!(bodies[1].get("max_tokens").is_none());
    assert_eq!(bodies[2]["max_tokens"], 200, "{}", bodies[2]);
    assert!(bodies[2].get("max_completion_tokens").is_none());

    // Anthropic extended thinking: an eval's 200-token limit is granted on top of the budget.
    let server = MockLlm::start().await;
    let mut c = anthropic(&server);
    c.thinking = Some(2048);
    build(&c).chat(&req).await.unwrap();
    let b = &server.requests()[0].body;
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(b["max_tokens"], 2248, "{b}");

    // The provider's own max_tokens wins over an eval's smaller limit, not over a larger one.
    let server = MockLlm::start().await;
    let mut c = openai(&server);
    c.max_tokens = Some(1000);
    let p = build(&c);
    p.chat(&req).await.unwrap();
    req.sampling.max_tokens = Some(5000);
    p.chat(&req).await.unwrap();
    let sent: Vec<serde_json::Value> = server
        .requests()
        .iter()
        .map(|r| r.body["max_tokens"].clone())
        .collect();
    assert_eq!(sent, [json!(1000), json!(5000)]);
}
