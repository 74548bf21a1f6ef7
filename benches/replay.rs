//! Criterion benches of the replay engine: the golden `synthetic-s7` fixture and the longest
//! bundled real trace under the `deepagents`, `seed-layered` and `none` presets, and a linearity
//! bench (a 10× longer trace of the same shape must take ≤ 11× the time).
//!
//! ```sh
//! cargo bench --bench replay                 # everything (~2 min on 2 cores)
//! cargo bench --bench replay -- synthetic-s7 # one group
//! ```
//!
//! Only the engine is timed (`engine::replay_shared`): traces, fixtures and configurations are
//! loaded, and the messages put behind `Arc`s, before.
//! Each replay uses an in-memory offload store. Before a case is timed it is replayed once and
//! checked (no error, invariants hold, the expected number of model calls), so a bench can never
//! time a replay that silently did nothing.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxbench::engine::{
    self, fixture, EngineConfig, FixedSummarizer, OfflineSummarizer, Replay, ReplayEnv,
    ResolvedConfig, Summarizer,
};
use ctxbench::trace::{Message, Trace};

#[path = "common/synth.rs"]
mod synth;

/// The presets every trace is benched under (`none` = the no-compression reference).
const PRESETS: [&str; 3] = ["deepagents", "seed-layered", "none"];

/// Window forced on the real trace (see [`longest_real_case`]).
const REAL_TRACE_WINDOW: u64 = 20_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A trace plus everything a replay needs besides the preset.
struct Case {
    name: String,
    trace: Trace,
    /// The trace's messages behind `Arc`s, made once before timing (as the peer builds its
    /// message list before its clock starts), so a timed replay does not copy the trace.
    messages: Vec<Arc<Message>>,
    base: EngineConfig,
    system_prompt: Option<String>,
    tools: Option<Vec<serde_json::Value>>,
    summarizer: Box<dyn Summarizer>,
}

impl Case {
    fn config(&self, preset: &str) -> Result<ResolvedConfig, String> {
        let mut c = self.base.clone();
        c.preset = Some(preset.to_string());
        c.resolve(self.trace.meta.window)
            .map_err(|e| format!("{}: preset {preset}: {e}", self.name))
    }

    fn replay(&self, config: &ResolvedConfig) -> Replay {
        let mut env = ReplayEnv::new(self.summarizer.as_ref());
        env.system_prompt = self.system_prompt.clone();
        env.tools = self.tools.clone();
        let t = &self.trace;
        match engine::replay_shared(&t.meta, &t.markers, &self.messages, config, &env) {
            Ok(r) => r,
            Err(e) => panic!("{}: replay failed: {e}", self.name),
        }
    }

    /// Replays once and checks the replay did the whole job.
    fn checked_replay(&self, config: &ResolvedConfig) -> Replay {
        let r = self.replay(config);
        let calls = self.trace.model_call_indexes().count();
        assert!(
            r.stopped.is_some() || r.calls.len() == calls,
            "{} / {}: {} model calls replayed, trace has {calls}",
            self.name,
            config.preset,
            r.calls.len()
        );
        assert!(
            r.invariants.violations.is_empty(),
            "{} / {}: invariant violations: {:?}",
            self.name,
            config.preset,
            r.invariants.violations
        );
        r
    }
}

/// `trace`'s messages behind `Arc`s, the form `engine::replay_shared` takes.
fn shared(trace: &Trace) -> Vec<Arc<Message>> {
    trace.messages.iter().cloned().map(Arc::new).collect()
}

