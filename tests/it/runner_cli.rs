//! `ctxbench run` / `ctxbench merge` as processes: SIGKILL midway then `--resume` yields the same
//! samples as an uninterrupted run; Ctrl-C (SIGINT) exits 130 with a resumable run; shards
//! merged on the command line equal an unsharded run; `--help` texts; the closing `tokens` line
//! is the run total of every report.
//!
//! The executor is `synthetic` (deterministic, no model calls) unless
//! `CTXBENCH_HARNESS_EXECUTOR` names another (`default` once the engine and evals are merged):
//! the harness itself does not depend on what the units do, only that they are deterministic.

#![cfg(unix)]

use crate::support;

use crate::support::cli::{bin, lines};
use crate::support::suite::{base_and_aggressive, SuiteBuilder};
use assert_cmd::Command;
use ctxbench::record::Sample;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn executor() -> String {
    std::env::var("CTXBENCH_HARNESS_EXECUTOR").unwrap_or_else(|_| "synthetic:delay_ms=25".into())
}

/// A suite over four bundled real traces: 4 traces × 2 variants × (replay + 4 needle) = 40 units.
const UNITS: usize = 40;

fn suite(dir: &Path) -> PathBuf {
    support::suite::harness("harness").write(dir, "suite.toml")
}

fn run_args(suite: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "run".to_string(),
        suite.display().to_string(),
        "--quiet".into(),
        "--jobs".into(),
        "2".into(),
        "--executor".into(),
        executor(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// The journal by unit id, with wall-clock latency removed.
fn canonical(dir: &Path) -> BTreeMap<String, Sample> {
    let mut out = support::run::by_unit(dir);
    for s in out.values_mut() {
        s.latency_ms = 0;
    }
    out
}

fn wait_for_lines(p: &Path, n: usize) {
    let start = Instant::now();
    while lines(p) < n {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never reached {n} lines",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every bundled mini-swe-agent trace × 2 variants × (replay + invariants): units the real
/// engine executor runs.
fn real_suite(dir: &Path) -> (PathBuf, usize) {
    let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini-swe-agent");
    let n = support::suite::mini_swe_all().len();
    let p = base_and_aggressive("harness-real")
        .trace(datasets.join("*.traj.json"))
        .base("window = 20000")
        .eval("invariants", "")
        .write(dir, "real.toml");
    (p, n * 2 * 2)
}

#[test]
fn sigkill_midway_then_resume_gives_the_same_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    kill_and_resume(&suite, &tmp.path().join("out"), UNITS, &executor(), "2");
}

/// With needle units, whose offload stores are written as each unit ends (kept ones straight
/// into `stores/<unit-id>/`): a run killed midway and resumed keeps the same stores as an
/// uninterrupted run, byte for byte, but for the stores the killed process still held in
/// memory for units it had journaled, which the resumed run counts as not written.
#[test]
fn sigkill_midway_then_resume_keeps_the_same_offload_stores_or_says_which_it_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = tmp.path().join("out");
    kill_and_resume(&suite, &out, UNITS, "default", "1");
    let kept = support::run::file_tree(&out.join("reference/stores"));
    assert!(!kept.is_empty(), "the reference run keeps some stores");
    assert!(!out.join("killed/stores.pack").exists());
}

#[test]
fn sigkill_midway_then_resume_gives_the_same_samples_with_the_real_executor() {
    let tmp = tempfile::tempdir().unwrap();
    let (suite, units) = real_suite(tmp.path());
    kill_and_resume(&suite, &tmp.path().join("out"), units, "default", "1");
}

fn kill_and_resume(suite: &Path, out: &Path, units: usize, executor: &str, jobs: &str) {
    let args = |extra: &[&str]| {
        let mut a = vec![
            "run".to_string(),
            suite.display().to_string(),
            "--quiet".into(),
            "--jobs".into(),
            jobs.into(),
            "--executor".into(),
            executor.into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    Command::new(bin())
        .args(args(&["--run-id", "reference"]))
        .assert()
        .success();
    let reference = canonical(&out.join("reference"));
    assert_eq!(reference.len(), units);

    let mut child = std::process::Command::new(bin())
        .args(args(&["--run-id", "killed"]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = out.join("killed/samples.jsonl");
    wait_for_lines(&journal, 5);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let at_kill = lines(&journal);
    assert!(at_kill < units, "the run finished before it was killed");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("killed/run.json")).unwrap())
            .unwrap();
    assert_eq!(m["status"], "running", "a killed run never wrote its end");

    let resumed = Command::new(bin())
        .args(
            args(&["--resume", out.join("killed").to_str().unwrap()])
                .into_iter()
                .filter(|a| a != "--quiet"),
        )
        .assert()
        .success();
    assert_eq!(canonical(&out.join("killed")), reference);
    // The kept stores are the uninterrupted run's, byte for byte, but those the killed process
    // held in memory for units it had journaled (a baseline's, until its pairing key ended):
    // lost with it, and said so.
    let said = String::from_utf8_lossy(&resumed.get_output().stdout).replace('\n', " ");
    let lost: usize = said
        .split("note: ")
        .filter(|n| n.contains("offload store(s) of samples report.html shows were not written"))
        .map(|n| n.split(' ').next().unwrap().parse::<usize>().unwrap())
        .sum();
    let tree = |dir: &str| -> BTreeMap<String, Option<Vec<u8>>> {
        support::run::file_tree(&out.join(dir).join("stores"))
            .into_iter()
            .collect()
    };
    let (killed, uninterrupted) = (tree("killed"), tree("reference"));
    let store_of = |path: &String| path.split('/').next().unwrap().to_string();
    // The closing line's "kept K" counts the stores on disk, not those it says were not written.
    if let Some(k) = said.split("stores   kept ").nth(1) {
        let on_disk: std::collections::BTreeSet<String> = killed
            .keys()
            .filter(|p| !p.is_empty())
            .map(store_of)
            .collect();
        assert_eq!(
            k.split(' ').next().unwrap(),
            on_disk.len().to_string(),
            "{said}"
        );
    }
    for (path, bytes) in &killed {
        assert_eq!(
            uninterrupted.get(path),
            Some(bytes),
            "{path} differs or is extra"
        );
    }
    let missing: std::collections::BTreeSet<String> = uninterrupted
        .keys()
        .filter(|p| !killed.contains_key(*p))
        .map(store_of)
        .collect();
    assert_eq!(
        missing.len(),
        lost,
        "stores lost: {missing:?}; said: {said}"
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("killed/run.json")).unwrap())
            .unwrap();
    assert_eq!(m["status"], "complete");
}

#[test]
fn ctrl_c_exits_130_and_the_run_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = tmp.path().join("out");
    let child = std::process::Command::new(bin())
        .args(run_args(&suite, &["--run-id", "interrupted"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_lines(&out.join("interrupted/samples.jsonl"), 3);
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--resume"), "{stderr}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("interrupted/run.json")).unwrap())
            .unwrap();
    assert_eq!(m["status"], "interrupted");
    // A partial report is written from what finished.
    let md = std::fs::read_to_string(out.join("interrupted/report.md")).unwrap();
    assert!(md.contains("aggressive") || md.contains("base"), "{md}");
    assert!(out.join("interrupted/results.csv").is_file());
    let recorded = m["units"]["recorded"].as_u64().unwrap();
    assert!(
        recorded >= 3 && recorded < UNITS as u64,
        "recorded {recorded}"
    );
    assert_eq!(
        recorded + m["units"]["not_run_interrupted"].as_u64().unwrap(),
        UNITS as u64
    );

    Command::new(bin())
        .args(run_args(
            &suite,
            &["--resume", out.join("interrupted").to_str().unwrap()],
        ))
        .assert()
        .success();
    assert_eq!(canonical(&out.join("interrupted")).len(), UNITS);
}

#[test]
fn cli_shards_merge_to_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = tmp.path().join("out");
    let fast = |extra: &[&str]| {
        let mut a = run_args(&suite, extra);
        let i = a.iter().position(|x| x == "--executor").unwrap();
        if a[i + 1].starts_with("synthetic") {
            a[i + 1] = "synthetic".into();
        }
        a
    };
    Command::new(bin())
        .args(fast(&["--run-id", "whole"]))
        .assert()
        .success();
    Command::new(bin())
        .args(fast(&["--run-id", "p1", "--shard", "1/2"]))
        .assert()
        .success();
    Command::new(bin())
        .args(fast(&["--run-id", "p2", "--shard", "2/2"]))
        .assert()
        .success();
    let merged = out.join("merged");
    Command::new(bin())
        .arg("merge")
        .arg(out.join("p1"))
        .arg(out.join("p2"))
        .arg("-o")
        .arg(&merged)
        .assert()
        .success();
    assert_eq!(canonical(&merged), canonical(&out.join("whole")));
    assert!(canonical(&out.join("p1")).len() < UNITS);

    // Bad shard spec and a non-run directory are usage errors.
    Command::new(bin())
        .args(fast(&["--shard", "3/2"]))
        .assert()
        .code(2);
    Command::new(bin())
        .arg("merge")
        .arg(tmp.path())
        .arg("-o")
        .arg(out.join("never"))
        .assert()
        .code(2);
}

fn help(args: &[&str]) -> String {
    let out = Command::new(bin())
        .args(args)
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn help_texts_teach_with_examples() {
    insta::assert_snapshot!("run_help", help(&["run", "--help"]));
    insta::assert_snapshot!("merge_help", help(&["merge", "--help"]));
}

#[test]
fn a_suite_this_build_cannot_run_leaves_no_run_directory() {
    // With the default executor, units need importers, the engine and the evals. Until they are
    // all in the build, the run must fail before creating anything; once they are, it runs.
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = Command::new(bin())
        .args(["run", suite.to_str().unwrap(), "--quiet", "--run-id", "d"])
        .output()
        .unwrap();
    if out.status.success() {
        assert!(tmp.path().join("out/d/run.json").is_file());
    } else {
        assert!(!tmp.path().join("out").exists(), "{:?}", out);
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn a_corrupt_journal_line_is_moved_aside_and_the_run_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = tmp.path().join("out");
    Command::new(bin())
        .args(run_args(&suite, &["--run-id", "full"]))
        .assert()
        .success();
    let reference = canonical(&out.join("full"));
    let dir = out.join("full");
    let journal = dir.join("samples.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let lost = lines[7].to_string();
    let garbage = format!("{}\u{0}#garbage", &lost[..lost.len() / 2]);
    lines[7] = &garbage;
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();

    // Unreadable: resume and report stop, naming the line and the way on.
    for args in [
        run_args(&suite, &["--resume", dir.to_str().unwrap()]),
        vec!["report".into(), dir.display().to_string()],
    ] {
        let o = Command::new(bin()).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("samples.jsonl:8:") && err.contains("ctxbench repair"),
            "{err}"
        );
    }

    let o = Command::new(bin())
        .args(["repair", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("samples.rejected.jsonl") && err.contains("line 8"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("samples.rejected.jsonl")).unwrap(),
        garbage.clone() + "\n"
    );
    assert_eq!(canonical(&dir).len(), UNITS - 1);
    Command::new(bin())
        .args(run_args(&suite, &["--resume", dir.to_str().unwrap()]))
        .assert()
        .success();
    assert_eq!(canonical(&dir), reference, "the lost unit ran again");

    // `--resume --repair` does both in one step.
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, text.replacen('{', "{{", 1)).unwrap();
    Command::new(bin())
        .args(run_args(
            &suite,
            &["--resume", dir.to_str().unwrap(), "--repair"],
        ))
        .assert()
        .success();
    assert_eq!(canonical(&dir), reference);
    assert_eq!(
        std::fs::read_to_string(dir.join("samples.rejected.jsonl"))
            .unwrap()
            .lines()
            .count(),
        2
    );
}

/// What a run killed before it first wrote run.json leaves (`kill -9` right after it created its
/// directory): `.lock`, an empty samples.jsonl and perhaps a half-written `.run.json.tmp`.
fn never_started(dir: &Path, tmp_run_json: bool) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(".lock"), "4999999\n").unwrap();
    std::fs::write(dir.join("samples.jsonl"), "").unwrap();
    if tmp_run_json {
        std::fs::write(dir.join(".run.json.tmp"), "{\n  \"schema_version\": ").unwrap();
    }
}

/// docs/reliability.md, "Resume": a run that never started is started over by `run --resume`
/// or by `run --run-id` naming it; `repair` says there is nothing to repair (exit 2).
#[test]
fn a_run_killed_before_its_run_json_was_written_starts_over() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = tmp.path().join("out");
    Command::new(bin())
        .args(run_args(&suite, &["--run-id", "reference"]))
        .assert()
        .success();
    let reference = canonical(&out.join("reference"));
    assert_eq!(reference.len(), UNITS);

    for tmp_run_json in [false, true] {
        let dir = out.join("early");
        let _ = std::fs::remove_dir_all(&dir);
        never_started(&dir, tmp_run_json);
        let o = Command::new(bin())
            .args(["repair", dir.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("never started") && err.contains("--resume"),
            "{err}"
        );
        assert!(!dir.join("run.json").exists());

        let o = Command::new(bin())
            .args(run_args(&suite, &["--resume", dir.to_str().unwrap()]))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(err.contains("never started"), "{err}");
        assert_eq!(canonical(&dir), reference);
        let info = support::cli::json(&dir.join("run.json"));
        assert_eq!(info["run_id"], "early");
        assert_eq!(info["status"], "complete");
        assert!(!dir.join(".run.json.tmp").exists());

        // Restarted by a new run of the same id too, and with `--resume --repair`.
        for how in [
            vec!["--run-id", "early", "-o", out.to_str().unwrap()],
            vec!["--resume", dir.to_str().unwrap(), "--repair"],
        ] {
            std::fs::remove_dir_all(&dir).unwrap();
            never_started(&dir, tmp_run_json);
            let o = Command::new(bin())
                .args(run_args(&suite, &how))
                .output()
                .unwrap();
            assert!(o.status.success(), "{how:?}: {o:?}");
            assert_eq!(canonical(&dir), reference, "{how:?}");
        }
    }

    // A run that did start is never started over by --run-id.
    let o = Command::new(bin())
        .args(run_args(
            &suite,
            &["--run-id", "early", "-o", out.to_str().unwrap()],
        ))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
}

/// `run --resume DIR` where DIR is an empty directory or no run at all is refused (exit 2, "is
/// not a run directory", what it is) and leaves DIR as it was: no `.lock` (with command-line
/// flags, which skip reading the run's recorded ones, it took the lock first and left it, and
/// in an empty directory that lock made it look like a run that never started: it ran).
#[test]
fn resume_of_a_directory_that_is_no_run_is_refused_without_a_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let empty = tmp.path().join("empty");
    let other = tmp.path().join("other");
    for flags in [
        vec![],
        vec!["--limit", "1"],
        vec!["--retry-failed"],
        vec!["--repair"],
    ] {
        for (dir, what) in [(&empty, "it is empty"), (&other, "it holds no run.json")] {
            let _ = std::fs::remove_dir_all(dir);
            std::fs::create_dir(dir).unwrap();
            if dir == &other {
                std::fs::write(dir.join("notes.txt"), "mine\n").unwrap();
            }
            let mut args = vec!["--resume", dir.to_str().unwrap()];
            args.extend(&flags);
            let o = Command::new(bin())
                .args(run_args(&suite, &args))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{flags:?}: {err}");
            let text = err.split_whitespace().collect::<Vec<_>>().join(" ");
            let expected = format!("--resume {}: is not a run directory: {what}", dir.display());
            assert!(text.contains(&expected), "{flags:?}: {err}");
            assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
            let mut left: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            left.sort();
            let want: &[&str] = if dir == &other { &["notes.txt"] } else { &[] };
            assert_eq!(left, want, "{flags:?}: {}", dir.display());
        }
    }
}

#[test]
fn progress_lines_without_a_terminal_and_none_with_quiet() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let run = |quiet: bool| {
        let mut args = run_args(&suite, &[]);
        if !quiet {
            args.retain(|a| a != "--quiet");
        }
        // stderr is a pipe here, as in CI: progress comes as lines; 0 s = one per unit.
        let out = Command::new(bin())
            .args(&args)
            .env("CTXBENCH_PROGRESS_SECS", "0")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let err = run(false);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert_eq!(lines.len(), UNITS, "one line per unit:\n{err}");
    for l in &lines {
        for field in [
            " units · ",
            " error",
            " tokens · modelled $",
            " · elapsed ",
            " · ETA ",
        ] {
            assert!(l.contains(field), "`{field}` missing in {l}");
        }
    }
    assert!(
        lines[0].starts_with("progress: 1/40 units · 0 errors · "),
        "{}",
        lines[0]
    );
    assert!(lines[UNITS - 1].starts_with("progress: 40/40 units"));
    assert!(lines[UNITS - 1].ends_with("ETA 0s"));
    let quiet = run(true);
    assert!(!quiet.contains("progress"), "{quiet}");
    // A bad interval is a usage error naming the variable, before anything runs.
    let mut args = run_args(&suite, &[]);
    args.retain(|a| a != "--quiet");
    Command::new(bin())
        .args(&args)
        .env("CTXBENCH_PROGRESS_SECS", "soon")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("CTXBENCH_PROGRESS_SECS=soon"));
}

