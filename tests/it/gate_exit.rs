//! `ctxbench gate` exit codes on synthetic runs written to disk: pass (0), significant
//! regression or threshold miss (10), insignificant change (0), bad rules and unrelated runs
//! (2), a partial candidate run or failed candidate units (10); JUnit XML (never into the
//! baseline, never stale), `--json` and the GitHub step summary.

use crate::support;

use crate::support::cli::ctxbench;
use assert_cmd::Command;
use ctxbench::record::Sample;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

/// The fixture with every needle recovered, except in the `lose` first needle units of the
/// aggressive variant. Each needle unit stands for its own trace here (independent pairs), so
/// the gate's test is McNemar's; units sharing a trace are resampled by trace instead. The
/// fixture's failed unit is left out (a failed unit fails the gate by itself: see
/// `failed_candidate_units_fail_the_gate_unless_tolerated`).
fn run_losing(lose: usize) -> Vec<Sample> {
    let mut lost = 0;
    support::report::samples()
        .into_iter()
        .filter(|s| s.error.is_none())
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
        // A tolerance of −0.05, not 0: its CI decides (wholly below −0.05).
        .stdout(predicate::str::contains(
            "by 0.450 and the whole 95% CI is beyond it",
        ))
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
    // 2 of 16 lost: delta −0.125 is beyond −0.05, but its CI [−0.312, 0] reaches it.
    let cand = write(dir.path(), "cand", &run_losing(2));
    gate(&cand, &base)
        .args(["--rule", "needle.recall.delta >= -0.05"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "by 0.075 but not significantly: the 95% CI",
        ));
    // Against a threshold of 0 the change's own test decides (McNemar p = 0.5).
    gate(&cand, &base)
        .args(["--rule", "needle.recall.delta >= 0"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "by 0.125 but not significant (passes)",
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
    // priced in the baseline only: skipped in the candidate; with a rule checked beside it,
    // the gate passes and says so
    let base2 = write(dir.path(), "base2", &run_losing(0));
    gate(&cand, &base2)
        .args([
            "--rule",
            "cost.delta_pct <= 5",
            "--rule",
            "needle.recall >= 0.5",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "skip  cost.delta_pct <= 5  [baseline]",
        ))
        .stdout(predicate::str::contains(
            "pass  needle.recall >= 0.5  [baseline]",
        ))
        .stdout(predicate::str::contains("run checked").not());
    // alone, it checks nothing: the gate fails (it passed with every rule skipped)
    let out = gate(&cand, &base2)
        .args(["--rule", "cost.delta_pct <= 5"])
        .assert()
        .code(10)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains(
            "FAIL run checked no rule could be checked: no `cost` value in the candidate run \
             (`cost.delta_pct <= 5` on every variant)"
        ),
        "{text}"
    );
    assert!(
        text.contains("skip cost.delta_pct <= 5 [baseline]"),
        "{text}"
    );
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

/// `--junit out/gate.xml` (the example of `gate --help`) in a fresh checkout: the missing
/// directories are created, as `-o DIR`'s are. It printed the verdict, then failed to write
/// and exited 1, the verdict's 0 or 10 lost; a `--junit` that names a directory, or lies under
/// a file, did the same: now refused (exit 2) before the gate runs.
#[test]
fn junit_directories_are_created_and_a_path_that_cannot_be_a_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(8));
    let junit = dir.path().join("out/ci/gate.xml");
    gate(&cand, &base)
        .arg("--junit")
        .arg(&junit)
        .assert()
        .code(10);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testsuites name=\"ctxbench gate\""), "{xml}");

    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    for (junit, says) in [
        (
            dir.path().join("out"),
            "is a directory; --junit names the JUnit file",
        ),
        (file.join("gate.xml"), "is a file, not a directory"),
    ] {
        gate(&cand, &base)
            .arg("--junit")
            .arg(&junit)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(says));
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[test]
fn junit_never_replaces_or_removes_a_file_that_is_not_a_gates_junit() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(0));
    let run_json = std::fs::read(cand.join("run.json")).unwrap();
    // The candidate run's own files are no JUnit file's name, with a verdict or without one.
    for rules in [None, Some("needle.recal >= 0.5")] {
        for own in ["run.json", "samples.jsonl", "stores/x.xml", "plots/x.xml"] {
            let mut cmd = gate(&cand, &base);
            if let Some(rule) = rules {
                cmd.args(["--rule", rule]);
            }
            let out = cmd.arg("--junit").arg(cand.join(own)).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "--junit {own}");
            let err = String::from_utf8_lossy(&out.stderr);
            let err = err.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                err.contains("is not a name for a JUnit file there"),
                "{err}"
            );
        }
    }
    assert_eq!(std::fs::read(cand.join("run.json")).unwrap(), run_json);
    assert!(cand.join("samples.jsonl").exists());
    // Outside any run, a gate without a verdict removes only a JUnit file a gate wrote.
    let notes = dir.path().join("notes.xml");
    std::fs::write(&notes, "<?xml version=\"1.0\"?>\n<notes/>\n").unwrap();
    gate(&cand, &base)
        .args(["--rule", "needle.recal >= 0.5", "--junit"])
        .arg(&notes)
        .assert()
        .code(2);
    assert!(notes.exists(), "a file that is no gate's JUnit was removed");
    // A dangling link leads where writing through it would create its target.
    #[cfg(unix)]
    {
        let other = write(dir.path(), "other", &run_losing(0));
        let link = dir.path().join("link.xml");
        std::os::unix::fs::symlink(other.join("gate.xml"), &link).unwrap();
        gate(&cand, &base)
            .arg("--junit")
            .arg(&link)
            .assert()
            .code(2);
        assert!(!other.join("gate.xml").exists(), "wrote into another run");
    }
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

