//! The needle agent's sandboxed file tools against a hostile offload store: a FIFO, a hardlink
//! to a file outside the store, symlinks out, device files and a huge file are each refused or
//! bounded with a tool error the model sees, never a hang; a tool call and a whole agent loop
//! both stop at their time limits.

#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use crate::support::mock_provider::MockProvider;
use ctxbench::evals::agent;
use ctxbench::evals::fs_tools::{Limits, Sandbox};
use ctxbench::providers::{Message, ProviderError, ToolCall};
use serde_json::json;

fn store() -> (tempfile::TempDir, Sandbox) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    std::fs::create_dir_all(root.join("large_tool_results")).unwrap();
    std::fs::write(
        root.join("large_tool_results/call_1"),
        "the token: teal-otter\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside the store\n").unwrap();
    let sb = Sandbox::new(&root).unwrap();
    (dir, sb)
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "mkfifo failed"
    );
}

/// Runs `f` on a thread and fails the test if it has not returned within 20 s.
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the tool call hung")
}

/// `fut`'s output; panics if it has not finished after 20 s (a hang guard, not a speed check).
async fn not_hung<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .expect("the agent loop hung")
}

#[test]
fn fifo_is_refused_without_hanging() {
    let (_d, sb) = store();
    mkfifo(&sb.root().join("large_tool_results/pipe"));
    let s = sb.clone();
    let out = bounded(move || s.call("read_file", &json!({"path": "/large_tool_results/pipe"})));
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.contains("not a regular file"), "{}", out.text);
    let s = sb.clone();
    let out = bounded(move || {
        s.call(
            "grep",
            &json!({"pattern": "x", "path": "/large_tool_results/pipe"}),
        )
    });
    assert!(out.text.contains("not a regular file"), "{}", out.text);
    // A whole-store search skips it and still finds the real file.
    let s = sb.clone();
    let out = bounded(move || s.call("grep", &json!({"pattern": "token"})));
    assert_eq!(
        out.text,
        "/large_tool_results/call_1:1: the token: teal-otter"
    );
    // Not listed either.
    let out = sb.call("ls", &json!({"path": "/large_tool_results"}));
    assert_eq!(out.text, "/large_tool_results/call_1");
}

#[test]
fn hardlinks_are_refused() {
    let (d, sb) = store();
    std::fs::hard_link(d.path().join("secret.txt"), sb.root().join("linked")).unwrap();
    let out = sb.call("read_file", &json!({"path": "/linked"}));
    assert!(
        out.is_error && out.text.contains("hard links"),
        "{}",
        out.text
    );
    assert!(!out.text.contains("outside the store"));
    let out = sb.call("grep", &json!({"pattern": "outside"}));
    assert!(!out.text.contains("outside the store"), "{}", out.text);
    assert!(
        out.text.contains("/linked: (not searchable"),
        "{}",
        out.text
    );
}

#[test]
fn symlinks_out_are_refused_at_every_position() {
    let (d, sb) = store();
    std::os::unix::fs::symlink(d.path().join("secret.txt"), sb.root().join("file_link")).unwrap();
    std::os::unix::fs::symlink(d.path(), sb.root().join("dir_link")).unwrap();
    for p in ["/file_link", "/dir_link/secret.txt"] {
        let out = sb.call("read_file", &json!({"path": p}));
        assert!(
            out.is_error && out.text.contains("symlink"),
            "{p}: {}",
            out.text
        );
        let out = sb.call("grep", &json!({"pattern": "outside", "path": p}));
        assert!(out.is_error, "{p}: {}", out.text);
    }
    let out = sb.call("grep", &json!({"pattern": "outside"}));
    assert!(out.text.starts_with("No matches"), "{}", out.text);
}

#[test]
fn device_files_are_refused() {
    // /dev as a store: every entry is a device, a directory or a symlink.
    let sb = Sandbox::new(Path::new("/dev")).unwrap();
    for p in ["/null", "/zero", "/urandom"] {
        let s = sb.clone();
        let out = bounded(move || s.call("read_file", &json!({"path": p})));
        assert!(
            out.is_error && out.text.contains("not a regular file"),
            "{p}: {}",
            out.text
        );
    }
    let s = sb.clone();
    let out = bounded(move || s.call("grep", &json!({"pattern": "x", "path": "/zero"})));
    assert!(out.text.contains("not a regular file"), "{}", out.text);
}

#[test]
fn huge_files_are_read_only_up_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(dir.path().join("huge")).unwrap();
    f.set_len(8 << 30).unwrap(); // 8 GiB, sparse: no disk space used
    std::fs::write(dir.path().join("lines"), "needle\n".repeat(1 << 20)).unwrap();
    let limits = Limits {
        max_file_bytes: 1 << 20,
        ..Limits::default()
    };
    let sb = Sandbox::with_limits(dir.path(), limits).unwrap();
    let s = sb.clone();
    let out = bounded(move || s.call("read_file", &json!({"path": "/huge"})));
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.contains("only the first 1048576 bytes"),
        "{}",
        out.text
    );
    let s = sb.clone();
    let out = bounded(move || s.call("read_file", &json!({"path": "/lines", "offset": 200_000})));
    // 1 MiB of 7-byte lines is 149 796 whole lines: offset 200 000 is past what is readable.
    assert!(out.text.contains("past the end"), "{}", out.text);
    let s = sb.clone();
    let out = bounded(move || s.call("grep", &json!({"pattern": "zzz"})));
    assert!(out.text.starts_with("No matches"), "{}", out.text);
}

#[test]
fn a_call_stops_at_its_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..50 {
        std::fs::create_dir_all(dir.path().join(format!("d{i}"))).unwrap();
        std::fs::write(dir.path().join(format!("d{i}/f")), "x\n").unwrap();
    }
    let limits = Limits {
        call_timeout: Duration::ZERO,
        ..Limits::default()
    };
    let sb = Sandbox::with_limits(dir.path(), limits).unwrap();
    for (tool, args) in [
        ("glob", json!({"pattern": "**/f"})),
        ("grep", json!({"pattern": "x"})),
    ] {
        let out = sb.call(tool, &args);
        assert!(
            out.is_error && out.text.contains("took longer than 0s"),
            "{tool}: {}",
            out.text
        );
    }
}

/// A provider that always asks to read `path`.
fn reader(path: &str) -> MockProvider {
    let path = path.to_string();
    MockProvider::replying(move |_| {
        Message::assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: json!({"path": path}),
            }],
        )
    })
}

#[tokio::test]
async fn an_agent_loop_stops_at_its_time_limit() {
    let (_d, sb) = store();
    let r = not_hung(agent::run_with_limit(
        &MockProvider::hanging(),
        ctxbench::evalspec::Asking::Recall,
        vec![Message::user("where is the token?")],
        Some(&sb),
        8,
        None,
        "n",
        Duration::from_millis(300),
    ))
    .await;
    assert!(matches!(r, Err(ProviderError::Timeout { .. })), "{r:?}");
}

#[tokio::test]
async fn an_agent_reading_a_fifo_gets_an_error_and_goes_on() {
    let (_d, sb) = store();
    mkfifo(&sb.root().join("pipe"));
    let out = not_hung(agent::run(
        &reader("/pipe"),
        ctxbench::evalspec::Asking::Recall,
        vec![Message::user("read it")],
        Some(&sb),
        3,
        None,
        "n",
    ))
    .await
    .unwrap();
    assert!(out.hit_step_limit);
    assert_eq!(out.tool_uses.len(), 3);
    assert!(out
        .tool_uses
        .iter()
        .all(|u| u.is_error && u.result_head.contains("not a regular file")));
}
