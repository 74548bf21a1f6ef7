//! `ctxbench report` and `ctxbench compare` end to end on synthetic runs written to disk, and
//! snapshots of the `--help` of report, compare, gate, import, traces stats, schema and replay;
//! every command's `--help` has examples of its flags.

use crate::support;

use crate::support::cli::ctxbench;
use predicates::prelude::*;

fn help(sub: &str) -> String {
    help_of(&[sub])
}

fn help_of(cmd: &[&str]) -> String {
    let out = ctxbench()
        .args(cmd)
        .arg("--help")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn report_help() {
    insta::assert_snapshot!("report_help", help("report"));
}

#[test]
fn compare_help() {
    insta::assert_snapshot!("compare_help", help("compare"));
}

#[test]
fn gate_help() {
    insta::assert_snapshot!("gate_help", help("gate"));
}

#[test]
fn import_traces_schema_and_replay_help() {
    insta::assert_snapshot!("import_help", help("import"));
    insta::assert_snapshot!("traces_stats_help", help_of(&["traces", "stats"]));
    insta::assert_snapshot!("schema_help", help("schema"));
    insta::assert_snapshot!("replay_help", help("replay"));
}

/// The text after `Example` in a command's `--help`.
fn examples(cmd: &[&str]) -> String {
    let h = help_of(cmd);
    let at = h
        .find("Example")
        .unwrap_or_else(|| panic!("`ctxbench {} --help` has no examples:\n{h}", cmd.join(" ")));
    h[at..].to_string()
}

#[test]
fn every_command_help_has_examples_of_its_new_flags() {
    use clap::CommandFactory;
    // Every subcommand (and `traces stats`) shows examples, including any added later.
    let cli = ctxbench::cli::Cli::command();
    for sub in cli.get_subcommands() {
        let name = sub.get_name();
        if sub.has_subcommands() {
            for leaf in sub.get_subcommands() {
                examples(&[name, leaf.get_name()]);
            }
        } else {
            examples(&[name]);
        }
    }
    // The flags the CLI conventions added, each in an example of its command.
    let flags: &[(&[&str], &[&str])] = &[
        (
            &["run"],
            &[
                "--set",
                "--variant",
                "--trace",
                "--eval",
                "--limit",
                "--dry-run",
                " -o ",
                " -q",
                "CTXBENCH_PROGRESS_SECS",
                "--shard",
                "--resume",
                "--keep-stores",
            ],
        ),
        (&["gate"], &["--json", "--junit", "--rule ", "--rules"]),
        (
            &["import"],
            &["--verbose", " -o ", "--from", "--skip-invalid"],
        ),
        (
            &["traces", "stats"],
            &["--json", "--counter", "--top", "--overhead-tokens"],
        ),
        (
            &["schema"],
            &["sample", "summary", "compare", "trace", "suite"],
        ),
        (&["report"], &[" -o ", "--no-png"]),
        (&["compare"], &[" -o "]),
        (&["merge"], &[" -o "]),
        (
            &["clean"],
            &["--older-than", "--keep", "--stores", "--cache", "--dry-run"],
        ),
    ];
    for (cmd, wanted) in flags {
        let ex = examples(cmd);
        for f in *wanted {
            assert!(
                ex.contains(f),
                "`ctxbench {} --help` has no example with `{f}`:\n{ex}",
                cmd.join(" ")
            );
        }
    }
}

#[test]
fn report_rerenders_every_file_from_a_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run-1");
    support::report::write_run(
        &run,
        &support::report::info("run-1"),
        &support::report::samples(),
    );
    ctxbench()
        .args(["report"])
        .arg(&run)
        .assert()
        .success()
        .stdout(predicate::str::contains("aggressive"))
        .stdout(predicate::str::contains("report.html"));
    for f in ["results.csv", "summary.json", "report.md", "report.html"] {
        let p = run.join(f);
        assert!(
            p.metadata().map(|m| m.len() > 100).unwrap_or(false),
            "{f} missing or empty"
        );
    }
    let plots: Vec<String> = std::fs::read_dir(run.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for prefix in [
        "context-",
        "cost-vs-recall",
        "needle-heatmap-",
        "cost-per-variant",
    ] {
        for ext in [".svg", ".png"] {
            assert!(
                plots
                    .iter()
                    .any(|p| p.starts_with(prefix) && p.ends_with(ext)),
                "no {prefix}*{ext} in {plots:?}"
            );
        }
    }
    let png = std::fs::read(run.join("plots/cost-vs-recall.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    // Re-rendering is deterministic.
    let first = std::fs::read_to_string(run.join("report.md")).unwrap();
    ctxbench()
        .args(["report", "--no-png"])
        .arg(&run)
        .assert()
        .success();
    assert_eq!(
        first,
        std::fs::read_to_string(run.join("report.md")).unwrap()
    );
}

/// `report RUN -o OUT` never writes into another run's directory (its own report files would be
/// replaced beside a run.json that is not theirs: docs/reliability.md, "One writer"); into RUN's
/// own directory (however spelled) and into a directory that is no run it does.
#[test]
fn report_refuses_to_write_into_another_runs_directory() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("run-a");
    let b = dir.path().join("run-b");
    let samples = support::report::samples();
    support::report::write_run(&a, &support::report::info("run-a"), &samples);
    support::report::write_run(&b, &support::report::info("run-b"), &samples[..3]);
    ctxbench()
        .args(["report", "--no-png"])
        .arg(&b)
        .assert()
        .success();
    let files = ["report.md", "report.html", "results.csv", "summary.json"];
    let read = |d: &std::path::Path| files.map(|f| std::fs::read(d.join(f)).unwrap());
    let before = read(&b);
    let o = ctxbench()
        .args(["report", "--no-png"])
        .arg(&a)
        .arg("-o")
        .arg(&b)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        flat(&err).contains("another run's directory") && err.contains("run.json"),
        "{err}"
    );
    assert!(read(&b) == before, "run-b's report files are its own still");
    // A journal alone makes a run directory too.
    std::fs::remove_file(b.join("run.json")).unwrap();
    ctxbench()
        .args(["report", "--no-png"])
        .arg(&a)
        .arg("-o")
        .arg(&b)
        .assert()
        .code(2);
    // RUN's own directory, by another spelling, and a directory that is no run are fine.
    ctxbench()
        .args(["report", "--no-png"])
        .arg(&a)
        .arg("-o")
        .arg(dir.path().join("run-b/../run-a/"))
        .assert()
        .success();
    ctxbench()
        .args(["report", "--no-png"])
        .arg(&a)
        .arg("-o")
        .arg(dir.path().join("elsewhere"))
        .assert()
        .success();
    assert!(dir.path().join("elsewhere/report.md").is_file());
}

/// `text` with every run of whitespace one space: an error message wrapped to the terminal's
/// width, read as one line.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a run killed before it first wrote run.json leaves: `.lock`, an empty samples.jsonl and
/// perhaps a half-written `.run.json.tmp` (docs/reliability.md, "Resume").
fn never_started(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(".lock"), "4999999\n").unwrap();
    std::fs::write(dir.join("samples.jsonl"), "").unwrap();
    std::fs::write(dir.join(".run.json.tmp"), "{\n  \"schema_version\": ").unwrap();
}

