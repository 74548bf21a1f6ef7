//! Real files of the formats people record their agents with, imported by auto-detection: every
//! tool call their own format holds is kept, and (nearly) all are matched with a result. The
//! expected figures are computed here from the source JSON, independently of the importers.

use ctxbench::trace::import::{import_file, import_paths, pairing_problems};
use ctxbench::trace::{Role, SourceFormat, ThinkingBlock, Trace};
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
    // 123 messages of user/assistant records and the message the user typed while the agent
    // worked, recorded only as a `queue-operation` (kind `queued`).
    assert_eq!(t.messages.len(), 124 + 1);
    assert_eq!(
        t.messages
            .iter()
            .filter(|m| m.kind.as_deref() == Some("queued"))
            .count(),
        1
    );
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
    // Every signed thinking block is kept whole, in order, so a replay can send it back.
    let src_signed: Vec<(String, String)> = recs
        .iter()
        .filter(|r| r["type"] == "assistant")
        .filter_map(|r| r["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "thinking" && b["signature"].is_string())
        .map(|b| {
            let s = |k: &str| b[k].as_str().unwrap().to_string();
            (s("thinking"), s("signature"))
        })
        .collect();
    let kept: Vec<(String, String)> = t
        .messages
        .iter()
        .flat_map(|m| &m.thinking_blocks)
        .map(|b| match b {
            ThinkingBlock::Thinking {
                thinking,
                signature,
            } => (thinking.clone(), signature.clone()),
            other => panic!("no redacted block in the source: {other:?}"),
        })
        .collect();
    assert_eq!(src_signed.len(), 55);
    assert_eq!(kept, src_signed);
    // Only assistant messages carry them.
    assert!(t
        .messages
        .iter()
        .all(|m| m.thinking_blocks.is_empty() || m.role == Role::Assistant));
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

/// (file, format, tool calls counted in the source by the test itself).
fn one(rel: &str, format: SourceFormat) -> Trace {
    let mut ts = import_file(&ds(rel), None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ts.len(), 1, "{rel}");
    let t = ts.remove(0);
    assert_eq!(t.meta.source_format, format, "{rel}: detected format");
    assert!(!t.messages.is_empty());
    t
}

#[test]
fn codex_rollouts_keep_every_call_usage_and_compaction() {
    for entry in std::fs::read_dir(ds("codex")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let recs = jsonl(&path);
        let payload_types = |ty: &str| {
            recs.iter()
                .filter(|r| r["type"] == "response_item" && r["payload"]["type"] == ty)
                .count()
        };
        let src_calls = payload_types("function_call")
            + payload_types("custom_tool_call")
            + payload_types("web_search_call");
        // token_count events with usage, a repeated total counted once
        let mut totals = Vec::new();
        for r in &recs {
            let info = &r["payload"]["info"];
            if r["payload"]["type"] == "token_count"
                && info.is_object()
                && totals.last() != Some(&info["total_token_usage"])
            {
                totals.push(info["total_token_usage"].clone());
            }
        }
        let mut ts = import_file(&path, None).unwrap();
        let t = ts.remove(0);
        let name = path.display().to_string();
        assert_eq!(t.meta.source_format, SourceFormat::Codex, "{name}");
        assert_eq!(calls(&t), src_calls, "{name}");
        assert!(matched(&t) >= 90.0, "{name}: {}", matched(&t));
        let with_usage = t.messages.iter().filter(|m| m.usage.is_some()).count();
        assert_eq!(with_usage, totals.len(), "{name}");
        let compactions = recs.iter().filter(|r| r["type"] == "compacted").count();
        assert_eq!(t.markers.len(), compactions, "{name}");
        // reasoning stays out of the text
        assert!(t
            .messages
            .iter()
            .all(|m| m.reasoning.is_none() || m.role == Role::Assistant));
    }
}

#[test]
fn gemini_cli_session_calls_results_and_tokens() {
    let t = one(
        "gemini-cli/session-2025-12-01T21-45-5b959dae.json",
        SourceFormat::GeminiCli,
    );
    let src: Value = serde_json::from_slice(
        &std::fs::read(ds("gemini-cli/session-2025-12-01T21-45-5b959dae.json")).unwrap(),
    )
    .unwrap();
    let ms = src["messages"].as_array().unwrap();
    let src_calls: usize = ms
        .iter()
        .filter_map(|m| m["toolCalls"].as_array())
        .map(|c| c.len())
        .sum();
    assert_eq!(calls(&t), src_calls);
    assert_eq!(matched(&t), 100.0);
    let tokens = ms.iter().filter(|m| m["tokens"].is_object()).count();
    assert_eq!(
        t.messages.iter().filter(|m| m.usage.is_some()).count(),
        tokens
    );
    let input: u64 = ms
        .iter()
        .filter_map(|m| m["tokens"]["input"].as_u64())
        .sum();
    assert_eq!(t.recorded_usage().input, input);
    assert!(t.messages.iter().any(|m| m.reasoning.is_some()));
}

/// A real Gemini CLI session in the JSON Lines shape (0.39 and later), imported by detection:
/// every gemini message is written twice under its id (with its tokens, then again with its
/// tool calls), and each is one message, with its calls, their results and its tokens; the
/// figures are computed here from the file's lines (the last record of each id).
#[test]
fn gemini_cli_json_lines_session_upserts_calls_results_and_tokens() {
    let rel = "gemini-cli/session-2026-04-23T12-52-0ab84937.jsonl";
    let t = one(rel, SourceFormat::GeminiCli);
    let recs = jsonl(&ds(rel));
    assert_eq!(recs.len(), 28);
    // the messages as the CLI reads them back: the last record of each id, in first-seen order
    let mut ids: Vec<&str> = Vec::new();
    let mut last: std::collections::HashMap<&str, &Value> = Default::default();
    for r in recs.iter().filter(|r| r["id"].is_string()) {
        let id = r["id"].as_str().unwrap();
        if last.insert(id, r).is_none() {
            ids.push(id);
        }
    }
    let ms: Vec<&Value> = ids.iter().map(|id| last[id]).collect();
    let of = |ty: &str| ms.iter().filter(|m| m["type"] == ty).count();
    let src_calls: Vec<&Value> = ms
        .iter()
        .filter_map(|m| m["toolCalls"].as_array())
        .flatten()
        .collect();
    assert_eq!((of("user"), of("gemini"), src_calls.len()), (3, 6, 12));
    assert_eq!(count(&t, Role::User), 3);
    assert_eq!(count(&t, Role::Assistant), 6);
    assert_eq!(count(&t, Role::Tool), 12);
    assert_eq!(t.messages.len(), 21);
    assert_eq!(calls(&t), 12);
    assert_eq!(matched(&t), 100.0);
    assert_eq!(
        t.meta.task_id.as_deref(),
        Some("0ab84937-9fe7-4284-986a-33c832af0b6a")
    );
    assert_eq!(t.meta.model.as_deref(), Some("gemini-3-flash-preview"));
    assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    // a call and its result
    let write = t
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .find(|c| c.name == "write_file")
        .unwrap();
    assert_eq!(write.id, "4o2js0r9");
    assert_eq!(write.arguments["file_path"], "GEMINI.md");
    let result = t
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("yf8jqzhz"))
        .unwrap();
    assert_eq!(result.name.as_deref(), Some("replace"));
    assert!(result.content.starts_with(
        "Successfully modified file: /home/wei/repo/discordbot/GEMINI.md (1 replacements). Here is the updated code:\n"
    ));
    // the tokens: once a message, output with the thought tokens
    let used: Vec<_> = t.messages.iter().filter_map(|m| m.usage).collect();
    assert_eq!(used.len(), of("gemini"));
    assert_eq!(
        (used[0].input, used[0].output, used[0].cache_read),
        (13906, 185 + 306, 0)
    );
    let sum = |k: &str| -> u64 { ms.iter().filter_map(|m| m["tokens"][k].as_u64()).sum() };
    let u = t.recorded_usage();
    assert_eq!((u.input, u.cache_read), (sum("input"), sum("cached")));
    assert_eq!(u.output, sum("output") + sum("thoughts"));
    assert_eq!(u.input, 13906 + 29082 + 38324 + 40914 + 40122 + 40238);
    // what the model read for the user message whose display was a function response
    assert!(t
        .messages
        .iter()
        .any(|m| m.role == Role::User && m.content == "System: Please continue."));
    assert!(t.messages.iter().any(|m| m.reasoning.is_some()));
}

/// The real JSON Lines session as the CLI leaves it when stopped while writing a record: its
/// last line cut short; or, the session resumed, that line joined to the record the CLI appended
/// next, in the middle. Each imports by detection with the same messages as the whole file,
/// the bad line skipped (as Gemini CLI's reader skips it) and warned of with its number; the
/// import used to fail.
#[test]
fn gemini_cli_json_lines_session_cut_short_skips_the_torn_line() {
    let rel = "gemini-cli/session-2026-04-23T12-52-0ab84937.jsonl";
    let whole = one(rel, SourceFormat::GeminiCli);
    let text = std::fs::read_to_string(ds(rel)).unwrap();
    let record = text.lines().nth(3).unwrap();
    let cut = (0..=record.len() / 2)
        .rev()
        .find(|&i| record.is_char_boundary(i))
        .unwrap();
    let torn = &record[..cut];
    let dir = tempfile::tempdir().unwrap();
    for (name, tail, warning) in [
        ("last.jsonl", torn.to_string(), "line 29, the last: not JSON ("),
        (
            "middle.jsonl",
            format!("{torn}{{\"$set\":{{\"lastUpdated\":\"t\"}}}}\n{{\"$set\":{{\"lastUpdated\":\"u\"}}}}\n"),
            "line 29: not JSON (",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("{text}{tail}")).unwrap();
        let mut ts = import_file(&path, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let t = ts.remove(0);
        assert_eq!(t.meta.source_format, SourceFormat::GeminiCli, "{name}");
        assert_eq!(t.messages, whole.messages, "{name}");
        assert_eq!(t.meta.warnings.len(), 1, "{name}: {:?}", t.meta.warnings);
        assert!(t.meta.warnings[0].starts_with(warning), "{name}: {}", t.meta.warnings[0]);
    }
}

#[test]
fn inspect_json_log_one_trace_per_sample_with_usage() {
    let rel = "inspect/2025-05-12T20-27-36-04-00_browser.json";
    let t = one(rel, SourceFormat::Inspect);
    let src: Value = serde_json::from_slice(&std::fs::read(ds(rel)).unwrap()).unwrap();
    let s = &src["samples"][0];
    assert_eq!(t.meta.id, "2025-05-12T20-27-36-04-00_browser__1_epoch_1");
    let src_calls: usize = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .map(|c| c.len())
        .sum();
    assert_eq!(calls(&t), src_calls);
    assert_eq!(matched(&t), 100.0);
    let model_in: u64 = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "model")
        .filter_map(|e| e["output"]["usage"]["input_tokens"].as_u64())
        .sum();
    assert_eq!(t.recorded_usage().input, model_in);
    assert_eq!(
        t.recorded_usage().input,
        s["model_usage"]["openai/gpt-4o-mini"]["input_tokens"]
            .as_u64()
            .unwrap()
    );
}

#[test]
fn langchain_messages_to_dict_with_reasoning_and_usage() {
    let t = one(
        "langchain/react-agent.messages_to_dict.json",
        SourceFormat::Langchain,
    );
    assert_eq!(calls(&t), 2);
    assert_eq!(matched(&t), 100.0);
    assert_eq!(count(&t, Role::Assistant), 2);
    assert!(t.messages[1]
        .reasoning
        .as_deref()
        .unwrap()
        .contains("Getting weather"));
    assert!(t.messages[1].content.is_empty(), "reasoning is not text");
    assert_eq!(t.messages[1].usage.unwrap().input, 346);
}

#[test]
fn openai_responses_items_array_and_jsonl_are_detected_not_taken_for_chat() {
    for rel in [
        "openai-responses/codex-019e1625.items.json",
        "openai-responses/codex-019c8a4d.items.jsonl",
    ] {
        let t = one(rel, SourceFormat::OpenaiResponses);
        let text = std::fs::read_to_string(ds(rel)).unwrap();
        let items: Vec<Value> = if rel.ends_with(".json") {
            serde_json::from_str(&text).unwrap()
        } else {
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        let src_calls = items
            .iter()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("function_call" | "custom_tool_call" | "web_search_call")
                )
            })
            .count();
        assert_eq!(calls(&t), src_calls, "{rel}");
        assert!(matched(&t) >= 90.0, "{rel}: {}", matched(&t));
        // the same items inside a rollout give the same messages (minus Codex's own fields)
        assert!(count(&t, Role::Assistant) > 0);
    }
    // forced as OpenAI chat, Responses items are an error, not an empty or half-read trace
    let e = import_file(
        &ds("openai-responses/codex-019e1625.items.json"),
        Some(SourceFormat::Openai),
    )
    .unwrap_err();
    assert!(e.location.starts_with("$["), "{e}");
}

