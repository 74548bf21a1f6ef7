//! External engines (issue 28 §1): a compactor the team never saw, written in Python and
//! speaking only the protocol of `docs/engines.md` (`tests/data/engines/keep_last.py`), runs
//! through `replay --config` and as a suite variant beside deepagents; engines that exit at
//! once, write garbage, hang or send orphan tool results give clean errors naming them.

use crate::support::cli::ctxbench;
use crate::support::traces::golden as fixture_dir;
use ctxbench::engine::{self, EngineConfig, KeepViews, OfflineSummarizer, ReplayEnv};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn engines_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/engines")
}

/// Copy the test engines next to a config in `dir`, so relative paths are exercised.
fn with_engines(dir: &Path) {
    for f in ["keep_last.py", "broken.py", "offload.py"] {
        std::fs::copy(engines_dir().join(f), dir.join(f)).unwrap();
    }
}

fn django() -> PathBuf {
    fixture_dir("mini-swe-django-11138").join("trace.jsonl")
}

/// `ctxbench replay <django> --config <dir>/<name>.toml --json` with `config` written there,
/// exiting with `code` (1: a replay with violated invariants): the replay's JSON object.
fn replay_json(dir: &Path, name: &str, config: &str, code: i32) -> Value {
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, config).unwrap();
    let out = ctxbench()
        .arg("replay")
        .arg(django())
        .arg("--config")
        .arg(&cfg)
        .arg("--json")
        .assert()
        .code(code)
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    if v.is_array() {
        v[0].clone()
    } else {
        v
    }
}

/// The django trace and the engine configured by `toml` (written to `dir/name`, beside the
/// test engines), resolved for it.
fn engine_on_django(
    dir: &Path,
    name: &str,
    toml: &str,
) -> (ctxbench::trace::Trace, ctxbench::engine::ResolvedConfig) {
    with_engines(dir);
    let cfg_path = dir.join(name);
    std::fs::write(&cfg_path, toml).unwrap();
    let cfg = EngineConfig::from_toml_str(toml, &cfg_path.display().to_string()).unwrap();
    let trace = ctxbench::trace::import::import_file(&django(), None)
        .unwrap()
        .remove(0);
    let resolved = cfg.resolve(trace.meta.window).unwrap();
    (trace, resolved)
}

/// The django trace and `keep_last.py` (keep 8, trigger 6000, window 30000, `more` added to its
/// config) resolved as an engine in `dir`, which logs every view it returns to the path given.
fn keep_last_on_django(
    dir: &Path,
    more: &str,
) -> (
    ctxbench::trace::Trace,
    ctxbench::engine::ResolvedConfig,
    PathBuf,
) {
    let log = dir.join("views.jsonl");
    let (trace, resolved) = engine_on_django(
        dir,
        "engine.toml",
        &format!(
            "window = 30000\nexternal.command = [\"python3\", \"keep_last.py\"]\nexternal.config = {{ keep = 8, trigger = 6000{more} }}\nexternal.env = {{ KEEP_LAST_LOG = {:?} }}\n",
            log.display().to_string()
        ),
    );
    (trace, resolved, log)
}

