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

/// Long texts go to the run's one `summaries.pack` (no file per text), and `report RUN -o OUT`
/// reads them from RUN (it once looked under OUT and showed "text not loaded").
#[test]
fn long_texts_live_in_the_runs_pack_and_report_elsewhere_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let text = SuiteBuilder::new("summaries-pack")
        .mini_swe(&["astropy__astropy-12907.traj.json"])
        .baseline("prompt-a")
        .base(format!(
            "preset = \"deepagents\"\nwindow = 20000\n{AGGRESSIVE}"
        ))
        .variant("prompt-a", prompt_file("summary-a.md"))
        .variant("prompt-b", prompt_file("summary-b.md"))
        .text();
    let run_dir = run(tmp.path(), &text);
    let dir = RunDir::new(&run_dir);
    let samples = dir.read().unwrap().samples;
    let long: Vec<_> = samples
        .iter()
        .flat_map(|s| &s.summaries)
        .filter(|r| r.file.is_some())
        .collect();
    assert!(!long.is_empty(), "the suite records long summaries");
    assert!(dir.summaries_pack().is_file());
    for r in &long {
        let name = r.file.as_deref().unwrap();
        assert!(!run_dir.join(name).exists(), "no file per text: {name}");
    }
    let texts = dir.summary_texts(long.iter().copied()).unwrap();
    assert_eq!(
        texts.len(),
        long.iter()
            .map(|r| &r.text_digest)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    );
    let out = tmp.path().join("elsewhere");
    let report = |out: &Path| {
        crate::support::cli::ctxbench()
            .args(["report", "--no-png", "-o"])
            .arg(out)
            .arg(&run_dir)
            .assert()
            .success();
        std::fs::read_to_string(out.join("report.html")).unwrap()
    };
    let html = report(&out);
    assert!(!html.contains("text not loaded"), "texts read from RUN");
    assert!(!out.join("summaries.pack").exists());
    // Without the pack the page says which text it could not load: the check above can fail.
    std::fs::remove_file(dir.summaries_pack()).unwrap();
    assert!(report(&tmp.path().join("again")).contains("text not loaded"));
}