#[test]
fn gemini_content_history_pairs_function_responses() {
    let rel = "gemini/session-5b959dae.contents.json";
    let t = one(rel, SourceFormat::Gemini);
    let src: Vec<Value> = serde_json::from_slice(&std::fs::read(ds(rel)).unwrap()).unwrap();
    let parts = |k: &str| {
        src.iter()
            .flat_map(|c| c["parts"].as_array().unwrap())
            .filter(|p| p.get(k).is_some())
            .count()
    };
    assert_eq!(calls(&t), parts("functionCall"));
    assert_eq!(count(&t, Role::Tool), parts("functionResponse"));
    assert_eq!(matched(&t), 100.0);
    assert!(t.messages.iter().any(|m| m.reasoning.is_some()));
    // and the Gemini CLI session it was rebuilt from gives the same calls and results
    let cli = one(
        "gemini-cli/session-2025-12-01T21-45-5b959dae.json",
        SourceFormat::GeminiCli,
    );
    let strip = |t: &Trace| -> Vec<(Role, String, usize)> {
        t.messages
            .iter()
            .map(|m| (m.role, m.content.clone(), m.tool_calls.len()))
            .collect()
    };
    assert_eq!(strip(&t), strip(&cli));
}

#[test]
fn inspect_eval_archives_deflate_and_zstd_read_as_their_json_form() {
    // Written by inspect-ai (zstd members) from the .json log: the same messages and usage.
    let json = one(
        "inspect/2025-05-12T20-27-36-04-00_browser.json",
        SourceFormat::Inspect,
    );
    let eval = one(
        "inspect/2025-05-12T20-27-36-04-00_browser.converted.eval",
        SourceFormat::Inspect,
    );
    assert_eq!(eval.messages, json.messages);
    assert_eq!(
        eval.meta.id,
        "2025-05-12T20-27-36-04-00_browser.converted__1_epoch_1"
    );
    // A real .eval from Inspect's own tests (deflate members): one trace per sample, in order.
    let ts = import_file(
        &ds("inspect/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"),
        None,
    )
    .unwrap();
    assert_eq!(ts.len(), 10);
    assert!(ts[0].meta.id.ends_with("__1_epoch_1"), "{}", ts[0].meta.id);
    for t in &ts {
        assert_eq!(t.meta.source_format, SourceFormat::Inspect);
        assert_eq!(count(t, Role::Assistant), 1);
        assert!(t.messages[2].usage.is_some(), "{}", t.meta.id);
    }
    // Forced as another format, a zip is refused with what it is.
    let e = import_file(
        &ds("inspect/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"),
        Some(SourceFormat::Openai),
    )
    .unwrap_err();
    assert!(e.message.contains("zip archive"), "{e}");
}

