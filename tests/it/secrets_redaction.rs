//! A whole `ctxbench run` against servers that echo the API key back — in 200 answers (plainly,
//! in the model id, behind a JSON escape) and in error bodies — stores and prints the key
//! nowhere: zero occurrences under the run directory, the cache directory and the captured
//! stdout/stderr.

#![cfg(unix)]

use crate::support;

use std::path::{Path, PathBuf};

use crate::support::mock_llm::{self as mock, MockLlm};
use crate::support::suite::base_and_aggressive;

const CANARY: &str = "sk-canary-7f3a9c2e41d8b6";
/// The key without its first character: also catches a JSON-escaped first character.
const CANARY_TAIL: &str = "canary-7f3a9c2e41d8b6";
const KEY_VAR: &str = "CTXBENCH_TEST_CANARY_KEY";

fn suite(dir: &Path, base_url: &str) -> PathBuf {
    let provider = |role: &str, retries: &str| {
        format!(
            "kind = \"openai\"\nmodel = \"m-{role}\"\nbase_url = \"{base_url}\"\n\
             api_key_env = \"{KEY_VAR}\"\n{retries}"
        )
    };
    base_and_aggressive("canary")
        .seed(1)
        .suite_line("concurrency = 2")
        .mini_swe(&["astropy__astropy-12907.traj.json"])
        .deepagents(20000)
        .eval(
            "needle",
            "depths = [0.5]\npositions = [\"tool\"]\nmax_steps = 3",
        )
        .eval("drift", "after_compactions = 1")
        .table("providers.agent", provider("agent", "max_retries = 0"))
        .table(
            "providers.summary",
            provider("summary", "max_retries = 2\nretry_initial_ms = 1"),
        )
        .write(dir, "suite.toml")
}

/// (files scanned, files holding the canary, occurrences of the mask) under `dir`.
fn scan(dir: &Path) -> (usize, Vec<String>, usize) {
    support::leaks::scan(dir, CANARY_TAIL)
}

#[test]
fn an_echoed_key_is_stored_and_printed_nowhere() {
    let (_rt, server) = MockLlm::on_own_runtime(); // the runtime serves the mock
    server.respond_with(mock::echo_key_responder());

    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), &server.openai_base_url());
    let cache = dir.path().join("cache");
    let out = std::process::Command::new(support::cli::bin())
        .args(["run", suite.to_str().unwrap(), "--run-id", "canary"])
        .env(KEY_VAR, CANARY)
        .env("CTXBENCH_CACHE_DIR", &cache)
        .env("RUST_LOG", "debug")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    // The key did reach the server, and the server did echo it.
    let requests = server.requests();
    assert!(requests.len() > 10, "only {} requests", requests.len());
    assert!(requests.iter().all(|r| mock::request_key(r) == CANARY));

    let run_dir = dir.path().join("out/canary");
    assert!(
        run_dir.join("samples.jsonl").is_file(),
        "no samples (exit {:?}):\n{stdout}\n{stderr}",
        out.status.code()
    );
    let (run_files, run_leaks, run_masks) = scan(&run_dir);
    let (cache_files, cache_leaks, _) = scan(&cache);
    assert!(
        run_files >= 3 && cache_files >= 1,
        "{run_files} {cache_files}"
    );
    assert!(run_leaks.is_empty(), "key stored in {run_leaks:?}");
    assert!(
        cache_leaks.is_empty(),
        "key stored in the cache: {cache_leaks:?}"
    );
    assert!(!stdout.contains(CANARY_TAIL), "key printed on stdout");
    assert!(!stderr.contains(CANARY_TAIL), "key printed on stderr");
    // The echoes were stored, masked: the check above looked at the right data.
    assert!(run_masks > 0, "no masked echo found in the run directory");
    let samples = std::fs::read_to_string(run_dir.join("samples.jsonl")).unwrap();
    assert!(
        samples.contains("upstream rejected key ***"),
        "no error body reached the samples"
    );
}
