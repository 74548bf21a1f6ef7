//! Behaviour of the layers beyond deepagents' (truncate, clear, emergency, turn trim,
//! checkpoint, watchdog, cost ceiling) and of the presets built from them, on hand-built traces
//! whose every expected number is derived in the test.

use crate::support::traces::{agent_trace, NEEDLE};
use ctxbench::engine::layers::truncate::REMINDER_KIND;
use ctxbench::engine::{
    self, presets, EngineConfig, Event, EventDetail, KeepViews, OfflineSummarizer, Replay,
    ReplayEnv, StoreTarget, Summary,
};
use ctxbench::trace::{
    ContextMarker, Message, Role, SourceFormat, ToolCall, Trace, TraceMeta, Usage,
};
use serde_json::json;

fn call(id: &str, tool: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: tool.into(),
        arguments: args,
    }
}

fn run(trace: &Trace, sets: &[&str]) -> Replay {
    run_with(trace, sets, KeepViews::All)
}

fn run_with(trace: &Trace, sets: &[&str], keep: KeepViews) -> Replay {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let config = EngineConfig::default()
        .apply_sets(&sets)
        .unwrap()
        .resolve(trace.meta.window)
        .unwrap();
    let mut env = ReplayEnv::new(&OfflineSummarizer);
    env.keep_views = keep;
    let r = engine::replay(trace, &config, &env).unwrap();
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    r
}

fn events_of<'a>(r: &'a Replay, kind: &str) -> Vec<&'a Event> {
    r.events.iter().filter(|e| e.kind() == kind).collect()
}

fn view_at(r: &Replay, call: usize) -> &[Message] {
    &r.views
        .iter()
        .find(|v| v.trace_index == call)
        .unwrap_or_else(|| panic!("no view kept for call {call}"))
        .messages
}