/// The command a message suggests names a path with spaces, a quote or a `$` as one shell
/// word, kept whole on its line however the message wraps: pasted into a shell it names the
/// run directory itself (it was pasted as written, `--resume /tmp/my  run's $x`: three words
/// and an unclosed quote).
#[cfg(unix)]
#[test]
fn a_suggested_command_quotes_a_path_for_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a".repeat(40);
    let early = dir.path().join(format!("{long} my  run's $x"));
    never_started(&early);
    let e = early.to_str().unwrap();
    let o = ctxbench().args(["report", e]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
    // Lines end only between words: joined with a space, the command is as written.
    let joined = err.lines().collect::<Vec<_>>().join(" ");
    let start = joined.find("`ctxbench run SUITE --resume ").expect(&joined);
    let cmd = &joined[start + 1..];
    let word = cmd["ctxbench run SUITE --resume ".len()..]
        .split('`')
        .next()
        .unwrap();
    let shell = std::process::Command::new("sh")
        .args(["-c", &format!("printf %s {word}")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&shell.stdout), e, "{err}");
}

/// `report`, `compare` and `gate` on a run that never started say so, and what to do (start it
/// over with `run --resume`, or `clean` it), with exit 2 naming the argument and the path,
/// every line within 100 columns; they write nothing into it.
#[test]
fn readers_say_a_run_never_started_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("done");
    support::report::write_run(
        &run,
        &support::report::info("done"),
        &support::report::samples(),
    );
    let early = dir.path().join("early");
    never_started(&early);
    let p = |d: &std::path::Path| d.to_str().unwrap().to_string();
    let (r, e) = (p(&run), p(&early));
    let rule = ["--rule", "tokens.delta_pct <= 5"];
    let cases: [(Vec<&str>, &str, &str); 5] = [
        (vec!["report", &e], "RUN_DIR", "report"),
        (vec!["compare", &r, &e], "RUN_B", "compare"),
        (vec!["compare", &e, &r, "-o", &r], "RUN_A", "compare"),
        (
            [vec!["gate", &e, "--baseline", &r], rule.to_vec()].concat(),
            "RUN",
            "gate",
        ),
        (
            [vec!["gate", &r, "--baseline", &e], rule.to_vec()].concat(),
            "--baseline",
            "gate",
        ),
    ];
    for (args, arg, nothing_to) in cases {
        let o = ctxbench().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let text = flat(&err);
        assert!(
            text.contains(&format!("{arg} {e}: this run never started"))
                && text.contains(&format!("nothing to {nothing_to}"))
                && text.contains(&format!("`ctxbench run SUITE --resume {e}`"))
                && text.contains("`ctxbench clean`"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("cannot read"), "{args:?}: {err}");
        assert!(
            err.lines().all(|l| l.chars().count() <= 100),
            "{args:?}: {err}"
        );
    }
    let mut left: Vec<String> = std::fs::read_dir(&early)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [".lock", ".run.json.tmp", "samples.jsonl"],
        "nothing written"
    );
}

