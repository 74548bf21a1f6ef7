//! The evals must tell good compression from broken compression: with the offline provider on
//! bundled real traces, needle recall is high when summarization offloads the history to the
//! store and near zero when the same triggers run the no-offload truncate strategy; drift scores
//! drop when the summary prompt loses SESSION INTENT; results do not depend on thread count.
//! With `search = "always"` a preset that offloads the history (deepagents) recalls ≥ 0.9 and
//! one that keeps none (digitorn, `history = "none"`) significantly less (McNemar p < 0.01);
//! paraphrased questions with key-sharing distractors recall less than verbatim keys.

use ctxbench::config::suite::NeedleSearch;
use ctxbench::engine::{EngineConfig, OfflineSummarizer, ResolvedConfig};
use ctxbench::evals::drift::{self, DriftParams};
use ctxbench::evals::needle::{self, AskAt, NeedleParams};
use ctxbench::evals::offline_agent::OfflineProvider;
use ctxbench::evals::plant::Position;
use ctxbench::metrics::stats::mcnemar;
use ctxbench::pricing::PriceTable;
use ctxbench::trace::import::import_file;
use ctxbench::trace::Trace;
use std::path::Path;

const TRACES: [&str; 4] = [
    "datasets/mini-swe-agent/django__django-11138.traj.json",
    "datasets/mini-swe-agent/sympy__sympy-19495.traj.json",
    "datasets/mini-swe-agent/pytest-dev__pytest-7571.traj.json",
    "datasets/mini-swe-agent/astropy__astropy-12907.traj.json",
];

fn load(path: &str) -> Trace {
    import_file(Path::new(path), None)
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0)
}

