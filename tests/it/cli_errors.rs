//! What a new user sees when the input is wrong or the output goes away: every error names the
//! file (and line where there is one) and what was expected, exits 2, and never panics; a
//! closed stdout (`| head`) stops no command with a panic.

#![cfg(unix)]

use assert_cmd::Command;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::support;
use crate::support::cli::bin;

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets")
        .join(rel)
}

/// Run the binary; (exit code, stdout, stderr).
fn ctxbench(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A suite of one bundled mini-swe trace with output under `out/` (`extra` TOML after it), written
/// into `dir` as `s.toml`; returns its path.
fn one_trace_suite(dir: &std::path::Path, extra: &str) -> String {
    let trace = dataset("mini-swe-agent/astropy__astropy-12907.traj.json");
    let suite = dir.join("s.toml");
    let head = format!(
        "[suite]\nname = \"s\"\noutput_dir = \"out\"\n[traces]\npaths = [{:?}]\n",
        trace.display().to_string()
    );
    std::fs::write(&suite, format!("{head}{extra}")).unwrap();
    suite.to_str().unwrap().to_string()
}

fn no_panic(stderr: &str) {
    assert!(
        !stderr.contains("panicked") && !stderr.contains("stack backtrace"),
        "{stderr}"
    );
}

#[test]
fn importing_an_empty_directory_is_an_error_not_zero_traces() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("dataset");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("README.md"), "not a trace").unwrap();
    let out = tmp.path().join("out");
    let (code, _, err) = ctxbench(&[
        "import",
        &empty.display().to_string(),
        "-o",
        &out.display().to_string(),
    ]);
    no_panic(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("no trace found in {}", empty.display())),
        "{err}"
    );
    assert!(err.contains("*.jsonl"), "says what it looked for: {err}");
    assert!(!out.exists(), "nothing imported, nothing written");

    // `traces stats` said so already; `import` agrees.
    let (code, _, err) = ctxbench(&["traces", "stats", &empty.display().to_string()]);
    assert_eq!(code, Some(2), "{err}");
}

/// `replay` reads any importable format: a Claude Code session cut short names its last line
/// and the truncation, like `import` does, not "not a canonical trace line" about line 1.
#[test]
fn replay_of_a_truncated_session_names_the_line_that_broke() {
    let tmp = tempfile::tempdir().unwrap();
    let full = std::fs::read(dataset("claude-code/coverage-test-fix.jsonl")).unwrap();
    let cut = tmp.path().join("session.jsonl");
    std::fs::write(&cut, &full[..full.len() - 500]).unwrap();
    let lines = full[..full.len() - 500]
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    let (code, _, err) = ctxbench(&["replay", &cut.display().to_string()]);
    no_panic(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("session.jsonl: line {lines}, column")),
        "{err}"
    );
    assert!(err.contains("cut short"), "{err}");
    assert!(!err.contains("not a canonical trace line"), "{err}");

    // The same bytes through `import` give the same message.
    let (_, _, import_err) = ctxbench(&[
        "import",
        &cut.display().to_string(),
        "-o",
        &tmp.path().join("o").display().to_string(),
    ]);
    assert_eq!(err, import_err);
}

