//! Property tests: generated traces (random turn counts, step counts, parallel calls, tool
//! mixes, result and argument sizes, huge results and pasted messages, repeated identical
//! calls, task-boundary markers, `mark_task_done`) under every preset with random windows,
//! layer settings and a summarizer that sometimes fails or answers with error text. After every
//! model call of every replay the engine's invariants must hold: no orphan result or dangling
//! call, the request fits or an `overflow` event says why, every pointer resolves byte-exact,
//! no summary is an error string or placeholder, no raw turn is summarized twice.

use ctxbench::engine::{
    self, presets, EngineConfig, OfflineSummarizer, ReplayEnv, Summarizer, Summary, SummaryError,
    SummaryOutput, SummaryRequest,
};
use ctxbench::trace::{ContextMarker, Message, Role, SourceFormat, ToolCall, Trace, TraceMeta};
use proptest::prelude::*;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};

const TOOLS: [&str; 7] = [
    "bash",
    "read_file",
    "write_file",
    "grep",
    "web_fetch",
    "edit_file",
    "mark_task_done",
];

#[derive(Clone, Debug)]
struct Step {
    /// (tool, result chars, arg chars) per parallel call.
    calls: Vec<(usize, usize, usize)>,
    /// Repeat the previous step's first call literally (watchdog food).
    repeat: bool,
}

#[derive(Clone, Debug)]
struct Turn {
    user_chars: usize,
    steps: Vec<Step>,
    reply: bool,
    boundary_before: bool,
}

fn text(n: usize, seed: usize) -> String {
    const WORDS: [&str; 8] = [
        "alpha",
        "beta",
        "gamma",
        "error",
        "fix",
        "src/lib.rs",
        "ünïcode",
        "λ",
    ];
    let mut s = String::with_capacity(n + 16);
    let (mut k, mut chars) = (seed, 0);
    while chars < n {
        let w = WORDS[k % WORDS.len()];
        s.push_str(w);
        k = k.wrapping_mul(31).wrapping_add(7);
        s.push(if k % 7 == 0 { '\n' } else { ' ' });
        chars += w.chars().count() + 1;
    }
    match s.char_indices().nth(n) {
        Some((b, _)) => s[..b].to_string(),
        None => s,
    }
}

fn build(turns: &[Turn], model: &str) -> Trace {
    let mut meta = TraceMeta::new("prop", SourceFormat::Canonical);
    meta.model = Some(model.into());
    let mut t = Trace::new(meta);
    t.messages.push(Message::system("You are an agent."));
    let mut id = 0usize;
    let mut last: Option<ToolCall> = None;
    for (ti, turn) in turns.iter().enumerate() {
        if turn.boundary_before && ti > 0 {
            t.markers.push(ContextMarker {
                index: t.messages.len(),
                kind: "task_boundary".into(),
                detail: None,
                tokens_before: None,
            });
        }
        let mut u = Message::user(text(turn.user_chars, ti));
        if ti % 3 == 2 {
            u.kind = Some("user_simulator".into());
        }
        t.messages.push(u);
        for step in &turn.steps {
            let mut calls: Vec<ToolCall> = Vec::new();
            for (k, &(tool, _, arg)) in step.calls.iter().enumerate() {
                id += 1;
                if k == 0 && step.repeat {
                    if let Some(prev) = &last {
                        calls.push(ToolCall {
                            id: format!("call_{id}"),
                            ..prev.clone()
                        });
                        continue;
                    }
                }
                let name = TOOLS[tool % TOOLS.len()];
                let arguments = match name {
                    "write_file" | "edit_file" => {
                        json!({"file_path": format!("/src/f{id}.rs"), "content": text(arg, id)})
                    }
                    "read_file" => json!({"file_path": format!("/src/f{}.rs", id % 3)}),
                    _ => json!({"command": format!("run {}", id % 4)}),
                };
                calls.push(ToolCall {
                    id: format!("call_{id}"),
                    name: name.into(),
                    arguments,
                });
            }
            last = calls.first().cloned();
            let results: Vec<Message> = calls
                .iter()
                .zip(&step.calls)
                .map(|(c, &(_, res, _))| {
                    Message::tool(c.id.clone(), c.name.clone(), text(res, res))
                })
                .collect();
            t.messages.push(Message::assistant("Working.", calls));
            t.messages.extend(results);
        }
        if turn.reply {
            t.messages
                .push(Message::assistant(format!("Reply {ti}."), vec![]));
        }
    }
    t.messages.push(Message::assistant("Finished.", vec![]));
    t
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![10 => 5usize..2_500, 3 => 2_500usize..25_000, 1 => 79_000usize..100_000]
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        prop_oneof![12 => 1usize..1_500, 1 => 199_000usize..205_000],
        prop::collection::vec(
            (
                prop::collection::vec(
                    (
                        0usize..7,
                        size(),
                        prop_oneof![3 => 5usize..400, 1 => 2_000usize..6_000],
                    ),
                    1..4,
                ),
                prop::bool::weighted(0.3),
            )
                .prop_map(|(calls, repeat)| Step { calls, repeat }),
            0..6,
        ),
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(user_chars, steps, reply, boundary_before)| Turn {
            user_chars,
            steps,
            reply,
            boundary_before,
        })
}