/// `compare -o DIR` and `gate --junit PATH` never write into a third run's directory, nor
/// anywhere inside it (as `report -o` never does: its files would replace that run's own);
/// into the compared runs' own directories (RUN_B by default, RUN_A) they do.
#[test]
fn compare_and_gate_never_write_into_a_third_runs_directory() {
    let dir = tempfile::tempdir().unwrap();
    let samples = support::report::samples();
    let [a, b, c] = ["run-a", "run-b", "run-c"].map(|id| {
        let d = dir.path().join(id);
        support::report::write_run(&d, &support::report::info(id), &samples);
        d
    });
    let snapshot = |d: &std::path::Path| {
        let mut files: Vec<(String, Vec<u8>)> = walk(d);
        files.sort();
        files
    };
    let before = snapshot(&c);
    let refused = |args: Vec<std::ffi::OsString>, flag: &str, path: &std::path::Path| {
        let o = ctxbench().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let text = flat(&err);
        assert!(
            text.contains(&format!("{flag} {}: is", path.display()))
                && text.contains("another run's directory")
                && text.contains("(it holds run.json)"),
            "{args:?}: {err}"
        );
        assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
    };
    let os = |v: &[&std::path::Path]| -> Vec<std::ffi::OsString> {
        v.iter().map(|p| p.as_os_str().to_owned()).collect()
    };
    for out in [c.clone(), c.join("sub"), c.join("plots")] {
        let mut args = os(&["compare".as_ref(), &a, &b, "-o".as_ref()]);
        args.push(out.clone().into());
        refused(args, "-o", &out);
    }
    for junit in [
        c.join("gate.xml"),
        c.join("run.json"),
        c.join("plots/x.svg"),
    ] {
        let mut args = os(&["gate".as_ref(), &b, "--baseline".as_ref(), &a]);
        args.extend(["--rule", "tokens.delta_pct <= 5", "--junit"].map(Into::into));
        args.push(junit.clone().into());
        refused(args, "--junit", &junit);
        // A gate with no verdict removes the JUnit file of an earlier gate at its path: never
        // another run's file.
        let mut args = os(&["gate".as_ref(), &b, "--baseline".as_ref(), &a]);
        args.extend(["--rule", "no such rule", "--junit"].map(Into::into));
        args.push(junit.into());
        ctxbench().args(&args).assert().code(2);
    }
    assert!(snapshot(&c) == before, "run-c is as it was");
    // The compared runs' own directories receive them.
    for out in [&a, &b] {
        ctxbench()
            .arg("compare")
            .args([&a, &b])
            .arg("-o")
            .arg(out)
            .assert()
            .success();
        assert!(out.join("compare.md").is_file() && out.join("compare.json").is_file());
    }
    ctxbench()
        .arg("gate")
        .arg(&b)
        .arg("--baseline")
        .arg(&a)
        .args(["--rule", "tokens.delta_pct <= 5", "--junit"])
        .arg(b.join("own.xml"))
        .assert()
        .code(10); // a verdict: the run has a failed unit
    assert!(b.join("own.xml").is_file());
}

