//! The response cache through `build_provider` against the local test server: hits and misses,
//! independent repeats, `cache = false`, nothing erroneous or empty stored, persistence across
//! providers, and no API key in any file the run writes.

use std::path::Path;
use std::sync::Arc;

use crate::support::mock_llm::{self as mock, MockLlm, Reply};
use ctxbench::providers::{
    build_provider, ChatRequest, Message, Provider, ProviderConfig, ProviderError, ProviderKind,
};

fn cached_openai(server: &MockLlm, dir: &Path) -> ProviderConfig {
    let mut c = ProviderConfig::new(ProviderKind::Openai, "gpt-4o-mini");
    c.base_url = Some(server.openai_base_url());
    c.cache_dir = Some(dir.to_path_buf());
    c.retry_initial_ms = 5;
    c.timeout_secs = 5.0;
    c
}

fn build(c: &ProviderConfig) -> Arc<dyn Provider> {
    build_provider(c).expect("valid test config")
}

fn ask(q: &str) -> ChatRequest {
    ChatRequest::new(vec![Message::user(q)])
}

#[tokio::test]
async fn second_identical_call_is_a_hit() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    server.push([Reply::ok(mock::openai_text("Paris", 12, 2))]);
    let p = build(&cached_openai(&server, dir.path()));
    let first = p.chat(&ask("Capital of France?")).await.unwrap();
    let second = p.chat(&ask("Capital of France?")).await.unwrap();
    assert_eq!(
        server.request_count(),
        1,
        "the hit never reaches the server"
    );
    assert!(!first.from_cache && second.from_cache);
    assert_eq!(second.attempts, 0);
    assert_eq!(second.message, first.message);
    assert_eq!(second.usage, first.usage, "usage as originally reported");
    assert_eq!(second.model, first.model);
    let stats = p
        .cache_stats()
        .expect("cache = true wraps the provider in the cache");
    assert_eq!((stats.hits, stats.misses, stats.stored), (1, 1, 1));
    // A different question is a miss.
    p.chat(&ask("Capital of Spain?")).await.unwrap();
    assert_eq!(server.request_count(), 2);
    assert!(dir.path().join("responses.sqlite").exists());
}

#[tokio::test]
async fn repeats_with_distinct_nonces_are_independent() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    server.push([
        Reply::ok(mock::openai_text("heads", 5, 1)),
        Reply::ok(mock::openai_text("tails", 5, 1)),
    ]);
    let p = build(&cached_openai(&server, dir.path()));
    let r0 = p.chat(&ask("flip").with_nonce("repeat-0")).await.unwrap();
    let r1 = p.chat(&ask("flip").with_nonce("repeat-1")).await.unwrap();
    assert_eq!(
        (r0.message.content.as_str(), r1.message.content.as_str()),
        ("heads", "tails")
    );
    assert_eq!(server.request_count(), 2);
    // Each repeat is itself cached.
    let again = p.chat(&ask("flip").with_nonce("repeat-1")).await.unwrap();
    assert!(again.from_cache);
    assert_eq!(again.message.content, "tails");
    // The nonce is never sent to the model.
    assert!(server
        .requests()
        .iter()
        .all(|r| !r.raw_body.contains("repeat-")));
}

#[tokio::test]
async fn sampling_changes_miss_and_runtime_settings_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    let mut cfg = cached_openai(&server, dir.path());
    cfg.temperature = Some(0.0);
    build(&cfg).chat(&ask("q")).await.unwrap();
    // Concurrency, retries, timeouts and rate limits cannot change an answer: still a hit.
    let mut ops = cfg.clone();
    ops.concurrency = 1;
    ops.max_retries = 0;
    ops.timeout_secs = 1.0;
    ops.rpm = Some(10);
    assert!(build(&ops).chat(&ask("q")).await.unwrap().from_cache);
    // Temperature can: a miss.
    let mut hot = cfg.clone();
    hot.temperature = Some(0.8);
    assert!(!build(&hot).chat(&ask("q")).await.unwrap().from_cache);
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn no_cache_always_calls() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    let mut cfg = cached_openai(&server, dir.path());
    cfg.cache = false;
    let p = build(&cfg);
    p.chat(&ask("q")).await.unwrap();
    let r = p.chat(&ask("q")).await.unwrap();
    assert!(!r.from_cache);
    assert_eq!(p.cache_stats(), None);
    assert_eq!(server.request_count(), 2);
    assert!(
        !dir.path().join("responses.sqlite").exists(),
        "no cache file is even created"
    );
}

