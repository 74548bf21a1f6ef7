//! The `deepagents` preset against the real deepagents 0.7.32 golden fixtures: identical
//! events (types, indexes, counts, texts), model calls (tokens, message counts, views) and
//! per-message token counts, with only the random UUID names normalised.

use crate::support::traces::golden as dir;
use ctxbench::engine::fixture;
use ctxbench::engine::StoreTarget;
use ctxbench::tokens::approx::ApproxCounter;
use ctxbench::tokens::TokenCounter;
use regex::Regex;
use serde_json::Value;
use std::path::Path;

const FIXTURES: [&str; 7] = [
    "mini-swe-django-11138",
    "synthetic-s11-w60k",
    "synthetic-s7",
    "synthetic-s7-anthropic",
    "synthetic-s7-out64k",
    "synthetic-s7-w100k",
    "synthetic-s7-w60k-out40k",
];

fn normalise(s: &str) -> String {
    let session = Regex::new(r"session_[0-9a-f]{32}").unwrap();
    let uuid = Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let s = session.replace_all(s, "session_<HEX>");
    uuid.replace_all(&s, "<UUID4>").into_owned()
}

fn norm_value(v: &Value) -> Value {
    serde_json::from_str(&normalise(&v.to_string())).unwrap()
}

fn load_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn diff_arrays(what: &str, fixture: &str, got: &[Value], want: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for (k, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        if g != w {
            let mut keys = Vec::new();
            if let (Some(go), Some(wo)) = (g.as_object(), w.as_object()) {
                for (key, wv) in wo {
                    if go.get(key) != Some(wv) {
                        let gs = go
                            .get(key)
                            .map(|x| x.to_string())
                            .unwrap_or("<missing>".into());
                        keys.push(format!(
                            "{key}: got {} want {}",
                            &gs[..gs.len().min(200)],
                            &wv.to_string()[..wv.to_string().len().min(200)]
                        ));
                    }
                }
                for key in go.keys() {
                    if !wo.contains_key(key) {
                        keys.push(format!("{key}: unexpected"));
                    }
                }
            }
            problems.push(format!(
                "{fixture} {what}[{k}] (trace_index {}): {}",
                w["trace_index"],
                keys.join("; ")
            ));
            if problems.len() >= 5 {
                break;
            }
        }
    }
    if got.len() != want.len() {
        problems.push(format!(
            "{fixture} {what}: got {} entries, want {}",
            got.len(),
            want.len()
        ));
    }
    problems
}

fn check_fixture(name: &str) -> Vec<String> {
    let d = dir(name);
    let replay = fixture::run(&d, &[], StoreTarget::Memory).expect("fixture replays");
    let got = norm_value(&fixture::to_fixture_json(&replay));
    let want_events = norm_value(&load_json(&d.join("events.json")));
    let want_calls = norm_value(&load_json(&d.join("model_calls.json")));
    let mut problems = diff_arrays(
        "events",
        name,
        got["events"].as_array().unwrap(),
        want_events.as_array().unwrap(),
    );
    problems.extend(diff_arrays(
        "model_calls",
        name,
        got["model_calls"].as_array().unwrap(),
        want_calls.as_array().unwrap(),
    ));
    assert!(
        replay.invariants.passed(),
        "{name}: invariants failed: {:?}",
        replay.invariants.violations
    );
    problems
}