#[test]
fn every_documented_preset_resolves() {
    for name in [
        "deepagents",
        "seed-layered",
        "langchain",
        "digitorn",
        "digitorn-truncate",
        "core-agent",
        "turn-trim",
        "none",
    ] {
        assert!(presets::NAMES.contains(&name), "{name}");
        let c = EngineConfig {
            preset: Some(name.into()),
            ..Default::default()
        };
        c.resolve(None).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let names: Vec<&str> = presets::seed_layered()
        .layers
        .iter()
        .map(|l| l.name())
        .collect();
    assert_eq!(
        names,
        [
            "evict_tool_results",
            "evict_user_messages",
            "clear_tool_results",
            "truncate_args",
            "summarize"
        ]
    );
}

#[test]
fn truncate_drops_old_turns_injects_a_reminder_and_offloads_nothing() {
    let t = agent_trace(30, 2_000);
    let r = run(&t, &["preset=\"digitorn-truncate\"", "window=12000"]);
    let truncs = events_of(&r, "truncated");
    assert!(!truncs.is_empty());
    assert!(
        r.store.paths().is_empty(),
        "truncate writes nothing: {:?}",
        r.store.paths()
    );
    let first = truncs[0];
    let threshold = (0.75 * 12_000.0) as u64;
    assert!(first.tokens_before.unwrap() >= threshold);
    assert!(first.tokens_after.unwrap() < first.tokens_before.unwrap());
    // The call before the first truncation was under the trigger.
    let prev = r
        .calls
        .iter()
        .rev()
        .find(|c| c.trace_index < first.trace_index)
        .unwrap();
    assert!(prev.input_tokens < threshold);
    let EventDetail::Truncated {
        state_cutoff,
        dropped,
        reminder,
        ..
    } = &first.detail
    else {
        panic!("{:?}", first.detail)
    };
    assert_eq!(
        *dropped,
        state_cutoff - 1,
        "everything but the system prompt"
    );
    let view = view_at(&r, first.trace_index);
    assert_eq!(
        view[0].content, "You are a coding agent.",
        "system prompt kept"
    );
    assert_eq!(view[1].role, Role::System);
    assert_eq!(view[1].kind.as_deref(), Some(REMINDER_KIND));
    assert_eq!(&view[1].content, reminder);
    assert!(reminder.contains("Goal: Fix the failing parser test in src/parse.rs"));
    assert!(reminder.contains("bash({\"command\":\"cat part"));
    // keep 10 messages; the split is safe (never starts on a tool result).
    assert_eq!(view.len(), 2 + 10);
    assert_eq!(view[2].role, Role::Assistant);
    // The needle left the context and is nowhere to be found: no offload.
    let last = &r.views.last().unwrap().messages;
    assert!(!last.iter().any(|m| m.content.contains(NEEDLE)));
    // Persistent: later calls start from the cut (plus newer truncations).
    for c in r.calls.iter().filter(|c| c.trace_index > first.trace_index) {
        assert!(c.input_tokens < c.reference_tokens);
    }
}

#[test]
fn truncate_cut_moves_back_to_the_call_of_parallel_results() {
    let mut t = Trace::new(TraceMeta::new("par", SourceFormat::Canonical));
    t.messages.push(Message::user("go"));
    for k in 0..6 {
        let ids: Vec<String> = (0..3).map(|j| format!("p{k}_{j}")).collect();
        t.messages.push(Message::assistant(
            "",
            ids.iter()
                .map(|id| call(id, "grep", json!({"pattern": id})))
                .collect(),
        ));
        for id in &ids {
            t.messages
                .push(Message::tool(id.clone(), "grep", "x".repeat(1_500)));
        }
    }
    t.messages.push(Message::assistant("done", vec![]));
    // keep 2 messages would start on a tool result: the cut moves back to the assistant.
    let r = run(
        &t,
        &[
            "preset=\"digitorn-truncate\"",
            "window=4000",
            "truncate.keep.messages=2",
        ],
    );
    let e = events_of(&r, "truncated")[0];
    let view = view_at(&r, e.trace_index);
    assert_eq!(view[0].kind.as_deref(), Some(REMINDER_KIND));
    assert_eq!(view[1].role, Role::Assistant);
    assert_eq!(view[1].tool_calls.len(), 3);
    assert_eq!(view.len(), 1 + 4);
}

#[test]
fn clear_keeps_the_last_k_results_and_excluded_tools_per_request() {
    let mut t = agent_trace(8, 800);
    // Step 1's result comes from an excluded tool.
    t.messages[4].tool_calls[0].name = "attempt_log".into();
    t.messages[5].name = Some("attempt_log".into());
    let r = run(
        &t,
        &[
            "preset=\"seed-layered\"",
            "window=200000",
            "clear_tool_results.trigger.tokens=1500",
            "clear_tool_results.excluded_tools=[\"attempt_log\"]",
        ],
    );
    let last = r.calls.last().unwrap().trace_index;
    let view = view_at(&r, last);
    let results: Vec<&Message> = view.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 8);
    let cleared: Vec<bool> = results.iter().map(|m| m.content == "[cleared]").collect();
    assert_eq!(
        cleared,
        [true, false, true, true, true, false, false, false],
        "excluded tool and the last 3 stay"
    );
    let e = events_of(&r, "cleared");
    let final_ev = e.last().unwrap();
    assert!(!final_ev.persistent, "a per-request view");
    assert_eq!(final_ev.trace_index, last);
    let EventDetail::Cleared {
        cleared,
        excluded,
        kept,
        ..
    } = &final_ev.detail
    else {
        panic!()
    };
    assert_eq!((*cleared, *excluded, *kept), (4, 1, 3));
    // Under the trigger nothing is cleared.
    let first_clear = e[0].trace_index;
    for c in r.calls.iter().filter(|c| c.trace_index < first_clear) {
        assert!(c.input_tokens <= 1500);
    }
    // Nothing was offloaded (LangChain semantics) and the state was not touched.
    assert!(r.store.paths().is_empty());
}

#[test]
fn clear_with_offload_writes_the_exact_result_and_points_at_it() {
    let t = agent_trace(6, 900);
    let r = run(
        &t,
        &[
            "preset=\"langchain\"",
            "clear_tool_results.trigger.tokens=1000",
            "clear_tool_results.offload=true",
            "clear_tool_results.placeholder=\"[cleared: see {path}]\"",
        ],
    );
    let view = view_at(&r, r.calls.last().unwrap().trace_index);
    let first = view
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("a tool result");
    assert_eq!(first.content, "[cleared: see /cleared_tool_results/c0]");
    assert_eq!(
        r.store.contents("/cleared_tool_results/c0").unwrap(),
        t.messages[3].content.as_bytes()
    );
    assert!(
        std::str::from_utf8(&r.store.contents("/cleared_tool_results/c0").unwrap())
            .unwrap()
            .contains(NEEDLE)
    );
}

