//! `ctxbench merge`: join the run directories of `run --shard i/n` (or any runs of the same
//! suite) into one. Runs must share the suite digest and the trace and prompt digests; a unit
//! recorded in two inputs must be identical apart from latency, otherwise it is an error.
//!
//! Streamed: each input journal is read one line at a time, and what stays in memory per unit is
//! an index entry (interned sort key, which input and where its line is, a digest of the sample
//! without its latency: ~60 bytes), never the sample. The output is then written in plan order
//! by seeking to each kept line, and its totals are summed as it is written.

use super::manifest::{now_rfc3339, RunManifest, RunStatus, SkippedTrace, TotalsSum, UnitCounts};
use crate::error::UsageError;
use crate::record::journal::read_line_at;
use crate::record::{Interner, RunDir, Sample};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a merge produced.
pub struct Merged {
    pub manifest: RunManifest,
    /// Units of the plan with no sample in any input.
    pub missing: u64,
}

/// Digest of a sample with its latency set aside: two samples of a unit are the same result
/// when their digests are equal (the sample's own serialization, so no second copy of the
/// journal's format lives here).
fn digest_apart_from_latency(s: &mut Sample) -> [u8; 16] {
    let latency = std::mem::take(&mut s.latency_ms);
    let bytes = serde_json::to_vec(&*s).unwrap_or_default();
    s.latency_ms = latency;
    let d = Sha256::digest(&bytes);
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

/// Append every input's `samples.replaced.jsonl` (whole lines; a torn last line of an input
/// is left out, as reading it would) to the output's, in input order.
fn carry_replaced(inputs: &[PathBuf], out: &RunDir) -> anyhow::Result<()> {
    use std::io::Write;
    let mut writer: Option<std::fs::File> = None;
    for dir in inputs {
        let from = RunDir::new(dir).replaced_jsonl();
        let bytes = match std::fs::read(&from) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => anyhow::bail!("cannot read {}: {e}", from.display()),
        };
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole == 0 {
            continue;
        }
        let to = out.replaced_jsonl();
        let w = match &mut writer {
            Some(w) => w,
            None => writer.insert(
                std::fs::File::create(&to)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", to.display()))?,
            ),
        };
        w.write_all(&bytes[..whole])
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", to.display()))?;
    }
    if let Some(w) = writer {
        w.sync_all()?;
    }
    Ok(())
}