/// The golden fixture with its own settings (window, counter, system prompt, tool schemas,
/// fixed summary), exactly what `ctxbench replay --fixture` and the deepagents peer run.
fn fixture_case(dir: &Path) -> Case {
    let fx = fixture::load(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    Case {
        name: dir.file_name().unwrap().to_string_lossy().into_owned(),
        messages: shared(&fx.trace),
        trace: fx.trace,
        base: fx.config,
        system_prompt: Some(fx.system_prompt),
        tools: Some(fx.tools),
        summarizer: Box::new(FixedSummarizer(fx.summary_text)),
    }
}

/// The longest bundled real trace by content characters: mini-swe-agent
/// `psf__requests-1142` (144 messages, ~1 MB of content), imported with the mini-swe importer.
/// Its views stay far below a 200,000-token window, so the window is overridden to 20,000
/// tokens (the evals' way to force compaction): every preset then has real work to do.
/// `Err` (reported as a skipped group) while the importer is unavailable.
fn longest_real_case() -> Result<Case, String> {
    let path = root().join("datasets/mini-swe-agent/psf__requests-1142.traj.json");
    let mut traces =
        ctxbench::trace::import::import_file(&path, None).map_err(|e| e.to_string())?;
    if traces.is_empty() {
        return Err(format!("{}: no trace imported", path.display()));
    }
    let trace = traces.remove(0);
    Ok(Case {
        name: "mini-swe-requests-1142".into(),
        messages: shared(&trace),
        trace,
        base: EngineConfig {
            window: Some(REAL_TRACE_WINDOW),
            ..EngineConfig::default()
        },
        system_prompt: None,
        tools: None,
        summarizer: Box::new(OfflineSummarizer),
    })
}

/// Plots are off: criterion's plotters backend needs a system font, and the machines this
/// project runs on have none (it panics with `FontUnavailable`). Estimates are still written to
/// `target/criterion/**/estimates.json`.
fn criterion_config() -> Criterion {
    Criterion::default()
        .without_plots()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
}

fn bench_case(c: &mut Criterion, case: &Case) {
    let mut group = c.benchmark_group(format!("replay/{}", case.name));
    group.throughput(Throughput::Elements(case.trace.messages.len() as u64));
    for preset in PRESETS {
        // A preset the engine does not have yet is reported, not silently dropped.
        let config = match case.config(preset) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("replay/{}/{preset}: SKIPPED: {e}", case.name);
                continue;
            }
        };
        let r = case.checked_replay(&config);
        eprintln!(
            "replay/{}/{preset}: {} calls, {} events, {} of {} reference input tokens sent",
            case.name,
            r.calls.len(),
            r.events.len(),
            r.input_tokens(),
            r.reference_tokens()
        );
        group.bench_with_input(BenchmarkId::from_parameter(preset), &config, |b, cfg| {
            b.iter(|| black_box(case.replay(cfg)))
        });
    }
    group.finish();
}

/// The golden fixture benched: `synthetic-s7`, or the folder in `CTXBENCH_BENCH_FIXTURE`
/// (`benches/peers/compare.sh --in-process` sets it; then only that fixture is benched).
fn replay_fixture(c: &mut Criterion) {
    let dir = std::env::var_os("CTXBENCH_BENCH_FIXTURE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("testdata/deepagents-golden/synthetic-s7"));
    let case = fixture_case(&dir);
    // Same work as the golden fixture (and the deepagents peer): as many events as events.json.
    let r = case.checked_replay(&case.config("deepagents").unwrap());
    let got = fixture::to_fixture_json(&r)["events"]
        .as_array()
        .map_or(0, Vec::len);
    let events_path = dir.join("events.json");
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&events_path)
            .unwrap_or_else(|e| panic!("{}: {e}", events_path.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", events_path.display()));
    assert_eq!(
        Some(got),
        want.as_array().map(Vec::len),
        "{}: deepagents replay events vs events.json",
        case.name
    );
    bench_case(c, &case);
    record_cpu_time(&case, "deepagents");
}

/// CPU time of the `deepagents` replay of a fixture, median and best of 15 runs, printed and
/// written to `<target>/criterion/cpu/<fixture>-deepagents.json` for `compare.sh --in-process`.
/// Unlike criterion's wall-clock samples, CPU time hardly changes on a loaded shared machine.
fn record_cpu_time(case: &Case, preset: &str) {
    let config = case.config(preset).unwrap();
    let mut runs: Vec<Duration> = (0..15)
        .map(|_| {
            let c0 = process_cpu_time();
            black_box(case.replay(&config));
            process_cpu_time().saturating_sub(c0)
        })
        .collect();
    runs.sort();
    let (median, min) = (runs[runs.len() / 2], runs[0]);
    eprintln!(
        "replay/{}/{preset}: CPU time median {:.3} ms, min {:.3} ms (15 runs)",
        case.name,
        median.as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3
    );
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    let dir = target.join("criterion/cpu");
    let path = dir.join(format!("{}-{preset}.json", case.name));
    let record = serde_json::json!({
        "fixture": case.name,
        "preset": preset,
        "runs": runs.len(),
        "cpu_s_median": median.as_secs_f64(),
        "cpu_s_min": min.as_secs_f64(),
    });
    if let Err(e) =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, format!("{record}\n")))
    {
        panic!("{}: {e}", path.display());
    }
}

/// Set by `compare.sh --in-process`: bench only that fixture.
fn only_fixture() -> bool {
    std::env::var_os("CTXBENCH_BENCH_FIXTURE").is_some()
}

fn replay_longest_real(c: &mut Criterion) {
    if only_fixture() {
        return;
    }
    match longest_real_case() {
        Ok(case) => bench_case(c, &case),
        Err(e) => eprintln!("replay/longest-real: SKIPPED, the trace cannot be imported: {e}"),
    }
}

