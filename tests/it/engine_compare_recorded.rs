//! `replay --compare-recorded` (`engine::recorded`) on hand-made canonical traces carrying
//! `compaction` markers, and the four presets of the systems people run on a long session.

use crate::support::cli::ctxbench;
use ctxbench::engine::recorded::{compare, RecordedCalls};
use ctxbench::engine::{self, EngineConfig, OfflineSummarizer, ReplayEnv};
use ctxbench::trace::{ContextMarker, Message, SourceFormat, ToolCall, Trace, TraceMeta};

/// A coding session: system prompt, a user request, then `steps` tool calls with ~2,000-char
/// results, a new user request every 10 steps.
fn session(steps: usize) -> Trace {
    let mut t = Trace::new(TraceMeta::new("long", SourceFormat::Canonical));
    t.messages.push(Message::system("You are a coding agent."));
    t.messages
        .push(Message::user("Fix the build, then the tests."));
    for k in 0..steps {
        if k > 0 && k % 10 == 0 {
            t.messages
                .push(Message::user(format!("Now look at module {k}.")));
        }
        let id = format!("call_{k}");
        t.messages.push(Message::assistant(
            format!("Step {k}: reading a file."),
            vec![ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": format!("src/m{k}.rs")}),
            }],
        ));
        t.messages.push(Message::tool(
            &id,
            "read_file",
            format!("line {k}\n").repeat(250),
        ));
    }
    t.messages.push(Message::assistant("Done.", vec![]));
    t
}

fn resolved(preset: &str, window: u64) -> ctxbench::engine::ResolvedConfig {
    EngineConfig {
        preset: Some(preset.into()),
        window: Some(window),
        ..Default::default()
    }
    .resolve(None)
    .unwrap()
}

#[test]
fn recorded_and_replayed_compactions_line_up_by_model_call() {
    let mut t = session(60);
    let config = resolved("codex", 30_000);
    let env = ReplayEnv::new(&OfflineSummarizer);
    // Where codex must compact first: the first call whose uncompressed request reaches 90% of
    // the window (from the no-compression replay, independently of the compact layer).
    let none = engine::replay(&t, &resolved("none", 30_000), &env).unwrap();
    let first = none
        .calls
        .iter()
        .find(|c| c.reference_tokens >= 27_000)
        .unwrap()
        .trace_index;
    let calls: Vec<usize> = t.model_call_indexes().collect();
    let k = calls.iter().position(|&c| c == first).unwrap();
    // The real system compacted one call later (the marker sits before that call), and once
    // more at the second call, where codex cannot have compacted.
    t.markers.push(ContextMarker {
        index: calls[k + 1],
        kind: "compaction".into(),
        detail: Some("auto".into()),
        tokens_before: Some(27_500),
    });
    t.markers.push(ContextMarker {
        index: calls[1],
        kind: "compaction".into(),
        detail: None,
        tokens_before: None,
    });
    t.markers.push(ContextMarker {
        index: calls[3],
        kind: "task_boundary".into(),
        detail: None,
        tokens_before: None,
    });
    let rec = RecordedCalls::of(&t);
    assert_eq!(
        rec.markers.len(),
        2,
        "only compaction markers are recorded compactions"
    );
    let r = engine::replay(&t, &config, &env).unwrap();
    let cmp = compare(&rec, &r);
    assert_eq!(cmp.replayed[0].call_index, first);
    assert_eq!(cmp.replayed[0].call_ordinal, k);
    assert!(cmp.replayed[0].tokens_before.unwrap() >= 27_000);
    assert!(cmp.replayed[0].tokens_after.unwrap() < cmp.replayed[0].tokens_before.unwrap());
    let at = |ordinal: usize| {
        cmp.recorded
            .iter()
            .find(|c| c.call_ordinal == ordinal)
            .unwrap()
    };
    assert!(at(k + 1).matched, "{cmp:?}");
    assert_eq!(at(k + 1).tokens_before, Some(27_500));
    assert!(!at(1).matched, "{cmp:?}");
    assert_eq!(cmp.agreement, Some(0.5));
    let text = cmp.render();
    assert!(text.contains("agreement: 1/2"), "{text}");

    // No recorded compaction: no figure.
    t.markers.clear();
    let cmp = compare(&RecordedCalls::of(&t), &r);
    assert_eq!(cmp.agreement, None);
    assert!(cmp.render().contains("agreement: n/a"));
}

