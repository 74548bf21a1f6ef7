//! A whole suite with the summarizer and the eval agent behind a server that faults 40% of the
//! time, every kind of fault (5xx and 429 quoting the key, hangs past the timeout, bodies cut
//! short, closed and reset connections, unreadable 200s, slow bodies). Asserts: the run
//! completes; no unit is lost or duplicated; every unit matches a healthy run or is an error or
//! flagged (a failed summary: `compactions.error`); no error was cached (a later run against a
//! healthy server from the same cache equals the healthy run); the key is stored nowhere.

#![cfg(unix)]

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::support::mock_llm::{self as mock, MockLlm, Recorded, Reply};
use crate::support::suite::base_and_aggressive;
use ctxbench::record::Sample;

const CANARY: &str = "sk-faults-3b9d71c0e5a2";
const CANARY_TAIL: &str = "faults-3b9d71c0e5a2";
const KEY_VAR: &str = "CTXBENCH_TEST_FAULT_KEY";

fn suite(dir: &Path, base_url: &str) -> PathBuf {
    let provider = |role: &str| {
        format!(
            r#"kind = "openai"
model = "m-{role}"
base_url = "{base_url}"
api_key_env = "{KEY_VAR}"
max_retries = 8
retry_initial_ms = 1
retry_max_secs = 0.05
timeout_secs = 1
"#
        )
    };
    base_and_aggressive("faults")
        .seed(3)
        .suite_line("concurrency = 6")
        .mini_swe(&[
            "astropy__astropy-12907.traj.json",
            "sympy__sympy-13091.traj.json",
        ])
        .deepagents(20000)
        .eval(
            "needle",
            "depths = [0.25, 0.75]\npositions = [\"tool\"]\nmax_steps = 3",
        )
        .eval("drift", "after_compactions = 1")
        .table("providers.agent", provider("agent"))
        .table("providers.summary", provider("summary"))
        .write(dir, "suite.toml")
}

/// The healthy answer: deterministic, and it echoes the key (which must be redacted).
fn healthy(r: &Recorded) -> Reply {
    let key = mock::request_key(r);
    let n = r.raw_body.len() % 7;
    Reply::ok(mock::openai_text(
        &format!("Noted ({n}); the key was {key}. The answer is unknown."),
        100 + n as u64,
        12,
    ))
}

/// `healthy`, except 40% of requests get one fault of every kind in turn, chosen by a seeded
/// generator.
fn faulty() -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    let rng = Mutex::new(fastrand::Rng::with_seed(15));
    move |r: &Recorded| {
        let (fault, kind) = {
            let mut g = rng.lock().unwrap();
            (g.f64() < 0.4, g.usize(0..9))
        };
        if !fault {
            return healthy(r);
        }
        let key = mock::request_key(r);
        let ok = mock::openai_text("Noted.", 10, 2);
        match kind {
            0 => Reply::status(
                500,
                mock::openai_error(&format!("upstream rejected {key}"), "server_error", "500"),
            ),
            1 => Reply::status(429, mock::openai_error("slow down", "rate_limit", "429"))
                .header("Retry-After", "0"),
            2 => Reply::status(503, format!("<html>overloaded {key}</html>")),
            3 => Reply::Hang,
            4 => Reply::CutOff {
                body: ok[..ok.len() / 2].to_string(),
                declared_extra: 40,
            },
            5 => Reply::Close,
            6 => Reply::Reset,
            7 => Reply::ok(format!("{{\"choices\": [ not json {key}")),
            _ => match healthy(r) {
                Reply::Full { body, .. } => Reply::Slow {
                    body,
                    chunks: 3,
                    delay: Duration::from_millis(30),
                },
                other => other,
            },
        }
    }
}

fn run(suite: &Path, cache: &Path, run_id: &str) -> (Option<i32>, String) {
    let out = std::process::Command::new(support::cli::bin())
        .args(["run", suite.to_str().unwrap(), "--run-id", run_id])
        .env(KEY_VAR, CANARY)
        .env("CTXBENCH_CACHE_DIR", cache)
        .current_dir(suite.parent().unwrap())
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), all)
}

fn samples(dir: &Path) -> BTreeMap<String, Sample> {
    support::run::by_unit(dir)
}