#[test]
fn every_fixture_matches_deepagents_exactly() {
    let mut problems = Vec::new();
    for name in FIXTURES {
        problems.extend(check_fixture(name));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn approx_counter_reproduces_every_message_token_count() {
    let mut problems = Vec::new();
    for name in FIXTURES {
        let d = dir(name);
        let fx = fixture::load(&d).unwrap();
        let mt = load_json(&d.join("message_tokens.json"));
        let cpt = mt["chars_per_token"].as_f64().unwrap();
        let counter = ApproxCounter::new("approx", cpt);
        for entry in mt["messages"].as_array().unwrap() {
            let i = entry["i"].as_u64().unwrap() as usize;
            let m = &fx.trace.messages[i];
            let want = entry["tokens"].as_u64().unwrap();
            let got = counter.count_message(m);
            if got != want {
                problems.push(format!("{name} message {i}: got {got} want {want}"));
            }
            if let Some(r) = entry.get("tool_calls_repr").and_then(|r| r.as_str()) {
                let mine = ctxbench::tokens::approx::tool_calls_repr(m);
                if mine != r {
                    problems.push(format!(
                        "{name} message {i}:\n  repr want {r}\n  repr got  {mine}"
                    ));
                }
                assert_eq!(
                    ctxbench::tokens::approx::tool_calls_repr_len(m),
                    r.chars().count()
                );
            }
        }
        // Fixed overhead: system message + tools.
        let cfg = load_json(&d.join("config.json"));
        let sys =
            counter.count_message(&ctxbench::trace::Message::system(fx.system_prompt.clone()));
        let tools = counter.count_tools(&fx.tools);
        assert_eq!(
            sys,
            cfg["fixed_overhead_tokens"]["system_message"]
                .as_u64()
                .unwrap(),
            "{name}"
        );
        assert_eq!(
            tools,
            cfg["fixed_overhead_tokens"]["tools"].as_u64().unwrap(),
            "{name}"
        );
    }
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems[..problems.len().min(10)].join("\n")
    );
}

#[test]
fn tool_schemas_round_trip_to_python_json_dumps() {
    let d = dir("synthetic-s7");
    let tools = load_json(&d.join("tools.json"));
    for s in tools["json_dumps"].as_array().unwrap() {
        let s = s.as_str().unwrap();
        let v: Value = serde_json::from_str(s).unwrap();
        assert_eq!(ctxbench::tokens::approx::tool_schema_json(&v), s);
    }
}

/// The over-budget clip of a result whose deepagents name an evicted result's file already has
/// (`synthetic-s7-w60k-out40k` with the id of the result clipped at message 109 renamed
/// `call.03.05.0.0034`, which sanitizes to the name of the result evicted at message 73; the
/// same length, so every count before the clip is the fixture's): deepagents' backend refuses
/// the write, so the clip leaves the result as it is, as ctxbench does.
#[test]
fn a_result_named_like_an_evicted_one_is_not_clipped_over_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let src = dir("synthetic-s7-w60k-out40k");
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    let trace = std::fs::read_to_string(src.join("trace.jsonl")).unwrap();
    assert_eq!(
        trace.matches("call_05_02_0_0051").count(),
        2,
        "the call and its result"
    );
    let renamed = trace.replace("call_05_02_0_0051", "call.03.05.0.0034");
    std::fs::write(tmp.path().join("trace.jsonl"), renamed).unwrap();
    let replay = fixture::run(tmp.path(), &[], StoreTarget::Memory).expect("fixture replays");
    assert!(
        replay.invariants.passed(),
        "{:?}",
        replay.invariants.violations
    );
    let fx = fixture::load(tmp.path()).unwrap();
    let evicted = "/large_tool_results/call_03_05_0_0034";
    assert_eq!(
        &*replay.store.contents(evicted).unwrap(),
        fx.trace.messages[73].content.as_bytes()
    );
    // deepagents' backend refuses to write the clip of message 109 over that file, and the
    // offload leaves the message as it was: not clipped, the evicted file kept.
    let clipped = replay.events.iter().any(|e| {
        matches!(
            e.detail,
            ctxbench::engine::EventDetail::OverBudgetClipped {
                clipped_index: 109,
                ..
            }
        )
    });
    assert!(!clipped, "message 109 was clipped over {evicted}");
    assert_eq!(
        replay
            .store
            .paths()
            .iter()
            .filter(|p| p.starts_with(evicted))
            .count(),
        1
    );
}
