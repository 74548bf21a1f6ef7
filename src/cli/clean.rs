//! `ctxbench clean`: remove old run directories, prune offload stores, clear the response
//! cache. See its `--help`.

use crate::cli::UsageError;
use crate::output::display_path;
use crate::record::RunDir;
use crate::runner::stores::{dir_bytes, prune};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

const AFTER_HELP: &str = "\
Only directories that look like ctxbench runs are ever removed: a real directory (not a link)
directly inside DIR holding a run.json with `run_id` and `schema_version`, or a run that never
started (stopped before its run.json was written: it holds only `.lock` and an empty
samples.jsonl; its age is its lock file's). Anything else in DIR is left alone, and so is a run a live process is writing (`run`, `run --resume`, `repair` hold
its lock): it is listed as skipped, with the writer's pid. clean takes a run's lock before
removing or pruning it, so no writer can start on it meanwhile. A run's age is the time its
run.json was last written (the end of the run, or of its last `--resume`).

`--older-than` and `--keep` combine: with both, a run goes when it is older than AGE and not
among the N newest. `--stores` prunes the offload stores of the runs that stay to those of the
samples report.html shows in full and of failed units, as `run` does unless `--keep-stores`.
`--cache` deletes the provider response cache (responses.sqlite and its WAL files in
--cache-dir); later runs call the models again.

Examples:
  ctxbench clean --older-than 7d --dry-run      # list what would go
  ctxbench clean --older-than 7d                # runs under reports/ older than a week
  ctxbench clean --keep 5                       # all but the 5 newest runs
  ctxbench clean nightly-reports --older-than 2w --keep 3
  ctxbench clean --stores                       # prune offload stores of the runs kept
  ctxbench clean --cache --cache-dir .cache/ctxbench";

/// Remove old run directories, offload stores and the response cache
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// Directories that hold run directories [default: reports]
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// Remove runs older than AGE: a number and a unit, s m h d w (e.g. `7d`, `12h`)
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub older_than: Option<Duration>,

    /// Keep the N newest runs of each DIR (whatever their age); e.g. `--keep 5`
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,

    /// Prune the offload stores of the runs that stay (e.g. runs made with --keep-stores)
    #[arg(long)]
    pub stores: bool,

    /// Delete the provider response cache (responses.sqlite in --cache-dir)
    #[arg(long)]
    pub cache: bool,

    /// The response cache directory [default: $CTXBENCH_CACHE_DIR, else .cache/ctxbench]
    #[arg(long, value_name = "DIR", requires = "cache")]
    pub cache_dir: Option<PathBuf>,

    /// Print what would be removed and remove nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

/// `7d`, `12h`, `30m`, `45s`, `2w`.
pub fn parse_age(s: &str) -> Result<Duration, String> {
    let err = || format!("`{s}`: expected a number and a unit s, m, h, d or w (e.g. `7d`)");
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(err)?;
    let (n, unit) = s.split_at(split);
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(err()),
    };
    // A well-formed age too large for the clock (seconds in 64 bits) is said to be so.
    let too_big = || {
        format!(
            "`{s}`: out of range: an age is at most {}{unit}",
            u64::MAX / secs
        )
    };
    let n: u64 = n
        .parse()
        .map_err(|e: std::num::ParseIntError| match e.kind() {
            std::num::IntErrorKind::PosOverflow => too_big(),
            _ => err(),
        })?;
    n.checked_mul(secs)
        .map(Duration::from_secs)
        .ok_or_else(too_big)
}

/// A run directory found in DIR, with the time its run.json was last written.
#[derive(Debug)]
struct Found {
    path: PathBuf,
    written: SystemTime,
    /// A run that never started (`RunDir::never_started`): no run.json, nothing recorded.
    never_started: bool,
}

/// Whether `path` looks like a ctxbench run: a real directory with a run.json that is a JSON
/// object carrying `run_id` (a string) and `schema_version` (a number).
pub fn looks_like_run(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_dir() {
        return None;
    }
    let run_json = RunDir::new(path).run_json();
    let m = std::fs::symlink_metadata(&run_json).ok()?;
    if !m.is_file() || m.len() > 64 << 20 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&run_json).ok()?).ok()?;
    (v.get("run_id")?.is_string() && v.get("schema_version")?.is_u64())
        .then(|| m.modified().ok())
        .flatten()
}

fn runs_in(dir: &Path) -> anyhow::Result<Vec<Found>> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| UsageError(format!("{}: cannot list: {e}", display_path(dir))))?;
    for entry in entries {
        let path = entry?.path();
        if let Some(written) = looks_like_run(&path) {
            found.push(Found {
                path,
                written,
                never_started: false,
            });
        } else if RunDir::new(&path).never_started() {
            let lock = path.join(crate::record::lock::LOCK_FILE);
            if let Some(written) = std::fs::symlink_metadata(&lock)
                .ok()
                .and_then(|m| m.modified().ok())
            {
                found.push(Found {
                    path,
                    written,
                    never_started: true,
                });
            }
        }
    }
    // Newest first.
    found.sort_by(|a, b| b.written.cmp(&a.written).then(a.path.cmp(&b.path)));
    Ok(found)
}