/// Every file under `dir` with its bytes, by path relative to it.
fn walk(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

#[test]
fn report_tolerates_a_torn_final_line_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run-torn");
    let samples = support::report::samples();
    support::report::write_run(&run, &support::report::info("run-torn"), &samples);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(run.join("samples.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"schema_version\":1,\"unit_id\":\"hal").unwrap();
    drop(f);
    ctxbench()
        .args(["report", "--no-png"])
        .arg(&run)
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "line {} is a torn final write",
            samples.len() + 1
        )));
    let csv = std::fs::read_to_string(run.join("results.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        samples.len() + 1 + 1,
        "header + rows (one message spans 2 lines)"
    );
}

#[test]
fn report_on_a_bad_run_dir_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    ctxbench()
        .arg("report")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("run.json"));
    let run = dir.path().join("bad");
    support::report::write_run(
        &run,
        &support::report::info("bad"),
        &support::report::samples()[..2],
    );
    let mut text = std::fs::read_to_string(run.join("samples.jsonl")).unwrap();
    text.insert_str(0, "{not json}\n");
    std::fs::write(run.join("samples.jsonl"), text).unwrap();
    ctxbench()
        .arg("report")
        .arg(&run)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("samples.jsonl:1:"));
}

/// A file (or a missing path) given as the run directory is named as that argument, not as
/// `-o/--output` (which defaults to it and was never given).
#[test]
fn report_and_compare_on_a_file_name_the_run_argument_not_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, "").unwrap();
    let missing = dir.path().join("no-such-run");
    let run = dir.path().join("run");
    fn p(path: &std::path::Path) -> &str {
        path.to_str().unwrap()
    }
    support::report::write_run(
        &run,
        &support::report::info("run"),
        &support::report::samples()[..2],
    );
    // (command line, the argument at fault, its path, what it is)
    let cases = [
        (vec!["report", p(&file)], "RUN_DIR", &file, "it is a file"),
        (
            vec!["report", p(&missing)],
            "RUN_DIR",
            &missing,
            "no such directory",
        ),
        (
            vec!["compare", p(&run), p(&file)],
            "RUN_B",
            &file,
            "it is a file",
        ),
        (
            vec!["compare", p(&file), p(&run)],
            "RUN_A",
            &file,
            "it is a file",
        ),
    ];
    for (args, arg, path, what) in cases {
        let expected = format!("{arg} {}: is not a run directory: {what}", path.display());
        let o = ctxbench()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("-o/--output").not())
            .stderr(predicate::str::contains("panicked").not());
        let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
        assert!(flat(&err).contains(&expected), "{err}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"", "the file is left alone");
}

#[test]
fn compare_pairs_two_runs_variant_by_variant_and_writes_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let samples = support::report::samples();
    support::report::write_run(&a, &support::report::info("run-a"), &samples);
    // Run B: the aggressive variant now keeps every needle.
    let fixed: Vec<_> = samples
        .iter()
        .cloned()
        .map(|mut s| {
            if s.eval == "needle" && s.error.is_none() {
                s.scores.insert("recall".into(), 1.0);
                s.passed = Some(true);
            }
            s
        })
        .collect();
    support::report::write_run(&b, &support::report::info("run-b"), &fixed);
    let out = dir.path().join("cmp");
    let stdout = ctxbench()
        .args(["compare"])
        .arg(&a)
        .arg(&b)
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "run-b (candidate) vs run-a (baseline)",
        ))
        .stdout(predicate::str::contains("needle.recall"))
        .get_output()
        .stdout
        .clone();
    // The comparison table fits a 100-column terminal (columns left out are named).
    let text = String::from_utf8(stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{line}\n{text}");
    }
    assert!(text.contains("(not shown for width: pairs"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).unwrap()).unwrap();
    let comps = json["comparisons"].as_array().unwrap();
    let recall = comps
        .iter()
        .find(|c| c["candidate"] == "aggressive" && c["metric"] == "needle.recall")
        .unwrap();
    assert_eq!(recall["n_pairs"], 16);
    assert_eq!(recall["mcnemar"]["c"], 6);
    // The 16 pairs come from fewer than 6 traces: units of one trace are not independent, so
    // the comparison gives no verdict rather than "significant".
    assert!(recall["n_traces"].as_u64().unwrap() < 6);
    assert_eq!(recall["too_few_traces"], true);
    assert_eq!(recall["significant"], false);
    let base_recall = comps
        .iter()
        .find(|c| c["candidate"] == "baseline" && c["metric"] == "needle.recall")
        .unwrap();
    assert_eq!(base_recall["delta"], 0.0);
    assert_eq!(base_recall["significant"], false);
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(md.contains("# ctxbench compare — `run-b` vs baseline `run-a`"));
    // Metrics with no change are left out of the table and found in compare.json (compare
    // writes no results.csv).
    assert!(
        md.contains(
            "with no change on any pair are not listed (every comparison is in compare.json)"
        ),
        "{md}"
    );
}

