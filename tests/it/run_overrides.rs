//! `ctxbench run` overrides and selection as processes: `--dry-run` plans every bundled suite
//! under evals/ and exits 0 without writing anything; `--set`/`--variant`/`--trace`/`--eval`/
//! `--limit` shape the plan, are recorded in run.json, and `--resume` refuses other ones.

#![cfg(unix)]

use crate::support::cli::ctxbench;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn units_of(plan: &str) -> usize {
    let first = plan.lines().next().unwrap_or_default();
    first
        .rsplit("= ")
        .next()
        .and_then(|s| s.trim_end_matches(" units").parse().ok())
        .unwrap_or_else(|| panic!("no unit count in {first:?}"))
}

#[test]
fn every_bundled_suite_plans_with_dry_run() {
    let mut suites: Vec<PathBuf> = std::fs::read_dir(root().join("evals"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    suites.sort();
    assert!(suites.len() >= 5, "{suites:?}");
    for s in &suites {
        let out = ctxbench()
            .current_dir(root())
            .args(["run", &s.display().to_string(), "--dry-run"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}: {}\n{stdout}",
            s.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.starts_with("plan "), "{}: {stdout}", s.display());
        assert!(units_of(&stdout) > 0, "{}: {stdout}", s.display());
    }
}

fn dry(args: &[&str]) -> std::process::Output {
    let mut a = vec!["run", "evals/quickstart.toml", "--dry-run"];
    a.extend_from_slice(args);
    ctxbench().current_dir(root()).args(a).output().unwrap()
}

#[test]
fn selection_flags_shape_the_plan() {
    let all = String::from_utf8(dry(&[]).stdout).unwrap();
    // 7 traces × 4 variants × (replay + invariants + 6 needle + 2 drift folds) = 280.
    assert_eq!(units_of(&all), 280, "{all}");
    let out = dry(&[
        "--variant",
        "aggressive",
        "--variant",
        "prompt-b",
        "--trace",
        "astropy*",
        "--trace",
        "psf*",
        "--eval",
        "needle",
        "--limit",
        "1",
        "--set",
        "variant.aggressive.summarize.trigger.fraction=0.3",
    ]);
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{s}");
    assert_eq!(units_of(&s), 12, "{s}"); // 1 trace × 2 variants × 6 needle samples
    assert!(s.contains("aggressive (baseline), prompt-b"), "{s}");
    assert!(
        s.contains("astropy__astropy-12907") && !s.contains("psf__requests"),
        "{s}"
    );
    for (args, needle) in [
        (&["--trace", "nothing*"][..], "matches none"),
        (&["--variant", "agressive"][..], "did you mean `aggressive`"),
        (&["--eval", "probes"][..], "does not enable `probes`"),
        (&["--set", "variant.nope.window=1"][..], "no variant `nope`"),
        (
            &["--set", "suite.repeats=many"][..],
            "--set suite.repeats=many",
        ),
        // A misspelt section is refused as such (it went to `[engine.base]`, whose refusal
        // listed the engine's keys and no section).
        (
            &["--set", "engnie.base.window=1000"][..],
            "error: --set engnie.base.window=1000: `engnie` is neither a suite section",
        ),
        (
            &["--set", "reprot.metrics=[\"tokens\"]"][..],
            "engine key of [engine.base] (did you mean `report`?)",
        ),
    ] {
        let out = dry(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn overrides_are_recorded_and_resume_refuses_others() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().display().to_string();
    let run = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "evals/quickstart.toml",
            "--quiet",
            "--executor",
            "synthetic",
        ];
        a.extend_from_slice(extra);
        ctxbench().current_dir(root()).args(a).output().unwrap()
    };
    let first = run(&[
        "--run-id",
        "ov",
        "-o",
        &out_dir,
        "--set",
        "window=30000",
        "--eval",
        "replay",
    ]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let dir = tmp.path().join("ov");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["overrides"]["sets"][0], "window=30000", "{json}");
    assert_eq!(json["overrides"]["evals"][0], "replay", "{json}");
    let lines = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 28, "7 traces × 4 variants × replay");

    let d = dir.display().to_string();
    // Other overrides: refused with a usage error.
    let other = run(&["--resume", &d, "--set", "window=40000", "--eval", "replay"]);
    assert_eq!(other.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&other.stderr).contains("other command-line overrides"));
    // The same ones, or none (the recorded ones are reused): accepted.
    let same = run(&["--resume", &d, "--set", "window=30000", "--eval", "replay"]);
    assert!(
        same.status.success(),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    let none = run(&["--resume", &d]);
    assert!(
        none.status.success(),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
    let lines = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    assert_eq!(
        lines.lines().count(),
        28,
        "7 traces × 4 variants × replay, no unit run twice"
    );
}

#[test]
fn output_is_a_directory_on_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("out.html").display().to_string();
    for args in [
        vec!["run", "evals/quickstart.toml", "-o", &html],
        vec!["merge", "reports/a", "-o", &html],
        vec!["report", "reports/a", "-o", &html],
        vec!["compare", "reports/a", "reports/b", "--output", &html],
        vec!["import", "datasets/claude-code", "-o", &html],
    ] {
        let out = ctxbench().current_dir(root()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("looks like a .html file name"),
            "{args:?}: {err}"
        );
        assert!(!tmp.path().join("out.html").exists(), "{args:?}");
    }
}