#[tokio::test]
async fn errors_and_empty_answers_are_never_cached() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    let full = mock::openai_text("finally", 5, 1);
    server.push([
        Reply::status(500, "boom"),
        Reply::ok(&full[..30]), // truncated JSON
        Reply::status(
            400,
            mock::openai_error(
                "maximum context length exceeded",
                "invalid_request_error",
                "context_length_exceeded",
            ),
        ),
        Reply::ok(mock::openai_text("   ", 5, 0)), // an empty answer
        Reply::ok(full.clone()),
    ]);
    let mut cfg = cached_openai(&server, dir.path());
    cfg.max_retries = 0;
    let p = build(&cfg);
    assert!(matches!(
        p.chat(&ask("q")).await,
        Err(ProviderError::Server { .. })
    ));
    assert!(matches!(
        p.chat(&ask("q")).await,
        Err(ProviderError::BadResponse { .. })
    ));
    assert!(matches!(
        p.chat(&ask("q")).await,
        Err(ProviderError::ContextOverflow { .. })
    ));
    let empty = p.chat(&ask("q")).await.unwrap();
    assert!(empty.is_empty() && !empty.from_cache);
    let ok = p.chat(&ask("q")).await.unwrap();
    assert_eq!(
        (ok.message.content.as_str(), ok.from_cache),
        ("finally", false)
    );
    assert_eq!(
        server.request_count(),
        5,
        "every failure and the empty answer went to the server"
    );
    let hit = p.chat(&ask("q")).await.unwrap();
    assert!(hit.from_cache);
    assert_eq!(hit.message.content, "finally");
    assert_eq!(server.request_count(), 5);
}

#[tokio::test]
async fn the_cache_persists_across_providers_and_processes() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    server.push([Reply::ok(mock::anthropic_text("remembered", 7, 2))]);
    let mut cfg = cached_openai(&server, dir.path());
    cfg.kind = ProviderKind::Anthropic;
    cfg.model = "claude-haiku-4-5".into();
    cfg.base_url = Some(server.base_url());
    {
        let p = build(&cfg);
        p.chat(&ask("q")).await.unwrap();
    }
    let p = build(&cfg);
    let r = p.chat(&ask("q")).await.unwrap();
    assert!(r.from_cache);
    assert_eq!(r.message.content, "remembered");
    assert_eq!(server.request_count(), 1);
    // The OpenAI shape of the same question on the same server is a different request.
    let mut other = cached_openai(&server, dir.path());
    other.model = "claude-haiku-4-5".into();
    assert!(!build(&other).chat(&ask("q")).await.unwrap().from_cache);
}

/// Every byte of every file under `dir`.
fn all_files(dir: &Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all_files(&path, out);
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
}

