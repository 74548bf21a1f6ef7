//! Peak memory of `ctxbench report` and of `ctxbench gate` on their spilling path
//! (`--spill-above`, docs/report.md "Reports of big runs") does not grow with the number of
//! samples; on the in-memory path it does (which shows this measurement sees a report or a gate
//! that keeps its rows).
//!
//! A counting global allocator records the peak of live heap bytes above what was live when
//! the report started (tests/run_memory.rs measures the same way). The run: N and 4N samples,
//! copies of one set of tasks (3 variants × 6 traces × 2 evals × 4 samples, each with scores,
//! params, compactions, a timeline, an evidence text) as further repeats, as
//! benches/report_big/replicate.py makes big runs. Each size is reported three times and the
//! smallest peak kept (a late free on another thread only adds to a peak).
//!
//! Measured here (3,000 → 12,000 samples): spilled, 4.9 MB → 4.6 MB (no growth: the peak is
//! the merges' read buffers and a run being sorted; bound: 512 KiB more for 9,000 more
//! samples); in memory, 3.2 MB → 8.4 MB (~580 bytes a sample). The gate of a run against
//! itself: spilled, 4.5 MB → 4.6 MB; in memory, 4.1 MB → 12.1 MB (~890 bytes a sample: the rows
//! of one run, then the observations, per-role ones too, of both). Bytes, not time: nothing here
//! depends on speed. The tests of this binary measure one at a time ([`ONE_AT_A_TIME`]), so no
//! other test allocates while one measures.

#[path = "it/support/counting_alloc.rs"]
mod counting_alloc;

use clap::Parser;
use counting_alloc::peak_of;
use ctxbench::cli::Cli;
use ctxbench::record::{RunDir, RunInfo, Sample, TimelinePoint};
use std::path::Path;

/// Held by each test while it measures.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Most the spilled report's peak may grow from N to 4N samples.
const SPILLED_GROWTH: usize = 512 * 1024;
const N: u32 = 3_000;
const TRIES: usize = 3;

/// The tasks every copy repeats.
fn tasks() -> Vec<Sample> {
    let mut out = Vec::new();
    for v in ["base", "mid", "aggr"] {
        for t in 0..6 {
            for (e, score) in [("needle", "recall"), ("drift", "score")] {
                for k in 0..4 {
                    let i = out.len();
                    let mut s = Sample::builder()
                        .unit_id(format!("{v}/t{t}/{e}/{k}"))
                        .variant(v)
                        .trace(format!("trace-{t}"))
                        .eval(e)
                        .sample(format!("depth={k}"))
                        .param("depth", f64::from(k) / 4.0)
                        .score(score, f64::from((i % 5) as u32) / 4.0)
                        .passed(i % 3 != 0)
                        .evidence(serde_json::json!({
                            "answer": "x".repeat(600),
                            "window": {"tokens": 20000, "source": {"from": "config"}},
                        }))
                        .build();
                    s.tokens.agent.input = 1000 + i as u64;
                    s.tokens.agent.output = 50;
                    s.cost_usd.agent = Some(0.001 * i as f64);
                    s.compactions.insert("evicted".into(), (i % 4) as u64);
                    s.timeline = (0..8)
                        .map(|p| TimelinePoint {
                            trace_index: p,
                            tokens: 100 * (p as u64 + 1),
                            reference_tokens: Some(120 * (p as u64 + 1)),
                            events: vec![],
                            details: vec![],
                        })
                        .collect();
                    out.push(s);
                }
            }
        }
    }
    out
}