/// The run's closing `tokens` line counts every role — the eval agent's needle questions too —
/// so it is the same total as report.md's "Run total", results.csv's `tokens` column and
/// run.json's per-role totals (it once left the eval agent out: 65.62M against 72579522 on the
/// quickstart).
#[test]
fn the_closing_tokens_line_is_the_run_total_of_every_report() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = SuiteBuilder::new("footer")
        .mini_swe(&[
            "astropy__astropy-12907.traj.json",
            "psf__requests-1142.traj.json",
        ])
        .baseline("base")
        .base("window = 20000")
        .variant("base", "")
        .eval("needle", "depths = [0.5]\npositions = [\"tool\"]")
        .write(tmp.path(), "needle.toml");
    let out = Command::new(bin())
        .args(["run", &suite.display().to_string(), "--run-id", "r"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let run = tmp.path().join("out/r");

    let samples = canonical(&run);
    let eval_agent: u64 = samples.values().map(|s| s.tokens.eval_agent.total()).sum();
    assert!(eval_agent > 0, "the needle questions used no tokens");
    let total: u64 = samples.values().map(|s| s.tokens_total()).sum();

    let csv = std::fs::read_to_string(run.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "tokens").unwrap();
    let csv_total: u64 = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(csv_total, total);

    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        md.contains(&format!("Run total: {total} tokens;")),
        "report.md has no run total of {total}"
    );

    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let roles = &m["totals"]["tokens"];
    let json_total: u64 = ["agent", "summarizer", "judge", "eval_agent"]
        .iter()
        .map(|r| roles[r]["input"].as_u64().unwrap() + roles[r]["output"].as_u64().unwrap())
        .sum();
    assert_eq!(json_total, total);

    let line = stdout
        .lines()
        .find(|l| l.starts_with("tokens "))
        .unwrap_or_else(|| panic!("no closing tokens line in\n{stdout}"));
    let shown = ctxbench::runner::progress::human_tokens(total);
    assert!(
        line.split_whitespace().nth(1) == Some(shown.as_str()),
        "terminal `{line}` is not the run total {total} ({shown})"
    );
}