/// Where a unit's kept line is, and what it sorts by (interned names).
struct Entry {
    /// Sort key: trace, variant position, eval, sample (ids into the interner), repeat.
    trace: u32,
    /// Position in the first run's variants; a variant it does not list sorts first.
    variant: Option<usize>,
    eval: u32,
    sample: u32,
    repeat: u32,
    input: usize,
    offset: u64,
    digest: [u8; 16],
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
    let variant_pos: HashMap<&str, usize> = first
        .info
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| (v.as_str(), i))
        .collect();
    let mut names = Interner::default();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut entries: Vec<Entry> = Vec::new();
    for (i, dir) in inputs.iter().enumerate() {
        let run_dir = RunDir::new(dir);
        let path = run_dir.samples_jsonl();
        if !path.exists() {
            continue; // a run killed before its first unit, or a shard with no units
        }
        let mut conflict: Option<String> = None;
        let torn = crate::record::journal::read_journal_each(&path, |text, at| {
            let mut s: Sample = serde_json::from_slice(text).map_err(|e| e.to_string())?;
            let version = s.schema_version;
            if conflict.is_some() || version > crate::record::SCHEMA_VERSION {
                return Ok(version);
            }
            let digest = digest_apart_from_latency(&mut s);
            match by_id.get(&s.unit_id) {
                Some(&k) if entries[k].digest != digest => {
                    conflict = Some(format!(
                        "unit {} ({} / {} / {} / {} / repeat {}) is recorded differently in {} and {}",
                        s.unit_id,
                        s.trace_id,
                        s.variant,
                        s.eval,
                        s.sample,
                        s.repeat,
                        inputs[entries[k].input].display(),
                        dir.display()
                    ));
                }
                Some(_) => {}
                None => {
                    by_id.insert(s.unit_id.clone(), entries.len());
                    entries.push(Entry {
                        trace: names.intern(&s.trace_id),
                        variant: variant_pos.get(s.variant.as_str()).copied(),
                        eval: names.intern(&s.eval),
                        sample: names.intern(&s.sample),
                        repeat: s.repeat,
                        input: i,
                        offset: at,
                        digest,
                    });
                }
            }
            Ok(version)
        })
        .map_err(|e| UsageError(e.to_string()))?;
        if let Some(c) = conflict {
            return Err(UsageError(c).into());
        }
        if let Some(t) = torn {
            let line = t.line;
            crate::output::errln!(
                "warning: {}:{line}: ignoring a torn last line (the run was killed mid-write)",
                path.display()
            );
        }
    }
    drop(by_id);
    entries.sort_by(|a, b| {
        let n = |id: u32| names.name(id);
        (n(a.trace), a.variant, n(a.eval), n(a.sample), a.repeat).cmp(&(
            n(b.trace),
            b.variant,
            n(b.eval),
            n(b.sample),
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
    let cannot_write = |e: crate::record::JournalError| {
        anyhow::anyhow!("cannot write {}: {e}", out_dir.samples_jsonl().display())
    };
    let mut journal = out_dir.create_journal().map_err(cannot_write)?;
    let mut files = Vec::new();
    for dir in inputs {
        let path = RunDir::new(dir).samples_jsonl();
        files.push(std::fs::File::open(&path).ok().map(|f| (f, path)));
    }
    let mut sum = TotalsSum::default();
    for e in &entries {
        let Some((file, path)) = files[e.input].as_mut() else {
            return Err(UsageError(format!(
                "{}: samples.jsonl disappeared during the merge",
                inputs[e.input].display()
            ))
            .into());
        };
        let s = read_line_at(file, path, e.offset).map_err(|e| UsageError(e.to_string()))?;
        sum.add(&s.row());
        journal.append(&s).map_err(cannot_write)?;
    }
    journal.sync().map_err(cannot_write)?;
    drop(entries);
    // The long summary texts the samples name live beside them in each input: carry them over,
    // so the merged run's report shows them as each input's would.
    let pack = out_dir.summary_pack();
    for dir in inputs {
        let from = RunDir::new(dir);
        pack.carry(dir, &from.summaries_pack()).map_err(|e| {
            anyhow::anyhow!(
                "cannot carry the summary texts of {} into {}: {e}",
                dir.display(),
                out_dir.summaries_pack().display()
            )
        })?;
    }
    // Failed attempts `--retry-failed` replaced in an input spent money too: carry them, so
    // the merged run's report notes them as each input's does.
    carry_replaced(inputs, &out_dir)?;

    let planned_total = first.units.planned_total;
    let recorded = sum.recorded;
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
        failed: sum.failed,
        not_run_budget: manifests.iter().map(|m| m.units.not_run_budget).sum(),
        not_run_interrupted: manifests.iter().map(|m| m.units.not_run_interrupted).sum(),
    };
    m.totals = sum.finish();
    let union = |files: fn(&RunManifest) -> &Vec<SkippedTrace>| {
        let mut all: Vec<SkippedTrace> = Vec::new();
        for f in manifests.iter().flat_map(files) {
            if !all.contains(f) {
                all.push(f.clone());
            }
        }
        all
    };
    m.skipped_traces = union(|mm| &mm.skipped_traces);
    m.ignored_files = union(|mm| &mm.ignored_files);
    // `import_warnings` stays the first run's: runs merge only when their traces (ids and
    // digests) are the same, and every shard planned them all.
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
