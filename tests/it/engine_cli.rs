//! `ctxbench replay` end to end: fixture JSON in the fixture vocabulary, the human timeline,
//! JSON for traces, and exit codes for bad input.

use crate::support::cli::ctxbench;
use crate::support::traces::golden as fixture_dir;
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn fixture_json_uses_the_fixture_vocabulary() {
    let d = fixture_dir("synthetic-s7-w60k-out40k");
    let out = ctxbench()
        .args(["replay", "--fixture"])
        .arg(&d)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let got: Value = serde_json::from_slice(&out).unwrap();
    let want_events: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("events.json")).unwrap()).unwrap();
    let want_calls: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("model_calls.json")).unwrap())
            .unwrap();
    let types = |v: &Value| -> Vec<(u64, String)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["trace_index"].as_u64().unwrap(),
                    e["type"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(types(&got["events"]), types(&want_events));
    assert_eq!(got["model_calls"], want_calls);
}

#[test]
fn human_timeline_and_json_for_a_trace() {
    let trace = fixture_dir("mini-swe-django-11138").join("trace.jsonl");
    ctxbench()
        .arg("replay")
        .arg(&trace)
        .args(["--preset", "deepagents", "--window", "30000"])
        .assert()
        .success()
        .stdout(predicate::str::contains("summarized"))
        .stdout(predicate::str::contains(
            "invariants: all hold over 115 calls",
        ));
    let out = ctxbench()
        .arg("replay")
        .arg(&trace)
        .args([
            "--window",
            "30000",
            "--set",
            "summarize.keep.messages=6",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["window"], 30000);
    assert_eq!(v["calls"].as_array().unwrap().len(), 115);
    assert!(v["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "summarized"));
}

/// What `ctxbench replay datasets/TRACE FLAGS…` prints (it must succeed).
fn replay_stdout(trace: &str, flags: &[&str]) -> String {
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets")
        .join(trace);
    let out = ctxbench()
        .arg("replay")
        .arg(&trace)
        .args(flags)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// Every line of the timeline fits 100 columns: a long event (a summary and its history
/// file) wraps under the events column (it ran to 166); a preset that keeps no raw history
/// names none (it ended in a bare "history").
#[test]
fn the_timeline_fits_100_columns_and_names_only_real_history_files() {
    let trace = "mini-swe-agent/django__django-14771.traj.json";
    let text = |preset: &str| replay_stdout(trace, &["--preset", preset, "--window", "8000"]);
    let deep = text("deepagents");
    assert!(deep.contains("summarized "), "{deep}");
    for l in deep.lines() {
        assert!(l.chars().count() <= 100, "wider than 100 columns: {l}");
    }
    let at = deep
        .find(", history")
        .expect("deepagents keeps its history");
    let wrapped = deep[at..].lines().nth(1).unwrap();
    assert!(
        wrapped.trim_start().starts_with("/conversation_history/") && wrapped.ends_with(".md"),
        "{deep}"
    );
    let codex = text("codex");
    assert!(codex.contains("summarized "), "{codex}");
    assert!(!codex.contains("history"), "{codex}");
}

/// The human timeline numbers calls 1..N like its footer's "N calls" (and report.html), with
/// each call's trace index in its own `message` column; "stopped at call K" counts the same
/// way; the header and footer fit 100 columns.
#[test]
fn human_timeline_numbers_calls_not_messages() {
    let stdout =
        |flags: &[&str]| replay_stdout("mini-swe-agent/astropy__astropy-12907.traj.json", flags);
    let text = stdout(&[]);
    let lines: Vec<&str> = text.lines().collect();
    let head = lines.iter().position(|l| l.starts_with("call ")).unwrap();
    let cols: Vec<&str> = lines[head].split_whitespace().collect();
    assert_eq!(cols[..2], ["call", "message"], "{text}");
    let rows: Vec<Vec<&str>> = lines[head + 1..]
        .iter()
        .take_while(|l| !l.contains(" calls, "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 20, "{text}");
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row[0], (k + 1).to_string(), "call ordinal: {text}");
        assert_eq!(row[1], (2 * k + 2).to_string(), "message index: {text}");
    }
    assert!(
        text.contains("\n20 calls, ") && text.contains("all hold over 20 calls"),
        "{text}"
    );
    for l in lines[..head].iter().chain(&lines[head + 1 + rows.len()..]) {
        assert!(l.chars().count() <= 100, "wider than 100 columns: {l}");
    }

    // A window too small for the first request: the replay stops at call 1, message 2.
    let text = stdout(&["--window", "1500"]);
    assert!(text.contains("stopped at call 1 (message 2): "), "{text}");
}

#[test]
fn config_file_with_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("engine.toml");
    std::fs::write(
        &cfg,
        "preset = \"deepagents\"\nwindow = 20000\n[summarize]\nkeep = { messages = 6 }\nprompt = { text = \"## SUMMARY\\n## NEXT STEPS\" }\n",
    )
    .unwrap();
    let trace = fixture_dir("mini-swe-django-11138").join("trace.jsonl");
    let out = ctxbench()
        .arg("replay")
        .arg(&trace)
        .arg("--config")
        .arg(&cfg)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["window"], 20000);
    let summaries: Vec<&Value> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "summarized")
        .collect();
    assert!(!summaries.is_empty());
    for s in summaries {
        assert_eq!(s["detail"]["kept"], 6);
        let text = s["detail"]["summary_message"].as_str().unwrap();
        assert!(text.contains("## NEXT STEPS") && !text.contains("SESSION INTENT"));
    }
    std::fs::write(&cfg, "window = 20000\nsummarize = 3\n").unwrap();
    ctxbench()
        .arg("replay")
        .arg(&trace)
        .arg("--config")
        .arg(&cfg)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("engine.toml"));
}

