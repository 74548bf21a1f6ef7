//! Same seed and inputs → byte-identical per-sample results, whatever the thread count: a suite
//! with every eval (needle, drift, probes, invariants, replay) run end to end through the binary
//! with one worker and with several, and the journals compared sample by sample.

use crate::support;

use assert_cmd::Command;
use std::path::Path;

fn suite(dir: &Path) -> std::path::PathBuf {
    support::suite::base_and_aggressive("determinism")
        .no_output_dir()
        .seed(11)
        .mini_swe(&["astropy__astropy-12907.traj.json"])
        .dataset("claude-code/coverage-test-fix.jsonl")
        .deepagents(20000)
        .eval("replay", "enabled = true")
        .eval(
            "needle",
            "depths = [0.3, 0.6]\npositions = [\"tool\", \"assistant\"]\ndistractors = 1",
        )
        .eval("drift", "after_compactions = 2")
        .eval("probes", "")
        .eval("invariants", "")
        .write(dir, "suite.toml")
}

/// The samples of a run, sorted by unit id, with wall-clock latency removed (the only field
/// that is a measurement of the machine rather than a result).
fn samples(run: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(run.join("samples.jsonl")).unwrap();
    let mut out: Vec<serde_json::Value> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["latency_ms"] = 0.into();
            v
        })
        .collect();
    out.sort_by(|a, b| a["unit_id"].as_str().cmp(&b["unit_id"].as_str()));
    out
}

fn run(suite: &Path, out: &Path, id: &str, jobs: &str, threads: &str) -> Vec<serde_json::Value> {
    Command::cargo_bin("ctxbench")
        .unwrap()
        .env("RAYON_NUM_THREADS", threads)
        .args(["run", "--quiet", "--run-id", id, "--jobs", jobs, "--output"])
        .arg(out)
        .arg(suite)
        .assert()
        .success();
    samples(&out.join(id))
}

#[test]
fn per_sample_results_do_not_depend_on_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("reports");
    let one = run(&suite, &out, "one", "1", "1");
    let many = run(&suite, &out, "many", "4", "2");
    // 2 traces × 2 variants × (replay + invariants + 4 needle + 2 drift folds + 4 probes).
    assert_eq!(one.len(), 2 * 2 * 12);
    let errors: Vec<_> = one.iter().filter(|s| !s["error"].is_null()).collect();
    assert!(errors.is_empty(), "failed units: {errors:?}");
    for (a, b) in one.iter().zip(&many) {
        assert_eq!(
            serde_json::to_string(a).unwrap(),
            serde_json::to_string(b).unwrap(),
            "unit {} differs between 1 and several threads",
            a["unit_id"]
        );
    }
    // Every eval produced its headline score.
    for (eval, score) in [
        ("needle", "recall"),
        ("drift", "score"),
        ("invariants", "violations"),
        ("replay", "token_savings"),
    ] {
        assert!(
            one.iter()
                .any(|s| s["eval"] == eval && s["scores"][score].is_number()),
            "no {eval}.{score} in the run"
        );
    }
    assert!(one
        .iter()
        .any(|s| s["eval"] == "probes" && s["sample"] == "kind=recall"));
}
