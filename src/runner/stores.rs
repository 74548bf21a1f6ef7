//! Offload stores after a run: each unit writes its store under `stores/<unit-id>/` (the needle
//! agent searches it), which adds up (37 MB for the quickstart's 280 units, by `du -sh`).
//! Once the reports are written, only the stores of the samples report.html shows in full and
//! of failed units are kept (`report::shown`), unless
//! `run --keep-stores`. `ctxbench clean --stores` applies the same rule to older runs.
//!
//! A needle unit holds its store in memory while it runs and hands it to the runner with its
//! output. As the unit ends, the runner writes it as one record to the run's `stores.pack`
//! (`engine::store::PackFile`) only if pruning may keep it ([`StorePolicy`]); a store it does
//! not write leaves a marker record (the unit's id, no files), so pruning can say when a store
//! it would keep was not written. Pruning unpacks the records of the stores it keeps into
//! their directories under `stores/` (the files an on-disk store would have written) and
//! removes the pack file, so a run creates no file per unit for its stores and writes only
//! those it may keep.

use crate::engine::store::{for_each_pack, unpack_bytes};
use crate::record::{RunDir, RunInfo, Sample};
use crate::report::html::Status;
use crate::report::shown::shown_in_full;
use crate::report::ReportModel;
use std::collections::HashSet;
use std::path::Path;

/// Which stores held in memory the runner writes to the run's pack file as each unit ends.
#[derive(Debug, Clone, Default)]
pub enum StorePolicy {
    /// Every one (`run --keep-stores`; resumed and sharded runs, whose final selection depends
    /// on samples this process does not see).
    #[default]
    All,
    /// Those [`prune`] may keep: a unit that errored, is flagged or failed its verdict; a unit
    /// of the pairing keys report.html shows (a function of the plan: computed from it before
    /// the run, see [`StorePolicy::for_plan`]); and a unit of the baseline variant (report.html
    /// also shows the baseline of a failed verdict, which is known only once that unit ends).
    Kept {
        shown: HashSet<String>,
        baseline: Option<String>,
    },
}

impl StorePolicy {
    /// The policy of a run that executes every unit of `plan` (one process, nothing recorded
    /// before): the units [`shown_in_full`] picks when every unit passes, i.e. those of the
    /// pairing keys the HTML report shows (which keys does not depend on the outcomes).
    pub fn for_plan(plan: &super::Plan) -> StorePolicy {
        let samples: Vec<Sample> = plan
            .units()
            .map(|u| {
                Sample::builder()
                    .unit_id(u.id)
                    .trace(&*u.trace_id)
                    .variant(&*u.variant)
                    .eval(&*u.eval)
                    .sample(&*u.sample)
                    .repeat(u.repeat)
                    .passed(true)
                    .build()
            })
            .collect();
        let mut info = RunInfo::new("plan");
        info.variants = plan.variants.iter().map(|v| v.name.clone()).collect();
        info.baseline = Some(plan.baseline.clone());
        let shown = shown_in_full(&ReportModel::build(&info, samples))
            .into_iter()
            .collect();
        StorePolicy::Kept {
            shown,
            baseline: (plan.variants.len() > 1).then(|| plan.baseline.clone()),
        }
    }

    /// [`StorePolicy::wants`] of the sample `out` will make for `unit`, from the few fields
    /// the decision reads (the unit's thread decides; the sample is made on the dispatcher's).
    pub fn wants_output(&self, unit: &super::Unit, out: &super::UnitOutput) -> bool {
        if matches!(self, StorePolicy::All) {
            return true;
        }
        let mut probe = Sample::builder()
            .unit_id(&unit.id)
            .variant(&*unit.variant)
            .build();
        probe.passed = out.passed;
        probe.error = out.error.clone();
        probe.scores = out.scores.clone();
        probe.compactions = out.compactions.clone();
        self.wants(&probe)
    }

    /// Whether the store of the unit that recorded `sample` is written.
    pub fn wants(&self, sample: &Sample) -> bool {
        match self {
            StorePolicy::All => true,
            StorePolicy::Kept { shown, baseline } => {
                Status::of(&sample.row()) <= Status::Fail
                    || shown.contains(&sample.unit_id)
                    || baseline.as_deref() == Some(sample.variant.as_str())
            }
        }
    }
}

/// What [`prune`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Stores left in place.
    pub kept: usize,
    /// Stores removed (including those of units that have no sample, e.g. interrupted ones).
    pub removed: usize,
    /// Bytes of the files removed.
    pub bytes: u64,
    /// Stores to keep that the run did not write (counted in `kept`): the selection changed
    /// after the unit ended, e.g. because units of an interrupted run have no sample.
    pub missing: usize,
}

