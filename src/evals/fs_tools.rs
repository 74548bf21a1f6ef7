//! Sandboxed file tools (`ls`, `glob`, `grep`, `read_file`) over one run's offload store: the
//! only window the eval agent has onto the history that compaction moved out of its context.
//!
//! Paths are *virtual*: `/` is the store root, so the pointers the engine leaves in the context
//! (`/large_tool_results/call_1`, `/conversation_history/session_….md`) work as they are.
//! A path never leaves the store: `..` components are refused, symlinks are refused (never
//! followed, never listed as files), and an absolute host path is read as a path *inside* the
//! store (so `/etc/passwd` is simply "not found"). Every refusal is an error text the model sees,
//! not a failure of the run. Output is capped so one call cannot flood the context.
//!
//! Only regular files with one link are read (FIFOs, sockets, devices and hardlinks are refused;
//! see [`super::safe_fs`]), at most [`Limits::max_file_bytes`] of each, and one call stops at
//! [`Limits::call_timeout`] with an error the model sees. The agent loop runs these calls off the
//! async worker threads (`spawn_blocking`) under the same limit.
//!
//! Listings and search results are sorted, so the same store always gives the same answers.

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{sinks::UTF8, BinaryDetection, SearcherBuilder};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use super::safe_fs;

/// Caps on what one tool call may return.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Characters of output per call; longer output is cut with a notice.
    pub max_output_chars: usize,
    /// Matches returned by one `grep`.
    pub max_grep_matches: usize,
    /// Entries returned by one `ls` or `glob`.
    pub max_entries: usize,
    /// Default and maximum `limit` of `read_file`, in lines.
    pub default_read_lines: usize,
    /// Characters per line shown by `read_file` and `grep`.
    pub max_line_chars: usize,
    /// Bytes of one file that `read_file` and `grep` look at; the rest is not read.
    pub max_file_bytes: u64,
    /// Wall time of one call; a walk or search still running then stops with an error.
    pub call_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_output_chars: 20_000,
            max_grep_matches: 50,
            max_entries: 200,
            default_read_lines: 200,
            max_line_chars: 2_000,
            max_file_bytes: 8 * 1024 * 1024,
            call_timeout: Duration::from_secs(10),
        }
    }
}

/// The result of one tool call as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// Virtual paths of files whose contents this call returned (for evidence).
    pub files_read: Vec<String>,
}

impl ToolOutput {
    fn ok(text: String) -> Self {
        ToolOutput {
            text,
            is_error: false,
            files_read: Vec::new(),
        }
    }
    /// A refusal or failure the model sees.
    pub fn err(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
            files_read: Vec::new(),
        }
    }
}

/// The tool names this sandbox serves.
pub const TOOL_NAMES: [&str; 4] = ["ls", "glob", "grep", "read_file"];

/// File tools confined to one directory.
#[derive(Clone, Debug)]
pub struct Sandbox {
    root: PathBuf,
    limits: Limits,
}