/// Run with stdout a pipe nobody reads (its read end closed before the start): (exit code,
/// stderr).
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let mut fds = [0; 2];
    // SAFETY: `pipe` fills both descriptors on success; each is owned exactly once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let out = std::process::Command::new(bin())
        .args(args)
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `ctxbench compare A B | head` once panicked with a stack trace ("failed printing to stdout:
/// Broken pipe"); so did `import`. Every printing command now goes on quietly, with the exit
/// code it has with a reader (gate: 10 on a failed rule) and its files written.
#[test]
fn a_closed_stdout_is_no_panic_and_keeps_the_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dataset("mini-swe-agent");
    let suite = support::suite::base_and_aggressive("pipe")
        .mini_swe(&[
            "astropy__astropy-12907.traj.json",
            "psf__requests-1142.traj.json",
        ])
        .base("window = 20000")
        .eval("needle", "depths = [0.5]\npositions = [\"tool\"]")
        .table("gates", "rules = [\"needle.recall >= 2\"]")
        .write(tmp.path(), "s.toml");
    let s = suite.display().to_string();
    let run = tmp.path().join("out/r").display().to_string();
    let (code, err) = with_closed_stdout(&["run", &s, "--run-id", "r"]);
    no_panic(&err);
    assert_eq!(code, Some(0), "{err}");
    assert!(Path::new(&run).join("report.md").is_file());

    let o = |name: &str| tmp.path().join(name).display().to_string();
    let (cmp, rep, imp) = (o("cmp"), o("rep"), o("imp"));
    let cc = dataset("claude-code").display().to_string();
    let trace = format!("{}/astropy__astropy-12907.traj.json", d.display());
    let cases: Vec<(Vec<&str>, i32, Option<String>)> = vec![
        (
            vec!["compare", &run, &run, "-o", &cmp],
            0,
            Some(format!("{cmp}/compare.md")),
        ),
        (
            vec!["gate", "--baseline", &run, &run],
            10,
            Some(format!("{run}/gate.xml")),
        ),
        (
            vec!["report", &run, "-o", &rep, "--no-png"],
            0,
            Some(format!("{rep}/report.html")),
        ),
        (
            vec!["import", &cc, "-o", &imp],
            0,
            Some(format!("{imp}/coverage-test-fix.jsonl")),
        ),
        (vec!["traces", "stats", &cc], 0, None),
        (vec!["schema", "sample"], 0, None),
        (vec!["replay", &trace], 0, None),
        (vec!["run", &s, "--dry-run"], 0, None),
    ];
    for (args, want, file) in cases {
        let (code, err) = with_closed_stdout(&args);
        no_panic(&err);
        assert_eq!(code, Some(want), "{args:?}: {err}");
        if let Some(f) = file {
            assert!(Path::new(&f).is_file(), "{args:?} did not write {f}");
        }
    }
}

/// `ctxbench report nosuch 2>&1 | true` exited 101: the error message, written to a stderr
/// nobody reads, panicked ("failed printing to stderr") before the exit code. Errors and
/// warnings that cannot be written are lost, the exit code is kept.
#[test]
fn a_closed_stderr_is_no_panic_and_keeps_the_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nosuch").display().to_string();
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("evals/quickstart.toml")
        .display()
        .to_string();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["report", &missing], 2),
        (vec!["gate", &missing], 2),
        (
            vec!["run", &quickstart, "--dry-run", "--set", "suite.repeats=x"],
            2,
        ),
        (vec!["replay", &missing], 2),
    ];
    for (args, want) in cases {
        let (read, write) = std::io::pipe().unwrap();
        drop(read);
        let out = std::process::Command::new(bin())
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(write))
            .status()
            .unwrap();
        assert_eq!(out.code(), Some(want), "{args:?}");
    }
}

/// `repair` on a path that is no run says so as `report` does (exit 2, "is not a run
/// directory", what it is), and leaves no lock file behind in it.
#[test]
fn repair_on_a_path_that_is_no_run_is_refused_like_report_without_a_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let file = tmp.path().join("afile");
    std::fs::write(&file, "").unwrap();
    let missing = tmp.path().join("no-such-run");
    for (path, what) in [
        (&empty, "it holds no samples.jsonl"),
        (&missing, "no such directory"),
        (&file, "it is a file"),
    ] {
        let (code, _, err) = ctxbench(&["repair", path.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{err}");
        no_panic(&err);
        let expected = format!(
            "RUN_DIR {}: is not a run directory: {what} (expected a directory holding run.json \
             and samples.jsonl",
            path.display()
        );
        let text = err.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains(&expected), "{err}");
        assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
        assert!(
            !err.contains("os error") && !err.contains("cannot lock"),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&empty).unwrap().count(),
        0,
        "no .lock in a directory that is no run"
    );
    assert!(!missing.exists());
    assert_eq!(std::fs::read(&file).unwrap(), b"");
}

/// `--retry-failed` and `--repair` work on an existing run: without `--resume` they are a usage
/// error, also next to `--run-id` / `-o` (which conflict with `--resume`, so clap's own
/// `requires` lets them through), instead of a fresh run that silently ignores them.
#[test]
fn retry_failed_and_repair_without_resume_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let suite = support::suite::harness("needs-resume")
        .output_dir(&out)
        .write(tmp.path(), "suite.toml");
    for flag in ["--retry-failed", "--repair"] {
        for extra in [
            &[][..],
            &["--run-id", "fresh"][..],
            &["-o", out.to_str().unwrap()][..],
        ] {
            let mut args = vec!["run", suite.to_str().unwrap(), flag, "--quiet"];
            args.extend(["--executor", "synthetic:delay_ms=1"]);
            args.extend_from_slice(extra);
            let (code, stdout, err) = ctxbench(&args);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            no_panic(&err);
            assert!(err.contains("--resume"), "{args:?}: {err}");
            assert!(stdout.is_empty(), "{args:?}: no run started: {stdout}");
        }
    }
    assert!(!out.exists(), "no run directory was created");
}

