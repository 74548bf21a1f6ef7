//! Offload stores after a run: each unit writes its store under `stores/<unit-id>/` (the needle
//! agent searches it), which adds up (37 MB for the quickstart's 280 units, by `du -sh`).
//! Once the reports are written, only the stores of the samples report.html shows in full and
//! of failed units are kept (`report::shown`), unless
//! `run --keep-stores`. `ctxbench clean --stores` applies the same rule to older runs.
//!
//! A needle unit holds its store in memory while it runs and writes it as one pack file,
//! `stores/<unit-id>.pack` (`engine::store::pack_path`): pruning unpacks the packs of the
//! stores it keeps into their directories (the files an on-disk store would have written) and
//! removes the others, so a run writes one file per unit instead of a directory tree.

use crate::engine::store::{pack_path, unpack};
use crate::record::RunDir;
use crate::report::shown::shown_in_full;
use crate::report::ReportModel;
use std::path::Path;

/// What [`prune`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Stores left in place.
    pub kept: usize,
    /// Stores removed (including those of units that have no sample, e.g. interrupted ones).
    pub removed: usize,
    /// Bytes of the files removed.
    pub bytes: u64,
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
    let entries = match std::fs::read_dir(&stores) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pruned::default()),
        Err(e) => return Err(e),
    };
    let mut out = Pruned::default();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path)?;
        if let Some(unit) = name.strip_suffix(".pack").filter(|_| meta.is_file()) {
            if keep.contains(unit) {
                out.kept += 1;
                if !dry_run {
                    unpack_one(&stores.join(unit))?;
                }
            } else {
                out.removed += 1;
                out.bytes += meta.len();
                if !dry_run {
                    std::fs::remove_file(&path)?;
                }
            }
            continue;
        }
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
    if !dry_run && out.kept == 0 {
        let _ = std::fs::remove_dir(&stores);
    }
    Ok(out)
}

/// Unpack the pack of the store directory `dir` into it and remove the pack.
fn unpack_one(dir: &Path) -> std::io::Result<()> {
    let pack = pack_path(dir);
    unpack(&pack, dir).map_err(std::io::Error::other)?;
    std::fs::remove_file(&pack)
}

/// Unpack every store pack of `dir` (`run --keep-stores`: every store is kept as a directory).
pub fn unpack_all(dir: &RunDir) -> std::io::Result<usize> {
    let stores = dir.stores_dir();
    let entries = match std::fs::read_dir(&stores) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut n = 0;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(unit) = name
            .to_string_lossy()
            .strip_suffix(".pack")
            .map(str::to_string)
        else {
            continue;
        };
        if std::fs::symlink_metadata(entry.path())?.is_file() {
            unpack_one(&stores.join(unit))?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RunInfo, Sample};

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
        // Units whose store was held in memory: one pack each.
        for i in 30..34 {
            let id = format!("u{i}");
            let mut files = std::collections::BTreeMap::new();
            files.insert("large_tool_results/a".to_string(), b"12345".to_vec());
            crate::engine::store::write_pack(&pack_path(&dir.unit_store(&id)), &files).unwrap();
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
        // A unit with no sample (interrupted) and a link out of the run.
        std::fs::create_dir_all(dir.unit_store("orphan")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.unit_store("link")).unwrap();
        let model = ReportModel::build(&RunInfo::new("r"), samples);
        let keep = shown_in_full(&model);

        let dry = prune(&dir, &model, true).unwrap();
        assert_eq!(dry.kept, keep.len());
        assert_eq!(dry.kept + dry.removed, 36);
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
        for i in 30..34 {
            assert!(!pack_path(&dir.unit_store(&format!("u{i}"))).exists());
        }
        for id in &keep {
            assert!(dir.unit_store(id).exists(), "{id}");
        }
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