/// The views `keep_last.py` logged (one JSON line each).
fn logged_views(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_replayed_call_sends_exactly_the_view_the_engine_returned() {
    let tmp = tempfile::tempdir().unwrap();
    let (trace, resolved, log) = keep_last_on_django(tmp.path(), "");
    assert_eq!(resolved.preset, "external");
    assert!(resolved.layers.is_empty());
    let summarizer = OfflineSummarizer;
    let mut env = ReplayEnv::new(&summarizer);
    env.keep_views = KeepViews::All;
    let counter = resolved.make_counter().unwrap();
    // Twice: the second replay reuses the pooled process (`begin` resets it).
    for round in 0..2 {
        std::fs::remove_file(&log).ok();
        let r = engine::replay(&trace, &resolved, &env).unwrap();
        let sent = logged_views(&log);
        assert_eq!(r.calls.len(), 115, "round {round}");
        assert_eq!(sent.len(), r.calls.len(), "round {round}");
        assert_eq!(r.views.len(), r.calls.len());
        for ((view, call), returned) in r.views.iter().zip(&r.calls).zip(&sent) {
            assert_eq!(
                returned["index"].as_u64().unwrap() as usize,
                call.trace_index
            );
            let returned: Vec<ctxbench::trace::Message> =
                serde_json::from_value(returned["messages"].clone()).unwrap();
            assert_eq!(view.messages, returned, "call {}", call.trace_index);
            // Counted by ctxbench's counter.
            let tokens: u64 = returned.iter().map(|m| counter.count_message(m)).sum();
            assert_eq!(call.input_tokens, r.overhead_tokens + tokens);
        }
        // It compacted, asked ctxbench for its summaries, and every invariant holds.
        let summaries = r.event_counts().get("summarized").copied().unwrap_or(0);
        assert!(summaries >= 5, "{:?}", r.event_counts());
        assert_eq!(r.summarizer_calls, summaries);
        assert!(r.summarizer_usage.input > 0);
        assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
        // The summarized history landed in the offload store.
        let ev = r.events.iter().find(|e| e.kind() == "summarized").unwrap();
        assert_eq!(ev.writes.len(), 1);
        assert!(r.store.contents(&ev.writes[0].path).is_some());
        // Views map onto the trace: a summary, then a range of trace messages.
        let compacted = r
            .calls
            .iter()
            .find(|c| c.trace_index > ev.trace_index)
            .unwrap();
        let spans = serde_json::to_value(&compacted.sent_view).unwrap();
        assert_eq!(spans[0], "summary", "{spans}");
        assert!(spans[1].is_array(), "{spans}");
    }
}

#[test]
fn replay_config_runs_an_external_engine_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let r = replay_json(
        tmp.path(),
        "engine",
        "window = 30000\nexternal.command = [\"python3\", \"keep_last.py\"]\nexternal.config = { keep = 8, trigger = 6000 }\n",
        0,
    );
    assert_eq!(r["preset"], "external");
    let events = r["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e["kind"] == "summarized"));
    assert!(events.iter().all(|e| e["layer"] == "external"));
    assert!(r["invariants"]["violations"].as_array().unwrap().is_empty());
}

/// `(mode, what the error must say)` for the misbehaving engines of `broken.py`.
/// (The hang gets a short timeout; the others a long one, so a slow Python start on a busy
/// machine is not mistaken for a hang.)
const BROKEN: [(&str, &str, f64); 3] = [
    ("exit", "cannot load my model weights", 30.0),
    ("garbage", "line: this is not json", 30.0),
    ("hang", "no answer within 1.0 s", 1.0),
];

#[test]
fn engines_that_exit_write_garbage_or_hang_are_clean_errors_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    for (mode, says, timeout) in BROKEN {
        let cfg = tmp.path().join(format!("{mode}.toml"));
        std::fs::write(
            &cfg,
            format!("window = 30000\nexternal.command = [\"python3\", \"broken.py\", \"{mode}\"]\nexternal.timeout_secs = {timeout}\n"),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let out = ctxbench()
            .arg("replay")
            .arg(django())
            .arg("--config")
            .arg(&cfg)
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .failure()
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{mode}: {err}");
        let named = format!(
            "`python3 {} {mode}`",
            tmp.path().join("broken.py").display()
        );
        assert!(err.contains(&named), "{mode}: {err}");
        assert!(err.contains(says), "{mode}: {err}");
        assert!(err.contains("stderr"), "{mode}: {err}");
        assert!(
            started.elapsed().as_secs() < 50,
            "{mode} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn an_orphan_tool_result_in_an_external_view_is_a_reported_violation() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    // A replay with violated invariants exits 1.
    let r = replay_json(
        tmp.path(),
        "orphan",
        "window = 30000\nexternal.command = [\"python3\", \"broken.py\", \"orphan\"]\n",
        1,
    );
    let violations = r["invariants"]["violations"].as_array().unwrap();
    assert!(!violations.is_empty());
    assert!(violations
        .iter()
        .all(|x| x["rule"] == "tool_pairing" && x["message"].as_str().unwrap().contains("orphan")));
}

#[test]
fn an_external_variant_runs_beside_deepagents_in_a_suite_with_needle_recall_and_unit_errors() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini-swe-agent");
    let suite = crate::support::suite::SuiteBuilder::new("external")
        .suite_line("concurrency = 2")
        .trace(datasets.join("astropy__astropy-12907.traj.json"))
        .trace(datasets.join("psf__requests-1142.traj.json"))
        .baseline("deepagents")
        .base("preset = \"deepagents\"\nwindow = 20000\nsummarize.trigger.fraction = 0.5")
        .variant("deepagents", "")
        .variant(
            "keep-last",
            "external.command = [\"python3\", \"keep_last.py\"]\nexternal.config = { keep = 8, trigger = 5000 }",
        )
        .variant("garbage", "external.command = [\"python3\", \"broken.py\", \"garbage\"]")
        .eval("needle", "depths = [0.2, 0.8]\npositions = [\"tool\"]\nneedles = 1\nmax_steps = 8")
        .eval("invariants", "")
        .table("providers.agent", "kind = \"offline\"")
        .table("providers.summary", "kind = \"offline\"")
        .write(tmp.path(), "suite.toml");
    ctxbench()
        .args(["run"])
        .arg(&suite)
        .args(["--run-id", "ext", "-o"])
        .arg(tmp.path().join("out"))
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .success();
    let run = tmp.path().join("out/ext");
    let samples: Vec<Value> = std::fs::read_to_string(run.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |variant: &str| -> Vec<&Value> {
        samples.iter().filter(|s| s["variant"] == variant).collect()
    };
    // The same units for every variant (2 traces × needle samples, invariants, replay).
    let units = of("deepagents").len();
    assert!(units >= 6, "{units}");
    for v in ["keep-last", "garbage"] {
        assert_eq!(of(v).len(), units, "{v}");
    }
    // The external engine's units ran: needle recall and invariants are in the report.
    let summary = crate::support::cli::json(&run.join("summary.json"));
    let variants = summary["summary"]["variants"].as_array().unwrap();
    let keep_last = variants
        .iter()
        .find(|v| v["variant"] == "keep-last")
        .unwrap();
    assert_eq!(keep_last["errors"], 0);
    let recall = keep_last["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "needle.recall")
        .unwrap();
    assert_eq!(recall["n"], 4);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("keep-last"));
    // Every unit of the broken engine is an error of that unit, naming it and its line.
    let garbage = variants.iter().find(|v| v["variant"] == "garbage").unwrap();
    assert_eq!(garbage["errors"].as_u64(), Some(units as u64));
    for s in of("garbage") {
        let message = s["error"]["message"].as_str().unwrap();
        assert!(message.contains("broken.py garbage"), "{message}");
        assert!(message.contains("this is not json"), "{message}");
    }
}

#[test]
fn the_engine_protocol_schema_describes_both_directions() {
    let out = ctxbench()
        .args(["schema", "engine-protocol"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for shape in [
        "begin",
        "message",
        "call",
        "end",
        "summary",
        "view",
        "summarize",
    ] {
        assert!(text.contains(&format!("\"{shape}\"")), "{shape} missing");
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["properties"]["to_engine"].is_object());
    assert!(v["properties"]["from_engine"].is_object());
    // Protocol 2: `call` sends a `seq` that the `view` and every `summarize` must carry back.
    for (side, kind) in [
        ("ToEngine", "call"),
        ("FromEngine", "view"),
        ("FromEngine", "summarize"),
    ] {
        let shape = v["$defs"][side]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["properties"]["type"]["const"] == kind)
            .unwrap();
        let required: Vec<&str> = shape["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert!(required.contains(&"seq"), "{kind}: {required:?}");
    }
}

#[test]
fn the_forty_line_example_of_the_docs_runs_as_written() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/engines.md"))
            .unwrap();
    let start = doc.find("```python\n").expect("a python block") + "```python\n".len();
    let code = &doc[start..start + doc[start..].find("```").unwrap()];
    assert!(code.lines().count() <= 40, "{} lines", code.lines().count());
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("example.py"), code).unwrap();
    let r = replay_json(
        tmp.path(),
        "engine",
        "window = 30000\nexternal.command = [\"python3\", \"example.py\"]\nexternal.config = { keep = 8, trigger = 6000 }\n",
        0,
    );
    let summarized = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "summarized")
        .count();
    assert!(summarized >= 5, "{summarized}");
    assert_eq!(r["summarizer_calls"].as_u64(), Some(summarized as u64));
    assert!(r["invariants"]["violations"].as_array().unwrap().is_empty());
}

/// `ctxbench replay <django> --config` with `broken.py <args>` as the engine: its stderr,
/// after checking it failed without a panic and named the engine.
fn replay_fails(dir: &Path, args: &str) -> String {
    replay_fails_within(dir, args, 30)
}

/// [`replay_fails`] with the engine's `timeout_secs`.
fn replay_fails_within(dir: &Path, args: &str, timeout_secs: u32) -> String {
    let cfg = dir.join("fails.toml");
    let argv: Vec<String> = args.split(' ').map(|a| format!("{a:?}")).collect();
    std::fs::write(
        &cfg,
        format!(
            "window = 30000\nexternal.command = [\"python3\", \"broken.py\", {}]\nexternal.timeout_secs = {timeout_secs}\n",
            argv.join(", ")
        ),
    )
    .unwrap();
    let out = ctxbench()
        .arg("replay")
        .arg(django())
        .arg("--config")
        .arg(&cfg)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!err.contains("panicked"), "{args}: {err}");
    assert!(err.contains("broken.py"), "{args}: {err}");
    err
}

#[test]
fn an_engine_that_answers_a_call_with_more_than_one_view_is_a_protocol_error() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    // Every call: the first call's second view, found while waiting for the second call's.
    let err = replay_fails(tmp.path(), "two_views");
    assert!(
        err.contains("answered call 1 (message 2) with more than one line (a `view` after its view, found while ctxbench waited for the view of call 2 (message 4))"),
        "{err}"
    );
    assert!(err.contains("one `view` answers each `call`"), "{err}");
    // Only the last call (the django trace has 115): found at the end of the replay.
    let err = replay_fails(tmp.path(), "extra_after 115");
    assert!(
        err.contains("answered call 115 (message ") && err.contains("at the end of the replay"),
        "{err}"
    );
}