/// The stdout of a finished command, its lines joined (the gate wraps long lines).
fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Set `status` and `units` in a run's run.json, as `ctxbench run` and `merge` write them.
fn set_progress(run: &Path, status: &str, planned: u64, recorded: u64) {
    let path = run.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["status"] = serde_json::json!(status);
    v["units"] = serde_json::json!({
        "planned_total": planned, "planned": planned, "recorded": recorded, "failed": 0,
        "not_run_budget": 0, "not_run_interrupted": planned - recorded,
    });
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn failed_candidate_units_fail_the_gate_unless_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    // The same units, and the fixture's failed one: its rules all pass.
    let mut samples = run_losing(0);
    samples.extend(
        support::report::samples()
            .into_iter()
            .filter(|s| s.error.is_some()),
    );
    let n = samples.len();
    let cand = write(dir.path(), "cand", &samples);
    let out = gate(&cand, &base).assert().code(10).get_output().clone();
    let text = stdout_of(&out);
    assert!(
        text.contains(&format!(
            "FAIL run errors 1 of {n} unit(s) failed (aggressive: 1/"
        )),
        "{text}"
    );
    assert!(text.contains("more than --max-errors 0"), "{text}");
    assert!(text.contains("gate FAILED"), "{text}");
    let xml = std::fs::read_to_string(cand.join("gate.xml")).unwrap();
    assert!(xml.contains("tests=\"5\" failures=\"1\""), "{xml}");
    assert!(xml.contains("type=\"run_errors\""), "{xml}");
    // Tolerated, and still said.
    let out = gate(&cand, &base)
        .args(["--max-errors", "1"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(text.contains("pass run errors 1 of"), "{text}");
    assert!(text.contains("tolerated by --max-errors 1"), "{text}");
    // Every unit failed: every rule is skipped, and the gate fails (it passed, all skipped).
    let all_failed: Vec<Sample> = run_losing(0)
        .into_iter()
        .map(|mut s| {
            s.scores.clear();
            s.passed = None;
            s.error = Some(ctxbench::record::UnitError {
                kind: "provider".into(),
                message: "connection refused".into(),
            });
            s
        })
        .collect();
    let dead = write(dir.path(), "dead", &all_failed);
    let out = gate(&dead, &base)
        .args(["--rule", "needle.recall >= 0.7"])
        .assert()
        .code(10)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains(&format!("{0} of {0} unit(s) failed", all_failed.len())),
        "{text}"
    );
    // A failed unit of the baseline is a note, and fails nothing.
    let out = gate(&base, &cand).assert().code(0).get_output().clone();
    assert!(stdout_of(&out).contains("note: baseline cand: 1 of"));
}

#[test]
fn a_partial_candidate_run_fails_the_gate_and_a_partial_baseline_is_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let n = run_losing(0).len() as u64;
    set_progress(&base, "complete", n, n);
    for (status, planned, why) in [
        ("interrupted", 2 * n, "status `interrupted`"),
        ("running", 2 * n, "status `running`"),
        ("incomplete", 2 * n, "status `incomplete`"),
        ("budget_exhausted", 2 * n, "status `budget_exhausted`"),
    ] {
        let cand = write(dir.path(), status, &run_losing(0));
        set_progress(&cand, status, planned, n);
        let out = gate(&cand, &base).assert().code(10).get_output().clone();
        let text = stdout_of(&out);
        assert!(
            text.contains(&format!(
                "FAIL run complete partial run: {n} of {planned} planned unit(s) recorded ({why}"
            )),
            "{text}"
        );
        let xml = std::fs::read_to_string(cand.join("gate.xml")).unwrap();
        assert!(xml.contains("type=\"run_complete\""), "{xml}");
    }
    // A complete run passes; a partial baseline is said, not failed.
    let cand = write(dir.path(), "cand", &run_losing(0));
    set_progress(&cand, "complete", n, n);
    gate(&cand, &base).assert().code(0);
    set_progress(&base, "interrupted", 2 * n, n);
    let out = gate(&cand, &base).assert().code(0).get_output().clone();
    let text = stdout_of(&out);
    assert!(
        text.contains(&format!(
            "note: baseline base: partial run: {n} of {}",
            2 * n
        )),
        "{text}"
    );
}

