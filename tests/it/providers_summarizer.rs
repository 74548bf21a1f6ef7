//! The engine's summarize layer driving a real HTTP provider (OpenAI shape, local test server):
//! every summary is a model call, its usage is recorded, and a second replay is served from the
//! response cache with identical summaries.

use std::path::Path;
use std::sync::Arc;

use crate::support::mock_llm::{self as mock, MockLlm, Reply};
use ctxbench::engine::{self, EngineConfig, ReplayEnv};
use ctxbench::providers::{build_provider, ProviderConfig, ProviderKind, ProviderSummarizer};
use ctxbench::trace::Usage;

fn summaries(r: &engine::Replay) -> Vec<String> {
    r.events
        .iter()
        .filter_map(|e| Some(e.detail.summary()?.summary_message.clone()))
        .collect()
}

#[test]
fn replay_summarizes_through_the_openai_provider_and_the_cache() {
    let (rt, server) = MockLlm::on_own_runtime();
    // The "model" numbers its summaries and says whether it was given the previous one.
    server.respond_with(|req| {
        let transcript = req.body["messages"][1]["content"]
            .as_str()
            .unwrap_or_default();
        let chained = transcript.starts_with("<previous_summary>");
        let text = format!(
            "## SESSION INTENT\nFix the django migration bug.\n## SUMMARY\nChained: {chained}. \
             Transcript of {} bytes.",
            transcript.len()
        );
        Reply::ok(mock::openai_text(&text, 1_000, 50))
    });
    let cache = tempfile::tempdir().unwrap();
    let mut cfg = ProviderConfig::new(ProviderKind::Openai, "gpt-4o-mini");
    cfg.base_url = Some(server.openai_base_url());
    cfg.cache_dir = Some(cache.path().to_path_buf());
    let provider = build_provider(&cfg).unwrap();

    let trace = ctxbench::trace::import::import_file(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/deepagents-golden/mini-swe-django-11138/trace.jsonl"),
        Some(ctxbench::trace::SourceFormat::Golden),
    )
    .unwrap()
    .remove(0);
    let config = EngineConfig::default().resolve(Some(30_000)).unwrap();
    let summarizer = ProviderSummarizer::new(Arc::clone(&provider), rt.handle().clone());
    let env = ReplayEnv::new(&summarizer);
    let first = engine::replay(&trace, &config, &env).unwrap();

    let texts = summaries(&first);
    let calls = first.summarizer_calls as usize;
    assert!(calls >= 2, "django at 30k summarizes several times");
    assert_eq!(texts.len(), calls);
    assert_eq!(server.request_count(), calls, "one HTTP call per summary");
    assert!(texts[0].contains("Chained: false"), "{}", texts[0]);
    assert!(
        texts[calls - 1].contains("Chained: true"),
        "summaries chain"
    );
    let per_call = Usage {
        input: 1_000,
        output: 50,
        cache_read: 0,
        cache_write: 0,
    };
    assert_eq!(first.summarizer_usage.input, per_call.input * calls as u64);
    assert_eq!(
        first.summarizer_usage.output,
        per_call.output * calls as u64
    );
    assert!(
        first.invariants.passed(),
        "{:?}",
        first.invariants.violations
    );
    // The summary prompt went out as the system message with the engine's max_tokens.
    let req = &server.requests()[0];
    assert!(req.body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("SESSION INTENT"));
    assert!(req.body["max_tokens"].as_u64().is_some());

    // Same trace, same variant: every summary now comes from the cache.
    let second = engine::replay(&trace, &config, &env).unwrap();
    assert_eq!(summaries(&second), texts);
    assert_eq!(server.request_count(), calls, "no new HTTP calls");
    assert_eq!(provider.cache_stats().unwrap().hits, calls as u64);
    assert_eq!(second.summarizer_usage, first.summarizer_usage);
}
