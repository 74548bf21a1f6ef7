//! Per-message caches on real imported traces: the parallel counts equal counting every message
//! directly, for every registered counter, and prefix sums equal re-adding the prefix.

use ctxbench::tokens::{count_trace, count_traces, counter, MessageTokens, COUNTER_NAMES};
use ctxbench::trace::import::import_file;
use ctxbench::trace::Trace;
use std::path::Path;

/// One file of each bundled format (a bounded, varied sample for debug-build test times).
fn sample_traces() -> Vec<Trace> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets");
    let files = [
        "claude-code/coverage-test-fix.jsonl",
        "mini-swe-agent/astropy__astropy-12907.traj.json",
        "openhands/basic_gui_mode.json",
        "swe-agent/ctf__crypto__BabyEncryption.traj",
        "tau2-bench/2025-10-06T19-24-15.909785_airline_relaxed_llm_agent_grok-3-mini_user_simulator_grok-3-mini.json",
    ];
    let mut out = Vec::new();
    for f in files {
        let p = root.join(f);
        out.extend(import_file(&p, None).unwrap_or_else(|e| panic!("{e}")));
    }
    out.truncate(12);
    out
}

#[test]
fn parallel_cache_equals_direct_counting_on_real_traces() {
    let traces = sample_traces();
    assert!(traces.len() >= 5);
    for name in COUNTER_NAMES {
        let c = counter(name).unwrap();
        let all = count_traces(c.as_ref(), &traces);
        assert_eq!(all.len(), traces.len());
        for (t, counts) in traces.iter().zip(&all) {
            let direct: Vec<u64> = t.messages.iter().map(|m| c.count_message(m)).collect();
            assert_eq!(counts, &direct, "{name} on {}", t.meta.id);
            assert_eq!(count_trace(c.as_ref(), t), direct);

            let mt = MessageTokens::compute(c.as_ref(), t);
            assert_eq!(mt.as_slice(), direct.as_slice());
            assert_eq!(mt.tools(), c.count_tools(&t.meta.tools));
            let mut running = 0;
            for (i, &n) in direct.iter().enumerate() {
                assert_eq!(mt.before(i), running);
                running += n;
            }
            assert_eq!(mt.total(), running);
        }
    }
}

#[test]
fn exact_counters_disagree_with_each_other_but_not_with_themselves() {
    // Guards against the registry handing out the same encoding twice.
    let traces = sample_traces();
    let o = count_traces(counter("o200k").unwrap().as_ref(), &traces);
    let cl = count_traces(counter("cl100k").unwrap().as_ref(), &traces);
    let again = count_traces(counter("o200k").unwrap().as_ref(), &traces);
    assert_eq!(o, again);
    assert_ne!(o, cl);
}
