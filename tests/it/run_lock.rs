//! One process owns a run directory (#26 point 9): a second writer (`run --resume` on a live
//! run, or `report` / `compare` writing their files into it) is refused with exit 2 naming the
//! holder's pid, while `report -o OTHER_DIR` on the live run reads what is journaled and says
//! the run is in progress; the live run finishes with a readable
//! journal and its report; a lock file left by a dead process does not block a resume.

#![cfg(unix)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support;
use crate::support::cli::{bin, ctxbench, lines};

#[test]
fn a_second_writer_is_refused_and_the_live_run_finishes_intact() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = support::suite::harness("lock").write(tmp.path(), "suite.toml");
    let out = tmp.path().join("out");
    let mut child = std::process::Command::new(bin())
        .args(["run", suite.to_str().unwrap(), "--quiet", "--jobs", "2"])
        .args(["--executor", "synthetic:delay_ms=150", "--run-id", "live"])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dir = out.join("live");
    let journal = dir.join("samples.jsonl");
    let start = Instant::now();
    while lines(&journal) < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "no samples");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();

    let second = ctxbench()
        .current_dir(tmp.path())
        .args(["run", suite.to_str().unwrap(), "--quiet", "--resume"])
        .arg(&dir)
        .args(["--executor", "synthetic:delay_ms=150"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("pid {pid}")), "{err}");

    // `report` and `compare` write into the run they read by default: never into a live run's
    // directory (exit 2, naming the holder and `-o OTHER_DIR`); with `-o` elsewhere they read it.
    for args in [vec!["report"], vec!["compare", dir.to_str().unwrap()]] {
        let refused = ctxbench()
            .current_dir(tmp.path())
            .args(&args)
            .arg(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("pid {pid}")) && err.contains("-o OTHER_DIR"),
            "{args:?}: {err}"
        );
        assert!(
            !String::from_utf8_lossy(&refused.stdout).contains("wrote"),
            "{args:?}: nothing written"
        );
    }
    // `gate` writes its JUnit file into the candidate run by default: not into a live one's
    // (and leaves no file there); with `--junit` elsewhere it gates it (a partial run fails).
    let gate = |junit: Option<&std::path::Path>| {
        let mut c = ctxbench();
        c.current_dir(tmp.path())
            .arg("gate")
            .arg(&dir)
            .arg("--baseline")
            .arg(&dir)
            .args(["--rule", "tokens.delta_pct <= 5"]);
        if let Some(j) = junit {
            c.arg("--junit").arg(j);
        }
        c.output().unwrap()
    };
    let refused = gate(None);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("pid {pid}")) && err.contains("--junit OTHER_PATH"),
        "{err}"
    );
    assert!(!dir.join("gate.xml").exists());
    let elsewhere = tmp.path().join("gate.xml");
    let gated = gate(Some(&elsewhere));
    assert_eq!(gated.status.code(), Some(10), "{gated:?}");
    assert!(elsewhere.is_file());
    let report = ctxbench()
        .current_dir(tmp.path())
        .arg("report")
        .arg(&dir)
        .arg("-o")
        .arg(tmp.path().join("partial"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&report.stderr);
    assert!(report.status.success(), "{err}");
    assert!(tmp.path().join("partial/report.md").is_file());
    assert!(
        err.contains(&format!("still being written by process {pid}")),
        "{err}"
    );
    assert!(
        !err.contains("torn"),
        "a live run's last line is no fault: {err}"
    );

    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    let text = std::fs::read_to_string(&journal).unwrap();
    let n = text.lines().count();
    assert_eq!(n, 40, "every unit once");
    for (i, line) in text.lines().enumerate() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
    }
    assert!(dir.join("report.md").is_file());

    // Finished: readers say nothing about progress; a dead pid in the lock file is no lock.
    std::fs::write(dir.join(".lock"), "4999999\n").unwrap();
    let report = ctxbench()
        .current_dir(tmp.path())
        .arg("report")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(report.status.success());
    assert!(!String::from_utf8_lossy(&report.stderr).contains("still being written"));
    let resumed = ctxbench()
        .current_dir(tmp.path())
        .args(["run", suite.to_str().unwrap(), "--quiet", "--resume"])
        .arg(&dir)
        .args(["--executor", "synthetic:delay_ms=1"])
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
}