/// A model name the price table does not know is said, with the nearest one it knows and where
/// the window comes from instead (it silently took the preset's 200000 for the trace model's
/// 1048576); in a suite, at the line of `agent_model`, as is an `ask_at` past a trace's end.
#[test]
fn a_mistyped_model_and_an_ask_at_past_the_end_are_said() {
    let trace = dataset("mini-swe-agent/astropy__astropy-12907.traj.json");
    let t = trace.display().to_string();
    let (code, out, err) = ctxbench(&["replay", &t, "--agent-model", "gpt-4o-mnii"]);
    no_panic(&err);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(
            "warning: --agent-model `gpt-4o-mnii` is not in the price table (did you mean \
             `gpt-4o-mini`?): it has no price and no context window here; the window is 200000 \
             (from the preset's default), not the 1048576 of the trace's model"
        ),
        "{err}"
    );
    assert!(
        out.contains("window 200000 (from the preset's default)"),
        "{out}"
    );
    let (_, _, err) = ctxbench(&["replay", &t, "--agent-model", "gpt-4o-mini"]);
    assert!(!err.contains("warning"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    let suite = support::suite::SuiteBuilder::new("warn")
        .dataset("langchain/react-agent.messages_to_dict.json")
        .base("preset = \"deepagents\"\nagent_model = \"gpt-4o-mnii\"")
        .eval("needle", "ask_at = 100000")
        .write(tmp.path(), "s.toml");
    let s = suite.display().to_string();
    let (code, _, err) = ctxbench(&["run", &s, "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&suite).unwrap();
    let line = |key: &str| text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    assert!(
        err.contains(&format!(
            "warning: {s}:{}: `[engine.base]`: `agent_model`: `gpt-4o-mnii` is not in the price \
             table (did you mean `gpt-4o-mini`?)",
            line("agent_model")
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "warning: {s}:{}: `ask_at` = 100000 is past the last model call of 1 of 1 trace(s)",
            line("ask_at")
        )),
        "{err}"
    );
}

/// A mistyped --agent-model over a file of many traces is said once, not once a trace (the
/// τ-bench file holds several traces that record no model: one wording).
#[test]
fn a_mistyped_model_over_many_traces_is_said_once() {
    let file = support::suite::repo().join("datasets/tau-bench/gpt-4o-airline.json");
    let (code, _, err) = ctxbench(&[
        "replay",
        &file.display().to_string(),
        "--agent-model",
        "gpt-4o-mnii",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches("warning: --agent-model").count(), 1, "{err}");
}

/// A trace that records no model has no `[pricing."<model>"]` to add: the end of the run, the
/// report and the dry run's estimate say to set `agent_model`, in the same words.
#[test]
fn unknown_price_advice_for_traces_without_a_model_can_be_followed() {
    let tmp = tempfile::tempdir().unwrap();
    // τ-bench trajectories record no model.
    let suite = support::suite::SuiteBuilder::new("nomodel")
        .dataset("tau-bench/gpt-4o-airline.json")
        .base("preset = \"deepagents\"\nwindow = 8000")
        .write(tmp.path(), "s.toml");
    let s = suite.display().to_string();
    let advice = "The traces record no model to price: set `agent_model` in `[engine.base]`";
    let (code, out, err) = ctxbench(&["run", &s, "--limit", "1", "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    // Wrapped at 100 columns as every line of the plan.
    assert!(out.replace('\n', " ").contains(advice), "{out}");
    assert!(!out.contains("(no model recorded)"), "{out}");
    let (code, out, err) = ctxbench(&["run", &s, "--limit", "1", "--run-id", "r"]);
    assert_eq!(code, Some(0), "{err}");
    let md = std::fs::read_to_string(tmp.path().join("out/r/report.md")).unwrap();
    for text in [&out, &md] {
        assert!(text.replace('\n', " ").contains(advice), "{text}");
        assert!(!text.contains("[pricing.\"<model>\"]` (input"), "{text}");
    }
}

/// A needle at a position the trace has no message of (tool results in a session without tool
/// calls) does not apply to that trace: the unit is no error (it failed the run's gate under
/// the default --max-errors 0), records `not_applicable`, and the end of the run says so.
#[test]
fn a_needle_with_no_place_in_its_trace_is_not_applicable_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = support::suite::SuiteBuilder::new("na")
        .dataset("claude-code/stop-hook-reflection-second-stop.jsonl")
        .mini_swe(&["astropy__astropy-12907.traj.json"])
        .base("preset = \"deepagents\"\nwindow = 20000")
        .eval(
            "needle",
            "depths = [0.5]\npositions = [\"tool\"]\ndistractors = 3",
        )
        .write(tmp.path(), "s.toml");
    let s = suite.display().to_string();
    let (code, out, err) = ctxbench(&["run", &s, "--run-id", "r"]);
    no_panic(&err);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("0 failed"), "{out}");
    assert!(
        out.contains("NOT APPLICABLE: variant `base`: 1 needle unit(s) on 1 trace(s)"),
        "{out}"
    );
    let samples = std::fs::read_to_string(tmp.path().join("out/r/samples.jsonl")).unwrap();
    let skipped: Vec<serde_json::Value> = samples
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|s| s["scores"]["not_applicable"] == 1.0)
        .collect();
    assert_eq!(skipped.len(), 1, "{samples}");
    assert_eq!(skipped[0]["trace_id"], "stop-hook-reflection-second-stop");
    assert!(skipped[0]["error"].is_null());
    let why = skipped[0]["evidence"]["not_applicable"].as_str().unwrap();
    assert!(why.contains("depth 0.5, position \"tool\""), "{why}");
    // The other trace's needle unit was asked (its distractors placed as usual), and records
    // 0: the mean of `needle.not_applicable` is the share of needle units, 1 of 2.
    assert!(samples.contains("\"recall\""), "{samples}");
    let applicable: Vec<serde_json::Value> = samples
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|s| s["eval"] == "needle" && s["scores"]["not_applicable"] == 0.0)
        .collect();
    assert_eq!(applicable.len(), 1, "{samples}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/r/summary.json")).unwrap(),
    )
    .unwrap();
    let text = summary.to_string();
    assert!(text.contains("needle.not_applicable"), "{text}");
    let md = std::fs::read_to_string(tmp.path().join("out/r/report.md")).unwrap();
    assert!(md.contains("0.500"), "{md}");
}

