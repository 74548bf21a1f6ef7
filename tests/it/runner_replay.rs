//! The real `replay` and `invariants` executor on bundled traces: an aggressive summarization
//! trigger compacts more and sends fewer tokens than the baseline; invariants hold; bad engine
//! tables and unwired summary providers are configuration errors at their line.

use crate::support;

use crate::support::suite::{SuiteBuilder, AGGRESSIVE};
use ctxbench::record::Sample;
use ctxbench::runner::session::{self, ImportLoader};
use std::collections::BTreeMap;

/// Two real traces, `baseline` and `aggressive`, invariants; `extra` is appended verbatim.
fn suite_text(extra: &str) -> String {
    SuiteBuilder::new("replay-test")
        .mini_swe(&[
            "astropy__astropy-12907.traj.json",
            "psf__requests-1142.traj.json",
        ])
        .baseline("baseline")
        .deepagents(20000)
        .variant("baseline", "")
        .variant("aggressive", AGGRESSIVE)
        .eval("invariants", "")
        .raw(extra)
        .text()
}

/// The 1-based line of `text` that starts with `start`.
fn line_of(text: &str, start: &str) -> usize {
    1 + text.lines().position(|l| l.starts_with(start)).unwrap()
}

use crate::support::run::load;

#[test]
fn aggressive_trigger_compacts_more_and_sends_less() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(tmp.path(), &suite_text("")).unwrap();
    let out = support::run::run(&suite);
    assert_eq!(out.failed_total, 0);
    let text = std::fs::read_to_string(out.run_dir.join("samples.jsonl")).unwrap();
    let samples: Vec<Sample> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 2 traces × 2 variants × (replay + invariants)
    assert_eq!(samples.len(), 8);
    let mut input: BTreeMap<&str, u64> = BTreeMap::new();
    let mut compactions: BTreeMap<&str, f64> = BTreeMap::new();
    for s in &samples {
        assert!(s.error.is_none(), "{:?}", s.error);
        match s.eval.as_str() {
            "replay" => {
                *input.entry(s.variant.as_str()).or_default() += s.tokens.agent.input;
                *compactions.entry(s.variant.as_str()).or_default() +=
                    s.compactions.values().sum::<u64>() as f64;
                assert!(!s.timeline.is_empty());
                assert!(s.tokens.agent.cached <= s.tokens.agent.input);
            }
            "invariants" => assert_eq!(s.passed, Some(true), "{}", s.evidence),
            other => panic!("unexpected eval {other}"),
        }
    }
    assert!(input["aggressive"] < input["baseline"], "{input:?}");
    assert!(
        compactions["aggressive"] > compactions["baseline"],
        "{compactions:?}"
    );
}

#[test]
fn engine_errors_name_the_variant_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let text = suite_text("").replace(
        "summarize.trigger.fraction = 0.15",
        "summarize.trigger.fraction = 0.15\nsumarize.keep.messages = 3",
    );
    // Engine variants are typed when the suite loads: the error comes before any planning.
    let err = anyhow::Error::from(load(tmp.path(), &text).err().unwrap());
    assert_eq!(ctxbench::cli::exit_code_for(&err), 2);
    let msg = err.to_string();
    let line = line_of(&text, "sumarize");
    assert!(
        msg.contains(&format!(
            "suite.toml:{line}: engine variant `aggressive`: `sumarize`: unknown field `sumarize`"
        )),
        "{msg}"
    );
    assert!(msg.ends_with("(did you mean `summarize`?)"), "{msg}");

    // A hosted API without `api_key_env` is the suite's mistake, said at load, at its table.
    let text = suite_text("[providers.summary]\nkind = \"openai\"\nmodel = \"gpt-4o-mini\"\n");
    let msg = load(tmp.path(), &text).err().unwrap().to_string();
    let line = line_of(&text, "[providers.summary]");
    assert!(
        msg.contains(&format!(
            "suite.toml:{line}: provider `summary`: openai provider at https://api.openai.com/v1: \
             set `api_key_env`"
        )),
        "{msg}"
    );
    // A key variable that is not set is the environment's: said before any unit runs.
    let text = text.replace(
        "model = \"gpt-4o-mini\"\n",
        "model = \"gpt-4o-mini\"\napi_key_env = \"CTXBENCH_TEST_KEY_THAT_IS_NOT_SET\"\n",
    );
    let suite = load(tmp.path(), &text).unwrap();
    let planned = session::plan_run(&suite, &ImportLoader).unwrap();
    let err = ctxbench::cli::run::default_router(&planned.plan, &suite)
        .err()
        .unwrap();
    assert!(err.to_string().contains("provider `summary`"), "{err}");
    assert_eq!(ctxbench::cli::exit_code_for(&err), 2);

    let text = suite_text("[providers.summary]\nkind = \"openai\"\nmodle = \"gpt-4o-mini\"\n");
    // Provider roles are typed at load too.
    let msg = load(tmp.path(), &text).err().unwrap().to_string();
    let line = line_of(&text, "modle");
    assert!(
        msg.contains(&format!(
            "suite.toml:{line}: provider `summary`: `modle`: unknown field `modle`"
        )),
        "{msg}"
    );
    assert!(msg.contains("did you mean `model`?"), "{msg}");
}

/// Run `text` as a suite with the real executors; the samples it journaled.
fn run_samples(text: &str) -> Vec<Sample> {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::run::run(&load(tmp.path(), text).unwrap());
    support::run::samples(&out.run_dir)
}

#[test]
fn the_cost_ceiling_prices_calls_with_the_suites_pricing() {
    // A $1000 session ceiling priced as gpt-4o: the bundled price ($2.50/Mtok input) never
    // reaches it on a short trace; the suite's `[pricing]` override ($1e9/Mtok) trips it at the
    // first call, so the replay stops.
    let text = |pricing: &str| {
        SuiteBuilder::new("ceiling-test")
            .mini_swe(&["psf__requests-1142.traj.json"])
            .baseline("ceiling")
            .base("preset = \"core-agent\"\nwindow = 20000")
            .variant(
                "ceiling",
                "cost_ceiling.per_session_usd = 1000.0\ncost_ceiling.model = \"gpt-4o\"",
            )
            .eval("invariants", "")
            .raw(pricing)
            .text()
    };
    let stopped = |samples: &[Sample]| -> Vec<serde_json::Value> {
        samples
            .iter()
            .filter(|s| s.eval == "invariants") // its evidence says whether the replay stopped
            .map(|s| {
                assert!(s.error.is_none(), "{:?}", s.error);
                s.evidence["stopped"].clone()
            })
            .collect()
    };
    let bundled = stopped(&run_samples(&text("")));
    assert!(!bundled.is_empty());
    assert!(bundled.iter().all(|s| s.is_null()), "{bundled:?}");
    let priced = stopped(&run_samples(&text(
        "[pricing.\"gpt-4o\"]\ninput = 1e9\noutput = 1e9\n",
    )));
    assert_eq!(priced.len(), bundled.len());
    for reason in &priced {
        let reason = reason["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with("cost ceiling: session spend"),
            "{priced:?}"
        );
    }
}