#[test]
fn variants_missing_from_either_run_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let only_baseline: Vec<Sample> = run_losing(0)
        .into_iter()
        .filter(|s| s.variant == "baseline")
        .collect();
    let mut info = support::report::info("cand");
    info.variants = vec!["baseline".into()];
    let cand = dir.path().join("cand");
    support::report::write_run(&cand, &info, &only_baseline);
    let out = gate(&cand, &base).assert().code(0).get_output().clone();
    let text = stdout_of(&out);
    assert!(
        text.contains("note: variant(s) of the baseline run missing from candidate cand, not gated: aggressive"),
        "{text}"
    );
    let summary = dir.path().join("summary.md");
    let out = gate(&base, &cand)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains("note: variant(s) not in baseline cand: aggressive"),
        "{text}"
    );
    // Every line fits a 100-column terminal.
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(raw.lines().all(|l| l.chars().count() <= 100), "{raw}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("- note: variant(s) not in baseline cand: aggressive"),
        "{md}"
    );
}

#[test]
fn a_gate_without_a_verdict_leaves_no_stale_junit() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(8));
    gate(&cand, &base).assert().code(10);
    assert!(cand.join("gate.xml").exists());
    gate(&cand, &base)
        .args(["--rule", "needle.recal >= 0.5"])
        .assert()
        .code(2);
    assert!(!cand.join("gate.xml").exists(), "a stale gate.xml was left");
    // A verdict that was written stays, also when what follows it fails (the step summary
    // cannot be written: exit 1, not 2).
    gate(&cand, &base)
        .env("GITHUB_STEP_SUMMARY", dir.path())
        .assert()
        .code(1);
    assert!(
        cand.join("gate.xml").exists(),
        "this gate's own verdict was removed"
    );
}

#[test]
fn rules_file_errors_name_the_file_the_line_and_a_likely_metric() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "# nothing yet\n").unwrap();
    gate(&base, &base)
        .arg("--rules")
        .arg(&empty)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "no gate rules: --rules {} holds no rule",
            empty.display()
        )))
        .stderr(predicate::str::contains("has no [gates] rules").not());
    let toml = dir.path().join("gates.toml");
    std::fs::write(
        &toml,
        "[gates]\nrules = [\n  \"needle.recall >= 0.5\",\n  \"needle.recal.delta >= -0.05\",\n]\n",
    )
    .unwrap();
    gate(&base, &base)
        .arg("--rules")
        .arg(&toml)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{}:4: rule `needle.recal.delta >= -0.05`: metric `needle.recal` is not in the \
             candidate or the baseline run (did you mean `needle.recall`?)",
            toml.display()
        )));
}

#[test]
fn a_significant_change_short_of_its_threshold_is_not_called_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    // Half the agent's input tokens in every unit: a large, significant saving.
    let saving: Vec<Sample> = run_losing(0)
        .into_iter()
        .map(|mut s| {
            s.tokens.agent.input /= 2;
            s
        })
        .collect();
    let cand = write(dir.path(), "cand", &saving);
    let out = gate(&cand, &base)
        .args(["--rule", "aggressive: tokens.delta_pct <= -80"])
        .assert()
        .code(10)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains("by 52.5 percentage points and the whole 95% CI falls short of it"),
        "{text}"
    );
    assert!(!text.contains("regression"), "{text}");
    let xml = std::fs::read_to_string(cand.join("gate.xml")).unwrap();
    assert!(xml.contains("type=\"threshold_miss\""), "{xml}");
    assert!(!xml.contains("type=\"regression\""), "{xml}");
}