#[test]
fn store_directory_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture_dir("synthetic-s7").join("trace.jsonl");
    ctxbench()
        .arg("replay")
        .arg(&trace)
        .arg("--store")
        .arg(dir.path())
        .assert()
        .success();
    let results = dir
        .path()
        .join("replay/trace/deepagents/large_tool_results");
    assert_eq!(std::fs::read_dir(results).unwrap().count(), 5);
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    ctxbench()
        .args(["replay", "/no/such/trace.jsonl"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/no/such/trace.jsonl"));
    ctxbench()
        .arg("replay")
        .arg(fixture_dir("synthetic-s7"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("use --fixture DIR"));
    let trace = fixture_dir("synthetic-s7").join("trace.jsonl");
    ctxbench()
        .arg("replay")
        .arg(&trace)
        .args(["--set", "summarize.triger.fraction=0.5"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("triger"));
    ctxbench()
        .arg("replay")
        .arg(&trace)
        .args(["--preset", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown preset"));
    let bad = tempfile::NamedTempFile::with_suffix(".jsonl").unwrap();
    std::fs::write(
        bad.path(),
        "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"wizard\"}\n",
    )
    .unwrap();
    ctxbench()
        .arg("replay")
        .arg(bad.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 2"));
}

/// `replay` says what the importer changed in the trace, grouped as `import` prints it, on
/// stderr (stdout stays the timeline or the JSON): a real OpenHands run whose `finish` call has
/// no result. It said nothing.
#[test]
fn replay_says_what_the_import_changed_on_stderr() {
    let trace =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/openhands/basic.json");
    for json in [false, true] {
        let mut c = ctxbench();
        c.arg("replay").arg(&trace);
        if json {
            c.arg("--json");
        }
        let out = c.assert().success().get_output().clone();
        let stderr = String::from_utf8(out.stderr).unwrap();
        // Within 100 columns (the place's path, longer than a line, alone on its own).
        for line in stderr.lines() {
            assert!(
                line.chars().count() <= 100 || !line.trim().contains(' '),
                "{line}\n{stderr}"
            );
        }
        let stderr = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            stderr.starts_with("1 import warning(s) in 1 trace(s)")
                && stderr.contains(
                    " 1× tool call \"…\" (finish) has no result (the source ends mid-call) \
                     (first: "
                )
                && stderr.contains("basic.json [basic] message 3)"),
            "{stderr}"
        );
        if json {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["trace_id"], "basic");
        }
    }
}

/// `--fixture` replays with the fixture's own settings; the flags it can honour change them
/// (`--preset`, `--window`, `--counter`, `--seed`, as `--set` already could), and those it
/// cannot are refused as usage errors, not ignored: its config.json is the configuration
/// (`--config`) and always gives the window (`--agent-model` would change nothing).
#[test]
fn fixture_honours_the_settings_flags_and_refuses_the_others() {
    let d = fixture_dir("synthetic-s7");
    let stdout = |extra: &[&str]| {
        let out = ctxbench()
            .args(["replay", "--fixture"])
            .arg(&d)
            .args(extra)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let own = stdout(&[]);
    assert!(
        own.starts_with("trace synthetic-s7  preset deepagents  counter approx\nwindow 200000"),
        "{own}"
    );
    let changed = stdout(&[
        "--preset",
        "digitorn",
        "--window",
        "5000",
        "--counter",
        "o200k",
    ]);
    assert!(
        changed.starts_with("trace synthetic-s7  preset digitorn  counter o200k\nwindow 5000 "),
        "{changed}"
    );
    // The offload store's names (the history file's) come from the seed; 0 by default.
    assert_eq!(stdout(&["--seed", "0"]), own);
    assert_ne!(stdout(&["--seed", "3"]), own);
    for flag in [["--config", "engine.toml"], ["--agent-model", "gpt-4o"]] {
        ctxbench()
            .args(["replay", "--fixture"])
            .arg(&d)
            .args(flag)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--fixture").and(predicate::str::contains(flag[0])));
    }
}

/// A trace id longer than a line is shortened around a `…` in the timeline's first line, which
/// keeps to 100 columns with its preset and counter (a 400-character id made it 441 columns).
#[test]
fn a_long_trace_id_is_shortened_in_the_timeline_header() {
    let dir = tempfile::tempdir().unwrap();
    let id = format!("trace-{}-end", "L".repeat(400));
    let trace = dir.path().join("long.jsonl");
    std::fs::write(
        &trace,
        format!(
            "{{\"type\":\"header\",\"schema_version\":1,\"meta\":{{\"id\":\"{id}\",\
             \"source_format\":\"canonical\"}}}}\n\
             {{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}}\n\
             {{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"hello\"}}\n"
        ),
    )
    .unwrap();
    for extra in [None, Some("--compare-recorded")] {
        let mut c = ctxbench();
        c.arg("replay").arg(&trace);
        c.args(extra);
        let out = c.assert().success().get_output().stdout.clone();
        let text = String::from_utf8(out).unwrap();
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "{line}\n{text}");
        }
        let head = text.lines().next().unwrap();
        assert!(
            head.starts_with("trace trace-LLL")
                && head.contains('…')
                && head.ends_with("LLL-end  preset deepagents  counter approx"),
            "{head}"
        );
    }
}

/// A configuration error names the flag its key came from: the `--set` argument (it said
/// `engine config`, as if a file held the typo), `--window`, `--preset`; a key a `--config`
/// file wrote is still that file's.
#[test]
fn a_config_error_names_the_flag_that_gave_its_key() {
    let trace = fixture_dir("synthetic-s7").join("trace.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("engine.toml");
    std::fs::write(&cfg, "[summarize]\ntrigger = { fractoin = 0.5 }\n").unwrap();
    let cfg = cfg.display().to_string();
    let fixture = fixture_dir("synthetic-s7").display().to_string();
    for (args, starts) in [
        (
            vec![
                trace.to_str().unwrap(),
                "--set",
                "summarize.trigger.fractoin=0.5",
            ],
            "error: --set summarize.trigger.fractoin=0.5: `summarize.trigger`: unknown field \
             `fractoin`"
                .to_string(),
        ),
        (
            vec![
                "--fixture",
                &fixture,
                "--set",
                "summarize.trigger.fractoin=0.5",
            ],
            "error: --set summarize.trigger.fractoin=0.5: `summarize.trigger`".to_string(),
        ),
        (
            vec![trace.to_str().unwrap(), "--window", "0"],
            "error: --window 0: `window`: must be > 0".to_string(),
        ),
        (
            vec![
                trace.to_str().unwrap(),
                "--window",
                "10",
                "--set",
                "window=0",
            ],
            "error: --set window=0: `window`: must be > 0".to_string(),
        ),
        (
            vec![trace.to_str().unwrap(), "--preset", "nope"],
            "error: --preset nope: `preset`: unknown preset \"nope\"".to_string(),
        ),
        (
            vec![
                trace.to_str().unwrap(),
                "--config",
                &cfg,
                "--set",
                "window=9000",
            ],
            format!("error: {cfg}: `summarize.trigger`: unknown field `fractoin`"),
        ),
    ] {
        let out = ctxbench()
            .arg("replay")
            .args(&args)
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let stderr = String::from_utf8(out).unwrap();
        assert!(stderr.starts_with(&starts), "{args:?}: {stderr}");
    }
}
