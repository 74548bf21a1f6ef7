//! `ctxbench import` end to end: output files, summary, exit codes and messages on bad input.

use assert_cmd::Command;
use ctxbench::trace::import::import_file;
use ctxbench::trace::io;
use predicates::prelude::*;
use std::path::PathBuf;

fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets")
}

fn cmd() -> Command {
    Command::cargo_bin("ctxbench").unwrap()
}

#[test]
fn imports_a_directory_into_one_file_per_trace() {
    let out = tempfile::tempdir().unwrap();
    cmd()
        .args(["import", "-o"])
        .arg(out.path())
        .arg(datasets().join("claude-code"))
        .arg(datasets().join("mini-swe-agent/django__django-11138.traj.json"))
        .assert()
        .success()
        .stdout(predicate::str::contains("imported 8 traces"))
        .stdout(predicate::str::contains("claude-code  7"));
    let mut names: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 8);
    assert!(names.contains(&"django__django-11138.jsonl".to_string()));
    let written = io::read_traces(&out.path().join("django__django-11138.jsonl")).unwrap();
    let direct = import_file(
        &datasets().join("mini-swe-agent/django__django-11138.traj.json"),
        None,
    )
    .unwrap();
    assert_eq!(written, direct);
}

/// A second import into the same DIR does not silently replace the first one's files (nor
/// suffix them: the folder would hold a trace twice): it names them and exits 2, writing
/// nothing; `--overwrite` replaces them.
#[test]
fn an_earlier_imports_file_is_replaced_only_with_overwrite() {
    let out = tempfile::tempdir().unwrap();
    let a = datasets().join("mini-swe-agent/django__django-11138.traj.json");
    let b = datasets().join("mini-swe-agent/astropy__astropy-12907.traj.json");
    cmd()
        .args(["import", "-o"])
        .arg(out.path())
        .arg(&a)
        .assert()
        .success();
    let first = out.path().join("django__django-11138.jsonl");
    std::fs::write(&first, "mine\n").unwrap();
    let o = cmd()
        .args(["import", "-o"])
        .arg(out.path())
        .arg(&b)
        .arg(&a)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("django__django-11138.jsonl")
            && err.contains("nothing was written")
            && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "mine\n");
    assert!(
        !out.path().join("astropy__astropy-12907.jsonl").exists(),
        "nothing written"
    );
    assert!(!out.path().join("django__django-11138-2.jsonl").exists());
    cmd()
        .args(["import", "--overwrite", "-o"])
        .arg(out.path())
        .arg(&b)
        .arg(&a)
        .assert()
        .success();
    assert_eq!(
        io::read_traces(&first).unwrap(),
        import_file(&a, None).unwrap()
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 2);
}

#[test]
fn bad_input_fails_with_exit_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.jsonl");
    std::fs::write(
        &bad,
        "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\n",
    )
    .unwrap();
    let good = datasets().join("claude-code/hello-world-script.jsonl");
    let out = dir.path().join("out");
    cmd()
        .args(["import", "-o"])
        .arg(&out)
        .arg(&good)
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("broken.jsonl: line 2, column"))
        .stderr(predicate::str::contains("cut short"));
    cmd()
        .args(["import", "--skip-invalid", "-o"])
        .arg(&out)
        .arg(&good)
        .arg(&bad)
        .assert()
        .success()
        .stdout(predicate::str::contains("imported 1 traces"))
        .stdout(predicate::str::contains("1 inputs skipped as invalid"))
        .stdout(
            predicate::str::contains("skipped ")
                .and(predicate::str::contains("broken.jsonl: line 2")),
        );
    assert!(out.join("hello-world-script.jsonl").exists());
}

#[test]
fn from_overrides_detection_and_rejects_unknown_formats() {
    let out = tempfile::tempdir().unwrap();
    cmd()
        .args(["import", "--from", "tau", "-o"])
        .arg(out.path())
        .arg(datasets().join("mini-swe-agent/astropy__astropy-12907.traj.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "astropy__astropy-12907.traj.json: $: expected an array, found an object",
        ));
    cmd()
        .args(["import", "--from", "nope", "-o"])
        .arg(out.path())
        .arg(datasets())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("possible values"));
}

