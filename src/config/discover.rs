//! Trace discovery for a suite: `traces.paths` (files, directories, globs relative to the
//! suite file) expanded into a sorted list of trace files.

use super::suite::TraceFile;
use super::{ConfigError, LoadedSuite};
use std::path::{Path, PathBuf};

impl LoadedSuite {
    /// Expand `traces.paths` into files, sorted and de-duplicated. A pattern that matches
    /// nothing is an error at its line. Directories are walked recursively; `*.md` and `*.txt`
    /// files found in directories are skipped (dataset notes, not traces).
    pub fn trace_files(&self) -> Result<Vec<TraceFile>, ConfigError> {
        let mut out = std::collections::BTreeSet::new();
        let mut errs = Vec::new();
        for (i, pattern) in self.suite.traces.paths.iter().enumerate() {
            let at = ["traces", "paths", &i.to_string()];
            match expand_pattern(&self.dir, pattern) {
                Ok(files) if files.is_empty() => errs.push(self.error_at(
                    &at,
                    format!(
                        "`{pattern}` matches no file (relative to {})",
                        self.dir.display()
                    ),
                )),
                Ok(files) => out.extend(files),
                Err(e) => errs.push(self.error_at(&at, format!("`{pattern}`: {e}"))),
            }
        }
        match ConfigError::combine(errs) {
            Some(e) => Err(e),
            None => Ok(out.into_iter().collect()),
        }
    }
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

fn rel_of(dir: &Path, p: &Path) -> String {
    let rel = p.strip_prefix(dir).unwrap_or(p);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn walk_files(root: &Path, skip_notes: bool) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.map_err(|e| e.to_string())?;
        if !entry.file_type().is_file() {
            continue;
        }
        let p = entry.path();
        let is_note = matches!(p.extension().and_then(|e| e.to_str()), Some("md" | "txt"));
        if skip_notes && is_note {
            continue;
        }
        out.push(p.to_path_buf());
    }
    Ok(out)
}

fn expand_pattern(dir: &Path, pattern: &str) -> Result<Vec<TraceFile>, String> {
    let full = if Path::new(pattern).is_absolute() {
        PathBuf::from(pattern)
    } else {
        dir.join(pattern)
    };
    let mk = |p: PathBuf| TraceFile {
        rel: rel_of(dir, &p),
        path: p,
    };
    if !is_glob(pattern) {
        if full.is_dir() {
            return Ok(walk_files(&full, true)?.into_iter().map(mk).collect());
        }
        if full.is_file() {
            return Ok(vec![mk(full)]);
        }
        return Ok(Vec::new());
    }
    // Walk from the longest literal prefix; match whole paths.
    let mut base = PathBuf::new();
    for c in full.components() {
        if is_glob(&c.as_os_str().to_string_lossy()) {
            break;
        }
        base.push(c);
    }
    let matcher = globset::GlobBuilder::new(&full.to_string_lossy())
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob: {e}"))?
        .compile_matcher();
    if !base.is_dir() {
        return Ok(Vec::new());
    }
    Ok(walk_files(&base, false)?
        .into_iter()
        .filter(|p| matcher.is_match(p))
        .map(mk)
        .collect())
}
