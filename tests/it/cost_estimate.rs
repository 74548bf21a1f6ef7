//! `run --dry-run` prints a cost estimate per role, and `run` refuses to start when the
//! estimate's upper end exceeds the budget unless `--ignore-estimate` (#26 point 7).

use std::path::Path;

use crate::support::cli::ctxbench;
use crate::support::strict_llm::StrictLlm;
use crate::support::suite::{provider_table, quickstart_with};

fn openai(base_url: &str) -> String {
    ["agent", "summary"]
        .iter()
        .map(|role| provider_table(role, "openai", "gpt-4o-mini", base_url))
        .collect()
}

const SELECT: [&str; 6] = ["--limit", "1", "--eval", "replay", "--eval", "needle"];

fn run(suite: &Path, flags: &[&str]) -> (Option<i32>, String, String) {
    run_as("est", suite, flags)
}

fn run_as(id: &str, suite: &Path, flags: &[&str]) -> (Option<i32>, String, String) {
    let o = ctxbench()
        .args(["run", suite.to_str().unwrap(), "--run-id", id, "-q"])
        .args(SELECT)
        .args(flags)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The `$lo–$hi` of the `total spent` row.
fn total_spent(stdout: &str) -> (f64, f64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("total spent"))
        .unwrap_or_else(|| panic!("no total row:\n{stdout}"));
    let cost = line.split_whitespace().last().unwrap();
    let (lo, hi) = cost.split_once('–').unwrap();
    let num = |s: &str| s.trim_start_matches('$').parse::<f64>().unwrap();
    (num(lo), num(hi))
}

#[test]
fn dry_run_prints_the_estimate_per_role_offline_at_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite.toml");
    std::fs::write(&suite, quickstart_with(&tmp.path().join("out"), "")).unwrap();
    let (code, stdout, stderr) = run(&suite, &["--dry-run"]);
    assert_eq!(code, Some(0), "{stderr}");
    for role in [
        "agent (modelled)",
        "summarizer",
        "eval agent",
        "total spent",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(role)),
            "{role}:\n{stdout}"
        );
    }
    assert_eq!(total_spent(&stdout), (0.0, 0.0), "{stdout}");
    assert!(!tmp.path().join("out").exists(), "a dry run writes nothing");
}

