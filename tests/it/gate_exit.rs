//! `ctxbench gate` exit codes on synthetic runs written to disk: pass (0), significant
//! regression or threshold miss (10), insignificant change (0), bad rules and unrelated runs
//! (2); JUnit XML (never into the baseline), `--json` and the GitHub step summary.

use crate::support;

use crate::support::cli::ctxbench;
use assert_cmd::Command;
use ctxbench::record::Sample;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

/// The fixture with every needle recovered, except in the `lose` first needle units of the
/// aggressive variant. Each needle unit stands for its own trace here (independent pairs), so
/// the gate's test is McNemar's; units sharing a trace are resampled by trace instead.
fn run_losing(lose: usize) -> Vec<Sample> {
    let mut lost = 0;
    support::report::samples()
        .into_iter()
        .map(|mut s| {
            if s.eval == "needle" {
                s.trace_id = format!("{}#{}#{}", s.trace_id, s.sample, s.repeat);
            }
            if s.eval == "needle" && s.error.is_none() {
                let lose_this = s.variant == "aggressive" && lost < lose;
                lost += usize::from(lose_this);
                s.scores
                    .insert("recall".into(), if lose_this { 0.0 } else { 1.0 });
                s.passed = Some(!lose_this);
            }
            s
        })
        .collect()
}

/// `ctxbench gate CANDIDATE --baseline BASELINE`, more arguments to follow.
fn gate(candidate: &Path, baseline: &Path) -> Command {
    let mut c = ctxbench();
    c.arg("gate").arg(candidate).arg("--baseline").arg(baseline);
    c
}

fn write(dir: &Path, id: &str, samples: &[Sample]) -> PathBuf {
    let p = dir.join(id);
    support::report::write_run(&p, &support::report::info(id), samples);
    p
}

#[test]
fn unchanged_run_passes_with_the_suite_rules() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(0));
    gate(&cand, &base)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "pass  needle.recall.delta >= -0.05  [aggressive]",
        ))
        .stdout(predicate::str::contains("gate passed"));
    let xml = std::fs::read_to_string(cand.join("gate.xml")).unwrap();
    assert!(xml.contains("tests=\"4\" failures=\"0\""), "{xml}");
}

#[test]
fn significant_regression_fails_with_exit_10_junit_and_step_summary() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(8));
    let summary = dir.path().join("step-summary.md");
    std::fs::write(&summary, "previous step\n").unwrap();
    let junit = dir.path().join("out/junit.xml");
    std::fs::create_dir_all(junit.parent().unwrap()).unwrap();
    gate(&cand, &base)
        .arg("--junit")
        .arg(&junit)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .assert()
        .code(10)
        // 8 of 16 pairs lost: delta −0.5, beyond −0.05 by 0.45; McNemar exact p = 2/256.
        .stdout(predicate::str::contains(
            "FAIL  needle.recall.delta >= -0.05  [aggressive]  Δ needle.recall over 16 pair(s) = -0.500",
        ))
        .stdout(predicate::str::contains("p = 0.008"))
        .stdout(predicate::str::contains("by 0.450 and the regression is significant"))
        .stdout(predicate::str::contains("pass  needle.recall.delta >= -0.05  [baseline]"))
        .stdout(predicate::str::contains("gate FAILED"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("failures=\"1\""), "{xml}");
    assert!(xml.contains("<failure message="), "{xml}");
    assert!(xml.contains("type=\"regression\""), "{xml}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("previous step\n### ctxbench gate: FAILED"),
        "{md}"
    );
    assert!(
        md.contains("| **FAIL** | `needle.recall.delta >= -0.05` | aggressive |"),
        "{md}"
    );
}

#[test]
fn insignificant_change_beyond_the_threshold_passes() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    // 2 of 16 lost: delta −0.125 is beyond −0.05, but McNemar p = 0.5.
    let cand = write(dir.path(), "cand", &run_losing(2));
    gate(&cand, &base)
        .args(["--rule", "needle.recall.delta >= -0.05"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "by 0.075 but not significant (passes)",
        ));
}

#[test]
fn absolute_rule_fails_only_when_the_ci_is_beyond_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let far = write(dir.path(), "far", &run_losing(10));
    let near = write(dir.path(), "near", &run_losing(1));
    let rules = dir.path().join("rules.txt");
    std::fs::write(
        &rules,
        "# recall floor\naggressive: needle.recall >= 0.95\n",
    )
    .unwrap();
    // mean 6/16 with a CI well below 0.95
    gate(&far, &base)
        .arg("--rules")
        .arg(&rules)
        .assert()
        .code(10)
        .stdout(predicate::str::contains("mean needle.recall = 0.375"))
        .stdout(predicate::str::contains("misses the threshold >= 0.950"))
        .stdout(predicate::str::contains("regression").not());
    // mean 15/16 = 0.9375 < 0.95, but the CI reaches above 0.95
    gate(&near, &base)
        .arg("--rules")
        .arg(&rules)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("mean needle.recall = 0.938"))
        .stdout(predicate::str::contains("not significant"));
}

