//! Running a suite in-process the way `ctxbench run` does — load, plan, route to the real
//! executors, execute, read the journaled samples — for tests that check what a run records.
#![allow(dead_code)] // each test binary uses a different part of this module

use ctxbench::config::{ConfigError, LoadedSuite};
use ctxbench::record::{RunDir, Sample};
use ctxbench::runner::session::{self, ImportLoader, Outcome, Prepared, RunOptions};
use ctxbench::runner::Router;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A bundled dataset file: `dataset("mini-swe-agent/psf__requests-1142.traj.json")`.
pub fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets")
        .join(rel)
}

/// Write `text` to `dir/suite.toml` and load it.
pub fn load(dir: &Path, text: &str) -> Result<LoadedSuite, ConfigError> {
    let p = dir.join("suite.toml");
    std::fs::write(&p, text).unwrap();
    LoadedSuite::load(&p)
}

/// `ctxbench run`'s options for a fresh run with id `r` and the real executors.
pub fn options() -> RunOptions {
    RunOptions {
        run_id: Some("r".into()),
        executor: "default".into(),
        ..RunOptions::default()
    }
}

/// Plan `suite`, route its units to the real executors (every eval must be supported) and open
/// the run directory.
pub fn prepare(suite: &LoadedSuite, opts: &RunOptions) -> (Prepared, Router) {
    let planned = session::plan_run(suite, &ImportLoader).unwrap();
    let router = ctxbench::cli::run::default_router(&planned.plan, suite).unwrap();
    assert!(ctxbench::runner::unsupported_evals(suite, &router).is_empty());
    (session::open_run(suite, opts, planned).unwrap(), router)
}

/// Execute a prepared run on `rt`, with no interrupt.
pub fn execute(rt: &tokio::runtime::Runtime, prepared: Prepared, router: Router) -> Outcome {
    rt.block_on(async {
        let (_tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        session::execute(prepared, Arc::new(router), &mut rx).await
    })
    .unwrap()
}

/// Run a loaded suite with [`options`] on a fresh runtime.
pub fn run(suite: &LoadedSuite) -> Outcome {
    let (prepared, router) = prepare(suite, &options());
    execute(&tokio::runtime::Runtime::new().unwrap(), prepared, router)
}

/// Load `text` in `dir` and run it; the run must have no failed unit. Returns the run directory.
pub fn run_ok(dir: &Path, text: &str) -> PathBuf {
    let out = run(&load(dir, text).unwrap());
    assert_eq!(
        out.failed_total,
        0,
        "failed units in {}",
        out.run_dir.display()
    );
    out.run_dir
}

/// The samples a run journaled.
pub fn samples(run_dir: &Path) -> Vec<Sample> {
    RunDir::new(run_dir).read().unwrap().samples
}

/// The journal's lines (samples.jsonl as written, not deduplicated) keyed by unit id; fails on
/// a unit journaled twice.
pub fn by_unit(run_dir: &Path) -> BTreeMap<String, Sample> {
    let text = std::fs::read_to_string(run_dir.join("samples.jsonl")).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let s: Sample = serde_json::from_str(line).unwrap();
        assert!(
            out.insert(s.unit_id.clone(), s).is_none(),
            "duplicate unit in {}",
            run_dir.display()
        );
    }
    out
}

/// Every directory and file under `root` (relative paths, sorted), with the files' bytes
/// (directories: `None`); empty when `root` does not exist.
pub fn file_tree(root: &std::path::Path) -> Vec<(String, Option<Vec<u8>>)> {
    if !root.exists() {
        return Vec::new();
    }
    let mut v: Vec<_> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(Result::unwrap)
        .map(|e| {
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            let bytes = e
                .file_type()
                .is_file()
                .then(|| std::fs::read(e.path()).unwrap());
            (rel, bytes)
        })
        .collect();
    v.sort();
    v
}