/// An extra `view` is matched to its call by its `seq`: the error names the call that wrote it,
/// found while ctxbench waited for the next call's view, every time. Without `seq` the check
/// looked for stray lines before sending the next call, without waiting: a line still in flight
/// was taken as the next call's view (each later call took the previous call's) and the error
/// blamed whichever call the race ended at (`extra_late`, whose extra line comes when the next
/// call arrives, was never blamed on call 3).
#[test]
fn an_extra_view_is_blamed_on_the_call_that_wrote_it_every_time() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    for mode in ["extra_after 3", "extra_late 3"] {
        let errors: Vec<String> = (0..5)
            .map(|_| {
                let err = replay_fails(tmp.path(), mode);
                err.lines().next().unwrap_or_default().to_string()
            })
            .collect();
        assert!(
            errors[0].contains(
                "answered call 3 (message 6) with more than one line (a `view` after its view, \
                 found while ctxbench waited for the view of call 4 (message 8)): one `view` \
                 answers each `call`"
            ),
            "{mode}: {}",
            errors[0]
        );
        assert!(
            errors.iter().all(|e| *e == errors[0]),
            "{mode}: {errors:#?}"
        );
    }
}

/// A line of an earlier replay, written after its end's wait (`stale_after_end`: when the next
/// replay's first call arrives), is never taken for a view: recognised by its `seq`, it is
/// skipped, and every call of the new replay gets its own view (without `seq`, the new replay's
/// first call took the earlier replay's last view).
#[test]
fn a_line_of_an_earlier_replay_is_never_taken_for_a_view() {
    let tmp = tempfile::tempdir().unwrap();
    let (trace, resolved) = engine_on_django(tmp.path(), "stale.toml", "window = 30000\nexternal.command = [\"python3\", \"broken.py\", \"stale_after_end\"]\nexternal.timeout_secs = 30\n");
    let summarizer = OfflineSummarizer;
    let mut env = ReplayEnv::new(&summarizer);
    env.keep_views = KeepViews::All;
    // The first replay leaves the stale line for the second, which takes the pooled process.
    for round in 0..2 {
        let r = engine::replay(&trace, &resolved, &env)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(r.calls.len(), 115, "round {round}");
        for (view, call) in r.views.iter().zip(&r.calls) {
            // `broken.py` answers every call with the messages sent so far.
            let sent: Vec<&ctxbench::trace::Message> = view.messages.iter().collect();
            let expected: Vec<&ctxbench::trace::Message> =
                trace.messages[..call.trace_index].iter().collect();
            assert!(
                sent == expected,
                "round {round}: call at message {} took a view of {} messages",
                call.trace_index,
                sent.len()
            );
        }
    }
}

