//! Sandboxed file tools (`ls`, `glob`, `grep`, `read_file`) over one run's offload store: the
//! only window the eval agent has onto the history that compaction moved out of its context.
//!
//! Paths are *virtual*: `/` is the store root, so the pointers the engine leaves in the context
//! (`/large_tool_results/call_1`, `/conversation_history/session_….md`) work as they are.
//! A path never leaves the store: `..` components are refused, symlinks are refused (never
//! followed, never listed as files), and an absolute host path is read as a path *inside* the
//! store (so `/etc/passwd` is simply "not found"). A path is taken as sent, whitespace
//! included, so the path a tool prints is the path `read_file` reads; only a path naming nothing
//! is tried again trimmed (docs/evals.md, "Paths"). Every refusal is an error text the model sees,
//! not a failure of the run. Output is capped so one call cannot flood the context.
//!
//! Only regular files with one link are read (FIFOs, sockets, devices and hardlinks are refused;
//! see `evals::safe_fs`), at most [`Limits::max_file_bytes`] of each, and one call stops at
//! [`Limits::call_timeout`] with an error the model sees. The agent loop runs the calls that read
//! the disk off the async worker threads (`spawn_blocking`) under the same limit; a store held in
//! memory is answered in place.
//!
//! Listings and search results are sorted, so the same store always gives the same answers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

mod dispatch;
mod limits;
mod paths;
mod tools;

pub use limits::Limits;

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

/// A store's files held in memory: relative path (no leading `/`) → bytes.
pub type MemFiles = crate::engine::store::StoreFiles;

