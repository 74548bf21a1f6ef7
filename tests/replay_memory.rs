//! Peak memory of `ctxbench replay FILE`: about one copy of the trace, never the file held whole
//! beside the parsed model.
//!
//! A counting global allocator records the peak of live heap bytes while the replay command's
//! library path (`cli::replay::replay_file`: read, import, count, replay) runs on the golden
//! `synthetic-s7` trace repeated 2× and 8×. The slope between the two sizes (extra peak bytes per
//! extra file byte) cancels what does not grow with the trace (price table, counter tables).
//! Holding the trace twice makes the slope ≥ 2: the file read whole beside the parsed trace
//! (2.07 measured) or the messages copied into the replay instead of moved (2.08); one copy
//! gives ~1.1. Bytes, not time: nothing here depends on speed.
//! One test in this binary, so no other test allocates while it measures.

use clap::Parser;
use ctxbench::cli::{replay, Cli, Command};
use serde_json::Value;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            if new >= l.size() {
                grew(new - l.size());
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const GOLDEN: &str = "testdata/deepagents-golden/synthetic-s7/trace.jsonl";

/// The golden trace `n` times, tool-call ids made unique per copy (as
/// `benches/runner/big_trace.py` does): fixture-style lines, or canonical with a header.
fn big_trace(dir: &Path, n: usize, canonical: bool) -> (std::path::PathBuf, u64) {
    let lines: Vec<Value> = std::fs::read_to_string(GOLDEN)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut out = String::new();
    if canonical {
        out.push_str(
            r#"{"type":"header","schema_version":1,"meta":{"id":"big","source_format":"openai"}}"#,
        );
        out.push('\n');
    }
    for k in 0..n {
        for m in &lines {
            let mut m = m.clone();
            let o = m.as_object_mut().unwrap();
            if let Some(Value::Array(calls)) = o.get_mut("tool_calls") {
                for c in calls.iter_mut() {
                    let c = c.as_object_mut().unwrap();
                    let id = format!("{}_r{k}", c["id"].as_str().unwrap());
                    c.insert("id".into(), id.into());
                    if canonical {
                        let args = c.remove("args").unwrap_or_else(|| serde_json::json!({}));
                        c.insert("arguments".into(), args);
                    }
                }
            }
            if let Some(Value::String(id)) = o.get_mut("tool_call_id") {
                id.push_str(&format!("_r{k}"));
            }
            if canonical {
                o.insert("type".into(), "message".into());
            }
            out.push_str(&serde_json::to_string(&m).unwrap());
            out.push('\n');
        }
    }
    let name = format!("big{n}{}.jsonl", if canonical { "-canonical" } else { "" });
    let path = dir.join(name);
    std::fs::write(&path, &out).unwrap();
    (path, out.len() as u64)
}

/// Peak live heap bytes above the starting point while replaying `path`, and the number of
/// model calls replayed (so a replay that silently did nothing cannot pass).
fn replay_peak(path: &Path) -> (u64, usize) {
    let cli = Cli::try_parse_from([
        "ctxbench",
        "replay",
        path.to_str().unwrap(),
        "--window",
        "200000",
    ])
    .unwrap();
    let Command::Replay(args) = cli.command else {
        panic!("expected the replay command")
    };
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let replays = replay::replay_file(&args).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let calls = replays.iter().map(|r| r.calls.len()).sum();
    drop(replays);
    (peak as u64, calls)
}

#[test]
fn replay_holds_about_one_copy_of_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    for canonical in [false, true] {
        let (small, small_len) = big_trace(dir.path(), 2, canonical);
        let (large, large_len) = big_trace(dir.path(), 8, canonical);
        let (small_peak, small_calls) = replay_peak(&small);
        let (large_peak, large_calls) = replay_peak(&large);
        assert!(small_calls > 0 && large_calls > 3 * small_calls);
        let slope = (large_peak as f64 - small_peak as f64) / (large_len - small_len) as f64;
        let kind = if canonical {
            "canonical"
        } else {
            "fixture-style"
        };
        eprintln!(
            "{kind}: {small_len} B file -> {small_peak} B peak, {large_len} B -> {large_peak} B; slope {slope:.2}"
        );
        assert!(
            slope < 1.5,
            "{kind}: peak heap grows {slope:.2} bytes per byte of trace file (file held beside the parsed trace?)"
        );
        assert!(
            slope > 0.5,
            "{kind}: slope {slope:.2}: the trace model is ~0.9 of the file, so the measurement is off"
        );
    }
}
