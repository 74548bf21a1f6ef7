//! Offload stores are pruned after a run (kept for the samples the HTML shows in full, all of
//! them with `--keep-stores`), and `ctxbench clean` removes old runs and nothing else.

use crate::support::cli::ctxbench;
use std::path::Path;
use std::time::{Duration, SystemTime};

fn quickstart(out: &Path, id: &str, extra: &[&str]) -> std::path::PathBuf {
    ctxbench()
        .args([
            "run",
            "evals/quickstart.toml",
            "-q",
            "--limit",
            "3",
            "--run-id",
            id,
            "-o",
        ])
        .arg(out)
        .args(extra)
        .assert()
        .success();
    out.join(id)
}

fn stores(run: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(run.join("stores"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_run_keeps_only_the_stores_of_samples_shown_in_full_unless_keep_stores() {
    let tmp = tempfile::tempdir().unwrap();
    let all = quickstart(tmp.path(), "all", &["--keep-stores"]);
    let pruned = quickstart(tmp.path(), "pruned", &[]);
    let run = ctxbench::record::RunDir::new(&pruned).read().unwrap();
    let model = ctxbench::report::ReportModel::build(&run.info, run.samples);
    let kept = stores(&pruned);
    let every = stores(&all);
    assert_eq!(
        every.len(),
        model.samples.len(),
        "--keep-stores keeps one per unit"
    );
    assert!(
        kept.len() < every.len(),
        "stores/ shrinks: {} of {}",
        kept.len(),
        every.len()
    );
    let bytes = |run: &Path| ctxbench::runner::stores::dir_bytes(&run.join("stores"));
    assert!(bytes(&pruned) < bytes(&all));
    // Exactly the samples report.html shows in full (and failed units) keep theirs.
    let want: Vec<String> = ctxbench::report::shown::shown_in_full(&model)
        .unwrap()
        .into_iter()
        .filter(|id| all.join("stores").join(id).exists())
        .collect();
    assert_eq!(kept, want);
    let (html, _) = ctxbench::report::html::select(
        &model.samples,
        model.baseline.as_deref(),
        model.variants.len(),
    );
    assert!(!html.is_empty());
    for i in html {
        let id = model.samples.get(i).unit_id.to_string();
        if all.join("stores").join(&id).exists() {
            assert!(
                kept.contains(&id),
                "{id} is shown in full but lost its store"
            );
        }
    }

    // `clean --stores` prunes a --keep-stores run to the same set, and leaves the run itself.
    ctxbench()
        .arg("clean")
        .arg(tmp.path())
        .args(["--stores", "--dry-run"])
        .assert()
        .success();
    assert_eq!(stores(&all), every, "a dry run removes nothing");
    ctxbench()
        .arg("clean")
        .arg(tmp.path())
        .arg("--stores")
        .assert()
        .success();
    assert_eq!(stores(&all), kept);
    // The run wrote only the stores it could keep (decided as each unit ended): the kept ones
    // are byte for byte those of the run that wrote every store.
    assert_eq!(
        crate::support::run::file_tree(&pruned.join("stores")),
        crate::support::run::file_tree(&all.join("stores"))
    );
    assert!(!pruned.join("stores.pack").exists());
    assert!(all.join("samples.jsonl").exists() && all.join("report.html").exists());
}

#[test]
fn clean_cache_removes_only_the_response_cache_files() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    for f in ["responses.sqlite", "responses.sqlite-wal", "notes.txt"] {
        std::fs::write(cache.join(f), "x").unwrap();
    }
    let empty = tmp.path().join("reports");
    std::fs::create_dir_all(&empty).unwrap();
    let clean = || {
        let o = ctxbench()
            .arg("clean")
            .arg(&empty)
            .arg("--cache")
            .arg("--cache-dir")
            .arg(&cache)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines().last().unwrap_or_default().to_string()
    };
    // The closing line says what went: the cache too, not only `0 run(s)`.
    let last = clean();
    assert!(
        last.starts_with("removed 0 run(s) and the response cache (") && last.contains("2 file(s)"),
        "{last}"
    );
    assert!(!cache.join("responses.sqlite").exists());
    assert!(!cache.join("responses.sqlite-wal").exists());
    assert!(cache.join("notes.txt").exists(), "other files stay");
    // And that there was none to remove.
    let last = clean();
    assert!(last.contains("no response cache in "), "{last}");
}

/// `--cache-dir FILE` (or `$CTXBENCH_CACHE_DIR` naming a file) is no cache directory: exit 2
/// naming it, before any run is removed, not "no response cache in FILE".
#[test]
fn clean_cache_dir_that_is_a_file_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("cache.txt");
    std::fs::write(&file, "x").unwrap();
    let reports = tmp.path().join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let flag = ctxbench()
        .arg("clean")
        .arg(&reports)
        .args(["--cache", "--cache-dir"])
        .arg(&file)
        .output()
        .unwrap();
    let env = ctxbench()
        .env("CTXBENCH_CACHE_DIR", &file)
        .arg("clean")
        .arg(&reports)
        .arg("--cache")
        .output()
        .unwrap();
    for (o, from) in [(flag, "--cache-dir "), (env, "$CTXBENCH_CACHE_DIR ")] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(from) && err.contains("cache.txt"), "{err}");
        assert!(err.contains("is a file, not a directory"), "{err}");
        assert!(!err.contains("no response cache"), "{err}");
    }
    assert!(file.is_file());
}