/// File tools confined to one directory, on disk or held in memory.
#[derive(Clone, Debug)]
pub struct Sandbox {
    root: PathBuf,
    limits: Limits,
    /// The store's files when it is held in memory (the unit's store was not written to disk
    /// while it ran): the tools answer from these, under the same rules, and `root` is only
    /// the directory the store would have on disk (a real path into it names the same file).
    files: Option<Arc<MemFiles>>,
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
            files: None,
        })
    }

    /// A sandbox over a store held in memory. `root` is where the store would be on disk
    /// (never read). Nothing in memory is a link, a FIFO or a device, so the tools' answers
    /// are those they give over the same files written under a directory.
    pub fn in_memory(root: &Path, files: Arc<MemFiles>, limits: Limits) -> Self {
        Sandbox {
            root: root.to_path_buf(),
            limits,
            files: Some(files),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The store is held in memory ([`Sandbox::in_memory`]): a call reads no file.
    pub fn is_in_memory(&self) -> bool {
        self.files.is_some()
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    /// The same files as a directory and in memory give the same answer to every call.
    #[test]
    fn a_store_in_memory_answers_as_the_same_store_on_disk() {
        let (d, disk) = store();
        std::fs::create_dir_all(disk.root().join("a/b")).unwrap();
        std::fs::write(disk.root().join("a/b/deep.txt"), "teal\nx\n").unwrap();
        std::fs::write(disk.root().join("a/top"), "").unwrap();
        let mut files = MemFiles::new();
        for e in walkdir::WalkDir::new(disk.root()) {
            let e = e.unwrap();
            if e.file_type().is_file() {
                let rel = e.path().strip_prefix(disk.root()).unwrap();
                files.insert(
                    rel.display().to_string(),
                    std::fs::read(e.path()).unwrap().into(),
                );
            }
        }
        let mem = Sandbox::in_memory(disk.root(), Arc::new(files), Limits::default());
        let calls = [
            ("ls", json!({})),
            ("ls", json!({"path": "/a"})),
            ("ls", json!({"path": "/a/b/"})),
            ("ls", json!({"path": "/a/top"})),
            ("ls", json!({"path": "/nope"})),
            ("ls", json!({"path": "/../secret.txt"})),
            ("glob", json!({"pattern": "**/*.md"})),
            ("glob", json!({"pattern": "*"})),
            ("grep", json!({"pattern": "teal"})),
            (
                "grep",
                json!({"pattern": "TEAL", "ignore_case": true, "path": "/a"}),
            ),
            (
                "grep",
                json!({"pattern": "line", "path": "/large_tool_results/call_1"}),
            ),
            ("grep", json!({"pattern": "e", "glob": "*.md"})),
            ("grep", json!({"pattern": "(", "path": "/"})),
            ("read_file", json!({"path": "/large_tool_results/call_1"})),
            (
                "read_file",
                json!({"path": "large_tool_results/call_1", "offset": 1, "limit": 1}),
            ),
            ("read_file", json!({"path": "/a/top"})),
            ("read_file", json!({"path": "/a"})),
            ("read_file", json!({"path": "/etc/passwd"})),
            ("read_file", json!({"path": "/a/top/x"})),
            (
                "read_file",
                json!({"path": disk.root().join("a/b/deep.txt").display().to_string()}),
            ),
        ];
        for (name, args) in calls {
            assert_eq!(
                mem.call(name, &args),
                disk.call(name, &args),
                "{name} {args}"
            );
        }
        drop(d);
    }

    /// grep over the in-memory store (searched in place) finds what it finds in the same files
    /// on disk (read through the searcher's buffer): long files, CRLF, no final newline, binary
    /// data, invalid UTF-8, and files cut at the byte limit.
    #[test]
    fn grep_in_memory_matches_grep_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let long: String = (0..20_000)
            .map(|i| format!("row {i} the key is v{}\n", i * 7))
            .collect();
        let files: Vec<(&str, Vec<u8>)> = vec![
            ("long.txt", long.clone().into_bytes()),
            (
                "crlf.txt",
                b"the key is a\r\nnothing\r\nthe KEY is b".to_vec(),
            ),
            (
                "nul_late.txt",
                [long.as_bytes(), b"\0the key is z\n"].concat(),
            ),
            ("nul_early.txt", b"the key is q\n\0the key is r\n".to_vec()),
            (
                "bad_utf8.txt",
                b"the key is \xff\xfe\nthe key is ok\n".to_vec(),
            ),
            ("empty.txt", Vec::new()),
        ];
        let mut mem = MemFiles::new();
        for (name, bytes) in &files {
            std::fs::create_dir_all(&root).unwrap();
            std::fs::write(root.join(name), bytes).unwrap();
            mem.insert(name.to_string(), bytes.clone().into());
        }
        let mem = Arc::new(mem);
        for max_file_bytes in [Limits::default().max_file_bytes, 1_000, 13, 0] {
            let limits = Limits {
                max_file_bytes,
                ..Limits::default()
            };
            let disk = Sandbox::with_limits(&root, limits.clone()).unwrap();
            let in_mem = Sandbox::in_memory(&root, mem.clone(), limits);
            for args in [
                json!({"pattern": "key is"}),
                json!({"pattern": "KEY", "ignore_case": true}),
                json!({"pattern": "v1399[0-9]"}),
                json!({"pattern": "^the", "path": "/crlf.txt"}),
                json!({"pattern": "z$"}),
                json!({"pattern": "absent"}),
            ] {
                assert_eq!(
                    in_mem.call("grep", &args),
                    disk.call("grep", &args),
                    "{args} limit {max_file_bytes}"
                );
            }
        }
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

    /// A file whose name starts or ends with whitespace (an offloaded result of a tool call
    /// whose id does) is read by the path `glob` and `grep` print for it, on disk and in
    /// memory; a padded path to a file named without whitespace still reads that file, and a
    /// padded escape is still refused.
    #[test]
    fn a_printed_path_with_whitespace_is_read_as_printed() {
        let (d, disk) = store();
        let dir = disk.root().join("large_tool_results");
        std::fs::write(dir.join("call_2 "), "trailing: amber-yak-1234\n").unwrap();
        std::fs::write(dir.join(" call_3"), "leading: coral-elk-5678\n").unwrap();
        // Two names apart only by whitespace: each path reads its own file.
        std::fs::write(dir.join("call_1 "), "not the deploy token\n").unwrap();
        let mut files = MemFiles::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let bytes = std::fs::read(e.path()).unwrap();
            files.insert(format!("large_tool_results/{name}"), bytes.into());
        }
        let mem = Sandbox::in_memory(disk.root(), Arc::new(files), Limits::default());
        for sb in [&disk, &mem] {
            for (needle, printed) in [
                ("amber-yak", "/large_tool_results/call_2 "),
                ("coral-elk", "/large_tool_results/ call_3"),
            ] {
                let found = sb.call("grep", &json!({"pattern": needle}));
                let path = found.text.split(":1: ").next().unwrap();
                assert_eq!(path, printed, "{}", found.text);
                let globbed = sb.call("glob", &json!({"pattern": "**/*call_*"}));
                assert!(
                    globbed.text.lines().any(|l| l == printed),
                    "{}",
                    globbed.text
                );
                let read = sb.call("read_file", &json!({"path": path}));
                assert!(
                    !read.is_error && read.text.contains(needle),
                    "{}",
                    read.text
                );
                assert_eq!(read.files_read, vec![printed]);
            }
            let read = sb.call("read_file", &json!({"path": "/large_tool_results/call_1 "}));
            assert!(read.text.contains("not the deploy token"), "{}", read.text);
            // Padded, a path naming no file is read trimmed: the file named without spaces.
            for padded in [
                " /large_tool_results/call_1",
                "\t/large_tool_results/call_1\n",
            ] {
                let read = sb.call("read_file", &json!({"path": padded}));
                assert!(
                    read.text.contains("teal-otter-7731"),
                    "{padded:?}: {}",
                    read.text
                );
                assert_eq!(read.files_read, vec!["/large_tool_results/call_1"]);
            }
            let out = sb.call("ls", &json!({"path": " /large_tool_results "}));
            assert!(
                out.text.contains("/large_tool_results/call_2 "),
                "{}",
                out.text
            );
            for p in [" ../secret.txt ", "/large_tool_results/.. /../secret.txt"] {
                let out = sb.call("read_file", &json!({"path": p}));
                assert!(
                    out.is_error && !out.text.contains("outside"),
                    "{p}: {}",
                    out.text
                );
            }
        }
        drop(d);
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