/// Two results whose ids sanitize to one name (`c.0`, `c/0` → `c_0`) are cleared to files of
/// their own, each placeholder naming the file that holds its result.
#[test]
fn clear_with_offload_keeps_colliding_ids_apart() {
    let mut t = agent_trace(6, 900);
    for (k, id) in [(0, "c.0"), (1, "c/0")] {
        t.messages[2 + 2 * k].tool_calls[0].id = id.into();
        t.messages[3 + 2 * k].tool_call_id = Some(id.into());
    }
    let r = run(
        &t,
        &[
            "preset=\"langchain\"",
            "clear_tool_results.trigger.tokens=1000",
            "clear_tool_results.offload=true",
            "clear_tool_results.placeholder=\"[cleared: see {path}]\"",
        ],
    );
    let view = view_at(&r, r.calls.last().unwrap().trace_index);
    let shown: Vec<&str> = view
        .iter()
        .filter(|m| m.role == Role::Tool)
        .take(2)
        .map(|m| m.content.strip_prefix("[cleared: see ").unwrap())
        .map(|c| c.strip_suffix(']').unwrap())
        .collect();
    assert_eq!(shown[0], "/cleared_tool_results/c_0");
    assert!(
        shown[1].starts_with("/cleared_tool_results/c_0-"),
        "{}",
        shown[1]
    );
    for (k, path) in shown.iter().enumerate() {
        assert_eq!(
            r.store.contents(path).unwrap(),
            t.messages[3 + 2 * k].content.as_bytes()
        );
    }
}

#[test]
fn emergency_halves_keep_until_the_request_fits() {
    let t = agent_trace(12, 3_000);
    // Truncation would fire only at the full window: the emergency layer has to act.
    let r = run(
        &t,
        &[
            "preset=\"digitorn-truncate\"",
            "window=9000",
            "truncate.trigger.tokens=1000000",
        ],
    );
    let em = events_of(&r, "emergency");
    assert!(!em.is_empty());
    let EventDetail::Emergency {
        keep_recent,
        attempts,
        dropped,
        fits,
        limit,
        ..
    } = &em[0].detail
    else {
        panic!()
    };
    assert_eq!(*limit, 9000);
    assert!(*fits);
    assert!(*dropped > 0);
    // 10 → 5 fits (5 messages of ~750 tokens), else 4.
    assert_eq!((*keep_recent, *attempts), (5, 1));
    assert!(em[0].tokens_before.unwrap() > 9000);
    assert!(em[0].tokens_after.unwrap() <= 9000);
    assert!(events_of(&r, "overflow").is_empty());
    let view = view_at(&r, em[0].trace_index);
    assert_eq!(view[1].kind.as_deref(), Some(REMINDER_KIND));
}

#[test]
fn emergency_that_cannot_fit_leaves_an_overflow_event() {
    // One result alone is bigger than the window.
    let t = agent_trace(3, 60_000);
    let r = run(&t, &["preset=\"digitorn-truncate\"", "window=9000"]);
    let em = events_of(&r, "emergency");
    assert!(em.iter().any(|e| matches!(
        e.detail,
        EventDetail::Emergency {
            fits: false,
            keep_recent: 4,
            ..
        }
    )));
    assert!(!events_of(&r, "overflow").is_empty());
}

fn with_calls(calls: &[(&str, &str)]) -> Trace {
    let mut t = Trace::new(TraceMeta::new("loop", SourceFormat::Canonical));
    t.messages.push(Message::user("go"));
    for (k, (tool, arg)) in calls.iter().enumerate() {
        let id = format!("w{k}");
        t.messages.push(Message::assistant(
            "",
            vec![call(&id, tool, json!({"file_path": arg}))],
        ));
        t.messages.push(Message::tool(id, *tool, "same"));
    }
    t.messages.push(Message::assistant("stop", vec![]));
    t
}

#[test]
fn watchdog_alerts_once_per_run_of_identical_calls() {
    let a = ("read_file", "main.go");
    let b = ("read_file", "/workspace/main.go");
    let r = run(
        &with_calls(&[a, a, a, a, a, a, a]),
        &["preset=\"core-agent\""],
    );
    let w = events_of(&r, "watchdog");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].trace_index, 1 + 2 * 4, "the 5th call");
    let EventDetail::Watchdog {
        tool,
        arguments,
        repeats,
        first_index,
    } = &w[0].detail
    else {
        panic!()
    };
    assert_eq!((tool.as_str(), *repeats, *first_index), ("read_file", 5, 1));
    assert_eq!(arguments, "{\"file_path\":\"main.go\"}");
    // Alternating calls never trip; textually different args are different calls.
    let r = run(
        &with_calls(&[a, b, a, b, a, b, a, b]),
        &["preset=\"core-agent\""],
    );
    assert!(events_of(&r, "watchdog").is_empty());
    let r = run(
        &with_calls(&[a, a, a, a, b, a, a, a, a, a]),
        &["preset=\"core-agent\""],
    );
    assert_eq!(events_of(&r, "watchdog").len(), 1);
    let r = run(
        &with_calls(&[a, a, a, a, a, b, b, b, b, b]),
        &["preset=\"core-agent\""],
    );
    assert_eq!(events_of(&r, "watchdog").len(), 2);
}

