//! `[evals.continuation]` from a suite on bundled traces with the offline agent: one sample per
//! fold (`params.fold`), teacher-forced predictions scored against the recorded calls and
//! against the uncompressed reference, deterministic across runs; and compression moves
//! agreement away from the reference on some fold.

use crate::support;

use crate::support::suite::{SuiteBuilder, AGGRESSIVE};
use ctxbench::record::Sample;

const TRACES: [&str; 4] = [
    "astropy__astropy-12907.traj.json",
    "django__django-11138.traj.json",
    "sympy__sympy-19495.traj.json",
    "pytest-dev__pytest-7571.traj.json",
];

fn run(text: &str) -> Vec<Sample> {
    let tmp = tempfile::tempdir().unwrap();
    support::run::samples(&support::run::run_ok(tmp.path(), text))
}

fn suite() -> String {
    SuiteBuilder::new("continuation-test")
        .mini_swe(&TRACES)
        .baseline("mild")
        .deepagents(20000)
        .variant("mild", "summarize.trigger.fraction = 0.5")
        .variant("aggressive", AGGRESSIVE)
        .eval("replay", "enabled = false")
        .eval("continuation", "after_compactions = 2\nsteps = 3")
        .text()
}

#[test]
fn continuation_scores_each_fold_against_recorded_calls_and_the_reference() {
    let samples = run(&suite());
    // 4 traces × 2 variants × 2 folds
    assert_eq!(samples.len(), 16);
    let mut reached = 0;
    let mut moved = 0;
    for s in &samples {
        assert_eq!(s.eval, "continuation");
        let fold = s.params["fold"].as_u64().unwrap();
        assert_eq!(s.sample, format!("fold={fold}"));
        assert!(!s.scores.contains_key("fold"), "a parameter is not a score");
        if s.evidence["reached"] == true {
            reached += 1;
            assert_eq!(s.scores["steps"], 3.0, "{}", s.evidence);
            for k in ["agreement", "reference_agreement", "tool_agreement"] {
                assert!((0.0..=1.0).contains(&s.scores[k]), "{k}: {:?}", s.scores);
            }
            let d = s.scores["agreement"] - s.scores["reference_agreement"];
            assert_eq!(s.scores["agreement_delta"], d);
            if d != 0.0 {
                moved += 1;
            }
            for step in s.evidence["steps"].as_array().unwrap() {
                assert!(!step["recorded_target"].as_str().unwrap().is_empty());
                // Every trace here has one tool: the tool always agrees, the target decides.
                assert_eq!(step["reference_tool_ok"], true, "{step}");
            }
        } else {
            assert_eq!(s.scores["steps"], 0.0);
            assert!(!s.scores.contains_key("agreement"));
        }
    }
    assert!(reached >= 8, "only {reached} folds reached");
    // Compression costs agreement somewhere (the aggressive view lost the recent actions).
    // Compression moves agreement somewhere: the compacted view and the uncompressed one lead
    // the agent to different actions.
    assert!(moved >= 1, "no fold's agreement differs from the reference");
    // Deterministic: the same suite gives the same scores.
    let again = run(&suite());
    let key = |s: &Sample| (s.trace_id.clone(), s.variant.clone(), s.sample.clone());
    let mut a: Vec<_> = samples.iter().map(|s| (key(s), s.scores.clone())).collect();
    let mut b: Vec<_> = again.iter().map(|s| (key(s), s.scores.clone())).collect();
    a.sort_by(|x, y| x.0.cmp(&y.0));
    b.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(a, b);
}

#[test]
fn aggressive_summarization_loses_agreement_the_full_history_has() {
    use ctxbench::engine::{EngineConfig, OfflineSummarizer};
    use ctxbench::evals::continuation::{self, ContinuationParams};
    use ctxbench::evals::offline_agent::OfflineProvider;
    use ctxbench::pricing::PriceTable;
    use ctxbench::trace::import::import_file;
    // Summarize at 15% of the window and keep only the last 4 messages.
    let cfg = EngineConfig::from_toml_str(
        "preset = \"deepagents\"\nwindow = 20000\n[summarize]\ntrigger = { fraction = 0.15 }\nkeep = { messages = 4 }\n",
        "t.toml",
    )
    .unwrap()
    .resolve(None)
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let agent = OfflineProvider::new();
    let (mut agree, mut reference, mut steps, mut worse) = (0.0, 0.0, 0.0, 0);
    for (ti, path) in support::suite::mini_swe_all().iter().enumerate() {
        let trace = import_file(path, None).unwrap().remove(0);
        let mut delta = 0.0;
        for fold in 1..=3 {
            let params = ContinuationParams {
                fold,
                steps: 3,
                max_output_tokens: 300,
            };
            let (_, view) = continuation::prepare(
                &trace,
                &cfg,
                &params,
                &OfflineSummarizer,
                PriceTable::bundled(),
                dir.path().join(format!("{ti}-{fold}")),
                1,
            )
            .unwrap();
            let Some(v) = view else { continue };
            let st = rt
                .block_on(continuation::ask(&trace, &v, 3, &agent, 300, "t"))
                .unwrap();
            let (s, _) = continuation::score(&params, Some(v.trace_index), &st);
            if s["steps"] > 0.0 {
                agree += s["agreement"] * s["steps"];
                reference += s["reference_agreement"] * s["steps"];
                steps += s["steps"];
                delta += s["agreement_delta"];
            }
        }
        worse += (delta < 0.0) as usize;
    }
    eprintln!(
        "agreement {:.3} vs reference {:.3} over {steps} steps; {worse} traces lose agreement",
        agree / steps,
        reference / steps
    );
    assert!(steps >= 100.0, "only {steps} steps asked");
    assert!(
        agree < reference,
        "agreement {} vs reference {} over {steps} steps",
        agree / steps,
        reference / steps
    );
    assert!(worse >= 3, "only {worse} traces lose agreement");
}
