//! Virtual paths: mapping a model's path to a real one inside the store (refusing escapes and
//! symlinks) and back, and the sorted directory walks the tools list from.

use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use super::Sandbox;

impl Sandbox {
    /// Map a virtual path to a real path inside the store, refusing escapes and symlinks.
    ///
    /// The path is taken exactly as given: a file whose name starts or ends with whitespace
    /// (the store names an offloaded result after its tool call id, and a trace's ids are
    /// arbitrary) is read by the path `ls`, `glob` and `grep` print for it, as deepagents'
    /// own tools take it. Only a path that names nothing is tried again with the whitespace
    /// around it removed (a model that sends `" /large_tool_results/x "`): that turns a miss
    /// into a hit and never makes a path that names a file name another one.
    pub(super) fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        match self.resolve_as(path, path) {
            Err(Miss::NotFound(e)) => {
                let trimmed = path.trim();
                if trimmed == path {
                    return Err(e);
                }
                self.resolve_as(trimmed, path).map_err(Miss::text)
            }
            other => other.map_err(Miss::text),
        }
    }

    /// [`resolve`](Self::resolve) of `raw` exactly; errors name `shown` (the path the model
    /// sent).
    fn resolve_as(&self, raw: &str, shown: &str) -> Result<PathBuf, Miss> {
        let path = shown;
        // A real absolute path into the store is accepted as the same file.
        let stripped = Path::new(raw)
            .strip_prefix(&self.root)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| PathBuf::from(raw));
        let mut real = self.root.clone();
        for comp in stripped.components() {
            match comp {
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => {
                    return Err(Miss::Refused(format!(
                        "path '{path}' is refused: '..' is not allowed (the store root is '/')"
                    )))
                }
                Component::Normal(part) => {
                    real.push(part);
                    if let Some(files) = &self.files {
                        let rel = self.relative(&real);
                        if !files.contains_key(&rel) && !mem_is_dir(files, &rel) {
                            return Err(Miss::NotFound(format!(
                                "no such file or directory: {path}"
                            )));
                        }
                        continue;
                    }
                    match std::fs::symlink_metadata(&real) {
                        Ok(m) if m.file_type().is_symlink() => {
                            return Err(Miss::Refused(format!(
                                "path '{path}' is refused: symlinks are not followed"
                            )))
                        }
                        Ok(_) => {}
                        Err(_) => {
                            return Err(Miss::NotFound(format!(
                                "no such file or directory: {path}"
                            )))
                        }
                    }
                }
            }
        }
        Ok(real)
    }

    pub(super) fn relative(&self, real: &Path) -> String {
        real.strip_prefix(&self.root)
            .unwrap_or(real)
            .to_string_lossy()
            .replace('\\', "/")
    }

    pub(super) fn virtual_path(&self, rel: &str) -> String {
        format!("/{}", rel.trim_start_matches('/'))
    }

    /// Direct children of `dir` as (relative path, is_dir), sorted; symlinks, FIFOs, sockets
    /// and devices skipped.
    pub(super) fn read_dir_sorted(&self, dir: &Path) -> Result<Vec<(String, bool)>, String> {
        if let Some(files) = &self.files {
            return Ok(mem_children(files, &self.relative(dir)));
        }
        let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot list: {e}"))?;
        let mut out = Vec::new();
        for entry in rd.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            if !(ft.is_dir() || ft.is_file()) {
                continue;
            }
            out.push((self.relative(&entry.path()), ft.is_dir()));
        }
        out.sort();
        Ok(out)
    }

    /// Every regular file under `dir`, relative to the root, sorted; symlinks are skipped.
    pub(super) fn walk_files(&self, dir: &Path, deadline: Instant) -> Result<Vec<String>, String> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            self.check_deadline(deadline)?;
            for (rel, is_dir) in self.read_dir_sorted(&d)? {
                if is_dir {
                    stack.push(self.root.join(&rel));
                } else {
                    files.push(rel);
                }
            }
        }
        files.sort();
        Ok(files)
    }

    /// `real` (a path [`resolve`](Self::resolve) returned) is a directory of the store.
    pub(super) fn is_dir(&self, real: &Path) -> bool {
        match &self.files {
            Some(files) => mem_is_dir(files, &self.relative(real)),
            None => std::fs::symlink_metadata(real).is_ok_and(|m| m.is_dir()),
        }
    }

    /// The bytes of the store file `rel` when the store is in memory.
    pub(super) fn mem_file(&self, rel: &str) -> Option<Result<&[u8], String>> {
        let files = self.files.as_ref()?;
        Some(
            files
                .get(rel)
                .map(|b| &**b)
                .ok_or_else(|| format!("not a regular file: /{rel}")),
        )
    }
}

/// Why a path resolved to nothing: it names no file (another spelling may), or it is refused.
enum Miss {
    NotFound(String),
    Refused(String),
}

impl Miss {
    fn text(self) -> String {
        match self {
            Miss::NotFound(e) | Miss::Refused(e) => e,
        }
    }
}

/// `rel` is the root (`""`) or a directory of the in-memory store: some file lies under it.
fn mem_is_dir(files: &super::MemFiles, rel: &str) -> bool {
    if rel.is_empty() {
        return true;
    }
    let prefix = format!("{rel}/");
    files
        .range(prefix.clone()..)
        .next()
        .is_some_and(|(k, _)| k.starts_with(&prefix))
}

/// Direct children of directory `rel` of the in-memory store as (relative path, is_dir), sorted.
fn mem_children(files: &super::MemFiles, rel: &str) -> Vec<(String, bool)> {
    let prefix = if rel.is_empty() {
        String::new()
    } else {
        format!("{rel}/")
    };
    let mut out: Vec<(String, bool)> = Vec::new();
    for (k, _) in files.range(prefix.clone()..) {
        let Some(rest) = k.strip_prefix(&prefix) else {
            break;
        };
        let (name, is_dir) = match rest.split_once('/') {
            Some((dir, _)) => (dir, true),
            None => (rest, false),
        };
        let child = format!("{prefix}{name}");
        if out
            .last()
            .is_none_or(|(last, d)| (last, *d) != (&child, is_dir))
        {
            out.push((child, is_dir));
        }
    }
    out.sort();
    out.dedup();
    out
}
