//! What the agent can still reach after each preset's layers act (`history = "offload" |
//! "memory" | "none"`): the exposure table of `docs/engine.md`, checked on a hand-built trace
//! whose first tool result carries a needle that compaction removes from the context.

use crate::support::traces::{agent_trace_done_at, NEEDLE};
use ctxbench::engine::{
    self, EngineConfig, KeepViews, OfflineSummarizer, Replay, ReplayEnv, Summary,
};
use ctxbench::trace::{Message, Role, Trace};

/// [`agent_trace_done_at`] with 2,000-char results and `mark_task_done` at step `steps / 2`.
fn trace(steps: usize) -> Trace {
    agent_trace_done_at(steps, 2_000, Some(steps / 2))
}

fn replay(preset: &str, extra: &[&str]) -> Replay {
    let mut sets = vec![format!("preset=\"{preset}\""), "window=6000".to_string()];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let config = EngineConfig::default()
        .apply_sets(&sets)
        .unwrap()
        .resolve(None)
        .unwrap();
    let mut env = ReplayEnv::new(&OfflineSummarizer);
    env.keep_views = KeepViews::Last;
    let r = engine::replay(&trace(30), &config, &env).unwrap();
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    r
}

/// Every file the replay left in the store, with its contents.
fn store_text(r: &Replay) -> Vec<(String, String)> {
    let mut paths: Vec<String> = r.store.writes().iter().map(|w| w.path.clone()).collect();
    paths.dedup();
    paths
        .into_iter()
        .map(|p| {
            let bytes = r.store.contents(&p).unwrap_or_default();
            (p, String::from_utf8_lossy(&bytes).into_owned())
        })
        .collect()
}

fn compacted(r: &Replay) -> bool {
    r.events
        .iter()
        .any(|e| e.persistent && matches!(e.kind(), "summarized" | "trimmed" | "checkpoint"))
}

fn last_view(r: &Replay) -> &[Message] {
    &r.views.last().unwrap().messages
}

#[test]
fn offload_presets_keep_the_raw_turns_reachable_and_named() {
    let cases: [(&str, &[&str]); 2] = [
        ("deepagents", &[]),
        ("digitorn", &["summarize.history=\"offload\""]),
    ];
    for (preset, sets) in cases {
        let r = replay(preset, sets);
        assert!(compacted(&r), "{preset}");
        assert!(!last_view(&r).iter().any(|m| m.content.contains(NEEDLE)));
        let files = store_text(&r);
        let (path, _) = files
            .iter()
            .find(|(p, t)| p.starts_with("/conversation_history/session_") && t.contains(NEEDLE))
            .unwrap_or_else(|| panic!("{preset}: raw turns not offloaded: {files:?}"));
        assert!(
            last_view(&r)
                .iter()
                .any(|m| m.content.contains(path.as_str())),
            "{preset}: the summary names {path}"
        );
    }
}

#[test]
fn none_presets_leave_nothing_the_agent_can_reach() {
    for preset in ["langchain", "digitorn", "core-agent"] {
        let r = replay(preset, &[]);
        assert!(compacted(&r), "{preset}");
        let files = store_text(&r);
        assert!(
            files.iter().all(|(_, t)| !t.contains(NEEDLE)),
            "{preset}: {files:?}"
        );
        assert!(
            !files
                .iter()
                .any(|(p, _)| p.contains("conversation_history")),
            "{preset}: {files:?}"
        );
        for e in &r.events {
            if let Some(Summary { history_file, .. }) = e.detail.summary() {
                assert!(history_file.is_empty(), "{preset}: {history_file}");
            }
        }
        // The same preset with `history = "offload"` does write the raw turns.
        let mut sets = vec!["summarize.history=\"offload\""];
        if preset == "core-agent" {
            sets.push("checkpoint.history=\"offload\"");
        }
        let r = replay(preset, &sets);
        assert!(
            store_text(&r).iter().any(|(_, t)| t.contains(NEEDLE)),
            "{preset} with history = offload"
        );
    }
}

