//! Real files of the formats people record their agents with, imported by auto-detection: every
//! tool call their own format holds is kept, and (nearly) all are matched with a result. The
//! expected figures are computed here from the source JSON, independently of the importers.

use ctxbench::trace::import::{import_file, import_paths, pairing_problems};
use ctxbench::trace::{Role, SourceFormat, Trace};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn ds(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets")
        .join(rel)
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn count(t: &Trace, role: Role) -> usize {
    t.messages.iter().filter(|m| m.role == role).count()
}

fn calls(t: &Trace) -> usize {
    t.messages.iter().map(|m| m.tool_calls.len()).sum()
}

/// Share of tool calls answered by a result, in percent.
fn matched(t: &Trace) -> f64 {
    let n = calls(t);
    if n == 0 {
        return 100.0;
    }
    let open = pairing_problems(t)
        .iter()
        .filter(|p| p.contains("has no result"))
        .count();
    100.0 * (n - open) as f64 / n as f64
}

#[test]
fn claude_code_project_folder_imports_every_session_and_subagent() {
    let got = import_paths(&[ds("claude-code-interactive")], None, false).unwrap();
    assert!(got.ignored.is_empty(), "{:?}", got.ignored);
    let ids: Vec<&str> = got.traces.iter().map(|t| t.meta.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "session-624a4a58",
            "e9fb405b-169f-40eb-9396-7e75076f045d__agent-a485154"
        ]
    );
    let path = ds("claude-code-interactive/session-624a4a58.jsonl");
    let recs = jsonl(&path);
    let src_calls = recs
        .iter()
        .filter(|r| r["type"] == "assistant")
        .filter_map(|r| r["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .count();
    let t = &got.traces[0];
    assert_eq!(t.meta.source_format, SourceFormat::ClaudeCode);
    assert_eq!(t.messages.len(), 124);
    assert_eq!((calls(t), count(t, Role::Tool)), (src_calls, 48));
    assert_eq!(matched(t), 100.0);
    // The compaction: a marker before the summary that follows it, with its pre-compaction size.
    let boundary = recs
        .iter()
        .find(|r| r["subtype"] == "compact_boundary")
        .unwrap();
    assert_eq!(t.markers.len(), 1);
    let m = &t.markers[0];
    assert_eq!(m.kind, "compaction");
    assert_eq!(
        m.tokens_before,
        boundary["compactMetadata"]["preTokens"].as_u64()
    );
    assert_eq!(
        t.messages[m.index].kind.as_deref(),
        Some("compaction_summary")
    );
    // The goal is the person's first request, not a slash command.
    assert!(!t.meta.goal.as_deref().unwrap().contains("<command-name>"));

    let sub = &got.traces[1];
    let src = jsonl(&ds("claude-code-interactive/subagents/agent-a485154.jsonl"));
    let sub_calls = src
        .iter()
        .filter_map(|r| r["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .count();
    assert_eq!(sub_calls, 20);
    assert_eq!(calls(sub), sub_calls);
    assert_eq!(matched(sub), 100.0);
    assert_eq!(
        sub.meta.task_id.as_deref(),
        src[0]["sessionId"].as_str(),
        "linked to the parent session"
    );
}

#[test]
fn a_forced_format_that_reads_nothing_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("only-snapshots.jsonl");
    std::fs::write(
        &p,
        "{\"type\":\"queue-operation\",\"sessionId\":\"s\"}\n\
         {\"type\":\"summary\",\"summary\":\"x\",\"leafUuid\":\"u\"}\n",
    )
    .unwrap();
    let e = import_file(&p, None).unwrap_err();
    assert!(e.message.starts_with("no message"), "{e}");
    let e = import_file(&p, Some(SourceFormat::ClaudeCode)).unwrap_err();
    assert!(e.message.contains("no message"), "{e}");
    // Walked, it is listed, not imported.
    let got = import_paths(&[dir.path()], None, false).unwrap();
    assert!(got.traces.is_empty());
    assert_eq!(got.ignored.len(), 1);
}
