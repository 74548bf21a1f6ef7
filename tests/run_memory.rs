//! Peak memory of a whole run, `--resume`, `merge` and `gate` does not grow with the number of
//! units beyond a few bytes per unit.
//!
//! A counting global allocator records the peak of live heap bytes above what was live when each
//! step started. The same suite (offline providers, one small bundled trace, `replay` and
//! `needle` units, one unit in flight so the peak of a unit's own work is the same every time) is
//! run with `repeats = R` and `2R`, three times each (the smallest peak of each step: a late free
//! on another thread only adds to a peak): the extra peak bytes per extra unit is the slope. What does
//! not grow with the run (trace, price table, runtime, one unit's replay) cancels.
//!
//! Bounds, with what this test measured here (120 → 240 units; a journal line is ~1.8 KB) and
//! what the code before this change measured (every bound failed):
//! - the plan, bytes it keeps: ≤ 16 a unit, measured on its own at 120 → 12,120 units (0: the
//!   plan is the grid and units are built as the dispatcher pulls them; 210 when every unit was
//!   kept, 863 before that);
//! - executing the units (dispatch, journal, run.json's totals added up as each line is
//!   written, and the report's compact rows built from each line as it is written, so the end
//!   of the run does not read the journal again): ≤ the report's bound below (532: the rows the
//!   report keeps anyway; without the rows 0, ~76 KB at 120 and at 240 units; streaming the
//!   journal again after the last unit peaked at ~1.1-1.3 MB). A dispatcher that keeps each
//!   sample measures 7,363;
//! - `--resume` opening a finished run: ≤ 96 a unit (29: the finished ids, 8 bytes each in a
//!   hash set; was 7,671, the samples read whole);
//! - `merge` of the run with itself: ≤ 320 a unit (188: an index entry per unit, digest, sort
//!   key, line offset, id; was 15,575);
//! - `gate` of the run against itself: ≤ one journal line a unit (994: the compact rows and the
//!   per-metric observations the statistics need, for both runs; was 15,473);
//! - `report` of the run (every file): ≤ 640 a unit (376: the compact rows and the per-metric
//!   observations; linear, not bounded: docs/report.md says why).
//!
//! Units in flight, not units run: with several units in flight on the largest bundled trace,
//! the run's heap peak is the same at 4× the units, and the run leaves nothing live behind
//! (`a_runs_heap_is_bounded_by_its_units_in_flight`). Peak RSS of the whole `ctxbench run` at
//! 1,000 / 5,000 / 20,000 units is in benches/README.md ("Memory of a whole run").
//!
//! Bytes, not time: nothing here depends on speed. One test in this binary, so no other test
//! allocates while it measures.

#[path = "it/support/counting_alloc.rs"]
mod counting_alloc;
#[path = "it/support/mod.rs"]
mod support;

use clap::Parser;
use counting_alloc::{kept_by, peak_of};
use ctxbench::cli::Cli;
use ctxbench::runner::session::{self, ImportLoader, RunOptions};
use std::path::{Path, PathBuf};
use support::suite::SuiteBuilder;

const TRACE: &str = "claude-code/stop-hook-reflection-first-stop.jsonl";

fn suite_text(repeats: u32) -> String {
    SuiteBuilder::new("runmem")
        .suite_line(format!("repeats = {repeats}"))
        .suite_line("concurrency = 1")
        .dataset(TRACE)
        .deepagents(4000)
        .eval("replay", "")
        .eval("needle", "depths = [0.5]\npositions = [\"user\"]")
        .text()
}

/// Peaks of one run size (bytes above the start of each step; for the plan, the bytes it keeps
/// for the whole run), and its journal's size.
#[derive(Debug)]
struct Peaks {
    units: usize,
    plan: usize,
    run: usize,
    resume: usize,
    merge: usize,
    gate: usize,
    report: usize,
    journal_bytes: u64,
}

