//! Bundled traces and engine configurations for the tests that drive the engine and the evals
//! directly (no suite, no run directory).
#![allow(dead_code)] // each test binary uses a different part of this module

use ctxbench::engine::{EngineConfig, ResolvedConfig};
use ctxbench::trace::import::import_file;
use ctxbench::trace::Trace;
use std::path::{Path, PathBuf};

/// The one trace of a file (`datasets/mini-swe-agent/x.traj.json`, relative to the repository
/// root or absolute); fails when the file holds another number of traces.
pub fn import_one(path: impl AsRef<Path>) -> Trace {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let mut traces = import_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(traces.len(), 1, "{}", path.display());
    traces.remove(0)
}

/// An engine table (`preset = "deepagents"\nwindow = 20000`), typed and resolved.
pub fn engine_config(toml: &str) -> ResolvedConfig {
    EngineConfig::from_toml_str(toml, "test.toml")
        .unwrap_or_else(|e| panic!("{e}"))
        .resolve(None)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The four bundled trajectories the eval-validity tests compare compression on (each compacts
/// at least twice under an early trigger at a 20k window), as paths from the repository root.
pub const EVAL_TRACES: [&str; 4] = [
    "datasets/mini-swe-agent/django__django-11138.traj.json",
    "datasets/mini-swe-agent/sympy__sympy-19495.traj.json",
    "datasets/mini-swe-agent/pytest-dev__pytest-7571.traj.json",
    "datasets/mini-swe-agent/astropy__astropy-12907.traj.json",
];

/// The fact planted in [`agent_trace`]'s first tool result.
pub const NEEDLE: &str = "NEEDLE-7f3a-the-port-is-8431";

/// A synthetic coding session: system prompt, goal, then `steps` × (an assistant calling
/// `bash` + a `chars`-long result), then a closing answer. Step 0's result holds [`NEEDLE`].
pub fn agent_trace(steps: usize, chars: usize) -> Trace {
    agent_trace_done_at(steps, chars, None)
}

/// [`agent_trace`] whose step `done_at` calls `mark_task_done` instead of `bash` (a task
/// boundary for checkpointing presets).
pub fn agent_trace_done_at(steps: usize, chars: usize, done_at: Option<usize>) -> Trace {
    use ctxbench::trace::{Message, SourceFormat, ToolCall, TraceMeta};
    let mut t = Trace::new(TraceMeta::new("agent", SourceFormat::Canonical));
    t.messages.push(Message::system("You are a coding agent."));
    t.messages
        .push(Message::user("Fix the failing parser test in src/parse.rs"));
    for k in 0..steps {
        let id = format!("c{k}");
        let tool = if Some(k) == done_at {
            "mark_task_done"
        } else {
            "bash"
        };
        t.messages.push(Message::assistant(
            format!("Step {k}: looking."),
            vec![ToolCall {
                id: id.clone(),
                name: tool.into(),
                arguments: serde_json::json!({"command": format!("cat part{k}")}),
            }],
        ));
        let mut body = format!("output {k} ");
        if k == 0 {
            body.push_str(NEEDLE);
        }
        while body.len() < chars {
            body.push_str("lorem ipsum dolor sit amet ");
        }
        body.truncate(chars);
        t.messages.push(Message::tool(id, tool, body));
    }
    t.messages.push(Message::assistant("All done.", vec![]));
    t
}

/// A golden fixture directory under `testdata/deepagents-golden/` (`synthetic-s7`).
pub fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/deepagents-golden")
        .join(name)
}