/// A rule that asks for a saving (`tokens.delta_pct <= -10`) fails on a variant that saves
/// nothing: its change is no significant change from 0, but surely short of the threshold. It
/// passed as "not significant" while significance was the test against 0.
#[test]
fn a_rule_asking_for_a_saving_fails_when_nothing_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(0));
    let out = gate(&cand, &base)
        .args(["--rule", "aggressive: tokens.delta_pct <= -10"])
        .assert()
        .code(10)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains("FAIL aggressive: tokens.delta_pct <= -10"),
        "{text}"
    );
    assert!(
        text.contains("by 10.0 percentage points and the whole 95% CI falls short of it"),
        "{text}"
    );
    // A change the wrong way but no significant one (its CI spans 0) falls short of the
    // threshold; it is no regression (it was called "a significant regression").
    let noise: Vec<Sample> = run_losing(0)
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            if s.variant == "aggressive" {
                match i % 4 {
                    0 => s.tokens.agent.input = s.tokens.agent.input * 103 / 100,
                    2 => s.tokens.agent.input = s.tokens.agent.input * 98 / 100,
                    _ => {}
                }
            }
            s
        })
        .collect();
    let cand = write(dir.path(), "noise", &noise);
    let out = gate(&cand, &base)
        .args(["--rule", "aggressive: tokens.delta_pct <= -10"])
        .assert()
        .code(10)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains("= +0.1% (95% CI [-0.3, +0.6], p = 0.666): violates <= -10.0% by 10.1 percentage points and the whole 95% CI falls short of it"),
        "{text}"
    );
    assert!(!text.contains("regression"), "{text}");
    let xml = std::fs::read_to_string(cand.join("gate.xml")).unwrap();
    assert!(xml.contains("type=\"threshold_miss\""), "{xml}");
    // A rise within its tolerance's reach passes: 12% more input tokens in every other unit
    // (+2.9% [+1.5, +4.4], p < 0.001) is a significant change, not one significantly above
    // +2%: it passed only while significance was the test against 0.
    let rise: Vec<Sample> = run_losing(0)
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            if s.variant == "aggressive" && i % 2 == 0 {
                s.tokens.agent.input = s.tokens.agent.input * 112 / 100;
            }
            s
        })
        .collect();
    let cand = write(dir.path(), "rise", &rise);
    let out = gate(&cand, &base)
        .args(["--rule", "aggressive: tokens.delta_pct <= 2"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(text.contains("p = <0.001"), "{text}");
    assert!(
        text.contains("beyond <= 2.0% by 0.9 percentage points but not significantly: the 95% CI reaches it (passes)"),
        "{text}"
    );
}

/// A change whose CI's decimals would round it across its threshold is printed with the
/// digits that tell them apart (`+122 … violates <= 121.4 by 0.100` was a 121.5).
#[test]
fn a_change_next_to_its_threshold_is_printed_apart_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    // 100,001 more agent input tokens in every other unit: a change printed without decimals.
    let grown: Vec<Sample> = run_losing(0)
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            s.tokens.agent.input += (i % 2) as u64 * 100_001;
            s
        })
        .collect();
    let cand = write(dir.path(), "cand", &grown);
    let out = gate(&cand, &base)
        .args(["--rule", "aggressive: tokens.delta <= 1e9", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let value = doc["results"][0]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("{doc}"));
    // A threshold 0.1 under the change: violated, by 0.1.
    let threshold = ((value - 0.1) * 10.0).round() / 10.0;
    let out = gate(&cand, &base)
        .args([
            "--rule",
            &format!("aggressive: tokens.delta <= {threshold}"),
        ])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    let shown = format!("= +{value:.1} ");
    assert!(text.contains(&shown), "{shown}: {text}");
    assert!(text.contains(&format!("<= {threshold} ")), "{text}");
    // A threshold far from the change: the change at its CI's decimals, the threshold as
    // written, no sign added to a mean.
    let out = gate(&cand, &base)
        .args(["--rule", "aggressive: tokens.delta <= 0"])
        .args(["--rule", "aggressive: tokens <= 5"])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert!(text.contains(&format!("= +{value:.0} (")), "{text}");
    assert!(!text.contains("mean tokens = +"), "{text}");
}

/// A torn final line (the candidate or the baseline was interrupted as it wrote it) is a unit
/// the gate does not see: every output says so, as `compare` does.
#[test]
fn a_torn_final_line_is_noted_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(0));
    let journal = cand.join("samples.jsonl");
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str("{\"unit_id\": \"cut");
    std::fs::write(&journal, &text).unwrap();
    let junit = dir.path().join("gate.xml");
    let out = gate(&cand, &base)
        .args(["--rule", "needle.recall >= 0", "--json", "--junit"])
        .arg(&junit)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let notes = doc["notes"].to_string();
    let lines = text.lines().count();
    let said = format!("torn final line {lines} ignored (the run was interrupted)");
    assert!(notes.contains(&said), "{notes}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(&said), "{xml}");
    gate(&cand, &base)
        .args(["--rule", "needle.recall >= 0", "--junit"])
        .arg(&junit)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(said.as_str()));
}

/// A JUnit file that cannot be written does not take the verdicts with it: `--json` prints
/// them as the text mode does, with the exit code the process ends with (1) and the error on
/// stderr.
#[test]
fn json_verdicts_are_printed_when_the_junit_file_cannot_be_written() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(8));
    // A link to itself: no check refuses it, and writing through it fails (a missing
    // directory is created, so it no longer makes a path unwritable).
    let nowhere = dir.path().join("loop.xml");
    std::os::unix::fs::symlink(&nowhere, &nowhere).unwrap();
    let out = gate(&cand, &base)
        .args(["--json", "--junit"])
        .arg(&nowhere)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot write"))
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["exit_code"], 1);
    assert_eq!(doc["passed"], false, "the verdict is still the rules'");
    assert!(
        doc["results"].as_array().is_some_and(|r| !r.is_empty()),
        "{doc}"
    );
}

