//! The example GitHub Actions workflow (`.github/workflows/ctxbench.yml`), checked as far as it
//! can run here: its structure, every `ctxbench` command it runs exists with the flags it
//! passes, shards joined by `merge` equal the unsharded run, and the gate writes the step
//! summary with the documented exit codes.

use crate::support::cli::ctxbench;
use std::path::{Path, PathBuf};

const WORKFLOW: &str = ".github/workflows/ctxbench.yml";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn workflow() -> String {
    std::fs::read_to_string(root().join(WORKFLOW)).unwrap()
}

/// The shell text of every `run:` step (inline or `run: |` block), continuation lines joined.
fn run_scripts(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut scripts = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim_start().trim_start_matches("- ");
        if let Some(rest) = t.strip_prefix("run:") {
            let rest = rest.trim();
            if rest == "|" {
                let base = indent(l);
                let mut body = String::new();
                i += 1;
                while i < lines.len() && (lines[i].trim().is_empty() || indent(lines[i]) > base) {
                    body.push_str(lines[i].trim());
                    body.push('\n');
                    i += 1;
                }
                scripts.push(body.replace("\\\n", " "));
                continue;
            }
            scripts.push(rest.to_string());
        }
        i += 1;
    }
    scripts
}

/// `(subcommand, flags)` of every `ctxbench …` command in the scripts.
fn ctxbench_commands(scripts: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for script in scripts {
        for line in script.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            for (i, w) in words.iter().enumerate() {
                if *w != "ctxbench" {
                    continue;
                }
                let Some(sub) = words.get(i + 1).filter(|s| !s.starts_with('-')) else {
                    continue;
                };
                let flags = words[i + 2..]
                    .iter()
                    .take_while(|w| !matches!(**w, "|" | "&&" | "||" | ";" | ">>" | ">"))
                    .filter(|w| w.starts_with('-'))
                    .map(|w| w.split('=').next().unwrap().to_string())
                    .collect();
                out.push((sub.to_string(), flags));
            }
        }
    }
    out
}

#[test]
fn the_workflow_is_well_formed() {
    let y = workflow();
    assert!(!y.contains('\t'), "YAML forbids tabs");
    for (n, l) in y.lines().enumerate() {
        let ind = l.len() - l.trim_start().len();
        assert!(
            l.trim().is_empty() || ind % 2 == 0,
            "line {}: odd indentation",
            n + 1
        );
    }
    for key in ["name:", "on:", "permissions:", "jobs:"] {
        assert!(
            y.lines()
                .any(|l| l == key || l.starts_with(&format!("{key} "))),
            "top-level {key}"
        );
    }
    for job in ["build:", "shard:", "merge:"] {
        assert!(y.lines().any(|l| l == format!("  {job}")), "job {job}");
    }
    // The shard count comes from the matrix itself, so adding a shard is one edit.
    assert!(y.contains("matrix:\n        shard: [1, 2, 3, 4]"));
    assert!(y.contains("--shard \"$((${{ strategy.job-index }} + 1))/${{ strategy.job-total }}\""));
    assert!(y.contains("needs: [build, shard]"));
    // What one job uploads is what the next downloads.
    assert!(y.contains("name: ctxbench-shard-${{ matrix.shard }}"));
    assert!(y.contains("pattern: ctxbench-shard-*"));
    assert!(y.contains("ctxbench merge shards/ctxbench-shard-*"));
    assert!(y.contains("name: ctxbench-baseline") && y.contains("-n ctxbench-baseline"));
    assert!(y.contains("GITHUB_STEP_SUMMARY"));
    for l in y.lines().filter(|l| l.contains("uses:")) {
        assert!(l.contains("@v"), "pin actions to a major version: {l}");
    }
}

#[test]
fn every_ctxbench_command_of_the_workflow_exists_with_its_flags() {
    let commands = ctxbench_commands(&run_scripts(&workflow()));
    let subs: Vec<&str> = commands.iter().map(|(s, _)| s.as_str()).collect();
    for needed in ["run", "merge", "report", "gate"] {
        assert!(
            subs.contains(&needed),
            "no `ctxbench {needed}` found in {subs:?}"
        );
    }
    for (sub, flags) in &commands {
        let help = ctxbench()
            .args([sub.as_str(), "--help"])
            .assert()
            .append_context("command", format!("ctxbench {sub} {flags:?}"))
            .success();
        let help = String::from_utf8_lossy(&help.get_output().stdout).into_owned();
        for f in flags {
            let listed = if f.starts_with("--") {
                help.contains(&format!("{f} ")) || help.contains(&format!("{f}\n"))
            } else {
                help.contains(&format!("{f}, "))
            };
            assert!(listed, "`ctxbench {sub}` has no flag {f}:\n{help}");
        }
    }
}