/// Two user turns of three model calls each; every call has 1,000 recorded output tokens.
fn priced_trace() -> Trace {
    let mut t = Trace::new(TraceMeta::new("cost", SourceFormat::Canonical));
    for turn in 0..2 {
        t.messages.push(Message::user(format!("task {turn}")));
        for k in 0..3 {
            let id = format!("t{turn}_{k}");
            let mut a = Message::assistant("", vec![call(&id, "bash", json!({"k": k}))]);
            a.usage = Some(Usage {
                input: 0,
                output: 1_000,
                ..Usage::default()
            });
            t.messages.push(a);
            t.messages.push(Message::tool(id, "bash", "ok"));
        }
    }
    t
}

#[test]
fn cost_ceiling_stops_after_the_call_that_reaches_it() {
    let t = priced_trace();
    // Output at $1/1k tokens → each call costs ≥ $1; input at $0.
    let base = [
        "preset=\"core-agent\"",
        "cost_ceiling.input_usd_per_mtok=0",
        "cost_ceiling.output_usd_per_mtok=1000",
    ];
    let mut sets = base.to_vec();
    sets.push("cost_ceiling.per_session_usd=2.5");
    let r = run(&t, &sets);
    let c = events_of(&r, "cost_ceiling");
    assert_eq!(c.len(), 1);
    // Calls at 1, 3, 5: the third reaches $3 ≥ $2.5 and is the last replayed.
    assert_eq!(c[0].trace_index, 5);
    assert_eq!(r.calls.last().unwrap().trace_index, 5);
    assert_eq!(r.stopped.as_ref().unwrap().trace_index, 5);
    let EventDetail::CostCeiling {
        bound, spent_usd, ..
    } = &c[0].detail
    else {
        panic!()
    };
    assert_eq!(bound, "session");
    assert!((spent_usd - 3.0).abs() < 1e-9);

    // Per turn, alert only: the spend resets at the user message, so each turn trips once.
    let mut sets = base.to_vec();
    sets.extend([
        "cost_ceiling.per_turn_usd=2",
        "cost_ceiling.action=\"alert\"",
    ]);
    let r = run(&t, &sets);
    let c = events_of(&r, "cost_ceiling");
    let at: Vec<usize> = c.iter().map(|e| e.trace_index).collect();
    assert_eq!(at, [3, 10]);
    assert!(r.stopped.is_none());
    assert_eq!(r.calls.len(), 6);
}

#[test]
fn cost_ceiling_without_a_price_is_a_config_error_naming_the_model() {
    let mut t = priced_trace();
    t.meta.model = Some("no-such-model-xyz".into());
    let config = EngineConfig::default()
        .apply_sets(&[
            "preset=\"core-agent\"".into(),
            "cost_ceiling.per_session_usd=1".into(),
        ])
        .unwrap()
        .resolve(None)
        .unwrap();
    let env = ReplayEnv::new(&OfflineSummarizer);
    let e = engine::replay(&t, &config, &env).unwrap_err().to_string();
    assert!(
        e.contains("no-such-model-xyz") && e.contains("cost_ceiling"),
        "{e}"
    );
    // With the bundled price table the trace's model prices the calls.
    t.meta.model = Some("claude-sonnet-4-5".into());
    assert!(engine::replay(&t, &config, &env).is_ok());
}