/// A unit journaled twice counts once: a complete run.json whose journal lacks a unit but
/// repeats another is partial (it counted journal lines and passed), and the gate says which
/// lines it left out.
#[test]
fn a_duplicated_line_does_not_stand_in_for_a_missing_unit() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let n = run_losing(0).len() as u64;
    set_progress(&base, "complete", n, n);
    let mut samples = run_losing(0);
    let last = samples.pop().unwrap();
    assert_ne!(samples[0].sample, last.sample);
    samples.push(samples[0].clone());
    let cand = write(dir.path(), "cand", &samples);
    set_progress(&cand, "complete", n, n);
    let out = gate(&cand, &base).assert().code(10).get_output().clone();
    let text = stdout_of(&out);
    assert!(
        text.contains(&format!(
            "FAIL run complete partial run: {} of {n} planned unit(s) recorded",
            n - 1
        )),
        "{text}"
    );
    assert!(
        text.contains("1 unit(s) appear more than once in the journal"),
        "{text}"
    );
    // The same journal without the duplicate line: partial too, and no note of duplicates.
    samples.pop();
    let cand = write(dir.path(), "cand2", &samples);
    set_progress(&cand, "complete", n, n);
    let out = gate(&cand, &base).assert().code(10).get_output().clone();
    assert!(!stdout_of(&out).contains("more than once"));
}

/// A change no test could judge (two pairs of one trace: no p-value, no CI) fails closed as
/// "too few traces", never as "the regression is significant" (what the gate said, with
/// `compare` saying "too few traces (1) to tell" of the same pairs).
#[test]
fn a_change_with_no_test_fails_closed_and_is_not_called_significant() {
    let dir = tempfile::tempdir().unwrap();
    let of_one_trace = |lose: bool| -> Vec<Sample> {
        support::report::samples()
            .into_iter()
            .filter(|s| {
                s.error.is_none()
                    && s.eval == "needle"
                    && s.trace_id == "trace-a"
                    && s.repeat == 0
                    && s.sample.contains("0.25")
            })
            .map(|mut s| {
                let lost = lose && s.variant == "aggressive";
                s.scores
                    .insert("recall".into(), if lost { 0.0 } else { 1.0 });
                s.passed = Some(!lost);
                s
            })
            .collect()
    };
    let base = write(dir.path(), "base", &of_one_trace(false));
    let cand = write(dir.path(), "cand", &of_one_trace(true));
    let out = gate(&cand, &base)
        .args(["--rule", "aggressive: needle.recall.delta >= 0", "--json"])
        .assert()
        .code(10)
        .get_output()
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &json["results"][0];
    assert_eq!(r["verdict"], "fail", "{r}");
    assert_eq!(r["p_value"], serde_json::Value::Null, "{r}");
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("too few traces (1)"), "{message}");
    assert!(!message.contains("significant but"), "{message}");
    assert!(!message.contains("regression is significant"), "{message}");
}

