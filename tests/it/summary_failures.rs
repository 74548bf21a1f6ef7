//! Failed summaries count: against the fault-injecting mock server, every unit whose numbers
//! differ from a healthy run is either an error (kind `summary_failed`, the default) or, with
//! `[engine] on_summary_error = "record"`, a success flagged with `summary_failures` > 0.

use crate::support;

use crate::support::mock_llm::{openai_error, openai_text, MockLlm, Recorded, Reply};
use ctxbench::record::{RunDir, Sample};
use ctxbench::runner::session::RunOptions;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

const HEALTHY: &str = "SESSION INTENT: fix the separability matrix. SUMMARY: read the \
                       modeling code, ran the tests, edited separable.py.";

fn suite_text(base_url: &str, policy: &str) -> String {
    support::suite::remote_summaries("summary-faults", base_url, "")
        .suite_line("repeats = 6")
        .suite_line("concurrency = 2")
        .engine_line(format!("on_summary_error = {policy:?}"))
        .text()
}

/// A mock server on its own runtime; runs of the suite against it.
struct Harness {
    rt: tokio::runtime::Runtime,
    server: MockLlm,
}

impl Harness {
    fn new() -> Harness {
        let (rt, server) = MockLlm::on_own_runtime();
        Harness { rt, server }
    }

    /// Run (or, with `retry`, resume with `--retry-failed`) the suite in `dir` while the
    /// server answers with `responder`; the samples by unit id.
    fn run_in(
        &self,
        dir: &Path,
        policy: &str,
        responder: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
        retry: bool,
    ) -> BTreeMap<String, Sample> {
        self.server.respond_with(responder);
        let suite =
            support::run::load(dir, &suite_text(&self.server.openai_base_url(), policy)).unwrap();
        let opts = RunOptions {
            run_id: (!retry).then(|| "r".into()),
            resume: retry.then(|| dir.join("out/r")),
            retry_failed: retry,
            executor: "default".into(),
            ..RunOptions::default()
        };
        let (prepared, router) = support::run::prepare(&suite, &opts);
        let out = support::run::execute(&self.rt, prepared, router);
        let samples = RunDir::new(&out.run_dir).read().unwrap().samples;
        samples
            .into_iter()
            .map(|s| (s.unit_id.clone(), s))
            .collect()
    }
}

/// Run the suite in a fresh directory against a fresh server.
fn run(
    policy: &str,
    responder: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
) -> BTreeMap<String, Sample> {
    let tmp = tempfile::tempdir().unwrap();
    Harness::new().run_in(tmp.path(), policy, responder, false)
}

fn healthy(_: &Recorded) -> Reply {
    Reply::ok(openai_text(HEALTHY, 500, 40))
}

/// Every third request fails: a rejected request (HTTP 400, not retried), an empty text, an
/// error string in place of a summary, in turn; the others are healthy.
fn faulty() -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    let n = AtomicUsize::new(0);
    move |r| match n.fetch_add(1, Ordering::SeqCst) % 9 {
        0 => Reply::status(
            400,
            openai_error("bad request", "invalid_request_error", "400"),
        ),
        3 => Reply::ok(openai_text("", 500, 0)),
        6 => Reply::ok(openai_text("Error: upstream model unavailable", 500, 5)),
        _ => healthy(r),
    }
}

/// The numbers a reader compares: tokens, cost, compactions, scores (the failure count aside).
fn numbers(s: &Sample) -> serde_json::Value {
    let mut scores = s.scores.clone();
    scores.remove("summary_failures");
    serde_json::json!({
        "tokens": serde_json::to_value(s.tokens).unwrap(),
        "cost": serde_json::to_value(s.cost_usd).unwrap(),
        "compactions": s.compactions,
        "scores": scores,
    })
}

#[test]
fn every_unit_that_differs_from_a_healthy_run_is_an_error_or_flagged() {
    let base = run("record", healthy);
    assert!(base.values().all(|s| s.error.is_none()));
    assert!(
        base.values()
            .all(|s| s.compactions.get("summarized") > Some(&1)),
        "the healthy run summarizes several times per unit"
    );

    let recorded = run("record", faulty());
    let mut flagged = 0;
    for (id, s) in &recorded {
        assert!(s.error.is_none(), "{id}: {:?}", s.error);
        let failures = s.scores.get("summary_failures").copied().unwrap_or(0.0);
        if failures > 0.0 {
            flagged += 1;
        }
        if numbers(s) != numbers(&base[id]) {
            assert!(
                failures > 0.0,
                "{id} differs from the healthy run but is not flagged"
            );
        }
    }
    assert!(flagged > 0, "the faults reached no unit");
    assert!(
        recorded
            .values()
            .any(|s| numbers(s) != numbers(&base[&s.unit_id])),
        "failed summaries changed nothing: the test would not see a regression"
    );

    let errored = run("error", faulty());
    let mut errors = 0;
    for (id, s) in &errored {
        if let Some(e) = &s.error {
            errors += 1;
            assert_eq!(e.kind, "summary_failed", "{id}");
            assert!(
                e.message.contains("invalid_request") || e.message.contains("unusable"),
                "{id}: the error names the class: {}",
                e.message
            );
            assert!(s.scores["summary_failures"] >= 1.0);
        } else {
            assert_eq!(
                numbers(s),
                numbers(&base[id]),
                "{id} differs but is not an error"
            );
        }
    }
    assert!(errors > 0);
}

#[test]
fn retry_failed_reruns_the_failed_units_once_the_summarizer_is_back() {
    let h = Harness::new();
    let tmp = tempfile::tempdir().unwrap();
    let first = h.run_in(tmp.path(), "error", faulty(), false);
    let failed = first.values().filter(|s| s.error.is_some()).count();
    assert!(failed > 0);
    let again = h.run_in(tmp.path(), "error", healthy, true);
    assert_eq!(
        again.len(),
        first.len(),
        "one sample per unit, no duplicates"
    );
    assert!(
        again.values().all(|s| s.error.is_none()),
        "failed units ran again"
    );
    let lines = std::fs::read_to_string(tmp.path().join("out/r/samples.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), first.len());
}