#[test]
fn the_four_langchain_shapes_give_the_same_trace() {
    let base = one(
        "langchain/react-agent.messages_to_dict.json",
        SourceFormat::Langchain,
    );
    for rel in [
        "langchain/react-agent.dumpd.json",
        "langchain/react-agent.langgraph-state.json",
        "langchain/react-agent.model_dump.json",
    ] {
        let t = one(rel, SourceFormat::Langchain);
        assert_eq!(t.messages, base.messages, "{rel}");
    }
}

/// A forced format that fails on a real file of another format says what the file looks like
/// (it named only the JSON path: `$.history: expected an array, found nothing`).
#[test]
fn cli_forced_format_that_fails_says_what_the_file_looks_like() {
    let out = tempfile::tempdir().unwrap();
    for (file, from, looks) in [
        (
            "mini-swe-agent/astropy__astropy-12907.traj.json",
            "swe-agent",
            "mini-swe",
        ),
        (
            "claude-code/coverage-test-fix.jsonl",
            "openai",
            "claude-code",
        ),
    ] {
        assert_cmd::Command::cargo_bin("ctxbench")
            .unwrap()
            .args(["import", "--from", from, "-o"])
            .arg(out.path())
            .arg(ds(file))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(format!(
                "(--from {from}: the input looks like {looks}; drop --from to detect it)"
            )));
    }
}

/// A wrong `--from` on a canonical file (what `import` writes) names what detection reads it
/// as, canonical: the hint ran the importers' rules alone and said `openai-responses`, which
/// dropping --from would not have chosen.
#[test]
fn cli_forced_format_on_a_canonical_file_says_it_is_canonical() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = (tmp.path().join("a"), tmp.path().join("b"));
    let run = |args: &[&str], out: &Path, input: &Path| {
        assert_cmd::Command::cargo_bin("ctxbench")
            .unwrap()
            .arg("import")
            .args(args)
            .arg("-o")
            .arg(out)
            .arg(input)
            .assert()
    };
    run(
        &[],
        &first,
        &ds("mini-swe-agent/psf__requests-1142.traj.json"),
    )
    .success();
    let canonical = first.join("psf__requests-1142.jsonl");
    for from in ["openai", "anthropic", "swe-agent"] {
        run(&["--from", from], &second, &canonical)
            .code(2)
            .stderr(predicates::str::contains(format!(
                "(--from {from}: the input looks like canonical; drop --from to detect it)"
            )));
    }
    // Without --from it is read as canonical, as the hint says.
    run(&[], &second, &canonical).success();
    // The same from bytes in memory (`import_bytes`).
    let bytes = std::fs::read(&canonical).unwrap();
    let Err(e) =
        ctxbench::trace::import::import_bytes(&bytes, "t", Some(SourceFormat::Openai), None)
    else {
        panic!("--from openai fails on a canonical file");
    };
    assert!(
        e.message
            .contains("(--from openai: the input looks like canonical; drop --from"),
        "{}",
        e.message
    );
}

#[test]
fn cli_forced_format_that_finds_nothing_exits_2_and_says_what_the_file_is() {
    let out = tempfile::tempdir().unwrap();
    let rollout = ds("codex/rollout-2026-05-11T11-26-55-019e1625.jsonl");
    assert_cmd::Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["import", "--from", "claude-code", "-o"])
        .arg(out.path())
        .arg(&rollout)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--from claude-code read a trace with no message",
        ))
        .stderr(predicates::str::contains("looks like codex"));
    // A folder whose files all yield nothing: listed, exit 2.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("empty-session.jsonl"),
        "{\"type\":\"queue-operation\",\"sessionId\":\"s\"}\n{\"type\":\"summary\",\"summary\":\"x\",\"leafUuid\":\"u\"}\n",
    )
    .unwrap();
    assert_cmd::Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["import", "-o"])
        .arg(out.path())
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("empty-session.jsonl: no message"));
}

