//! Report rendering at scale: build the report model (statistics) and render every text writer
//! (CSV, JSON, Markdown, HTML with its SVG plots) for 100,000 synthetic samples, and load them
//! from a samples.jsonl the way `ctxbench report` does (one streaming pass, heavy parts read for
//! the samples shown in full only). Target ≤ 2 s.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ctxbench::record::RunDir;
use ctxbench::record::{CostByRole, RunInfo, Sample, TimelinePoint, TokenSplit, TokensByRole};
use ctxbench::report::{csv, html, json, markdown, ReportModel};
use std::hint::black_box;

const VARIANTS: [&str; 4] = ["baseline", "evict", "clear-60", "summarize-15"];

/// 100,000 samples: 4 variants × 50 traces × 5 depths × 5 triggers × 2 evals × 10 repeats / …
fn samples(n: usize) -> (RunInfo, Vec<Sample>) {
    let mut info = RunInfo::new("bench");
    info.variants = VARIANTS.iter().map(|s| s.to_string()).collect();
    info.seed = 7;
    let mut out = Vec::with_capacity(n);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut i = 0usize;
    while out.len() < n {
        let v = i % VARIANTS.len();
        let unit = i / VARIANTS.len();
        let trace = unit % 50;
        let depth = [0.1, 0.3, 0.5, 0.7, 0.9][(unit / 50) % 5];
        let trigger = [0.3, 0.5, 0.7, 0.85, 0.95][(unit / 250) % 5];
        let repeat = (unit / 1250) as u32;
        let eval = if unit.is_multiple_of(7) {
            "drift"
        } else {
            "needle"
        };
        let recall = if (rnd() % 100) < (95 - 10 * v as u64) {
            1.0
        } else {
            0.0
        };
        let agent_in = 20_000 + rnd() % 10_000;
        let mut b = Sample::builder()
            .unit_id(format!("u{i}"))
            .trace(format!("trace-{trace:03}"))
            .variant(VARIANTS[v])
            .eval(eval)
            .sample(format!("depth={depth}/trigger={trigger}"))
            .param("depth", depth)
            .param("trigger", trigger)
            .repeat(repeat);
        b = if eval == "needle" {
            b.score("recall", recall)
                .score("steps", (rnd() % 8) as f64)
                .passed(recall == 1.0)
        } else {
            b.score("score", (rnd() % 6) as f64)
        };
        out.push(
            b.tokens(TokensByRole {
                agent: TokenSplit {
                    input: agent_in,
                    cached: agent_in / 3,
                    cache_write: 0,
                    output: 400,
                },
                summarizer: TokenSplit {
                    input: 3000 * v as u64,
                    cached: 0,
                    cache_write: 0,
                    output: 300 * v as u64,
                },
                judge: TokenSplit::default(),
                eval_agent: TokenSplit::default(),
            })
            .cost(CostByRole {
                agent: Some(agent_in as f64 * 2.5e-6),
                summarizer: Some(v as f64 * 1e-3),
                judge: None,
                eval_agent: None,
            })
            .compaction("evicted", v as u64)
            .latency_ms(rnd() % 3000)
            .timeline(
                (0..12)
                    .map(|k| TimelinePoint {
                        trace_index: 2 * k + 1,
                        tokens: 1000 * (k as u64 + 1) / (v as u64 + 1),
                        reference_tokens: Some(1000 * (k as u64 + 1)),
                        events: if v > 0 && k == 6 {
                            vec!["summarized".into()]
                        } else {
                            vec![]
                        },
                        details: vec![],
                    })
                    .collect(),
            )
            .build(),
        );
        i += 1;
    }
    (info, out)
}

fn bench(c: &mut Criterion) {
    let (info, samples) = samples(100_000);
    let mut g = c.benchmark_group("report");
    g.sample_size(10);
    g.bench_function("model+csv+json+md+html, 100k samples", |b| {
        // Cloning the input is setup, not rendering.
        b.iter_batched(
            || samples.clone(),
            |samples| {
                let model = ReportModel::build(&info, samples);
                let total = csv::render(&info, &model).len()
                    + json::render(&info, &model).len()
                    + markdown::render(&info, &model).len()
                    + html::render(&info, &model).len();
                black_box(total)
            },
            BatchSize::LargeInput,
        )
    });
    // The parts, to see where the time goes.
    g.bench_function("model only", |b| {
        b.iter_batched(
            || samples.clone(),
            |samples| black_box(ReportModel::build(&info, samples).variants.len()),
            BatchSize::LargeInput,
        )
    });
    let model = ReportModel::build(&info, samples.clone());
    g.bench_function("csv only", |b| {
        b.iter(|| black_box(csv::render(&info, &model).len()))
    });
    g.bench_function("html only", |b| {
        b.iter(|| black_box(html::render(&info, &model).len()))
    });
    // The journal on disk, as `ctxbench report` reads it.
    let dir = tempfile::tempdir().expect("temp dir");
    let run = RunDir::new(dir.path());
    std::fs::write(
        run.run_json(),
        serde_json::to_string(&info).expect("run.json"),
    )
    .expect("write run.json");
    run.write_samples(&samples).expect("write samples.jsonl");
    drop(samples);
    g.bench_function("stream samples.jsonl into the model, 100k samples", |b| {
        b.iter(|| {
            let (_, model, _) = ctxbench::report::load::load_model(&run).expect("load");
            black_box(model.samples.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
