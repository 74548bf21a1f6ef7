//! A needle sweep gives byte-identical results whether the units of a trace × variant fork the
//! replay of the part before their planting point from one shared walk of the trace or each
//! replay their trace whole (`CTXBENCH_SHARE_PREFIXES=0`): samples (latency aside), summaries
//! the report and every offload store, file by file.

use crate::support;

use assert_cmd::Command;
use std::path::Path;

fn suite(dir: &Path) -> std::path::PathBuf {
    support::suite::base_and_aggressive("prefix-sharing")
        .no_output_dir()
        .seed(5)
        .mini_swe(&[
            "astropy__astropy-12907.traj.json",
            "psf__requests-1142.traj.json",
        ])
        .deepagents(20000)
        .eval(
            "needle",
            "depths = [0.1, 0.3, 0.5, 0.7, 0.9]\npositions = [\"tool\", \"user\"]\nmax_steps = 4",
        )
        .write(dir, "suite.toml")
}

/// The samples of a run in plan order, latency removed.
fn samples(run: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run.join("samples.jsonl")).unwrap();
    let mut out: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["latency_ms"] = 0.into();
            (v["unit_id"].as_str().unwrap().to_string(), v.to_string())
        })
        .collect();
    out.sort();
    out.into_iter().map(|(_, s)| s).collect()
}

/// Every file under `dir` but the run's own records (which hold times), with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                if rel == "stores" || rel.starts_with("stores/") || rel.starts_with("summaries") {
                    stack.push(p);
                }
            } else if rel.starts_with("stores/") || rel.starts_with("summaries/") {
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The report's text without its line of creation time.
fn report(run: &Path) -> String {
    let text = std::fs::read_to_string(run.join("report.md")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with("Created "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Run the suite into `out/run` with sharing set to `share`: the samples and stderr.
fn run(suite: &Path, out: &Path, share: &str) -> (Vec<String>, String) {
    let assert = Command::cargo_bin("ctxbench")
        .unwrap()
        .env("CTXBENCH_SHARE_PREFIXES", share)
        .args([
            "run",
            "--quiet",
            "--keep-stores",
            "--run-id",
            "run",
            "--output",
        ])
        .arg(out)
        .arg(suite)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    (samples(&out.join("run")), stderr)
}

#[test]
fn shared_and_unshared_prefixes_give_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let (a, b) = (dir.path().join("shared"), dir.path().join("whole"));
    let (shared, log) = run(&suite, &a, "log");
    assert!(
        log.contains("prefix sharing: a replay was forked"),
        "no replay was forked: {log}"
    );
    let (whole, log) = run(&suite, &b, "0");
    assert!(!log.contains("prefix sharing"), "{log}");
    // 2 traces × 2 variants × (10 needle samples + the replay eval).
    assert_eq!(shared.len(), 44);
    assert_eq!(shared.len(), whole.len());
    let failed = shared.iter().filter(|s| s.contains("\"error\":{")).count();
    assert_eq!(failed, 0, "failed units");
    for (a, b) in shared.iter().zip(&whole) {
        assert_eq!(a, b, "a sample differs between shared and whole replays");
    }
    assert_eq!(report(&a.join("run")), report(&b.join("run")));
    let (fa, fb) = (files(&a.join("run")), files(&b.join("run")));
    assert!(
        fa.iter().any(|(p, _)| p.contains("session_")),
        "no history file kept"
    );
    assert_eq!(fa.len(), fb.len());
    for (a, b) in fa.iter().zip(&fb) {
        assert_eq!(a.0, b.0);
        assert!(a.1 == b.1, "{} differs", a.0);
    }
}
