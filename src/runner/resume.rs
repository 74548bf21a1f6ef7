//! `--resume RUN_DIR`: continue a run in place. The suite and traces must be the ones the run
//! started with (same digests); units whose ids already have a sample in `samples.jsonl` are
//! skipped (failed ones too: a failure is a result, unless `--retry-failed` asks to run them
//! again: their samples are then removed from `samples.jsonl` before the run continues); a torn
//! last line from a killed run is cut.
//!
//! The journal is streamed (one line at a time, heavy parts skipped unbuilt: `report::load`):
//! what stays in memory is the set of finished unit ids (8 bytes each) and running totals, not
//! the samples.

use super::manifest::{RunManifest, Totals, TotalsSum};
use super::shard::Shard;
use crate::config::Overrides;
use crate::error::UsageError;
use crate::record::{Journal, JournalError, RunDir, Sample, TornLine};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// Ids of the units that have a sample. Plan ids are 16 hex digits (`plan::unit_id`), kept as
/// a `u64`; any other id (a hand-edited journal) is kept as text.
#[derive(Clone, Debug, Default)]
pub struct DoneIds {
    hex: HashSet<u64>,
    other: HashSet<String>,
}

fn hex_id(id: &str) -> Option<u64> {
    (id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(id, 16).ok())
        .flatten()
        // Upper-case digits would alias lower-case ones: keep those as text.
        .filter(|_| !id.bytes().any(|b| b.is_ascii_uppercase()))
}