#[test]
fn paths_print_relative_and_normalized() {
    // As the quickstart writes them: a suite in evals/ with `output_dir = "../reports"`.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("evals")).unwrap();
    let run = dir.path().join("reports/run-1");
    support::report::write_run(
        &run,
        &support::report::info("run-1"),
        &support::report::samples(),
    );
    let out = ctxbench()
        .current_dir(dir.path())
        .args(["report", "--no-png", "evals/../reports/run-1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("open reports/run-1/report.html"),
        "{stdout}"
    );
    let gate = ctxbench()
        .current_dir(dir.path())
        .args(["gate", "evals/../reports/run-1", "--baseline"])
        .arg(&run)
        .output()
        .unwrap();
    let gate_out = String::from_utf8(gate.stdout).unwrap();
    assert!(
        gate_out.contains("JUnit XML: reports/run-1/gate.xml"),
        "{gate_out}"
    );
    for text in [&stdout, &gate_out] {
        assert!(!text.contains("../") && !text.contains("/./"), "{text}");
    }
}

/// summary.json of the quickstart (needle, drift and invariants over four engine variants):
/// every metric it summarizes or compares is one an eval declares (`ctxbench::evalspec`), with
/// the declared polarity written beside it; no parameter (fold, depth, …) is reported as a
/// metric; failure, error, overflow and violation counts read lower-is-better.
#[test]
fn summary_json_metrics_are_declared_with_their_polarity() {
    use ctxbench::evalspec::{metric, Polarity};
    let summary = support::cli::quickstart().json("summary.json");
    let variants = summary["summary"]["variants"].as_array().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for v in variants {
        for m in v["metrics"].as_array().unwrap() {
            let name = m["metric"].as_str().unwrap();
            let decl = metric(name)
                .unwrap_or_else(|| panic!("{name} is in summary.json but no eval declares it"));
            assert_eq!(
                m["polarity"],
                serde_json::to_value(decl.polarity).unwrap(),
                "{name}"
            );
            let leaf = name.rsplit('.').next().unwrap();
            assert!(
                ![
                    "fold",
                    "after_compactions",
                    "depth",
                    "position",
                    "trigger",
                    "judge"
                ]
                .contains(&leaf),
                "{name} is a parameter, reported as a metric"
            );
            if ["failure", "error", "overflow", "violation"]
                .iter()
                .any(|w| name.contains(w))
            {
                assert_eq!(decl.polarity, Polarity::Lower, "{name}");
            }
            seen.insert(name.to_string());
        }
    }
    // The quickstart's evals all reach summary.json, drift (whose fold was once a metric) too.
    for eval in ["needle.", "drift.", "invariants."] {
        assert!(
            seen.iter().any(|m| m.starts_with(eval)),
            "no {eval}* metric in {seen:?}"
        );
    }
    assert!(seen.contains("tokens") && seen.contains("cost"), "{seen:?}");
    let comparisons = summary["summary"]["comparisons"].as_array().unwrap();
    assert!(!comparisons.is_empty());
    for c in comparisons {
        let name = c["metric"].as_str().unwrap();
        assert!(seen.contains(name), "{name} compared but not summarized");
    }
}

/// Set `status` and `units` in a run's run.json, as `ctxbench run` and `merge` write them.
fn set_progress(run: &std::path::Path, status: &str, planned: u64, recorded: u64) {
    let path = run.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["status"] = serde_json::json!(status);
    v["units"] = serde_json::json!({
        "planned_total": planned, "planned": planned, "recorded": recorded, "failed": 1,
        "not_run_budget": 0, "not_run_interrupted": planned - recorded,
    });
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn every_report_of_a_partial_run_says_it_is_partial() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run-part");
    let samples = support::report::samples();
    support::report::write_run(&run, &support::report::info("run-part"), &samples);
    let n = samples.len() as u64;
    set_progress(&run, "interrupted", 3 * n, n);
    let note = format!("partial run: {n} of {} planned unit(s) recorded", 3 * n);
    let out = ctxbench()
        .args(["report", "--no-png"])
        .arg(&run)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = words(&out.stdout);
    assert!(stdout.contains(&note), "terminal: {stdout}");
    for file in ["report.md", "report.html"] {
        let text = std::fs::read_to_string(run.join(file)).unwrap();
        assert!(text.contains(&note), "{file} does not say {note}");
        assert!(text.contains("interrupted"), "{file}");
    }
    // report.md says it before the verdicts, not only in its Notes at the end.
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        md.find(&note).unwrap() < md.find("## ").unwrap(),
        "report.md says it is partial after its first section: {md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let notes = json["summary"]["notes"].as_array().unwrap();
    assert!(
        notes[0].as_str().unwrap().starts_with(&note),
        "summary.json notes: {notes:?}"
    );
    // A complete run says nothing of the kind.
    set_progress(&run, "complete", n, n);
    ctxbench()
        .args(["report", "--no-png"])
        .arg(&run)
        .assert()
        .success()
        .stdout(predicate::str::contains("partial run").not());
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(!md.contains("partial run"), "{md}");
}

#[test]
fn compare_names_what_it_could_not_pair() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let samples = support::report::samples();
    let mut info_a = support::report::info("run-a");
    info_a.suite["suite"] = serde_json::json!({ "name": "nightly" });
    support::report::write_run(&a, &info_a, &samples);
    // B: trace-b is gone, the aggressive variant is renamed, and it is another suite's run.
    let b_samples: Vec<_> = samples
        .iter()
        .filter(|s| s.trace_id != "trace-b")
        .cloned()
        .map(|mut s| {
            if s.variant == "aggressive" {
                s.variant = "lean".into();
            }
            s
        })
        .collect();
    let mut info_b = support::report::info("run-b");
    info_b.variants = vec!["baseline".into(), "lean".into()];
    info_b.suite["suite"] = serde_json::json!({ "name": "quickstart" });
    support::report::write_run(&b, &info_b, &b_samples);
    set_progress(
        &b,
        "incomplete",
        2 * b_samples.len() as u64,
        b_samples.len() as u64,
    );
    let out = ctxbench()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .clone();
    // Wrapped within 100 columns.
    let stderr = words(&out.stderr);
    assert!(
        stderr.contains(
            "warning: the runs are of different suites (baseline run-a: `nightly`, candidate run-b: `quickstart`)",
        ),
        "{stderr}"
    );
    let stdout = words(&out.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("compare.json")).unwrap()).unwrap();
    let notes: Vec<&str> = json["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let md = std::fs::read_to_string(b.join("compare.md")).unwrap();
    // Per trace of the baseline variant: 8 needle units and 1 drift unit.
    for want in [
        "variant(s) only in the baseline run, not compared: aggressive",
        "variant(s) only in the candidate run, not compared: lean",
        "9 unit(s) of 1 trace(s) and 2 eval(s) only in the baseline run, not paired; 1 trace(s) only in the baseline run: trace-b",
        "baseline run-a: 1 of",
        "candidate run-b: partial run:",
        "the runs are of different suites",
    ] {
        assert!(notes.iter().any(|n| n.contains(want)), "{want}: {notes:?}");
        assert!(stdout.contains(want), "terminal, {want}: {stdout}");
        assert!(md.contains(want.split(':').next().unwrap()), "compare.md, {want}: {md}");
    }
}