/// Layer settings worth varying per preset (each a `--set`).
fn sets(preset: &'static str) -> BoxedStrategy<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match preset {
        "seed-layered" => prop_oneof![
            Just(s(&[])),
            Just(s(&["clear_tool_results.keep=1"])),
            Just(s(&[
                "clear_tool_results.offload=true",
                "clear_tool_results.clear_tool_inputs=true"
            ])),
            Just(s(&[
                "clear_tool_results.clear_at_least=500",
                "summarize.keep.messages=6"
            ])),
        ]
        .boxed(),
        "langchain" => prop_oneof![
            Just(s(&["clear_tool_results.trigger.fraction=0.3"])),
            Just(s(&[
                "summarize.keep.tokens=2000",
                "clear_tool_results.trigger.tokens=3000",
                "clear_tool_results.offload=true"
            ])),
        ]
        .boxed(),
        "digitorn" => prop_oneof![
            Just(s(&[])),
            Just(s(&["summarize.keep.messages=4", "emergency.keep_recent=6"])),
        ]
        .boxed(),
        "digitorn-truncate" => prop_oneof![
            Just(s(&[])),
            Just(s(&["truncate.keep.messages=3"])),
            Just(s(&[
                "truncate.keep.fraction=0.2",
                "truncate.reminder=false"
            ])),
            Just(s(&["truncate.trigger.fraction=1.0"])),
        ]
        .boxed(),
        "core-agent" => prop_oneof![
            Just(s(&[])),
            Just(s(&["summarize.keep.messages=5"])),
            Just(s(&[
                "cost_ceiling.per_turn_usd=0.05",
                "cost_ceiling.action=\"alert\""
            ])),
            Just(s(&["cost_ceiling.per_session_usd=0.2"])),
        ]
        .boxed(),
        "turn-trim" => prop_oneof![
            Just(s(&[])),
            Just(s(&[
                "turn_trim.max_turns=2",
                "turn_trim.max_tokens.fraction=0.5"
            ])),
            Just(s(&[
                "turn_trim.compress_below_turns=10",
                "turn_trim.max_tokens.tokens=3000"
            ])),
            Just(s(&[
                "turn_trim.tool_result_max_chars=1000",
                "turn_trim.memory_summary=false"
            ])),
        ]
        .boxed(),
        "deepagents" => prop_oneof![
            Just(s(&[])),
            Just(s(&["summarize.keep.messages=4"])),
            Just(s(&["max_output_tokens=2000"])),
        ]
        .boxed(),
        _ => Just(Vec::new()).boxed(),
    }
}