#[test]
fn help_teaches() {
    cmd()
        .args(["import", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--skip-invalid"))
        .stdout(predicate::str::contains(
            "The format is detected from the content",
        ))
        .stdout(predicate::str::contains("Examples:"));
}

#[test]
fn warnings_are_printed_grouped_and_counted_and_all_with_verbose() {
    let imported = ctxbench::trace::import::import_paths(&[datasets()], None, false).unwrap();
    let all: Vec<&String> = imported
        .traces
        .iter()
        .flat_map(|t| &t.meta.warnings)
        .collect();
    let reused = all
        .iter()
        .filter(|w| w.contains("was already used in this trace"))
        .count();
    assert!(
        reused > 1 && reused < all.len(),
        "the datasets have several kinds"
    );
    let run = |verbose: bool| {
        // A directory each: a second import into one is refused (its files are there).
        let out = tempfile::tempdir().unwrap();
        let mut c = cmd();
        c.args(["import", "-o"]).arg(out.path()).arg(datasets());
        if verbose {
            c.arg("--verbose");
        }
        let o = c.assert().success().get_output().stdout.clone();
        String::from_utf8(o).unwrap()
    };
    let grouped = run(false);
    assert!(
        grouped.contains(&format!("{} import warning(s) in ", all.len())),
        "{grouped}"
    );
    fits_100_columns(&grouped);
    // An entry per kind (`  87× KIND (…)`), wrapped under its text.
    let kinds = entries(&grouped, |l| {
        l.trim_start()
            .split_once("× ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    });
    // One line for every reused id, whatever the id and the place, with the first place.
    let line = kinds
        .iter()
        .find(|l| l.contains("× tool call id \"…\" was already used in this trace"))
        .unwrap_or_else(|| panic!("{grouped}"));
    assert!(
        line.trim_start().starts_with(&format!("{reused}× ")),
        "{line}"
    );
    assert!(line.contains(" traces; first: "), "{line}");
    assert!(line.contains(".tool_calls[0])"), "{line}");
    assert!(grouped.contains("× tool call \"…\" (finish) has no result"));
    assert!(grouped.lines().count() < all.len(), "grouped, not listed");
    // --verbose: every warning, verbatim (an entry `  FILE [ID]: WARNING` wrapped under it).
    let listed = run(true);
    fits_100_columns(&listed);
    let listed = entries(&listed, |l| l.starts_with("  ") && !l.starts_with("   "));
    let lines: Vec<&String> = listed
        .iter()
        .filter(|l| l.contains("was already used in this trace"))
        .collect();
    assert_eq!(lines.len(), reused, "{listed:#?}");
    for w in &all {
        let w = w.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            listed.iter().any(|l| l.ends_with(&format!("]: {w}"))),
            "missing {w}"
        );
    }
}

/// Every line of `text` within 100 columns, or one unbroken token (a path longer than a line
/// stands whole on its own line; where the repository is cloned decides its length).
fn fits_100_columns(text: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100 || !line.trim().contains(' '),
            "{} columns: {line}\n{text}",
            line.chars().count()
        );
    }
}

/// The entries of `text` whose first line `starts` says, each with its continuation lines
/// joined by a space (as it reads unwrapped).
fn entries(text: &str, starts: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for l in text.lines() {
        if starts(l) {
            out.push(l.trim_start().to_string());
            open = true;
        } else if open && l.starts_with("    ") {
            let last = out.last_mut().unwrap();
            last.push(' ');
            last.push_str(l.trim());
        } else {
            open = false;
        }
    }
    out
}

/// Two real sessions of the same file name in different folders import into a folder a suite
/// can run: the second is written as `t-2.jsonl` under the id `t-2` (its header said `t`, and
/// `run` refused the folder: "trace id `t` comes from two inputs"), and the import says so.
#[test]
fn inputs_of_one_file_name_import_under_distinct_ids_a_run_accepts() {
    let tmp = tempfile::tempdir().unwrap();
    for (dir, file) in [
        ("a", "claude-code/coverage-test-fix.jsonl"),
        ("b", "claude-code/hello-world-script.jsonl"),
    ] {
        std::fs::create_dir(tmp.path().join(dir)).unwrap();
        std::fs::copy(datasets().join(file), tmp.path().join(dir).join("t.JSONL")).unwrap();
    }
    let out = tmp.path().join("out");
    let printed = cmd()
        .args(["import", "-o"])
        .arg(&out)
        .arg(tmp.path().join("a"))
        .arg(tmp.path().join("b"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let printed = String::from_utf8_lossy(&printed)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        printed.contains("note: 1 trace(s) had the id of a trace imported before them")
            && printed.contains("`t` -> "),
        "{printed}"
    );
    let ids: Vec<String> = ["t.jsonl", "t-2.jsonl"]
        .iter()
        .map(|f| io::read_traces(&out.join(f)).unwrap()[0].meta.id.clone())
        .collect();
    assert_eq!(ids, ["t", "t-2"]);
    std::fs::write(
        tmp.path().join("s.toml"),
        "[suite]\nname = \"s\"\noutput_dir = \"runs\"\n[traces]\npaths = [\"out\"]\n\
         [engine.base]\npreset = \"deepagents\"\nwindow = 20000\n[evals.needle]\nenabled = false\n",
    )
    .unwrap();
    cmd()
        .args(["run", "--dry-run"])
        .arg(tmp.path().join("s.toml"))
        .assert()
        .success()
        .stdout(predicate::str::contains("2 trace(s)"));
}

/// mini-swe-agent 2's real trajectories through the CLI by auto-detection: `import` writes one
/// canonical trace per file, `traces stats` reads the folder (2 calls, 0 warnings, recorded usage
/// calibrated), and a suite replays them (one sample per trace and variant, none failed).
#[test]
fn mini_swe_agent_2_files_import_show_stats_and_run_in_a_suite() {
    let dir = datasets().join("mini-swe-agent-2");
    let out = tempfile::tempdir().unwrap();
    cmd()
        .args(["import", "-o"])
        .arg(out.path())
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "mini-swe  2       8         2           0",
        ))
        .stdout(predicate::str::contains("imported 2 traces"));
    let written = io::read_traces(&out.path().join("sqlfluff-vllm-step1.jsonl")).unwrap();
    let direct = import_file(&dir.join("sqlfluff-vllm-step1.traj.json"), None).unwrap();
    assert_eq!(written[0].messages, direct[0].messages);

    cmd()
        .args(["traces", "stats"])
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicate::str::contains("2 trace(s), 8 messages"))
        .stdout(predicate::str::contains("0 import warning(s)"))
        .stdout(predicate::str::contains("2 recorded model calls"));

    let tmp = tempfile::tempdir().unwrap();
    let text = crate::support::suite::SuiteBuilder::new("mini-swe-agent-2")
        .dataset("mini-swe-agent-2/mini-vllm-smoke.traj.json")
        .dataset("mini-swe-agent-2/sqlfluff-vllm-step1.traj.json")
        .baseline("base")
        .deepagents(20_000)
        .variant("base", "")
        .text();
    let run_dir = crate::support::run::run_ok(tmp.path(), &text);
    let samples = crate::support::run::samples(&run_dir);
    let mut traces: Vec<&str> = samples.iter().map(|s| s.trace_id.as_str()).collect();
    traces.sort();
    assert_eq!(traces, ["mini-vllm-smoke", "sqlfluff-vllm-step1"]);
}

