//! `--resume RUN_DIR`: continue a run in place. The suite and traces must be the ones the run
//! started with (same digests); units whose ids already have a sample in `samples.jsonl` are
//! skipped (failed ones too: a failure is a result, unless `--retry-failed` asks to run them
//! again: their samples are then removed from `samples.jsonl` before the run continues); a torn
//! last line from a killed run is cut.

use super::manifest::RunManifest;
use super::shard::Shard;
use crate::config::Overrides;
use crate::error::UsageError;
use crate::record::{Journal, RunDir, Sample, TornLine};
use std::collections::HashSet;
use std::path::Path;

/// An opened run directory ready to continue.
pub struct Resumed {
    pub manifest: RunManifest,
    pub journal: Journal,
    /// Samples already recorded.
    pub samples: Vec<Sample>,
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
        let show = |o: &Overrides| serde_json::to_string(o).unwrap_or_default();
        return Err(UsageError(format!(
            "cannot resume {}: it was started with other command-line overrides ({} then, {} now); \
             resume with the same --set/--variant/--trace/--eval/--limit flags",
            dir.display(),
            show(&manifest.overrides),
            show(overrides)
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
    let (journal, samples, torn) = run_dir
        .resume_journal()
        .map_err(|e| UsageError(e.to_string()))?;
    Ok(Resumed {
        manifest,
        journal,
        samples,
        torn,
    })
}

/// Rewrite `samples.jsonl` without the samples of failed units (atomically: a temporary file
/// renamed over it), so they are planned again. Lines that do not parse stay for the journal
/// reader to judge (a torn last line is cut there).
fn drop_failed(run_dir: &RunDir) -> std::io::Result<usize> {
    let path = run_dir.samples_jsonl();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut kept = String::with_capacity(text.len());
    let mut dropped = 0;
    for line in text.split_inclusive('\n') {
        let failed = serde_json::from_str::<Sample>(line.trim_end())
            .map(|s| s.error.is_some())
            .unwrap_or(false);
        if failed {
            dropped += 1;
        } else {
            kept.push_str(line);
        }
    }
    if dropped > 0 {
        let tmp = path.with_extension("jsonl.retry-tmp");
        std::fs::write(&tmp, kept)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(dropped)
}

/// Ids that already have a sample.
pub fn done_ids(samples: &[Sample]) -> HashSet<String> {
    samples.iter().map(|s| s.unit_id.clone()).collect()
}
