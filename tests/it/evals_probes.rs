//! `[evals.probes]` on bundled traces with the offline agent: questions generated from what the
//! trace contains (exceptions seen, choices the assistant stated), seeded and deterministic;
//! decision recall moves with what compaction kept; with a judge, the six rubric dimensions
//! are reported as separate scores.

use crate::support;

use crate::support::mock_provider::MockProvider;
use crate::support::traces::engine_config as config;
use ctxbench::engine::{OfflineSummarizer, ResolvedConfig};
use ctxbench::evals::offline_agent::OfflineProvider;
use ctxbench::evals::probes::{self, ProbeKind, ProbeParams};
use ctxbench::pricing::PriceTable;
use ctxbench::providers::{Message, Provider};
use ctxbench::trace::{Trace, Usage};
use std::path::Path;

fn load(name: &str) -> Trace {
    support::traces::import_one(Path::new("datasets/mini-swe-agent").join(name))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// A judge that always gives the same six grades.
fn judge() -> MockProvider {
    let usage = Usage {
        input: 100,
        output: 20,
        ..Usage::default()
    };
    MockProvider::replying(|req| {
        assert!(req.messages[0].content.contains("ARTIFACT_TRAIL"));
        let text = "ACCURACY: 4\nCONTEXT_AWARENESS: 3\nARTIFACT_TRAIL: 2\nCOMPLETENESS: 5\nCONTINUITY: 1\nINSTRUCTION_FOLLOWING: 0\nFine.";
        Message::assistant(text, vec![])
    })
    .with_model("fixed")
    .with_usage(usage)
}

fn run(
    trace: &Trace,
    cfg: &ResolvedConfig,
    params: ProbeParams,
    judge: Option<&dyn Provider>,
    seed: u64,
    dir: &Path,
) -> probes::ProbeOutcome {
    let prepared = probes::prepare(
        trace,
        cfg,
        &OfflineSummarizer,
        PriceTable::bundled(),
        dir.to_path_buf(),
        seed,
    )
    .unwrap();
    runtime()
        .block_on(probes::ask(
            trace,
            &prepared,
            params,
            &OfflineProvider::new(),
            judge,
            seed,
            "t",
        ))
        .unwrap()
}

#[test]
fn decision_probes_ask_about_the_assistants_own_choices() {
    let dir = tempfile::tempdir().unwrap();
    // django-11138: the assistant states several choices ("conversion should be from Paris to
    // Paris, instead of UTC to Paris"); the uncompressed view still shows them, a preset that
    // drops the history and keeps no summary of the assistant's reasoning does not.
    let trace = load("django__django-11138.traj.json");
    let params = ProbeParams {
        kind: ProbeKind::Decision,
        per_kind: 3,
        judge: false,
        max_output_tokens: None,
    };
    let full = run(
        &trace,
        &config("preset = \"none\"\n"),
        params,
        None,
        1,
        &dir.path().join("n"),
    );
    assert_eq!(full.scores["questions"], 3.0);
    assert!(
        full.scores.contains_key("decision_overlap"),
        "{:?}",
        full.scores
    );
    let trunc = config("preset = \"digitorn-truncate\"\nwindow = 12000\n");
    let cut = run(&trace, &trunc, params, None, 1, &dir.path().join("t"));
    assert!(
        full.scores["decision_overlap"] > cut.scores["decision_overlap"],
        "uncompressed {:?} vs truncated {:?}",
        full.scores,
        cut.scores
    );
    // Seeded: the same seed asks the same questions, another seed may start elsewhere.
    let again = run(
        &trace,
        &config("preset = \"none\"\n"),
        params,
        None,
        1,
        &dir.path().join("a"),
    );
    assert_eq!(full.evidence, again.evidence);
}

#[test]
fn a_judge_grades_six_dimensions_reported_separately() {
    let dir = tempfile::tempdir().unwrap();
    let trace = load("astropy__astropy-12907.traj.json");
    let j = judge();
    for kind in [ProbeKind::Recall, ProbeKind::Artifact, ProbeKind::Decision] {
        let params = ProbeParams {
            kind,
            per_kind: 2,
            judge: true,
            max_output_tokens: None,
        };
        let out = run(
            &trace,
            &config("preset = \"deepagents\"\nwindow = 20000\n"),
            params,
            Some(&j),
            3,
            &dir.path().join(format!("{kind:?}")),
        );
        let want = [
            ("judge_accuracy", 4.0),
            ("judge_context_awareness", 3.0),
            ("judge_artifact_trail", 2.0),
            ("judge_completeness", 5.0),
            ("judge_continuity", 1.0),
            ("judge_instruction_following", 0.0),
        ];
        for (k, v) in want {
            assert_eq!(out.scores.get(k), Some(&v), "{kind:?}: {:?}", out.scores);
        }
    }
}
