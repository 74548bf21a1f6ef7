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
//! Walking a directory (or a glob's prefix) follows no symbolic link, as ripgrep and fd do: a
//! link to a directory is not entered (so a link loop cannot repeat files) and a link to a file
//! is not read; a pattern that names a link itself is followed. Nor is anything that is not a
//! regular file opened (a named pipe would block the reader, a device never end). Such an entry
//! is returned as [`Passed`], with the reason, for the caller to warn of ("ignored").
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

/// An entry a pattern reached but that is not read: a symbolic link met while walking, or a
/// path that is not a regular file (a named pipe, a socket, a device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    /// Path relative to the base directory, `/`-separated, as [`TraceFile::rel`].
    pub rel: String,
    pub path: PathBuf,
    /// Why it is not read, and how to have it read when that makes sense.
    pub why: String,
}

/// What one pattern selects: the files to read, in path order, and the entries passed over.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    pub files: Vec<TraceFile>,
    pub passed: Vec<Passed>,
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

/// Files one pattern selects, in path order, and the entries it passed over (see the module
/// docs). No files means the pattern matches nothing; callers decide whether that is an error.
pub fn discover(base: &Path, pattern: impl AsRef<Path>) -> Result<Discovered, DiscoverError> {
    let pattern = pattern.as_ref();
    let full = base.join(pattern);
    let mk = |path: PathBuf, walked: bool| TraceFile {
        rel: rel_of(base, &path),
        path,
        walked,
    };
    let mut found = Found::default();
    // Named itself (a link named is followed).
    match std::fs::metadata(&full) {
        Ok(m) if m.is_file() => {
            return Ok(Discovered {
                files: vec![mk(full, false)],
                passed: Vec::new(),
            })
        }
        Ok(m) if m.is_dir() => walk(&full, &mut found, &|p| has_trace_extension(p))?,
        Ok(m) => found.passed.push((full, not_regular(&m.file_type()))),
        Err(_) if is_glob(&pattern.to_string_lossy()) => {
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
            if root.is_dir() {
                walk(&root, &mut found, &|p| matcher.is_match(p))?;
            }
        }
        Err(_) => {}
    }
    Ok(Discovered {
        files: found.files.into_iter().map(|p| mk(p, true)).collect(),
        passed: found
            .passed
            .into_iter()
            .map(|(path, why)| Passed {
                rel: rel_of(base, &path),
                path,
                why,
            })
            .collect(),
    })
}

/// What a walk finds: files to read, and entries passed over with the reason.
#[derive(Default)]
struct Found {
    files: Vec<PathBuf>,
    passed: Vec<(PathBuf, String)>,
}

/// Why an entry that is neither a regular file nor a directory (nor a link) is not opened.
fn not_regular(t: &std::fs::FileType) -> String {
    #[cfg(unix)]
    let kind = {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            "a named pipe"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else {
            "of an unknown kind"
        }
    };
    #[cfg(not(unix))]
    let kind = {
        let _ = t;
        "of an unknown kind"
    };
    format!("not a regular file ({kind}); not opened")
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
/// No symbolic link is followed and only regular files are kept; a link to a directory, and a
/// link or other non-regular entry `keep` accepts, is passed over with the reason.
fn walk(dir: &Path, out: &mut Found, keep: &dyn Fn(&Path) -> bool) -> Result<(), DiscoverError> {
    let err = |source| DiscoverError::Walk {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<(PathBuf, std::fs::FileType)> = std::fs::read_dir(dir)
        .map_err(err)?
        .map(|e| e.and_then(|e| Ok((e.path(), e.file_type()?))))
        .collect::<Result<_, _>>()
        .map_err(err)?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (e, t) in entries {
        let hidden = e
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        if t.is_dir() {
            walk(&e, out, keep)?;
        } else if t.is_symlink() {
            let to_dir = std::fs::metadata(&e).is_ok_and(|m| m.is_dir());
            if to_dir || keep(&e) {
                let what = if to_dir { "directory" } else { "file" };
                out.passed.push((
                    e,
                    format!(
                        "a symbolic link to a {what}: not followed inside a directory; name it \
                         (or its target) to read it"
                    ),
                ));
            }
        } else if keep(&e) {
            if t.is_file() {
                out.files.push(e);
            } else {
                out.passed.push((e, not_regular(&t)));
            }
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
            .files
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

    #[cfg(unix)]
    #[test]
    fn walks_follow_no_link_and_keep_only_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("data/sub")).unwrap();
        std::fs::write(d.join("data/a.json"), "{}").unwrap();
        std::fs::write(d.join("data/sub/b.json"), "{}").unwrap();
        std::os::unix::fs::symlink(".", d.join("data/loop")).unwrap();
        std::os::unix::fs::symlink("a.json", d.join("data/c.json")).unwrap();
        std::os::unix::fs::symlink("a.json", d.join("data/notes")).unwrap();
        let w = |s: &str| (s.to_string(), true);
        let want = [w("data/a.json"), w("data/sub/b.json")];
        assert_eq!(rels(d, "data"), want);
        assert_eq!(rels(d, "data/**/*.json"), want);
        let passed = |pattern: &str| -> Vec<String> {
            discover(d, pattern)
                .unwrap()
                .passed
                .into_iter()
                .map(|p| format!("{}: {}", p.rel, p.why))
                .collect()
        };
        let p = passed("data");
        assert_eq!(p.len(), 2, "the link `notes` has no trace extension: {p:?}");
        assert!(
            p[0].starts_with("data/c.json: a symbolic link to a file"),
            "{p:?}"
        );
        assert!(
            p[1].starts_with("data/loop: a symbolic link to a directory"),
            "{p:?}"
        );
        // Named itself, a link is followed (once: the loop inside it is not).
        assert_eq!(
            rels(d, "data/loop"),
            [w("data/loop/a.json"), w("data/loop/sub/b.json")]
        );
        assert_eq!(rels(d, "data/c.json"), [("data/c.json".into(), false)]);
        // A named pipe is never opened, walked or named.
        let fifo = d.join("data/sub/p.jsonl");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        assert_eq!(rels(d, "data/sub"), [w("data/sub/b.json")]);
        assert_eq!(
            passed("data/sub"),
            ["data/sub/p.jsonl: not a regular file (a named pipe); not opened"]
        );
        assert!(rels(d, "data/sub/p.jsonl").is_empty());
        assert_eq!(passed("data/sub/p.jsonl").len(), 1);
    }

    #[test]
    fn an_existing_path_with_glob_characters_is_literal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a[1].json"), "{}").unwrap();
        assert_eq!(rels(dir.path(), "a[1].json"), [("a[1].json".into(), false)]);
    }
}