/// Whether `clean` may change a run, and the lock it holds while it does.
enum Access {
    /// Its lock, held until the run is removed or pruned (no `run --resume` or `repair` can
    /// start meanwhile); `None` on a dry run, which only asks who holds it.
    Free(Option<crate::record::RunLock>),
    /// A live process writes it (its pid, 0 when unreadable): it is left alone.
    Held(u32),
}

/// Take a run's lock before removing or pruning it, as every writer of a run does
/// (`record::lock`): a run that a live process is writing is never touched.
fn access(run: &Path, dry_run: bool) -> anyhow::Result<Access> {
    if dry_run {
        return Ok(match crate::record::lock::holder(run) {
            Some(pid) => Access::Held(pid),
            None => Access::Free(None),
        });
    }
    match crate::record::lock::acquire(run) {
        Ok(lock) => Ok(Access::Free(Some(lock))),
        Err(crate::record::LockError::Held { pid, .. }) => Ok(Access::Held(pid.unwrap_or(0))),
        Err(e) => Err(e.into()),
    }
}

/// What `clean` prints for a run it leaves alone because it is being written.
fn skipped_live(run: &Path, pid: u32) -> String {
    let who = if pid == 0 {
        "another process".to_string()
    } else {
        format!("process {pid}")
    };
    format!(
        "skipped  {}  (being written by {who}: its lock is held; not touched)",
        display_path(run)
    )
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn age_text(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=5_399 => format!("{} min", s / 60),
        5_400..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

/// `--cache-dir DIR`, else `$CTXBENCH_CACHE_DIR`, else the default; one that exists and is no
/// directory is a usage error naming where it came from.
fn response_cache_dir(args: &Args) -> Result<PathBuf, UsageError> {
    use crate::providers::config::{cache_dir_from_env, CACHE_DIR_ENV};
    let (dir, from) = match (&args.cache_dir, cache_dir_from_env()) {
        (Some(d), _) => (d.clone(), "--cache-dir".to_string()),
        (None, Some(d)) => (d, format!("${CACHE_DIR_ENV}")),
        _ => (
            PathBuf::from(crate::providers::config::DEFAULT_CACHE_DIR),
            "the default response cache directory".to_string(),
        ),
    };
    match std::fs::metadata(&dir) {
        Ok(m) if !m.is_dir() => Err(UsageError(format!(
            "{from} {}: is a file, not a directory; expected the directory that holds the \
             response cache ({})",
            display_path(&dir),
            crate::providers::cache::DB_FILE
        ))),
        _ => Ok(dir),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.older_than.is_none() && args.keep.is_none() && !args.stores && !args.cache {
        return Err(UsageError(
            "say what to remove: --older-than AGE and/or --keep N (old runs), --stores \
             (offload stores), --cache (response cache); add --dry-run to see it first"
                .into(),
        )
        .into());
    }
    // The response cache's directory, checked before anything is removed: a file there is no
    // cache directory (not "no response cache in FILE").
    let cache_dir = args.cache.then(|| response_cache_dir(&args)).transpose()?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let dirs = if args.dirs.is_empty() {
        vec![PathBuf::from("reports")]
    } else {
        args.dirs.clone()
    };
    let now = SystemTime::now();
    let (mut runs_removed, mut bytes) = (0usize, 0u64);
    let mut stores_removed = 0usize;
    // Runs left alone because a live process writes them.
    let mut skipped = 0usize;
    for dir in &dirs {
        if args.dirs.is_empty() && !dir.exists() {
            continue; // no reports/ yet: nothing to clean
        }
        if looks_like_run(dir).is_some() {
            return Err(UsageError(format!(
                "{} is a run directory; pass the directory that holds runs (e.g. {})",
                display_path(dir),
                display_path(dir.parent().unwrap_or(Path::new(".")))
            ))
            .into());
        }
        let found = runs_in(dir)?;
        let selecting = args.older_than.is_some() || args.keep.is_some();
        for (i, run) in found.iter().enumerate() {
            let age = now.duration_since(run.written).unwrap_or_default();
            let old = args.older_than.is_none_or(|a| age > a);
            let beyond_keep = args.keep.is_none_or(|k| i >= k);
            let selected = selecting && old && beyond_keep;
            let _lock = if selected || args.stores {
                match access(&run.path, args.dry_run)? {
                    Access::Free(lock) => lock,
                    Access::Held(pid) => {
                        outln!("{}", skipped_live(&run.path, pid))?;
                        skipped += 1;
                        continue;
                    }
                }
            } else {
                None
            };
            if selected {
                let size = dir_bytes(&run.path);
                outln!(
                    "{verb}  {}  ({}{} old, {})",
                    display_path(&run.path),
                    if run.never_started {
                        "never started, "
                    } else {
                        ""
                    },
                    age_text(age),
                    mb(size)
                )?;
                if !args.dry_run {
                    std::fs::remove_dir_all(&run.path).map_err(|e| {
                        anyhow::anyhow!("cannot remove {}: {e}", display_path(&run.path))
                    })?;
                }
                runs_removed += 1;
                bytes += size;
            } else if args.stores && !run.never_started {
                let rd = RunDir::new(&run.path);
                // The report's own streaming load (compact rows, the heavy part only of the
                // samples shown in full): what `run` prunes by, without whole samples.
                match crate::report::load::load_model(&rd) {
                    Ok((_, model, _)) => {
                        let p = prune(&rd, &model, args.dry_run)?;
                        if p.removed > 0 {
                            outln!(
                                "{verb}  {} of {} offload stores of {}  ({})",
                                p.removed,
                                p.kept + p.removed,
                                display_path(&run.path),
                                mb(p.bytes)
                            )?;
                        }
                        stores_removed += p.removed;
                        bytes += p.bytes;
                    }
                    Err(e) => crate::output::errln!(
                        "warning: {}: stores left alone (run not readable: {e})",
                        display_path(&run.path)
                    ),
                }
            }
        }
    }
    // What `--cache` found: its directory, and the files removed (or that would be) and bytes.
    let mut cache: Option<(PathBuf, usize, u64)> = None;
    if args.cache {
        let cache_dir = cache_dir.clone().unwrap_or_default();
        let db = crate::providers::cache::DB_FILE;
        let (mut files, mut cache_bytes) = (0usize, 0u64);
        for name in [db.to_string(), format!("{db}-wal"), format!("{db}-shm")] {
            let f = cache_dir.join(name);
            if let Ok(m) = std::fs::symlink_metadata(&f) {
                if m.is_file() {
                    outln!("{verb}  {}  ({})", display_path(&f), mb(m.len()))?;
                    bytes += m.len();
                    files += 1;
                    cache_bytes += m.len();
                    if !args.dry_run {
                        std::fs::remove_file(&f)
                            .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", f.display()))?;
                    }
                }
            }
        }
        cache = Some((cache_dir, files, cache_bytes));
    }
    // What went, named: runs, offload stores when asked for, the response cache when asked for
    // (or that there was none).
    let mut items = vec![format!("{runs_removed} run(s)")];
    if args.stores {
        items.push(format!("{stores_removed} offload store(s)"));
    }
    let mut no_cache = String::new();
    match &cache {
        Some((dir, 0, _)) => {
            no_cache = format!("; no response cache in {}", display_path(dir));
        }
        Some((dir, files, b)) => items.push(format!(
            "the response cache ({}: {files} file(s), {})",
            display_path(dir),
            mb(*b)
        )),
        None => {}
    }
    let last = items.pop().unwrap_or_default();
    let what = if items.is_empty() {
        last
    } else {
        format!("{} and {last}", items.join(", "))
    };
    outln!(
        "{verb} {what}, {} in all{no_cache}{}{}",
        mb(bytes),
        if skipped > 0 {
            format!("; skipped {skipped} run(s) still being written")
        } else {
            String::new()
        },
        if args.dry_run {
            " (dry run: nothing was removed)"
        } else {
            ""
        }
    )?;
    Ok(ExitCode::from(crate::cli::EXIT_OK))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_need_a_unit() {
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_age("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse_age("0s"), Ok(Duration::ZERO));
        for bad in ["7", "d", "7x", "-1d", "1.5h", ""] {
            let e = parse_age(bad).unwrap_err();
            assert!(e.contains("expected a number and a unit"), "{bad:?}: {e}");
        }
        // Well formed but too large: said to be out of range, not malformed.
        for big in [
            "999999999999999w",
            "99999999999999999999w",
            "18446744073709551616s",
        ] {
            let e = parse_age(big).unwrap_err();
            assert!(
                e.contains("out of range") && !e.contains("expected a number"),
                "{big:?}: {e}"
            );
        }
        assert_eq!(
            parse_age(&format!("{}w", u64::MAX / 604_800)),
            Ok(Duration::from_secs(u64::MAX / 604_800 * 604_800))
        );
        assert_eq!(
            parse_age("18446744073709551615s"),
            Ok(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn only_directories_with_a_ctxbench_run_json_look_like_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let mk = |name: &str, run_json: Option<&str>| {
            let d = tmp.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            if let Some(j) = run_json {
                std::fs::write(d.join("run.json"), j).unwrap();
            }
            d
        };
        let run = mk("run", Some(r#"{"schema_version":1,"run_id":"x"}"#));
        assert!(looks_like_run(&run).is_some());
        for d in [
            mk("empty", None),
            mk("other-json", Some(r#"{"name":"x"}"#)),
            mk("not-json", Some("run_id schema_version")),
            mk("array", Some("[1]")),
        ] {
            assert!(looks_like_run(&d).is_none(), "{}", d.display());
        }
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&run, &link).unwrap();
        assert!(looks_like_run(&link).is_none(), "links are never runs");
    }
}