/// An engine written for protocol 1 (no `seq`) fails at its first view, saying what to add.
#[test]
fn a_protocol_1_engine_is_told_to_echo_seq() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let err = replay_fails(tmp.path(), "no_seq");
    assert!(
        err.contains(
            "wrote a `view` without `seq` while ctxbench waited for the view of call 1 (message 2): \
             protocol 2 requires every `view` and `summarize` to carry the `seq` of the `call` it \
             answers"
        ),
        "{err}"
    );
}

#[test]
fn external_engine_errors_number_calls_from_one_with_the_message_index_beside() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let err = replay_fails(tmp.path(), "crash_at 3");
    assert!(
        err.contains("waited for the view of call 3 (message "),
        "{err}"
    );
    assert!(err.contains("crashed at this call"), "{err}");
    // An event after the call, and a file outside the store: protocol errors naming the call.
    let err = replay_fails(tmp.path(), "event_future");
    assert!(
        err.contains("view of call 1 (message ") && err.contains("`trace_index` 99999"),
        "{err}"
    );
    let err = replay_fails(tmp.path(), "traversal");
    assert!(
        err.contains("a file of its view of call 1 (message ") && err.contains("escape.txt"),
        "{err}"
    );
}

/// `external.timeout_secs = 1e30` panicked (exit 101, a backtrace) when the engine started,
/// and `inf`/`nan` passed silently: each is refused when the file is read, exit 2, naming the
/// file, line and key with the accepted range.
#[test]
fn an_external_timeout_past_a_day_is_refused_with_its_line_and_range() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    for (value, got) in [("1e30", "got 1e30"), ("inf", "got inf"), ("nan", "got NaN")] {
        let cfg = tmp.path().join("kv.toml");
        std::fs::write(
            &cfg,
            format!("window = 20000\nexternal.command = [\"python3\", \"keep_last.py\"]\nexternal.timeout_secs = {value}\n"),
        )
        .unwrap();
        let out = ctxbench()
            .arg("replay")
            .arg(django())
            .arg("--config")
            .arg(&cfg)
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{value}: {err}");
        let said = format!(
            "{}:3: `external.timeout_secs`: expected seconds > 0 and at most 86400 (one day), {got}",
            cfg.display()
        );
        assert!(err.contains(&said), "{value}: {err}");
    }
}