fn run(out: &Path, id: &str, extra: &[&str]) -> PathBuf {
    ctxbench()
        .args([
            "run",
            "evals/quickstart.toml",
            "-q",
            "--limit",
            "1",
            "--run-id",
            id,
            "-o",
        ])
        .arg(out)
        .args(extra)
        .assert()
        .success();
    out.join(id)
}

fn samples(dir: &Path) -> Vec<ctxbench::record::Sample> {
    let mut s = ctxbench::record::RunDir::new(dir).read().unwrap().samples;
    for x in &mut s {
        x.latency_ms = 0; // the one field allowed to differ between two runs of a unit
    }
    s.sort_by(|a, b| a.unit_id.cmp(&b.unit_id));
    s
}

fn csv_without_latency(dir: &Path) -> Vec<Vec<String>> {
    let mut r = ::csv::Reader::from_path(dir.join("results.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let lat = h.iter().position(|c| c == "latency_ms").unwrap();
    let mut rows: Vec<Vec<String>> = r
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            rec.iter()
                .enumerate()
                .filter(|(i, _)| *i != lat)
                .map(|(_, c)| c.to_string())
                .collect()
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn shards_merge_to_the_unsharded_run_and_the_gate_writes_the_step_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let full = run(&tmp.path().join("runs"), "full", &[]);
    // The layout the merge job sees after downloading the shard artifacts.
    let shards = tmp.path().join("shards");
    let s1 = run(&shards, "ctxbench-shard-1", &["--shard", "1/2"]);
    let s2 = run(&shards, "ctxbench-shard-2", &["--shard", "2/2"]);
    let (a, b) = (samples(&s1), samples(&s2));
    assert!(!a.is_empty() && !b.is_empty(), "both shards have units");
    assert!(
        a.iter().all(|x| b.iter().all(|y| y.unit_id != x.unit_id)),
        "disjoint"
    );

    let merged = tmp.path().join("reports/merged");
    ctxbench()
        .arg("merge")
        .arg(&s1)
        .arg(&s2)
        .arg("-o")
        .arg(&merged)
        .assert()
        .success();
    ctxbench().arg("report").arg(&merged).assert().success();
    assert_eq!(
        samples(&merged),
        samples(&full),
        "merged shards = unsharded run"
    );
    assert_eq!(csv_without_latency(&merged), csv_without_latency(&full));
    // The long summary texts the samples name came along from both shards (report.html
    // shows them as each shard's own report would).
    let merged_samples = samples(&merged);
    let long: Vec<_> = merged_samples
        .iter()
        .flat_map(|s| &s.summaries)
        .filter(|r| r.file.is_some())
        .collect();
    assert!(!long.is_empty(), "the quickstart records long summaries");
    let texts = ctxbench::record::RunDir::new(&merged)
        .summary_texts(long.iter().copied())
        .unwrap();
    for r in &long {
        assert!(
            texts.contains_key(&r.text_digest),
            "{} not carried",
            r.text_digest
        );
    }

    // The gate step: exit 0 and its verdict appended to the step summary.
    let summary = tmp.path().join("step-summary.md");
    std::fs::write(&summary, "# earlier steps\n").unwrap();
    let gate = |rule: &str| {
        let mut c = ctxbench();
        c.env("GITHUB_STEP_SUMMARY", &summary)
            .arg("gate")
            .arg(&merged)
            .arg("--baseline")
            .arg(&full)
            .args(["--rule", rule, "--junit"])
            .arg(merged.join("gate.xml"));
        c
    };
    gate("needle.recall.delta >= -0.05").assert().code(0);
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("# earlier steps\n"),
        "appended, not replaced"
    );
    assert!(text.contains("needle.recall.delta"), "{text}");
    assert!(text.contains('|'), "a Markdown table: {text}");
    assert!(merged.join("gate.xml").exists());

    // A missed threshold fails the job (exit 10) and says so in the summary.
    let before = text.len();
    gate("needle.recall >= 1.01").assert().code(10);
    let text = std::fs::read_to_string(&summary).unwrap();
    let added = &text[before..];
    assert!(added.contains("needle.recall >= 1.01"), "{added}");
    assert!(added.to_lowercase().contains("fail"), "{added}");

    // A bad rule is a usage error (exit 2), not a regression.
    gate("needle.recall >=").assert().code(2);
}
