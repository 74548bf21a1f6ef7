//! Replays whose summarizer is a model wait on tokio's blocking pool, not rayon's CPU pool:
//! with a 100 ms answer delay and `concurrency = 8`, eight summary requests are in flight at
//! once even on a 2-core machine (rayon has one thread per core). Cancelling a run whose
//! summarizer never answers ends without a panic.

use crate::support;

use crate::support::mock_llm::{MockLlm, Reply};
use ctxbench::runner::execute::StopReason;
use ctxbench::runner::session::{self};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One trace, `repeats` units of `replay`, an early summary trigger, summaries from `base_url`.
fn suite_text(base_url: &str, repeats: u32) -> String {
    support::suite::remote_summaries("summary-io", base_url, "concurrency = 8")
        .suite_line(format!("repeats = {repeats}"))
        .suite_line("concurrency = 8")
        .text()
}

fn prepare(dir: &Path, text: &str) -> (session::Prepared, ctxbench::runner::Router) {
    let suite = support::run::load(dir, text).unwrap();
    support::run::prepare(&suite, &support::run::options())
}

#[test]
fn eight_summary_calls_are_in_flight_at_once() {
    let (rt, server) = MockLlm::on_own_runtime();
    server.set_delay(Duration::from_millis(100));
    let tmp = tempfile::tempdir().unwrap();
    let (prepared, router) = prepare(tmp.path(), &suite_text(&server.openai_base_url(), 16));
    let out = rt
        .block_on(async {
            let (_tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            session::execute(prepared, Arc::new(router), &mut rx).await
        })
        .unwrap();
    assert_eq!(out.failed_total, 0);
    assert_eq!(out.report.completed, 16);
    assert!(server.request_count() >= 16, "every unit summarizes");
    assert!(
        server.max_in_flight() >= 8,
        "only {} summary calls were in flight at once (cores: {:?})",
        server.max_in_flight(),
        std::thread::available_parallelism()
    );
}

#[test]
fn cancelling_a_run_whose_summarizer_never_answers_does_not_panic() {
    let panics: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&panics);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        seen.lock().unwrap().push(info.to_string());
        default_hook(info);
    }));

    let (rt, server) = MockLlm::on_own_runtime();
    server.respond_with(|_| Reply::Hang);
    let tmp = tempfile::tempdir().unwrap();
    let (prepared, router) = prepare(tmp.path(), &suite_text(&server.openai_base_url(), 4));
    let out = rt
        .block_on(async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let server = &server;
            let interrupt = async move {
                // Ctrl-C twice once the summarizer is stuck on a call.
                while server.request_count() == 0 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                tx.send(()).unwrap();
                tx.send(()).unwrap();
                // Keep the sender: a closed channel is not an interrupt.
                std::future::pending::<()>().await
            };
            tokio::select! {
                out = session::execute(prepared, Arc::new(router), &mut rx) => out,
                () = interrupt => unreachable!(),
            }
        })
        .unwrap();
    assert_eq!(out.report.stop, StopReason::Interrupted);
    assert_eq!(
        out.report.completed + out.report.failed,
        0,
        "{:?}",
        out.report
    );
    // Shutting the runtime down under the abandoned replays cancels their calls.
    drop(server);
    drop(rt);
    let _ = std::panic::take_hook();
    let panics = panics.lock().unwrap();
    assert!(panics.is_empty(), "panicked: {panics:?}");
}