fn set_age(run: &Path, age: Duration) {
    let f = std::fs::File::options()
        .write(true)
        .open(run.join("run.json"))
        .unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

#[test]
fn clean_lists_on_dry_run_and_removes_only_old_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let fresh = quickstart(&reports, "fresh", &[]);
    let old = reports.join("old");
    copy_dir(&fresh, &old);
    set_age(&old, Duration::from_secs(10 * 86_400));
    let older = reports.join("older");
    copy_dir(&fresh, &older);
    set_age(&older, Duration::from_secs(20 * 86_400));
    // Things that are not runs, even old ones, are never touched.
    let notes = reports.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("run.json"), r#"{"name":"not a ctxbench run"}"#).unwrap();
    std::fs::create_dir_all(reports.join("data")).unwrap();
    std::fs::write(reports.join("x.txt"), "keep me").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&fresh, reports.join("link-to-run")).unwrap();

    let out = ctxbench()
        .arg("clean")
        .arg(&reports)
        .args(["--older-than", "7d", "--dry-run"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("would remove") && out.contains("old"), "{out}");
    assert!(out.contains("would remove 2 run(s)"), "{out}");
    assert!(!out.contains("fresh") && !out.contains("notes"), "{out}");
    assert!(old.exists() && older.exists(), "a dry run removes nothing");

    // --keep 2 with --older-than: the two newest (fresh, old) stay, `older` goes.
    ctxbench()
        .arg("clean")
        .arg(&reports)
        .args(["--older-than", "7d", "--keep", "2"])
        .assert()
        .success();
    assert!(old.exists() && !older.exists());

    ctxbench()
        .arg("clean")
        .arg(&reports)
        .args(["--older-than", "7d"])
        .assert()
        .success();
    assert!(!old.exists() && fresh.join("run.json").exists());
    for other in ["notes/run.json", "data", "x.txt", "link-to-run"] {
        assert!(
            std::fs::symlink_metadata(reports.join(other)).is_ok(),
            "{other} was removed"
        );
    }

    // Usage errors: nothing said about what to remove; a run directory instead of its parent.
    ctxbench().arg("clean").arg(&reports).assert().code(2);
    ctxbench()
        .arg("clean")
        .arg(&fresh)
        .args(["--keep", "0"])
        .assert()
        .code(2);
    assert!(fresh.join("run.json").exists());
}

/// A run a live process writes (it holds the run's lock) is never removed or pruned, whatever
/// its age, and `clean` says it skipped it; once the lock is free, it goes.
/// A run killed before it first wrote run.json (only `.lock` and an empty samples.jsonl) is a
/// run to clean; a directory with anything else in it is not.
#[test]
fn clean_removes_a_run_that_never_started() {
    let tmp = tempfile::tempdir().unwrap();
    let early = tmp.path().join("early");
    std::fs::create_dir(&early).unwrap();
    std::fs::write(early.join(".lock"), "4999999\n").unwrap();
    std::fs::write(early.join("samples.jsonl"), "").unwrap();
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join(".lock"), "").unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let o = ctxbench()
        .args(["clean", "--older-than", "0s"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(text.contains("never started"), "{text}");
    assert!(text.contains("removed 1 run(s)"), "{text}");
    assert!(!early.exists());
    assert!(other.join("notes.txt").exists());
}

#[test]
fn clean_skips_a_run_whose_lock_is_held() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let live = reports.join("live");
    std::fs::create_dir_all(&live).unwrap();
    std::fs::write(
        live.join("run.json"),
        r#"{"schema_version":1,"run_id":"live"}"#,
    )
    .unwrap();
    set_age(&live, Duration::from_secs(30 * 86_400));
    // This test process stands for the writer: it holds the run's lock.
    let lock = ctxbench::record::lock::acquire(&live).unwrap();
    let pid = std::process::id();
    for extra in [&["--dry-run"][..], &[], &["--stores"]] {
        ctxbench()
            .arg("clean")
            .arg(&reports)
            .args(["--keep", "0"])
            .args(extra)
            .assert()
            .success()
            .stdout(predicates::str::contains(format!(
                "live  (being written by process {pid}: its lock is held; not touched)"
            )))
            .stdout(predicates::str::contains(if extra == ["--dry-run"] {
                "would remove 0 run(s)"
            } else {
                "removed 0 run(s)"
            }))
            .stdout(predicates::str::contains(
                "skipped 1 run(s) still being written",
            ));
        assert!(
            live.join("run.json").exists(),
            "a live run was removed ({extra:?})"
        );
    }
    drop(lock);
    ctxbench()
        .arg("clean")
        .arg(&reports)
        .args(["--keep", "0"])
        .assert()
        .success()
        .stdout(predicates::str::contains("removed 1 run(s)"));
    assert!(!live.exists());
}