fn config(toml: &str) -> ResolvedConfig {
    EngineConfig::from_toml_str(toml, "test.toml")
        .unwrap()
        .resolve(None)
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    // Timers: the agent loop and its tool calls have time limits.
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Mean needle recall of a variant over traces × depths × positions.
fn needle_recall(variant: &ResolvedConfig, dir: &Path) -> (f64, usize) {
    let hits = needle_hits(variant, dir, NeedleSearch::Auto, false, true);
    (hits.iter().sum::<f64>() / hits.len() as f64, hits.len())
}

/// Per-sample needle recall (traces × depths × positions, in a fixed order so two variants
/// pair up); `compacted_away` asserts every needle left the view verbatim.
fn needle_hits(
    variant: &ResolvedConfig,
    dir: &Path,
    search: NeedleSearch,
    paraphrase: bool,
    compacted_away: bool,
) -> Vec<f64> {
    let rt = runtime();
    let agent = OfflineProvider::new();
    let mut hits = Vec::new();
    for (ti, path) in TRACES.iter().enumerate() {
        let trace = load(path);
        for depth in [0.15, 0.35, 0.55] {
            for position in [Position::User, Position::Tool, Position::Assistant] {
                let params = NeedleParams {
                    depth,
                    position,
                    trigger: Some(0.15),
                    needles: 1,
                    distractors: 2,
                    max_steps: 6,
                    ask_at: AskAt::End,
                    search,
                    paraphrase,
                };
                let store = dir.join(format!("{ti}-{depth}-{}", position.as_str()));
                let prepared = needle::prepare(
                    &trace,
                    variant,
                    &params,
                    &OfflineSummarizer,
                    PriceTable::bundled(),
                    store,
                    (ti * 100) as u64,
                )
                .unwrap();
                assert!(
                    prepared.replay.invariants.violations.is_empty(),
                    "{path}: {:?}",
                    prepared.replay.invariants.violations
                );
                let answers = rt
                    .block_on(needle::ask(
                        &prepared,
                        &agent,
                        params.max_steps,
                        params.search,
                        "t",
                    ))
                    .unwrap();
                let (scores, _, _) = needle::score(&prepared, &answers);
                if compacted_away {
                    assert_eq!(
                        scores["in_view"], 0.0,
                        "{path} depth {depth}: the needle was never compacted away, the sample tests nothing"
                    );
                }
                hits.push(scores["recall"]);
            }
        }
    }
    hits
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[test]
fn with_search_always_offloaded_history_beats_a_preset_that_keeps_none() {
    let dir = tempfile::tempdir().unwrap();
    // The needle trigger (0.15) forces repeated folds at this window.
    let deep = config("preset = \"deepagents\"\nwindow = 20000\n");
    let digitorn = config("preset = \"digitorn\"\nwindow = 20000\n");
    let a = needle_hits(
        &deep,
        &dir.path().join("d"),
        NeedleSearch::Always,
        false,
        false,
    );
    let b = needle_hits(
        &digitorn,
        &dir.path().join("g"),
        NeedleSearch::Always,
        false,
        false,
    );
    assert!(mean(&a) >= 0.9, "deepagents recall {}", mean(&a));
    let lost = a.iter().zip(&b).filter(|(x, y)| **x > **y).count() as u64;
    let won = a.iter().zip(&b).filter(|(x, y)| **x < **y).count() as u64;
    let test = mcnemar(lost, won);
    assert!(
        mean(&b) < mean(&a) && test.p_value < 0.01,
        "deepagents {} vs digitorn {} (b {lost}, c {won}, p {})",
        mean(&a),
        mean(&b),
        test.p_value
    );
}

#[test]
fn paraphrased_questions_recall_less_than_verbatim_keys() {
    let dir = tempfile::tempdir().unwrap();
    let deep = config("preset = \"deepagents\"\nwindow = 20000\n");
    let verbatim = needle_hits(
        &deep,
        &dir.path().join("v"),
        NeedleSearch::Auto,
        false,
        false,
    );
    let para = needle_hits(
        &deep,
        &dir.path().join("p"),
        NeedleSearch::Auto,
        true,
        false,
    );
    assert!(
        mean(&para) < mean(&verbatim),
        "paraphrased {} vs verbatim {}",
        mean(&para),
        mean(&verbatim)
    );
}

#[test]
fn needle_recall_separates_offloading_summaries_from_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let summarize = config("preset = \"deepagents\"\nwindow = 20000\n");
    let truncate = config("preset = \"digitorn-truncate\"\nwindow = 20000\n");
    let (with_offload, n) = needle_recall(&summarize, &dir.path().join("summ"));
    let (without, _) = needle_recall(&truncate, &dir.path().join("trunc"));
    assert!(n >= 30, "too few samples: {n}");
    assert!(
        with_offload >= 0.95,
        "summarize+offload recall {with_offload}"
    );
    assert!(without <= 0.05, "truncate recall {without}");
}

#[test]
fn drift_scores_drop_without_session_intent() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let agent = OfflineProvider::new();
    let full = "Summarize the conversation.\n\nSESSION INTENT\nSUMMARY\nARTIFACTS\nNEXT STEPS\n";
    let no_intent = "Summarize the conversation.\n\nSUMMARY\nARTIFACTS\nNEXT STEPS\n";
    let mut totals = [0.0, 0.0];
    for (vi, prompt) in [full, no_intent].iter().enumerate() {
        let cfg = config(&format!(
            "preset = \"deepagents\"\nwindow = 30000\n[summarize]\nprompt = {{ text = {prompt:?} }}\n"
        ));
        for (ti, path) in TRACES.iter().enumerate() {
            let trace = load(path);
            let params = DriftParams {
                after_compactions: 2,
                judge: false,
                fold: None,
            };
            let (_, views) = drift::prepare(
                &trace,
                &cfg,
                &params,
                &OfflineSummarizer,
                PriceTable::bundled(),
                dir.path().join(format!("{vi}-{ti}")),
                1,
            )
            .unwrap();
            let (probes, _, _) = rt
                .block_on(drift::ask(&trace, &views, &agent, None, "t"))
                .unwrap();
            let (scores, _) = drift::aggregate(&probes);
            assert!(scores["probes"] >= 1.0);
            totals[vi] += scores["goal_coverage"];
        }
    }
    assert!(
        totals[0] > totals[1] + 0.5,
        "goal coverage with SESSION INTENT {} vs without {}",
        totals[0],
        totals[1]
    );
}
