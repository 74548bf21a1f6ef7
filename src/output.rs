//! The one place that decides how things are shown to a person: tables, progress, colour.

use std::io::IsTerminal;

/// True when stdout is an interactive terminal (progress bars and colour only then).
pub fn stdout_is_tty() -> bool {
    std::io::stdout().is_terminal()
}

/// Render rows as a left-aligned text table with a header line. Pure: returns the text.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: &mut dyn Iterator<Item = &str>, out: &mut String| {
        let mut first = true;
        for (i, c) in cells.enumerate() {
            if !first {
                out.push_str("  ");
            }
            first = false;
            out.push_str(c);
            let pad = widths[i].saturating_sub(c.chars().count());
            if i + 1 < widths.len() {
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        while out.ends_with(' ') {
            out.pop();
        }
        out.push('\n');
    };
    line(&mut header.iter().copied(), &mut out);
    for row in rows {
        line(&mut row.iter().map(|s| s.as_str()), &mut out);
    }
    out
}

/// `path` lexically normalized (`a/./b/../c` → `a/c`; no file-system access, symlinks are not
/// resolved) and, when it lies under the current directory, relative to it: what a person
/// should see (`reports/quickstart-…`, never `evals/../reports/…` or a long absolute path).
pub fn display_path(path: &std::path::Path) -> String {
    let cwd = std::env::current_dir().ok();
    display_path_from(path, cwd.as_deref())
}

/// [`display_path`] relative to `cwd` (pure, for tests).
pub fn display_path_from(path: &std::path::Path, cwd: Option<&std::path::Path>) -> String {
    use std::path::{Component, PathBuf};
    fn normalize(p: &std::path::Path) -> PathBuf {
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    let last = out.components().next_back();
                    match last {
                        Some(Component::Normal(_)) => {
                            out.pop();
                        }
                        Some(Component::RootDir) => {}
                        _ => out.push(".."),
                    }
                }
                other => out.push(other.as_os_str()),
            }
        }
        out
    }
    let norm = normalize(path);
    if let Some(cwd) = cwd {
        let cwd = normalize(cwd);
        let abs = if norm.is_absolute() {
            norm.clone()
        } else {
            normalize(&cwd.join(&norm))
        };
        if let Ok(rel) = abs.strip_prefix(&cwd) {
            if rel.as_os_str().is_empty() {
                return ".".to_string();
            }
            return rel.display().to_string();
        }
    }
    if norm.as_os_str().is_empty() {
        return ".".to_string();
    }
    norm.display().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn display_paths_are_normalized_and_relative() {
        use super::display_path_from as d;
        use std::path::Path;
        let cwd = Some(Path::new("/w/repo"));
        assert_eq!(d(Path::new("evals/../reports/q-1"), cwd), "reports/q-1");
        assert_eq!(d(Path::new("/w/repo/reports/./q-1"), cwd), "reports/q-1");
        assert_eq!(d(Path::new("/tmp/x/../y"), cwd), "/tmp/y");
        assert_eq!(d(Path::new("../other/a"), cwd), "../other/a");
        assert_eq!(d(Path::new("../other/a"), None), "../other/a");
        assert_eq!(d(Path::new("/w/repo"), cwd), ".");
    }

    #[test]
    fn table_aligns_columns() {
        let t = super::table(&["a", "bbb"], &[vec!["xx".into(), "y".into()]]);
        assert_eq!(t, "a   bbb\nxx  y\n");
    }
}