/// A warning of a JSON Lines file is grouped with the line of its first occurrence (a real Codex
/// rollout: 118 tool calls whose arguments the recorder redacted). The line went into the kind
/// as `line N` and the place named only the file: only `--verbose` showed line 17.
#[test]
fn grouped_warnings_of_a_jsonl_file_name_the_first_line() {
    let file = datasets()
        .join("codex/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl");
    let out = tempfile::tempdir().unwrap();
    let o = cmd()
        .args(["import", "-o"])
        .arg(out.path())
        .arg(&file)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(o).unwrap();
    fits_100_columns(&text);
    // The kind's entry, its lines after the first (within 100 columns) joined again.
    let kinds = entries(&text, |l| l.trim_start().starts_with("118× "));
    let line = kinds
        .iter()
        .find(|l| l.contains("arguments are not valid JSON"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with("118× arguments are not valid JSON"),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(
            "(first: {}:17 [rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9] \
             $.payload.arguments)",
            file.display()
        )),
        "{line}"
    );
}

/// An import warning quoting a hostile id shows its control characters as every output does,
/// `\x1b` (docs/reliability.md), in the summary and with --verbose: they read `\u{1b}` (the
/// `{:?}` form) in the warning, and so in the trace file's header too.
#[test]
fn warnings_show_control_characters_as_every_output_does() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("evil.json");
    std::fs::write(
        &input,
        r#"{"messages": [{"role": "user", "content": "hi"},
{"role": "assistant", "content": null, "tool_calls": [{"id": "\u001b[2Jid\u202e", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
{"role": "tool", "tool_call_id": "\u001b[2Jid\u202e", "content": "r"},
{"role": "assistant", "content": null, "tool_calls": [{"id": "\u001b[2Jid\u202e", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
{"role": "tool", "tool_call_id": "\u001b[2Jid\u202e", "content": "r2"},
{"role": "assistant", "content": "done"}]}"#,
    )
    .unwrap();
    let out = tmp.path().join("out");
    let o = cmd()
        .args(["import", "--verbose", "-o"])
        .arg(&out)
        .arg(&input)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    // Wrapped within 100 columns: read as one line.
    let listed = String::from_utf8(o)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        listed.contains(
            "tool call id \"\\x1b[2Jid\\u{202e}\" was already used in this trace; renamed to \
             \"\\x1b[2Jid\\u{202e}__2\""
        ),
        "{listed}"
    );
    assert!(!listed.contains("\\u{1b}"), "{listed}");
    let t = io::read_traces(&out.join("evil.jsonl")).unwrap();
    assert!(
        t[0].meta
            .warnings
            .iter()
            .any(|w| w.contains("\"\\x1b[2Jid\\u{202e}\"")),
        "{:?}",
        t[0].meta.warnings
    );
}