/// A `.jsonl` of nothing but `summary` records (Claude Code writes such files beside the
/// sessions: titles of earlier conversations) is never a silent empty trace: imported alone it
/// is exit 2 naming what it is; in a project folder it is skipped with that note while every
/// real session beside it imports.
#[test]
fn claude_code_summary_only_file_is_named_alone_and_skipped_in_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("-home-me-proj");
    std::fs::create_dir(&project).unwrap();
    std::fs::copy(
        ds("claude-code-interactive/session-624a4a58.jsonl"),
        project.join("session-624a4a58.jsonl"),
    )
    .unwrap();
    let summaries = project.join("0b9f3c1e-aaaa-4bbb-8ccc-000000000001.jsonl");
    std::fs::write(
        &summaries,
        "{\"type\":\"summary\",\"summary\":\"Fix the parser\",\"leafUuid\":\"8f0e4f7a-1111-4222-8333-444455556666\"}\n\
         {\"type\":\"summary\",\"summary\":\"Add tests\",\"leafUuid\":\"9a0e4f7a-1111-4222-8333-444455556666\"}\n",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    assert_cmd::Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["import", "-o"])
        .arg(out.path())
        .arg(&summaries)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "a Claude Code summary-only file: 2 `summary` record(s)",
        ));
    let got = import_paths(&[project.as_path()], None, false).unwrap();
    assert_eq!(got.traces.len(), 1);
    assert_eq!(got.traces[0].meta.id, "session-624a4a58");
    assert_eq!(got.ignored.len(), 1);
    assert!(
        format!("{:?}", got.ignored[0]).contains("summary-only"),
        "{:?}",
        got.ignored
    );
    let cli = assert_cmd::Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["import", "-o"])
        .arg(out.path())
        .arg(&project)
        .assert()
        .code(0);
    let stdout = String::from_utf8_lossy(&cli.get_output().stdout).to_string();
    let stderr = String::from_utf8_lossy(&cli.get_output().stderr).to_string();
    assert!(
        format!("{stdout}{stderr}").contains("summary-only"),
        "{stdout}{stderr}"
    );
}

/// The interactive session's calibration gap is not an import loss: the trace holds every
/// character of the transcript's text, tool results, call arguments and thinking (the figures
/// docs/tokens.md quotes).
#[test]
fn claude_code_interactive_import_keeps_every_transcript_character() {
    let path = ds("claude-code-interactive/session-624a4a58.jsonl");
    let (mut text, mut args, mut thinking) = (0usize, 0usize, 0usize);
    let mut queued: Vec<usize> = Vec::new();
    for r in jsonl(&path) {
        // A message typed while the agent worked, given to the running turn (`remove`): its
        // text is recorded only here.
        match (r["type"].as_str(), r["operation"].as_str()) {
            (Some("queue-operation"), Some("enqueue")) => {
                queued.push(r["content"].as_str().unwrap().chars().count())
            }
            (Some("queue-operation"), Some("remove")) => text += queued.remove(0),
            (Some("queue-operation"), Some("dequeue")) => {
                queued.remove(0);
            }
            _ => {}
        }
        if !matches!(r["type"].as_str(), Some("user" | "assistant")) {
            continue;
        }
        let c = &r["message"]["content"];
        if let Some(s) = c.as_str() {
            text += s.chars().count();
            continue;
        }
        for b in c.as_array().unwrap() {
            match b["type"].as_str().unwrap() {
                "text" => text += b["text"].as_str().unwrap().chars().count(),
                "tool_result" => match &b["content"] {
                    Value::String(s) => text += s.chars().count(),
                    Value::Array(parts) => {
                        for p in parts {
                            text += p["text"].as_str().unwrap_or("").chars().count();
                        }
                    }
                    _ => {}
                },
                "tool_use" => args += serde_json::to_string(&b["input"]).unwrap().chars().count(),
                "thinking" => thinking += b["thinking"].as_str().unwrap().chars().count(),
                other => panic!("unexpected block {other}"),
            }
        }
    }
    let t = one(
        "claude-code-interactive/session-624a4a58.jsonl",
        SourceFormat::ClaudeCode,
    );
    let content: usize = t.messages.iter().map(|m| m.content.chars().count()).sum();
    let call_args: usize = t
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| serde_json::to_string(&c.arguments).unwrap().chars().count())
        .sum();
    let reasoning: usize = t
        .messages
        .iter()
        .map(|m| m.reasoning.as_deref().map_or(0, |r| r.chars().count()))
        .sum();
    assert_eq!((content, call_args, reasoning), (text, args, thinking));
    assert!(text > 300_000 && args > 100_000 && thinking > 40_000);
}

/// Every real file of the formats people record their agents with (each folder under
/// `datasets/` with its SOURCE.txt) imports by auto-detection as its folder's format, into
/// traces with messages, with at least 90% of the tool calls matched with a result; and the
/// formats whose files all hold tool calls keep some.
#[test]
fn every_real_file_imports_by_detection_with_its_calls_matched() {
    let dirs = [
        ("claude-code-interactive", SourceFormat::ClaudeCode, true),
        ("claude-code-attachments", SourceFormat::ClaudeCode, true),
        ("claude-code-1.0", SourceFormat::ClaudeCode, true),
        ("codex", SourceFormat::Codex, true),
        ("openai-responses", SourceFormat::OpenaiResponses, true),
        ("langchain", SourceFormat::Langchain, true),
        ("inspect", SourceFormat::Inspect, false),
        ("gemini-cli", SourceFormat::GeminiCli, true),
        ("gemini", SourceFormat::Gemini, true),
        ("mini-swe-agent-2", SourceFormat::MiniSwe, true),
        ("copilot", SourceFormat::Copilot, true),
    ];
    let mut files = 0;
    for (dir, format, all_have_calls) in dirs {
        assert!(ds(dir).join("SOURCE.txt").is_file(), "{dir}: provenance");
        let got = import_paths(&[ds(dir)], None, false).unwrap();
        assert!(got.ignored.is_empty(), "{dir}: {:?}", got.ignored);
        assert!(got.skipped.is_empty(), "{dir}");
        let mut sources = std::collections::BTreeSet::new();
        for t in &got.traces {
            let id = &t.meta.id;
            assert_eq!(t.meta.source_format, format, "{dir}/{id}: detected");
            assert!(!t.messages.is_empty(), "{dir}/{id}");
            assert!(matched(t) >= 90.0, "{dir}/{id}: {:.1}% matched", matched(t));
            if all_have_calls {
                assert!(calls(t) > 0, "{dir}/{id}: no tool call");
            }
            sources.insert(t.meta.source_path.clone().unwrap());
        }
        files += sources.len();
    }
    // 2 + 1 + 1 + 6 + 2 + 4 + 4 + 2 + 1 + 2 + 1 real files.
    assert_eq!(files, 26);
}

