//! Bad input never panics and always yields an error naming the file, the line or JSON path and
//! what was expected: truncated copies of every dataset file (a Gemini CLI session skips its
//! line cut short, warned of, as the CLI does), wrong types, invalid UTF-8, a
//! 100 MB single line, random bytes and random byte mutations.

use ctxbench::trace::import::{import_file, import_file_content, FileContent, ImportError};
use ctxbench::trace::SourceFormat;
use std::path::{Path, PathBuf};

fn dataset_files() -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        let mut es: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        es.sort();
        for e in es {
            if e.is_dir() {
                walk(&e, out);
            } else if ["json", "jsonl", "traj"]
                .contains(&e.extension().and_then(|x| x.to_str()).unwrap_or(""))
            {
                out.push(e);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets"),
        &mut out,
    );
    assert!(out.len() >= 50, "{}", out.len());
    out
}

fn err(path: &Path, from: Option<SourceFormat>) -> ImportError {
    match import_file(path, from) {
        Err(e) => e,
        Ok(t) => panic!(
            "{} imported ({} traces) but should fail",
            path.display(),
            t.len()
        ),
    }
}

#[test]
fn truncated_copies_of_every_dataset_file_fail_with_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    for src in dataset_files() {
        let bytes = std::fs::read(&src).unwrap();
        for pct in [10, 50, 90] {
            let mut cut = bytes.len() * pct / 100;
            // never cut exactly after a newline: that would be a valid shorter JSONL file
            while cut > 1 && bytes[cut - 1] == b'\n' {
                cut -= 1;
            }
            let name = format!("{pct}_{}", src.file_name().unwrap().to_string_lossy());
            let path = dir.path().join(&name);
            std::fs::write(&path, &bytes[..cut]).unwrap();
            // A Gemini CLI JSON Lines session skips its last line cut short, as the CLI's reader
            // does, warned of (an error only when no line after its header is left).
            let gemini_cli_session = src.extension().is_some_and(|x| x == "jsonl")
                && src.parent().is_some_and(|d| d.ends_with("gemini-cli"));
            if gemini_cli_session {
                if let Ok(ts) = import_file(&path, None) {
                    let w = &ts[0].meta.warnings;
                    assert!(
                        w.iter().any(|w| w.contains(", the last: not JSON (")),
                        "{name}: {w:?}"
                    );
                    continue;
                }
            }
            let e = err(&path, None);
            assert!(e.file.ends_with(&name), "{e}");
            assert!(e.location.starts_with("line "), "{e}");
            assert!(
                e.message.contains("truncated") || e.message.contains("expected"),
                "{e}"
            );
            // JSON documents (not JSONL) cut mid-way are reported as truncated
            if src.extension().is_none_or(|x| x != "jsonl") {
                assert!(e.message.contains("truncated"), "{e}");
            }
        }
    }
}

#[test]
fn wrong_types_report_the_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.json");
    std::fs::write(
        &path,
        r#"{"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "a"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": ["ls"]}]}
        ]}"#,
    )
    .unwrap();
    let e = err(&path, None);
    assert_eq!(e.location, "$.messages[3].tool_calls[0].function");
    assert_eq!(e.message, "expected an object, found an array");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: $.messages[3].tool_calls[0].function: expected an object, found an array",
            path.display()
        )
    );

    // a JSONL format names the line as well as the path
    let path = dir.path().join("cc.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{\"content\":\"hi\"}}\n{\"type\":\"assistant\",\"sessionId\":\"s\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":false}]}}\n",
    )
    .unwrap();
    let e = err(&path, None);
    assert_eq!(e.location, "line 2: $.message.content[0].name");
    assert_eq!(e.message, "expected a string, found `false`");

    // a real dataset file with one field's type changed
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/mini-swe-agent/astropy__astropy-12907.traj.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(src).unwrap()).unwrap();
    v["messages"][5]["content"] = serde_json::json!({"oops": 1});
    let path = dir.path().join("mini.traj.json");
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let e = err(&path, None);
    assert_eq!(e.location, "$.messages[5].content");
    assert_eq!(e.message, "expected a string, found an object");
}

