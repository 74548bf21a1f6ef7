//! Replay behaviour beyond the golden fixtures: the offload store on disk, summarizer
//! failures, summary-prompt A/B with the offline summarizer, the no-compression reference,
//! cached prefixes, overflow events and `--set`-style overrides.

use crate::support::traces::golden as fixture_dir;
use ctxbench::engine::{
    self, fixture, EngineConfig, EventDetail, FixedSummarizer, KeepViews, OfflineSummarizer,
    ReplayEnv, StoreTarget, Summarizer, Summary, SummaryError, SummaryOutput, SummaryRequest,
};
use ctxbench::trace::{Message, Role, Trace};

fn django() -> Trace {
    ctxbench::trace::import::import_file(
        &fixture_dir("mini-swe-django-11138").join("trace.jsonl"),
        Some(ctxbench::trace::SourceFormat::Golden),
    )
    .unwrap()
    .remove(0)
}

#[test]
fn store_on_disk_holds_exactly_what_was_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = fixture_dir("synthetic-s7");
    let r = fixture::run(&d, &[], StoreTarget::Dir(dir.path().join("store"))).unwrap();
    let fx = fixture::load(&d).unwrap();
    let mut checked = 0;
    for e in &r.events {
        match &e.detail {
            EventDetail::Evicted { path, .. } => {
                let disk = std::fs::read(dir.path().join("store").join(&path[1..])).unwrap();
                assert_eq!(disk, fx.trace.messages[e.trace_index].content.as_bytes());
                checked += 1;
            }
            EventDetail::UserMessageEvicted {
                path,
                evicted_index,
                ..
            } => {
                let disk = std::fs::read(dir.path().join("store").join(&path[1..])).unwrap();
                assert_eq!(disk, fx.trace.messages[*evicted_index].content.as_bytes());
                checked += 1;
            }
            EventDetail::Summarized(Summary { history_file, .. }) => {
                let disk =
                    std::fs::read_to_string(dir.path().join("store").join(&history_file[1..]))
                        .unwrap();
                // The first raw message that left the context is in the history file.
                assert!(disk.contains(&fx.trace.messages[0].content[..200]));
                checked += 1;
            }
            _ => {}
        }
    }
    assert_eq!(checked, 5 + 1 + 1, "5 evictions, 1 user message, 1 summary");
    assert!(r.invariants.passed());
}

#[test]
fn timeline_places_tool_time_events_at_the_next_call() {
    let r = fixture::run(&fixture_dir("synthetic-s7"), &[], StoreTarget::Memory).unwrap();
    let t = r.timeline();
    assert_eq!(t.len(), r.calls.len());
    // Result 28 is evicted when it arrives; the next call is 29.
    let p29 = t.iter().find(|p| p.trace_index == 29).unwrap();
    assert_eq!(p29.events, ["evicted"]);
    let p133 = t.iter().find(|p| p.trace_index == 133).unwrap();
    assert_eq!(p133.events, ["args_truncated", "summarized"]);
    let total: usize = t.iter().map(|p| p.events.len()).sum();
    assert_eq!(total, r.events.len());
}

#[test]
fn replays_are_reproducible_including_random_names() {
    let d = fixture_dir("synthetic-s7");
    let a = fixture::to_fixture_json(&fixture::run(&d, &[], StoreTarget::Memory).unwrap());
    let b = fixture::to_fixture_json(&fixture::run(&d, &[], StoreTarget::Memory).unwrap());
    assert_eq!(a, b);
}

