//! Every sample keeps the summaries its replay produced (fold, trace index, prompt digest,
//! tokens, text), so two summary prompts' summaries of the same fold can be put side by side
//! from the run directory alone, without the offload stores.

use crate::support;

use crate::support::suite::{prompt_file, SuiteBuilder, AGGRESSIVE};
use ctxbench::record::summary::text_digest;
use ctxbench::record::RunDir;
use std::path::{Path, PathBuf};

fn run(dir: &Path, text: &str) -> PathBuf {
    support::run::run_ok(dir, text)
}

#[test]
fn samples_keep_their_summaries_and_reports_need_no_store() {
    let tmp = tempfile::tempdir().unwrap();
    let text = SuiteBuilder::new("summaries-test")
        .mini_swe(&["astropy__astropy-12907.traj.json"])
        .baseline("prompt-a")
        .base(format!(
            "preset = \"deepagents\"\nwindow = 20000\n{AGGRESSIVE}"
        ))
        .variant("prompt-a", prompt_file("summary-a.md"))
        .variant("prompt-b", prompt_file("summary-b.md"))
        .text();
    let run_dir = run(tmp.path(), &text);
    // The report reads the run directory only.
    let _ = std::fs::remove_dir_all(run_dir.join("stores"));
    let dir = RunDir::new(&run_dir);
    let samples = dir.read().unwrap().samples;
    assert_eq!(samples.len(), 2);
    let mut texts = Vec::new();
    for s in &samples {
        let prompt = if s.variant == "prompt-a" {
            "summary-a.md"
        } else {
            "summary-b.md"
        };
        let digest = text_digest(
            &std::fs::read_to_string(support::suite::repo().join("evals/prompts").join(prompt))
                .unwrap(),
        );
        // One record per `summarized` point of the timeline, at that point, in fold order.
        let at: Vec<usize> = s
            .timeline
            .iter()
            .filter(|p| p.events.iter().any(|e| e == "summarized"))
            .map(|p| p.trace_index)
            .collect();
        assert!(at.len() >= 2, "{}: {at:?}", s.variant);
        assert_eq!(
            s.summaries
                .iter()
                .map(|r| r.trace_index)
                .collect::<Vec<_>>(),
            at
        );
        for (i, r) in s.summaries.iter().enumerate() {
            assert_eq!(r.fold, i + 1);
            assert_eq!(r.prompt_digest, digest, "{}", s.variant);
            assert!(r.tokens_in > 0 && r.tokens_out > 0, "{r:?}");
            let t = dir.summary_text(r).unwrap();
            assert_eq!(text_digest(&t), r.text_digest);
            assert_eq!(t.chars().count(), r.chars);
        }
        texts.push(dir.summary_text(&s.summaries[0]).unwrap());
    }
    // The two prompts' first summaries of the same fold differ.
    assert_ne!(texts[0], texts[1]);
}