/// A candidate narrowed on the command line (`--trace`, `--eval`, `--limit`: run.json
/// `overrides`) is gated on the units it has, and the gate says loudly, in every output, which
/// of the baseline's it lacks (what `compare` counts): a note, not a failure. The spilled gate
/// says the same.
#[test]
fn a_narrowed_candidate_names_the_baseline_units_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let full: Vec<Sample> = support::report::samples()
        .into_iter()
        .filter(|s| s.error.is_none())
        .collect();
    // 2 traces × 2 variants × (8 needle units + 1 drift unit).
    assert_eq!(full.len(), 36);
    let base = write(dir.path(), "base", &full);
    let narrow: Vec<Sample> = full
        .iter()
        .filter(|s| s.trace_id == "trace-a" && s.eval == "needle")
        .cloned()
        .collect();
    let cand = write(dir.path(), "cand", &narrow);
    let run_json = cand.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    v["overrides"] = serde_json::json!({"traces": ["trace-a"], "evals": ["needle"]});
    std::fs::write(&run_json, v.to_string()).unwrap();
    let junit = dir.path().join("gate.xml");
    let rule = ["--rule", "needle.recall >= 0.5", "--junit"];
    let out = gate(&cand, &base)
        .args(rule)
        .arg(&junit)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    let note = "20 unit(s) of 2 trace(s) and 2 eval(s) only in the baseline run, not gated: \
                candidate cand covers 1 of the baseline's 2 trace(s), 1 of its 2 eval(s) and 16 \
                of its 36 unit(s) in the variants both runs have; 1 trace(s) only in the \
                baseline run: trace-b; 1 eval(s) only in the baseline run: drift; a run \
                narrowed with --trace, --eval or --limit (run.json `overrides`), or trace files \
                that gave no trace, are the usual causes: candidate cand: it was run with \
                `--trace trace-a --eval needle`";
    assert!(text.contains(&format!("note: {note}")), "{text}");
    assert!(
        text.contains("gate passed: 2 check(s), 0 failed, 0 skipped, 20 of 36 baseline unit(s) of the shared variants not gated; JUnit XML:"),
        "{text}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&note.replace('"', "&quot;").replace('\'', "&apos;")),
        "the JUnit system-out: {xml}"
    );
    let json = gate(&cand, &base)
        .args(rule)
        .arg(&junit)
        .arg("--json")
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc["baseline_units_missing"], 20);
    assert_eq!(doc["passed"], true);
    assert!(
        doc["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str() == Some(note)),
        "{doc}"
    );
    // Both runs spilled to disk (their units' key digests merged): the same lines.
    let spilled = gate(&cand, &base)
        .args(rule)
        .arg(&junit)
        .args(["--spill-above", "0"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&spilled.stdout),
        String::from_utf8_lossy(&out.stdout)
    );
    // The baseline against itself lacks nothing: no note, and 0 in the JSON.
    let json = gate(&base, &base)
        .args(["--rule", "needle.recall >= 0.5", "--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc["baseline_units_missing"], 0);
    assert!(!doc["notes"].to_string().contains("not gated"), "{doc}");
}

/// A real run of `id` (`ctxbench run`) of a suite `na` with two variants and one needle at a
/// `"tool"` position, on `trace` (under `datasets/`), into `dir`: its run directory.
fn needle_run(dir: &Path, id: &str, trace: &str) -> PathBuf {
    let suite = support::suite::SuiteBuilder::new("na")
        .output_dir(dir)
        .dataset(trace)
        .deepagents(20000)
        .baseline("roomy")
        .variant("roomy", "")
        .variant("tight", "window = 10000")
        .eval(
            "needle",
            "depths = [0.5]\npositions = [\"tool\"]\ndistractors = 3",
        )
        .write(dir, &format!("{id}.toml"));
    ctxbench()
        .arg("run")
        .arg(&suite)
        .args(["--run-id", id, "-q"])
        .assert()
        .code(0);
    dir.join(id)
}

/// The report's `NOT APPLICABLE:` note of a run, as report.md writes it (one line, whole).
fn not_applicable_note(run: &Path) -> String {
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    md.lines()
        .find_map(|l| l.strip_prefix("- NOT APPLICABLE:"))
        .map(|rest| format!("NOT APPLICABLE:{rest}"))
        .unwrap_or_else(|| panic!("no NOT APPLICABLE note in report.md: {md}"))
}

/// A candidate whose needle units are all not applicable to their trace (a `"tool"` needle in a
/// Claude Code session without tool calls) has no `needle.recall`: every rule on it is skipped
/// for every variant, so the gate checked nothing. It passed (exit 0); it now fails (exit 10,
/// `run checked` saying why each rule was skipped) unless `--allow-unchecked`, and the gate
/// repeats the report's NOT APPLICABLE note (it said "no `needle.recall` value" alone), as
/// `compare` does.
#[test]
fn a_gate_whose_rules_check_nothing_fails_and_says_the_needles_did_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    // The baseline's needles apply (a mini-swe-agent trajectory has tool results).
    let base = needle_run(
        dir.path(),
        "base",
        "mini-swe-agent/astropy__astropy-12907.traj.json",
    );
    let cand = needle_run(
        dir.path(),
        "cand",
        "claude-code/stop-hook-reflection-second-stop.jsonl",
    );
    let na = not_applicable_note(&cand);
    assert!(
        na.starts_with("NOT APPLICABLE: 2 variants (units/units by variant: `roomy` 1/1, `tight` 1/1): 2 needle unit(s) on 1 trace(s) (stop-hook-reflection-second-stop)"),
        "{na}"
    );
    let note = format!("candidate cand: {na}");
    let rules = [
        "--rule",
        "needle.recall >= 0.8",
        "--rule",
        "needle.recall.delta >= -0.05",
    ];
    let summary = dir.path().join("step-summary.md");
    let out = gate(&cand, &base)
        .args(rules)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .assert()
        .code(10)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    let why = "no rule could be checked: no `needle.recall` value in the candidate run \
               (`needle.recall >= 0.8` on every variant; `needle.recall.delta >= -0.05` on every \
               variant); a gate that checks nothing fails (pass --allow-unchecked to let it pass)";
    assert!(text.contains(&format!("FAIL run checked {why}")), "{text}");
    assert!(text.contains(&format!("note: {note}")), "{text}");
    assert!(
        text.contains("gate FAILED: 5 check(s), 1 failed, 4 skipped"),
        "{text}"
    );
    let xml = std::fs::read_to_string(cand.join("gate.xml")).unwrap();
    assert!(
        xml.contains("tests=\"5\" failures=\"1\" errors=\"0\" skipped=\"4\""),
        "{xml}"
    );
    assert!(
        xml.contains("classname=\"ctxbench.gate.run\" name=\"checked\">\n      <failure message=\"no rule could be checked:"),
        "{xml}"
    );
    assert!(xml.contains("type=\"run_checked\""), "{xml}");
    assert!(xml.contains("candidate cand: NOT APPLICABLE:"), "{xml}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("### ctxbench gate: FAILED"), "{md}");
    assert!(md.contains("| **FAIL** | run checked | all |"), "{md}");
    assert!(
        md.contains("- note: candidate cand: NOT APPLICABLE:"),
        "{md}"
    );
    // --json: the check with the others, and the note in the report's words, whole.
    let json = gate(&cand, &base)
        .args(rules)
        .arg("--json")
        .assert()
        .code(10)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        (doc["passed"].clone(), doc["exit_code"].clone()),
        (false.into(), 10.into())
    );
    assert_eq!(doc["run_checks"][0]["check"], "checked", "{doc}");
    assert_eq!(doc["run_checks"][0]["verdict"], "fail", "{doc}");
    assert_eq!(doc["run_checks"][0]["message"], why, "{doc}");
    assert!(
        doc["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str() == Some(note.as_str())),
        "{doc}"
    );
    // The spilled gate says the same.
    let spilled = gate(&cand, &base)
        .args(rules)
        .args(["--spill-above", "0"])
        .assert()
        .code(10)
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&spilled.stdout),
        String::from_utf8_lossy(&out.stdout)
    );
    // Allowed: it passes, and still says so.
    let out = gate(&cand, &base)
        .args(rules)
        .arg("--allow-unchecked")
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains("pass run checked no rule could be checked: no `needle.recall` value"),
        "{text}"
    );
    assert!(
        text.contains("a gate that checks nothing passes by --allow-unchecked"),
        "{text}"
    );
    assert!(text.contains(&format!("note: {note}")), "{text}");
    assert!(text.contains("gate passed"), "{text}");
    // One rule checked, the other skipped: no failure, no `run checked` (as before).
    let out = gate(&cand, &base)
        .args(["--rule", "needle.recall >= 0.8", "--rule", "tokens >= 0"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(!text.contains("run checked"), "{text}");
    assert!(text.contains("skip needle.recall >= 0.8 [roomy]"), "{text}");
    assert!(text.contains("pass tokens >= 0 [roomy]"), "{text}");
    assert!(text.contains(&format!("note: {note}")), "{text}");
    // `compare` repeats the note too, in every output.
    let out = ctxbench()
        .arg("compare")
        .arg(&base)
        .arg(&cand)
        .assert()
        .code(0)
        .get_output()
        .clone();
    assert!(
        stdout_of(&out).contains(&format!("note: {note}")),
        "{}",
        stdout_of(&out)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cand.join("compare.json")).unwrap()).unwrap();
    assert!(
        doc["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str() == Some(note.as_str())),
        "{doc}"
    );
    let md = std::fs::read_to_string(cand.join("compare.md")).unwrap();
    assert!(md.contains("candidate cand: NOT APPLICABLE:"), "{md}");
    // The baseline's side is named as such.
    let out = ctxbench()
        .arg("compare")
        .arg(&cand)
        .arg(&base)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains(&format!("note: baseline cand: {na}")),
        "{text}"
    );
    // A run gated against (compared with) itself says it once.
    let out = gate(&cand, &cand)
        .args(["--rule", "tokens >= 0"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert_eq!(text.matches("NOT APPLICABLE").count(), 1, "{text}");
    assert!(text.contains(&format!("note: {note}")), "{text}");
    let out = ctxbench()
        .arg("compare")
        .arg(&cand)
        .arg(&cand)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert_eq!(text.matches("NOT APPLICABLE").count(), 1, "{text}");
}

/// Both runs' needle units all not applicable to their trace: neither run has `needle.recall`.
/// The gate refused a rule on it as an unknown metric (exit 2, no verdict), though it checked
/// nothing exactly as when only the candidate lacks the metric (exit 10). Such a rule is now
/// skipped for every variant: the gate checked nothing, so it fails (exit 10, `run checked`)
/// with each run's NOT APPLICABLE note, in the text and in `--json`, unless
/// `--allow-unchecked`. A misspelt needle metric and another eval's metric are still refused
/// (exit 2); the note follows the misspelt one only.
#[test]
fn a_rule_on_a_needle_metric_neither_run_has_checks_nothing_and_says_the_needles_did_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let trace = "claude-code/stop-hook-reflection-second-stop.jsonl";
    let base = needle_run(dir.path(), "base", trace);
    let cand = needle_run(dir.path(), "cand", trace);
    let stderr_of = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).into_owned();
    let notes: Vec<String> = [("candidate", "cand", &cand), ("baseline", "base", &base)]
        .into_iter()
        .map(|(side, id, run)| format!("{side} {id}: {}", not_applicable_note(run)))
        .collect();
    let rules = [
        "--rule",
        "needle.recall >= 0.8",
        "--rule",
        "needle.recall.delta >= -0.05",
    ];
    let why = "no rule could be checked: no `needle.recall` value in the candidate run \
               (`needle.recall >= 0.8` on every variant; `needle.recall.delta >= -0.05` on every \
               variant); a gate that checks nothing fails (pass --allow-unchecked to let it pass)";
    let out = gate(&cand, &base)
        .args(rules)
        .assert()
        .code(10)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(text.contains(&format!("FAIL run checked {why}")), "{text}");
    for note in &notes {
        assert!(
            text.contains(&format!("note: {note}")),
            "{note}\nnot in:\n{text}"
        );
    }
    assert!(
        text.contains("gate FAILED: 5 check(s), 1 failed, 4 skipped"),
        "{text}"
    );
    assert!(!stderr_of(&out).contains("error"), "{}", stderr_of(&out));
    let xml = std::fs::read_to_string(cand.join("gate.xml")).unwrap();
    assert!(xml.contains("type=\"run_checked\""), "{xml}");
    // --json: the same verdict, check and notes.
    let json = gate(&cand, &base)
        .args(rules)
        .arg("--json")
        .assert()
        .code(10)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        (doc["passed"].clone(), doc["exit_code"].clone()),
        (false.into(), 10.into())
    );
    assert_eq!(doc["skipped"], 4, "{doc}");
    assert_eq!(doc["run_checks"][0]["check"], "checked", "{doc}");
    assert_eq!(doc["run_checks"][0]["verdict"], "fail", "{doc}");
    assert_eq!(doc["run_checks"][0]["message"], why, "{doc}");
    let json_notes: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    for note in &notes {
        assert!(
            json_notes.contains(&note.as_str()),
            "{note}\nnot in:\n{doc}"
        );
    }
    // Allowed: it passes, and still says so (text and JSON).
    let out = gate(&cand, &base)
        .args(rules)
        .arg("--allow-unchecked")
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(
        text.contains("a gate that checks nothing passes by --allow-unchecked"),
        "{text}"
    );
    assert!(text.contains("gate passed"), "{text}");
    let json = gate(&cand, &base)
        .args(rules)
        .args(["--allow-unchecked", "--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        (doc["passed"].clone(), doc["exit_code"].clone()),
        (true.into(), 0.into())
    );
    assert_eq!(doc["run_checks"][0]["verdict"], "pass", "{doc}");
    // A run against itself: its note once.
    let out = gate(&cand, &cand)
        .args(["--rule", "needle.pass >= 0.5"])
        .assert()
        .code(10)
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert_eq!(text.matches("NOT APPLICABLE").count(), 1, "{text}");
    assert!(
        text.contains("FAIL run checked no rule could be checked: no `needle.pass` value"),
        "{text}"
    );
    // A misspelt needle metric is no metric the eval declares: still refused, with the notes.
    let out = gate(&cand, &base)
        .args(["--rule", "needle.recal >= 0.8"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = stderr_of(&out);
    assert!(
        err.contains(
            "error: --rule: rule `needle.recal >= 0.8`: metric `needle.recal` is not in the \
             candidate or the baseline run"
        ),
        "{err}"
    );
    for note in &notes {
        assert!(
            err.contains(&format!("\nnote: {note}\n")),
            "{note}\nnot in:\n{err}"
        );
    }
    // Another eval's metric: refused, and the note would explain nothing.
    let out = gate(&cand, &base)
        .args(["--rule", "drift.score >= 4"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = stderr_of(&out);
    assert!(err.contains("metric `drift.score` is not in"), "{err}");
    assert!(!err.contains("NOT APPLICABLE"), "{err}");
}

/// A run directory that kept its run.json but lost its samples.jsonl (an artifact that uploaded
/// the reports only, a half-copied baseline) is refused by `gate`, `compare` and `report` as no
/// run directory, naming the missing file and what a run directory holds: it said only
/// `base/samples.jsonl: No such file or directory (os error 2)`.
#[test]
fn a_run_without_its_samples_jsonl_is_named_as_no_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &run_losing(0));
    let cand = write(dir.path(), "cand", &run_losing(0));
    std::fs::remove_file(base.join("samples.jsonl")).unwrap();
    let out = dir.path().join("out");
    let runs = [
        vec![
            "gate".into(),
            cand.clone(),
            "--baseline".into(),
            base.clone(),
        ],
        vec![
            "compare".into(),
            base.clone(),
            cand.clone(),
            "-o".into(),
            out.clone(),
        ],
        vec!["report".into(), base.clone(), "-o".into(), out.clone()],
    ];
    for (args, arg) in runs.iter().zip(["--baseline", "RUN_A", "RUN_DIR"]) {
        let output = ctxbench().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        let text = err.split_whitespace().collect::<Vec<_>>().join(" ");
        let expected = format!(
            "{arg} {}: is not a run directory: it holds no samples.jsonl (expected a directory \
             holding run.json and samples.jsonl",
            base.display()
        );
        assert!(text.contains(&expected), "{args:?}: {err}");
        assert!(
            !err.contains("os error") && !err.contains("panicked"),
            "{err}"
        );
    }
}
