//! The tools themselves: `ls`, `glob`, `grep` and `read_file` over the store, each returning
//! the sorted, capped text the model sees.

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{sinks::UTF8, BinaryDetection, SearcherBuilder};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use super::{Sandbox, ToolOutput};
use crate::evals::safe_fs;

/// Compiled grep patterns kept at most (cleared when full).
const MATCHERS_KEPT: usize = 1024;

/// The matcher of a grep pattern. Compiling one (a DFA, case folds included) costs more than
/// searching a store of a few hundred kilobytes, and agents grep the same patterns over and
/// over (a needle sweep's offline agent asks about the same key phrases), so compiled matchers
/// are kept, keyed by pattern and case flag, and shared rather than cloned (a clone starts with
/// an empty cache: its lazy DFA would be built again at every search).
fn matcher(pattern: &str, ignore_case: bool) -> Result<Arc<RegexMatcher>, String> {
    type Kept = std::collections::HashMap<(String, bool), Arc<RegexMatcher>>;
    static KEPT: std::sync::OnceLock<std::sync::Mutex<Kept>> = std::sync::OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    let key = (pattern.to_string(), ignore_case);
    if let Some(m) = kept.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(m.clone());
    }
    let m = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .build(pattern)
        .map(Arc::new)
        .map_err(|e| format!("invalid regex '{pattern}': {e}"))?;
    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= MATCHERS_KEPT {
        kept.clear();
    }
    kept.insert(key, m.clone());
    Ok(m)
}

/// What `grep` searches: a file of the in-memory store, or one on disk.
enum Source<'a> {
    Memory(&'a [u8]),
    File(std::fs::File),
}

/// Searchers kept for reuse at most (one per grep running at once).
const SEARCHERS_KEPT: usize = 8;

/// Search the first `max_bytes` of `source` (line numbers on, binary data ends a file's search
/// at its first NUL byte). Building a searcher allocates and zeroes its 64 KiB line buffer, so
/// searchers are kept for the next search: a few, shared by all threads (kept per thread, every
/// blocking-pool thread that ever ran a grep would hold one). A file of the in-memory store is
/// searched in place (read through the line buffer it was copied there first) unless it holds
/// a NUL byte: where a search stops on binary data depends on how the bytes were read, so such
/// a file is read as a file on disk would be.
fn search<S: grep_searcher::Sink>(
    matcher: &RegexMatcher,
    source: Source<'_>,
    max_bytes: u64,
    sink: S,
) -> Result<(), S::Error> {
    static KEPT: std::sync::Mutex<Vec<grep_searcher::Searcher>> = std::sync::Mutex::new(Vec::new());
    let kept = KEPT.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let mut searcher = kept.unwrap_or_else(|| {
        SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build()
    });
    let result = match source {
        Source::Memory(bytes) => {
            let cut = usize::try_from(max_bytes).map_or(bytes.len(), |m| m.min(bytes.len()));
            let bytes = &bytes[..cut];
            if memchr::memchr(0, bytes).is_none() {
                searcher.search_slice(matcher, bytes, sink)
            } else {
                searcher.search_reader(matcher, bytes, sink)
            }
        }
        Source::File(f) => searcher.search_reader(matcher, std::io::Read::take(f, max_bytes), sink),
    };
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() < SEARCHERS_KEPT {
        kept.push(searcher);
    }
    result
}

impl Sandbox {
    /// List a directory: one entry per line, directories with a trailing `/`.
    pub fn ls(&self, path: &str) -> Result<ToolOutput, String> {
        let dir = self.resolve(path)?;
        if !self.is_dir(&dir) {
            return Err(format!("not a directory: {path}"));
        }
        let mut lines = Vec::new();
        for (rel, is_dir) in self.read_dir_sorted(&dir)? {
            let v = self.virtual_path(&rel);
            lines.push(if is_dir { format!("{v}/") } else { v });
        }
        Ok(ToolOutput::ok(
            self.entries_text(lines, "(empty directory)"),
        ))
    }

    /// Files whose virtual path (without the leading `/`) matches a glob.
    pub fn glob(&self, pattern: &str) -> Result<ToolOutput, String> {
        let pat = pattern.trim_start_matches('/');
        let matcher = globset::GlobBuilder::new(pat)
            .literal_separator(false)
            .build()
            .map_err(|e| format!("invalid glob '{pattern}': {e}"))?
            .compile_matcher();
        let lines: Vec<String> = self
            .walk_files(&self.root, self.deadline())?
            .into_iter()
            .filter(|rel| matcher.is_match(rel))
            .map(|rel| self.virtual_path(&rel))
            .collect();
        Ok(ToolOutput::ok(self.entries_text(lines, "(no files match)")))
    }