#[test]
fn a_missing_engine_program_is_named_once() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("missing.toml");
    std::fs::write(
        &cfg,
        "window = 30000\nexternal.command = [\"no-such-engine-program-xyz\"]\n",
    )
    .unwrap();
    let out = ctxbench()
        .arg("replay")
        .arg(django())
        .arg("--config")
        .arg(&cfg)
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`no-such-engine-program-xyz` could not be started"),
        "{err}"
    );
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn views_without_the_newest_message_are_violations_and_larger_ones_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let rules = |r: &Value| -> Vec<String> {
        r["invariants"]["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["rule"].as_str().unwrap().to_string())
            .collect()
    };
    let r = replay_json(
        tmp.path(),
        "empty",
        "window = 30000\nexternal.command = [\"python3\", \"broken.py\", \"empty\"]\n",
        1,
    );
    let empty = rules(&r);
    assert!(empty.iter().all(|r| r == "keeps_newest"), "{empty:?}");
    assert_eq!(empty.len(), 115, "one per call");
    let r = replay_json(
        tmp.path(),
        "duplicate",
        "window = 300000\nexternal.command = [\"python3\", \"broken.py\", \"duplicate\"]\n",
        1,
    );
    let dup = rules(&r);
    // Larger than the input at every call: flagged (built-in summaries can be, briefly).
    assert_eq!(r["invariants"]["flagged_calls"], 115, "{}", r["invariants"]);
    assert_eq!(r["invariants"]["first_flag"]["rule"], "larger_than_input");
    let twice = r["invariants"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| {
            v["rule"] == "tool_pairing"
                && v["message"]
                    .as_str()
                    .unwrap()
                    .contains("more than one tool result")
        });
    assert!(twice, "{dup:?}");
}

/// A compactor whose every view is larger than the call without compression (`broken.py
/// bigger`, the auditor's `weird.py bigger`) was flagged only by `ctxbench replay`: in a run,
/// `invariants.pass` read 1.000 and nothing said it. Now every unit of the variant carries
/// `flagged_calls` (its `invariants.flagged_calls`, `replay.flagged_calls`), is `flagged` in
/// results.csv and report.html, and the terminal, report.md and summary.json say so in a
/// `FLAGGED:` note of the variant; the baseline, which never is, carries 0 and no flag.
#[test]
fn an_engine_whose_views_are_larger_than_no_compression_flags_its_units_in_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini-swe-agent");
    let suite = crate::support::suite::SuiteBuilder::new("extbig")
        .trace(datasets.join("psf__requests-1142.traj.json"))
        .baseline("base")
        .base("preset = \"deepagents\"\nwindow = 2000000")
        .variant("base", "")
        .variant(
            "bigger",
            "external.command = [\"python3\", \"broken.py\", \"bigger\"]",
        )
        .eval("invariants", "")
        .table("providers.agent", "kind = \"offline\"")
        .table("providers.summary", "kind = \"offline\"")
        .write(tmp.path(), "suite.toml");
    let out = ctxbench()
        .args(["run"])
        .arg(&suite)
        .args(["--run-id", "extbig", "-o"])
        .arg(tmp.path().join("out"))
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .success()
        .get_output()
        .clone();
    let terminal = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let note = "FLAGGED: variant `bigger`: 2 unit(s) on 1 trace(s) had 142 model call(s) whose \
                request was larger than the same call without compression";
    // The terminal wraps its notes: compare with the line breaks undone.
    assert!(
        terminal
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains(note),
        "{terminal}"
    );
    let run = tmp.path().join("out/extbig");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.replace('\\', "").contains(note), "{report}");
    let summary = crate::support::cli::json(&run.join("summary.json"));
    let notes = summary["summary"]["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().starts_with(note)),
        "{notes:?}"
    );
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.as_str().unwrap().contains("FLAGGED"))
            .count(),
        1
    );
    // Every unit of `bigger` (its replay and invariants units) carries the count and is flagged;
    // the baseline's carry 0.
    let samples: Vec<Value> = std::fs::read_to_string(run.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(samples.len(), 4);
    for s in &samples {
        let expected = if s["variant"] == "bigger" { 71.0 } else { 0.0 };
        assert_eq!(
            s["scores"]["flagged_calls"].as_f64(),
            Some(expected),
            "{}",
            s["scores"]
        );
        assert_eq!(
            s["evidence"]["flagged_calls"].as_f64(),
            Some(expected),
            "{}",
            s["evidence"]
        );
        if s["variant"] == "bigger" {
            let first = &s["evidence"]["first_flag"];
            assert_eq!(first["rule"], "larger_than_input", "{first}");
        }
    }
    let csv = std::fs::read_to_string(run.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (variant, status, flagged) = (
        col("variant"),
        col("status"),
        col("invariants.flagged_calls"),
    );
    let mut seen = 0;
    for line in lines {
        let row: Vec<&str> = line.split(',').collect();
        match row[variant] {
            "bigger" => {
                seen += 1;
                assert_eq!(row[status], "flagged", "{line}");
            }
            _ => assert_ne!(row[status], "flagged", "{line}"),
        }
        if row[col("eval")] == "invariants" {
            let want = if row[variant] == "bigger" {
                "71.0"
            } else {
                "0.0"
            };
            assert_eq!(row[flagged], want, "{line}");
        }
    }
    assert_eq!(seen, 2);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("flagged: 71 call(s) larger than without compression"),
        "report.html says why the units are flagged"
    );
}