/// Bytes of the regular files under `path` (symbolic links are not followed).
pub fn dir_bytes(path: &Path) -> u64 {
    walkdir::WalkDir::new(path)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Remove the stores of `dir` whose unit the report of `model` does not show in full (and
/// that did not fail); with `dry_run`, only count what would go. A missing `stores/` is
/// nothing to do.
pub fn prune(dir: &RunDir, model: &ReportModel, dry_run: bool) -> std::io::Result<Pruned> {
    let keep = shown_in_full(model);
    let stores = dir.stores_dir();
    let mut out = Pruned::default();
    let entries = match std::fs::read_dir(&stores) {
        Ok(e) => Some(e),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    for entry in entries.into_iter().flatten() {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path)?;
        if keep.contains(name.as_ref()) {
            out.kept += 1;
            continue;
        }
        out.removed += 1;
        if meta.is_dir() {
            out.bytes += dir_bytes(&path);
            if !dry_run {
                std::fs::remove_dir_all(&path)?;
            }
        } else {
            // A stray file or a link: removed itself, never followed.
            out.bytes += meta.len();
            if !dry_run {
                std::fs::remove_file(&path)?;
            }
        }
    }
    // The stores held in memory: the kept ones unpacked (a later record of a unit replaces an
    // earlier one: a resumed unit ran again), the pack file removed.
    let pack = dir.stores_pack();
    let mut unpacked = std::collections::BTreeSet::new();
    let mut unwritten = std::collections::BTreeSet::new();
    for_each_pack(&pack, |unit, read| {
        if read.is_empty() {
            // A store the run did not write.
            if keep.contains(unit) {
                unwritten.insert(unit.to_string());
            } else {
                out.removed += 1;
            }
        } else if keep.contains(unit) {
            if unpacked.insert(unit.to_string()) {
                out.kept += 1;
            }
            if !dry_run {
                unpack_into(&stores.join(unit), &read.read()?, &pack)?;
            }
        } else {
            out.removed += 1;
            out.bytes += read.len();
        }
        Ok(())
    })?;
    out.missing = unwritten.difference(&unpacked).count();
    out.kept += out.missing;
    if !dry_run {
        match std::fs::remove_file(&pack) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        if out.kept == 0 {
            let _ = std::fs::remove_dir(&stores);
        }
    }
    Ok(out)
}

/// Unpack one record of the pack file `pack` into the store directory `dir` (replacing it).
fn unpack_into(dir: &Path, bytes: &[u8], pack: &Path) -> std::io::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    unpack_bytes(bytes, &pack.display().to_string(), dir).map_err(std::io::Error::other)
}

/// Unpack every store of the run's pack file and remove it (`run --keep-stores`: every store is
/// kept as a directory). Returns how many records were unpacked.
pub fn unpack_all(dir: &RunDir) -> std::io::Result<usize> {
    let pack = dir.stores_pack();
    let stores = dir.stores_dir();
    let mut n = 0;
    for_each_pack(&pack, |unit, read| {
        if !read.is_empty() {
            unpack_into(&stores.join(unit), &read.read()?, &pack)?;
            n += 1;
        }
        Ok(())
    })?;
    match std::fs::remove_file(&pack) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_writes_problems_shown_keys_and_the_baseline() {
        let policy = StorePolicy::Kept {
            shown: ["shown".to_string()].into_iter().collect(),
            baseline: Some("base".into()),
        };
        let unit = |id: &str, variant: &str, passed: bool| {
            Sample::builder()
                .unit_id(id)
                .variant(variant)
                .passed(passed)
                .build()
        };
        assert!(policy.wants(&unit("shown", "b", true)));
        assert!(policy.wants(&unit("x", "base", true)), "baseline");
        assert!(policy.wants(&unit("x", "b", false)), "failed verdict");
        let mut flagged = unit("x", "b", true);
        flagged.compactions.insert("futile".into(), 1);
        assert!(policy.wants(&flagged));
        let mut errored = unit("x", "b", true);
        errored.error = Some(crate::record::UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        assert!(policy.wants(&errored));
        assert!(
            !policy.wants(&unit("x", "b", true)),
            "a passed unit not shown"
        );
        assert!(StorePolicy::All.wants(&unit("x", "b", true)));
        // The unit's thread decides from its output: the same as from the sample it makes.
        let plan_unit = |id: &str, variant: &str| crate::runner::Unit {
            id: id.into(),
            index: 0,
            trace_id: "t".into(),
            trace: 0,
            variant: variant.into(),
            variant_index: 0,
            eval: "needle".into(),
            sample: "s".into(),
            params: Default::default(),
            repeat: 0,
            seed: 0,
            pair_seed: 0,
            providers: Vec::new(),
        };
        let mut outs = Vec::new();
        for passed in [Some(true), Some(false), None] {
            for (score, futile) in [(0.0, 0), (1.0, 0), (0.0, 2)] {
                let mut out = crate::runner::UnitOutput {
                    passed,
                    ..Default::default()
                };
                out.scores.insert("summary_failures".into(), score);
                out.compactions.insert("futile".into(), futile);
                outs.push(out);
            }
        }
        outs.push(crate::runner::UnitOutput::failed("eval", "x"));
        let mut wanted = 0;
        for (id, variant) in [("shown", "b"), ("x", "base"), ("x", "b")] {
            let u = plan_unit(id, variant);
            for out in &outs {
                let w = policy.wants_output(&u, out);
                wanted += usize::from(w);
                assert_eq!(
                    w,
                    policy.wants(&out.clone().into_sample(&u, 0)),
                    "{id} {variant} {out:?}"
                );
            }
        }
        assert!(0 < wanted && wanted < 3 * outs.len());
    }

    #[test]
    fn keeps_the_shown_stores_and_removes_the_rest_without_following_links() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("precious"), "x").unwrap();
        let dir = RunDir::new(tmp.path().join("run"));
        let mut samples = Vec::new();
        for i in 0..30 {
            let id = format!("u{i}");
            std::fs::create_dir_all(dir.unit_store(&id).join("large_tool_results")).unwrap();
            std::fs::write(dir.unit_store(&id).join("large_tool_results/a"), "12345").unwrap();
            samples.push(
                Sample::builder()
                    .unit_id(&id)
                    .trace(format!("t{i:02}"))
                    .passed(true)
                    .build(),
            );
        }
        samples[29].error = Some(crate::record::UnitError {
            kind: "eval".into(),
            message: "x".into(),
        });
        // Units whose store was held in memory: one record each in the run's pack file.
        let packs = crate::engine::store::PackFile::new(dir.stores_pack());
        for i in 30..34 {
            let id = format!("u{i}");
            let mut files = std::collections::BTreeMap::new();
            files.insert("large_tool_results/a".to_string(), b"12345".to_vec());
            packs.append(&id, &files).unwrap();
            let mut s = Sample::builder()
                .unit_id(&id)
                .trace(format!("t{i:02}"))
                .passed(true)
                .build();
            if i == 33 {
                s.error = Some(crate::record::UnitError {
                    kind: "eval".into(),
                    message: "x".into(),
                });
            }
            samples.push(s);
        }
        // Stores the run did not write: a failed unit's (to keep: missing) and a passed one's.
        for (i, failed) in [(34, true), (35, false)] {
            let id = format!("u{i}");
            packs.skip(&id).unwrap();
            let mut s = Sample::builder()
                .unit_id(&id)
                .trace(format!("t{i:02}"))
                .passed(!failed)
                .build();
            if failed {
                s.error = Some(crate::record::UnitError {
                    kind: "eval".into(),
                    message: "x".into(),
                });
            }
            samples.push(s);
        }
        // A unit with no sample (interrupted) and a link out of the run.
        std::fs::create_dir_all(dir.unit_store("orphan")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.unit_store("link")).unwrap();
        let model = ReportModel::build(&RunInfo::new("r"), samples);
        let keep = shown_in_full(&model);

        let dry = prune(&dir, &model, true).unwrap();
        assert_eq!(dry.kept, keep.len());
        assert_eq!(dry.kept + dry.removed, 38);
        assert_eq!(dry.missing, 1, "u34 is kept but was not written");
        assert!(dir.unit_store("u28").exists(), "a dry run removes nothing");

        let done = prune(&dir, &model, false).unwrap();
        assert_eq!(done, dry);
        assert!(done.bytes >= 5, "removed files count: {}", done.bytes);
        assert!(
            dir.unit_store("u29").join("large_tool_results/a").exists(),
            "failed unit"
        );
        assert_eq!(
            std::fs::read(dir.unit_store("u33").join("large_tool_results/a")).unwrap(),
            b"12345",
            "a failed unit's pack is unpacked"
        );
        assert!(!dir.stores_pack().exists(), "the pack file is removed");
        for id in keep.iter().filter(|id| *id != "u34") {
            assert!(dir.unit_store(id).exists(), "{id}");
        }
        assert!(!dir.unit_store("u34").exists() && !dir.unit_store("u35").exists());
        for gone in ["orphan", "link"] {
            assert!(
                std::fs::symlink_metadata(dir.unit_store(gone)).is_err(),
                "{gone}"
            );
        }
        assert!(
            outside.join("precious").exists(),
            "links are never followed"
        );
    }
}