/// `compare`'s warning and notes keep to 100 columns: the different-suites warning on stderr
/// wraps (it was 150 columns), and a trace id the notes name is shortened around a `…` as
/// `traces stats` shortens ids (a 400-character id was printed whole).
#[test]
fn compare_warnings_and_notes_fit_100_columns_and_shorten_long_ids() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let long = format!("trace-{}-end", "L".repeat(400));
    let samples: Vec<_> = support::report::samples()
        .into_iter()
        .map(|mut s| {
            if s.trace_id == "trace-b" {
                s.trace_id = long.clone();
            }
            s
        })
        .collect();
    let mut info_a = support::report::info("run-a");
    info_a.suite["suite"] = serde_json::json!({ "name": "a-nightly-suite-of-a-long-name" });
    support::report::write_run(&a, &info_a, &samples);
    let b_samples: Vec<_> = samples
        .iter()
        .filter(|s| s.trace_id != long)
        .cloned()
        .collect();
    let mut info_b = support::report::info("run-b");
    info_b.suite["suite"] = serde_json::json!({ "name": "the-quickstart-suite" });
    support::report::write_run(&b, &info_b, &b_samples);
    let out = ctxbench()
        .env("COLUMNS", "100")
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .clone();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    for line in stdout.lines().chain(stderr.lines()) {
        assert!(
            line.chars().count() <= 100 || !line.trim().contains(' '),
            "{line}\n{stdout}\n{stderr}"
        );
    }
    assert!(
        words(stderr.as_bytes()).contains(
            "warning: the runs are of different suites (baseline run-a: \
             `a-nightly-suite-of-a-long-name`, candidate run-b: `the-quickstart-suite`): units \
             are paired by trace, eval and sample names alone"
        ),
        "{stderr}"
    );
    assert!(!stdout.contains(&long), "{stdout}");
    assert!(
        words(stdout.as_bytes()).contains("1 trace(s) only in the baseline run: trace-LLLL")
            && stdout.contains("…"),
        "{stdout}"
    );
}

