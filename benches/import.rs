//! Import throughput (MB/s) on the largest bundled dataset file (τ-bench gpt-4o-airline.json,
//! 4.1 MB, 200 runs), on the largest mini-swe-agent file, and canonical JSONL read/write of the
//! result; canonical read also of the golden `synthetic-s7` agent trace (1.9 MB, long tool
//! outputs) written as canonical JSONL. Run: `cargo bench --bench import`.
//!
//! Canonical read is also shown against parsing every line into a `serde_json::Value` (what the
//! reader did before its typed fast path, and still does for unusual lines), and after the
//! criterion samples its MB/s is printed on **thread CPU time** (median of 15 reads): on a shared,
//! loaded machine criterion's wall times mostly measure waiting for a core.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ctxbench::trace::import;
use ctxbench::trace::import::{import_bytes, FileContent};
use ctxbench::trace::io;
use std::hint::black_box;
use std::path::PathBuf;

fn bench(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets");
    let mut g = c.benchmark_group("import");
    g.sample_size(20);
    for rel in [
        "tau-bench/gpt-4o-airline.json",
        "mini-swe-agent/psf__requests-1142.traj.json",
    ] {
        let bytes = std::fs::read(root.join(rel)).expect("bundled dataset file");
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(rel, |b| {
            b.iter(
                || match import_bytes(black_box(&bytes), "bench", None, None) {
                    Ok(FileContent::Traces(t)) => t,
                    other => panic!("bench input did not import: {other:?}"),
                },
            )
        });
    }
    let traces = match import_bytes(
        &std::fs::read(root.join("tau-bench/gpt-4o-airline.json")).expect("dataset"),
        "bench",
        None,
        None,
    ) {
        Ok(FileContent::Traces(t)) => t,
        other => panic!("bench input did not import: {other:?}"),
    };
    let mut canonical = Vec::new();
    io::write_traces(&mut canonical, &traces).expect("write to memory");
    g.throughput(Throughput::Bytes(canonical.len() as u64));
    g.bench_function("canonical read (tau-bench airline)", |b| {
        b.iter(|| io::read_traces_from(black_box(&canonical[..]), "bench").expect("reads back"))
    });
    g.bench_function("canonical lines as serde_json::Value (reference)", |b| {
        b.iter(|| {
            black_box(&canonical[..])
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice::<serde_json::Value>(l).expect("JSON"))
                .collect::<Vec<_>>()
        })
    });
    g.bench_function("canonical write (tau-bench airline)", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(canonical.len());
            io::write_traces(&mut out, black_box(&traces)).expect("write to memory");
            out
        })
    });
    let golden_path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/deepagents-golden/synthetic-s7/trace.jsonl");
    let golden_len = std::fs::metadata(&golden_path).expect("golden trace").len();
    g.throughput(Throughput::Bytes(golden_len));
    g.bench_function(
        "golden read (synthetic-s7 trace.jsonl, as `replay TRACE`)",
        |b| b.iter(|| import::import_file(black_box(&golden_path), None).expect("golden trace")),
    );
    let golden = import::import_file(&golden_path, None)
        .expect("golden synthetic-s7 trace")
        .remove(0);
    let mut golden_canonical = Vec::new();
    io::write_traces(&mut golden_canonical, std::slice::from_ref(&golden)).expect("write");
    g.throughput(Throughput::Bytes(golden_canonical.len() as u64));
    g.bench_function("canonical read (golden synthetic-s7)", |b| {
        b.iter(|| {
            io::read_traces_from(black_box(&golden_canonical[..]), "bench").expect("reads back")
        })
    });
    g.finish();
    let mut cpu: Vec<f64> = (0..15)
        .map(|_| {
            let t0 = thread_cpu_s();
            let t = import::import_file(black_box(&golden_path), None).expect("golden trace");
            let dt = thread_cpu_s() - t0;
            drop(black_box(t));
            dt
        })
        .collect();
    cpu.sort_by(f64::total_cmp);
    eprintln!(
        "golden read (synthetic-s7 trace.jsonl, {golden_len} bytes, from the page cache): {:.0} MB/s on thread CPU time (median of 15: {:.3} ms)",
        golden_len as f64 / cpu[7] / 1e6,
        cpu[7] * 1e3
    );
    for (name, bytes) in [
        ("tau-bench airline", &canonical),
        ("golden synthetic-s7", &golden_canonical),
    ] {
        let mut cpu: Vec<f64> = (0..15)
            .map(|_| {
                let t0 = thread_cpu_s();
                let t = io::read_traces_from(black_box(&bytes[..]), "bench").expect("reads back");
                let dt = thread_cpu_s() - t0;
                drop(black_box(t));
                dt
            })
            .collect();
        cpu.sort_by(f64::total_cmp);
        eprintln!(
            "canonical read ({name}, {} bytes): {:.0} MB/s on thread CPU time (median of 15: {:.3} ms)",
            bytes.len(),
            bytes.len() as f64 / cpu[7] / 1e6,
            cpu[7] * 1e3
        );
    }
}

/// This thread's CPU time in seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

// No plots: criterion's plotters backend panics when no system font is installed (as here).
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