#[test]
fn checkpoints_slice_finished_tasks_at_markers_and_chain() {
    let mut t = agent_trace(4, 500);
    let boundary = t.messages.len();
    t.messages.push(Message::user("Now update the changelog"));
    t.messages.push(Message::assistant(
        "",
        vec![call(
            "d1",
            "edit_file",
            json!({"file_path": "CHANGELOG.md"}),
        )],
    ));
    t.messages.push(Message::tool("d1", "edit_file", "edited"));
    t.messages.push(Message::assistant(
        "",
        vec![call("d2", "mark_task_done", json!({}))],
    ));
    t.messages.push(Message::tool("d2", "mark_task_done", "ok"));
    t.messages.push(Message::user("Last: run the tests"));
    t.messages.push(Message::assistant("Running.", vec![]));
    t.markers.push(ContextMarker {
        index: boundary,
        kind: "task_boundary".into(),
        detail: None,
        tokens_before: None,
    });
    let dir = tempfile::tempdir().unwrap();
    // The offload path (core-agent itself keeps nothing the agent can reach).
    let sets: Vec<String> = vec![
        "preset=\"core-agent\"".into(),
        "checkpoint.history=\"offload\"".into(),
    ];
    let config = EngineConfig::default()
        .apply_sets(&sets)
        .unwrap()
        .resolve(None)
        .unwrap();
    let mut env = ReplayEnv::new(&OfflineSummarizer);
    env.keep_views = KeepViews::All;
    env.store = StoreTarget::Dir(dir.path().to_path_buf());
    let r = engine::replay(&t, &config, &env).unwrap();
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    let cps = events_of(&r, "checkpoint");
    assert_eq!(cps.len(), 2);
    // Marker: applied at the first call after it.
    assert_eq!(cps[0].trace_index, boundary + 1);
    let EventDetail::Checkpoint(Summary {
        state_cutoff,
        chained,
        history_file,
        ..
    }) = &cps[0].detail
    else {
        panic!()
    };
    assert_eq!(*state_cutoff, boundary);
    assert!(!chained);
    let view = view_at(&r, boundary + 1);
    assert_eq!(view.len(), 2, "record + the new task's request");
    assert!(view[0].content.contains(history_file.as_str()));
    assert_eq!(view[1].content, "Now update the changelog");
    let disk = std::fs::read_to_string(dir.path().join(&history_file[1..])).unwrap();
    assert!(disk.contains(NEEDLE), "the finished task is on disk");
    // mark_task_done: the next call starts after its result, chained with the first record.
    let done_result = boundary + 4;
    assert_eq!(cps[1].trace_index, done_result + 2);
    let EventDetail::Checkpoint(Summary {
        state_cutoff,
        chained,
        ..
    }) = &cps[1].detail
    else {
        panic!()
    };
    assert_eq!((*state_cutoff, *chained), (done_result + 1, true));
}

/// `turns` user turns, each: user text, assistant calling `bash`, a result of `chars`, reply.
fn chat_trace(turns: usize, chars: usize) -> Trace {
    let mut t = Trace::new(TraceMeta::new("chat", SourceFormat::Canonical));
    t.messages.push(Message::system("sys"));
    for k in 0..turns {
        t.messages.push(Message::user(format!("question {k}")));
        let id = format!("q{k}");
        t.messages.push(Message::assistant(
            "",
            vec![call(&id, "bash", json!({"k": k}))],
        ));
        t.messages
            .push(Message::tool(id, "bash", "r".repeat(chars)));
        t.messages
            .push(Message::assistant(format!("answer {k}"), vec![]));
    }
    t
}

#[test]
fn turn_trim_drops_the_oldest_half_of_complete_turns_to_memory() {
    let t = chat_trace(9, 100);
    let r = run(
        &t,
        &[
            "preset=\"turn-trim\"",
            "turn_trim.max_turns=4",
            "turn_trim.history=\"offload\"",
        ],
    );
    let trims: Vec<&Event> = events_of(&r, "trimmed")
        .into_iter()
        .filter(|e| matches!(&e.detail, EventDetail::Trimmed { stage, .. } if stage == "turns"))
        .collect();
    assert!(!trims.is_empty());
    // 5 complete turns > 4 → the oldest 2 go; first happens when turn 5 is the current one.
    let first = trims[0];
    assert_eq!(first.trace_index, 1 + 5 * 4 + 1);
    let EventDetail::Trimmed {
        state_cutoff,
        turns,
        memory_file,
        ..
    } = &first.detail
    else {
        panic!()
    };
    assert_eq!((*turns, *state_cutoff), (2, Some(1 + 2 * 4)));
    let view = view_at(&r, first.trace_index);
    assert_eq!(view[0].content, "sys", "the system prompt stays");
    assert_eq!(view[1].content, "question 2");
    // What this trim appended to the memory history.
    let w = first
        .writes
        .iter()
        .find(|w| Some(w.path.as_str()) == memory_file.as_deref())
        .unwrap();
    let file = r.store.contents(&w.path).unwrap();
    let mem = std::str::from_utf8(&file[w.offset as usize..(w.offset + w.bytes) as usize]).unwrap();
    assert!(mem.contains("question 0") && mem.contains("answer 1"));
    assert!(!mem.contains("question 2"));
    assert!(r.store.contents("/memory/MEMORY.md").is_some());
    assert!(r.summarizer_calls >= 1);
}

