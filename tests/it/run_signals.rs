//! `ctxbench run` under real signals: SIGTERM is handled like Ctrl-C (run.json, partial report,
//! exit 143); with a summarizer that never answers, one SIGINT stops the run within the grace
//! (in-flight calls cancelled) and a second SIGINT cancels at once, never panicking.

#![cfg(unix)]

use crate::support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::{bin, lines};
use crate::support::mock_llm::{MockLlm, Reply};

fn signal(child: &Child, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for `child` at most `limit`; kills it and fails if it is still running then.
fn wait_within(mut child: Child, limit: Duration) -> (Option<i32>, String, Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code(), err, start.elapsed());
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("the run did not stop within {limit:?}:\n{err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

/// Four real traces, two variants, replay + needle; `providers` is appended verbatim.
fn suite(dir: &Path, providers: &str) -> PathBuf {
    support::suite::harness("signals")
        .raw(providers)
        .write(dir, "suite.toml")
}

#[test]
fn sigterm_is_handled_like_ctrl_c_and_exits_143() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path(), "");
    let out = tmp.path().join("out");
    let child = std::process::Command::new(bin())
        .args(["run", suite.to_str().unwrap(), "--quiet", "--jobs", "2"])
        .args(["--executor", "synthetic:delay_ms=40", "--run-id", "term"])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let journal = out.join("term/samples.jsonl");
    let start = Instant::now();
    while lines(&journal) < 3 {
        assert!(start.elapsed() < Duration::from_secs(60), "no samples");
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&child, "-TERM");
    let (code, stderr, _) = wait_within(child, Duration::from_secs(30));
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        stderr.contains("SIGTERM") && stderr.contains("--resume"),
        "{stderr}"
    );
    let m = run_json(&out.join("term"));
    assert_eq!(m["status"], "interrupted");
    let recorded = m["units"]["recorded"].as_u64().unwrap();
    assert!((3..40).contains(&recorded), "recorded {recorded}");
    assert_eq!(
        recorded + m["units"]["not_run_interrupted"].as_u64().unwrap(),
        40
    );
    assert!(out.join("term/report.md").is_file(), "no partial report");
    assert!(out.join("term/results.csv").is_file());
}

/// A summarizer behind a server that reads every request and never answers, with a per-attempt
/// timeout far beyond the test: only cancellation can end its calls.
fn hung_run(tmp: &Path, server: &MockLlm, run_id: &str, grace: &str) -> (Child, PathBuf) {
    server.respond_with(|_| Reply::Hang);
    let providers = format!(
        r#"
[providers.summary]
kind = "openai"
model = "m-summary"
base_url = "{}"
timeout_secs = 3600
max_retries = 0
"#,
        server.openai_base_url()
    );
    let suite = suite(tmp, &providers);
    let child = std::process::Command::new(bin())
        .args(["run", suite.to_str().unwrap(), "--quiet", "--jobs", "4"])
        .args(["--run-id", run_id, "--grace-secs", grace, "--no-cache"])
        .current_dir(tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while server.request_count() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the summarizer was never called"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    (child, tmp.join("out").join(run_id))
}

#[test]
fn one_ctrl_c_stops_a_hung_run_within_the_grace() {
    let (_rt, server) = MockLlm::on_own_runtime(); // the runtime serves the mock
    let tmp = tempfile::tempdir().unwrap();
    let (child, dir) = hung_run(tmp.path(), &server, "hung", "1");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "-INT");
    // Grace 1 s, then cancel and write run.json and the partial report.
    let (code, stderr, took) = wait_within(child, Duration::from_secs(30));
    assert_eq!(code, Some(130), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Running units had their grace before they were cancelled.
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(15),
        "took {took:?}"
    );
    let m = run_json(&dir);
    assert_eq!(m["status"], "interrupted");
    let planned = m["units"]["planned"].as_u64().unwrap();
    assert_eq!(
        m["units"]["recorded"].as_u64().unwrap()
            + m["units"]["not_run_interrupted"].as_u64().unwrap(),
        planned
    );
    assert!(dir.join("report.md").is_file(), "no partial report");
}

#[test]
fn a_second_ctrl_c_cancels_at_once_and_never_panics() {
    let (_rt, server) = MockLlm::on_own_runtime(); // the runtime serves the mock
    let tmp = tempfile::tempdir().unwrap();
    // A grace far longer than the test: only the second Ctrl-C can end it in time.
    let (child, dir) = hung_run(tmp.path(), &server, "hung2", "600");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "-INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "-INT");
    let (code, stderr, _) = wait_within(child, Duration::from_secs(30));
    assert_eq!(code, Some(130), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(run_json(&dir)["status"], "interrupted");
}

#[test]
fn a_cancelled_unit_keeps_what_it_spent() {
    // The summarizer answers (billed), the needle agent never does: needle units that had
    // their summary and wait on their question are cancelled by the second Ctrl-C. What they
    // spent goes to samples.replaced.jsonl (kind `interrupted`) and the report says how much.
    let (_rt, server) = MockLlm::on_own_runtime();
    server.respond_with(|r| {
        if r.body.get("tools").is_some() {
            Reply::Hang
        } else {
            Reply::ok(support::mock_llm::openai_text(
                "Goal: fix the bug. Done so far: read the files, ran the tests.",
                20_000,
                500,
            ))
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let providers = format!(
        r#"
[providers.summary]
kind = "openai"
model = "gpt-5-mini"
base_url = "{0}"
timeout_secs = 3600
max_retries = 0

[providers.agent]
kind = "openai"
model = "gpt-5-mini"
base_url = "{0}"
timeout_secs = 3600
max_retries = 0
"#,
        server.openai_base_url()
    );
    let suite = suite(tmp.path(), &providers);
    let child = std::process::Command::new(bin())
        .args(["run", suite.to_str().unwrap(), "--jobs", "4"])
        .args(["--run-id", "spent", "--grace-secs", "600", "--no-cache"])
        .current_dir(tmp.path())
        .stdout(std::fs::File::create(tmp.path().join("stdout")).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while server.request_count() < 6 {
        assert!(start.elapsed() < Duration::from_secs(120), "too few calls");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, "-INT");
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, "-INT");
    let (code, stderr, _) = wait_within(child, Duration::from_secs(30));
    assert_eq!(code, Some(130), "{stderr}");
    let dir = tmp.path().join("out").join("spent");
    let text = std::fs::read_to_string(dir.join("samples.replaced.jsonl"))
        .unwrap_or_else(|e| panic!("samples.replaced.jsonl: {e}\n{stderr}"));
    let cancelled: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!cancelled.is_empty());
    let mut usd = 0.0;
    for s in &cancelled {
        assert_eq!(s["error"]["kind"], "interrupted", "{s}");
        assert!(
            s["tokens"]["summarizer"]["input"].as_u64() >= Some(20_000),
            "{s}"
        );
        usd += s["cost_usd"]["summarizer"].as_f64().unwrap();
    }
    assert!(usd > 0.0);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let note = format!(
        "{} unit(s) cancelled while running had spent {}",
        cancelled.len(),
        ctxbench::metrics::cost::format_usd(Some(usd))
    );
    assert!(md.replace('\\', "").contains(&note), "{note}\n{md}");
    // The end of the run says it too.
    let stdout = std::fs::read_to_string(tmp.path().join("stdout")).unwrap();
    assert!(stdout.contains(&note), "{stdout}");
}