#[test]
fn digitorn_recap_is_a_capped_system_message_with_its_own_sections() {
    let r = replay("digitorn", &[]);
    let view = last_view(&r);
    let recap = view
        .iter()
        .find(|m| m.content.contains("<summary>"))
        .expect("a recap in the view");
    assert_eq!(recap.role, Role::System);
    for section in ["## DECISIONS", "## FILES TOUCHED", "## KEY FACTS"] {
        assert!(recap.content.contains(section), "{}", recap.content);
    }
    assert!(!recap.content.contains("SESSION INTENT"));
    for e in &r.events {
        if let Some(Summary { summary_chars, .. }) = e.detail.summary() {
            // 1,024 tokens at the offline summarizer's 4 chars/token, plus the wrapper text.
            assert!(*summary_chars <= 1024 * 4 + 200, "{summary_chars}");
        }
    }
}

#[test]
fn core_agent_writes_its_handover_and_checkpoint_sections() {
    let r = replay("core-agent", &[]);
    let texts: Vec<(&str, &String)> = r
        .events
        .iter()
        .filter_map(|e| Some((e.kind(), &e.detail.summary()?.summary_message)))
        .collect();
    let checkpoint = texts
        .iter()
        .find(|(k, _)| *k == "checkpoint")
        .expect("a checkpoint at mark_task_done");
    for s in [
        "## Task",
        "## Files & changes",
        "## Technical context",
        "## Strategy & approach",
        "## Verification & next steps",
        "## Where we are",
    ] {
        assert!(checkpoint.1.contains(s), "{s}: {}", checkpoint.1);
    }
    let handover = texts
        .iter()
        .find(|(k, _)| *k == "summarized")
        .expect("a compaction");
    for s in [
        "## Current state",
        "## Files & changes",
        "## Technical context",
        "## Strategy & approach",
        "## Exact next steps",
    ] {
        assert!(handover.1.contains(s), "{s}: {}", handover.1);
    }
    assert!(!handover.1.contains("SESSION INTENT"));
}

#[test]
fn turn_trim_keeps_summaries_in_memory_not_raw_turns() {
    let mut t = trace(4);
    // Several user turns, so whole turns are trimmed.
    for k in 0..6 {
        t.messages.push(Message::user(format!("Next request {k}")));
        t.messages
            .push(Message::assistant(format!("Reply {k}"), Vec::new()));
    }
    let config = EngineConfig::default()
        .apply_sets(&[
            "preset=\"turn-trim\"".to_string(),
            "turn_trim.max_turns=2".to_string(),
        ])
        .unwrap()
        .resolve(None)
        .unwrap();
    let env = ReplayEnv::new(&OfflineSummarizer);
    let r = engine::replay(&t, &config, &env).unwrap();
    assert!(compacted(&r));
    let files = store_text(&r);
    assert!(
        files.iter().any(|(p, _)| p == "/memory/MEMORY.md"),
        "{files:?}"
    );
    assert!(
        !files.iter().any(|(p, _)| p == "/memory/history.md"),
        "{files:?}"
    );
    assert!(files.iter().all(|(_, t)| !t.contains(NEEDLE)), "{files:?}");
}

#[test]
fn an_empty_history_dir_is_an_error_pointing_at_history_none() {
    let e = EngineConfig::default()
        .apply_sets(&[
            "preset=\"deepagents\"".to_string(),
            "summarize.history_dir=\"\"".to_string(),
        ])
        .unwrap()
        .resolve(None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("summarize.history = \"none\""), "{e}");
    let ok = EngineConfig::default()
        .apply_sets(&[
            "preset=\"deepagents\"".to_string(),
            "summarize.history_dir=\"\"".to_string(),
            "summarize.history=\"none\"".to_string(),
        ])
        .unwrap()
        .resolve(None);
    assert!(ok.is_ok());
}