/// A UTF-8 byte-order mark first (Windows editors write one) is not an error: every dataset
/// file with one imports as the file without it. UTF-16 text is named as such, and a line of
/// JSON Lines cut mid-way with the file going on after it says that line was cut short.
#[test]
fn encodings_and_a_line_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    for src in dataset_files() {
        let bytes = std::fs::read(&src).unwrap();
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let path = dir.path().join(format!("bom_{name}"));
        std::fs::write(&path, [b"\xEF\xBB\xBF".as_slice(), &bytes].concat()).unwrap();
        let (with, without) = (import_file(&path, None), import_file(&src, None));
        match (with, without) {
            (Ok(a), Ok(b)) => {
                let msgs = |t: &[ctxbench::trace::Trace]| -> Vec<_> {
                    t.iter().map(|t| t.messages.clone()).collect()
                };
                assert_eq!(msgs(&a), msgs(&b), "{name}");
            }
            (Err(a), Err(b)) => assert_eq!(a.message, b.message, "{name}"),
            (a, b) => panic!(
                "{name}: with a BOM {:?}, without {:?}",
                a.is_ok(),
                b.is_ok()
            ),
        }
    }

    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/claude-code/hello-world-script.jsonl");
    let text = std::fs::read_to_string(&src).unwrap();
    let utf16 = |bom: bool| -> Vec<u8> {
        let mut out: Vec<u8> = if bom { vec![0xFF, 0xFE] } else { vec![] };
        out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        out
    };
    for bom in [true, false] {
        let path = dir.path().join(format!("utf16_{bom}.jsonl"));
        std::fs::write(&path, utf16(bom)).unwrap();
        let e = err(&path, None);
        assert!(
            e.message.contains("UTF-16 text; expected UTF-8"),
            "BOM {bom}: {e}"
        );
    }

    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 3);
    let half = lines[2].len() / 2;
    lines[2] = &lines[2][..lines[2].floor_char_boundary(half)];
    let path = dir.path().join("midcut.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let e = err(&path, None);
    assert!(e.location.starts_with("line 3, column"), "{e}");
    assert!(
        e.message.contains("on this line (was it cut short?)"),
        "{e}"
    );
    assert!(!e.message.contains("truncated"), "{e}");
}

#[test]
fn invalid_utf8_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/claude-code/hello-world-script.jsonl");
    let text = std::fs::read(src).unwrap();
    let mut lines: Vec<Vec<u8>> = text.split(|b| *b == b'\n').map(|l| l.to_vec()).collect();
    // inside the string value of line 2's content
    let at = lines[1].windows(5).position(|w| w == b"Write").unwrap();
    lines[1].splice(at..at, [0xff, 0xfe]);
    let path = dir.path().join("utf8.jsonl");
    std::fs::write(&path, lines.join(&b'\n')).unwrap();
    let e = err(&path, None);
    assert!(e.location.starts_with("line 2, column"), "{e}");
    assert!(e.message.contains("invalid"), "{e}");

    let path = dir.path().join("latin1.json");
    std::fs::write(&path, b"[{\"role\":\"user\",\"content\":\"caf\xe9\"}]").unwrap();
    let e = err(&path, None);
    assert!(e.location.starts_with("line 1, column"), "{e}");
    // Says what is wrong: the encoding, not "invalid unicode code point; expected valid JSON".
    assert!(e.message.contains("expected UTF-8 text"), "{e}");
}

#[test]
fn a_100_mb_single_line_imports_without_trouble() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.jsonl");
    let big = "x".repeat(100 * 1024 * 1024);
    let line = format!("{{\"messages\":[{{\"role\":\"user\",\"content\":\"{big}\"}},{{\"role\":\"assistant\",\"content\":\"ok\"}}]}}");
    drop(big);
    std::fs::write(&path, &line).unwrap();
    drop(line);
    let t = import_file(&path, None).unwrap();
    assert_eq!(t[0].messages[0].content.len(), 100 * 1024 * 1024);
    assert_eq!(t[0].messages.len(), 2);

    // the same size of garbage on one line is a located error, quickly
    let path = dir.path().join("huge_garbage.jsonl");
    let mut junk = vec![b'['; 1];
    junk.extend(std::iter::repeat_n(b'7', 100 * 1024 * 1024));
    junk.push(b'x');
    std::fs::write(&path, &junk).unwrap();
    let e = err(&path, None);
    assert!(e.location.starts_with("line 1, column"), "{e}");
}