/// An engine that stops reading its stdin (stuck before its loop, `deaf`) while ctxbench writes
/// a line longer than the pipe holds (a `begin` with a 200 kB system prompt; a large tool
/// result does the same) fails after `timeout_secs`, naming the line it did not take: the write
/// blocked forever, past any timeout, and `replay` (or a run's unit) never ended.
#[test]
fn an_engine_that_does_not_read_its_stdin_times_out_instead_of_blocking_ctxbench() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let cfg = tmp.path().join("deaf.toml");
    std::fs::write(
        &cfg,
        format!(
            "window = 200000\nsystem_prompt.text = \"{}\"\nexternal.command = [\"python3\", \"broken.py\", \"deaf\"]\nexternal.timeout_secs = 2\n",
            "lorem ipsum ".repeat(20_000)
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = ctxbench()
        .arg("replay")
        .arg(django())
        .arg("--config")
        .arg(&cfg)
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "broken.py deaf`: it did not take `begin` within 2.0 s (external.timeout_secs)"
        ),
        "{err}"
    );
    assert!(err.contains("waiting for a lock that never comes"), "{err}");
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
}

/// An engine that numbers the calls itself (reset by `begin`) instead of echoing `seq` passes
/// its first replay (the numbers agree) and fails the next one of the same process at once,
/// told to echo `seq`: its answer was skipped as a line of an earlier replay (with a warning
/// saying so) and the replay failed only after `timeout_secs` with "no answer".
#[test]
fn an_engine_counting_its_own_seq_is_told_so_at_its_second_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let (trace, resolved) = engine_on_django(tmp.path(), "own_seq.toml", "window = 30000\nexternal.command = [\"python3\", \"broken.py\", \"own_seq\"]\nexternal.timeout_secs = 5\n");
    let summarizer = OfflineSummarizer;
    let env = ReplayEnv::new(&summarizer);
    let first = engine::replay(&trace, &resolved, &env).expect("the first replay agrees");
    assert_eq!(first.calls.len(), 115);
    let started = std::time::Instant::now();
    let err = match engine::replay(&trace, &resolved, &env) {
        Ok(_) => panic!("the second replay took views with the wrong `seq`"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(
            "wrote a `view` with `seq` 1 while ctxbench waited for the view of call 1 (message 2) \
             (`seq` 116): 1 is this call's number within the replay, but `seq` numbers the calls \
             sent to the process over its life (`begin` does not reset it): echo the `seq` of \
             the `call` line"
        ),
        "{err}"
    );
    assert!(started.elapsed().as_secs() < 4, "{:?}", started.elapsed());
}

/// An engine that counts calls itself from 0 (Python's `enumerate`) answers `seq` 0 at the
/// first call of a fresh process: an error at once naming the cause. It was taken for a late
/// line of "an earlier replay" (there was none): a false warning that the process was replaced,
/// then "no answer within 3.0 s".
#[test]
fn an_engine_counting_its_own_seq_from_zero_is_told_so_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let started = std::time::Instant::now();
    let err = replay_fails_within(tmp.path(), "own_seq0", 3);
    assert!(
        err.contains(
            "wrote a `view` with `seq` 0 while ctxbench waited for the view of call 1 (message 2) \
             (`seq` 1): 0 is this call's number within the replay counted from 0, but `seq` \
             numbers the calls sent to the process over its life (`begin` does not reset it): \
             echo the `seq` of the `call` line"
        ),
        "{err}"
    );
    assert!(!err.contains("earlier replay"), "{err}");
    assert!(!err.contains("no answer within"), "{err}");
    assert!(started.elapsed().as_secs() < 3, "{:?}", started.elapsed());
    // A `seq` before the replay's first that is not a count of its calls, from a process that
    // had no earlier replay: a call never sent, said at once (it too was skipped as a line of an
    // earlier replay, with the warning, until the wait for the view timed out).
    let err = replay_fails_within(tmp.path(), "zero_at 4", 3);
    assert!(
        err.contains(
            "wrote a `view` with `seq` 0 while ctxbench waited for the view of call 4 (message 8) \
             (`seq` 4): ctxbench sent no such call (this process had no earlier replay, and the \
             calls of this one have `seq` 1 and up): echo the `seq` of the `call` line"
        ),
        "{err}"
    );
    assert!(!err.contains("earlier replay (one"), "{err}");
}

