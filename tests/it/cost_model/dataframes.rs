//! results.csv and samples.jsonl as the dataframe libraries users load them with: the
//! quickstart run (shared with the other quickstart tests of this binary) is read by Python
//! polars, pandas and DuckDB with their default options (`scripts/dataframes/check.py`), and
//! every column must get the type its meaning calls for
//! (scores and dollars float, counts integer, `passed` boolean, ids text).
//!
//! The libraries come from PyPI through `scripts/dataframes/install` (called by `.ci/setup`).
//! Under `CI=true` a missing install fails this test; elsewhere the test is skipped with a loud
//! message. `CTXBENCH_DATAFRAMES_PYTHON` points it at another interpreter that has all three.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn python() -> Option<PathBuf> {
    let candidate = match std::env::var_os("CTXBENCH_DATAFRAMES_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => {
            let cache = std::env::var_os("CTXBENCH_CACHE")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                        .join(".cache/ctxbench")
                });
            cache.join("dataframes/venv/bin/python")
        }
    };
    let ok = Command::new(&candidate)
        .args(["-c", "import polars, pandas, duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(candidate)
}

fn check(python: &Path, run: &Path) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/dataframes/check.py");
    Command::new(python)
        .arg(script)
        .arg(run)
        .output()
        .expect("cannot start python")
}

/// The same run with every whole float written as an integer (`1.0` → `1`), the way results.csv
/// was written before it was typed.
fn untyped_copy(run: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(run.join("samples.jsonl"), to.join("samples.jsonl")).unwrap();
    let text = std::fs::read_to_string(run.join("results.csv")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let cells: Vec<&str> = line
            .split(',')
            .map(|c| c.strip_suffix(".0").unwrap_or(c))
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    std::fs::write(to.join("results.csv"), out).unwrap();
}

#[test]
fn polars_pandas_and_duckdb_type_every_column_of_a_quickstart_run() {
    let Some(python) = python() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but polars/pandas/duckdb are not installed: run scripts/dataframes/install");
        }
        eprintln!(
            "\n!!!!! SKIPPED dataframes: polars, pandas and duckdb are not installed (run \
             scripts/dataframes/install or set CTXBENCH_DATAFRAMES_PYTHON) !!!!!\n"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = crate::support::cli::quickstart().run_dir.as_path();

    let out = check(&python, dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "column types:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(": OK"), "{stdout}");
    // The columns the check is about exist, so it checked them.
    let header = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let header = header.lines().next().unwrap();
    for col in [
        "needle.recall",
        "needle.pass",
        "drift.score",
        "tokens",
        "cost",
        "cost.judge",
    ] {
        assert!(header.split(',').any(|h| h == col), "no {col}: {header}");
    }

    // Control: whole floats written as integers are caught, by every library.
    let untyped = tmp.path().join("untyped");
    untyped_copy(dir, &untyped);
    let out = check(&python, &untyped);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for lib in ["polars", "pandas", "duckdb"] {
        assert!(
            stdout.contains(&format!("{lib} reads `needle.recall` as")),
            "{lib} did not catch an integer recall column:\n{stdout}"
        );
    }
}