/// A resumed unit starts with its offload store directory removed (what an earlier process left
/// there is not its store), also when the run's `stores/` exists only from that process; a
/// run that starts with no `stores/` skips the removal (nothing can be there).
#[test]
fn a_resumed_unit_starts_with_its_store_directory_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = tmp.path().join("out");
    let args = |extra: &[&str]| {
        let mut a: Vec<String> = [
            "run",
            suite.to_str().unwrap(),
            "--quiet",
            "--jobs",
            "2",
            "--executor",
            "default",
            "--keep-stores",
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    Command::new(bin())
        .args(args(&["--run-id", "full"]))
        .assert()
        .success();
    let dir = out.join("full");
    let stores = dir.join("stores");
    let before = support::run::file_tree(&stores);
    // A unit with a store: its line is dropped from the journal (it runs again on resume) and
    // a file it never writes is planted in its directory.
    let unit = std::fs::read_dir(&stores)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .min()
        .expect("some store");
    let journal = dir.join("samples.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains(&format!("\"{unit}\"")))
        .collect();
    assert_eq!(kept.len() + 1, text.lines().count(), "one line of {unit}");
    std::fs::write(&journal, kept.join("\n") + "\n").unwrap();
    let planted = stores.join(&unit).join("planted");
    std::fs::write(&planted, "not the unit's").unwrap();
    Command::new(bin())
        .args(args(&["--resume", dir.to_str().unwrap()]))
        .assert()
        .success();
    assert!(
        !planted.exists(),
        "the resumed unit's directory was cleaned"
    );
    assert_eq!(support::run::file_tree(&stores), before);
}