/// An error about a whole file names the file once ("FILE: not a trace"), not as a location
/// ("FILE: file: not a trace").
#[test]
fn a_whole_file_error_names_the_file_once() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("x.json");
    std::fs::write(&f, "{\"a\": 1}\n").unwrap();
    let out = tmp.path().join("o").display().to_string();
    let (code, _, err) = ctxbench(&["import", &f.display().to_string(), "-o", &out]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("{}: not a trace: ", f.display())),
        "{err}"
    );
    assert!(!err.contains(": file: "), "{err}");
}

/// A logged API response (the model's answer without the input it answered) is not a trace,
/// and the error says what to save instead, without suggesting `--from` (no format reads it).
#[test]
fn an_api_response_is_not_a_trace_and_the_error_says_what_to_save() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("response.json");
    std::fs::write(
        &f,
        r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I assist you today?","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}}"#,
    )
    .unwrap();
    let out = tmp.path().join("o").display().to_string();
    let (code, _, err) = ctxbench(&["import", &f.display().to_string(), "-o", &out]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("not a trace: one API response: an OpenAI chat completion"),
        "{err}"
    );
    assert!(err.contains("save the request's `messages`"), "{err}");
    assert!(!err.contains("--from"), "{err}");
}

/// A suite whose every eval is turned off would plan no unit, run nothing and exit 0 with an
/// empty report (while `--limit 0` is refused): it is refused at load, naming the file and line
/// and how to enable an eval, and leaves no run directory. `--eval` and `--trace` selecting
/// nothing are refused the same way.
#[test]
fn a_suite_with_no_eval_enabled_is_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = one_trace_suite(tmp.path(), "[evals.replay]\nenabled = false\n");
    let s = suite.as_str();
    for args in [
        vec!["run", s, "-q"],
        vec!["run", s, "--dry-run"],
        vec!["run", s, "-q", "--executor", "synthetic"],
    ] {
        let (code, _, err) = ctxbench(&args);
        no_panic(&err);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("s.toml:7:")
                && err.contains("no eval is enabled")
                && err.contains("enabled = false")
                && err.contains("[evals.needle]"),
            "{err}"
        );
    }
    assert!(!tmp.path().join("out").exists(), "no run directory");
    // The same through --set.
    one_trace_suite(tmp.path(), "");
    let (code, _, err) = ctxbench(&["run", s, "-q", "--set", "evals.replay.enabled=false"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--set evals.replay.enabled=false") && err.contains("no eval is enabled"),
        "{err}"
    );
    // --eval and --trace that select nothing.
    for (flag, value, says) in [
        ("--eval", "needle", "does not enable `needle`"),
        ("--eval", "nosuch", "no eval is named `nosuch`"),
        ("--trace", "nosuch*", "matches none of the suite's"),
    ] {
        let (code, _, err) = ctxbench(&["run", s, "-q", flag, value]);
        no_panic(&err);
        assert_eq!(code, Some(2), "{flag} {value}: {err}");
        assert!(err.contains(says), "{flag} {value}: {err}");
    }
    assert!(!tmp.path().join("out").exists(), "no run directory");
}