/// The same with units that call a (slow) strict fake provider: the run is genuinely live
/// (its needle units wait on the model) when a second `run --resume` starts on its directory;
/// `report`, `compare` and `gate` on it read complete lines and say it is in progress; the
/// live run finishes normally, every line of its journal whole, its report written, and the
/// strict server refused nothing.
#[test]
fn a_second_writer_on_a_run_calling_a_slow_provider_is_refused() {
    use crate::support::strict_llm::StrictLlm;
    let (_rt, server) = StrictLlm::on_own_runtime();
    server.slow(Duration::from_millis(250));
    let tmp = tempfile::tempdir().unwrap();
    let suite = support::suite::harness("live-provider")
        .table(
            "providers.agent",
            format!(
                "kind = \"openai\"\nmodel = \"gpt-4o-mini\"\nbase_url = {:?}\ncache = false\n\
                 max_retries = 0\ntimeout_secs = 30\n",
                server.openai_base_url()
            ),
        )
        .write(tmp.path(), "suite.toml");
    let out = tmp.path().join("out");
    let mut child = std::process::Command::new(bin())
        .args(["run", suite.to_str().unwrap(), "--quiet", "--jobs", "2"])
        .args(["--run-id", "live"])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dir = out.join("live");
    let journal = dir.join("samples.jsonl");
    let start = Instant::now();
    while lines(&journal) < 1 || server.accepted() < 2 {
        assert!(start.elapsed() < Duration::from_secs(120), "no samples");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).to_string();

    let second = ctxbench()
        .current_dir(tmp.path())
        .args(["run", suite.to_str().unwrap(), "--quiet", "--resume"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(2), "{}", text(&second));
    assert!(
        text(&second).contains(&format!("pid {pid}")),
        "{}",
        text(&second)
    );

    let live_note = format!("still being written by process {pid}");
    let report = ctxbench()
        .current_dir(tmp.path())
        .arg("report")
        .arg(&dir)
        .arg("-o")
        .arg(tmp.path().join("partial"))
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report));
    assert!(text(&report).contains(&live_note), "{}", text(&report));
    let compare = ctxbench()
        .current_dir(tmp.path())
        .arg("compare")
        .args([&dir, &dir])
        .arg("-o")
        .arg(tmp.path().join("cmp"))
        .output()
        .unwrap();
    assert!(compare.status.success(), "{}", text(&compare));
    // Said once of a run given twice (`compare RUN RUN`, `gate RUN --baseline RUN`).
    assert_eq!(
        text(&compare).matches(&live_note).count(),
        1,
        "{}",
        text(&compare)
    );
    let gate = ctxbench()
        .current_dir(tmp.path())
        .arg("gate")
        .arg(&dir)
        .arg("--baseline")
        .arg(&dir)
        .args(["--rule", "tokens >= 0"])
        .arg("--junit")
        .arg(tmp.path().join("gate.xml"))
        .output()
        .unwrap();
    assert!(
        matches!(gate.status.code(), Some(0 | 10)),
        "{}",
        text(&gate)
    );
    assert_eq!(
        text(&gate).matches(&live_note).count(),
        1,
        "{}",
        text(&gate)
    );
    for o in [&report, &compare, &gate] {
        assert!(!text(o).contains("torn"), "{}", text(o));
    }

    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    let journal_text = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(journal_text.lines().count(), 40, "every unit once");
    for (i, line) in journal_text.lines().enumerate() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        assert!(v["error"].is_null(), "line {}: {v}", i + 1);
    }
    assert!(journal_text.ends_with('\n'));
    assert!(dir.join("report.md").is_file() && dir.join("summary.json").is_file());
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
    assert!(server.accepted() >= 32, "{}", server.accepted());
}
