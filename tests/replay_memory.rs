//! Peak memory of `ctxbench replay FILE`: about one copy of the trace, never the file held whole
//! beside the parsed model.
//!
//! A counting global allocator records the peak of live heap bytes while the replay command's
//! library path (`cli::replay::replay_file`: read, import, count, replay) runs on the golden
//! `synthetic-s7` trace repeated 2× and 8×, written in each import format (JSON Lines, one
//! document, one conversation or run per line or element). The slope between the two sizes (extra peak bytes per
//! extra file byte) cancels what does not grow with the trace (price table, counter tables).
//! Holding the trace twice makes the slope ≥ 2: the file read whole beside the parsed trace
//! (2.07 measured) or the messages copied into the replay instead of moved (2.08); one copy
//! gives ~1.1. A one-document format whose importer copies text out of the whole parsed tree
//! while it is alive holds it twice too. Bytes, not time: nothing here depends on speed.
//! One test in this binary, so no other test allocates while it measures.

#[path = "it/support/counting_alloc.rs"]
mod counting_alloc;

use clap::Parser;
use ctxbench::cli::{replay, Cli, Command};
use serde_json::{json, Value};
use std::path::Path;

const GOLDEN: &str = "testdata/deepagents-golden/synthetic-s7/trace.jsonl";

/// How a big trace is written (as `benches/runner/big_trace.py --format` writes them).
#[derive(Clone, Copy, Debug)]
enum Format {
    /// Fixture-style JSON Lines of messages.
    Fixture,
    /// Canonical JSONL with a header.
    Canonical,
    /// One pretty-printed OpenAI `{"model", "messages": […]}` document.
    OpenAiDoc,
    /// OpenAI conversations, one `{"id", "messages"}` per line (one per copy of the trace).
    OpenAiLines,
    /// One pretty-printed Anthropic Messages document.
    AnthropicDoc,
    /// A Claude Code session, one record per message.
    ClaudeCode,
    /// One pretty-printed mini-swe-agent `.traj.json` document.
    MiniSwe,
    /// A τ-bench results array, one run per copy of the trace.
    Tau,
    /// One SWE-agent `.traj` document (`history` of OpenAI messages).
    SweAgent,
    /// One ATIF document (tool results in the calling step's observation).
    Atif,
}

/// The golden messages, copy `k`, tool-call ids made unique per copy.
fn copy(lines: &[Value], k: usize) -> Vec<Value> {
    lines
        .iter()
        .map(|m| {
            let mut m = m.clone();
            let o = m.as_object_mut().unwrap();
            if let Some(Value::Array(calls)) = o.get_mut("tool_calls") {
                for c in calls.iter_mut() {
                    let c = c.as_object_mut().unwrap();
                    let id = format!("{}_r{k}", c["id"].as_str().unwrap());
                    c.insert("id".into(), id.into());
                }
            }
            if let Some(Value::String(id)) = o.get_mut("tool_call_id") {
                id.push_str(&format!("_r{k}"));
            }
            m
        })
        .collect()
}

/// A fixture-style message as an OpenAI chat message (arguments as a JSON string).
fn openai(m: &Value) -> Value {
    let mut o = m.clone();
    if let Some(Value::Array(calls)) = o.get_mut("tool_calls") {
        for c in calls.iter_mut() {
            *c = json!({"id": c["id"], "type": "function", "function": {
                "name": c["name"], "arguments": c["args"].to_string()}});
        }
    }
    o
}

