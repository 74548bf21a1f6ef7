//! Invariants under generated traces: random turn structures, tool mixes (including huge
//! results, huge pasted user messages and long write_file arguments) and engine configs.

use ctxbench::engine::{self, EngineConfig, OfflineSummarizer, ReplayEnv};
use ctxbench::trace::{Message, Role, SourceFormat, ToolCall, Trace, TraceMeta};
use proptest::prelude::*;
use serde_json::json;

#[derive(Clone, Debug)]
struct Turn {
    user_chars: usize,
    /// (tool index, result chars, arg chars) per call; several steps per turn.
    steps: Vec<Vec<(usize, usize, usize)>>,
}

const TOOLS: [&str; 6] = [
    "execute",
    "read_file",
    "write_file",
    "web_fetch",
    "grep",
    "edit_file",
];

fn text(n: usize, seed: usize) -> String {
    let words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "error",
        "fix",
        "path/to/file.py",
    ];
    let mut s = String::with_capacity(n + 16);
    let mut k = seed;
    while s.len() < n {
        s.push_str(words[k % words.len()]);
        k = k.wrapping_mul(31).wrapping_add(7);
        s.push(if k.is_multiple_of(9) { '\n' } else { ' ' });
    }
    s.truncate(n);
    s
}

fn build(turns: &[Turn]) -> Trace {
    let mut t = Trace::new(TraceMeta::new("gen", SourceFormat::Canonical));
    t.messages.push(Message::system("You are an agent."));
    let mut id = 0;
    for (ti, turn) in turns.iter().enumerate() {
        t.messages.push(Message::user(text(turn.user_chars, ti)));
        for step in &turn.steps {
            let calls: Vec<ToolCall> = step
                .iter()
                .map(|&(tool, _, arg)| {
                    id += 1;
                    let name = TOOLS[tool % TOOLS.len()];
                    let arguments = match name {
                        "write_file" | "edit_file" => {
                            json!({"file_path": format!("/src/f{id}.py"), "content": text(arg, id)})
                        }
                        "read_file" => json!({"file_path": format!("/src/f{id}.py")}),
                        _ => json!({"command": format!("run {id}")}),
                    };
                    ToolCall {
                        id: format!("call_{id}"),
                        name: name.into(),
                        arguments,
                    }
                })
                .collect();
            let results: Vec<Message> = calls
                .iter()
                .zip(step)
                .map(|(c, &(_, res, _))| {
                    Message::tool(c.id.clone(), c.name.clone(), text(res, res))
                })
                .collect();
            t.messages.push(Message::assistant("Working on it.", calls));
            t.messages.extend(results);
        }
        t.messages
            .push(Message::assistant("Done with this part.", vec![]));
    }
    t
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 10usize..3_000, 2 => 3_000usize..40_000, 1 => 79_000usize..130_000]
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        prop_oneof![9 => 20usize..2_000, 1 => 199_000usize..230_000],
        prop::collection::vec(
            prop::collection::vec(
                (
                    0usize..6,
                    size(),
                    prop_oneof![3 => 10usize..500, 1 => 2_000usize..9_000],
                ),
                0..3,
            ),
            0..5,
        ),
    )
        .prop_map(|(user_chars, steps)| Turn { user_chars, steps })
}

fn config() -> impl Strategy<Value = Vec<String>> {
    (
        prop_oneof![Just(8_000u64), Just(20_000), Just(60_000), Just(200_000)],
        prop_oneof![Just(None), Just(Some(2_000u64)), Just(Some(4_000))],
        prop_oneof![
            Just("summarize.keep.fraction=0.1".to_string()),
            Just("summarize.keep.messages=4".to_string()),
            Just("summarize.keep.tokens=3000".to_string())
        ],
        prop_oneof![Just("deepagents"), Just("none")],
    )
        .prop_map(|(w, out, keep, preset)| {
            let mut v = vec![format!("window={w}"), format!("preset={preset:?}")];
            if preset == "deepagents" {
                v.push(keep);
            }
            if let Some(o) = out {
                v.push(format!("max_output_tokens={o}"));
            }
            v
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn invariants_hold_on_generated_traces(turns in prop::collection::vec(turn(), 1..7), sets in config()) {
        let trace = build(&turns);
        let resolved = EngineConfig::default().apply_sets(&sets).unwrap().resolve(None).unwrap();
        prop_assert_eq!(format!("window={}", resolved.window), sets[0].clone());
        prop_assert_eq!(format!("preset={:?}", resolved.preset), sets[1].clone());
        let env = ReplayEnv::new(&OfflineSummarizer);
        let r = engine::replay(&trace, &resolved, &env).unwrap();
        prop_assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
        prop_assert!(r.invariants.trace_defects.is_empty());
        let assistants = trace.messages.iter().filter(|m| m.role == Role::Assistant).count();
        if r.stopped.is_none() {
            prop_assert_eq!(r.calls.len(), assistants);
        }
        for c in &r.calls {
            let overflow = c.events.iter().any(|&k| r.events[k].kind() == "overflow");
            prop_assert!(c.input_tokens <= r.window || overflow);
            prop_assert!(c.cached_tokens <= c.input_tokens);
            if resolved.preset == "none" {
                prop_assert_eq!(c.input_tokens, c.reference_tokens);
            }
        }
    }
}

/// Shrunk case from the generated suite: a large `grep` result (message 3) evicted to
/// `/large_tool_results/call_1`, then summarization offloads the history; the pointer must
/// still resolve to the exact original content of message 3.
#[test]
fn regression_evicted_result_survives_summarize_offload() {
    let turns = [Turn {
        user_chars: 20,
        steps: vec![vec![(3, 108_429, 10), (1, 79_000, 10)]],
    }];
    let trace = build(&turns);
    let sets: Vec<String> = [
        "window=8000",
        "preset=\"deepagents\"",
        "summarize.keep.fraction=0.1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let resolved = EngineConfig::default()
        .apply_sets(&sets)
        .unwrap()
        .resolve(None)
        .unwrap();
    let env = ReplayEnv::new(&OfflineSummarizer);
    let r = engine::replay(&trace, &resolved, &env).unwrap();
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    assert!(r.invariants.trace_defects.is_empty());
}
