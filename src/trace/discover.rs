//! Trace discovery: which files a list of paths, directories and globs selects. One set of rules
//! for `ctxbench run` (`traces.paths`) and `ctxbench import`.
//!
//! Rules, for each pattern (relative patterns are resolved against a base directory):
//! - A pattern that names an existing file is taken as that file, named explicitly.
//! - A pattern that names an existing directory is walked recursively in sorted order; hidden
//!   entries (`.git`, …) are skipped and only files with a trace extension
//!   ([`TRACE_EXTENSIONS`]) are kept, so `SOURCE.txt`, `*.md` and licences are never opened.
//! - Otherwise, a pattern holding `*`, `?`, `[` or `{` is a glob over whole paths (`*` stays in
//!   one directory, `**` descends), walked from its longest literal prefix; hidden entries are
//!   skipped, and any extension the glob names is accepted.
//! - Anything else matches nothing.
//!
//! Files found by walking a directory or by a glob are *walked*: one that parses as JSON but
//! matches no trace format (mini-swe-agent's `results_summary.json`) is ignored by the caller
//! instead of failing. A file named explicitly must be a trace.

use std::path::{Path, PathBuf};

/// Extensions kept when walking a directory.
pub const TRACE_EXTENSIONS: [&str; 5] = ["json", "jsonl", "ndjson", "traj", "eval"];

/// A file a pattern selects. Its identity (equality, order) is its path: the same file selected
/// twice is one file (a set keeps the first selection's `walked`), and a sorted set of
/// `TraceFile`s is in path order.
#[derive(Debug, Clone)]
pub struct TraceFile {
    /// Path relative to the base directory, `/`-separated (stable across machines).
    pub rel: String,
    pub path: PathBuf,
    /// Found by walking a directory or expanding a glob (a non-trace file is then ignored),
    /// rather than named explicitly (a non-trace file is then an error).
    pub walked: bool,
}

impl PartialEq for TraceFile {
    fn eq(&self, other: &Self) -> bool {
        (&self.rel, &self.path) == (&other.rel, &other.path)
    }
}

impl Eq for TraceFile {}

impl PartialOrd for TraceFile {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TraceFile {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.rel, &self.path).cmp(&(&other.rel, &other.path))
    }
}

/// A pattern that cannot be expanded.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("invalid glob: {0}")]
    Glob(#[from] globset::Error),
    #[error("cannot list {}: {source}", path.display())]
    Walk {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Files one pattern selects, in path order (see the module docs). An empty result means the
/// pattern matches nothing; callers decide whether that is an error.
pub fn discover(base: &Path, pattern: impl AsRef<Path>) -> Result<Vec<TraceFile>, DiscoverError> {
    let pattern = pattern.as_ref();
    let full = base.join(pattern);
    let mk = |path: PathBuf, walked: bool| TraceFile {
        rel: rel_of(base, &path),
        path,
        walked,
    };
    if full.is_file() {
        return Ok(vec![mk(full, false)]);
    }
    if full.is_dir() {
        let mut found = Vec::new();
        walk(&full, &mut found, &|p| has_trace_extension(p))?;
        return Ok(found.into_iter().map(|p| mk(p, true)).collect());
    }
    if !is_glob(&pattern.to_string_lossy()) {
        return Ok(Vec::new());
    }
    // Walk from the longest literal prefix; match whole paths.
    let mut root = PathBuf::new();
    for c in full.components() {
        if is_glob(&c.as_os_str().to_string_lossy()) {
            break;
        }
        root.push(c);
    }
    let matcher = globset::GlobBuilder::new(&full.to_string_lossy())
        .literal_separator(true)
        .build()?
        .compile_matcher();
    if !root.is_dir() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    walk(&root, &mut found, &|p| matcher.is_match(p))?;
    Ok(found.into_iter().map(|p| mk(p, true)).collect())
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

fn has_trace_extension(p: &Path) -> bool {
    p.extension()
        .and_then(|x| x.to_str())
        .is_some_and(|x| TRACE_EXTENSIONS.contains(&x.to_ascii_lowercase().as_str()))
}

/// `p` relative to `base`, `/`-separated.
fn rel_of(base: &Path, p: &Path) -> String {
    let rel = p.strip_prefix(base).unwrap_or(p);
    if rel.has_root() {
        // Not under `base`: the path itself (its root joined with `/` read `//work/…`).
        return rel.to_string_lossy().into_owned();
    }
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Files under `dir` that `keep` accepts, recursively, sorted by path, hidden entries skipped.
fn walk(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    keep: &dyn Fn(&Path) -> bool,
) -> Result<(), DiscoverError> {
    let err = |source| DiscoverError::Walk {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(err)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(err)?;
    entries.sort();
    for e in entries {
        let hidden = e
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        if e.is_dir() {
            walk(&e, out, keep)?;
        } else if keep(&e) {
            out.push(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rels(base: &Path, pattern: &str) -> Vec<(String, bool)> {
        discover(base, pattern)
            .unwrap()
            .into_iter()
            .map(|f| (f.rel, f.walked))
            .collect()
    }

    #[test]
    fn a_path_outside_the_base_is_itself_not_rooted_twice() {
        let base = Path::new("/w/suite");
        assert_eq!(
            rel_of(base, Path::new("/w/suite/data/a.json")),
            "data/a.json"
        );
        assert_eq!(
            rel_of(base, Path::new("/elsewhere/a.json")),
            "/elsewhere/a.json"
        );
    }

    #[test]
    fn files_directories_and_globs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("data/a/deep")).unwrap();
        std::fs::create_dir_all(d.join("data/a/.git")).unwrap();
        for f in [
            "data/a/x.json",
            "data/a/deep/y.traj",
            "data/a/SOURCE.txt",
            "data/a/notes.md",
            "data/a/.git/z.json",
            "data/z.jsonl",
            "data/z.md",
        ] {
            std::fs::write(d.join(f), "{}").unwrap();
        }
        let w = |s: &str| (s.to_string(), true);
        assert_eq!(
            rels(d, "data/a"),
            [w("data/a/deep/y.traj"), w("data/a/x.json")]
        );
        assert_eq!(rels(d, "data/*"), [w("data/z.jsonl"), w("data/z.md")]);
        assert_eq!(rels(d, "data/**/*.json"), [w("data/a/x.json")]);
        // Named explicitly: taken whatever its extension.
        assert_eq!(
            rels(d, "data/a/notes.md"),
            [("data/a/notes.md".into(), false)]
        );
        assert!(rels(d, "data/missing.json").is_empty());
        assert!(rels(d, "nowhere/*.json").is_empty());
        assert!(matches!(
            discover(d, "data/[.json"),
            Err(DiscoverError::Glob(_))
        ));
    }

    #[test]
    fn an_existing_path_with_glob_characters_is_literal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a[1].json"), "{}").unwrap();
        assert_eq!(rels(dir.path(), "a[1].json"), [("a[1].json".into(), false)]);
    }
}
