//! Criterion bench of the runner's per-unit CPU work: the replay phase of one needle unit
//! (`evals::needle::prepare`: plant, cut at the question point, replay with the offload store on
//! disk and the last view kept), the work a run does for every needle unit before its model
//! calls; and the encoding of the unit's larger request, the reference question on the whole
//! planted history (`runner/encode_reference_request`: the OpenAI chat body written straight
//! from the borrowed messages). The whole-run scenario (1,000 units against a 50 ms server) is
//! `bash benches/runner/run.sh`; see benches/README.md, "Runner overhead".
//!
//! ```sh
//! cargo bench --bench runner
//! ```
//!
//! Before timing, the case is prepared once and checked (the needle is planted, the replay made
//! model calls and kept the question view), so the bench never times a unit that did nothing.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use ctxbench::engine::{EngineConfig, OfflineSummarizer, ResolvedConfig};
use ctxbench::evals::needle::{self, NeedleParams};
use ctxbench::pricing::PriceTable;
use ctxbench::providers::http::Wire;
use ctxbench::providers::openai::OpenAiWire;
use ctxbench::providers::{ChatRequest, ProviderInfo};
use ctxbench::trace::{Message, Trace};
use serde_json::json;

/// The bundled trace of the scenario suite (`benches/runner/suite.toml`).
const TRACE: &str = "datasets/mini-swe-agent/django__django-11138.traj.json";

fn case() -> (Trace, ResolvedConfig, NeedleParams) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let trace = ctxbench::trace::import::import_file(&root.join(TRACE), None)
        .expect("bundled trace imports")
        .remove(0);
    let config = EngineConfig::default()
        .apply_sets(&["preset=\"deepagents\"".into(), "window=30000".into()])
        .expect("sets apply")
        .resolve(None)
        .expect("config resolves");
    let params = [("depth", json!(0.5)), ("position", json!("tool"))]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let params = NeedleParams::from_params(&params).expect("needle params");
    (trace, config, params)
}

fn needle_unit(c: &mut Criterion) {
    let (trace, config, params) = case();
    let dir = tempfile::tempdir().expect("temp dir");
    let prices = PriceTable::bundled();
    let mut seed = 0u64;
    let mut prepare = || {
        seed += 1;
        let store = dir.path().join(format!("u{seed}"));
        needle::prepare(
            &trace,
            &config,
            &params,
            &OfflineSummarizer,
            prices,
            store,
            seed,
        )
        .expect("needle unit prepares")
    };
    let p = prepare();
    assert!(p.reached && p.view_len > 0 && !p.replay.calls.is_empty());
    assert!(p.needles().count() == 1);
    let mut group = c.benchmark_group("runner");
    group.bench_function("needle_unit_replay_phase", |b| {
        b.iter(|| black_box(prepare()))
    });
    // The reference question: the planted history up to the question point, plus the question.
    let mut request = ChatRequest::new(trace.messages.clone());
    request.messages.push(Message::user(needle::PROBE_PREAMBLE));
    request.sampling.max_tokens = Some(200);
    let info = ProviderInfo {
        kind: "openai".into(),
        model: "mock".into(),
        endpoint: None,
        defaults: Default::default(),
        tool_protocol: Default::default(),
    };
    let mut body = Vec::new();
    OpenAiWire
        .encode(&info.outgoing(&request), &mut body)
        .expect("encodes");
    assert!(body.len() > 100_000, "{} bytes", body.len());
    group.throughput(criterion::Throughput::Bytes(body.len() as u64));
    group.bench_function("encode_reference_request", |b| {
        b.iter(|| {
            body.clear();
            OpenAiWire
                .encode(&info.outgoing(black_box(&request)), &mut body)
                .expect("encodes");
            black_box(body.len())
        })
    });
    group.finish();
}

criterion_group!(benches, needle_unit);
criterion_main!(benches);