#[test]
fn an_estimate_above_the_budget_refuses_to_start_unless_ignored() {
    let (_rt, server) = StrictLlm::on_own_runtime();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let suite = tmp.path().join("suite.toml");
    std::fs::write(
        &suite,
        quickstart_with(&out, &openai(&server.openai_base_url())),
    )
    .unwrap();

    let (code, stdout, stderr) = run(&suite, &["--dry-run"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (lo, hi) = total_spent(&stdout);
    assert!(0.0 < lo && lo < hi, "{stdout}");
    assert_eq!(server.accepted(), 0, "a dry run calls no model");

    // Below the low end: refused before anything is written or asked, naming the flag.
    let budget = format!("{}", lo / 2.0);
    let set = format!("suite.max_cost_usd={budget}");
    for flags in [["--max-cost-usd", budget.as_str()], ["--set", set.as_str()]] {
        let (code, _, stderr) = run(&suite, &flags);
        assert_eq!(code, Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains("estimated spend"), "{stderr}");
        assert!(stderr.contains("--ignore-estimate"), "{stderr}");
        let refusal = stderr
            .lines()
            .find(|l| l.contains("estimated spend"))
            .unwrap();
        assert!(
            !refusal.contains("  "),
            "a run of spaces mid-sentence: {refusal}"
        );
        assert!(!out.join("est").exists(), "{flags:?}: nothing written");
    }
    assert_eq!(server.accepted(), 0);

    // Above the high end: it starts.
    let enough = format!("{}", hi * 2.0);
    let (code, _, stderr) = run_as("ok", &suite, &["--max-cost-usd", &enough]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(server.accepted() > 0);

    // The override: the same low budget starts; the budget then stops it while it spends.
    let (code, _, stderr) = run(&suite, &["--max-cost-usd", &budget, "--ignore-estimate"]);
    assert!(matches!(code, Some(0 | 1)), "{code:?}: {stderr}");
    assert!(out.join("est/run.json").exists(), "{stderr}");
}

#[test]
fn a_budget_over_an_unpriced_model_refuses_to_start_and_warns_when_ignored() {
    let (_rt, server) = StrictLlm::on_own_runtime();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let suite = tmp.path().join("suite.toml");
    let providers: String = ["agent", "summary"]
        .iter()
        .map(|role| provider_table(role, "openai", "my-finetune-7b", &server.openai_base_url()))
        .collect();
    std::fs::write(&suite, quickstart_with(&out, &providers)).unwrap();

    // The dry run says which model makes the cost unknown.
    let (code, stdout, stderr) = run(&suite, &["--dry-run"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("no price for `my-finetune-7b` (summarizer)"),
        "{stdout}"
    );
    // Wrapped at 100 columns, as the plan above it (it ran to 129 for two roles).
    assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");

    // A budget it could not count: refused before anything is written or asked.
    let (code, _, stderr) = run(&suite, &["--max-cost-usd", "5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot be enforced")
            && stderr.contains("`my-finetune-7b` (eval agent)")
            && stderr.contains("[pricing]")
            && stderr.contains("--ignore-estimate"),
        "{stderr}"
    );
    assert!(!out.join("est").exists());
    assert_eq!(server.accepted(), 0);

    // Started anyway: the run says the budget counted none of that spend.
    let (code, _, stderr) = run(&suite, &["--max-cost-usd", "5", "--ignore-estimate"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(server.accepted() > 0);
    assert!(
        stderr.contains("at an unknown price, which max_cost_usd could not count"),
        "{stderr}"
    );
}

/// `--dry-run --shard` says how many of the plan's units the shard runs (it printed the whole
/// plan as if it were the shard's); `--dry-run --resume` is refused, not a plan made with the
/// resumed run's overrides.
#[test]
fn dry_run_with_a_shard_counts_its_units_and_with_resume_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite.toml");
    std::fs::write(&suite, quickstart_with(&tmp.path().join("out"), "")).unwrap();
    let count = |shard: &str| -> usize {
        let (code, stdout, stderr) = run(&suite, &["--dry-run", "--shard", shard]);
        assert_eq!(code, Some(0), "{stderr}");
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("shard    {shard}: ")))
            .unwrap_or_else(|| panic!("{stdout}"));
        line.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    let (a, b) = (count("1/2"), count("2/2"));
    let (_, stdout, _) = run(&suite, &["--dry-run"]);
    let total: usize = stdout
        .lines()
        .next()
        .and_then(|l| l.rsplit("= ").next())
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(a > 0 && b > 0, "{a} {b}");
    assert_eq!(a + b, total, "the shards split the plan");

    // A real run to resume: the dry run refuses to plan it.
    let (code, _, stderr) = run(&suite, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let dir = tmp.path().join("out/est");
    let o = ctxbench()
        .args([
            "run",
            suite.to_str().unwrap(),
            "-q",
            "--dry-run",
            "--resume",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--dry-run plans a fresh run"), "{stderr}");
}

/// `--dry-run` keeps within 100 columns like the rest of the CLI: a trace's file goes under its
/// id when the two do not fit on one line, an id or a path too long for a line of its own is
/// shortened around a `…` (two ids that differ only in their middle still read apart), and a
/// long suite name or variant list wraps under its label. It printed `  <id>  (<path>)` whole,
/// however long (the quickstart's own scikit-learn trace took 104 columns).
#[test]
fn dry_run_fits_100_columns_with_long_trace_ids_and_paths() {
    use crate::support::suite::{mini_swe, SuiteBuilder};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp
        .path()
        .join("a-directory-of-traces-with-a-long-name".repeat(2));
    std::fs::create_dir_all(&dir).unwrap();
    // Two ids of 150 characters that differ only in their middle, and a short one.
    let long = |c: char| format!("{}{c}{}", "x".repeat(75), "y".repeat(74));
    let names = [long('a'), long('b'), "short".to_string()];
    let src = mini_swe("astropy__astropy-12907.traj.json");
    for n in &names {
        std::fs::copy(&src, dir.join(format!("{n}.traj.json"))).unwrap();
    }
    std::fs::copy(&src, tmp.path().join("brief.traj.json")).unwrap();
    let mut suite = SuiteBuilder::new(&format!("a-suite-{}", "named-at-length-".repeat(6)))
        .output_dir(&tmp.path().join("out"))
        .trace(tmp.path().join("brief.traj.json"))
        .trace(dir.join("*.traj.json"))
        .baseline("base")
        .variant("base", "");
    for i in 0..12 {
        suite = suite.variant(
            &format!("variant-number-{i}"),
            "summarize.trigger.fraction = 0.5",
        );
    }
    let suite = suite.eval("replay", "").write(tmp.path(), "suite.toml");
    let o = ctxbench()
        .args(["run", suite.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for l in stdout.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}\n{stdout}",
            l.chars().count()
        );
    }
    // Each trace is listed once: its id and file on one line when they fit (`brief`), else the
    // file under the id.
    let traces: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "traces")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(traces.len(), 7, "{stdout}");
    assert!(
        traces[0].starts_with("  brief  (/") && traces[0].ends_with("/brief.traj.json)"),
        "{stdout}"
    );
    let (ids, files): (Vec<&str>, Vec<&str>) = (
        traces[1..].iter().step_by(2).copied().collect(),
        traces[2..].iter().step_by(2).copied().collect(),
    );
    assert_eq!(ids[0], "  short", "{stdout}");
    // Shortened around a `…`, the two long ones (and their files) never alike.
    assert!(ids[1].contains('…') && ids[1] != ids[2], "{stdout}");
    assert!(files[1] != files[2], "{stdout}");
    for f in &files {
        assert!(
            f.starts_with("    (/") && f.contains('…') && f.ends_with(".traj.json)"),
            "{stdout}"
        );
    }
    // A wrapped value continues under itself.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("         variant-number")),
        "{stdout}"
    );
    assert!(stdout.contains("variant-number-11"), "{stdout}");
}