/// What a unit measured (not how long it took or whether its answers came from the cache).
fn measured(s: &Sample) -> impl PartialEq + std::fmt::Debug {
    (
        s.scores.clone(),
        s.passed,
        s.compactions.clone(),
        s.error.clone(),
    )
}

/// An error, or a summary that failed inside the replay (an `error` event, counted in
/// `compactions.error`). Once failed summaries make the unit an error, the first test covers it.
fn flagged(s: &Sample) -> bool {
    s.error.is_some() || s.compactions.get("error").copied().unwrap_or(0) > 0
}

fn leaks(dir: &Path) -> Vec<String> {
    support::leaks::scan(dir, CANARY_TAIL).1
}

fn status(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
fn a_suite_behind_forty_percent_faults_loses_nothing_and_caches_no_error() {
    let tmp = tempfile::tempdir().unwrap();

    // One server (the cache key includes the endpoint), switched between healthy and faulty.
    let (_rt, server) = MockLlm::on_own_runtime(); // the runtime serves the mock
    let suite = suite(tmp.path(), &server.openai_base_url());
    let out = tmp.path().join("out");

    // The healthy reference.
    server.respond_with(healthy);
    let (code, log) = run(&suite, &tmp.path().join("cache-good"), "healthy");
    assert_eq!(code, Some(0), "{log}");
    let reference = samples(&out.join("healthy"));
    assert!(
        reference.values().all(|s| !flagged(s)),
        "the healthy run has errors"
    );
    assert!(
        reference
            .values()
            .any(|s| s.compactions.get("summarized").copied().unwrap_or(0) > 0),
        "no summary ran: the summarizer was not exercised"
    );
    let healthy_requests = server.request_count();

    // The same suite behind faults, from a fresh cache.
    server.respond_with(faulty());
    let cache = tmp.path().join("cache-faults");
    let (code, log) = run(&suite, &cache, "faulty");
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains(CANARY_TAIL), "key printed");
    assert!(!log.contains("panicked"), "{log}");
    let dir = out.join("faulty");
    assert_eq!(status(&dir)["status"], "complete");
    let faulty = samples(&dir);
    assert_eq!(
        faulty.keys().collect::<Vec<_>>(),
        reference.keys().collect::<Vec<_>>(),
        "units lost or added"
    );
    let mut matched = 0;
    for (id, s) in &faulty {
        if measured(s) == measured(&reference[id]) {
            matched += 1;
        } else {
            assert!(
                flagged(s),
                "unit {id} differs from the healthy run without an error or flag:\n{:?}\n{:?}",
                measured(s),
                measured(&reference[id])
            );
        }
    }
    // Faults that are retried (5xx, 429, hangs, cut bodies, closed or reset connections) are
    // absorbed: a unit error can only come from an answer that is not retried (a 200 whose
    // body is not JSON). Failed summaries (also from such answers) are flagged, and counted.
    // (A failed summary becomes a `summary_failed` unit error once failed summaries count as
    // errors; its message names the cause.)
    for s in faulty.values() {
        if let Some(e) = &s.error {
            let explained = e.kind == "bad_response"
                || (e.kind == "summary_failed" && e.message.contains("bad_response"));
            assert!(explained, "{}: a retried fault surfaced: {e:?}", s.unit_id);
        }
    }
    assert!(matched > 0, "no unit matched the healthy run");
    let faulty_requests = server.request_count() - healthy_requests;
    assert!(
        faulty_requests > healthy_requests,
        "faults caused no retries: {faulty_requests} vs {healthy_requests} requests"
    );

    // No error was cached: the same cache behind the healthy server gives the healthy run.
    server.respond_with(healthy);
    let (code, log) = run(&suite, &cache, "again");
    assert_eq!(code, Some(0), "{log}");
    let again = samples(&out.join("again"));
    assert_eq!(again.len(), reference.len());
    for (id, s) in &again {
        assert_eq!(measured(s), measured(&reference[id]), "unit {id}");
    }

    // The key is stored nowhere.
    for d in [&out, &cache, &tmp.path().join("cache-good")] {
        let found = leaks(d);
        assert!(found.is_empty(), "key stored in {found:?}");
    }
}