/// `--max-cost-usd` that is no budget (negative, zero, NaN, infinite) is refused when the
/// command line is read, dry run or not: a dry run accepted every one of them (exit 0), and a
/// run blamed `-5` on the estimate ("$0.0000–$0.0000, above the budget max_cost_usd = $-5").
#[test]
fn a_max_cost_that_is_no_budget_is_refused_also_by_a_dry_run() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = one_trace_suite(tmp.path(), "");
    let s = suite.as_str();
    for usd in ["-5", "0", "nan", "inf", "five"] {
        let flag = format!("--max-cost-usd={usd}");
        for dry in [true, false] {
            let mut args = vec!["run", s, "-q", &flag];
            if dry {
                args.push("--dry-run");
            }
            let (code, _, err) = ctxbench(&args);
            no_panic(&err);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(
                err.contains("--max-cost-usd") && err.contains("expected a positive number"),
                "{args:?}: {err}"
            );
            assert!(!err.contains("estimate"), "{args:?}: {err}");
        }
    }
    assert!(!tmp.path().join("out").exists(), "no run directory");
}

/// A file that is no trace: the advice on forcing its format names what the command takes.
/// `replay` and `run` have no `--from`, yet both said "use --from FORMAT to force one" (`replay
/// --from` is an unknown argument); `import` and `traces stats` do take it.
#[test]
fn not_a_trace_advises_the_way_each_command_forces_a_format() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("x.json");
    std::fs::write(&file, "{\"x\": 1}\n").unwrap();
    let f = file.to_str().unwrap();
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        format!("[suite]\nname = \"s\"\noutput_dir = \"out\"\n[traces]\npaths = [{f:?}]\n"),
    )
    .unwrap();
    let s = suite.to_str().unwrap();
    let out = tmp.path().join("imported");
    let o = out.to_str().unwrap();
    for (args, says) in [
        (
            vec!["replay", f],
            "(`ctxbench import FILE --from FORMAT -o DIR` forces one;",
        ),
        (
            vec!["run", s, "--dry-run"],
            "(set `from = \"FORMAT\"` in the suite's [traces] to force one)",
        ),
        (
            vec!["import", f, "-o", o],
            "(use --from FORMAT to force one)",
        ),
        (
            vec!["traces", "stats", f],
            "(use --from FORMAT to force one)",
        ),
    ] {
        let (code, _, err) = ctxbench(&args);
        no_panic(&err);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("x.json: not a trace"), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        if args[0] == "replay" || args[0] == "run" {
            assert!(!err.contains("use --from"), "{args:?}: {err}");
        }
    }
}

/// `--run-id .` and `--run-id ..` are refused for what they are: they name the output directory
/// or its parent. The message said "use only letters, digits, `.`, `_`, `-`", which they do.
#[test]
fn a_run_id_of_dots_is_refused_for_naming_the_output_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = one_trace_suite(tmp.path(), "");
    let s = suite.as_str();
    for id in [".", ".."] {
        let (code, _, err) = ctxbench(&["run", s, "-q", "--run-id", id]);
        no_panic(&err);
        assert_eq!(code, Some(2), "{id}: {err}");
        assert!(
            err.contains(&format!(
                "--run-id `{id}`: names the output directory itself"
            )),
            "{id}: {err}"
        );
    }
    let (code, _, err) = ctxbench(&["run", s, "-q", "--run-id", "a/b"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("use only letters, digits"), "{err}");
}