impl DoneIds {
    /// Add `id`; whether it was new.
    pub fn insert(&mut self, id: &str) -> bool {
        match hex_id(id) {
            Some(h) => self.hex.insert(h),
            None => self.other.insert(id.to_string()),
        }
    }
    pub fn contains(&self, id: &str) -> bool {
        match hex_id(id) {
            Some(h) => self.hex.contains(&h),
            None => self.other.contains(id),
        }
    }
    pub fn len(&self) -> usize {
        self.hex.len() + self.other.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a journal already holds, read in one streaming pass: the finished unit ids, the
/// sample counts and the totals.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    pub done: DoneIds,
    /// Samples in the journal (ok + failed).
    pub recorded: u64,
    pub failed: u64,
    pub totals: Totals,
    /// The running sums `totals` was finished from: a run that goes on adds its new samples to
    /// them ([`super::execute::dispatch`]) instead of reading the journal again at its end.
    pub sum: TotalsSum,
    /// Dollars spent on model calls by attempts kept in `samples.replaced.jsonl` (failed ones
    /// that `--retry-failed` replaced, units cancelled while running): the budget counts them;
    /// the journal does not hold them.
    pub replaced_spent_usd: f64,
    /// Those attempts.
    pub replaced: u64,
}

impl Recorded {
    /// Stream the journal at `path` (a missing file is an empty journal).
    pub fn read(path: &Path) -> Result<Recorded, JournalError> {
        if !path.exists() {
            return Ok(Recorded::default());
        }
        let mut done = DoneIds::default();
        let mut sum = TotalsSum::default();
        crate::report::load::each_light(path, |s, _| {
            // A unit journaled more than once counts once, by its first line, as in the
            // report: the counts never pass the plan.
            if done.insert(&s.unit_id) {
                sum.add(&s.row());
            }
        })?;
        Ok(Recorded {
            done,
            recorded: sum.recorded,
            failed: sum.failed,
            totals: sum.clone().finish(),
            sum,
            replaced_spent_usd: 0.0,
            replaced: 0,
        })
    }
}

/// An opened run directory ready to continue.
pub struct Resumed {
    pub manifest: RunManifest,
    pub journal: Journal,
    /// What the journal already holds.
    pub recorded: Recorded,
    /// A torn last line that was cut off (the run was killed mid-write).
    pub torn: Option<TornLine>,
}

/// Open `dir` for resuming a run of a suite with digest `suite_digest`, made with the same
/// command-line `overrides`. `shard` is what the
/// command line asked for (None = whatever the run used).
pub fn open(
    dir: &Path,
    suite_digest: &str,
    overrides: &Overrides,
    shard: Option<Shard>,
    retry_failed: bool,
) -> anyhow::Result<Resumed> {
    let run_dir = RunDir::new(dir);
    let manifest: RunManifest = run_dir
        .read_run_json()
        .map_err(|e| UsageError(e.to_string()))?;
    if &manifest.overrides != overrides {
        return Err(UsageError(format!(
            "cannot resume {}: it was started with other command-line overrides (`{}` then, \
             `{}` now); resume with the same --set/--variant/--trace/--eval/--limit flags",
            dir.display(),
            manifest.overrides.as_flags(),
            overrides.as_flags()
        ))
        .into());
    }
    if manifest.suite_digest != suite_digest {
        return Err(UsageError(format!(
            "cannot resume {}: the suite changed since the run started (digest {} then, {} now); start a new run instead",
            dir.display(),
            &manifest.suite_digest.get(..12).unwrap_or(&manifest.suite_digest),
            suite_digest.get(..12).unwrap_or(suite_digest)
        ))
        .into());
    }
    if let Some(s) = shard {
        if manifest.shard != Some(s) {
            return Err(UsageError(format!(
                "cannot resume {} as shard {s}: it was started as {}",
                dir.display(),
                manifest
                    .shard
                    .map_or("an unsharded run".to_string(), |m| format!("shard {m}"))
            ))
            .into());
        }
    }
    if !manifest.merged_from.is_empty() {
        return Err(UsageError(format!(
            "cannot resume {}: it is the output of `ctxbench merge`; resume the shard runs instead",
            dir.display()
        ))
        .into());
    }
    if retry_failed {
        drop_failed(&run_dir).map_err(|e| {
            UsageError(format!(
                "cannot drop the failed units of {}: {e}",
                run_dir.samples_jsonl().display()
            ))
        })?;
    }
    let (journal, torn) =
        Journal::open_append(&run_dir.samples_jsonl()).map_err(|e| UsageError(e.to_string()))?;
    let mut recorded =
        Recorded::read(&run_dir.samples_jsonl()).map_err(|e| UsageError(e.to_string()))?;
    let replaced =
        crate::report::load::replaced_attempts(&run_dir.replaced_jsonl()).map_err(|e| {
            UsageError(format!(
                "cannot read {}: {e}",
                run_dir.replaced_jsonl().display()
            ))
        })?;
    (recorded.replaced, recorded.replaced_spent_usd) = (replaced.attempts(), replaced.usd());
    Ok(Resumed {
        manifest,
        journal,
        recorded,
        torn,
    })
}

/// Append `samples` (attempts that have no line in the journal: units cancelled while
/// running) to `samples.replaced.jsonl`, synced: what they spent counts on a later resume's
/// budget and in the report's notes, as `--retry-failed`'s replaced attempts do.
pub fn append_replaced(run_dir: &RunDir, samples: &[Sample]) -> std::io::Result<()> {
    if samples.is_empty() {
        return Ok(());
    }
    let mut w = BufWriter::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(run_dir.replaced_jsonl())?,
    );
    let mut line = Vec::new();
    for s in samples {
        line.clear();
        Journal::encode(s, &mut line).map_err(std::io::Error::other)?;
        line.push(b'\n');
        w.write_all(&line)?;
    }
    w.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// Rewrite `samples.jsonl` without the samples of failed units (atomically: a temporary file
/// renamed over it), so they are planned again; one line in memory at a time. Lines that do not
/// parse stay for the journal reader to judge (a torn last line is cut there). The dropped
/// lines are appended to `samples.replaced.jsonl`: what those attempts spent is not lost.
fn drop_failed(run_dir: &RunDir) -> std::io::Result<usize> {
    let path = run_dir.samples_jsonl();
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let tmp = path.with_extension("jsonl.retry-tmp");
    let mut out = BufWriter::new(std::fs::File::create(&tmp)?);
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut line = Vec::new();
    let mut dropped = 0;
    let mut replaced: Option<BufWriter<std::fs::File>> = None;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let failed = crate::report::load::parse_light(line.trim_ascii_end())
            .map(|(s, _)| s.error.is_some())
            .unwrap_or(false);
        if failed {
            dropped += 1;
            let w = match &mut replaced {
                Some(w) => w,
                None => replaced.insert(BufWriter::new(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(run_dir.replaced_jsonl())?,
                )),
            };
            w.write_all(&line)?;
            if !line.ends_with(b"\n") {
                w.write_all(b"\n")?;
            }
        } else {
            out.write_all(&line)?;
        }
    }
    if let Some(w) = replaced {
        // Kept before the journal loses them.
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    let out = out.into_inner().map_err(|e| e.into_error())?;
    if dropped > 0 {
        out.sync_all()?;
        drop(out);
        std::fs::rename(&tmp, &path)?;
    } else {
        drop(out);
        std::fs::remove_file(&tmp)?;
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_ids_keep_plan_ids_as_numbers_and_anything_else_as_text() {
        let mut d = DoneIds::default();
        let id = crate::runner::plan::unit_id("t", "v", "needle", "s", 0);
        d.insert(&id);
        d.insert("hand-made");
        d.insert("ABCDEF0123456789");
        assert!(d.contains(&id) && d.contains("hand-made") && d.contains("ABCDEF0123456789"));
        assert!(!d.contains("abcdef0123456789") && !d.contains("0000000000000000"));
        assert_eq!((d.hex.len(), d.other.len()), (1, 2));
        assert!(!d.insert(&id) && !d.insert("hand-made"), "already there");
    }

    /// A unit journaled twice counts once, by its first line: a resume's progress and
    /// run.json's `recorded` never pass the plan.
    #[test]
    fn a_unit_journaled_twice_is_recorded_once() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let sample = |id: &str, input: u64, failed: bool| {
            let mut s = Sample::builder().unit_id(id).build();
            s.tokens.agent.input = input;
            if failed {
                s.error = Some(crate::record::UnitError {
                    kind: "timeout".into(),
                    message: "slow".into(),
                });
            }
            s
        };
        run.write_samples(&[
            sample("u1", 10, false),
            sample("u2", 20, true),
            sample("u1", 1000, true),
        ])
        .unwrap();
        let r = Recorded::read(&run.samples_jsonl()).unwrap();
        assert_eq!((r.recorded, r.failed, r.done.len()), (2, 1, 2));
        assert_eq!(r.totals.tokens.agent.input, 30);
    }
}
