//! Virtual paths: mapping a model's path to a real one inside the store (refusing escapes and
//! symlinks) and back, and the sorted directory walks the tools list from.

use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use super::Sandbox;

impl Sandbox {
    /// Map a virtual path to a real path inside the store, refusing escapes and symlinks.
    pub(super) fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let raw = path.trim();
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
                    return Err(format!(
                        "path '{path}' is refused: '..' is not allowed (the store root is '/')"
                    ))
                }
                Component::Normal(part) => {
                    real.push(part);
                    match std::fs::symlink_metadata(&real) {
                        Ok(m) if m.file_type().is_symlink() => {
                            return Err(format!(
                                "path '{path}' is refused: symlinks are not followed"
                            ))
                        }
                        Ok(_) => {}
                        Err(_) => return Err(format!("no such file or directory: {path}")),
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
}
