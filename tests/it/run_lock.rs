//! One process owns a run directory (#26 point 9): a second writer (`run --resume` on a live
//! run) is refused with exit 2 naming the holder's pid, while `report` on the live run reads
//! what is journaled and says the run is in progress; the live run finishes with a readable
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
