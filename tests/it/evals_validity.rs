//! The evals must tell good compression from broken compression: with the offline provider on
//! bundled real traces, needle recall is high when summarization offloads the history to the
//! store and near zero when the same triggers run the no-offload truncate strategy; drift scores
//! drop when the summary prompt loses SESSION INTENT; results do not depend on thread count.
//! With `search = "always"` a preset that offloads the history (deepagents) recalls ≥ 0.9 and
//! one that keeps none (digitorn, `history = "none"`) significantly less (McNemar p < 0.01);
//! paraphrased questions with key-sharing distractors recall less than verbatim keys; with
//! `search = "never"` a summary prompt that asks for values verbatim (summary-a) recalls
//! significantly more than one that does not (summary-b); corrected facts come back stale from
//! a summary that keeps the first value; recall does not grow with folds survived when no
//! history is kept, and the uncompressed reference answers every question.

use crate::support::traces::{engine_config as config, import_one as load, EVAL_TRACES as TRACES};
use ctxbench::config::suite::NeedleSearch;
use ctxbench::engine::{OfflineSummarizer, ResolvedConfig};
use ctxbench::evals::drift::{self, DriftParams};
use ctxbench::evals::needle::{self, AskAt, NeedleParams};
use ctxbench::evals::offline_agent::OfflineProvider;
use ctxbench::evals::plant::Position;
use ctxbench::metrics::stats::mcnemar;
use ctxbench::pricing::PriceTable;
use std::collections::BTreeMap;
use std::path::Path;

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

/// What varies between needle runs.
#[derive(Clone, Copy)]
struct Knobs {
    search: NeedleSearch,
    paraphrase: bool,
    corrected: bool,
    fold: Option<usize>,
    /// Assert every needle left the view verbatim (else the sample tests nothing).
    compacted_away: bool,
}

impl Knobs {
    fn new(search: NeedleSearch) -> Self {
        Knobs {
            search,
            paraphrase: false,
            corrected: false,
            fold: None,
            compacted_away: false,
        }
    }
}

/// One needle sample's scores and the summarizations its replay made.
struct Run {
    scores: BTreeMap<String, f64>,
    summarized: usize,
}

/// Per-sample needle runs over traces × depths × positions, in a fixed order so two variants
/// pair up.
fn needle_runs(variant: &ResolvedConfig, dir: &Path, k: Knobs) -> Vec<Run> {
    let rt = runtime();
    let agent = OfflineProvider::new();
    let mut runs = Vec::new();
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
                    max_output_tokens: 200,
                    ask_at: AskAt::End,
                    search: k.search,
                    paraphrase: k.paraphrase,
                    corrected: k.corrected,
                    fold: k.fold,
                    plant_seed: None,
                    pack_store: false,
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
                        params.max_output_tokens,
                        params.search,
                        "t",
                    ))
                    .unwrap();
                let (scores, _) = needle::score(&prepared, &answers);
                if k.compacted_away {
                    assert_eq!(
                        scores["in_view"], 0.0,
                        "{path} depth {depth}: the needle was never compacted away, the sample tests nothing"
                    );
                }
                let summarized = prepared
                    .replay
                    .events
                    .iter()
                    .filter(|e| e.kind() == "summarized")
                    .count();
                runs.push(Run { scores, summarized });
            }
        }
    }
    runs
}