#[test]
fn turn_trim_clips_only_historical_tool_results_and_compresses_few_turns() {
    let t = chat_trace(3, 30_000);
    let r = run(&t, &["preset=\"turn-trim\""]);
    let clipped: Vec<&Event> = events_of(&r, "trimmed")
        .into_iter()
        .filter(
            |e| matches!(&e.detail, EventDetail::Trimmed { stage, .. } if stage == "tool_results"),
        )
        .collect();
    // Turn 0's result is clipped when turn 1 starts, never while turn 0 is current.
    let EventDetail::Trimmed { indexes, .. } = &clipped[0].detail else {
        panic!()
    };
    assert_eq!(indexes, &[3]);
    assert_eq!(clipped[0].trace_index, 6);
    let during = view_at(&r, 4);
    assert_eq!(during[3].content.len(), 30_000, "current turn untouched");
    let after = view_at(&r, 6);
    assert!(after[3]
        .content
        .contains("[... 10000 characters truncated ...]"));
    let head_tail = "r".repeat(10_000);
    assert_eq!(
        after[3].content,
        format!("{head_tail}\n\n[... 10000 characters truncated ...]\n\n{head_tail}")
    );
    // Over a 1,000-token budget with < 5 turns: text compression (first user text + reply).
    let r = run(
        &t,
        &["preset=\"turn-trim\"", "turn_trim.max_tokens.tokens=1000"],
    );
    let comp = events_of(&r, "trimmed")
        .into_iter()
        .find(|e| matches!(&e.detail, EventDetail::Trimmed { stage, .. } if stage == "compressed"))
        .expect("compression");
    let view = view_at(&r, comp.trace_index);
    let texts: Vec<&str> = view.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(&texts[..3], ["sys", "question 0", "answer 0"]);
}

#[test]
fn core_agent_trigger_follows_the_model_tier_unless_set_explicitly() {
    let first_summary = |model: &str, sets: &[&str]| {
        let mut t = agent_trace(90, 1_000);
        t.meta.model = Some(model.into());
        let mut all = vec!["preset=\"core-agent\"", "window=20000"];
        all.extend_from_slice(sets);
        let r = run_with(&t, &all, KeepViews::None);
        events_of(&r, "summarized")[0].tokens_before.unwrap()
    };
    let small = first_summary("claude-haiku-4-5", &[]);
    let frontier = first_summary("claude-opus-4-1", &[]);
    let mid = first_summary("gemini-2.5-pro", &[]);
    assert!((7_000..7_400).contains(&small), "0.35 × 20k: {small}");
    assert!((13_000..13_400).contains(&mid), "0.65 × 20k: {mid}");
    assert!(
        (17_000..17_400).contains(&frontier),
        "0.85 × 20k: {frontier}"
    );
    let explicit = first_summary("claude-haiku-4-5", &["summarize.trigger.fraction=0.5"]);
    assert!((10_000..10_400).contains(&explicit), "{explicit}");
    let tier = first_summary("claude-haiku-4-5", &["tier=\"frontier\""]);
    assert!((17_000..17_400).contains(&tier), "{tier}");
}