/// Real mini-swe-agent 2 trajectories (`trajectory_format: mini-swe-agent-1.1`, tool calling),
/// imported by auto-detection, against their own JSON: every message the model saw in order,
/// the `bash` call with its recorded id and arguments, its `tool` result paired by that id, the
/// call's usage and reasoning as recorded, the exit status as the outcome, the `exit` message
/// (never sent to the model) not a message, and no warning.
#[test]
fn mini_swe_agent_2_trajectories_keep_calls_results_usage_and_status() {
    let mut seen = 0;
    for name in ["mini-vllm-smoke.traj.json", "sqlfluff-vllm-step1.traj.json"] {
        let path = ds("mini-swe-agent-2").join(name);
        let src: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(src["trajectory_format"], "mini-swe-agent-1.1");
        assert_eq!(src["info"]["mini_version"], "2.2.8");
        let t = import_file(&path, None).unwrap().remove(0);
        assert_eq!(
            t.meta.source_format,
            SourceFormat::MiniSwe,
            "{name}: detected"
        );
        assert!(t.meta.warnings.is_empty(), "{name}: {:?}", t.meta.warnings);
        let msgs = src["messages"].as_array().unwrap();
        // Every message but the final `exit` one, in order, with its text.
        assert_eq!(msgs.last().unwrap()["role"], "exit");
        let kept = &msgs[..msgs.len() - 1];
        let roles: Vec<&str> = t.messages.iter().map(|m| m.role.as_str()).collect();
        let src_roles: Vec<&str> = kept.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, src_roles, "{name}");
        for (m, s) in t.messages.iter().zip(kept) {
            assert_eq!(m.content, s["content"].as_str().unwrap(), "{name}");
        }
        let a = &t.messages[2];
        let call = &kept[2]["tool_calls"][0];
        assert_eq!(a.tool_calls.len(), 1);
        assert_eq!(a.tool_calls[0].id, call["id"].as_str().unwrap());
        assert_eq!(a.tool_calls[0].name, "bash");
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(a.tool_calls[0].arguments, args);
        assert_eq!(
            args["command"], kept[2]["extra"]["actions"][0]["command"],
            "{name}: the call is the command mini-swe-agent ran"
        );
        let usage = a.usage.expect("usage recorded");
        let recorded = &kept[2]["extra"]["response"]["usage"];
        assert_eq!(usage.input, recorded["prompt_tokens"].as_u64().unwrap());
        assert_eq!(
            usage.output,
            recorded["completion_tokens"].as_u64().unwrap()
        );
        assert_eq!(
            a.reasoning.as_deref(),
            kept[2]["reasoning_content"].as_str()
        );
        let r = &t.messages[3];
        assert_eq!(r.tool_call_id.as_deref(), Some(a.tool_calls[0].id.as_str()));
        assert_eq!(r.name.as_deref(), Some("bash"));
        assert!(!r.is_error);
        assert!(pairing_problems(&t).is_empty(), "{name}");
        assert_eq!(
            t.meta.model.as_deref(),
            src["info"]["config"]["model"]["model_name"].as_str()
        );
        assert_eq!(
            t.meta.outcome.as_ref().and_then(|o| o.status.as_deref()),
            src["info"]["exit_status"].as_str()
        );
        assert_eq!(t.meta.goal.as_deref().map(|g| !g.is_empty()), Some(true));
        seen += 1;
    }
    assert_eq!(seen, 2);
}

/// A real Codex 0.146 `codex exec` rollout (`datasets/codex/margin-codex-exec-0.146.jsonl`),
/// imported by detection: its `world_state` record is skipped without a warning (its messages
/// are items too), the `session_id`/`id` is the task, the `custom_tool_call_output` whose
/// `output` is a list of `input_text` parts is the text of both parts, and each `token_count`
/// is the usage of its call with `cache_write_input_tokens` read.
#[test]
fn codex_0_146_exec_rollout_imports_by_detection() {
    let t = one("codex/margin-codex-exec-0.146.jsonl", SourceFormat::Codex);
    assert_eq!(
        t.meta.task_id.as_deref(),
        Some("01a01ee3-393c-7cb1-818e-268d8e2ae938")
    );
    assert_eq!(t.meta.model.as_deref(), Some("gpt-5.6-sol"));
    assert_eq!(t.meta.window, Some(258400));
    assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    let roles: Vec<Role> = t.messages.iter().map(|m| m.role).collect();
    use Role::*;
    assert_eq!(
        roles,
        [System, System, System, System, User, User, Assistant, Tool, Assistant]
    );
    assert!(t.messages[0]
        .content
        .starts_with("You are Codex, an agent based on GPT-5."));
    assert_eq!(t.messages[4].kind.as_deref(), Some("meta"));
    assert_eq!(
        t.messages[5].content,
        "Read sample.py. Name two edge cases slugify mishandles. Be brief."
    );
    let call = &t.messages[6].tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_CEDrC607Pk4hXucXu6nZPFbF", "exec")
    );
    assert!(call.arguments["input"]
        .as_str()
        .unwrap()
        .starts_with("const r = await tools.shell_command("));
    let out = &t.messages[7];
    assert_eq!(out.tool_call_id.as_deref(), Some(call.id.as_str()));
    assert!(out
        .content
        .starts_with("Script completed\nWall time 0.9 seconds\nOutput:\n\nExit code: 0"));
    assert!(out.content.contains("def slugify(s):"));
    assert!(t.messages[8]
        .content
        .starts_with("- Multiple spaces produce repeated hyphens"));
    let usage: Vec<(u64, u64, u64, u64)> = t
        .messages
        .iter()
        .filter_map(|m| m.usage)
        .map(|u| (u.input, u.output, u.cache_read, u.cache_write))
        .collect();
    assert_eq!(usage, [(16007, 80, 0, 0), (16142, 46, 15104, 0)]);
    assert!(pairing_problems(&t).is_empty());
}