/// An eviction an external engine reports (`evicted` of an earlier tool result, in the view of
/// a later call: `tests/data/engines/offload.py`) is on the timeline once, at the call that
/// reported it, in `replay`'s table and in the run's timeline (`Replay::timeline`). Taken by
/// message order too, it was shown twice: first at the call right after the tool result, whose
/// view still held it whole.
#[test]
fn an_eviction_reported_by_an_external_engine_is_on_the_timeline_once_where_it_happened() {
    let tmp = tempfile::tempdir().unwrap();
    let (trace, resolved) = engine_on_django(tmp.path(), "offload.toml", "window = 30000\nexternal.command = [\"python3\", \"offload.py\"]\nexternal.config = { keep_results = 3, min_chars = 1500 }\n");
    let summarizer = OfflineSummarizer;
    let r = engine::replay(&trace, &resolved, &ReplayEnv::new(&summarizer)).unwrap();
    let evicted = r.events.iter().filter(|e| e.kind() == "evicted").count();
    assert!(evicted >= 3, "{evicted} evictions");
    let timeline = r.timeline();
    for (k, (point, call)) in timeline.iter().zip(&r.calls).enumerate() {
        let reported = call
            .events
            .iter()
            .filter(|&&e| r.events[e].kind() == "evicted")
            .count();
        let shown = point.events.iter().filter(|e| *e == "evicted").count();
        assert_eq!(shown, reported, "call {}: {:?}", k + 1, point.details);
    }
    // The human timeline: each eviction once, plus the count below the table (`evicted: N`).
    let out = ctxbench()
        .arg("replay")
        .arg(django())
        .arg("--config")
        .arg(tmp.path().join("offload.toml"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains(&format!("  evicted: {evicted}\n")), "{text}");
    assert_eq!(text.matches("evicted").count(), evicted + 1, "{text}");
}

/// An engine that keeps the task (the trace's first message) before its summary, and says so
/// with `indexes` (`keep_last.py` with `pin_first`), replays: its pinned message and summary are
/// the head, the kept messages map onto the trace, and every call sends exactly its view. The
/// same view passed without `indexes` (as synthetic messages), but with them it was refused:
/// "`indexes[1]` … is null after a trace message: the engine's own messages come first".
#[test]
fn a_view_pinning_the_task_before_its_summary_replays_with_indexes() {
    let tmp = tempfile::tempdir().unwrap();
    let (trace, resolved, log) = keep_last_on_django(tmp.path(), ", pin_first = true");
    let summarizer = OfflineSummarizer;
    let mut env = ReplayEnv::new(&summarizer);
    env.keep_views = KeepViews::All;
    let r = engine::replay(&trace, &resolved, &env).unwrap_or_else(|e| panic!("{e}"));
    let sent = logged_views(&log);
    assert_eq!(r.calls.len(), 115);
    assert_eq!(sent.len(), 115);
    for (view, returned) in r.views.iter().zip(&sent) {
        let returned: Vec<ctxbench::trace::Message> =
            serde_json::from_value(returned["messages"].clone()).unwrap();
        assert_eq!(view.messages, returned);
        assert_eq!(view.messages[0], trace.messages[0], "the task stays first");
    }
    assert!(r.summarizer_calls >= 5, "{:?}", r.event_counts());
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    // After a summary: the pinned task and the summary, then a range of trace messages.
    let ev = r.events.iter().find(|e| e.kind() == "summarized").unwrap();
    let compacted = r
        .calls
        .iter()
        .find(|c| c.trace_index > ev.trace_index)
        .unwrap();
    let spans = serde_json::to_value(&compacted.sent_view).unwrap();
    assert_eq!(spans[1], "summary", "{spans}");
    assert!(spans[2].is_array(), "{spans}");
    assert_eq!(spans.as_array().unwrap().len(), 3, "{spans}");
}

/// A view whose `indexes` end with the engine's own message after the trace messages (a
/// reminder appended after the conversation: `[0, 1, …, n-1, null]`) is refused, naming the
/// index. It was taken as trace messages pinned before the engine's own: every trace message
/// went into the head, which changed at every call, so the replay counted no cached token
/// (0 on this trace, where the same view without the reminder has millions) and labelled
/// every message synthetic.
#[test]
fn a_view_ending_with_the_engines_own_message_after_the_trace_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let err = replay_fails(tmp.path(), "reminder");
    assert!(
        err.contains(
            "`indexes[2]` of the view of call 1 (message 2) is null after a trace message and no trace message follows"
        ),
        "{err}"
    );
}