#[test]
fn the_presets_of_the_systems_people_run_compact_as_documented() {
    let t = session(200);
    let env = ReplayEnv::new(&OfflineSummarizer);
    // codex: everything before the call leaves; the user requests (all well under 20,000
    // tokens) and the system prompt stay, then the summary with Codex's prefix.
    let r = engine::replay(&t, &resolved("codex", 30_000), &env).unwrap();
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    let ev = r.events.iter().find(|e| e.is_compaction()).unwrap();
    let call = ev.call_index.unwrap();
    let mut env_views = ReplayEnv::new(&OfflineSummarizer);
    env_views.keep_views = engine::KeepViews::AfterCompaction;
    let r = engine::replay(&t, &resolved("codex", 30_000), &env_views).unwrap();
    let v = r.views.iter().find(|v| v.trace_index == call).unwrap();
    let users_before = t.messages[..call]
        .iter()
        .filter(|m| m.role == ctxbench::trace::Role::User)
        .count();
    assert_eq!(v.messages[0].content, "You are a coding agent.");
    assert_eq!(v.messages.len(), 1 + users_before + 1);
    let last = v.messages.last().unwrap();
    assert!(last
        .content
        .starts_with(engine::presets::CODEX_SUMMARY_PREFIX));
    assert!(v
        .messages
        .iter()
        .all(|m| m.role != ctxbench::trace::Role::Tool));

    // claude-code: only the summary is left.
    let r = engine::replay(&t, &resolved("claude-code", 30_000), &env_views).unwrap();
    let call = r
        .events
        .iter()
        .find(|e| e.is_compaction())
        .unwrap()
        .call_index
        .unwrap();
    let v = r.views.iter().find(|v| v.trace_index == call).unwrap();
    assert_eq!(v.messages.len(), 1);
    assert!(v.messages[0]
        .content
        .starts_with("This session is being continued from a previous conversation"));

    // anthropic-context-editing: over 100,000 tokens every tool result but the last 3 is
    // cleared in the request; under it nothing is.
    let r = engine::replay(&t, &resolved("anthropic-context-editing", 400_000), &env).unwrap();
    let cleared: Vec<_> = r.events.iter().filter(|e| e.kind() == "cleared").collect();
    assert!(!cleared.is_empty());
    for e in &cleared {
        assert!(e.tokens_before.unwrap() > 100_000);
    }
    let c = r.calls.last().unwrap();
    assert!(c.input_tokens < 100_000, "{}", c.input_tokens);
    // Anthropic's clear_at_least is a minimum: asking for more than clearing frees skips it.
    let big = EngineConfig {
        preset: Some("anthropic-context-editing".into()),
        window: Some(400_000),
        ..Default::default()
    }
    .apply_sets(&["clear_tool_results.clear_at_least=10000000".into()])
    .unwrap()
    .resolve(None)
    .unwrap();
    let r = engine::replay(&t, &big, &env).unwrap();
    assert_eq!(r.events.iter().filter(|e| e.kind() == "cleared").count(), 0);

    // openhands: more than 240 events condense to 120 with the first 2 kept.
    let r = engine::replay(&t, &resolved("openhands", 1_000_000), &env_views).unwrap();
    let call = r
        .events
        .iter()
        .find(|e| e.is_compaction())
        .unwrap()
        .call_index
        .unwrap();
    let v = r.views.iter().find(|v| v.trace_index == call).unwrap();
    assert_eq!(v.messages[0].content, "You are a coding agent.");
    assert_eq!(v.messages[2].kind.as_deref(), Some("summary"));
    assert!(v.messages.len() <= 120, "{}", v.messages.len());
}

#[test]
fn replay_compare_recorded_prints_both_sides_and_the_figure() {
    let mut t = session(40);
    let calls: Vec<usize> = t.model_call_indexes().collect();
    t.markers.push(ContextMarker {
        index: calls[20],
        kind: "compaction".into(),
        detail: Some("auto".into()),
        tokens_before: Some(20_000),
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    ctxbench::trace::io::write_traces_file(&path, &[t]).unwrap();
    let out = ctxbench()
        .args(["replay", path.to_str().unwrap(), "--preset", "claude-code"])
        .args(["--window", "20000", "--compare-recorded"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("recorded (the real system) vs preset claude-code"),
        "{text}"
    );
    assert!(text.contains("recorded  "), "{text}");
    assert!(text.contains("agreement: "), "{text}");
    // Calls are numbered from 1 with their message beside them, in the comparison as in the
    // timeline above it: the 21st call, at message calls[20].
    let fields = |start: &str| -> Vec<String> {
        let line = text.lines().find(|l| l.starts_with(start)).expect(start);
        line.split_whitespace().map(str::to_string).collect()
    };
    let recorded = fields("recorded  ");
    assert_eq!(
        recorded[1..3],
        ["21".to_string(), calls[20].to_string()],
        "{text}"
    );
    let timeline = fields("21 ");
    assert_eq!(timeline[1], calls[20].to_string(), "{text}");
    let out = ctxbench()
        .args(["replay", path.to_str().unwrap(), "--preset", "claude-code"])
        .args(["--window", "20000", "--compare-recorded", "--json"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        v["compare_recorded"]["recorded"][0]["call_index"],
        calls[20]
    );
    assert!(v["compare_recorded"]["agreement"].is_number());
    assert!(v["replay"]["calls"].is_array());
}
