//! The one place that decides how things are shown to a person: tables, progress, colour.

use std::io::IsTerminal;

/// True when stdout is an interactive terminal (progress bars and colour only then).
pub fn stdout_is_tty() -> bool {
    std::io::stdout().is_terminal()
}

/// True when stderr is an interactive terminal (where the progress bar is drawn).
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// Environment variable setting the seconds between progress lines when stderr is not a
/// terminal (CI logs); a decimal number, `0` prints a line after every unit.
pub const PROGRESS_SECS_ENV: &str = "CTXBENCH_PROGRESS_SECS";

/// Seconds between progress lines when nothing overrides them.
pub const DEFAULT_PROGRESS_SECS: f64 = 10.0;

/// How a long-running command shows its progress on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ProgressMode {
    /// Nothing (`--quiet`, or tests).
    #[default]
    Hidden,
    /// A redrawn bar (stderr is a terminal).
    Bar,
    /// A plain line at most every `every` (stderr is a file or a pipe, e.g. a CI log).
    Lines { every: std::time::Duration },
}

/// The progress mode for this process: hidden with `quiet`, a bar when stderr is a terminal,
/// otherwise lines every [`PROGRESS_SECS_ENV`] seconds (default [`DEFAULT_PROGRESS_SECS`]).
/// A value that is not a non-negative number is an error naming the variable.
pub fn progress_mode(quiet: bool) -> Result<ProgressMode, String> {
    let env = std::env::var(PROGRESS_SECS_ENV).ok();
    progress_mode_from(quiet, stderr_is_tty(), env.as_deref())
}

/// [`progress_mode`] from its inputs (pure, for tests).
pub fn progress_mode_from(
    quiet: bool,
    stderr_tty: bool,
    secs: Option<&str>,
) -> Result<ProgressMode, String> {
    if quiet {
        return Ok(ProgressMode::Hidden);
    }
    if stderr_tty {
        return Ok(ProgressMode::Bar);
    }
    let secs = match secs.map(str::trim).filter(|s| !s.is_empty()) {
        None => DEFAULT_PROGRESS_SECS,
        Some(s) => s
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e9)
            .ok_or_else(|| {
                format!("{PROGRESS_SECS_ENV}={s}: expected seconds between progress lines (a number >= 0)")
            })?,
    };
    Ok(ProgressMode::Lines {
        every: std::time::Duration::from_secs_f64(secs),
    })
}

/// `42s`, `3m05s`, `2h07m`: a duration for a person (whole seconds).
pub fn human_duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
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
    fn progress_mode_follows_quiet_tty_and_the_interval_variable() {
        use super::{progress_mode_from as m, ProgressMode};
        use std::time::Duration;
        assert_eq!(m(true, false, Some("1")), Ok(ProgressMode::Hidden));
        assert_eq!(m(true, true, None), Ok(ProgressMode::Hidden));
        assert_eq!(m(false, true, Some("1")), Ok(ProgressMode::Bar));
        assert_eq!(
            m(false, false, None),
            Ok(ProgressMode::Lines {
                every: Duration::from_secs(10)
            })
        );
        assert_eq!(
            m(false, false, Some("0.5")),
            Ok(ProgressMode::Lines {
                every: Duration::from_millis(500)
            })
        );
        let e = m(false, false, Some("-1")).unwrap_err();
        assert!(e.contains("CTXBENCH_PROGRESS_SECS=-1"), "{e}");
        assert!(m(false, false, Some("soon")).is_err());
    }

    #[test]
    fn durations_for_people() {
        use super::human_duration as h;
        use std::time::Duration;
        assert_eq!(h(Duration::from_millis(42_900)), "42s");
        assert_eq!(h(Duration::from_secs(185)), "3m05s");
        assert_eq!(h(Duration::from_secs(7620)), "2h07m");
    }

    #[test]
    fn table_aligns_columns() {
        let t = super::table(&["a", "bbb"], &[vec!["xx".into(), "y".into()]]);
        assert_eq!(t, "a   bbb\nxx  y\n");
    }
}
