//! Exact counters against tiktoken-rs (the reference implementation, whose embedded encodings
//! have the same sha256 as OpenAI's) on real text: every bundled dataset file, plus the registry
//! seen from outside the crate.

use ctxbench::tokens::bpe::{BpeCounter, Encoding};
use ctxbench::tokens::{counter, TokenCounter, COUNTER_NAMES};
use std::path::{Path, PathBuf};

fn dataset_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)
            } else {
                out.push(p)
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets"),
        &mut out,
    );
    out
}

fn floor_boundary(s: &str, mut n: usize) -> usize {
    n = n.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// Up to `each` bytes from the start, the middle and the end of `s` (debug-build tiktoken-rs is
/// slow; three windows per file still cover every kind of content the files hold).
fn windows(s: &str, each: usize) -> Vec<&str> {
    if s.len() <= 3 * each {
        return vec![s];
    }
    let mid = floor_boundary(s, s.len() / 2);
    let end = floor_boundary(s, s.len() - each);
    vec![
        &s[..floor_boundary(s, each)],
        &s[mid..floor_boundary(s, mid + each)],
        &s[end..],
    ]
}

#[test]
fn identical_to_tiktoken_on_every_dataset_file() {
    let files = dataset_files();
    assert!(files.len() > 40, "datasets/ should be bundled");
    let o200k = BpeCounter::o200k();
    let cl100k = BpeCounter::cl100k();
    let ref_o = tiktoken_rs::o200k_base_singleton();
    let ref_cl = tiktoken_rs::cl100k_base_singleton();
    let mut checked = 0usize;
    for p in files {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for w in windows(&text, 24 * 1024) {
            assert_eq!(
                o200k.count(w),
                ref_o.encode_ordinary(w).len() as u64,
                "o200k differs on {}",
                p.display()
            );
            assert_eq!(
                cl100k.count(w),
                ref_cl.encode_ordinary(w).len() as u64,
                "cl100k differs on {}",
                p.display()
            );
            checked += w.len();
        }
    }
    assert!(checked > 1_000_000, "only {checked} bytes compared");
}

#[test]
fn identical_to_tiktoken_on_decoded_json_strings() {
    // The dataset files are JSON: their string values (real tool output, code, prose with
    // unescaped newlines and unicode) are what traces actually carry.
    let ref_o = tiktoken_rs::o200k_base_singleton();
    let ref_cl = tiktoken_rs::cl100k_base_singleton();
    let mut strings = Vec::new();
    fn collect(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) if s.len() > 40 => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    for p in dataset_files() {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let mut found = Vec::new();
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            collect(&v, &mut found);
        } else {
            for line in text.lines() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                    collect(&v, &mut found);
                }
            }
        }
        // A bounded, spread-out sample per file.
        let step = (found.len() / 25).max(1);
        strings.extend(found.into_iter().step_by(step).take(25));
    }
    assert!(strings.len() > 500, "only {} strings", strings.len());
    let mut non_ascii = 0;
    for s in &strings {
        let s = &s[..floor_boundary(s, 16 * 1024)];
        non_ascii += usize::from(!s.is_ascii());
        assert_eq!(
            BpeCounter::o200k().count(s),
            ref_o.encode_ordinary(s).len() as u64,
            "{s:?}"
        );
        assert_eq!(
            BpeCounter::cl100k().count(s),
            ref_cl.encode_ordinary(s).len() as u64,
            "{s:?}"
        );
    }
    assert!(non_ascii > 0, "the sample should include non-ASCII text");
}

#[test]
fn registry_names_map_to_the_right_encoding() {
    // A string whose count differs between the two encodings tells them apart.
    let text = "I'm they're WE'LL";
    assert_eq!(counter("o200k").unwrap().count_text(text), 5);
    assert_eq!(counter("cl100k").unwrap().count_text(text), 7);
    assert_eq!(BpeCounter::new(Encoding::O200k).count(text), 5);
    for name in COUNTER_NAMES {
        let c = counter(name).unwrap();
        assert_eq!(c.name(), name);
        assert!(c.count_text("hello world") > 0);
    }
    let err = counter("p50k").err().unwrap().to_string();
    assert!(
        err.contains("p50k") && err.contains("approx-anthropic"),
        "{err}"
    );
}

#[test]
fn counters_are_usable_from_many_threads() {
    let c = counter("o200k").unwrap();
    let text = "The quick brown fox — 110000 times! ".repeat(200);
    let want = tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(&text)
        .len() as u64;
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let c = c.clone();
            let text = text.clone();
            std::thread::spawn(move || (0..5).map(|_| c.count_text(&text)).collect::<Vec<_>>())
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap().iter().all(|&n| n == want));
    }
}

#[test]
fn count_message_is_framing_plus_parts() {
    let c: &dyn TokenCounter = &BpeCounter::cl100k();
    let m = ctxbench::trace::Message::user("tiktoken is great!");
    assert_eq!(c.count_message(&m), 3 + 1 + 6);
}