/// Fixture-style messages as Anthropic messages: tool results grouped into user turns of
/// `tool_result` blocks.
fn anthropic(msgs: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in msgs {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                let mut blocks = Vec::new();
                if m["content"] != "" {
                    blocks.push(json!({"type": "text", "text": m["content"]}));
                }
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    blocks.push(json!({"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}));
                }
                out.push(json!({"role": "assistant", "content": blocks}));
            }
            "tool" => {
                let block = json!({"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]});
                match out.last_mut() {
                    Some(u) if u["role"] == "user" && u["content"].is_array() => {
                        u["content"].as_array_mut().unwrap().push(block)
                    }
                    _ => out.push(json!({"role": "user", "content": [block]})),
                }
            }
            _ => out.push(m.clone()),
        }
    }
    out
}

/// A fixture-style message as a mini-swe-agent message (the first tool call as a bash block,
/// results as user observations).
fn mini_swe(m: &Value) -> Value {
    if m["role"] == "tool" {
        return json!({"role": "user", "content": m["content"]});
    }
    let mut content = m["content"].as_str().unwrap().to_string();
    if let Some(c) = m["tool_calls"].get(0) {
        content.push_str(&format!("\n```bash\n{}\n```", c["args"]));
    }
    json!({"role": m["role"], "content": content})
}

/// Fixture-style messages as ATIF steps: tool results become the observation of the agent
/// step that called them.
fn atif(msgs: &[Value]) -> Vec<Value> {
    let mut steps: Vec<Value> = Vec::new();
    for m in msgs {
        if m["role"] == "tool" {
            let step = steps.last_mut().unwrap().as_object_mut().unwrap();
            let obs = step
                .entry("observation")
                .or_insert_with(|| json!({"results": []}));
            obs["results"]
                .as_array_mut()
                .unwrap()
                .push(json!({"source_call_id": m["tool_call_id"], "content": m["content"]}));
            continue;
        }
        let source = if m["role"] == "assistant" {
            "agent".into()
        } else {
            m["role"].clone()
        };
        let mut step =
            json!({"step_id": steps.len() + 1, "source": source, "message": m["content"]});
        if let Some(calls) = m["tool_calls"].as_array() {
            step["tool_calls"] = calls
                .iter()
                .map(|c| json!({"tool_call_id": c["id"], "function_name": c["name"], "arguments": c["args"]}))
                .collect();
        }
        steps.push(step);
    }
    steps
}

/// The golden trace `n` times in `format`, tool-call ids made unique per copy (as
/// `benches/runner/big_trace.py` does).
fn big_trace(dir: &Path, n: usize, format: Format) -> (std::path::PathBuf, u64) {
    let lines: Vec<Value> = std::fs::read_to_string(GOLDEN)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let all: Vec<Value> = (0..n).flat_map(|k| copy(&lines, k)).collect();
    let mut out = String::new();
    let mut line = |v: &Value| {
        out.push_str(&serde_json::to_string(v).unwrap());
        out.push('\n');
    };
    match format {
        Format::Fixture => all.iter().for_each(line),
        Format::Canonical => {
            line(&json!({"type": "header", "schema_version": 1,
                "meta": {"id": "big", "source_format": "openai"}}));
            for m in &all {
                let mut m = m.clone();
                let o = m.as_object_mut().unwrap();
                if let Some(Value::Array(calls)) = o.get_mut("tool_calls") {
                    for c in calls.iter_mut() {
                        let c = c.as_object_mut().unwrap();
                        let args = c.remove("args").unwrap_or_else(|| json!({}));
                        c.insert("arguments".into(), args);
                    }
                }
                o.insert("type".into(), "message".into());
                line(&m);
            }
        }
        Format::OpenAiLines => {
            for k in 0..n {
                let msgs: Vec<Value> = copy(&lines, k).iter().map(openai).collect();
                line(&json!({"id": format!("c{k}"), "messages": msgs}));
            }
        }
        Format::ClaudeCode => {
            for (i, m) in anthropic(&all).into_iter().enumerate() {
                let mut msg = m.clone();
                if m["role"] == "assistant" {
                    msg["id"] = format!("msg{i}").into();
                    msg["model"] = "claude".into();
                }
                line(
                    &json!({"type": m["role"], "uuid": format!("u{i}"), "sessionId": "s",
                    "message": msg}),
                );
            }
        }
        Format::OpenAiDoc => {
            let msgs: Vec<Value> = all.iter().map(openai).collect();
            out = serde_json::to_string_pretty(&json!({"model": "gpt-4o", "messages": msgs}))
                .unwrap();
        }
        Format::MiniSwe => {
            let msgs: Vec<Value> = all.iter().map(mini_swe).collect();
            let doc = json!({"trajectory_format": "mini-swe-agent-1", "instance_id": "big",
                "info": {}, "messages": msgs});
            out = serde_json::to_string_pretty(&doc).unwrap();
        }
        Format::Tau => {
            let runs: Vec<Value> = (0..n)
                .map(|k| {
                    let traj: Vec<Value> = copy(&lines, k).iter().map(openai).collect();
                    json!({"task_id": k, "trial": 0, "reward": 1.0, "info": {}, "traj": traj})
                })
                .collect();
            out = serde_json::to_string_pretty(&runs).unwrap();
        }
        Format::SweAgent => {
            let msgs: Vec<Value> = all.iter().map(openai).collect();
            let doc = json!({"history": msgs, "trajectory": [], "info": {}});
            out = serde_json::to_string_pretty(&doc).unwrap();
        }
        Format::Atif => {
            let doc = json!({"schema_version": "ATIF-v1.2", "session_id": "s",
                "agent": {"name": "a", "model_name": "m"}, "steps": atif(&all)});
            out = serde_json::to_string_pretty(&doc).unwrap();
        }
        Format::AnthropicDoc => {
            let doc = json!({"model": "claude", "system": "be brief", "messages": anthropic(&all)});
            out = serde_json::to_string_pretty(&doc).unwrap();
        }
    }
    let path = dir.join(format!("big{n}-{format:?}.json"));
    std::fs::write(&path, &out).unwrap();
    (path, out.len() as u64)
}

/// Peak live heap bytes above the starting point while replaying `path`, and the number of
/// model calls replayed (so a replay that silently did nothing cannot pass).
fn replay_peak(path: &Path) -> (u64, usize) {
    let cli = Cli::try_parse_from([
        "ctxbench",
        "replay",
        path.to_str().unwrap(),
        "--window",
        "200000",
    ])
    .unwrap();
    let Command::Replay(args) = cli.command else {
        panic!("expected the replay command")
    };
    let (replays, peak) = counting_alloc::peak_of(|| replay::replay_file(&args).unwrap());
    let calls = replays.iter().map(|r| r.calls.len()).sum();
    drop(replays);
    (peak as u64, calls)
}

#[test]
fn replay_holds_about_one_copy_of_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    use Format::*;
    for format in [
        Fixture,
        Canonical,
        OpenAiDoc,
        OpenAiLines,
        AnthropicDoc,
        ClaudeCode,
        MiniSwe,
        Tau,
        SweAgent,
        Atif,
    ] {
        let (small, small_len) = big_trace(dir.path(), 2, format);
        let (large, large_len) = big_trace(dir.path(), 8, format);
        let (small_peak, small_calls) = replay_peak(&small);
        let (large_peak, large_calls) = replay_peak(&large);
        assert!(small_calls > 0 && large_calls > 3 * small_calls);
        let slope = (large_peak as f64 - small_peak as f64) / (large_len - small_len) as f64;
        let kind = format!("{format:?}");
        eprintln!(
            "{kind}: {small_len} B file -> {small_peak} B peak, {large_len} B -> {large_peak} B; slope {slope:.2}"
        );
        assert!(
            slope < 1.5,
            "{kind}: peak heap grows {slope:.2} bytes per byte of trace file (file held beside the parsed trace?)"
        );
        assert!(
            slope > 0.5,
            "{kind}: slope {slope:.2}: the trace model is ~0.9 of the file, so the measurement is off"
        );
    }
}