#[tokio::test]
async fn the_api_key_never_reaches_disk_errors_or_debug_output() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    let secret = format!("sk-ctxbench-test-{:016x}", fastrand::u64(..));
    let var = "CTXBENCH_TEST_SECRET_SCAN_KEY";
    std::env::set_var(var, &secret);
    server.push([
        Reply::ok(mock::openai_text("cached answer", 5, 2)),
        // Servers echo keys back in error text; it must be redacted before it reaches us.
        Reply::status(
            401,
            mock::openai_error(
                &format!("Incorrect API key provided: {secret}"),
                "invalid_request_error",
                "invalid_api_key",
            ),
        ),
        Reply::status(500, format!("upstream said {secret}")),
        Reply::status(
            400,
            mock::openai_error(
                &format!("maximum context length; key {secret}"),
                "invalid_request_error",
                "context_length_exceeded",
            ),
        ),
    ]);
    let mut cfg = cached_openai(&server, dir.path());
    cfg.api_key_env = Some(var.into());
    cfg.max_retries = 0;
    let p = build(&cfg);
    let ok = p.chat(&ask("first")).await.unwrap();
    let mut texts = vec![format!("{ok:?}"), format!("{p:?}"), format!("{cfg:?}")];
    for q in ["second", "third", "fourth"] {
        let e = p.chat(&ask(q)).await.unwrap_err();
        texts.push(e.to_string());
        texts.push(format!("{e:?}"));
    }
    // The same key through the Anthropic provider, into the same cache directory.
    server.push([
        Reply::ok(mock::anthropic_text("another cached answer", 5, 2)),
        Reply::status(
            401,
            mock::anthropic_error(
                "authentication_error",
                &format!("invalid x-api-key {secret}"),
            ),
        ),
    ]);
    let mut acfg = cfg.clone();
    acfg.kind = ProviderKind::Anthropic;
    acfg.model = "claude-haiku-4-5".into();
    acfg.base_url = Some(server.base_url());
    let a = build(&acfg);
    let ok2 = a.chat(&ask("fifth")).await.unwrap();
    let e = a.chat(&ask("sixth")).await.unwrap_err();
    texts.extend([
        format!("{ok2:?}"),
        format!("{a:?}"),
        e.to_string(),
        format!("{e:?}"),
    ]);
    assert_eq!(
        server.requests()[4].header("x-api-key"),
        Some(secret.as_str())
    );
    assert!(
        texts[3].contains("Incorrect API key provided: ***"),
        "{}",
        texts[3]
    );
    // The key was really used …
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {secret}").as_str())
    );
    // … and appears in no error, no Debug output …
    for t in &texts {
        assert!(!t.contains(&secret), "key leaked into: {t}");
    }
    // … and in no file written during the test (the database, its WAL and shared memory).
    drop(p);
    drop(a);
    let mut files = Vec::new();
    all_files(dir.path(), &mut files);
    assert!(!files.is_empty());
    let stored = |needle: &[u8]| {
        files
            .iter()
            .any(|(_, b)| b.windows(needle.len()).any(|w| w == needle))
    };
    assert!(
        stored(b"\"cached answer") && stored(b"another cached answer"),
        "the scan sees both stored answers"
    );
    for (path, bytes) in &files {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "key found in {}",
            path.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_requests_in_flight_are_sent_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    server.push([Reply::Slow {
        body: mock::openai_text("shared summary", 100, 20),
        chunks: 2,
        delay: std::time::Duration::from_millis(150),
    }]);
    let p = build(&cached_openai(&server, dir.path()));
    let q = ask("summarize the session");
    let (a, b, c) = tokio::join!(p.chat(&q), p.chat(&q), p.chat(&q));
    let all = [a.unwrap(), b.unwrap(), c.unwrap()];
    assert_eq!(
        server.request_count(),
        1,
        "one call for three identical requests"
    );
    assert!(all.iter().all(|r| r.message.content == "shared summary"));
    assert_eq!(all.iter().filter(|r| r.from_cache).count(), 2);
    let stats = p.cache_stats().unwrap();
    assert_eq!((stats.hits, stats.misses), (2, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_call_themselves_when_the_first_in_flight_call_fails() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockLlm::start().await;
    server.push([
        Reply::status(
            400,
            mock::openai_error("bad tool schema", "invalid_request_error", "invalid"),
        ),
        Reply::ok(mock::openai_text("second try", 5, 1)),
    ]);
    let mut cfg = cached_openai(&server, dir.path());
    cfg.max_retries = 0;
    let p = build(&cfg);
    let q = ask("q");
    let (a, b) = tokio::join!(p.chat(&q), p.chat(&q));
    let oks = [&a, &b].iter().filter(|r| r.is_ok()).count();
    assert_eq!(oks, 1, "{a:?} {b:?}");
    assert_eq!(server.request_count(), 2);
}