/// A run id names the run's directory, and file systems take at most 255 bytes a name: a longer
/// `--run-id`, or a suite name that makes the default id longer, is refused up front (exit 2,
/// naming the flag or the suite's line) instead of "cannot create run directory …: File name
/// too long" (exit 1); nothing is created.
#[test]
fn a_run_id_too_long_for_a_file_name_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = one_trace_suite(tmp.path(), "");
    let long = "r".repeat(300);
    let (code, _, err) = ctxbench(&["run", &suite, "-q", "--run-id", &long]);
    no_panic(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--run-id `") && err.contains("300 bytes long") && err.contains("255 bytes"),
        "{err}"
    );
    assert!(!err.contains("File name too long"), "{err}");
    let text = std::fs::read_to_string(&suite)
        .unwrap()
        .replace("name = \"s\"", &format!("name = \"{}\"", "n".repeat(250)));
    std::fs::write(&suite, text).unwrap();
    let (code, _, err) = ctxbench(&["run", &suite, "-q"]);
    no_panic(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("s.toml:2:"), "{err}");
    assert!(
        err.contains("the suite's name (250 bytes)") && err.contains("255 bytes"),
        "{err}"
    );
    assert!(!err.contains("File name too long"), "{err}");
    assert!(
        !tmp.path().join("out").exists()
            || std::fs::read_dir(tmp.path().join("out"))
                .unwrap()
                .next()
                .is_none()
    );
}

/// A directory that cannot be made because a file is in its path is the user's input, named
/// with its flag (exit 2), not "Not a directory" (exit 1): `run -o FILE/sub`, `replay --store
/// FILE` and `replay --store FILE/sub`.
#[test]
fn an_output_directory_under_a_file_is_refused_naming_its_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = one_trace_suite(tmp.path(), "");
    let file = tmp.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let sub = file.join("sub");
    let (code, _, err) = ctxbench(&["run", &suite, "-q", "-o", sub.to_str().unwrap()]);
    no_panic(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("-o/--output ") && err.contains("plain is a file, not a directory"),
        "{err}"
    );
    let trace = dataset("mini-swe-agent/astropy__astropy-12907.traj.json");
    for store in [&file, &sub] {
        let (code, _, err) = ctxbench(&[
            "replay",
            trace.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ]);
        no_panic(&err);
        assert_eq!(code, Some(2), "{store:?}: {err}");
        assert!(
            err.contains("--store ") && err.contains("is a file"),
            "{err}"
        );
        assert!(!err.contains("Not a directory"), "{err}");
    }
}

/// An integer key given a value too large for it says so, with the largest allowed, not
/// "expected a non-negative integer" (which the value is).
#[test]
fn an_integer_key_too_large_says_the_largest_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = one_trace_suite(tmp.path(), "");
    let text = std::fs::read_to_string(&suite).unwrap().replace(
        "output_dir = \"out\"\n",
        "output_dir = \"out\"\nconcurrency = 99999999999999\n",
    );
    std::fs::write(&suite, text).unwrap();
    let (code, _, err) = ctxbench(&["run", &suite, "-q", "--dry-run"]);
    no_panic(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("s.toml:4:"), "{err}");
    assert!(
        err.contains("too large") && err.contains("the largest allowed is"),
        "{err}"
    );
    assert!(!err.contains("non-negative"), "{err}");
    // A provider's key too (its messages were serde's own: "expected u32").
    let text = std::fs::read_to_string(&suite)
        .unwrap()
        .replace("concurrency = 99999999999999\n", "")
        + "[providers.agent]\nkind = \"offline\"\nmax_retries = 99999999999999\n";
    std::fs::write(&suite, text).unwrap();
    let (code, _, err) = ctxbench(&["run", &suite, "-q", "--dry-run"]);
    no_panic(&err);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`max_retries`"), "{err}");
    assert!(
        err.contains("too large (the largest allowed is 4294967295)"),
        "{err}"
    );
    assert!(!err.contains("u32"), "{err}");
}