#[test]
fn random_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    for i in 0..300 {
        let len = rng.usize(0..4096);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        if i % 3 == 0 {
            // JSON-ish noise gets past the first byte more often
            let alphabet = b"{}[]\":,0123456789 \ntrueflasn\\";
            bytes = (0..len)
                .map(|_| alphabet[rng.usize(..alphabet.len())])
                .collect();
        }
        let path = dir.path().join(format!("r{i}.json"));
        std::fs::write(&path, &bytes).unwrap();
        for from in [
            None,
            Some(SourceFormat::Openai),
            Some(SourceFormat::ClaudeCode),
            Some(SourceFormat::Canonical),
        ] {
            match import_file_content(&path, from) {
                Ok(FileContent::Traces(_)) | Ok(FileContent::NotATrace(_)) => {}
                Err(e) => {
                    assert!(e.file.ends_with(&format!("r{i}.json")));
                    assert!(!e.location.is_empty() && !e.message.is_empty());
                }
            }
        }
    }
}

#[test]
fn mutated_dataset_files_never_panic_under_any_format() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = fastrand::Rng::with_seed(11);
    let small: Vec<PathBuf> = dataset_files()
        .into_iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() < 70_000)
        .collect();
    assert!(small.len() >= 10);
    for src in &small {
        let bytes = std::fs::read(src).unwrap();
        for k in 0..8 {
            let mut b = bytes.clone();
            for _ in 0..rng.usize(1..6) {
                let at = rng.usize(..b.len());
                b[at] = b"{}[]\":,0 a\n\\"[rng.usize(..12)];
            }
            let path = dir.path().join(format!(
                "m{k}_{}",
                src.file_name().unwrap().to_string_lossy()
            ));
            std::fs::write(&path, &b).unwrap();
            for from in std::iter::once(None).chain(SourceFormat::ALL.iter().copied().map(Some)) {
                if let Err(e) = import_file_content(&path, from) {
                    assert!(!e.location.is_empty(), "{e}");
                }
            }
        }
    }
}

#[test]
fn parallel_import_reports_the_first_failure_in_input_order() {
    use ctxbench::trace::import::import_paths;
    let dir = tempfile::tempdir().unwrap();
    let good = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/claude-code");
    let bad: Vec<PathBuf> = (0..6)
        .map(|i| {
            let p = dir.path().join(format!("bad{i}.json"));
            std::fs::write(&p, format!("{{\"messages\": [{}", "1,".repeat(i))).unwrap();
            p
        })
        .collect();
    let mut inputs = vec![good.clone()];
    inputs.extend(bad.iter().rev().cloned());
    let e = import_paths(&inputs, None, false).unwrap_err();
    assert!(e.file.ends_with("bad5.json"), "{e}");
    let ok = import_paths(&inputs, None, true).unwrap();
    assert_eq!(ok.traces.len(), 7);
    let order: Vec<String> = ok
        .skipped
        .iter()
        .map(|e| e.file.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(
        order,
        [
            "bad5.json",
            "bad4.json",
            "bad3.json",
            "bad2.json",
            "bad1.json",
            "bad0.json"
        ]
    );
}

/// A canonical JSONL line cut inside a value, with lines after it, is located at that line's
/// end and called cut short: the reader parses a line with its line end, where serde_json
/// located the error at "column 0" of the next line.
#[test]
fn a_canonical_line_cut_inside_a_value_is_located_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/claude-code/hello-world-script.jsonl");
    let trace = import_file(&src, None).unwrap().remove(0);
    let whole = dir.path().join("whole.jsonl");
    ctxbench::trace::io::write_traces_file(&whole, std::slice::from_ref(&trace)).unwrap();
    let text = std::fs::read_to_string(&whole).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert!(lines.len() > 4);
    // Line 3 cut right after a key's opening quote: inside a string.
    let at = lines[2].find("\"role\"").unwrap() + 2;
    lines[2].truncate(at);
    let path = dir.path().join("cut.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = err(&path, None);
    assert_eq!(e.location, "line 3, at its end", "{e}");
    assert!(e.message.contains("(was it cut short?)"), "{e}");
}