impl Sandbox {
    /// A sandbox over `root`, which must be an existing directory (not a symlink).
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Self::with_limits(root, Limits::default())
    }

    pub fn with_limits(root: &Path, limits: Limits) -> std::io::Result<Self> {
        let meta = std::fs::symlink_metadata(root)?;
        if !meta.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("offload store {} is not a directory", root.display()),
            ));
        }
        Ok(Sandbox {
            root: root.canonicalize()?,
            limits,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.limits.call_timeout
    }

    fn check_deadline(&self, deadline: Instant) -> Result<(), String> {
        if Instant::now() >= deadline {
            return Err(self.timeout_text());
        }
        Ok(())
    }

    /// What the model is told when a call runs out of time.
    pub fn timeout_text(&self) -> String {
        format!(
            "the call took longer than {}s and was stopped; narrow the path or pattern",
            self.limits.call_timeout.as_secs_f64()
        )
    }

    /// JSON schemas of the tools, in the OpenAI function format (`{name, description,
    /// parameters}`); providers translate them to their own wire shape.
    pub fn tool_schemas() -> Vec<Value> {
        vec![
            json!({
                "name": "ls",
                "description": "List the files and directories at a path of the saved history store. '/' is the store root.",
                "parameters": {"type": "object", "properties": {
                    "path": {"type": "string", "description": "Directory to list, default '/'"}
                }}
            }),
            json!({
                "name": "glob",
                "description": "Find files in the history store whose path matches a glob pattern, e.g. '**/*.md'.",
                "parameters": {"type": "object", "properties": {
                    "pattern": {"type": "string"}
                }, "required": ["pattern"]}
            }),
            json!({
                "name": "grep",
                "description": "Search file contents in the history store with a regular expression. Returns path:line: text for each matching line.",
                "parameters": {"type": "object", "properties": {
                    "pattern": {"type": "string", "description": "Regular expression"},
                    "path": {"type": "string", "description": "File or directory to search, default '/'"},
                    "glob": {"type": "string", "description": "Only search files matching this glob"},
                    "ignore_case": {"type": "boolean"}
                }, "required": ["pattern"]}
            }),
            json!({
                "name": "read_file",
                "description": "Read a file of the history store with line numbers. offset is the first line (0-based), limit the number of lines.",
                "parameters": {"type": "object", "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1}
                }, "required": ["path"]}
            }),
        ]
    }

    /// Run one tool call. Unknown tools and bad arguments are errors the model sees.
    pub fn call(&self, name: &str, args: &Value) -> ToolOutput {
        let s = |k: &str| args.get(k).and_then(Value::as_str);
        let n = |k: &str| args.get(k).and_then(Value::as_u64).map(|v| v as usize);
        let out = match name {
            "ls" => self.ls(s("path").unwrap_or("/")),
            "glob" => match s("pattern") {
                Some(p) => self.glob(p),
                None => Err("glob needs a string argument 'pattern'".to_string()),
            },
            "grep" => match s("pattern") {
                Some(p) => self.grep(
                    p,
                    s("path").unwrap_or("/"),
                    s("glob"),
                    args.get("ignore_case")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                ),
                None => Err("grep needs a string argument 'pattern'".to_string()),
            },
            "read_file" => match s("path") {
                Some(p) => self.read_file(p, n("offset").unwrap_or(0), n("limit")),
                None => Err("read_file needs a string argument 'path'".to_string()),
            },
            other => Err(format!(
                "unknown tool '{other}'; available tools: {}",
                TOOL_NAMES.join(", ")
            )),
        };
        match out {
            Ok(mut o) => {
                o.text = self.cap(o.text);
                o
            }
            Err(e) => ToolOutput::err(format!("Error: {e}")),
        }
    }

    /// List a directory: one entry per line, directories with a trailing `/`.
    pub fn ls(&self, path: &str) -> Result<ToolOutput, String> {
        let dir = self.resolve(path)?;
        if !dir.is_dir() {
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
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(ignore_case)
            .build(pattern)
            .map_err(|e| format!("invalid regex '{pattern}': {e}"))?;
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
        let start_is_dir = std::fs::symlink_metadata(&start).is_ok_and(|m| m.is_dir());
        let files = if start_is_dir {
            self.walk_files(&start, deadline)?
        } else {
            vec![self.relative(&start)]
        };
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build();
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
            let file = match safe_fs::open_regular(&self.root, &self.root.join(&rel), &vpath) {
                Ok(f) => f,
                Err(e) => {
                    hits.push(format!("{vpath}: (not searchable: {e})"));
                    continue;
                }
            };
            let before = hits.len();
            let mut late = false;
            let result = searcher.search_reader(
                &matcher,
                std::io::Read::take(file, self.limits.max_file_bytes),
                UTF8(|line_no, line| {
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
                }),
            );
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
        let opened = safe_fs::open_regular(&self.root, &file, path)?;
        let (bytes, cut) = safe_fs::read_capped(opened, self.limits.max_file_bytes)
            .map_err(|e| format!("cannot read {path}: {e}"))?;
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

    /// Map a virtual path to a real path inside the store, refusing escapes and symlinks.
    fn resolve(&self, path: &str) -> Result<PathBuf, String> {
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

    fn relative(&self, real: &Path) -> String {
        real.strip_prefix(&self.root)
            .unwrap_or(real)
            .to_string_lossy()
            .replace('\\', "/")
    }

    fn virtual_path(&self, rel: &str) -> String {
        format!("/{}", rel.trim_start_matches('/'))
    }

    /// Direct children of `dir` as (relative path, is_dir), sorted; symlinks, FIFOs, sockets
    /// and devices skipped.
    fn read_dir_sorted(&self, dir: &Path) -> Result<Vec<(String, bool)>, String> {
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
    fn walk_files(&self, dir: &Path, deadline: Instant) -> Result<Vec<String>, String> {
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

    fn entries_text(&self, mut lines: Vec<String>, empty: &str) -> String {
        if lines.is_empty() {
            return empty.to_string();
        }
        let total = lines.len();
        if total > self.limits.max_entries {
            lines.truncate(self.limits.max_entries);
            lines.push(format!(
                "… [{} more entries not shown]",
                total - self.limits.max_entries
            ));
        }
        lines.join("\n")
    }

    fn cut_line(&self, line: &str) -> String {
        let max = self.limits.max_line_chars;
        match line.char_indices().nth(max) {
            Some((i, _)) => format!("{}… [line cut]", &line[..i]),
            None => line.to_string(),
        }
    }

    fn cap(&self, text: String) -> String {
        let max = self.limits.max_output_chars;
        match text.char_indices().nth(max) {
            Some((i, _)) => format!(
                "{}\n… [output cut at {max} characters; narrow the request]",
                &text[..i]
            ),
            None => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        std::fs::create_dir_all(root.join("large_tool_results")).unwrap();
        std::fs::create_dir_all(root.join("conversation_history")).unwrap();
        std::fs::write(
            root.join("large_tool_results/call_1"),
            "line one\nthe deploy token: teal-otter-7731\nline three\n",
        )
        .unwrap();
        std::fs::write(
            root.join("conversation_history/session_ab.md"),
            "## Summarized\nuser: fix the parser\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("secret.txt"), "outside the store").unwrap();
        let sb = Sandbox::new(&root).unwrap();
        (dir, sb)
    }

    #[test]
    fn ls_lists_sorted_with_dir_markers() {
        let (_d, sb) = store();
        let out = sb.call("ls", &json!({}));
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "/conversation_history/\n/large_tool_results/");
        let out = sb.call("ls", &json!({"path": "/large_tool_results"}));
        assert_eq!(out.text, "/large_tool_results/call_1");
    }

    #[test]
    fn grep_finds_needle_with_line_numbers() {
        let (_d, sb) = store();
        let out = sb.call("grep", &json!({"pattern": "deploy token"}));
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "/large_tool_results/call_1:2: the deploy token: teal-otter-7731"
        );
        assert_eq!(out.files_read, vec!["/large_tool_results/call_1"]);
        let none = sb.call("grep", &json!({"pattern": "no-such-thing"}));
        assert!(none.text.starts_with("No matches"));
        let ci = sb.call("grep", &json!({"pattern": "DEPLOY", "ignore_case": true}));
        assert!(ci.text.contains("teal-otter-7731"));
        let filtered = sb.call("grep", &json!({"pattern": "e", "glob": "**/*.md"}));
        assert!(filtered.text.contains("session_ab.md") && !filtered.text.contains("call_1"));
    }

    #[test]
    fn grep_caps_matches() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (0..500).map(|i| format!("hit {i}\n")).collect();
        std::fs::write(dir.path().join("f"), body).unwrap();
        let sb = Sandbox::new(dir.path()).unwrap();
        let out = sb.call("grep", &json!({"pattern": "hit"}));
        assert_eq!(
            out.text.lines().filter(|l| l.starts_with("/f:")).count(),
            50
        );
        assert!(out.text.contains("only the first 50 matches"));
    }

    #[test]
    fn read_file_pages_with_line_numbers() {
        let (_d, sb) = store();
        let out = sb.call(
            "read_file",
            &json!({"path": "/large_tool_results/call_1", "offset": 1, "limit": 1}),
        );
        assert_eq!(
            out.text,
            "     2\tthe deploy token: teal-otter-7731\n… [1 more lines; read again with offset=2]"
        );
        // Relative virtual paths work too.
        let out = sb.call("read_file", &json!({"path": "large_tool_results/call_1"}));
        assert!(out.text.contains("     3\tline three"));
    }

    #[test]
    fn escapes_are_refused() {
        let (d, sb) = store();
        for p in [
            "../secret.txt",
            "/large_tool_results/../../secret.txt",
            "a/../../x",
        ] {
            let out = sb.call("read_file", &json!({"path": p}));
            assert!(out.is_error, "{p} was not refused: {}", out.text);
            assert!(!out.text.contains("outside the store"));
        }
        // A host absolute path is read inside the store: not found, never the host file.
        let out = sb.call("read_file", &json!({"path": "/etc/passwd"}));
        assert!(
            out.is_error && out.text.contains("no such file"),
            "{}",
            out.text
        );
        let outside = d.path().join("secret.txt");
        let out = sb.call("read_file", &json!({"path": outside.to_str().unwrap()}));
        assert!(out.is_error && !out.text.contains("outside the store"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused_and_not_listed() {
        let (d, sb) = store();
        std::os::unix::fs::symlink(d.path().join("secret.txt"), sb.root().join("link")).unwrap();
        std::os::unix::fs::symlink("/", sb.root().join("rootlink")).unwrap();
        let out = sb.call("read_file", &json!({"path": "/link"}));
        assert!(out.is_error && out.text.contains("symlink"), "{}", out.text);
        let out = sb.call("ls", &json!({"path": "/rootlink"}));
        assert!(out.is_error);
        let out = sb.call("grep", &json!({"pattern": "outside"}));
        assert!(out.text.starts_with("No matches"), "{}", out.text);
        let out = sb.call("ls", &json!({}));
        assert!(!out.text.contains("link"));
    }

    #[test]
    fn bad_arguments_and_unknown_tools_are_model_visible_errors() {
        let (_d, sb) = store();
        assert!(sb.call("grep", &json!({})).text.contains("'pattern'"));
        assert!(sb
            .call("grep", &json!({"pattern": "("}))
            .text
            .contains("invalid regex"));
        assert!(sb.call("rm", &json!({})).text.contains("unknown tool 'rm'"));
        assert!(sb
            .call("read_file", &json!({"path": "/"}))
            .text
            .contains("directory"));
    }

    #[test]
    fn output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big"), "x".repeat(50_000)).unwrap();
        let limits = Limits {
            max_output_chars: 1000,
            max_line_chars: 100_000,
            ..Limits::default()
        };
        let sb = Sandbox::with_limits(dir.path(), limits).unwrap();
        let out = sb.call("read_file", &json!({"path": "/big"}));
        assert!(out.text.chars().count() < 1100);
        assert!(out.text.contains("output cut at 1000 characters"));
    }

    #[test]
    fn glob_matches_virtual_paths() {
        let (_d, sb) = store();
        let out = sb.call("glob", &json!({"pattern": "**/*.md"}));
        assert_eq!(out.text, "/conversation_history/session_ab.md");
        let out = sb.call("glob", &json!({"pattern": "/large_tool_results/*"}));
        assert_eq!(out.text, "/large_tool_results/call_1");
    }
}
