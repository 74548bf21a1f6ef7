//! Synthetic runs shared by the report, gate and chromium tests: fixed, hand-built samples
//! (no randomness), written to disk in the run-directory layout.
#![allow(dead_code)]

use ctxbench::record::{
    CostByRole, ProviderProvenance, RunDir, RunInfo, Sample, TimelinePoint, TokenSplit,
    TokensByRole, UnitError,
};
use std::collections::BTreeMap;
use std::path::Path;

pub const HOSTILE: &str = "<script>alert(1)</script>";

pub fn info(run_id: &str) -> RunInfo {
    let mut info = RunInfo::new(run_id);
    info.created = "2026-11-21T12:00:00Z".into();
    info.ctxbench_version = "0.1.0".into();
    info.variants = vec!["baseline".into(), "aggressive".into()];
    info.baseline = Some("baseline".into());
    info.seed = 42;
    info.providers = vec![ProviderProvenance {
        role: "agent".into(),
        provider: "offline".into(),
        model: "offline-retrieval".into(),
        base_url: None,
    }];
    info.suite = serde_json::json!({
        "gates": {"rules": ["needle.recall.delta >= -0.05", "cost.delta_pct <= 50"]}
    });
    info
}

fn split(input: u64, cached: u64, output: u64) -> TokenSplit {
    TokenSplit {
        input,
        cached,
        cache_write: 0,
        output,
    }
}

/// One needle unit. `lost` = the needle was not recovered.
pub fn needle(
    variant: &str,
    trace: &str,
    depth: f64,
    trigger: f64,
    repeat: u32,
    lost: bool,
) -> Sample {
    let aggressive = variant == "aggressive";
    let agent_in = if aggressive { 6000 } else { 12000 };
    let timeline: Vec<TimelinePoint> = (0..5)
        .map(|i| {
            let reference = 2000 * (i as u64 + 1);
            let summarized = aggressive && i == 2;
            TimelinePoint {
                trace_index: 2 * i + 1,
                tokens: if aggressive && i >= 2 {
                    reference / 3
                } else {
                    reference
                },
                reference_tokens: Some(reference),
                events: if summarized {
                    vec!["summarized".into()]
                } else {
                    vec![]
                },
                details: if summarized {
                    vec![format!(
                        "summarized messages 1..4 into conversation_history/s.md {HOSTILE}"
                    )]
                } else {
                    vec![]
                },
            }
        })
        .collect();
    let mut b = Sample::builder()
        .unit_id(format!(
            "{trace}/{variant}/needle/d{depth}-t{trigger}/{repeat}"
        ))
        .trace(trace)
        .variant(variant)
        .sample(format!("depth={depth}/trigger={trigger}"))
        .param("depth", depth)
        .param("trigger", trigger)
        .repeat(repeat)
        .score("recall", if lost { 0.0 } else { 1.0 })
        .score("steps", if lost { 6.0 } else { 3.0 })
        .passed(!lost)
        .tokens(TokensByRole {
            agent: split(agent_in, agent_in / 4, 300),
            summarizer: if aggressive {
                split(4000, 0, 500)
            } else {
                TokenSplit::default()
            },
            judge: TokenSplit::default(),
            eval_agent: TokenSplit::default(),
        })
        .cost(CostByRole {
            agent: Some(agent_in as f64 * 2.5e-6 + 300.0 * 1e-5),
            summarizer: Some(if aggressive {
                4000.0 * 1.5e-7 + 500.0 * 6e-7
            } else {
                0.0
            }),
            judge: None,
            eval_agent: None,
        })
        .latency_ms(120 + repeat as u64)
        .evidence(serde_json::json!({"answer": if lost { HOSTILE } else { "teal-otter-7731" }, "files_read": ["/large_tool_results/call_1"]}))
        .timeline(timeline);
    if aggressive {
        b = b.compaction("summarized", 1);
    }
    b.build()
}

/// A drift unit with a judge whose price is unknown.
pub fn drift(variant: &str, trace: &str, score: f64) -> Sample {
    let mut s = needle(variant, trace, 0.5, 0.85, 0, false);
    s.unit_id = format!("{trace}/{variant}/drift");
    s.eval = "drift".into();
    s.sample = "after-compaction-1".into();
    s.params = BTreeMap::new();
    s.scores = BTreeMap::from([("score".to_string(), score)]);
    s.passed = None;
    s.tokens.judge = split(800, 0, 50);
    s.cost_usd.judge = None;
    s.timeline = vec![];
    s.evidence = serde_json::json!({"goal": format!("fix the parser {HOSTILE}")});
    s
}

/// The fixed synthetic run: 2 traces × 2 variants × needle (2 depths × 2 triggers × 2 repeats)
/// plus one drift unit per trace and variant, plus one failed unit. The aggressive variant loses the
/// needle at depth 0.25 (the oldest content it summarized away).
pub fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    for trace in ["trace-a", "trace-b"] {
        for variant in ["baseline", "aggressive"] {
            for depth in [0.25, 0.75] {
                for trigger in [0.5, 0.85] {
                    for repeat in 0..2 {
                        let lost = variant == "aggressive"
                            && depth == 0.25
                            && !(trigger == 0.85 && repeat == 1);
                        out.push(needle(variant, trace, depth, trigger, repeat, lost));
                    }
                }
            }
            out.push(drift(
                variant,
                trace,
                if variant == "aggressive" { 3.5 } else { 4.5 },
            ));
        }
    }
    let mut failed = needle("aggressive", "trace-b", 0.5, 0.5, 0, false);
    failed.unit_id = format!("trace-b/aggressive/needle/broken {HOSTILE}");
    failed.sample = "depth=0.5/trigger=0.5".into();
    failed.scores.clear();
    failed.passed = None;
    failed.timeline.clear();
    failed.error = Some(UnitError {
        kind: "context_overflow".into(),
        message: format!("provider said: request too large | {HOSTILE}\nsecond line"),
    });
    out.push(failed);
    out
}

/// Write run.json and samples.jsonl into `dir`.
pub fn write_run(dir: &Path, info: &RunInfo, samples: &[Sample]) {
    std::fs::create_dir_all(dir).unwrap();
    let run_dir = RunDir::new(dir);
    run_dir.write_run_json(info).unwrap();
    run_dir.write_samples(samples).unwrap();
}

/// Give the baseline's and the aggressive variant's units two summaries each (inline texts that
/// differ by a few words, one of them hostile), so the HTML's side-by-side view has folds to
/// show.
pub fn add_summaries(samples: &mut [Sample]) {
    use ctxbench::record::SummaryRecord;
    for s in samples.iter_mut().filter(|s| s.error.is_none()) {
        let aggressive = s.variant == "aggressive";
        s.summaries = (1..=2)
            .map(|fold| {
                let text = if aggressive {
                    format!("## SUMMARY fold {fold}\nfixed the parser; next: ship {HOSTILE}")
                } else {
                    format!(
                        "## SESSION INTENT\nfix the parser\n## SUMMARY fold {fold}\nfixed the parser; next: run the tests"
                    )
                };
                SummaryRecord {
                    fold,
                    trace_index: 2 * fold + 3,
                    prompt_digest: format!("sha256:{}", if aggressive { "bb" } else { "aa" }),
                    model: "offline".into(),
                    tokens_in: 4000,
                    tokens_out: 250,
                    text_digest: format!("sha256:{fold}{aggressive}"),
                    chars: text.chars().count(),
                    text: Some(text),
                    file: None,
                }
            })
            .collect();
    }
}