/// `compare` compares each role's tokens and cost (what `gate` rules can name), after the
/// report's metrics; a unit journaled twice counts once, so a duplicate line does not hide a
/// missing unit of a complete run, and the note names the lines left out.
#[test]
fn compare_counts_a_unit_once_and_compares_each_roles_tokens_and_cost() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let samples = succeeded();
    let n = samples.len() as u64;
    support::report::write_run(&a, &support::report::info("run-a"), &samples);
    set_progress(&a, "complete", n, n);
    // B: the summarizer spends twice the tokens; its last unit is missing and its first is
    // journaled twice.
    let mut b_samples: Vec<_> = samples
        .iter()
        .cloned()
        .map(|mut s| {
            s.tokens.summarizer.input = 2 * s.tokens.summarizer.input + 100;
            s
        })
        .collect();
    b_samples.pop();
    b_samples.push(b_samples[0].clone());
    support::report::write_run(&b, &support::report::info("run-b"), &b_samples);
    set_progress(&b, "complete", n, n);
    let out = ctxbench()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = words(&out.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("compare.json")).unwrap()).unwrap();
    let comps = json["comparisons"].as_array().unwrap();
    let metrics: Vec<&str> = comps
        .iter()
        .filter(|c| c["candidate"] == "aggressive")
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    let at = |m: &str| {
        metrics
            .iter()
            .position(|x| *x == m)
            .unwrap_or_else(|| panic!("{m}: {metrics:?}"))
    };
    // The report's metrics, then each role's cost and tokens.
    assert!(at("tokens") < at("cost.agent"), "{metrics:?}");
    assert!(at("cost.eval_agent") < at("tokens.agent"), "{metrics:?}");
    assert!(at("tokens.agent") < at("tokens.summarizer"), "{metrics:?}");
    let summarizer = comps
        .iter()
        .find(|c| c["candidate"] == "aggressive" && c["metric"] == "tokens.summarizer")
        .unwrap();
    assert!(summarizer["delta"].as_f64().unwrap() > 0.0, "{summarizer}");
    assert!(stdout.contains("tokens.summarizer"), "{stdout}");
    let notes: Vec<&str> = json["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for want in [
        "1 unit(s) appear more than once in the journal",
        &format!("candidate run-b: partial run: {} of {n}", n - 1),
    ] {
        assert!(notes.iter().any(|x| x.contains(want)), "{want}: {notes:?}");
        assert!(stdout.contains(want), "terminal, {want}: {stdout}");
    }
    assert!(
        !notes.iter().any(|x| x.contains("baseline run-a: partial")),
        "{notes:?}"
    );
}

