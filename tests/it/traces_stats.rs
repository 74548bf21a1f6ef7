//! `tokens::stats` on hand-built traces (every expected number worked out by hand below) and the
//! `ctxbench traces stats` command line.

use crate::support::cli::ctxbench;
use ctxbench::tokens::stats::{self, StatsReport, UNKNOWN_TOOL};
use ctxbench::tokens::{counter, TokenCounter};
use ctxbench::trace::{Message, Role, SourceFormat, ToolCall, Trace, TraceLine, TraceMeta, Usage};
use predicates::prelude::*;
use serde_json::json;

/// A counter simple enough to add up by hand: a word is a token; a message costs 2 + the words
/// of its content + 1 per tool call; every tool schema costs 10.
struct Words;

impl TokenCounter for Words {
    fn name(&self) -> &str {
        "words"
    }
    fn count_text(&self, text: &str) -> u64 {
        text.split_whitespace().count() as u64
    }
    fn count_message(&self, m: &Message) -> u64 {
        2 + self.count_text(&m.content) + m.tool_calls.len() as u64
    }
    fn count_tools(&self, tools: &[serde_json::Value]) -> u64 {
        10 * tools.len() as u64
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

fn with_usage(mut m: Message, input: u64, output: u64, cache_read: u64) -> Message {
    m.usage = Some(Usage {
        input,
        output,
        cache_read,
        cache_write: 0,
    });
    m
}

/// Trace t1 (tokens under `Words`, chars = content + name + tool_call_id + calls' name and JSON):
/// 0 system "be brief"                                   tokens 4  chars 8
/// 1 user "list files please"                            tokens 5  chars 17
/// 2 assistant "ok" + bash {"cmd":"ls"}; input 20        tokens 4  chars 2+4+12 = 18
/// 3 tool c1 bash "a b c d e f"                          tokens 8  chars 11+4+2 = 17
/// 4 assistant "done now" + read_file {"path":"x"}; in 30 tokens 5  chars 8+9+12 = 29
/// 5 tool (id c2, no name) "one two three"               tokens 5  chars 13+2 = 15
/// 6 tool (id zz, no name) ""                            tokens 2  chars 2
/// 7 assistant "bye"                                     tokens 3  chars 3
/// One tool schema: 10 tokens.
fn t1() -> Trace {
    let mut meta = TraceMeta::new("t1", SourceFormat::Canonical);
    meta.tools = vec![json!({"name": "bash"})];
    meta.model = Some("gpt-4o".into());
    meta.warnings = vec!["$.x: odd".into(), "$.y: odder".into()];
    let mut t = Trace::new(meta);
    let mut result_c2 = Message::new(Role::Tool, "one two three");
    result_c2.tool_call_id = Some("c2".into());
    let mut result_zz = Message::new(Role::Tool, "");
    result_zz.tool_call_id = Some("zz".into());
    t.messages = vec![
        Message::system("be brief"),
        Message::user("list files please"),
        with_usage(
            Message::assistant("ok", vec![call("c1", "bash", json!({"cmd": "ls"}))]),
            20,
            5,
            0,
        ),
        Message::tool("c1", "bash", "a b c d e f"),
        with_usage(
            Message::assistant(
                "done now",
                vec![call("c2", "read_file", json!({"path": "x"}))],
            ),
            30,
            7,
            10,
        ),
        result_c2,
        result_zz,
        Message::assistant("bye", vec![]),
    ];
    t
}

/// Trace t2: user "hi" (3 tokens, 2 chars), assistant "yo" with input 4 (3 tokens, 2 chars).
fn t2() -> Trace {
    let mut t = Trace::new(TraceMeta::new("t2", SourceFormat::Openai));
    t.messages = vec![
        Message::user("hi"),
        with_usage(Message::assistant("yo", vec![]), 4, 1, 0),
    ];
    t
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn one_trace_by_hand() {
    let r = stats::compute(&[t1()], &Words, 3);
    assert_eq!(r.schema_version, stats::STATS_SCHEMA_VERSION);
    assert_eq!(r.counter, "words");
    assert_eq!(r.traces[0].id, "t1");
    assert_eq!(r.traces[0].source_format, "canonical");
    assert_eq!(r.traces[0].model.as_deref(), Some("gpt-4o"));
    let s = &r.traces[0].figures;
    assert_eq!(s.messages, 8);
    assert_eq!(s.tokens, 4 + 5 + 4 + 8 + 5 + 5 + 2 + 3);
    assert_eq!(s.chars, 8 + 17 + 18 + 17 + 29 + 15 + 2 + 3);
    assert_eq!(s.tool_schema_tokens, 10);

    let role = |r: &str| {
        let x = &s.by_role[r];
        (x.messages, x.tokens, x.chars)
    };
    assert_eq!(role("system"), (1, 4, 8));
    assert_eq!(role("user"), (1, 5, 17));
    assert_eq!(role("assistant"), (3, 12, 50));
    assert_eq!(role("tool"), (3, 15, 34));
    assert_eq!(s.by_role.len(), 4);

    assert_eq!(s.tool_calls, 2);
    let tool = |t: &str| {
        let x = &s.by_tool[t];
        (x.calls, x.call_tokens, x.results, x.result_tokens)
    };
    // call tokens: "bash" + `{"cmd":"ls"}` = 1 + 1 word.
    assert_eq!(tool("bash"), (1, 2, 1, 8));
    // The result without a name is attributed through its tool_call_id.
    assert_eq!(tool("read_file"), (1, 2, 1, 5));
    assert_eq!(tool(UNKNOWN_TOOL), (0, 0, 1, 2));
    assert_eq!(s.by_tool.len(), 3);

    assert_eq!(s.model_calls, 3);
    assert_eq!(
        s.recorded_usage,
        Usage {
            input: 50,
            output: 12,
            cache_read: 10,
            cache_write: 0
        }
    );
    assert_eq!(s.import_warnings, 2);

    // Call at 2: prompt = 10 (schema) + 4 + 5 = 19 vs 20 → −5 %.
    // Call at 4: prompt = 19 + 4 + 8 = 31 vs 30 → +3.333… %.
    let c = s.calibration.as_ref().expect("recorded usage");
    assert_eq!((c.calls, c.recorded_input, c.counted_input), (2, 50, 50));
    assert!(
        close(c.mean_abs_pct_error, (5.0 + 10.0 / 3.0) / 2.0),
        "{c:?}"
    );
    assert!(close(c.bias_pct, (-5.0 + 10.0 / 3.0) / 2.0), "{c:?}");

    // Largest: 8 tokens at 3, then the 5s in message order (1, 4; 5 is cut by top = 3).
    let largest: Vec<(usize, Role, Option<&str>, u64, u64)> = s
        .largest
        .iter()
        .map(|l| (l.index, l.role, l.tool.as_deref(), l.tokens, l.chars))
        .collect();
    assert_eq!(
        largest,
        vec![
            (3, Role::Tool, Some("bash"), 8, 17),
            (1, Role::User, None, 5, 17),
            (4, Role::Assistant, Some("read_file"), 5, 29),
        ]
    );
    assert!(s.largest.iter().all(|l| l.trace_id == "t1"));
}

#[test]
fn totals_pool_every_trace() {
    let r = stats::compute(&[t1(), t2()], &Words, 3);
    assert_eq!(r.traces.len(), 2);
    assert_eq!(r.total.traces, 2);
    let t = &r.total.figures;
    assert_eq!(t.messages, 10);
    assert_eq!(t.tokens, 36 + 6);
    assert_eq!(t.chars, 109 + 4);
    assert_eq!(t.tool_schema_tokens, 10);
    assert_eq!(t.by_role["user"].messages, 2);
    assert_eq!(t.by_role["user"].tokens, 8);
    assert_eq!(t.by_role["assistant"].tokens, 15);
    assert_eq!(t.tool_calls, 2);
    assert_eq!(t.by_tool["bash"].result_tokens, 8);
    assert_eq!(t.model_calls, 4);
    assert_eq!(t.recorded_usage.input, 54);
    assert_eq!(t.import_warnings, 2);
    // t2's call: prompt 3 vs 4 → −25 %. Pooled over the 3 calls, not averaged per trace.
    let c = t.calibration.as_ref().unwrap();
    assert_eq!((c.calls, c.recorded_input, c.counted_input), (3, 54, 53));
    assert!(close(c.mean_abs_pct_error, (5.0 + 10.0 / 3.0 + 25.0) / 3.0));
    assert!(close(c.bias_pct, (-5.0 + 10.0 / 3.0 - 25.0) / 3.0));
    let largest: Vec<(&str, usize)> = t
        .largest
        .iter()
        .map(|l| (l.trace_id.as_str(), l.index))
        .collect();
    assert_eq!(largest, vec![("t1", 3), ("t1", 1), ("t1", 4)]);
}

#[test]
fn no_recorded_usage_means_no_calibration_and_top_zero_lists_nothing() {
    let mut t = t2();
    t.messages[1].usage = None;
    let r = stats::compute(&[t], &Words, 0);
    assert!(r.traces[0].figures.calibration.is_none());
    assert!(r.total.figures.calibration.is_none());
    assert!(r.traces[0].figures.largest.is_empty());
    assert!(r.total.figures.largest.is_empty());
    let empty = stats::compute(&[], &Words, 5);
    assert_eq!(empty.total.traces, 0);
    assert_eq!(empty.total.figures.tokens, 0);
}

#[test]
fn exact_counter_figures_add_up() {
    let o200k = counter("o200k").unwrap();
    let mut t = Trace::new(TraceMeta::new("h", SourceFormat::Canonical));
    t.messages = vec![
        Message::user("hello world"),
        Message::assistant("hello world", vec![]),
    ];
    let r = stats::compute(&[t], o200k.as_ref(), 5);
    // 3 framing + 1 role + 2 content, twice.
    assert_eq!(r.total.figures.tokens, 12);
    assert_eq!(r.total.figures.by_role["assistant"].tokens, 6);
    assert_eq!(r.counter, "o200k");
}

#[test]
fn json_shape() {
    let r: StatsReport = stats::compute(&[t1(), t2()], &Words, 2);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["counter"], "words");
    assert!(v["skipped"].as_array().unwrap().is_empty());
    let t = &v["traces"][0];
    for key in [
        "id",
        "source_format",
        "messages",
        "tokens",
        "tool_schema_tokens",
        "chars",
        "by_role",
        "tool_calls",
        "by_tool",
        "model_calls",
        "recorded_usage",
        "calibration",
        "import_warnings",
        "largest_message_tokens",
        "largest",
    ] {
        assert!(t.get(key).is_some(), "traces[0] lacks {key}: {t}");
    }
    assert_eq!(t["by_role"]["tool"]["tokens"], 15);
    assert_eq!(t["by_tool"]["bash"]["calls"], 1);
    assert_eq!(t["largest"][0]["role"], "tool");
    assert_eq!(t["largest"][0]["tool"], "bash");
    assert_eq!(t["calibration"]["calls"], 2);
    assert!(v["traces"][1]["largest"][0]["tool"].is_null());
    assert_eq!(v["total"]["traces"], 2);
    // The shared figures are flat, in one order, beside each trace's identity and the count.
    let figures = [
        "messages",
        "tokens",
        "tool_schema_tokens",
        "chars",
        "by_role",
        "tool_calls",
        "by_tool",
        "model_calls",
        "recorded_usage",
        "calibration",
        "import_warnings",
        "largest_message_tokens",
        "largest",
    ];
    let keys =
        |o: &serde_json::Value| -> Vec<String> { o.as_object().unwrap().keys().cloned().collect() };
    let head = ["id", "source_format", "source_path", "model"];
    let want: Vec<&str> = head.iter().chain(&figures).copied().collect();
    assert_eq!(keys(t), want);
    let want: Vec<&str> = ["traces"].iter().chain(&figures).copied().collect();
    assert_eq!(keys(&v["total"]), want);
    assert!(v["total"]["calibration"]["bias_pct"].as_f64().unwrap() < 0.0);
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

#[test]
fn cli_unknown_counter_is_a_usage_error_listing_valid_names() {
    ctxbench()
        .args(["traces", "stats", "datasets", "--counter", "gpt2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown token counter `gpt2`"))
        .stderr(predicate::str::contains(
            "o200k, cl100k, approx, approx-anthropic",
        ));
}

#[test]
fn cli_unknown_format_is_a_usage_error_listing_valid_formats() {
    ctxbench()
        .args(["traces", "stats", "datasets", "--from", "jsonish"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown format `jsonish`"))
        .stderr(predicate::str::contains("claude-code"));
}

#[test]
fn cli_requires_a_path() {
    ctxbench().args(["traces", "stats"]).assert().code(2);
}

#[test]
fn cli_missing_file_fails_with_exit_2_naming_it() {
    ctxbench()
        .args(["traces", "stats", "no/such/trace.jsonl"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no/such/trace.jsonl"));
}

/// Write traces as canonical JSONL (header line, then message lines).
fn write_canonical(dir: &std::path::Path, name: &str, traces: &[Trace]) -> std::path::PathBuf {
    let mut s = String::new();
    for t in traces {
        let header = TraceLine::Header {
            schema_version: ctxbench::trace::SCHEMA_VERSION,
            meta: t.meta.clone(),
        };
        s.push_str(&serde_json::to_string(&header).unwrap());
        s.push('\n');
        for m in &t.messages {
            s.push_str(&serde_json::to_string(&TraceLine::Message(m.clone())).unwrap());
            s.push('\n');
        }
    }
    let p = dir.join(name);
    std::fs::write(&p, s).unwrap();
    p
}

// The tests below go through the importers (`trace::import`) and the bundled datasets.
#[test]
fn cli_json_on_canonical_traces_matches_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_canonical(dir.path(), "two.jsonl", &[t1(), t2()]);
    let out = ctxbench()
        .args([
            "traces",
            "stats",
            "--json",
            "--top",
            "2",
            "--counter",
            "cl100k",
        ])
        .arg(&p)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let cl100k = counter("cl100k").unwrap();
    let want = serde_json::to_value(stats::compute(&[t1(), t2()], cl100k.as_ref(), 2)).unwrap();
    assert_eq!(v["schema_version"], 1);
    // serde_json's default float parser is not correctly rounded: compare floats with a
    // tolerance, everything else exactly.
    let mut got_total = v["total"].clone();
    let mut want_total = want["total"].clone();
    for key in ["mean_abs_pct_error", "bias_pct"] {
        let g = got_total["calibration"][key].take().as_f64().unwrap();
        let w = want_total["calibration"][key].take().as_f64().unwrap();
        assert!(close(g, w), "{key}: {g} vs {w}");
    }
    assert_eq!(got_total, want_total);
    assert_eq!(v["traces"][0]["by_role"], want["traces"][0]["by_role"]);
    assert_eq!(v["traces"][1]["tokens"], want["traces"][1]["tokens"]);
}

/// The per-trace `largest` column is the trace's largest message whatever `--top` lists: with
/// `--top 0` it read 0 (it was taken from the listed messages, none).
#[test]
fn the_largest_message_does_not_depend_on_top() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_canonical(dir.path(), "two.jsonl", &[t1(), t2()]);
    let row = |top: &str, id: &str| {
        let out = ctxbench()
            .args(["traces", "stats", "--counter", "cl100k", "--top", top])
            .arg(&p)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8(out).unwrap();
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string();
        // trace, format, msgs, calls, tokens, largest, warn
        line.split_whitespace().nth(5).unwrap().to_string()
    };
    let cl100k = counter("cl100k").unwrap();
    let r = stats::compute(&[t1(), t2()], cl100k.as_ref(), 0);
    for (k, id) in ["t1", "t2"].into_iter().enumerate() {
        let largest = r.traces[k].figures.largest_message_tokens;
        assert!(largest > 0 && r.traces[k].figures.largest.is_empty());
        for top in ["0", "1", "10"] {
            assert_eq!(row(top, id), largest.to_string(), "--top {top}, {id}");
        }
    }
    let with_top = stats::compute(&[t1(), t2()], cl100k.as_ref(), 1);
    assert_eq!(
        with_top.total.figures.largest_message_tokens,
        with_top.total.figures.largest[0].tokens
    );
    assert_eq!(
        r.total.figures.largest_message_tokens,
        with_top.total.figures.largest_message_tokens
    );
}

/// A trace id with wide characters (CJK, an emoji) keeps the columns after it aligned: they
/// are measured in display columns (`ctxbench::output::columns`), not characters (the row of
/// `üñí©ødé 日本語 😀` was 4 columns off).
#[test]
fn cli_aligns_rows_whose_ids_hold_wide_characters() {
    let dir = tempfile::tempdir().unwrap();
    let mut wide = t1();
    wide.meta.id = "üñí©ødé 日本語 😀".into();
    let mut plain = t2();
    plain.meta.id = "plain-ok".into();
    let p = write_canonical(dir.path(), "wide.jsonl", &[wide, plain]);
    let out = ctxbench()
        .args(["traces", "stats"])
        .arg(&p)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let at = |starts: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(starts))
            .unwrap_or_else(|| panic!("{text}"));
        let i = line.find("  canonical").or_else(|| line.find("  openai"));
        let i = i.or_else(|| line.find("  format")).unwrap();
        ctxbench::output::columns(&line[..i])
    };
    assert_eq!(at("trace "), at("üñí"), "{text}");
    assert_eq!(at("trace "), at("plain-ok"), "{text}");
}

#[test]
fn cli_table_on_canonical_traces() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_canonical(dir.path(), "one.jsonl", &[t1()]);
    ctxbench()
        .args(["traces", "stats"])
        .arg(&p)
        .assert()
        .success()
        .stdout(predicate::str::contains("1 trace(s), 8 messages"))
        .stdout(predicate::str::contains("By tool"))
        .stdout(predicate::str::contains("read_file"))
        .stdout(predicate::str::contains("Largest messages"));
}

/// A trace's id and tool names are untrusted: escape sequences in them (clear screen, colour,
/// OSC 8 hyperlink, OSC 0 window title, C1 CSI, bidi override) are shown, not sent to the
/// terminal, in the tables and in `--json` (whose values stay exact).
#[test]
fn cli_shows_escape_sequences_in_ids_and_tool_names_instead_of_sending_them() {
    let dir = tempfile::tempdir().unwrap();
    let payload = "\x1b[2J\x1b[31mred\x1b[0m\x1b]8;;http://evil.example\x07link\x1b]8;;\x07\
                   \x1b]0;title\x07\x07\x08\r\0\u{9b}2J\u{202e}";
    let mut t = t1();
    t.meta.id = format!("t{payload}");
    for m in &mut t.messages {
        for c in &mut m.tool_calls {
            c.name = format!("bash{payload}");
        }
        if m.name.is_some() {
            m.name = Some(format!("bash{payload}"));
        }
    }
    let p = write_canonical(dir.path(), "hostile.jsonl", &[t.clone()]);
    let raw = |b: &[u8]| {
        let text = String::from_utf8_lossy(b);
        b.iter()
            .any(|&c| (c < 0x20 && c != b'\n' && c != b'\t') || c == 0x7f)
            || text.contains(['\u{9b}', '\u{202e}'])
    };
    for json in [false, true] {
        let mut cmd = ctxbench();
        cmd.args(["traces", "stats"]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.arg(&p).assert().success().get_output().clone();
        assert!(!out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b));
        assert!(
            !raw(&out.stdout),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            !raw(&out.stderr),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        if json {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["traces"][0]["id"], t.meta.id.as_str(), "exact in JSON");
        } else {
            assert!(text.contains("t\\x1b[2J\\x1b[31mred"), "{text}");
            assert!(text.contains("\\u{202e}"), "{text}");
        }
    }
}

#[test]
fn cli_skip_invalid_lists_the_bad_input_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    write_canonical(dir.path(), "good.jsonl", &[t2()]);
    std::fs::write(dir.path().join("bad.jsonl"), "{\"type\": \"header\", trunc").unwrap();
    let out = ctxbench()
        .args(["traces", "stats", "--json", "--skip-invalid"])
        .arg(dir.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("bad.jsonl"))
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["total"]["traces"], 1);
    assert_eq!(v["skipped"].as_array().unwrap().len(), 1);
    assert!(v["skipped"][0]["file"]
        .as_str()
        .unwrap()
        .ends_with("bad.jsonl"));
    // In the human rendering each is said once, at the end, with a file of no trace format.
    std::fs::write(dir.path().join("notes.json"), r#"{"title": "x"}"#).unwrap();
    let out = ctxbench()
        .args(["traces", "stats", "--skip-invalid"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(text.matches("bad.jsonl").count(), 1, "{text}");
    assert!(
        text.contains("1 file(s) holding no trace ignored"),
        "{text}"
    );
    assert!(
        text.contains("notes.json: a JSON object with keys title"),
        "{text}"
    );
    std::fs::remove_file(dir.path().join("notes.json")).unwrap();
    // Without --skip-invalid the same directory fails with exit 2.
    ctxbench()
        .args(["traces", "stats"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.jsonl"));
}

#[test]
fn cli_stats_over_every_bundled_dataset() {
    let out = ctxbench()
        .args(["traces", "stats", "--json", "datasets"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let traces = v["traces"].as_array().unwrap();
    assert!(
        traces.len() >= 40,
        "expected every bundled trace, got {}",
        traces.len()
    );
    assert!(v["skipped"].as_array().unwrap().is_empty());
    for t in traces {
        assert!(t["messages"].as_u64().unwrap() > 0, "{}", t["id"]);
        assert!(t["tokens"].as_u64().unwrap() > 0, "{}", t["id"]);
    }
    // Several formats record usage: calibration must have something to compare.
    assert!(v["total"]["calibration"]["calls"].as_u64().unwrap() > 0);
    // Human output too.
    ctxbench()
        .args(["traces", "stats", "datasets", "--top", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Largest messages"));
}

#[test]
fn cli_never_prints_two_different_ids_alike() {
    // Seven marshmallow traces whose ids differ only in the middle, among others.
    let text = human_stats("datasets/swe-agent");
    let json = stats_output(&["--json"], "datasets/swe-agent");
    let report: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let traces = report["traces"].as_array().unwrap();
    let ids: std::collections::BTreeSet<&str> =
        traces.iter().map(|t| t["id"].as_str().unwrap()).collect();
    let marshmallow = ids.iter().filter(|i| i.contains("marshmallow")).count();
    assert!(marshmallow >= 3, "{ids:?}");
    // The per-trace table: the rows after the header, up to the first blank line.
    let shown: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("trace "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split("  ").next().unwrap())
        .collect();
    assert_eq!(shown.len(), traces.len(), "{text}");
    let distinct: std::collections::BTreeSet<&str> = shown.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "two ids print alike:\n{text}");
    for s in &shown {
        assert!(s.chars().count() <= 48, "{s}");
    }
}

#[test]
fn an_overhead_is_added_to_every_counted_prompt_and_the_bias_without_it_stays_beside() {
    let r = stats::compute_with_overhead(&[t1()], &Words, 3, 5);
    let c = r.traces[0].figures.calibration.as_ref().unwrap();
    // Calls at 2 and 4 (see `one_trace_by_hand`): prompts 19 + 5 = 24 vs 20 → +20 %, and
    // 31 + 5 = 36 vs 30 → +20 %.
    assert_eq!((c.counted_input, c.overhead_tokens), (60, 5));
    assert!(
        close(c.bias_pct, 20.0) && close(c.mean_abs_pct_error, 20.0),
        "{c:?}"
    );
    assert!(close(
        c.bias_pct_without_overhead.unwrap(),
        (-5.0 + 10.0 / 3.0) / 2.0
    ));
    assert!(close(
        c.mean_abs_pct_error_without_overhead.unwrap(),
        (5.0 + 10.0 / 3.0) / 2.0
    ));
    // Without an overhead nothing changes and the JSON has no new fields.
    let plain = stats::compute(&[t1()], &Words, 3);
    let c = plain.total.figures.calibration.as_ref().unwrap();
    assert_eq!(c.bias_pct_without_overhead, None);
    let v = serde_json::to_value(c).unwrap();
    assert!(v.get("overhead_tokens").is_none(), "{v}");
}

/// The bundled Claude Code sessions record neither system prompt nor tool schemas: counted
/// prompts are ~95% short. The bundled `claude-code` estimate brings the bias near 0.
#[test]
fn cli_claude_code_overhead_moves_the_calibration_bias_toward_zero() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/claude-code");
    let bias = |extra: &[&str]| -> (f64, Option<f64>) {
        let out = ctxbench()
            .args(["traces", "stats", "--json"])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &v["total"]["calibration"];
        (
            c["bias_pct"].as_f64().unwrap(),
            c["bias_pct_without_overhead"].as_f64(),
        )
    };
    let (before, none) = bias(&[]);
    assert!(before < -80.0, "{before}");
    assert_eq!(none, None);
    let (after, was) = bias(&["--overhead-tokens", "claude-code"]);
    assert_eq!(was, Some(before));
    assert!(after.abs() < 10.0, "{before} → {after}");
    ctxbench()
        .args(["traces", "stats"])
        .arg(&dir)
        .args(["--overhead-tokens", "claude-code"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "(with 18400 overhead tokens per call)",
        ))
        .stdout(predicate::str::contains(format!(
            "bias {before:+.1}% → {after:+.1}%"
        )));
    ctxbench()
        .args(["traces", "stats"])
        .arg(&dir)
        .args(["--overhead-tokens", "codex"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("claude-code"));
}

/// `traces stats` on every bundled dataset folder (and all of them at once), as a person reads it.
fn human_stats(path: &str) -> String {
    String::from_utf8(stats_output(&[], path)).unwrap()
}

/// What `traces stats ARGS DIR` prints (at 100 columns), `path` relative to the repository.
fn stats_output(args: &[&str], path: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    ctxbench()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("COLUMNS", "100")
        .args(["traces", "stats"])
        .args(args)
        .arg(&dir)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

#[test]
fn cli_tables_fit_100_columns_on_every_bundled_dataset() {
    let mut folders: Vec<String> =
        std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .map(|p| format!("datasets/{}", p.file_name().unwrap().to_str().unwrap()))
            .collect();
    folders.sort();
    assert!(folders.len() >= 6, "{folders:?}");
    folders.push("datasets".into());
    let mut calibration_tables = 0;
    for folder in &folders {
        let text = human_stats(folder);
        // A path longer than a line is not cut: it stands alone on its line (how long it is
        // depends on where the repository was cloned).
        for line in text.lines() {
            let n = line.chars().count();
            assert!(
                n <= 100 || !line.trim().contains(' '),
                "{folder}: a line of {n} columns:\n{line}"
            );
        }
        // The sections are all there (no table was dropped to make room).
        for section in ["trace  ", "By role", "Largest messages", "Calibration"] {
            assert!(text.contains(section), "{folder} lacks {section}:\n{text}");
        }
        calibration_tables += usize::from(text.contains("Calibration by trace"));
    }
    // claude-code, openhands, tau2-bench, mini-swe-agent and the whole lot record usage.
    assert!(calibration_tables >= 4, "{calibration_tables}");
}

#[test]
fn cli_table_on_the_claude_code_dataset() {
    insta::assert_snapshot!(
        "traces_stats_claude_code",
        human_stats("datasets/claude-code")
    );
}

#[test]
fn cli_table_on_the_swe_agent_dataset_shortens_long_ids() {
    insta::assert_snapshot!("traces_stats_swe_agent", human_stats("datasets/swe-agent"));
}

/// A recorded compaction restarts the counted prompt: after the marker the model saw the
/// leading system message and what follows the marker, not the replaced history.
/// 0 system "be brief" (4), 1 user "a b c d" (6), 2 assistant "x", input 10: counted 4 + 6 = 10;
/// marker before 3; 3 user "s s" (4), 4 assistant "y", input 8: counted 4 + 4 = 8 (17 without
/// the restart: 4 + 6 + 3 + 4, +112.5%).
#[test]
fn calibration_restarts_at_compaction_markers() {
    let mut t = Trace::new(TraceMeta::new("c", SourceFormat::ClaudeCode));
    t.messages = vec![
        Message::system("be brief"),
        Message::user("a b c d"),
        with_usage(Message::assistant("x", vec![]), 10, 1, 0),
        Message::user("s s"),
        with_usage(Message::assistant("y", vec![]), 8, 1, 0),
    ];
    t.markers = vec![ctxbench::trace::ContextMarker {
        index: 3,
        kind: "compaction".into(),
        detail: None,
        tokens_before: Some(17),
    }];
    let r = stats::compute(std::slice::from_ref(&t), &Words, 0);
    let c = r.traces[0].figures.calibration.as_ref().unwrap();
    assert_eq!((c.calls, c.recorded_input, c.counted_input), (2, 18, 18));
    assert_eq!(c.bias_pct, 0.0);
    // another kind of marker does not restart anything
    t.markers[0].kind = "task_boundary".into();
    let r = stats::compute(&[t], &Words, 0);
    assert_eq!(
        r.traces[0]
            .figures
            .calibration
            .as_ref()
            .unwrap()
            .counted_input,
        27
    );
}

/// Two folders holding a trace of the same id (a real mini-swe-agent trajectory, copied): both
/// are rows and count in the totals, and the output says so, naming the id and its files, as
/// `run` would refuse them and `import` renames the second. Identical rows were printed with no
/// word of it.
#[test]
fn cli_names_trace_ids_that_come_from_more_than_one_input() {
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/mini-swe-agent/astropy__astropy-12907.traj.json");
    let tmp = tempfile::tempdir().unwrap();
    for d in ["a", "b"] {
        std::fs::create_dir(tmp.path().join(d)).unwrap();
        std::fs::copy(
            &real,
            tmp.path().join(d).join("astropy__astropy-12907.traj.json"),
        )
        .unwrap();
    }
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let out = ctxbench()
        .env("COLUMNS", "100")
        .args(["traces", "stats"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let flat = String::from_utf8(out)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.starts_with("2 trace(s), "), "{flat}");
    assert!(
        flat.contains(&format!(
            "note: 1 trace id(s) come from more than one input: each input's trace is a row \
             below and counts in the totals (a run refuses them: \"each trace must have a unique \
             id\"; `ctxbench import` writes the later ones as `<id>-2`, …): astropy__astropy-12907 \
             (from {} and {})",
            a.join("astropy__astropy-12907.traj.json").display(),
            b.join("astropy__astropy-12907.traj.json").display()
        )),
        "{flat}"
    );
    // --json: the ids and files in the report, the note on stderr.
    let out = ctxbench()
        .args(["traces", "stats", "--json"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["duplicate_ids"][0]["id"], "astropy__astropy-12907", "{v}");
    assert_eq!(v["duplicate_ids"][0]["files"].as_array().unwrap().len(), 2);
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("note: 1 trace id(s) come from more than one input"));
    // One folder: no note, and no field.
    let out = ctxbench()
        .args(["traces", "stats", "--json"])
        .arg(&a)
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("duplicate_ids").is_none(), "{v}");
    assert!(out.stderr.is_empty());
}
