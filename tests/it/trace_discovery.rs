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

/// A folder holding one trace, a symbolic link back to itself, a link to the trace file and a
/// named pipe with a trace's extension.
#[cfg(unix)]
fn odd_folder(root: &Path) -> PathBuf {
    let odd = root.join("odd");
    std::fs::create_dir(&odd).unwrap();
    let trace = mini_swe().join("astropy__astropy-12907.traj.json");
    std::fs::copy(&trace, odd.join("t.traj.json")).unwrap();
    std::os::unix::fs::symlink(".", odd.join("loop")).unwrap();
    std::os::unix::fs::symlink(odd.join("t.traj.json"), odd.join("again.traj.json")).unwrap();
    let fifo = odd.join("pipe.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    odd
}

/// Walking a folder follows no symbolic link (a loop repeated every file, 41 times over) and
/// opens no file that is not regular (a named pipe blocked `import` and `traces stats`
/// forever); each is named as ignored. `run`, `import` and `traces stats` alike.
#[cfg(unix)]
#[test]
fn walking_follows_no_link_and_opens_no_pipe() {
    let tmp = tempfile::tempdir().unwrap();
    let odd = odd_folder(tmp.path());
    let named = |ignored: Vec<String>| {
        for (name, why) in [
            ("loop", "symbolic link to a directory"),
            ("again.traj.json", "symbolic link to a file"),
            ("pipe.jsonl", "not a regular file (a named pipe)"),
        ] {
            assert!(
                ignored.iter().any(|i| i.contains(name) && i.contains(why)),
                "{name}: {ignored:?}"
            );
        }
        assert_eq!(ignored.len(), 3, "{ignored:?}");
    };

    // The processes end (they hung on the pipe) and say what they left out.
    let out = tmp.path().join("out");
    let o = crate::support::cli::ctxbench()
        .timeout(std::time::Duration::from_secs(60))
        .arg("import")
        .arg(&odd)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        1,
        "one trace, once"
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    assert!(err.contains("pipe.jsonl") && err.contains("loop"), "{err}");
    let o = crate::support::cli::ctxbench()
        .timeout(std::time::Duration::from_secs(60))
        .args(["traces", "stats", "--json"])
        .arg(&odd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        stats["ignored"].as_array().map(Vec::len),
        Some(3),
        "{stats}"
    );

    // In process too (first the processes, which a timeout ends).
    let imported = import_paths(&[&odd], None, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imported.traces.len(), 1);
    named(
        imported
            .ignored
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.display()))
            .collect(),
    );
    let s = suite(tmp.path(), "\"odd\"");
    let loaded = load_traces(&s, &ImportLoader).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(loaded.entries.len(), 1);
    named(
        loaded
            .ignored
            .iter()
            .map(|f| format!("{}: {}", f.file, f.error))
            .collect(),
    );

    // Named itself, a link is followed: the folder through its loop link, once.
    let imported = import_paths(&[odd.join("loop")], None, false).unwrap();
    assert_eq!(imported.traces.len(), 1);
    // A pipe named itself is not opened either.
    let s = suite(tmp.path(), "\"odd/pipe.jsonl\"");
    let e = match load_traces(&s, &ImportLoader) {
        Err(e) => format!("{e:#}"),
        Ok(_) => panic!("a pipe loaded"),
    };
    assert!(e.contains("not a regular file"), "{e}");
}