/// A line that is not UTF-8 (a 1 MB view in Latin-1) is an error naming the call, with the line
/// clipped like every offending line: it did not say which call, and printed the whole line.
#[test]
fn a_line_that_is_not_utf8_names_the_call_and_is_clipped() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let err = replay_fails(tmp.path(), "latin1");
    assert!(
        err.contains(
            "wrote a line that is not UTF-8 while ctxbench waited for the view of call 1 (message 2)"
        ),
        "{err}"
    );
    assert!(err.contains("  line: {\"type\": \"view\""), "{err}");
    assert!(err.len() < 5_000, "{} bytes of error", err.len());
}

/// A `view` whose event (or message) does not read names the event, its kind and the fact
/// missing (it said "a line that is not a `view` or `summarize` object", of a view, with the
/// events clipped out of the line shown); a line that is not JSON (debug output) says that
/// stdout carries protocol lines only.
#[test]
fn a_view_that_does_not_read_names_the_part_and_debug_output_is_explained() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    let err = replay_fails(tmp.path(), "bad_event");
    assert!(
        err.contains(
            "wrote a `view` that does not read while ctxbench waited for the view of call 1 \
             (message 2): `events[0]` (`evicted`): missing field `tool` (each kind's facts: \
             docs/engines.md)"
        ),
        "{err}"
    );
    let err = replay_fails(tmp.path(), "garbage");
    assert!(
        err.contains(
            "while ctxbench waited for the view of call 1 (message 2): its stdout carries \
             protocol lines only, one JSON object per line (write logs to stderr)"
        ),
        "{err}"
    );
}

/// An engine that cannot be started says why, beyond "No such file or directory": a name
/// without `/` (a script beside the config, `broken.py`) is looked up on PATH only, a relative
/// path that is not beside the config is taken from the current directory (named), and a
/// script without execute permission needs its interpreter.
#[test]
fn an_engine_that_cannot_start_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    with_engines(tmp.path());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let p = tmp.path().join("broken.py");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let cases = [
        (
            "[\"broken.py\", \"exit\"]",
            "`broken.py` is not on PATH: a program named without a `/` is looked up there only; name a file beside the suite or config file `./broken.py`".to_string(),
        ),
        (
            "[\"engines/nope.py\"]",
            "`engines/nope.py` is neither beside the suite or config file nor under the current directory".to_string(),
        ),
        (
            "[\"./broken.py\", \"exit\"]",
            format!(
                "is not executable: `chmod +x` it, or name its interpreter first, e.g. [\"python3\", \"{}\"]",
                tmp.path().join("./broken.py").display()
            ),
        ),
    ];
    // A script whose `#!` line names an interpreter that does not exist: the system says
    // "not found" too (it said "neither beside the suite … nor under the current directory",
    // or "not on PATH", of a file that is there).
    let script = tmp.path().join("old_python.py");
    std::fs::write(&script, "#!/nonexistent/python2.4\nprint('hi')\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let shebang = format!(
        "`{}` exists but its interpreter `/nonexistent/python2.4`, named by its `#!` line, was not found: install it or fix the `#!` line",
        tmp.path().join("./old_python.py").display()
    );
    let cases = cases
        .into_iter()
        .chain([("[\"./old_python.py\"]", shebang)]);
    for (command, says) in cases {
        let cfg = tmp.path().join("start.toml");
        std::fs::write(
            &cfg,
            format!("window = 30000\nexternal.command = {command}\n"),
        )
        .unwrap();
        let out = ctxbench()
            .arg("replay")
            .arg(django())
            .arg("--config")
            .arg(&cfg)
            .assert()
            .failure()
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("could not be started ("), "{command}: {err}");
        assert!(err.contains(&says), "{command}: {err}");
    }
    // The same script named without `/`, found on PATH.
    let cfg = tmp.path().join("start.toml");
    std::fs::write(
        &cfg,
        "window = 30000\nexternal.command = [\"old_python.py\"]\n",
    )
    .unwrap();
    let path = std::env::join_paths(std::iter::once(tmp.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out = ctxbench()
        .env("PATH", path)
        .arg("replay")
        .arg(django())
        .arg("--config")
        .arg(&cfg)
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "(`old_python.py` exists on PATH ({}) but its interpreter `/nonexistent/python2.4`, named by its `#!` line, was not found",
            script.display()
        )),
        "{err}"
    );
}