struct Failing(&'static str);
impl Summarizer for Failing {
    fn summarize(&self, _: &SummaryRequest<'_>) -> Result<SummaryOutput, SummaryError> {
        Err(SummaryError::Failed(self.0.into()))
    }
}

#[test]
fn failed_or_error_text_summaries_are_error_events_never_summaries() {
    let trace = django();
    let config = EngineConfig::default().resolve(Some(30_000)).unwrap();
    for s in [
        Box::new(Failing("HTTP 500")) as Box<dyn Summarizer>,
        Box::new(FixedSummarizer(
            "Error generating summary: rate limited".into(),
        )),
    ] {
        let env = ReplayEnv::new(s.as_ref());
        let r = engine::replay(&trace, &config, &env).unwrap();
        assert!(r.events.iter().any(|e| e.kind() == "error"));
        assert!(!r.events.iter().any(|e| e.kind() == "summarized"));
        assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    }
}

fn summaries_with_prompt(prompt: &str) -> Vec<String> {
    let trace = django();
    let config = EngineConfig::default()
        .apply_sets(&[format!("summarize.prompt.text={prompt:?}")])
        .unwrap()
        .resolve(Some(30_000))
        .unwrap();
    let env = ReplayEnv::new(&OfflineSummarizer);
    let r = engine::replay(&trace, &config, &env).unwrap();
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    r.events
        .iter()
        .filter_map(|e| Some(e.detail.summary()?.summary_message.clone()))
        .collect()
}

#[test]
fn offline_summaries_follow_the_prompt_sections_and_chain() {
    let full = summaries_with_prompt(
        "Sections:\n## SESSION INTENT\n## SUMMARY\n## ARTIFACTS\n## NEXT STEPS",
    );
    let lean = summaries_with_prompt("Sections:\n## SUMMARY\n## NEXT STEPS");
    assert!(full.len() >= 2, "django at 30k summarizes several times");
    assert!(full.iter().all(|s| s.contains("## SESSION INTENT")));
    assert!(lean
        .iter()
        .all(|s| !s.contains("## SESSION INTENT") && s.contains("## NEXT STEPS")));
    // Chained: the intent of the first summary (the django task) survives into the last one.
    let first_intent = full[0]
        .split("## SESSION INTENT\n")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap();
    assert!(full.last().unwrap().contains(first_intent));
}

#[test]
fn none_preset_is_the_reference_and_caches_the_growing_prefix() {
    let trace = django();
    let config = EngineConfig {
        preset: Some("none".into()),
        ..Default::default()
    }
    .resolve(Some(1_000_000))
    .unwrap();
    let env = ReplayEnv::new(&OfflineSummarizer);
    let r = engine::replay(&trace, &config, &env).unwrap();
    assert!(r.events.is_empty());
    assert_eq!(r.calls.len(), trace.model_call_indexes().count());
    for w in r.calls.windows(2) {
        assert_eq!(w[1].input_tokens, w[1].reference_tokens);
        assert_eq!(w[1].cached_tokens, w[0].input_tokens);
    }
    assert_eq!(r.calls[0].cached_tokens, 0);
}

#[test]
fn requests_over_the_window_are_overflow_events() {
    let trace = django();
    let config = EngineConfig {
        preset: Some("none".into()),
        window: Some(5_000),
        ..Default::default()
    }
    .resolve(None)
    .unwrap();
    let env = ReplayEnv::new(&OfflineSummarizer);
    let r = engine::replay(&trace, &config, &env).unwrap();
    let over = r.calls.iter().filter(|c| c.input_tokens > 5_000).count();
    assert!(over > 0);
    assert_eq!(
        r.events.iter().filter(|e| e.kind() == "overflow").count(),
        over
    );
    assert!(r.invariants.passed());
}

#[test]
fn small_window_forces_compaction_and_views_are_kept() {
    let trace = django();
    let config = EngineConfig::default()
        .apply_sets(&["window=20000".into()])
        .unwrap()
        .resolve(None)
        .unwrap();
    let mut env = ReplayEnv::new(&OfflineSummarizer);
    env.keep_views = KeepViews::AfterCompaction;
    let r = engine::replay(&trace, &config, &env).unwrap();
    let summaries = r.events.iter().filter(|e| e.kind() == "summarized").count();
    assert!(summaries >= 3);
    assert_eq!(r.views.len(), summaries);
    for v in &r.views {
        assert!(v.messages[0]
            .content
            .starts_with("You are in the middle of a conversation"));
        // A kept view never starts with an orphan tool result.
        assert_ne!(v.messages[1].role, Role::Tool);
        assert!(v.tokens <= r.window);
    }
    assert!(r.summarizer_usage.input > 0 && r.summarizer_calls as usize == summaries);
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    assert!(r.input_tokens() < r.reference_tokens());
}

#[test]
fn orphan_in_the_recorded_trace_is_a_trace_defect_not_a_violation() {
    let mut t = django();
    t.messages
        .insert(3, Message::tool("nobody", "bash", "stray"));
    let config = EngineConfig::default().resolve(Some(30_000)).unwrap();
    let env = ReplayEnv::new(&OfflineSummarizer);
    let r = engine::replay(&t, &config, &env).unwrap();
    assert!(!r.invariants.trace_defects.is_empty());
}

/// `KeepViews::Last` builds only the last call's view (not every view, to drop all but one):
/// the replay is the same as with `All`, and the kept view is `All`'s last one.
fn assert_last_view_is_the_last_of_all(trace: &Trace, sets: &[String]) -> engine::Replay {
    let config = EngineConfig::default()
        .apply_sets(sets)
        .unwrap()
        .resolve(None)
        .unwrap();
    let replay_with = |keep| {
        let mut env = ReplayEnv::new(&OfflineSummarizer);
        env.keep_views = keep;
        engine::replay(trace, &config, &env).unwrap()
    };
    let (all, last) = (replay_with(KeepViews::All), replay_with(KeepViews::Last));
    assert_eq!(all.views.len(), all.calls.len());
    assert_eq!(last.views.len(), 1);
    assert_eq!(last.views.last(), all.views.last());
    assert_eq!(
        last.views[0].trace_index,
        all.calls.last().unwrap().trace_index
    );
    assert_eq!(last.calls, all.calls);
    assert_eq!(last.events, all.events);
    assert_eq!(last.stopped, all.stopped);
    last
}

#[test]
fn keeping_the_last_view_equals_the_last_of_all_views() {
    // Compaction on the way (summaries change the view).
    let r = assert_last_view_is_the_last_of_all(&django(), &["window=20000".into()]);
    assert!(r.events.iter().any(|e| e.kind() == "summarized"));
    // A replay a layer stops early keeps the view of the call it stopped at.
    let mut t = django();
    for m in t.messages.iter_mut().filter(|m| m.role == Role::Assistant) {
        m.usage = Some(ctxbench::trace::Usage {
            output: 1_000,
            ..Default::default()
        });
    }
    let sets: Vec<String> = [
        "preset=\"core-agent\"",
        "cost_ceiling.input_usd_per_mtok=0",
        "cost_ceiling.output_usd_per_mtok=1000",
        "cost_ceiling.per_session_usd=2.5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = assert_last_view_is_the_last_of_all(&t, &sets);
    let stop = r.stopped.as_ref().expect("the ceiling stops the replay");
    let last_assistant = t
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .unwrap();
    assert!(stop.trace_index < last_assistant);
    assert_eq!(r.views[0].trace_index, stop.trace_index);
}
