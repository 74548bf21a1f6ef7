//! `ctxbench merge`: join the run directories of `run --shard i/n` (or any runs of the same
//! suite) into one. Runs must share the suite digest and the trace and prompt digests; a unit
//! recorded in two inputs must be identical apart from latency, otherwise it is an error.

use super::manifest::{now_rfc3339, RunManifest, RunStatus, Totals, UnitCounts};
use crate::error::UsageError;
use crate::record::{RunDir, Sample};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a merge produced.
pub struct Merged {
    pub manifest: RunManifest,
    /// Units of the plan with no sample in any input.
    pub missing: u64,
}

fn same_apart_from_latency(a: &Sample, b: &Sample) -> bool {
    let mut b = b.clone();
    b.latency_ms = a.latency_ms;
    *a == b
}

/// Merge `inputs` into the new directory `out` (which must not exist, or be empty).
pub fn merge(inputs: &[PathBuf], out: &Path) -> anyhow::Result<Merged> {
    if inputs.is_empty() {
        return Err(UsageError("merge needs at least one run directory".into()).into());
    }
    let mut manifests = Vec::new();
    for dir in inputs {
        let m: RunManifest = RunDir::new(dir)
            .read_run_json()
            .map_err(|e| UsageError(e.to_string()))?;
        manifests.push(m);
    }
    let first = &manifests[0];
    for (m, dir) in manifests.iter().zip(inputs).skip(1) {
        if let Some(why) = first.incompatibility(m) {
            return Err(UsageError(format!(
                "cannot merge {} with {}: {why}",
                inputs[0].display(),
                dir.display()
            ))
            .into());
        }
        if m.units.planned_total != first.units.planned_total {
            return Err(UsageError(format!(
                "cannot merge {} with {}: they planned {} and {} units",
                inputs[0].display(),
                dir.display(),
                first.units.planned_total,
                m.units.planned_total
            ))
            .into());
        }
    }
    let mut by_id: BTreeMap<String, (Sample, usize)> = BTreeMap::new();
    for (i, dir) in inputs.iter().enumerate() {
        let run_dir = RunDir::new(dir);
        let read = run_dir
            .read_samples_or_empty()
            .map_err(|e| UsageError(e.to_string()))?;
        if let Some(t) = read.torn {
            let line = t.line;
            eprintln!(
                "warning: {}:{line}: ignoring a torn last line (the run was killed mid-write)",
                run_dir.samples_jsonl().display()
            );
        }
        for s in read.samples {
            match by_id.get(&s.unit_id) {
                Some((prev, j)) if !same_apart_from_latency(prev, &s) => {
                    return Err(UsageError(format!(
                        "unit {} ({} / {} / {} / {} / repeat {}) is recorded differently in {} and {}",
                        s.unit_id,
                        s.trace_id,
                        s.variant,
                        s.eval,
                        s.sample,
                        s.repeat,
                        inputs[*j].display(),
                        dir.display()
                    ))
                    .into())
                }
                Some(_) => {}
                None => {
                    by_id.insert(s.unit_id.clone(), (s, i));
                }
            }
        }
    }
    let variant_pos: BTreeMap<&str, usize> = first
        .info
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| (v.as_str(), i))
        .collect();
    let mut samples: Vec<Sample> = by_id.into_values().map(|(s, _)| s).collect();
    samples.sort_by(|a, b| {
        (
            &a.trace_id,
            variant_pos.get(a.variant.as_str()),
            &a.eval,
            &a.sample,
            a.repeat,
        )
            .cmp(&(
                &b.trace_id,
                variant_pos.get(b.variant.as_str()),
                &b.eval,
                &b.sample,
                b.repeat,
            ))
    });

    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(UsageError(format!(
            "output {} exists and is not empty; merge into a new directory",
            out.display()
        ))
        .into());
    }
    std::fs::create_dir_all(out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let out_dir = RunDir::new(out);
    out_dir
        .write_samples(&samples)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out_dir.samples_jsonl().display()))?;

    let planned_total = first.units.planned_total;
    let recorded = samples.len() as u64;
    let missing = planned_total.saturating_sub(recorded);
    let mut m = first.clone();
    m.info.run_id = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "merged".into());
    m.shard = None;
    m.merged_from = manifests.iter().map(|m| m.info.run_id.clone()).collect();
    m.info.created = manifests
        .iter()
        .map(|m| m.info.created.clone())
        .min()
        .unwrap_or_default();
    m.finished_at = Some(now_rfc3339());
    m.units = UnitCounts {
        planned_total,
        planned: planned_total,
        recorded,
        failed: samples.iter().filter(|s| s.error.is_some()).count() as u64,
        not_run_budget: manifests.iter().map(|m| m.units.not_run_budget).sum(),
        not_run_interrupted: manifests.iter().map(|m| m.units.not_run_interrupted).sum(),
    };
    m.totals = Totals::of(samples.iter().map(Sample::row));
    let mut skipped = Vec::new();
    for mm in &manifests {
        for s in &mm.skipped_traces {
            if !skipped.contains(s) {
                skipped.push(s.clone());
            }
        }
    }
    m.skipped_traces = skipped;
    m.status = if missing == 0 {
        RunStatus::Complete
    } else {
        RunStatus::Incomplete
    };
    out_dir
        .write_run_json(&m)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out_dir.run_json().display()))?;
    Ok(Merged {
        manifest: m,
        missing,
    })
}