/// Linearity: the generator's ~180-message trace (window 60,000 tokens) against the same turns
/// repeated 10× with the window scaled 10× (600,000), under the `deepagents` preset.
///
/// Scaling the window keeps the compaction behaviour comparable — the same number of
/// summarizations (checked), each over 10× as many messages, and 10× larger views at every call.
/// That is what makes the bench meaningful: with a fixed window the views stay bounded, so even
/// an engine that recounts the whole view at every call would look linear; here any per-call
/// work proportional to the view size shows up as ~100× instead of ~10×.
fn linearity(c: &mut Criterion) {
    if only_fixture() {
        return;
    }
    const TIMES: usize = 10;
    const WINDOW: u64 = 60_000;
    let short = synth::generate(&synth::SynthSpec::default());
    let long = synth::repeat(&short, TIMES);
    let case = |name: &str, trace: Trace, window: u64| Case {
        name: name.into(),
        messages: shared(&trace),
        trace,
        base: EngineConfig {
            preset: Some("deepagents".into()),
            window: Some(window),
            ..EngineConfig::default()
        },
        system_prompt: None,
        tools: None,
        summarizer: Box::new(OfflineSummarizer),
    };
    let cases = [
        case("x1", short, WINDOW),
        case(&format!("x{TIMES}"), long, WINDOW * TIMES as u64),
    ];
    let configs: Vec<ResolvedConfig> = cases
        .iter()
        .map(|k| k.config("deepagents").unwrap())
        .collect();

    let summaries: Vec<u64> = cases
        .iter()
        .zip(&configs)
        .map(|(k, cfg)| {
            let r = k.checked_replay(cfg);
            r.event_counts().get("summarized").copied().unwrap_or(0)
        })
        .collect();
    assert!(
        summaries[0] >= 3,
        "linearity: the short trace summarizes {} times at window {WINDOW}; pick a smaller window",
        summaries[0]
    );
    let per = summaries[1] as f64 / summaries[0] as f64;
    assert!(
        (0.7..=1.3).contains(&per),
        "linearity: compaction behaviour not comparable: {} vs {} summarizations",
        summaries[0],
        summaries[1]
    );

    let mut group = c.benchmark_group("replay/linearity");
    for (k, cfg) in cases.iter().zip(&configs) {
        group.throughput(Throughput::Elements(k.trace.messages.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(&k.name), cfg, |b, cfg| {
            b.iter(|| black_box(k.replay(cfg)))
        });
    }
    group.finish();

    // The gate compares process CPU time, best of 7 runs each: on a shared, loaded machine a
    // long run is far more likely to be preempted than a short one, which biases wall-time
    // ratios upwards; CPU time does not see the waiting. Wall times are printed too.
    let best = |k: &Case, cfg: &ResolvedConfig| {
        let mut cpu = Duration::MAX;
        let mut wall = Duration::MAX;
        for _ in 0..7 {
            let (c0, t0) = (process_cpu_time(), Instant::now());
            black_box(k.replay(cfg));
            wall = wall.min(t0.elapsed());
            cpu = cpu.min(process_cpu_time().saturating_sub(c0));
        }
        (cpu, wall)
    };
    let ((cpu1, wall1), (cpu10, wall10)) =
        (best(&cases[0], &configs[0]), best(&cases[1], &configs[1]));
    let ratio = cpu10.as_secs_f64() / cpu1.as_secs_f64();
    eprintln!(
        "linearity: x1 {:.2} ms CPU / {:.2} ms wall ({} msgs, window {}, {} summaries), \
         x{TIMES} {:.2} ms CPU / {:.2} ms wall ({} msgs, window {}, {} summaries): \
         {ratio:.2}x CPU, {:.2}x wall (limit {}x)",
        cpu1.as_secs_f64() * 1e3,
        wall1.as_secs_f64() * 1e3,
        cases[0].trace.messages.len(),
        configs[0].window,
        summaries[0],
        cpu10.as_secs_f64() * 1e3,
        wall10.as_secs_f64() * 1e3,
        cases[1].trace.messages.len(),
        configs[1].window,
        summaries[1],
        wall10.as_secs_f64() / wall1.as_secs_f64(),
        TIMES + 1
    );
    // Timing limits mean something for optimised code only (`cargo bench`); an unoptimised
    // `cargo test --benches` run reports the ratio but does not fail on it.
    if cfg!(debug_assertions) {
        eprintln!("linearity: limit not enforced in an unoptimised build");
    } else {
        assert!(
            ratio <= (TIMES + 1) as f64,
            "linearity: a {TIMES}x longer trace took {ratio:.2}x the CPU time (limit {}x)",
            TIMES + 1
        );
    }
}

/// CPU time of this process (all threads), nanosecond resolution.
fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` only writes the `timespec` we pass, which lives on our stack;
    // CLOCK_PROCESS_CPUTIME_ID is supported on every platform libc defines it for.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = replay_fixture, replay_longest_real, linearity
}
criterion_main!(benches);