/// Per-sample needle recall (see [`needle_runs`]).
fn needle_hits(
    variant: &ResolvedConfig,
    dir: &Path,
    search: NeedleSearch,
    paraphrase: bool,
    compacted_away: bool,
) -> Vec<f64> {
    let k = Knobs {
        paraphrase,
        compacted_away,
        ..Knobs::new(search)
    };
    needle_runs(variant, dir, k)
        .iter()
        .map(|r| r.scores["recall"])
        .collect()
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
    let always = Knobs::new(NeedleSearch::Always);
    let deep_runs = needle_runs(&deep, &dir.path().join("d"), always);
    let digitorn_runs = needle_runs(&digitorn, &dir.path().join("g"), always);
    for r in deep_runs.iter().chain(&digitorn_runs) {
        assert!(
            r.summarized >= 2,
            "only {} folds: {:?}",
            r.summarized,
            r.scores
        );
    }
    // The same agent answers every question on the uncompressed history: digitorn's misses
    // are compression's (a negative recall_delta), not the agent's.
    for runs in [&deep_runs, &digitorn_runs] {
        assert_eq!(mean(&scores_of(runs, "reference_recall")), 1.0);
    }
    assert!(mean(&scores_of(&digitorn_runs, "recall_delta")) < -0.3);
    let recall = |runs: &[Run]| -> Vec<f64> { runs.iter().map(|r| r.scores["recall"]).collect() };
    let (a, b) = (recall(&deep_runs), recall(&digitorn_runs));
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
                max_output_tokens: 400,
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
            let probes = rt
                .block_on(drift::ask(&trace, &views, &agent, None, 400, "t"))
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

/// A preset (`preset_toml`, then `[summarize]` keys) with the summary prompt of a file.
fn with_prompt(preset_toml: &str, prompt_file: &str) -> ResolvedConfig {
    let prompt = std::fs::read_to_string(prompt_file).unwrap();
    config(&format!(
        "{preset_toml}\nprompt = {{ text = {prompt:?} }}\n"
    ))
}

fn scores_of(runs: &[Run], name: &str) -> Vec<f64> {
    runs.iter()
        .filter_map(|r| r.scores.get(name).copied())
        .collect()
}

#[test]
fn with_search_never_a_prompt_asking_for_values_verbatim_beats_one_that_does_not() {
    let dir = tempfile::tempdir().unwrap();
    // summary-a asks for "identifiers, values, tokens … verbatim" in its ARTIFACTS section;
    // summary-b only for file paths. The offline summarizer follows the prompt text.
    let base = "preset = \"deepagents\"\nwindow = 20000\n[summarize]";
    let a = with_prompt(base, "evals/prompts/summary-a.md");
    let b = with_prompt(base, "evals/prompts/summary-b.md");
    let never = Knobs::new(NeedleSearch::Never);
    let ra = scores_of(&needle_runs(&a, &dir.path().join("a"), never), "recall");
    let rb = scores_of(&needle_runs(&b, &dir.path().join("b"), never), "recall");
    let lost = ra.iter().zip(&rb).filter(|(x, y)| **x > **y).count() as u64;
    let won = ra.iter().zip(&rb).filter(|(x, y)| **x < **y).count() as u64;
    let test = mcnemar(lost, won);
    assert!(
        mean(&ra) > mean(&rb) + 0.5 && test.p_value < 0.01,
        "summary-a {} vs summary-b {} (b {lost}, c {won}, p {})",
        mean(&ra),
        mean(&rb),
        test.p_value
    );
}

#[test]
fn corrected_facts_come_back_stale_from_a_summary_that_keeps_the_first_value() {
    let dir = tempfile::tempdir().unwrap();
    let never = Knobs {
        corrected: true,
        ..Knobs::new(NeedleSearch::Never)
    };
    // summary-a lists values oldest first after the previous summary's; under a tight cap the
    // later correction is what gets cut, so the summary keeps the first value.
    let tight = with_prompt(
        "preset = \"deepagents\"\nwindow = 20000\n[summarize]\nsummary_max_tokens = 256",
        "evals/prompts/summary-a.md",
    );
    let roomy = with_prompt(
        "preset = \"deepagents\"\nwindow = 20000\n[summarize]",
        "evals/prompts/summary-a.md",
    );
    let t = needle_runs(&tight, &dir.path().join("t"), never);
    let r = needle_runs(&roomy, &dir.path().join("r"), never);
    let stale = |runs: &[Run]| mean(&scores_of(runs, "stale"));
    assert_eq!(
        scores_of(&t, "stale").len(),
        t.len(),
        "every needle was corrected before the question"
    );
    assert!(stale(&t) >= 0.2, "tight summary: stale {}", stale(&t));
    assert_eq!(stale(&r), 0.0, "a summary with room keeps the update");
    assert_eq!(mean(&scores_of(&r, "recall")), 1.0);
    // The uncompressed history has the update: the stale answers are compression's doing.
    assert_eq!(mean(&scores_of(&t, "reference_recall")), 1.0);
    for run in &t {
        let s = &run.scores;
        assert_eq!(s["recall_delta"], s["recall"] - s["reference_recall"]);
        assert!(s["stale"] + s["recall"] <= 1.0, "{s:?}");
    }
}

#[test]
fn recall_does_not_grow_with_folds_survived_without_history() {
    let dir = tempfile::tempdir().unwrap();
    for (name, cfg) in [
        (
            "digitorn",
            config("preset = \"digitorn\"\nwindow = 20000\n"),
        ),
        (
            "deepagents-none",
            config("preset = \"deepagents\"\nwindow = 20000\n[summarize]\nhistory = \"none\"\n"),
        ),
    ] {
        let mut means = Vec::new();
        for fold in [1, 2, 3, 5] {
            let k = Knobs {
                fold: Some(fold),
                ..Knobs::new(NeedleSearch::Auto)
            };
            let runs = needle_runs(&cfg, &dir.path().join(format!("{name}-{fold}")), k);
            let recall = scores_of(&runs, "recall");
            assert!(
                recall.len() >= 30,
                "{name} fold {fold}: only {} reached",
                recall.len()
            );
            // The fold is a parameter of the sample, not a score.
            assert!(runs.iter().all(|r| !r.scores.contains_key("fold")));
            // The agent answers every question on the uncompressed history.
            assert_eq!(mean(&scores_of(&runs, "reference_recall")), 1.0, "{name}");
            means.push(mean(&recall));
        }
        for w in means.windows(2) {
            assert!(w[1] <= w[0], "{name}: recall by fold {means:?}");
        }
        assert!(
            means[3] < means[0] - 0.2,
            "{name}: recall by fold {means:?}"
        );
    }
    // A fold the replay never makes is `not_reached`: no recall, no verdict, not an error.
    let cfg = config("preset = \"digitorn\"\nwindow = 20000\n");
    let k = Knobs {
        fold: Some(500),
        ..Knobs::new(NeedleSearch::Auto)
    };
    for r in needle_runs(&cfg, &dir.path().join("far"), k) {
        assert_eq!(r.scores.get("not_reached"), Some(&1.0));
        assert!(!r.scores.contains_key("recall"), "{:?}", r.scores);
    }
}
