//! `run` and `import` select the same files from a folder: mini-swe-agent's output folder (its
//! trajectories beside `results_summary.json`) loads under both, and the non-trace file is only
//! an error when named explicitly.

use ctxbench::config::LoadedSuite;
use ctxbench::runner::session::{load_traces, ImportLoader};
use ctxbench::trace::import::import_paths;
use std::path::{Path, PathBuf};

fn mini_swe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini-swe-agent")
}

fn suite(dir: &Path, paths: &str) -> LoadedSuite {
    let text = format!("[suite]\nname = \"t\"\n[traces]\npaths = [{paths}]\n");
    LoadedSuite::from_str(&text, &dir.join("suite.toml")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_mini_swe_folder_loads_under_run_as_under_import() {
    let folder = mini_swe();
    assert!(folder.join("results_summary.json").is_file());
    let imported = import_paths(&[&folder], None, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imported.ignored.len(), 1);
    let tmp = tempfile::tempdir().unwrap();
    let s = suite(tmp.path(), &format!("{:?}", folder.display().to_string()));
    let loaded = load_traces(&s, &ImportLoader).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(loaded.skipped.is_empty());
    // The non-trace file is listed, as import lists it, never dropped silently.
    let ignored: Vec<&str> = loaded.ignored.iter().map(|f| f.file.as_str()).collect();
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    assert!(ignored[0].ends_with("results_summary.json"), "{ignored:?}");
    assert!(
        loaded.ignored[0].error.contains("keys total, passed"),
        "{:?}",
        loaded.ignored
    );
    let mut run_ids: Vec<String> = loaded.entries.iter().map(|e| e.id.clone()).collect();
    let mut import_ids: Vec<String> = imported.traces.iter().map(|t| t.meta.id.clone()).collect();
    run_ids.sort();
    import_ids.sort();
    assert!(!run_ids.is_empty());
    assert_eq!(run_ids, import_ids);
    // A glob over the folder is tolerant the same way.
    let glob = format!("{:?}", format!("{}/*.json", folder.display()));
    let loaded = load_traces(&suite(tmp.path(), &glob), &ImportLoader).unwrap();
    assert_eq!(loaded.entries.len(), import_ids.len());
    assert_eq!(loaded.ignored.len(), 1);
}

#[test]
fn a_non_trace_named_explicitly_fails_under_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = mini_swe().join("results_summary.json");
    let s = suite(tmp.path(), &format!("{:?}", file.display().to_string()));
    let e = match load_traces(&s, &ImportLoader) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("results_summary.json loaded as a trace"),
    };
    assert!(e.contains("not a trace"), "{e}");
}