impl Peaks {
    /// Each step's smaller peak of two measurements of the same suite: a peak only grows
    /// when another thread frees late (timing, load), so the smaller one is the suite's.
    fn min(self, o: Peaks) -> Peaks {
        assert_eq!((self.units, self.journal_bytes), (o.units, o.journal_bytes));
        Peaks {
            plan: self.plan.min(o.plan),
            run: self.run.min(o.run),
            resume: self.resume.min(o.resume),
            merge: self.merge.min(o.merge),
            gate: self.gate.min(o.gate),
            report: self.report.min(o.report),
            ..self
        }
    }
}

/// [`measure`] `TRIES` times (in `dir/0`, `dir/1`, …), each step's smallest peak.
fn measure_min(dir: &Path, repeats: u32) -> Peaks {
    (0..TRIES)
        .map(|i| measure(&dir.join(i.to_string()), repeats))
        .reduce(Peaks::min)
        .unwrap()
}

/// Measurements of each size: under load a late free on another thread moved a single
/// measurement's run slope by up to ~2,000 bytes a unit; the smallest of three does not.
const TRIES: usize = 3;

fn cli(args: &[&str]) {
    let code = ctxbench::cli::run(Cli::parse_from(args)).unwrap();
    assert_eq!(code, std::process::ExitCode::SUCCESS, "{args:?}");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Bytes of a journal with each `latency_ms` counted as one digit: the one field whose width
/// depends on speed (a unit of 9 ms and one of 10 ms), so two runs of a suite compare equal.
fn journal_size(path: &Path) -> u64 {
    const KEY: &str = "\"latency_ms\":";
    let text = std::fs::read_to_string(path).unwrap();
    let extra_digits: usize = text
        .match_indices(KEY)
        .map(|(i, _)| {
            let digits = text[i + KEY.len()..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            digits.saturating_sub(1)
        })
        .sum();
    (text.len() - extra_digits) as u64
}

fn measure(dir: &Path, repeats: u32) -> Peaks {
    std::fs::create_dir_all(dir).unwrap();
    let suite = support::run::load(dir, &suite_text(repeats)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();

    // The plan (the trace loaded once, the grid; units are built as the dispatcher pulls them), then the run: dispatch every
    // unit, journal it, sum the totals into run.json.
    let (planned, plan) = kept_by(|| session::plan_run(&suite, &ImportLoader).unwrap());
    let router = ctxbench::cli::run::default_router(&planned.plan, &suite).unwrap();
    let prepared = session::open_run(&suite, &support::run::options(), planned).unwrap();
    let units = prepared.todo.len();
    let (outcome, run) = peak_of(|| support::run::execute(&rt, prepared, router));
    assert_eq!(outcome.failed_total, 0);
    assert_eq!(outcome.manifest.units.recorded, units as u64);
    let run_dir: PathBuf = outcome.run_dir.clone();
    drop(outcome);
    let journal_bytes = journal_size(&run_dir.join("samples.jsonl"));

    // `--resume` of the finished run: nothing left to do.
    let planned = session::plan_run(&suite, &ImportLoader).unwrap();
    let opts = RunOptions {
        resume: Some(run_dir.clone()),
        executor: "default".into(),
        ..RunOptions::default()
    };
    let (prepared, resume) = peak_of(|| session::open_run(&suite, &opts, planned).unwrap());
    assert!(prepared.todo.is_empty());
    assert_eq!(prepared.manifest.units.recorded, units as u64);
    drop(prepared);

    // `merge` of the run with itself (every unit twice, identical).
    let merged = dir.join("merged");
    let (m, merge) =
        peak_of(|| ctxbench::runner::merge::merge(&[run_dir.clone(), run_dir.clone()], &merged));
    assert_eq!(m.unwrap().manifest.units.recorded, units as u64);

    // `gate` of the run against itself.
    let junit = dir.join("gate.xml");
    let ((), gate) = peak_of(|| {
        cli(&[
            "ctxbench",
            "gate",
            s(&run_dir),
            "--baseline",
            s(&run_dir),
            "--rule",
            "tokens >= 0",
            "--junit",
            s(&junit),
        ])
    });
    // `report` of the run into another directory (every file, PNGs too).
    let out = dir.join("report");
    let ((), report) = peak_of(|| cli(&["ctxbench", "report", s(&run_dir), "-o", s(&out)]));
    assert!(out.join("report.html").is_file());
    rt.shutdown_background();
    Peaks {
        units,
        plan,
        run,
        resume,
        merge,
        gate,
        report,
        journal_bytes,
    }
}

#[test]
fn a_runs_peak_memory_does_not_grow_with_its_units() {
    // One rayon thread runs every offline unit (one unit in flight): which of two threads runs
    // a unit moved a transient peak by ~50 KB between measurements (the slope by ±400 bytes a
    // unit); on one thread the measurement is the same every time.
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .expect("the first use of rayon's pool in this binary");
    let tmp = tempfile::tempdir().unwrap();
    // Warm-up with the larger suite: one-time allocations (lazy statics, the offline agent's
    // tables) and the process-wide caches of what the needles ask (compiled phrase matchers,
    // key phrases, `evals::offline_agent::recall::MATCHERS_KEPT` each: bounded by their caps,
    // not by the units) are not a slope.
    measure(&tmp.path().join("warm"), 120);
    the_plan_keeps_no_bytes_per_unit(tmp.path());
    a_runs_heap_is_bounded_by_its_units_in_flight(tmp.path());
    let small = measure_min(&tmp.path().join("small"), 60);
    let big = measure_min(&tmp.path().join("big"), 120);
    assert_eq!(big.units, 2 * small.units);
    let extra = (big.units - small.units) as f64;
    let slope = |a: usize, b: usize| (b as f64 - a as f64) / extra;
    let line = (big.journal_bytes - small.journal_bytes) as f64 / extra;
    let report = slope(small.report, big.report);
    let (plan, run, resume, merge, gate) = (
        slope(small.plan, big.plan),
        slope(small.run, big.run),
        slope(small.resume, big.resume),
        slope(small.merge, big.merge),
        slope(small.gate, big.gate),
    );
    eprintln!(
        "extra peak bytes per extra unit: plan {plan:.0}, run {run:.0}, resume {resume:.0}, merge {merge:.0}, \
         gate {gate:.0}, report {report:.0} (a journal line: {line:.0} bytes)\nsmall {small:?}\nbig {big:?}"
    );
    // The plan's bound is checked on a larger grid (`the_plan_keeps_no_bytes_per_unit` above): at
    // 120 extra units, a few KB freed by another thread moves this slope by ±124.
    // The run keeps the report's compact rows as it writes the journal (what `report`
    // keeps too), nothing else per unit.
    assert!(
        run <= REPORT_BYTES_A_UNIT,
        "a run's peak grows {run:.0} bytes a unit (bound {REPORT_BYTES_A_UNIT})"
    );
    assert!(
        resume <= 96.0,
        "--resume's peak grows {resume:.0} bytes a unit"
    );
    assert!(merge <= 320.0, "merge's peak grows {merge:.0} bytes a unit");
    assert!(
        gate <= line,
        "gate's peak grows {gate:.0} bytes a unit (a journal line is {line:.0})"
    );
    assert!(
        report <= REPORT_BYTES_A_UNIT,
        "report's peak grows {report:.0} bytes a unit (bound {REPORT_BYTES_A_UNIT})"
    );
}

/// What `report` may keep per unit: its compact row and the per-metric observations the
/// statistics pair and sum in key order (docs/report.md, "Reports of big runs"; measured 376
/// here). A reader that kept the samples whole would keep more than a journal line a unit.
const REPORT_BYTES_A_UNIT: f64 = 640.0;

/// Bytes the plan keeps, for a suite of `repeats` repeats.
fn plan_bytes(dir: &Path, repeats: u32) -> (usize, usize) {
    std::fs::create_dir_all(dir).unwrap();
    let suite = support::run::load(dir, &suite_text(repeats)).unwrap();
    let (planned, kept) = kept_by(|| session::plan_run(&suite, &ImportLoader).unwrap());
    (planned.plan.len(), kept)
}

/// The plan's slope on a large grid (part of the one test: the counter is process-wide, so two
/// tests running at once would count each other's bytes).
fn the_plan_keeps_no_bytes_per_unit(tmp: &Path) {
    plan_bytes(&tmp.join("plan-warm"), 2);
    let (small_units, small) = plan_bytes(&tmp.join("plan-small"), 60);
    let (big_units, big) = plan_bytes(&tmp.join("plan-big"), 6060);
    assert_eq!(big_units, 101 * small_units);
    let slope = (big as f64 - small as f64) / (big_units - small_units) as f64;
    eprintln!("plan: {small} bytes ({small_units} units), {big} bytes ({big_units} units): {slope:.2} a unit");
    assert!(slope <= 16.0, "the plan grows {slope:.0} bytes a unit");
}

/// Peak live heap of a run of the largest bundled trace (2 MB), `concurrency = 4` on 2 workers,
/// each unit holding its replay or planted copy; and the live bytes the run leaves behind once
/// its outcome is dropped. Returns (units, peak, kept).
fn heavy_run(dir: &Path, repeats: u32) -> (usize, usize, usize) {
    std::fs::create_dir_all(dir).unwrap();
    let text = SuiteBuilder::new("inflight")
        .suite_line(format!("repeats = {repeats}"))
        .suite_line("concurrency = 4")
        .dataset("mini-swe-agent/psf__requests-1142.traj.json")
        .deepagents(30000)
        .eval("replay", "")
        .eval(
            "needle",
            "depths = [0.25, 0.75]\npositions = [\"user\", \"tool\"]",
        )
        .text();
    let suite = support::run::load(dir, &text).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (prepared, router) = support::run::prepare(&suite, &support::run::options());
    let units = prepared.todo.len();
    let (((), peak), kept) = kept_by(|| {
        peak_of(|| {
            let outcome = support::run::execute(&rt, prepared, router);
            assert_eq!(outcome.failed_total, 0);
            assert_eq!(outcome.manifest.units.recorded, units as u64);
        })
    });
    rt.shutdown_background();
    (units, peak, kept)
}

/// While a run progresses, its heap is bounded by the units in flight, not by the units it has
/// run: at 4× the units (same trace, same concurrency; 20 → 80 units, so the smaller run has
/// four slow replay units and can reach four in flight too — with 10 units it had two, and its
/// peak fell short of what 40 units reach 1 time in 4) the peak stays within a quarter of the
/// smaller run's, and neither run leaves more than 1 MiB live once its outcome is dropped. A
/// dispatcher that starts units past `concurrency`, or a unit whose conversation outlives it,
/// fails this. Part of the one test (the counter is process-wide).
fn a_runs_heap_is_bounded_by_its_units_in_flight(tmp: &Path) {
    let heavy = |name: &str, repeats| {
        (0..TRIES)
            .map(|i| heavy_run(&tmp.join(format!("{name}-{i}")), repeats))
            .reduce(|a, b| (a.0, a.1.min(b.1), a.2.max(b.2)))
            .unwrap()
    };
    let (small_units, small, small_kept) = heavy("inflight-small", 4);
    let (big_units, big, big_kept) = heavy("inflight-big", 16);
    assert_eq!(big_units, 4 * small_units);
    eprintln!(
        "heap peak of the run: {} KiB at {small_units} units, {} KiB at {big_units} units; \
         left live: {} KiB, {} KiB",
        small >> 10,
        big >> 10,
        small_kept >> 10,
        big_kept >> 10
    );
    assert!(
        big <= small + small / 4,
        "the run's heap peak grows with its units: {} KiB at {small_units}, {} KiB at {big_units}",
        small >> 10,
        big >> 10
    );
    for kept in [small_kept, big_kept] {
        assert!(
            kept <= 1 << 20,
            "a finished run left {} KiB live",
            kept >> 10
        );
    }
}