#[test]
fn new_layer_tables_reject_unknown_keys_and_bad_values() {
    let bad = |set: &str| {
        EngineConfig::default()
            .apply_sets(&[set.to_string(), "preset=\"core-agent\"".into()])
            .and_then(|c| c.resolve(None))
            .unwrap_err()
            .to_string()
    };
    assert!(bad("watchdog.treshold=3").contains("treshold"));
    assert!(bad("watchdog.threshold=1").contains("watchdog.threshold"));
    assert!(bad("cost_ceiling.per_turn_usd=-1").contains("per_turn_usd"));
    let e = EngineConfig::default()
        .apply_sets(&[
            "preset=\"digitorn\"".into(),
            "truncate.keep.messages=3".into(),
        ])
        .unwrap()
        .resolve(None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no `truncate` layer"), "{e}");
}

#[test]
fn turn_trim_overflow_clears_a_single_long_turn_down_to_the_in_flight_call() {
    // One user turn of 30 steps: nothing is historical, so only the overflow path can act.
    let t = agent_trace(30, 2_000);
    let r = run(
        &t,
        &[
            "preset=\"turn-trim\"",
            "window=8000",
            "turn_trim.history=\"offload\"",
        ],
    );
    let em = events_of(&r, "emergency");
    assert!(!em.is_empty());
    assert!(events_of(&r, "overflow").is_empty());
    let e = em[0];
    assert!(e.tokens_before.unwrap() > 8000 && e.tokens_after.unwrap() <= 8000);
    let view = view_at(&r, e.trace_index);
    assert_eq!(view[0].content, "You are a coding agent.");
    assert_eq!(
        view[1].content,
        "Fix the failing parser test in src/parse.rs"
    );
    assert_eq!(view[2].role, Role::Assistant);
    assert_eq!(view.len(), 4, "the in-flight call and its result");
    let history_bytes = r.store.contents("/memory/history.md").unwrap();
    let history = std::str::from_utf8(&history_bytes).unwrap();
    assert!(history.contains(NEEDLE), "what left went to memory first");
    let EventDetail::Emergency {
        summarizer_usage,
        summarizer_calls,
        ..
    } = &e.detail
    else {
        panic!()
    };
    assert!(summarizer_usage.is_some_and(|u| u.input > 0));
    // Each memory note is its own summarizer call (priced and counted as one): the event keeps
    // them apart beside their sum, and the replay counts every one.
    assert!(!summarizer_calls.is_empty());
    let mut sum = ctxbench::trace::Usage::default();
    for u in summarizer_calls {
        sum.add(u);
    }
    assert_eq!(Some(sum), *summarizer_usage);
    let per_call = r.summarizer_call_usages();
    assert_eq!(per_call.as_slice().len() as u64, r.summarizer_calls);
    assert_eq!(per_call.total(), r.summarizer_usage);
    // Later requests keep the goal in front and never grow past the window.
    for c in r.calls.iter().filter(|c| c.trace_index > e.trace_index) {
        assert!(c.input_tokens <= 8000);
    }
}

/// [`agent_trace`] with a timestamp on every message, `gap` seconds apart.
fn timed(steps: usize, chars: usize, gap: u64) -> Trace {
    let mut t = agent_trace(steps, chars);
    for (i, m) in t.messages.iter_mut().enumerate() {
        let s = i as u64 * gap;
        m.timestamp = Some(format!(
            "2026-01-21T{:02}:{:02}:{:02}Z",
            s / 3600,
            s / 60 % 60,
            s % 60
        ));
    }
    t
}

/// digitorn's hook does not compact again within 30 s of its previous compaction: on a trace
/// whose messages are 1 s apart, compactions due in that time are held back (`cooldown`
/// events) and the requests are bigger; 60 s apart, or with no timestamps, nothing is held.
#[test]
fn digitorn_waits_30_s_between_compactions_by_trace_timestamps() {
    for preset in ["digitorn", "digitorn-truncate"] {
        let sets = [&*format!("preset={preset}"), "window=3000"];
        let compactions = |r: &Replay| r.events.iter().filter(|e| e.persistent).count();
        let fast = run(&timed(80, 400, 1), &sets);
        let slow = run(&timed(80, 400, 60), &sets);
        let untimed = run(&agent_trace(80, 400), &sets);
        assert!(
            compactions(&slow) >= 3,
            "{preset}: {:?}",
            slow.event_counts()
        );
        assert!(events_of(&slow, "cooldown").is_empty(), "{preset}");
        assert_eq!(
            slow.event_counts(),
            untimed.event_counts(),
            "{preset}: no clock, no guard"
        );
        let held = events_of(&fast, "cooldown");
        assert!(!held.is_empty(), "{preset}: {:?}", fast.event_counts());
        assert!(compactions(&fast) < compactions(&slow), "{preset}");
        assert!(fast.input_tokens() > slow.input_tokens(), "{preset}");
        for e in &held {
            let EventDetail::Cooldown {
                since_secs,
                cooldown_secs,
            } = e.detail
            else {
                panic!("{e:?}")
            };
            assert_eq!(cooldown_secs, 30.0);
            assert!(since_secs < 30.0 && since_secs > 0.0, "{since_secs}");
        }
        // Every compaction of the fast trace is at least 30 s after the previous one.
        let at: Vec<usize> = fast
            .events
            .iter()
            .filter(|e| e.persistent && e.layer != "emergency")
            .map(|e| e.trace_index)
            .collect();
        assert!(
            at.windows(2).all(|w| (w[1] - w[0]) * 2 >= 30),
            "{preset}: {at:?}"
        );
    }
}

/// The paths `cleared` events name in `writes`, per event (`newly_cleared` with them).
fn cleared_writes(r: &Replay) -> Vec<(Vec<usize>, Vec<String>)> {
    events_of(r, "cleared")
        .iter()
        .map(|e| {
            let EventDetail::Cleared { newly_cleared, .. } = &e.detail else {
                unreachable!()
            };
            let paths = e.writes.iter().map(|w| w.path.clone()).collect();
            (newly_cleared.clone(), paths)
        })
        .collect()
}

/// With `offload`, a `cleared` event names the files it wrote, one per result it cleared for
/// the first time, as `evicted` and `summarized` name theirs: in its `writes`, its timeline
/// note (`; wrote …`, what samples.jsonl and report.html show) and its `ctxbench replay` line
/// (`→ …`). A later event clearing the same results again wrote nothing and names nothing;
/// every file of the store is named by exactly one event.
#[test]
fn clear_with_offload_names_the_files_it_wrote_in_its_event() {
    let mut t = agent_trace(8, 900);
    // A last call with no new result: it clears what the one before cleared, writing nothing.
    t.messages.push(Message::user("Thanks."));
    t.messages
        .push(Message::assistant("You are welcome.", vec![]));
    let r = run(
        &t,
        &[
            "preset=\"langchain\"",
            "clear_tool_results.trigger.tokens=1500",
            "clear_tool_results.offload=true",
        ],
    );
    let path_of = |i: usize| {
        format!(
            "/cleared_tool_results/{}",
            t.messages[i].tool_call_id.as_deref().unwrap()
        )
    };
    let per_event = cleared_writes(&r);
    assert!(per_event.iter().any(|(_, w)| w.len() >= 2), "{per_event:?}");
    assert!(per_event.iter().any(|(_, w)| w.len() == 1), "{per_event:?}");
    assert!(per_event.last().unwrap().1.is_empty(), "{per_event:?}");
    let mut named = Vec::new();
    for (e, (newly, written)) in events_of(&r, "cleared").iter().zip(&per_event) {
        let want: Vec<String> = newly.iter().map(|&i| path_of(i)).collect();
        assert_eq!(*written, want);
        if written.is_empty() {
            assert!(
                !e.timeline_note().contains("wrote"),
                "{}",
                e.timeline_note()
            );
            assert!(e.describe().ends_with(" excluded)"), "{}", e.describe());
        } else {
            let list = written.join(", ");
            assert!(
                e.timeline_note()
                    .ends_with(&format!(" tokens; wrote {list}")),
                "{}",
                e.timeline_note()
            );
            assert!(
                e.describe().ends_with(&format!(" excluded) → {list}")),
                "{}",
                e.describe()
            );
        }
        named.extend(written.iter().cloned());
    }
    let mut files: Vec<String> = r.store.paths().iter().map(|p| p.to_string()).collect();
    files.sort();
    named.sort();
    assert_eq!(named, files);
}

/// Anthropic's reading of `clear_at_least` undoes a clearing that frees too little: the
/// placeholders of that request were built (and, with `offload`, their files written) but
/// nothing was cleared. The event that does clear those results later counts them as cleared
/// for the first time and names their files.
#[test]
fn clear_undone_by_its_minimum_names_its_files_when_it_does_clear() {
    let t = agent_trace(8, 900);
    let r = run(
        &t,
        &[
            "preset=\"langchain\"",
            "clear_tool_results.trigger.tokens=1000",
            "clear_tool_results.clear_at_least=600",
            "clear_tool_results.clear_at_least_is_minimum=true",
            "clear_tool_results.offload=true",
        ],
    );
    let per_event = cleared_writes(&r);
    // Calls over the trigger before the first clearing: their clearing was undone.
    let first = events_of(&r, "cleared")[0].trace_index;
    let undone = r
        .calls
        .iter()
        .filter(|c| c.trace_index < first && c.input_tokens > 1000)
        .count();
    assert!(undone >= 1, "{:?}", r.calls);
    let mut newly: Vec<usize> = per_event.iter().flat_map(|(n, _)| n.clone()).collect();
    let mut named: Vec<String> = per_event.iter().flat_map(|(_, w)| w.clone()).collect();
    newly.sort();
    named.sort();
    // Every result cleared at the last call was cleared for the first time by some event, and
    // every file written is named.
    let EventDetail::Cleared { cleared, .. } = events_of(&r, "cleared").last().unwrap().detail
    else {
        unreachable!()
    };
    assert_eq!(newly.len(), cleared, "{per_event:?}");
    let mut files: Vec<String> = r.store.paths().iter().map(|p| p.to_string()).collect();
    files.sort();
    assert_eq!(named, files);
}