/// More flagged units than report.html shows in full (its cap of flagged units per variant), and
/// errored ones: the offload stores kept are those of the units the page shows and of every
/// errored unit, the flagged ones past the cap of their variant are not kept, and the run says
/// how many; `--keep-stores` keeps every store.
#[test]
fn flagged_units_past_the_pages_cap_keep_no_store_and_the_run_says_so() {
    use ctxbench::report::html::MAX_FLAGGED_PER_VARIANT;
    let tmp = tempfile::tempdir().unwrap();
    let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini-swe-agent");
    // 20 traces × 2 variants × 10 needle samples = 400 units, every one flagged or errored.
    let suite = base_and_aggressive("flagged")
        .seed(1)
        .trace(datasets.join("*.traj.json"))
        .base("window = 20000")
        .eval("replay", "enabled = false")
        .eval(
            "needle",
            "depths = [0.1, 0.3, 0.5, 0.7, 0.9]\npositions = [\"tool\", \"user\"]",
        )
        .write(tmp.path(), "flagged.toml");
    let run = |id: &str, executor: &str, extra: &[&str]| {
        let out = Command::new(bin())
            .args([
                "run",
                suite.to_str().unwrap(),
                "--jobs",
                "4",
                "--executor",
                executor,
                "--run-id",
                id,
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let dir = tmp.path().join("out").join(id);
        let stores: std::collections::BTreeSet<String> = std::fs::read_dir(dir.join("stores"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        (stdout, dir, stores)
    };

    // Server-bound units (a store written as the unit ends, pruned at the end if past the cap)
    // and offline ones (run whole on rayon; an undecided store waits in memory): the same stores.
    for (id, executor) in [
        ("pruned", "synthetic:flag_every=1,fail_every=9,store=1"),
        (
            "pruned-offline",
            "synthetic:flag_every=1,fail_every=9,store=1,offline=1",
        ),
    ] {
        let (stdout, dir, kept) = run(id, executor, &[]);
        let samples: Vec<Sample> = support::run::samples(&dir);
        assert_eq!(samples.len(), 400);
        let errored: Vec<&Sample> = samples.iter().filter(|s| s.error.is_some()).collect();
        assert!(errored.len() > 10, "{}", errored.len());
        assert!(samples
            .iter()
            .all(|s| s.error.is_some() || s.compactions.get("futile") == Some(&1)));
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        let shown_in_html = |s: &Sample| html.contains(&format!("<code>{}</code>", s.unit_id));
        for s in &errored {
            assert!(kept.contains(&s.unit_id), "errored {} is kept", s.unit_id);
        }
        let mut not_kept = 0;
        for variant in ["base", "aggressive"] {
            // The variant's flagged units in the report's order: trace, eval, sample, repeat.
            let mut flagged: Vec<&Sample> = samples
                .iter()
                .filter(|s| s.variant == variant && s.error.is_none())
                .collect();
            flagged.sort_by(|a, b| {
                (&a.trace_id, &a.eval, &a.sample, a.repeat).cmp(&(
                    &b.trace_id,
                    &b.eval,
                    &b.sample,
                    b.repeat,
                ))
            });
            let (first, rest) = flagged.split_at(MAX_FLAGGED_PER_VARIANT);
            for s in first {
                assert!(kept.contains(&s.unit_id), "{} is shown", s.unit_id);
                assert!(shown_in_html(s), "{}", s.unit_id);
            }
            // Past the cap, a flagged unit is shown (and its store kept) only when the page
            // shows its pairing key in every variant: a dozen keys.
            let kept_past: Vec<&&Sample> =
                rest.iter().filter(|s| kept.contains(&s.unit_id)).collect();
            assert!(kept_past.len() <= 12, "{variant}: {}", kept_past.len());
            for s in &kept_past {
                assert!(shown_in_html(s), "{}", s.unit_id);
            }
            for s in rest.iter().filter(|s| !kept.contains(&s.unit_id)) {
                assert!(!shown_in_html(s), "{}", s.unit_id);
            }
            not_kept += rest.len() - kept_past.len();
        }
        assert_eq!(kept.len(), 400 - not_kept);
        // The kept store directories are what the final report shows in full (and every
        // errored unit), by the library's one rule; the run says what it did not keep.
        let (_, model, _) =
            ctxbench::report::load::load_model(&ctxbench::record::RunDir::new(&dir)).unwrap();
        let shown = ctxbench::report::shown::shown_in_full(&model).unwrap();
        assert_eq!(kept, shown);
        // (Wrapped at 100 columns, as every closing line.)
        assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
        let said = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            said.contains(&format!(
                "note: {not_kept} flagged unit(s) report.html does not show in full (past \
                 the first {MAX_FLAGGED_PER_VARIANT} flagged units of their variant): their \
                 offload stores (if any) were not kept"
            )),
            "{stdout}"
        );
        assert!(!said.contains("were not written"), "{stdout}");
        // report.html counts the same units as not shown in full (no errored unit is past its
        // cap): not those past the cap it shows for their key.
        assert!(
            html.contains(&format!(
                "{not_kept} more failed or flagged unit(s) are not shown in full"
            )),
            "report.html does not say {not_kept} are not shown"
        );
        assert!(!dir.join("stores.pack").exists());
    }

    // Half the units flagged, offline: four at once, units end out of their variant's order,
    // so a flagged unit's store waits in memory until enough flagged units before it in its
    // variant have ended; those the page ends up showing must be written.
    let (_, dir, kept) = run(
        "half-offline",
        "synthetic:flag_every=2,store=1,offline=1",
        &[],
    );
    let (_, model, _) =
        ctxbench::report::load::load_model(&ctxbench::record::RunDir::new(&dir)).unwrap();
    assert_eq!(
        kept,
        ctxbench::report::shown::shown_in_full(&model).unwrap()
    );
    let waited = support::run::samples(&dir)
        .iter()
        .filter(|s| s.variant != "base" && s.compactions.contains_key("futile"))
        .filter(|s| kept.contains(&s.unit_id))
        .count();
    assert!(
        waited > 12,
        "flagged units of the second variant shown: {waited}"
    );

    // --keep-stores: every store, no note.
    let (stdout, _, all) = run("all", "synthetic:flag_every=1,store=1", &["--keep-stores"]);
    assert_eq!(all.len(), 400);
    assert!(!stdout.contains("flagged unit(s)"), "{stdout}");
}

/// A suite of 12 variants: report.html's caps per variant shrink (8 flagged units, 5 keys, 2
/// failed verdicts), the run writes and keeps the stores of exactly the samples the page shows
/// (and the errored units'), far fewer than with the caps of a small suite, and says what it
/// does not keep and why.
#[test]
fn a_suite_of_many_variants_keeps_the_stores_of_a_smaller_page_and_says_so() {
    use ctxbench::report::html::Caps;
    let tmp = tempfile::tempdir().unwrap();
    let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini-swe-agent");
    // 20 traces × 12 variants × 2 needle samples = 480 units.
    let mut suite = base_and_aggressive("many")
        .seed(1)
        .trace(datasets.join("*.traj.json"))
        .base("window = 20000")
        .eval("replay", "enabled = false")
        .eval("needle", "depths = [0.5]\npositions = [\"tool\", \"user\"]");
    for v in 1..=10 {
        suite = suite.variant(
            &format!("v{v:02}"),
            format!("summarize.trigger.fraction = 0.{}", 10 + 5 * v),
        );
    }
    let suite = suite.write(tmp.path(), "many.toml");
    let caps = Caps::for_variants(12);
    assert_eq!((caps.flagged, caps.keys, caps.failed), (8, 5, 2));
    for (id, executor) in [
        ("many", "synthetic:flag_every=3,fail_every=40,store=1"),
        (
            "many-offline",
            "synthetic:flag_every=3,fail_every=40,store=1,offline=1",
        ),
    ] {
        let out = Command::new(bin())
            .args(["run", suite.to_str().unwrap(), "--jobs", "4"])
            .args(["--executor", executor, "--run-id", id])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let dir = tmp.path().join("out").join(id);
        let kept: std::collections::BTreeSet<String> = std::fs::read_dir(dir.join("stores"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        let (_, model, _) =
            ctxbench::report::load::load_model(&ctxbench::record::RunDir::new(&dir)).unwrap();
        assert_eq!(model.units, 480);
        assert_eq!(model.shown_caps(), caps);
        // The stores kept are those the page shows in full and the errored units': every one
        // written (no note of stores to keep that were not), the rest not kept.
        assert_eq!(
            kept,
            ctxbench::report::shown::shown_in_full(&model).unwrap()
        );
        let said = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(!said.contains("were not written"), "{stdout}");
        assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
        // Far fewer than the caps of a suite of up to 5 variants would show.
        let (small, _) =
            ctxbench::report::html::select(&model.samples, model.baseline.as_deref(), 5);
        assert!(
            kept.len() < small.len() * 2 / 3,
            "{} kept, {} with the caps of 5 variants",
            kept.len(),
            small.len()
        );
        // What is not shown (and keeps no store) is said, with the caps and why they shrank.
        let left_out = model.shown().1;
        assert!(left_out.problems > 0 && left_out.failed > 0, "{left_out:?}");
        for note in [
            format!(
                "note: {} flagged unit(s) report.html does not show in full (past the first 8 \
                 flagged units of their variant, a cap that shrinks with the run's 12 variants): \
                 their offload stores (if any) were not kept",
                left_out.problems
            ),
            format!(
                "note: {} unit(s) whose verdict is fail report.html does not show in full (past \
                 the first 2 of their variant, a cap that shrinks with the run's 12 variants): \
                 their offload stores (if any) were not kept",
                left_out.failed
            ),
        ] {
            assert!(said.contains(&note), "{note}\n{stdout}");
        }
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(html.contains("The caps per variant shrink with the run's 12 variants"));
        assert!(html.contains(&format!(
            "{} more unit(s) whose verdict is fail are not shown in full (past the first 2 of \
             their variant).",
            left_out.failed
        )));
    }
}

/// A suite of 2 variants (the caps of a small run: 5 failed verdicts per variant) with far more
/// failed verdicts than that: the page and the run's closing lines count the units whose verdict
/// is fail that the page does not show in full, whose stores are not kept, as they count the
/// flagged ones; nothing is left out unsaid however few the variants.
#[test]
fn failed_verdicts_past_the_pages_cap_of_a_small_suite_are_counted() {
    use ctxbench::report::html::{Caps, MAX_FAILED_PER_VARIANT};
    let tmp = tempfile::tempdir().unwrap();
    let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini-swe-agent");
    // 20 traces × 2 variants × 4 needle samples = 160 units, a fifth of them failing their
    // verdict.
    let suite = base_and_aggressive("fails")
        .seed(1)
        .trace(datasets.join("*.traj.json"))
        .base("window = 20000")
        .eval("replay", "enabled = false")
        .eval(
            "needle",
            "depths = [0.3, 0.7]\npositions = [\"tool\", \"user\"]",
        )
        .write(tmp.path(), "fails.toml");
    assert!(!Caps::for_variants(2).shrunk());
    for (id, executor) in [
        ("fails", "synthetic:store=1"),
        ("fails-offline", "synthetic:store=1,offline=1"),
    ] {
        let out = Command::new(bin())
            .args(["run", suite.to_str().unwrap(), "--jobs", "4"])
            .args(["--executor", executor, "--run-id", id])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let dir = tmp.path().join("out").join(id);
        let (_, model, _) =
            ctxbench::report::load::load_model(&ctxbench::record::RunDir::new(&dir)).unwrap();
        assert_eq!(model.units, 160);
        let kept: std::collections::BTreeSet<String> = std::fs::read_dir(dir.join("stores"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            kept,
            ctxbench::report::shown::shown_in_full(&model).unwrap()
        );
        // Many more failed verdicts than the page shows, and nothing else left out.
        let left_out = model.shown().1;
        assert_eq!(left_out.problems, 0);
        assert!(left_out.failed > 2 * MAX_FAILED_PER_VARIANT, "{left_out:?}");
        let said = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        let note = format!(
            "note: {} unit(s) whose verdict is fail report.html does not show in full (past the \
             first {MAX_FAILED_PER_VARIANT} of their variant): their offload stores (if \
             any) were not kept (samples.jsonl and results.csv list them; --keep-stores keeps every store)",
            left_out.failed
        );
        assert!(said.contains(&note), "{note}\n{stdout}");
        assert!(!said.contains("flagged unit(s)"), "{stdout}");
        assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(
            html.contains(&format!(
                "{} more unit(s) whose verdict is fail are not shown in full (past the first \
                 {MAX_FAILED_PER_VARIANT} of their variant).",
                left_out.failed
            )),
            "report.html does not count the {} failed verdicts it leaves out",
            left_out.failed
        );
    }
}

/// Units that leave no offload store (the synthetic executor without `store=1`, as units of an
/// eval without one), many flagged or failing their verdict past report.html's caps: the run's
/// closing lines give the page's count of the units it does not show in full, not a count of
/// the stores pruned (there are none; the closing lines said nothing while the page said 28
/// and 6).
#[test]
fn units_without_a_store_past_the_pages_caps_are_counted_as_the_page_counts_them() {
    use ctxbench::report::html::{MAX_FAILED_PER_VARIANT, MAX_FLAGGED_PER_VARIANT};
    let tmp = tempfile::tempdir().unwrap();
    let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini-swe-agent");
    // 20 traces × 2 variants × 4 needle samples = 160 units, half of them flagged.
    let suite = base_and_aggressive("nostore")
        .seed(1)
        .trace(datasets.join("*.traj.json"))
        .base("window = 20000")
        .eval("replay", "enabled = false")
        .eval(
            "needle",
            "depths = [0.3, 0.7]\npositions = [\"tool\", \"user\"]",
        )
        .write(tmp.path(), "nostore.toml");
    let out = Command::new(bin())
        .args(["run", suite.to_str().unwrap(), "--jobs", "4"])
        .args(["--executor", "synthetic:flag_every=2", "--run-id", "r"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let dir = tmp.path().join("out/r");
    assert!(!dir.join("stores").exists(), "no unit left a store");
    let (_, model, _) =
        ctxbench::report::load::load_model(&ctxbench::record::RunDir::new(&dir)).unwrap();
    assert_eq!(model.units, 160);
    // The page's count; no unit errored, so its errored or flagged units left out are flagged.
    let left_out = model.shown().1;
    assert!(support::run::samples(&dir)
        .iter()
        .all(|s| s.error.is_none()));
    assert!(left_out.problems > 0 && left_out.failed > 0, "{left_out:?}");
    let said = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for note in [
        format!(
            "note: {} flagged unit(s) report.html does not show in full (past the first \
             {MAX_FLAGGED_PER_VARIANT} flagged units of their variant)",
            left_out.problems
        ),
        format!(
            "note: {} unit(s) whose verdict is fail report.html does not show in full (past the \
             first {MAX_FAILED_PER_VARIANT} of their variant)",
            left_out.failed
        ),
    ] {
        assert!(said.contains(&note), "{note}\n{stdout}");
    }
    // The same numbers on the page.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for line in [
        format!(
            "{} more failed or flagged unit(s) are not shown in full",
            left_out.problems
        ),
        format!(
            "{} more unit(s) whose verdict is fail are not shown in full (past the first \
             {MAX_FAILED_PER_VARIANT} of their variant).",
            left_out.failed
        ),
    ] {
        assert!(html.contains(&line), "report.html does not say: {line}");
    }
}

/// A real trace (psf__requests-1142, whose tool outputs run to ~200k tokens) under digitorn at a
/// 20,000-token window leaves needle probes' requests over the window after every compaction
/// (`overflow` events; a model of that window would refuse them): each such unit is flagged in
/// results.csv and the terminal says so; deepagents, which offloads the large outputs, leaves
/// none on the same units.
#[test]
fn units_whose_requests_stay_over_the_window_are_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = SuiteBuilder::new("overflow")
        .seed(7)
        .mini_swe(&["psf__requests-1142.traj.json"])
        .baseline("deepagents")
        .base("window = 20000")
        .variant("deepagents", "preset = \"deepagents\"")
        .variant("digitorn", "preset = \"digitorn\"")
        .eval("replay", "enabled = false")
        .eval("needle", "depths = [0.5]\npositions = [\"tool\", \"user\"]")
        .write(tmp.path(), "overflow.toml");
    let out = Command::new(bin())
        .env("COLUMNS", "100")
        .args(["run", suite.to_str().unwrap(), "--run-id", "r"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let terminal = String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
    let dir = tmp.path().join("out/r");
    let samples: Vec<Sample> = support::run::samples(&dir);
    let over = |v: &str| {
        samples
            .iter()
            .filter(|s| s.variant == v && s.compactions.get("overflow").is_some_and(|n| *n > 0))
            .count()
    };
    assert_eq!(samples.len(), 4);
    assert_eq!(
        (over("deepagents"), over("digitorn")),
        (0, 2),
        "{samples:#?}"
    );
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let head = r.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|c| c == name).unwrap();
    let (variant, status) = (col("variant"), col("status"));
    for row in r.records().map(Result::unwrap) {
        if &row[variant] == "digitorn" {
            assert_eq!(&row[status], "flagged", "{row:?}");
        } else {
            assert_ne!(&row[status], "flagged", "{row:?}");
        }
    }
    let flat = terminal.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("FLAGGED: variant `digitorn`: 2 unit(s) on 1 trace(s) had")
            && flat.contains("still over the window after compaction"),
        "{terminal}"
    );
}

/// Files of a suite's trace paths that give no trace are never dropped silently: a broken trace
/// skipped under `skip_invalid` and a JSON file of no trace format are named by `--dry-run`,
/// the run's closing lines, report.md and run.json.
#[test]
fn trace_files_that_give_no_trace_are_named_wherever_the_run_is_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("traces");
    std::fs::create_dir(&dir).unwrap();
    let real = support::suite::mini_swe("psf__requests-1142.traj.json");
    std::fs::copy(&real, dir.join("good.traj.json")).unwrap();
    let bytes = std::fs::read(&real).unwrap();
    std::fs::write(dir.join("cut.traj.json"), &bytes[..3000]).unwrap();
    std::fs::write(dir.join("summary.json"), r#"{"total": 3, "passed": 1}"#).unwrap();
    let text = SuiteBuilder::new("left-out")
        .trace(&dir)
        .deepagents(20000)
        .eval("needle", "enabled = false")
        .text()
        .replace("[traces]\n", "[traces]\nskip_invalid = true\n");
    let suite = tmp.path().join("s.toml").display().to_string();
    std::fs::write(&suite, text).unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(bin())
            .env("COLUMNS", "100")
            .args(["run", &suite, "--run-id", "r"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let plan = run(&["--dry-run"]);
    assert!(
        plan.contains("skipped 1 trace file(s) that did not load")
            && plan.contains("cut.traj.json: line")
            && plan.contains("ignored 1 file(s) that hold no trace")
            && plan.contains("summary.json: a JSON object with keys total, passed"),
        "{plan}"
    );
    let closing = run(&[]);
    let report = std::fs::read_to_string(tmp.path().join("out/r/report.md")).unwrap();
    for shown in [
        &closing,
        &report.split_whitespace().collect::<Vec<_>>().join(" "),
    ] {
        assert!(
            shown.contains("left out: 1 trace file(s) that did not load")
                && shown.contains("cut.traj.json (line")
                && shown.contains(
                    "left out: 1 file(s) the suite's trace paths matched that hold no trace"
                )
                && shown.contains("summary.json (a JSON object with keys total, passed)"),
            "{shown}"
        );
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/r/run.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["skipped_traces"].as_array().map(Vec::len), Some(1));
    assert_eq!(manifest["ignored_files"].as_array().map(Vec::len), Some(1));
}

/// What the importers changed in a run's traces is never dropped silently: real traces whose
/// import warns (τ-bench's reused tool call ids renamed, an OpenHands `finish` call with no
/// result, a Codex rollout whose arguments were redacted) are counted by kind, with the first
/// place, by `--dry-run`, the run's closing lines, run.json `import_warnings`, report.md and
/// report.html; `--verbose` lists each on stderr. The run said nothing of them anywhere.
#[test]
fn import_warnings_are_shown_wherever_the_run_is_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = SuiteBuilder::new("warned")
        .dataset("tau-bench/gpt-4o-airline.json")
        .dataset("openhands/basic.json")
        .dataset("codex/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl")
        .deepagents(20000)
        .write(tmp.path(), "s.toml");
    let run = |extra: &[&str]| {
        let out = Command::new(bin())
            .env("COLUMNS", "100")
            .arg("run")
            .arg(&suite)
            .args(["--run-id", "r", "--eval", "replay"])
            .args([
                "--trace",
                "gpt-4o-airline__task0_trial0",
                "--trace",
                "basic",
            ])
            .args(["--trace", "rollout-*"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let flat = |b: Vec<u8>| {
            String::from_utf8(b)
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        (flat(out.stdout), flat(out.stderr))
    };
    // task0_trial0: 2 ids renamed; basic: 1 call with no result; the rollout: 118 arguments.
    let (plan, _) = run(&["--dry-run"]);
    // The plan's lines stay within 100 columns, its warnings' too (a path longer than a line
    // is not cut: it stands alone on its line).
    let raw = Command::new(bin())
        .env("COLUMNS", "100")
        .arg("run")
        .arg(&suite)
        .args(["--run-id", "r", "--eval", "replay", "--dry-run"])
        .args([
            "--trace",
            "gpt-4o-airline__task0_trial0",
            "--trace",
            "basic",
        ])
        .args(["--trace", "rollout-*"])
        .output()
        .unwrap();
    let raw = String::from_utf8(raw.stdout).unwrap();
    for line in raw.lines() {
        assert!(
            line.chars().count() <= 100 || !line.trim().contains(' '),
            "{line}\n{raw}"
        );
    }
    assert!(
        plan.contains("121 import warning(s) in 3 trace(s)")
            && plan.contains(
                "118× arguments are not valid JSON (expected value at line N column N); kept \
                 as a string (first: "
            )
            && plan.contains(
                "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl:17"
            )
            && plan.contains(
                "2× tool call id \"…\" was already used in this trace; renamed to \"…\" (first: "
            )
            && plan.contains("gpt-4o-airline.json $[0].traj[12].tool_calls[0])")
            && plan.contains("1× tool call \"…\" (finish) has no result"),
        "{plan}"
    );
    let (closing, listed) = run(&["--verbose"]);
    let dir = tmp.path().join("out/r");
    let flat = |f: &str| {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (what, shown) in [
        ("terminal", closing),
        ("report.md", flat("report.md").replace('\\', "")),
        ("report.html", flat("report.html").replace("&quot;", "\"")),
    ] {
        assert!(
            shown.contains("import warnings: 3 trace(s) were altered on import (121 warning(s)")
                && shown.contains("118× arguments are not valid JSON")
                && shown.contains("2× tool call id \"…\" was already used in this trace")
                && shown.contains("1× tool call \"…\" (finish) has no result"),
            "{what}: {shown}"
        );
    }
    assert!(
        listed.contains("121 import warning(s) in 3 trace(s)")
            && listed.contains("[basic]: message 3: tool call")
            && listed.contains("line 17: $.payload.arguments: arguments are not valid JSON"),
        "{listed}"
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let w = &manifest["import_warnings"];
    assert_eq!(w["total"], 121, "{w}");
    assert_eq!(w["traces"], 3, "{w}");
    assert_eq!(w["kinds"].as_array().map(Vec::len), Some(3), "{w}");
    assert_eq!(w["kinds"][0]["count"], 118, "{w}");
    assert!(
        w["kinds"][0]["first"].as_str().unwrap().ends_with(
            "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl:17 \
             [rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9] \
             $.payload.arguments"
        ),
        "{w}"
    );
}

/// The files `report` writes, read back: summary.json, report.md, report.html, results.csv.
fn reported(dir: &Path) -> (serde_json::Value, String, String, String) {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    (
        support::cli::json(&dir.join("summary.json")),
        read("report.md"),
        read("report.html"),
        read("results.csv"),
    )
}

#[test]
fn a_unit_journaled_twice_counts_once_in_every_output_and_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = tmp.path().join("out");
    Command::new(bin())
        .args(run_args(&suite, &["--run-id", "dup"]))
        .assert()
        .success();
    let dir = out.join("dup");
    let (summary, md, html, csv) = reported(&dir);
    let journal = dir.join("samples.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(UNITS / 2, lines[3]);
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();

    let o = Command::new(bin())
        .args(["report", dir.to_str().unwrap(), "--no-png"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let (dup_summary, dup_md, dup_html, dup_csv) = reported(&dir);
    let notes = dup_summary["summary"]["notes"].as_array().unwrap();
    assert!(
        notes[0]
            .as_str()
            .unwrap()
            .starts_with("1 unit(s) appear more than once in the journal"),
        "{notes:?}"
    );
    // Apart from that note, every figure is the one of the journal without the copy.
    let mut without_note = dup_summary.clone();
    without_note["summary"]["notes"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    assert_eq!(without_note, summary);
    assert_eq!(dup_summary["summary"]["totals"]["units"], UNITS);
    assert_eq!(dup_csv, csv, "results.csv: one row per unit");
    assert_eq!(dup_csv.lines().count(), UNITS + 1);
    assert!(dup_md.contains(&format!("{UNITS} unit(s), ")), "{dup_md}");
    assert_eq!(md.replace("more than once", ""), md);
    assert!(dup_html.contains(&format!("{UNITS} unit(s), ")));
    assert_ne!(html, dup_html, "the page notes the copy");

    // A resume counts units, not lines: nothing to run, and never more than the plan.
    let o = Command::new(bin())
        .args(run_args(&suite, &["--resume", dir.to_str().unwrap()]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let run = support::cli::json(&dir.join("run.json"));
    assert_eq!(run["units"]["recorded"], UNITS, "{}", run["units"]);
    assert_eq!(run["status"], "complete");
}

#[test]
fn a_repaired_run_is_reported_as_partial_until_resumed() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = suite(tmp.path());
    let out = tmp.path().join("out");
    Command::new(bin())
        .args(run_args(&suite, &["--run-id", "cut"]))
        .assert()
        .success();
    let dir = out.join("cut");
    let journal = dir.join("samples.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let half = &lines[9][..lines[9].len() / 2].to_string();
    lines[9] = half;
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    Command::new(bin())
        .args(["repair", dir.to_str().unwrap()])
        .assert()
        .success();
    let run = support::cli::json(&dir.join("run.json"));
    assert_eq!(run["status"], "incomplete");
    assert_eq!(run["units"]["recorded"], UNITS - 1);

    let o = Command::new(bin())
        .args(["report", dir.to_str().unwrap(), "--no-png"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let note = format!(
        "partial run: {} of {UNITS} planned unit(s) recorded (status `incomplete`: units of \
         the plan are missing); 1 unreadable line(s) were moved to samples.rejected.jsonl by \
         `ctxbench repair`, and `run --resume` runs their units again",
        UNITS - 1
    );
    let (summary, md, html, _) = reported(&dir);
    let first = summary["summary"]["notes"][0].as_str().unwrap();
    assert!(first.starts_with(&note), "{first}");
    assert_eq!(summary["summary"]["totals"]["units"], UNITS - 1);
    assert!(md.contains(&note), "{md}");
    assert!(
        html.contains(&format!("partial run: {} of {UNITS} planned", UNITS - 1))
            && html.contains("samples.rejected.jsonl by <code>ctxbench repair</code>"),
        "report.html"
    );
    let terminal = String::from_utf8_lossy(&o.stdout).replace('\n', " ");
    assert!(
        terminal.contains("partial run:") && terminal.contains("samples.rejected.jsonl"),
        "{terminal}"
    );

    // Resumed, the unit ran again: complete, no note (the rejected line stays, for a look).
    Command::new(bin())
        .args(run_args(&suite, &["--resume", dir.to_str().unwrap()]))
        .assert()
        .success();
    let run = support::cli::json(&dir.join("run.json"));
    assert_eq!(run["status"], "complete");
    let (summary, md, ..) = reported(&dir);
    assert!(!md.contains("partial run"), "{md}");
    assert_eq!(summary["summary"]["totals"]["units"], UNITS);

    // A readable line of a unit journaled before: nothing to move, and repair says the figures
    // count it once (it said "every line is readable (N samples)" only).
    let text = std::fs::read_to_string(&journal).unwrap();
    let first = text.lines().next().unwrap().to_string();
    std::fs::write(&journal, format!("{text}{first}\n")).unwrap();
    Command::new(bin())
        .args(["repair", dir.to_str().unwrap()])
        .assert()
        .success()
        .stderr(predicates::str::contains(format!(
            "every line is readable ({} samples; 1 of them repeat a unit journaled before",
            UNITS + 1
        )));
}
