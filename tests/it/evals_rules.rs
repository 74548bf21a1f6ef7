//! `[evals.rules]` and drift on bundled real traces with the offline provider: the structured
//! handover prompt (`evals/prompts/summary-a.md`, with SESSION INTENT) keeps the user's standing
//! instructions and goal where the short one (`summary-b.md`) loses them (paired, p < 0.01);
//! per-fold rule retention never rises again once lost when the history is not kept; and a
//! suite with `[evals.rules]` runs end to end with one sample per fold.

use crate::support;

use crate::support::traces::{engine_config as config, import_one as load, EVAL_TRACES as TRACES};
use ctxbench::config::suite::RuleKind;
use ctxbench::engine::{OfflineSummarizer, ResolvedConfig};
use ctxbench::evals::drift::{self, DriftParams};
use ctxbench::evals::offline_agent::OfflineProvider;
use ctxbench::evals::rules::{self, RulesParams};
use ctxbench::metrics::stats::{mcnemar, paired_delta};
use ctxbench::pricing::PriceTable;
use std::collections::BTreeMap;
use std::path::Path;

fn prompt_variant(file: &str, extra: &str) -> ResolvedConfig {
    let text = std::fs::read_to_string(Path::new("evals/prompts").join(file)).unwrap();
    config(&format!(
        "preset = \"deepagents\"\nwindow = 20000\n[summarize]\nprompt = {{ text = {text:?} }}\ntrigger = {{ fraction = 0.3 }}\n{extra}"
    ))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Per (trace, seed, fold, rule): (retained in view, restated by the agent); `None` when the
/// fold was not reached. Fixed order so two variants pair up.
fn rule_outcomes(variant: &ResolvedConfig, dir: &Path, folds: usize) -> Vec<Option<(bool, bool)>> {
    let rt = runtime();
    let agent = OfflineProvider::new();
    let mut out = Vec::new();
    for (ti, path) in TRACES.iter().enumerate() {
        let trace = load(path);
        for seed in 0..3u64 {
            for fold in 1..=folds {
                let params = RulesParams {
                    fold,
                    kinds: RuleKind::ALL.to_vec(),
                    judge: false,
                    max_output_tokens: 400,
                };
                let prepared = rules::prepare(
                    &trace,
                    variant,
                    &params,
                    &OfflineSummarizer,
                    PriceTable::bundled(),
                    dir.join(format!("{ti}-{seed}-{fold}")),
                    seed,
                )
                .unwrap();
                let answer = rt
                    .block_on(rules::ask(&prepared.probe, &agent, None, 400, "t"))
                    .unwrap();
                let (scores, _) = rules::score(&params, &prepared.probe, answer.as_ref());
                for kind in RuleKind::ALL {
                    out.push(scores.get(&format!("retained.{}", kind.as_str())).map(|r| {
                        let said = scores[&format!("restated.{}", kind.as_str())];
                        (*r == 1.0, said == 1.0)
                    }));
                }
            }
        }
    }
    out
}

#[test]
fn structured_handover_keeps_standing_rules_the_short_one_loses() {
    let dir = tempfile::tempdir().unwrap();
    let a = rule_outcomes(
        &prompt_variant("summary-a.md", ""),
        &dir.path().join("a"),
        2,
    );
    let b = rule_outcomes(
        &prompt_variant("summary-b.md", ""),
        &dir.path().join("b"),
        2,
    );
    // (a, b) per rule check: (retained, restated) on each side.
    type Pair = ((bool, bool), (bool, bool));
    let pairs: Vec<Pair> = a
        .iter()
        .zip(&b)
        .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
        .collect();
    assert!(pairs.len() >= 40, "only {} paired rule checks", pairs.len());
    for (name, pick) in [
        (
            "retained",
            (|p: (bool, bool)| p.0) as fn((bool, bool)) -> bool,
        ),
        ("restated", |p: (bool, bool)| p.1),
    ] {
        let lost = pairs.iter().filter(|(x, y)| pick(*x) && !pick(*y)).count() as u64;
        let won = pairs.iter().filter(|(x, y)| !pick(*x) && pick(*y)).count() as u64;
        let n = pairs.len() as f64;
        let ra = pairs.iter().filter(|p| pick(p.0)).count() as f64 / n;
        let rb = pairs.iter().filter(|p| pick(p.1)).count() as f64 / n;
        let test = mcnemar(lost, won);
        eprintln!(
            "rules {name}: summary-a {ra:.3} vs summary-b {rb:.3} over {} checks (p {:.2e})",
            pairs.len(),
            test.p_value
        );
        assert!(
            ra > rb && test.p_value < 0.01,
            "rules {name}: summary-a {ra:.3} vs summary-b {rb:.3} (b {lost}, c {won}, p {})",
            test.p_value
        );
    }
}

#[test]
fn structured_handover_keeps_the_goal_the_short_one_loses() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let agent = OfflineProvider::new();
    let mut coverage: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for (vi, file) in ["summary-a.md", "summary-b.md"].iter().enumerate() {
        let cfg = prompt_variant(file, "");
        for (ti, path) in TRACES.iter().enumerate() {
            let trace = load(path);
            let params = DriftParams {
                after_compactions: 3,
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
            for p in &probes {
                coverage[vi].push(p.scores["goal_coverage"]);
            }
        }
    }
    assert_eq!(coverage[0].len(), coverage[1].len(), "folds differ");
    assert!(coverage[0].len() >= 8, "{} probes", coverage[0].len());
    let deltas: Vec<f64> = coverage[0]
        .iter()
        .zip(&coverage[1])
        .map(|(a, b)| a - b)
        .collect();
    let d = paired_delta(&deltas, 7).unwrap();
    eprintln!(
        "goal coverage: summary-a {:.3} vs summary-b {:.3} over {} probes (p {:?})",
        coverage[0].iter().sum::<f64>() / coverage[0].len() as f64,
        coverage[1].iter().sum::<f64>() / coverage[1].len() as f64,
        deltas.len(),
        d.p_value
    );
    assert!(
        d.mean_delta > 0.2 && d.p_value.unwrap() < 0.01,
        "goal coverage a − b: {} (p {:?}) over {:?} vs {:?}",
        d.mean_delta,
        d.p_value,
        coverage[0],
        coverage[1]
    );
}

#[test]
fn without_kept_history_rule_retention_never_recovers_across_folds() {
    let dir = tempfile::tempdir().unwrap();
    // Presets that keep no history (`history = "none"`): langchain (summary chained from the
    // previous one, clipped to its budget) and digitorn (KEY FACTS recap as a system message).
    // Windows where no emergency truncation happens: with one, a later summary can restore a
    // rule from the chained summary text the engine keeps (docs/evals.md).
    let folds = 4;
    let kinds = RuleKind::ALL.len();
    let mut dropped = 0;
    for (vi, preset) in ["langchain", "digitorn"].iter().enumerate() {
        let cfg = config(&format!("preset = \"{preset}\"\nwindow = 12000\n"));
        let out = rule_outcomes(&cfg, &dir.path().join(vi.to_string()), folds);
        let mut first = (0usize, 0usize);
        // out is per (trace, seed) × fold × kind.
        for unit in out.chunks(folds * kinds) {
            let mut before: Option<usize> = None;
            for (f, fold) in unit.chunks(kinds).enumerate() {
                if fold[0].is_none() {
                    continue;
                }
                let kept = fold.iter().filter(|x| x.unwrap().0).count();
                if f == 0 {
                    first.0 += kept;
                    first.1 += kinds;
                }
                if let Some(b) = before {
                    assert!(
                        kept <= b,
                        "{preset}: retention rose from {b} to {kept} at fold {}",
                        f + 1
                    );
                    dropped += (kept < b) as usize;
                }
                before = Some(kept);
            }
        }
        assert!(
            first.1 > 0 && first.0 * 2 >= first.1,
            "{preset}: fewer than half of the rules survive the first fold ({first:?})"
        );
    }
    assert!(
        dropped >= 1,
        "retention never fell from one fold to the next"
    );
}

#[test]
fn a_rules_suite_runs_one_sample_per_fold() {
    use ctxbench::record::Sample;
    use support::suite::prompt_file;
    let tmp = tempfile::tempdir().unwrap();
    let text = support::suite::SuiteBuilder::new("rules-test")
        .dataset(TRACES[0].trim_start_matches("datasets/"))
        .baseline("a")
        .base("preset = \"deepagents\"\nwindow = 20000\nsummarize.trigger.fraction = 0.3")
        .variant("a", prompt_file("summary-a.md"))
        .variant("b", prompt_file("summary-b.md"))
        .eval("replay", "enabled = false")
        .eval(
            "rules",
            "kinds = [\"forbid_path\", \"never_command\"]\nafter_compactions = 2",
        )
        .eval("drift", "after_compactions = 2")
        .text();
    let samples: Vec<Sample> = support::run::samples(&support::run::run_ok(tmp.path(), &text));
    assert_eq!(samples.len(), 8, "2 variants × 2 folds × (rules, drift)");
    let mut by: BTreeMap<(String, u64), f64> = BTreeMap::new();
    let mut goal: BTreeMap<(String, u64), f64> = BTreeMap::new();
    for s in &samples {
        let fold = s.params["fold"].as_u64().unwrap();
        assert_eq!(s.sample, format!("fold={fold}"));
        assert!(!s.scores.contains_key("fold"), "a parameter is not a score");
        if s.eval == "drift" {
            // Drift is one sample per fold too: one probe, at that fold's view.
            assert_eq!(s.scores["probes"], 1.0, "{}", s.evidence);
            assert_eq!(s.evidence["reached"], true);
            goal.insert((s.variant.clone(), fold), s.scores["goal_coverage"]);
            continue;
        }
        assert_eq!(s.eval, "rules");
        let fold = s.params["fold"].as_u64().unwrap();
        assert_eq!(s.sample, format!("fold={fold}"));
        assert_eq!(s.scores["rules"], 2.0);
        assert_eq!(s.evidence["reached"], true, "{}", s.evidence);
        // The agent's restating call is the eval agent's, spent and counted (a known $0 offline).
        assert!(s.tokens.eval_agent.input > 0, "{:?}", s.tokens);
        assert_eq!(s.cost_usd.eval_agent, Some(0.0));
        assert!(!s.summaries.is_empty(), "summaries recorded");
        by.insert((s.variant.clone(), fold), s.scores["rules_retained"]);
    }
    for fold in 1..=2 {
        assert!(
            by[&("a".into(), fold)] > by[&("b".into(), fold)],
            "fold {fold}: {by:?}"
        );
        assert!(
            goal[&("a".into(), fold)] > goal[&("b".into(), fold)],
            "fold {fold}: {goal:?}"
        );
    }
}