/// A candidate with no samples is said to have none: compare said "the runs share no variant
/// and unit" of two runs of the same four variants.
#[test]
fn compare_says_which_run_has_nothing_to_compare() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    support::report::write_run(
        &a,
        &support::report::info("run-a"),
        &support::report::samples(),
    );
    support::report::write_run(&b, &support::report::info("run-b"), &[]);
    let out = ctxbench()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = words(&out.stdout);
    assert!(
        stdout.contains("the candidate run has no samples: nothing to compare"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(b.join("compare.md")).unwrap();
    assert!(
        md.contains("Nothing to compare: no variant and unit has a successful sample"),
        "{md}"
    );
}

/// `bytes` as text with every run of whitespace one space (wrapped lines read as one).
fn words(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A unit journaled twice whose first line failed counts as failed, as the report counts it:
/// its later successful line does not stand in (compare in memory and the in-memory gate took
/// its values, the report and the spilled gate did not: 70 pairs against 67).
#[test]
fn a_units_failed_first_line_is_the_one_every_comparison_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let samples = succeeded();
    support::report::write_run(&a, &support::report::info("run-a"), &samples);
    let mut b_samples = Vec::new();
    let mut broken = 0;
    for s in &samples {
        if s.variant == "aggressive" && s.eval == "needle" && broken < 3 {
            let mut e = s.clone();
            e.scores.clear();
            e.passed = None;
            e.error = Some(ctxbench::record::UnitError {
                kind: "provider".into(),
                message: "HTTP 500".into(),
            });
            b_samples.push(e);
            broken += 1;
        }
        b_samples.push(s.clone());
    }
    support::report::write_run(&b, &support::report::info("run-b"), &b_samples);
    let pairs = |json: &serde_json::Value| -> u64 {
        json["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["candidate"] == "aggressive" && c["metric"] == "needle.recall")
            .unwrap()["n_pairs"]
            .as_u64()
            .unwrap()
    };
    let needles = samples
        .iter()
        .filter(|s| s.variant == "aggressive" && s.eval == "needle")
        .count() as u64;
    for spill in ["1000000", "0"] {
        let out = dir.path().join(format!("cmp-{spill}"));
        ctxbench()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--spill-above", spill, "-o"])
            .arg(&out)
            .assert()
            .success();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).unwrap())
                .unwrap();
        assert_eq!(pairs(&json), needles - 3, "--spill-above {spill}");
    }
    for spill in ["1000000", "0"] {
        let out = ctxbench()
            .arg("gate")
            .arg(&b)
            .args(["--baseline"])
            .arg(&a)
            .args([
                "--rule",
                "aggressive: needle.recall.delta >= -1",
                "--max-errors",
                "3",
                "--json",
                "--spill-above",
                spill,
                "--junit",
            ])
            .arg(dir.path().join(format!("gate-{spill}.xml")))
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let message = json["results"][0]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("over {} pair(s)", needles - 3)),
            "--spill-above {spill}: {message}"
        );
    }
}

/// The fixture's samples without its failed unit.
fn succeeded() -> Vec<ctxbench::record::Sample> {
    support::report::samples()
        .into_iter()
        .filter(|s| s.error.is_none())
        .collect()
}

/// A run directory without its summaries pack (copied without it) still reports, and says that
/// the page could not show the long summary texts, instead of dropping them silently.
#[test]
fn a_report_without_the_summaries_pack_says_which_texts_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("runs");
    ctxbench()
        .args([
            "run",
            "evals/quickstart.toml",
            "-q",
            "--limit",
            "1",
            "--run-id",
            "r",
            "-o",
        ])
        .arg(&run)
        .assert()
        .success();
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for f in ["run.json", "samples.jsonl"] {
        std::fs::copy(run.join("r").join(f), copy.join(f)).unwrap();
    }
    let whole = ctxbench()
        .arg("report")
        .arg(run.join("r"))
        .arg("-o")
        .arg(dir.path().join("o1"))
        .output()
        .unwrap();
    assert!(
        !words(&whole.stdout).contains("could not be read"),
        "{}",
        words(&whole.stdout)
    );
    let out = ctxbench()
        .arg("report")
        .arg(&copy)
        .arg("-o")
        .arg(dir.path().join("o2"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = words(&out.stdout);
    assert!(
        text.contains(
            "long summary text(s) of the samples report.html shows could not be read from"
        ) && text.contains("summaries.pack (missing, or not holding them)"),
        "{text}"
    );
}