/// A real Codex Desktop 0.128.0-alpha.1 rollout reduced by the project that ships it
/// (`datasets/codex/rollout-2026-05-11T13-28-45-019e1695.jsonl`): the person's three requests
/// are only in `user_message` events (the user message items Codex writes before them were
/// left out), so each event is the user message, in its place, with one warning. Before, those
/// events were skipped as repeats of items that are not there: a trace with no user message and
/// no goal, whose answers to the second and third requests had merged into the assistant
/// message before them (18 model calls for 20), and no warning.
#[test]
fn codex_user_message_events_without_their_items_are_the_user_messages() {
    let path = ds("codex/rollout-2026-05-11T13-28-45-019e1695.jsonl");
    let recs = jsonl(&path);
    let said: Vec<&str> = recs
        .iter()
        .filter(|r| r["type"] == "event_msg" && r["payload"]["type"] == "user_message")
        .map(|r| r["payload"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(said.len(), 3);
    let t = one(
        "codex/rollout-2026-05-11T13-28-45-019e1695.jsonl",
        SourceFormat::Codex,
    );
    let users: Vec<&str> = t
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(users, said);
    // Each in its place: the first right after the system message, each later one after the
    // assistant's answer to the one before.
    assert_eq!(t.messages[0].role, Role::System);
    assert_eq!(t.messages[1].content, said[0]);
    let at = |text: &str| t.messages.iter().position(|m| m.content == text).unwrap();
    assert_eq!(t.messages[at(said[1]) - 1].role, Role::Assistant);
    assert_eq!(t.messages[at(said[2]) - 1].role, Role::Assistant);
    assert!(t
        .meta
        .goal
        .as_deref()
        .is_some_and(|g| g.contains("analyze trascript and summarzie action items")));
    assert_eq!(
        t.meta.warnings,
        [
            "line 2: 3 `user_message` event(s) follow no user message item (Codex records each \
          message of the person as both, the item first: this rollout was trimmed or written by \
          another tool): the event's text is imported as the user message"
        ]
    );
    assert_eq!(calls(&t), 38);
    // The answers of the later turns are model calls of their own: without the user message
    // between them they had merged into the previous turn's last answer (18 messages).
    assert_eq!(count(&t, Role::Assistant), 20);
    assert!(pairing_problems(&t).is_empty());
}

/// A real Claude Code 2.1.233 session (`datasets/claude-code/margin-session-basic.jsonl`),
/// imported by detection: its `last-prompt` records are skipped, the `tool_use` with a `caller`
/// is a call paired with its result, and the thinking recorded as an empty text beside its
/// signature is kept whole in `thinking_blocks` and gives no reasoning text (it gave an empty
/// one).
#[test]
fn claude_code_2_1_233_session_imports_by_detection() {
    let t = one(
        "claude-code/margin-session-basic.jsonl",
        SourceFormat::ClaudeCode,
    );
    assert_eq!(
        t.meta.task_id.as_deref(),
        Some("9c42ba52-3bf1-449f-a040-8ee33284a1c8")
    );
    assert_eq!(t.meta.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    let roles: Vec<Role> = t.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    let a = &t.messages[1];
    assert_eq!(a.content, "I'll run that bash command for you.");
    assert_eq!(a.tool_calls[0].name, "Bash");
    assert_eq!(a.tool_calls[0].arguments["command"], "echo hello");
    assert_eq!(t.messages[2].content, "hello");
    assert_eq!(
        t.messages[2].tool_call_id.as_deref(),
        Some("toolu_01CAFZGHQyrx8WTjhhDvCQMm")
    );
    for m in [&t.messages[1], &t.messages[3]] {
        assert_eq!(m.reasoning, None, "{:?}", m.reasoning);
        match &m.thinking_blocks[..] {
            [ThinkingBlock::Thinking {
                thinking,
                signature,
            }] => {
                assert!(thinking.is_empty());
                assert!(signature.starts_with("E"), "{signature}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(t.messages[3]
        .content
        .contains("Correction token: ZEBRA7739"));
    let u = t.messages[1].usage.unwrap();
    assert_eq!(
        (u.input, u.cache_read, u.cache_write),
        (10 + 9907 + 22820, 22820, 9907)
    );
    assert!(pairing_problems(&t).is_empty());
}

/// A real Claude Code 2.1.39 compaction transcript (`datasets/claude-code/agent-acompact-
/// fffbd0.jsonl`, a subagent file) imports by detection as one trace of its own; its first two
/// messages are what PostToolUse:Edit hooks gave the model, as Claude Code renders a
/// `hook_additional_context` attachment. An `attachment` record holding the same hook output
/// imports as that same message, character for character (it was dropped without a word).
#[test]
fn claude_code_hook_context_attachment_renders_as_the_real_transcript_holds_it() {
    let path = ds("claude-code/agent-acompact-fffbd0.jsonl");
    let t = one(
        "claude-code/agent-acompact-fffbd0.jsonl",
        SourceFormat::ClaudeCode,
    );
    assert_eq!(
        t.meta.id,
        "258c7280-ae70-4798-800f-63464d01a85d__agent-acompact-fffbd0"
    );
    assert_eq!(t.meta.model.as_deref(), Some("claude-opus-4-6"));
    let roles: Vec<Role> = t.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::User, Role::User, Role::Assistant]);
    assert!(t.messages[2]
        .content
        .starts_with("Your task is to create a detailed summary"));
    assert!(t.messages[3].content.contains("<analysis>"));
    for m in &t.messages[..2] {
        assert_eq!(m.kind.as_deref(), Some("meta"));
    }
    // The hook output of the first message, as an attachment record of a session.
    let real = &t.messages[0].content;
    let inner = real
        .strip_prefix("<system-reminder>\nPostToolUse:Edit hook additional context: ")
        .and_then(|s| s.strip_suffix("\n</system-reminder>"))
        .expect("the rendering of a hook's additional context");
    assert!(inner.starts_with("[COMPILE ERROR]"));
    let session = [
        serde_json::json!({"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "fix it"}}),
        serde_json::json!({"type": "assistant", "uuid": "a1", "sessionId": "s", "message": {"id": "m1", "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Edit", "input": {}}]}}),
        serde_json::json!({"type": "user", "uuid": "u2", "sessionId": "s", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}),
        serde_json::json!({"type": "attachment", "uuid": "x1", "sessionId": "s", "attachment": {
            "type": "hook_additional_context", "content": [inner], "hookName": "PostToolUse:Edit",
            "toolUseID": "t1", "hookEvent": "PostToolUse"}}),
        serde_json::json!({"type": "assistant", "uuid": "a2", "sessionId": "s", "message": {"id": "m2", "role": "assistant",
            "content": [{"type": "text", "text": "fixing the compile error"}]}}),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let text: Vec<String> = session.iter().map(|v| v.to_string()).collect();
    std::fs::write(&file, text.join("\n")).unwrap();
    let got = import_file(&file, None).unwrap().remove(0);
    assert_eq!(got.meta.source_format, SourceFormat::ClaudeCode);
    let hook = &got.messages[3];
    assert_eq!(
        (hook.role, hook.kind.as_deref()),
        (Role::User, Some("meta"))
    );
    assert_eq!(&hook.content, real);
    assert_eq!(got.messages[4].content, "fixing the compile error");
    assert!(jsonl(&path).iter().all(|r| r["isSidechain"] == true));
}

/// The real rollout with Codex's own compaction (`datasets/codex/rollout-2026-02-23T12-54-34-…`):
/// the `compaction` item of its `replacement_history` holds the summary the model was given,
/// encrypted; the trace cannot hold it, and a warning says so at that item (it was skipped
/// without a word).
#[test]
fn codex_encrypted_compaction_summary_is_warned_of() {
    let rel = "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl";
    let recs = jsonl(&ds(rel));
    let mut want = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        if r["type"] != "compacted" {
            continue;
        }
        for (k, it) in r["payload"]["replacement_history"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            if it["type"] == "compaction" && it["encrypted_content"].is_string() {
                want.push(format!(
                    "line {}: $.payload.replacement_history[{k}]",
                    i + 1
                ));
            }
        }
    }
    assert_eq!(want, ["line 1788: $.payload.replacement_history[39]"]);
    let t = one(rel, SourceFormat::Codex);
    let got: Vec<&str> = t
        .meta
        .warnings
        .iter()
        .filter(|w| w.contains("the compaction summary the model was given is encrypted"))
        .filter_map(|w| w.split(": the compaction").next())
        .collect();
    assert_eq!(got, want);
}

/// A real Claude Code 2.1.284 session (`datasets/claude-code-attachments/claudit-captured-2.1.284.jsonl`,
/// headless, attachments reduced to their envelope by the project that captured it), imported
/// by detection. Claude Code ran the first response's tools while it still streamed: the
/// `Bash` result and `attachment` records come between that response's records (one
/// `message.id`), and its third call is recorded after them. The response is one assistant
/// message with its three calls, each answered in turn (the failed `cat` as an error); the
/// `attachment` records are counted by kind in one warning, figures computed here from the
/// file; the task notification Claude Code enqueued and dequeued is the one user message its
/// `user` record holds.
#[test]
fn claude_code_2_1_284_streamed_calls_and_attachments_import_by_detection() {
    let rel = "claude-code-attachments/claudit-captured-2.1.284.jsonl";
    let recs = jsonl(&ds(rel));
    // The kinds of the attachment records, in order of first appearance, with their counts.
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for r in recs.iter().filter(|r| r["type"] == "attachment") {
        let k = r["attachment"]["type"].as_str().unwrap().to_string();
        match kinds.iter_mut().find(|(n, _)| *n == k) {
            Some((_, c)) => *c += 1,
            None => kinds.push((k, 1)),
        }
    }
    let first = 1 + recs.iter().position(|r| r["type"] == "attachment").unwrap();
    let total: usize = kinds.iter().map(|(_, c)| c).sum();
    assert_eq!((first, total, kinds.len()), (3, 31, 15));
    // The first response: its records, and the tool results recorded between them.
    let split: Vec<&str> = recs
        .iter()
        .filter(|r| {
            r["message"]["id"] == "msg_011CfYHoFFe21XS57MwickQ2"
                || r["message"]["content"][0]["type"] == "tool_result"
        })
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        split,
        [
            "assistant",
            "assistant",
            "assistant",
            "user",
            "assistant",
            "user",
            "user",
            "user"
        ]
    );

    let t = one(rel, SourceFormat::ClaudeCode);
    assert_eq!(
        t.meta.task_id.as_deref(),
        Some("8b7fcd89-94d5-4cb5-8ee2-da8805b15c80")
    );
    assert_eq!(t.meta.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    let roles: Vec<Role> = t.messages.iter().map(|m| m.role).collect();
    use Role::{Assistant as A, Tool as T, User as U};
    assert_eq!(roles, [U, A, T, T, T, A, T, A, U, A]);
    let a = &t.messages[1];
    let ids: Vec<&str> = a.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "toolu_019AFFBoJbnhWxk5wwhfRxhe",
            "toolu_01P1622rj8ECVNoQ4Lx2tsPU",
            "toolu_01PfFwAMvnXGJ1tvGAj919pd"
        ]
    );
    assert_eq!(
        a.tool_calls[2].arguments["command"],
        "cat does-not-exist.txt"
    );
    for (k, id) in ids.iter().enumerate() {
        let r = &t.messages[2 + k];
        assert_eq!(r.tool_call_id.as_deref(), Some(*id));
        assert_eq!(r.is_error, k == 2, "{id}");
    }
    // One usage per response, not one per record.
    let u = a.usage.unwrap();
    assert_eq!((u.output, u.cache_read, u.cache_write), (369, 13689, 11682));
    assert!(t.messages[8].content.starts_with("<task-notification>"));
    assert_eq!(t.messages[8].kind, None);
    let users = t.messages.iter().filter(|m| m.role == Role::User).count();
    assert_eq!(users, 2);
    assert_eq!(t.messages[9].content, "DONE");
    let listed: Vec<String> = kinds.iter().map(|(k, c)| format!("\"{k}\" ×{c}")).collect();
    let want = format!(
        "line {first}: {total} `attachment` record(s) skipped ({})",
        listed.join(", ")
    );
    assert_eq!(t.meta.warnings.len(), 1, "{:?}", t.meta.warnings);
    assert!(
        t.meta.warnings[0].starts_with(&want),
        "{}",
        t.meta.warnings[0]
    );
    assert!(pairing_problems(&t).is_empty());
}

/// A real GitHub Copilot CLI session (`events.jsonl`, Copilot CLI 1.0.34), imported by
/// detection against its own events: every response with its tool calls (ids and arguments as
/// recorded), every `tool.execution_complete` as the result of its call, what the model was
/// given for each user message (`transformedContent`), the system prompt Copilot writes again
/// for the second interaction once, the autopilot nudge marked as Copilot's, the readable
/// reasoning, and the session's usage totals. The file was not recognised before (no importer
/// read Copilot's events).
#[test]
fn copilot_cli_session_imports_by_detection() {
    let rel = "copilot/session-96ef38f0.events.jsonl";
    let t = one(rel, SourceFormat::Copilot);
    let evs = jsonl(&ds(rel));
    let of = |ty: &str| evs.iter().filter(|e| e["type"] == ty).collect::<Vec<_>>();
    let responses = of("assistant.message");
    let results = of("tool.execution_complete");
    let requests: Vec<&Value> = responses
        .iter()
        .filter_map(|r| r["data"]["toolRequests"].as_array())
        .flatten()
        .collect();
    assert_eq!(
        (responses.len(), requests.len(), results.len()),
        (6, 11, 11)
    );
    assert_eq!(count(&t, Role::Assistant), responses.len());
    assert_eq!(calls(&t), requests.len());
    assert_eq!(count(&t, Role::Tool), results.len());
    assert_eq!(matched(&t), 100.0);
    // the two system.message events hold the same prompt: one system message, first
    assert_eq!(of("system.message").len(), 2);
    assert_eq!(count(&t, Role::System), 1);
    assert_eq!(t.messages[0].role, Role::System);
    assert_eq!(
        t.messages[0].content,
        of("system.message")[0]["data"]["content"]
    );
    // each user message as the model got it; the nudge is Copilot's own
    let users: Vec<_> = t.messages.iter().filter(|m| m.role == Role::User).collect();
    let src_users = of("user.message");
    assert_eq!(users.len(), src_users.len());
    for (m, e) in users.iter().zip(&src_users) {
        assert_eq!(m.content, e["data"]["transformedContent"]);
    }
    assert_eq!(users[0].kind, None);
    assert_eq!(users[1].kind.as_deref(), Some("meta"));
    assert!(users[1]
        .content
        .contains("You have not yet marked the task as complete"));
    assert_eq!(
        t.meta.goal.as_deref(),
        src_users[0]["data"]["content"].as_str()
    );
    // calls and results, in order, with the recorded ids and arguments
    let got: Vec<_> = t.messages.iter().flat_map(|m| &m.tool_calls).collect();
    for (c, q) in got.iter().zip(&requests) {
        assert_eq!(c.id, q["toolCallId"].as_str().unwrap());
        assert_eq!(c.name, q["name"].as_str().unwrap());
        assert_eq!(c.arguments, q["arguments"]);
    }
    for e in &results {
        let id = e["data"]["toolCallId"].as_str().unwrap();
        let m = t
            .messages
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some(id))
            .unwrap();
        assert_eq!(m.content, e["data"]["result"]["content"].as_str().unwrap());
        assert!(!m.is_error);
    }
    // the final answer's text
    let answer = responses
        .iter()
        .find(|r| r["data"]["content"] != "")
        .unwrap();
    assert!(t
        .messages
        .iter()
        .any(|m| m.role == Role::Assistant && m.content == answer["data"]["content"]));
    assert_eq!(
        t.meta.task_id.as_deref(),
        Some("96ef38f0-9d09-45c3-8124-6448c36090ed")
    );
    assert_eq!(t.meta.model.as_deref(), Some("claude-sonnet-4.6"));
    let total = t.meta.total_usage.unwrap();
    assert_eq!(
        (total.input, total.output, total.cache_read),
        (186809, 2848, 151738)
    );
    // the readable reasoning of the 4 responses that have it (beside its encrypted form)
    let thought: Vec<_> = t
        .messages
        .iter()
        .filter_map(|m| m.reasoning.as_deref())
        .collect();
    let src_thought: Vec<_> = responses
        .iter()
        .filter_map(|r| r["data"]["reasoningText"].as_str())
        .collect();
    assert_eq!(thought, src_thought);
    assert_eq!(thought.len(), 4);
    assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
}

/// A real Codex 0.39 rollout (the VS Code extension, September 2025) writes each call's
/// `token_count` before the items of its response (`agent_message`, `token_count`, then
/// `reasoning`, `message`, `function_call`). Each response gets the usage written just before
/// it, computed here from the lines; the importer used to set each on the response before (the
/// first dropped with a warning, every later one a call early).
#[test]
fn codex_0_39_usage_written_before_its_response_goes_on_that_response() {
    let rel = "codex/codex-vscode-0.39-01996135.jsonl";
    let t = one(rel, SourceFormat::Codex);
    let recs = jsonl(&ds(rel));
    assert_eq!(recs[0]["payload"]["cli_version"], "0.39.0");
    // each response's usage: the last token_count before its first output item
    let mut expected = Vec::new();
    let (mut pending, mut in_response) = (None, false);
    for r in &recs {
        let p = &r["payload"];
        if r["type"] == "event_msg" && p["type"] == "token_count" {
            pending = Some(p["info"]["last_token_usage"].clone());
            in_response = false;
        } else if r["type"] == "response_item"
            && p["role"] != "user"
            && p["type"] != "function_call_output"
            && p["type"] != "custom_tool_call_output"
        {
            if !in_response {
                expected.push(pending.take().unwrap());
                in_response = true;
            }
        } else if r["type"] == "response_item" {
            in_response = false;
        }
    }
    let got: Vec<_> = t
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!((got.len(), expected.len()), (19, 19));
    for (m, u) in got.iter().zip(&expected) {
        let usage = m.usage.unwrap();
        assert_eq!(usage.input, u["input_tokens"].as_u64().unwrap());
        assert_eq!(usage.output, u["output_tokens"].as_u64().unwrap());
        assert_eq!(usage.cache_read, u["cached_input_tokens"].as_u64().unwrap());
    }
    assert_eq!(got[0].usage.unwrap().input, 5645);
    assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
}

/// A real Claude Code 1.0.95 session that was resumed: line 49 writes line 48 again (the same
/// uuid and message, the result of the call on line 47) under the new sessionId. The model had
/// that result once: the trace holds it once, every call is answered once, and one warning says a
/// repeated record was read once. It used to be a second tool message answering no open call.
#[test]
fn claude_code_1_0_resumed_session_reads_a_repeated_record_once() {
    let rel = "claude-code-1.0/session-e9f146fa.jsonl";
    let t = one(rel, SourceFormat::ClaudeCode);
    let recs = jsonl(&ds(rel));
    assert_eq!(recs[47]["uuid"], recs[48]["uuid"]);
    assert_eq!(recs[47]["message"], recs[48]["message"]);
    assert_ne!(recs[47]["sessionId"], recs[48]["sessionId"]);
    let id = recs[48]["message"]["content"][0]["tool_use_id"]
        .as_str()
        .unwrap();
    let results = t
        .messages
        .iter()
        .filter(|m| m.tool_call_id.as_deref() == Some(id))
        .count();
    assert_eq!(results, 1);
    let src_results: std::collections::HashSet<&str> = recs
        .iter()
        .filter_map(|r| r["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(count(&t, Role::Tool), src_results.len());
    assert_eq!(calls(&t), src_results.len());
    assert_eq!(matched(&t), 100.0);
    assert!(
        pairing_problems(&t).is_empty(),
        "{:?}",
        pairing_problems(&t)
    );
    assert_eq!(t.meta.warnings.len(), 1, "{:?}", t.meta.warnings);
    assert!(t.meta.warnings[0].starts_with("line 49: 1 record(s) repeating"));
}