#[test]
fn cost_rule_on_an_unpriced_metric_is_skipped_not_passed() {
    let dir = tempfile::tempdir().unwrap();
    let mut samples = run_losing(0);
    for s in &mut samples {
        s.cost_usd.agent = None;
    }
    let base = write(dir.path(), "base", &samples);
    let cand = write(dir.path(), "cand", &samples);
    // `cost` exists in neither run: a usage error naming the metric.
    gate(&cand, &base)
        .args(["--rule", "cost.delta_pct <= 5"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "metric `cost` is not in the candidate or the baseline run",
        ));
    // priced in the baseline only: skipped in the candidate
    let base2 = write(dir.path(), "base2", &run_losing(0));
    gate(&cand, &base2)
        .args(["--rule", "cost.delta_pct <= 5"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "skip  cost.delta_pct <= 5  [baseline]",
        ));
}

#[test]
fn bad_rules_and_missing_rules_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    gate(&base, &base)
        .args(["--rule", "needle.recall >= lots"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expected a number after `>=`"));
    gate(&base, &base)
        .args(["--rule", "nope: needle.recall >= 0.5"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "variant `nope` is not in run base",
        ));
    let mut info = support::report::info("norules");
    info.suite = serde_json::json!({});
    let p = dir.path().join("norules");
    support::report::write_run(&p, &info, &run_losing(0));
    gate(&p, &base)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no gate rules"));
}

/// A run whose suite has a name (`suite.name` in run.json) and these variants.
fn write_named(
    dir: &Path,
    id: &str,
    suite: &str,
    variants: &[&str],
    samples: &[Sample],
) -> PathBuf {
    let mut info = support::report::info(id);
    info.suite["suite"] = serde_json::json!({ "name": suite });
    info.variants = variants.iter().map(|v| v.to_string()).collect();
    let p = dir.join(id);
    support::report::write_run(&p, &info, samples);
    p
}

#[test]
fn an_absolute_rule_that_fails_is_a_threshold_miss_not_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let far = write(dir.path(), "far", &run_losing(10));
    // Gated against itself: no regression is possible, only a threshold miss.
    let out = gate(&far, &far)
        .args(["--rule", "aggressive: needle.recall >= 0.95"])
        .assert()
        .code(10)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("misses the threshold >= 0.950 by 0.575 (the whole 95% CI is beyond it)"),
        "{out}"
    );
    assert!(!out.contains("regression"), "{out}");
    // The candidate is also the baseline here: its own directory gets the JUnit XML.
    let xml = std::fs::read_to_string(far.join("gate.xml")).unwrap();
    assert!(xml.contains("type=\"threshold_miss\""), "{xml}");
}

#[test]
fn unrelated_runs_are_a_usage_error_not_a_silent_fail() {
    let dir = tempfile::tempdir().unwrap();
    let samples = run_losing(0);
    let base = write_named(
        dir.path(),
        "base",
        "nightly",
        &["baseline", "aggressive"],
        &samples,
    );
    let other_suite = write_named(
        dir.path(),
        "other",
        "quickstart",
        &["baseline", "aggressive"],
        &samples,
    );
    gate(&other_suite, &base)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unrelated runs: candidate other is a run of suite `quickstart`, baseline base of suite `nightly`",
        ));
    // Same suite, but no variant in common (the samples carry other variant names too).
    let renamed: Vec<Sample> = samples
        .iter()
        .cloned()
        .map(|mut s| {
            s.variant = format!("new-{}", s.variant);
            s
        })
        .collect();
    let cand = write_named(
        dir.path(),
        "cand",
        "nightly",
        &["new-baseline", "new-aggressive"],
        &renamed,
    );
    gate(&cand, &base)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "share no variant (candidate: new-baseline, new-aggressive; baseline: baseline, aggressive)",
        ));
    // Nothing was written for a refused gate.
    assert!(!cand.join("gate.xml").exists());
    // The same suite and variants: the gate runs.
    let same = write_named(
        dir.path(),
        "same",
        "nightly",
        &["baseline", "aggressive"],
        &samples,
    );
    gate(&same, &base).assert().code(0);
}

#[test]
fn junit_goes_to_the_candidate_and_never_into_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(0));
    gate(&cand, &base).assert().code(0);
    assert!(cand.join("gate.xml").exists());
    assert!(!base.join("gate.xml").exists());
    // An explicit path inside the baseline run (also through `..`) is refused.
    for junit in [base.join("gate.xml"), cand.join("../base/sub/gate.xml")] {
        gate(&cand, &base)
            .arg("--junit")
            .arg(&junit)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("is inside the baseline run"));
    }
    assert!(!base.join("gate.xml").exists() && !base.join("sub").exists());
}

#[test]
fn json_output_is_the_machine_readable_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(8));
    let out = gate(&cand, &base)
        .args(["--rule", "needle.recall.delta >= -0.05", "--json"])
        .assert()
        .code(10)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("stdout is only JSON");
    assert_eq!(v["passed"], false);
    assert_eq!(v["exit_code"], 10);
    assert_eq!(v["failed"], 1);
    assert_eq!(v["candidate_run"], "cand");
    assert_eq!(v["baseline_run"], "base");
    assert!(v["junit"].as_str().unwrap().ends_with("gate.xml"));
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let aggr = results
        .iter()
        .find(|r| r["variant"] == "aggressive")
        .unwrap();
    assert_eq!(aggr["verdict"], "fail");
    assert_eq!(aggr["kind"], "delta");
    assert_eq!(aggr["value"], -0.5);
    assert!((aggr["p_value"].as_f64().unwrap() - 2.0 / 256.0).abs() < 1e-12);
    let base_v = results.iter().find(|r| r["variant"] == "baseline").unwrap();
    assert_eq!(base_v["verdict"], "pass");
}
