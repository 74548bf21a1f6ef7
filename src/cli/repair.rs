//! `ctxbench repair`: see its `--help`.

use crate::record::{Repaired, RunDir};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
A journal line that cannot be read (a disk fault, an editor, a copy cut short) makes `report`,
`compare`, `gate` and `run --resume` stop with its file and line. `repair` moves every such line,
byte for byte, to the end of <run-dir>/samples.rejected.jsonl (nothing is deleted) and keeps the
readable ones; the units of the moved lines have no sample any more, so `run --resume` runs them
again. run.json's unit counts become the journal's, and a complete run that now misses units is
marked `incomplete`: `report`, `compare` and `gate` say it is partial until it is resumed.
`run --resume RUN_DIR --repair` does the same before resuming.

Example:
  ctxbench repair reports/nightly
  ctxbench run suite.toml --resume reports/nightly";

/// Move unreadable lines of a run's samples.jsonl aside so the run can be resumed and reported
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// The run directory
    #[arg(value_name = "RUN_DIR")]
    pub run: PathBuf,
}

/// Repair the journal of `run` (named on the command line by `arg`: `RUN_DIR`, or `--resume`
/// for `run --resume DIR --repair`) and say what was done on stderr (stdout stays
/// `run --quiet`'s one line).
pub fn repair(arg: &str, run: &Path) -> anyhow::Result<Repaired> {
    // A path that is no run is a usage error, before a lock file is created in it.
    super::run_journal_arg(arg, run)?;
    let dir = RunDir::new(run);
    if dir.never_started() {
        return Err(super::never_started(arg, run, "repair").into());
    }
    // Rewrites the journal: never while a run writes it. Released before `run --resume
    // --repair` takes the directory for the run.
    let _lock = dir
        .lock()
        .map_err(|e| crate::error::UsageError(e.to_string()))?;
    let r = dir.repair_journal()?;
    let recorded = crate::runner::resume::Recorded::read(&dir.samples_jsonl())?;
    if !r.moved.is_empty() {
        update_run_json(&dir, &recorded)?;
    }
    // Lines of a unit journaled more than once are readable and stay; every figure counts the
    // first of them only, which is said here too.
    let later = (r.kept as u64).saturating_sub(recorded.recorded);
    let twice = if later > 0 {
        format!(
            "; {later} of them repeat a unit journaled before (only its first line counts: \
             `report` notes them)"
        )
    } else {
        String::new()
    };
    if r.moved.is_empty() {
        crate::output::errln!(
            "{}: every line is readable ({} samples{twice}); nothing moved",
            crate::output::display_path(&dir.samples_jsonl()),
            r.kept
        );
    } else {
        let lines: Vec<String> = r.moved.iter().map(usize::to_string).collect();
        crate::output::errln!(
            "{}: moved {} unreadable line(s) (line {}) to {}; {} samples kept{twice}; `run --resume` runs their units again",
            crate::output::display_path(&dir.samples_jsonl()),
            r.moved.len(),
            lines.join(", "),
            crate::output::display_path(&dir.rejected_jsonl()),
            r.kept
        );
    }
    Ok(r)
}

/// After lines were moved aside: `run.json`'s unit counts become the journal's (`recorded`:
/// units with a sample, of which failed), and a `complete` run that now misses units of its plan becomes
/// `incomplete`, so every reader (`report`, `compare`, `gate`) says the run is partial. A
/// run.json without a status or unit counts (not written by `run` or `merge`) is left as is.
fn update_run_json(dir: &RunDir, recorded: &crate::runner::resume::Recorded) -> anyhow::Result<()> {
    let mut json: serde_json::Value = dir.read_run_json()?;
    let Some(units) = json.get_mut("units").and_then(|u| u.as_object_mut()) else {
        return Ok(());
    };
    let planned = units
        .get("planned")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    units.insert("recorded".into(), recorded.recorded.into());
    units.insert("failed".into(), recorded.failed.into());
    if json.get("status").and_then(serde_json::Value::as_str) == Some("complete")
        && recorded.recorded < planned
    {
        json["status"] = crate::record::RunStatus::Incomplete.as_str().into();
    }
    dir.write_run_json(&json)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", dir.run_json().display()))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    repair("RUN_DIR", &args.run)?;
    Ok(ExitCode::SUCCESS)
}
