//! Every bundled trace through every preset, at the trace's own window and at a small window
//! that forces every layer to act: no error, no panic, every invariant holds, every call is
//! replayed (unless a layer stopped the replay and said why), and the per-call numbers are
//! consistent with the no-compression reference.

use ctxbench::engine::{self, presets, EngineConfig, OfflineSummarizer, ReplayEnv};
use ctxbench::trace::import::import_paths;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[test]
fn every_bundled_trace_replays_under_every_preset() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets");
    let imported = import_paths(&[root], None, false).unwrap();
    assert!(imported.traces.len() >= 250, "{}", imported.traces.len());
    let env = ReplayEnv::new(&OfflineSummarizer);
    let mut acted: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for preset in presets::NAMES {
        for window in [None, Some(12_000u64)] {
            for trace in &imported.traces {
                let config = EngineConfig {
                    preset: Some(preset.to_string()),
                    window,
                    ..Default::default()
                }
                .resolve(trace.meta.window)
                .unwrap_or_else(|e| panic!("{preset}: {e}"));
                let who = format!("{} / {preset} / window {}", trace.meta.id, config.window);
                let r = engine::replay(trace, &config, &env)
                    .unwrap_or_else(|e| panic!("{who}: replay failed: {e}"));
                assert!(
                    r.invariants.passed(),
                    "{who}: {:?}",
                    r.invariants.violations
                );
                let calls = trace.model_call_indexes().count();
                match &r.stopped {
                    None => assert_eq!(r.calls.len(), calls, "{who}"),
                    Some(s) => {
                        assert_eq!(s.trace_index, r.calls.last().unwrap().trace_index, "{who}");
                        assert!(!s.reason.is_empty());
                    }
                }
                assert_eq!(r.invariants.calls_checked, r.calls.len() as u64, "{who}");
                for c in &r.calls {
                    let over = c.events.iter().any(|&k| r.events[k].kind() == "overflow");
                    assert!(
                        c.input_tokens <= r.window || over,
                        "{who}: call {}",
                        c.trace_index
                    );
                    assert!(c.cached_tokens <= c.input_tokens, "{who}");
                    if *preset == "none" {
                        assert_eq!(c.input_tokens, c.reference_tokens, "{who}");
                    }
                    for &k in &c.events {
                        assert_eq!(r.events[k].call_index, Some(c.trace_index), "{who}");
                    }
                }
                for e in &r.events {
                    if e.kind() != "overflow" && e.kind() != "eviction_skipped" {
                        *acted.entry((preset, e.kind())).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    // The small window makes each preset's own layers act somewhere in the datasets.
    for (preset, kind) in [
        ("deepagents", "summarized"),
        ("seed-layered", "cleared"),
        ("seed-layered", "summarized"),
        ("langchain", "summarized"),
        ("digitorn", "summarized"),
        ("digitorn-truncate", "truncated"),
        ("core-agent", "summarized"),
        ("turn-trim", "trimmed"),
    ] {
        assert!(
            acted.get(&(preset, kind)).copied().unwrap_or(0) > 0,
            "{preset} never produced `{kind}`: {acted:?}"
        );
    }
    assert!(!acted.keys().any(|(p, _)| *p == "none"), "{acted:?}");
}

/// `trace` repeated `k` times, tool-call ids renamed so every copy pairs with itself.
fn repeated(trace: &ctxbench::trace::Trace, k: usize) -> ctxbench::trace::Trace {
    let mut long = trace.clone();
    long.messages.clear();
    for copy in 0..k {
        for m in &trace.messages {
            let mut m = m.clone();
            if let Some(id) = &mut m.tool_call_id {
                *id = format!("{id}_{copy}");
            }
            for c in &mut m.tool_calls {
                c.id = format!("{}_{copy}", c.id);
            }
            long.messages.push(m);
        }
    }
    long
}

/// Linear cost for every compacting preset: a 10× longer trace (same window) takes ≤ 11× the
/// time. `none` is printed, not asserted: its request grows with the trace, and the per-call
/// invariant check and span listing walk the whole request.
/// Timing is only meaningful in release builds:
/// `cargo test --release --test engine_presets_datasets -- --ignored --nocapture`.
#[test]
#[ignore = "timing; run in release with --ignored"]
fn every_preset_scales_linearly() {
    use std::time::Instant;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/mini-swe-agent/psf__requests-1142.traj.json");
    let mut base = ctxbench::trace::import::import_file(&path, None)
        .unwrap()
        .remove(0);
    // The trace ends with a huge result no call ever sends; in copies it would be sent, and
    // the 10× trace would not be 10 × the same work.
    let last_call = base.model_call_indexes().last().unwrap();
    base.messages.truncate(last_call + 1);
    // Steady state: at a 12k window even the short trace compacts many times.
    let short = repeated(&base, 2);
    let long = repeated(&base, 20);
    let env = ReplayEnv::new(&OfflineSummarizer);
    let best = |t: &ctxbench::trace::Trace, preset: &str, reps: u32| {
        let config = EngineConfig {
            preset: Some(preset.into()),
            window: Some(12_000),
            ..Default::default()
        }
        .resolve(None)
        .unwrap();
        let mut best = f64::MAX;
        for _ in 0..reps {
            let start = Instant::now();
            let r = engine::replay(t, &config, &env).unwrap();
            best = best.min(start.elapsed().as_secs_f64());
            assert!(r.invariants.passed());
        }
        best
    };
    let mut failures = Vec::new();
    for preset in presets::NAMES {
        let one = best(&short, preset, 25);
        let ten = best(&long, preset, 7);
        let ratio = ten / one;
        println!(
            "{preset:>18}: 1× {:.3} ms, 10× {:.3} ms, ratio {ratio:.2}",
            one * 1e3,
            ten * 1e3
        );
        if ratio > 11.0 && *preset != "none" {
            failures.push(format!("{preset}: {ratio:.2}"));
        }
    }
    assert!(failures.is_empty(), "superlinear: {failures:?}");
}
