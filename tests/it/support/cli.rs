//! The `ctxbench` binary for command-line tests, and the real quickstart run through it once
//! per test binary for the tests that only read its outputs.
#![allow(dead_code)] // each test binary uses a different part of this module

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `ctxbench`, run from the repository root, not appending to a CI job summary.
pub fn ctxbench() -> Command {
    let mut c = Command::cargo_bin("ctxbench").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("GITHUB_STEP_SUMMARY");
    c
}

/// The `ctxbench` binary's path, for tests that spawn and signal it.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("ctxbench")
}

/// Lines in a file so far (0 while it does not exist): a journal's progress.
pub fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// A JSON file of a run directory.
pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One `ctxbench run evals/quickstart.toml --run-id qs -o <dir>`: its run directory and what it
/// printed on the terminal.
pub struct Quickstart {
    pub run_dir: PathBuf,
    pub terminal: String,
}

/// The quickstart, run on first use and shared by the tests of this binary (they only read it).
/// Its directory is under cargo's per-target scratch directory, replaced on each first use.
pub fn quickstart() -> &'static Quickstart {
    static RUN: OnceLock<Quickstart> = OnceLock::new();
    RUN.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(concat!("quickstart-", env!("CARGO_CRATE_NAME")));
        let _ = std::fs::remove_dir_all(&out);
        let run = ctxbench()
            .args(["run", "evals/quickstart.toml", "--run-id", "qs", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "the quickstart failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        Quickstart {
            run_dir: out.join("qs"),
            terminal: String::from_utf8(run.stdout).unwrap(),
        }
    })
}

impl Quickstart {
    /// A text file of the run directory (`report.md`).
    pub fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.run_dir.join(file)).unwrap()
    }

    /// A JSON file of the run directory (`summary.json`).
    pub fn json(&self, file: &str) -> serde_json::Value {
        json(&self.run_dir.join(file))
    }
}