    /// Regex search over files under `path` (a file or directory), optionally filtered by glob.
    pub fn grep(
        &self,
        pattern: &str,
        path: &str,
        glob: Option<&str>,
        ignore_case: bool,
    ) -> Result<ToolOutput, String> {
        let matcher = matcher(pattern, ignore_case)?;
        let filter = match glob {
            Some(g) => Some(
                globset::Glob::new(g.trim_start_matches('/'))
                    .map_err(|e| format!("invalid glob '{g}': {e}"))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let deadline = self.deadline();
        let start = self.resolve(path)?;
        let start_is_dir = self.is_dir(&start);
        let files = if start_is_dir {
            self.walk_files(&start, deadline)?
        } else {
            vec![self.relative(&start)]
        };
        let max = self.limits.max_grep_matches;
        let mut hits: Vec<String> = Vec::new();
        let mut files_read = Vec::new();
        let mut truncated = false;
        for rel in files {
            if filter.as_ref().is_some_and(|f| !f.is_match(&rel)) {
                continue;
            }
            let vpath = self.virtual_path(&rel);
            self.check_deadline(deadline)?;
            let file: Source<'_> = match self.mem_file(&rel) {
                Some(Ok(bytes)) => Source::Memory(bytes),
                Some(Err(e)) => {
                    hits.push(format!("{vpath}: (not searchable: {e})"));
                    continue;
                }
                None => match safe_fs::open_regular(&self.root, &self.root.join(&rel), &vpath) {
                    Ok(f) => Source::File(f),
                    Err(e) => {
                        hits.push(format!("{vpath}: (not searchable: {e})"));
                        continue;
                    }
                },
            };
            let before = hits.len();
            let mut late = false;
            let sink = UTF8(|line_no, line| {
                if Instant::now() >= deadline {
                    late = true;
                    return Ok(false);
                }
                if hits.len() >= max {
                    truncated = true;
                    return Ok(false);
                }
                let text = self.cut_line(line.trim_end_matches(['\n', '\r']));
                hits.push(format!("{vpath}:{line_no}: {text}"));
                Ok(true)
            });
            let result = search(matcher.as_ref(), file, self.limits.max_file_bytes, sink);
            if let Err(e) = result {
                hits.push(format!("{vpath}: (not searchable: {e})"));
            }
            if late {
                return Err(self.timeout_text());
            }
            if hits.len() > before {
                files_read.push(vpath);
            }
            if truncated {
                break;
            }
        }
        let mut text = if hits.is_empty() {
            format!("No matches for '{pattern}'.")
        } else {
            hits.join("\n")
        };
        if truncated {
            let _ = write!(
                text,
                "\n… [only the first {max} matches are shown; narrow the pattern or path]"
            );
        }
        Ok(ToolOutput {
            text,
            is_error: false,
            files_read,
        })
    }

    /// Lines `offset..offset+limit` of a file, numbered from 1 like `cat -n`.
    pub fn read_file(
        &self,
        path: &str,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<ToolOutput, String> {
        let file = self.resolve(path)?;
        let (bytes, cut) = match self.mem_file(&self.relative(&file)) {
            Some(Ok(b)) => {
                let max = self.limits.max_file_bytes;
                let n = b.len().min(usize::try_from(max).unwrap_or(usize::MAX));
                (b[..n].to_vec(), b.len() as u64 > max)
            }
            // Resolved but not a file: a directory.
            Some(Err(_)) => return Err(format!("{path} is a directory; use ls")),
            None => {
                let opened = safe_fs::open_regular(&self.root, &file, path)?;
                safe_fs::read_capped(opened, self.limits.max_file_bytes)
                    .map_err(|e| format!("cannot read {path}: {e}"))?
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        let limit = limit
            .unwrap_or(self.limits.default_read_lines)
            .clamp(1, self.limits.default_read_lines.max(1));
        let total = text.lines().count();
        let mut out = String::new();
        for (i, line) in text.lines().enumerate().skip(offset).take(limit) {
            let _ = writeln!(out, "{:>6}\t{}", i + 1, self.cut_line(line));
        }
        if out.is_empty() {
            out = if total == 0 {
                "(empty file)".to_string()
            } else {
                format!("(offset {offset} is past the end: the file has {total} lines)")
            };
        } else if offset + limit < total {
            let _ = write!(
                out,
                "… [{} more lines; read again with offset={}]",
                total - offset - limit,
                offset + limit
            );
        }
        if cut {
            let _ = write!(
                out,
                "\n… [only the first {} bytes of this file are readable]",
                self.limits.max_file_bytes
            );
        }
        Ok(ToolOutput {
            text: out,
            is_error: false,
            files_read: vec![self.virtual_path(&self.relative(&file))],
        })
    }
}