fn preset_and_sets() -> impl Strategy<Value = (&'static str, Vec<String>)> {
    prop::sample::select(presets::NAMES).prop_flat_map(|p| (Just(p), sets(p)))
}

/// Fails or answers with error text on a pseudo-random share of calls.
struct FlakySummarizer {
    seed: u64,
    calls: AtomicU64,
}

impl Summarizer for FlakySummarizer {
    fn summarize(&self, req: &SummaryRequest<'_>) -> Result<SummaryOutput, SummaryError> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        match (self.seed.wrapping_add(n * 7)) % 5 {
            0 => Err(SummaryError::Failed("HTTP 529 overloaded".into())),
            1 => Ok(SummaryOutput {
                text: "Error generating summary: context length exceeded".into(),
                usage: Default::default(),
                model: "flaky".into(),
            }),
            _ => OfflineSummarizer.summarize(req),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_every_preset(
        turns in prop::collection::vec(turn(), 1..9),
        (preset, mut sets) in preset_and_sets(),
        window in prop_oneof![Just(6_000u64), Just(15_000), Just(40_000), Just(200_000)],
        model in prop::sample::select(vec!["claude-haiku-4-5", "claude-opus-4-1", "gemini-2.5-pro", "gpt-4.1-mini", "mystery-model"]),
        flaky in prop::option::weighted(0.3, any::<u64>()),
    ) {
        let trace = build(&turns, model);
        sets.push(format!("preset={preset:?}"));
        sets.push(format!("window={window}"));
        if preset == "core-agent" && sets.iter().any(|s| s.starts_with("cost_ceiling.per")) {
            sets.push("cost_ceiling.input_usd_per_mtok=3".into());
            sets.push("cost_ceiling.output_usd_per_mtok=15".into());
        }
        let config = EngineConfig::default().apply_sets(&sets).unwrap().resolve(None).unwrap();
        let flaky_sum = FlakySummarizer { seed: flaky.unwrap_or(0), calls: AtomicU64::new(0) };
        let summarizer: &dyn Summarizer = if flaky.is_some() { &flaky_sum } else { &OfflineSummarizer };
        let env = ReplayEnv::new(summarizer);
        let r = engine::replay(&trace, &config, &env).unwrap();

        prop_assert!(r.invariants.passed(), "{preset} {sets:?}: {:?}", r.invariants.violations);
        prop_assert!(r.invariants.trace_defects.is_empty(), "{:?}", r.invariants.trace_defects);
        let assistants = trace.messages.iter().filter(|m| m.role == Role::Assistant).count();
        if r.stopped.is_none() {
            prop_assert_eq!(r.calls.len(), assistants);
        }
        for c in &r.calls {
            let over = c.events.iter().any(|&k| r.events[k].kind() == "overflow");
            prop_assert!(c.input_tokens <= r.window || over);
            prop_assert!(c.cached_tokens <= c.input_tokens);
            if preset == "none" {
                prop_assert_eq!(c.input_tokens, c.reference_tokens);
            }
        }
        for e in &r.events {
            // Failed summaries never became summaries: each is an error event.
            if let Some(Summary {
                summary_message, ..
            }) = e.detail.summary()
            {
                prop_assert!(!summary_message.contains("Error generating summary"));
            }
            // Every write an event reports is in the store.
            for w in &e.writes {
                let bytes = r.store.contents(&w.path);
                prop_assert!(bytes.is_some_and(|b| b.len() as u64 >= w.offset + w.bytes), "{}", w.path);
            }
        }
        if flaky.is_none() {
            prop_assert!(!r.events.iter().any(|e| e.kind() == "error"));
        }
        // The truncate baseline offloads nothing at all.
        if preset == "digitorn-truncate" {
            prop_assert!(r.store.paths().is_empty(), "{:?}", r.store.paths());
        }
    }
}