/// A run of `n` samples: the tasks copied as further repeats.
fn write_run(dir: &Path, n: u32) -> RunDir {
    std::fs::create_dir_all(dir).unwrap();
    let run = RunDir::new(dir);
    let mut info = RunInfo::new("mem");
    info.variants = vec!["base".into(), "mid".into(), "aggr".into()];
    std::fs::write(run.run_json(), serde_json::to_string(&info).unwrap()).unwrap();
    let tasks = tasks();
    let samples: Vec<Sample> = (0..n)
        .map(|i| {
            let mut s = tasks[i as usize % tasks.len()].clone();
            let copy = i / tasks.len() as u32;
            s.unit_id = format!("{}-r{copy}", s.unit_id);
            s.repeat = copy;
            s
        })
        .collect();
    run.write_samples(&samples).unwrap();
    run
}

/// The smallest peak of the CLI command `args` (which must succeed), over [`TRIES`].
fn cli_peak(args: &[String]) -> usize {
    (0..TRIES)
        .map(|_| {
            let ((), peak) = peak_of(|| {
                let code = ctxbench::cli::run(Cli::parse_from(args)).unwrap();
                assert_eq!(code, std::process::ExitCode::SUCCESS, "{args:?}");
            });
            peak
        })
        .min()
        .unwrap()
}

/// Peaks of the command `args(run, tmp, extra)` on runs of N and 4N samples, spilled (runs of
/// 64 rows: both sizes merge more runs than fit at once, their read buffers the same, as a big
/// run's do) and in memory. The spilled peak may grow at most [`SPILLED_GROWTH`]; the
/// in-memory path keeps every row, so its peak grows past twice that — which shows the bound
/// would catch a spilled path that kept its rows.
fn spilled_peak_does_not_grow(what: &str, args: impl Fn(&str, &Path, &[&str]) -> Vec<String>) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let tmp = tempfile::tempdir().unwrap();
    let small = write_run(&tmp.path().join("small"), N);
    let big = write_run(&tmp.path().join("big"), 4 * N);
    let peak = |run: &RunDir, extra: &[&str]| {
        let dir = run.samples_jsonl();
        let dir = dir.parent().unwrap().to_str().unwrap();
        cli_peak(&args(dir, tmp.path(), extra))
    };
    let spill = ["--spill-above", "0", "--spill-run-rows", "64"];
    let spilled = (peak(&small, &spill), peak(&big, &spill));
    let in_memory = (peak(&small, &[]), peak(&big, &[]));
    let growth = |(a, b): (usize, usize)| b.saturating_sub(a);
    let msg = format!(
        "{what} peaks at {N} and {} samples: spilled {spilled:?} (grew {}), in memory \
         {in_memory:?} (grew {})",
        4 * N,
        growth(spilled),
        growth(in_memory)
    );
    assert!(growth(spilled) <= SPILLED_GROWTH, "spilled: {msg}");
    assert!(growth(in_memory) > 2 * SPILLED_GROWTH, "in memory: {msg}");
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

#[test]
fn the_spilled_reports_peak_does_not_grow_with_samples() {
    spilled_peak_does_not_grow("report", |run, tmp, extra| {
        let out = tmp.join("out");
        let mut args = strings(&["ctxbench", "report", run, "-o"]);
        args.extend([out.to_str().unwrap().to_string(), "--no-png".into()]);
        args.extend(strings(extra));
        args
    });
}

/// The gate's figures from a run spilled to disk: its peak does not grow with the samples (the
/// gate in memory holds every row, then every observation of both runs). The run is gated
/// against itself, on means, deltas and a per-role delta: every kind of figure the rules read.
#[test]
fn the_spilled_gates_peak_does_not_grow_with_samples() {
    spilled_peak_does_not_grow("gate", |run, tmp, extra| {
        let junit = tmp.join("gate.xml");
        let mut args = strings(&["ctxbench", "gate", run, "--baseline", run, "--junit"]);
        args.push(junit.to_str().unwrap().to_string());
        for rule in [
            "needle.recall >= 0",
            "drift.score.delta >= -1",
            "tokens.agent.delta_pct <= 5",
        ] {
            args.extend(strings(&["--rule", rule]));
        }
        args.extend(strings(extra));
        args
    });
}
