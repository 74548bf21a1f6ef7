//! The quickstart's needle and drift units through both real-API kinds against the strict fake
//! servers (#26 "Tests the project owns"): Anthropic `claude-sonnet-4-5` and OpenAI `gpt-5-mini`
//! (a reasoning model) as agent and summarizer. Every request must pass the APIs' rules (0
//! answered 400) and every unit must finish (0 failed); the server answers plain text, so the
//! scores themselves say nothing.

use crate::support::cli::{ctxbench, json};
use crate::support::strict_llm::{Scenario, StrictLlm};
use crate::support::suite::{provider_table, quickstart_with};

fn run_kind(kind: &str, model: &str, base_url: &str) -> (serde_json::Value, String) {
    let providers = format!(
        "{}\n{}",
        provider_table("agent", kind, model, base_url),
        provider_table("summary", kind, model, base_url)
    );
    let (m, stderr, _) = run_suite(&providers, &["--eval", "needle", "--eval", "drift"]);
    (m, stderr)
}

/// The quickstart with `providers` and `flags`: its run.json, stderr and samples.
fn run_suite(
    providers: &str,
    flags: &[&str],
) -> (serde_json::Value, String, Vec<serde_json::Value>) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let suite = tmp.path().join("suite.toml");
    std::fs::write(&suite, quickstart_with(&out, providers)).unwrap();
    let run = ctxbench()
        .args(["run", suite.to_str().unwrap(), "--run-id", "strict"])
        .args(flags)
        .output()
        .unwrap();
    // The terminal's end-of-run summary (stdout) with stderr, for the assertions.
    let stderr = format!(
        "{}\n{}",
        String::from_utf8_lossy(&run.stderr),
        String::from_utf8_lossy(&run.stdout)
    );
    assert!(
        run.status.code().is_some_and(|c| c == 0 || c == 1),
        "{stderr}"
    );
    let samples = std::fs::read_to_string(out.join("strict/samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (json(&out.join("strict/run.json")), stderr, samples)
}

#[test]
fn quickstart_needle_and_drift_pass_the_strict_servers_for_both_kinds() {
    let (_rt, server) = StrictLlm::on_own_runtime();
    for (kind, model, base) in [
        ("anthropic", "claude-sonnet-4-5", server.base_url()),
        ("openai", "gpt-5-mini", server.openai_base_url()),
    ] {
        let before = server.accepted();
        let (m, stderr) = run_kind(kind, model, &base);
        let rejected = server.rejected();
        assert!(
            rejected.is_empty(),
            "{kind}: {} request(s) rejected, first: {}",
            rejected.len(),
            rejected[0]
        );
        let units = &m["units"];
        assert_eq!(units["failed"], 0, "{kind}: {units}\n{stderr}");
        assert_eq!(units["recorded"], units["planned"], "{kind}: {units}");
        assert!(units["planned"].as_u64().unwrap() > 100, "{units}");
        assert!(
            server.accepted() - before > 200,
            "{kind}: the model was asked"
        );
    }
}

#[test]
fn quickstart_with_anthropic_extended_thinking_passes_the_thinking_rule() {
    // `thinking` on for the agent: every needle and drift question about a replayed history
    // (recorded without thinking) and every step of the agent's own tool loop must pass the
    // rule that a last assistant turn with tool calls begins with its thinking.
    let (_rt, server) = StrictLlm::on_own_runtime();
    let (_rt2, summary) = StrictLlm::on_own_runtime();
    // The agent's first steps call a tool, so its own loop replays a thinking turn too.
    server.play((0..3).map(|_| {
        Scenario::ToolCalls(vec![(
            "grep".into(),
            serde_json::json!({"pattern": "needle"}),
        )])
    }));
    let providers = format!(
        "{}thinking = 1024\n\n{}",
        provider_table(
            "agent",
            "anthropic",
            "claude-sonnet-4-5",
            &server.base_url()
        ),
        provider_table(
            "summary",
            "anthropic",
            "claude-sonnet-4-5",
            &summary.base_url()
        )
    );
    let (m, stderr, _) = run_suite(
        &providers,
        &[
            "--eval",
            "needle",
            "--eval",
            "drift",
            "--trace",
            "astropy__astropy-12907*",
        ],
    );
    let rejected = server.rejected();
    assert!(
        rejected.is_empty(),
        "{} rejected: {rejected:?}",
        rejected.len()
    );
    let units = &m["units"];
    assert_eq!(units["failed"], 0, "{units}\n{stderr}");
    let thinking_requests = server
        .requests()
        .iter()
        .filter(|r| r.body["thinking"]["type"] == "enabled")
        .count();
    assert!(thinking_requests > 10, "{thinking_requests}");
    // A step after a tool call sent the model's signed thinking back first.
    let replayed = server.requests().iter().any(|r| {
        r.body["messages"].as_array().is_some_and(|ms| {
            ms.iter().any(|m| {
                m["content"][0]["signature"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("strict-sig-"))
            })
        })
    });
    assert!(replayed, "no thinking block sent back");
    // And a history's last tool turn, recorded without thinking, went as text.
    assert!(server
        .requests()
        .iter()
        .any(|r| r.raw_body.contains("[tool call ")));
    assert!(summary.rejected().is_empty(), "{:?}", summary.rejected());
}

#[test]
fn each_evals_max_output_tokens_is_the_limit_its_calls_send() {
    // needle 1234 and drift 777 instead of their defaults (200, 400); a reasoning model gets its
    // reasoning allowance on top of the eval's limit.
    for (model, extra) in [("gpt-4o-mini", 0), ("gpt-5-mini", 25_000)] {
        let (_rt, agent) = StrictLlm::on_own_runtime();
        let (_rt2, summary) = StrictLlm::on_own_runtime();
        let providers = format!(
            "{}\n{}",
            provider_table("agent", "openai", model, &agent.openai_base_url()),
            provider_table("summary", "openai", model, &summary.openai_base_url())
        );
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let suite = tmp.path().join("suite.toml");
        let text = quickstart_with(&out, &providers)
            .replace(
                "[evals.needle]\n",
                "[evals.needle]\nmax_output_tokens = 1234\n",
            )
            .replace(
                "[evals.drift]\n",
                "[evals.drift]\nmax_output_tokens = 777\n",
            );
        assert!(text.contains("= 1234") && text.contains("= 777"));
        std::fs::write(&suite, text).unwrap();
        let run = ctxbench()
            .args(["run", suite.to_str().unwrap(), "--run-id", "limits"])
            .args(["--eval", "needle", "--eval", "drift"])
            .args(["--trace", "astropy__astropy-12907*"])
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let field = if extra > 0 {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        let mut limits: Vec<u64> = agent
            .requests()
            .iter()
            .filter_map(|r| r.body[field].as_u64())
            .collect();
        limits.sort_unstable();
        limits.dedup();
        assert_eq!(limits, [777 + extra, 1234 + extra], "{model}");
        assert!(agent.rejected().is_empty(), "{:?}", agent.rejected());
    }
}

#[test]
fn an_evals_limit_above_the_models_output_limit_is_cut_to_it() {
    // needle 100,000 tokens (the sections take up to 128,000) on Claude Sonnet 4.5, which
    // writes at most 64,000: the API answers "max_tokens: 100000 > 64000, which is the maximum
    // allowed number of output tokens for …" to every needle question asking for more.
    let (_rt, agent) = StrictLlm::on_own_runtime();
    let (_rt2, summary) = StrictLlm::on_own_runtime();
    let model = "claude-sonnet-4-5";
    let providers = format!(
        "{}\n{}",
        provider_table("agent", "anthropic", model, &agent.base_url()),
        provider_table("summary", "anthropic", model, &summary.base_url())
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let suite = tmp.path().join("suite.toml");
    let text = quickstart_with(&out, &providers).replace(
        "[evals.needle]\n",
        "[evals.needle]\nmax_output_tokens = 100000\n",
    );
    assert!(text.contains("= 100000"));
    std::fs::write(&suite, text).unwrap();
    let run = ctxbench()
        .args(["run", suite.to_str().unwrap(), "--run-id", "limits"])
        .args(["--eval", "needle", "--trace", "astropy__astropy-12907*"])
        .output()
        .unwrap();
    let rejected = agent.rejected();
    assert!(
        rejected.is_empty(),
        "{} rejected, first: {}",
        rejected.len(),
        rejected[0]
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let limits: Vec<u64> = agent
        .requests()
        .iter()
        .filter_map(|r| r.body["max_tokens"].as_u64())
        .collect();
    assert!(!limits.is_empty());
    assert!(limits.iter().all(|&m| m == 64_000), "{limits:?}");
}

/// The quickstart's needle units of one trace with the agent `kind` `model` on `server` and
/// `lines` added to its table (a normal summarizer of the same kind): the run's exit code and
/// stderr.
fn run_agent_with(server: &StrictLlm, kind: &str, model: &str, lines: &str) -> (i32, String) {
    let (_rt, summary) = StrictLlm::on_own_runtime();
    let (agent_base, summary_model, summary_base) = match kind {
        "anthropic" => (server.base_url(), "claude-sonnet-4-5", summary.base_url()),
        _ => (
            server.openai_base_url(),
            "gpt-5-mini",
            summary.openai_base_url(),
        ),
    };
    let providers = format!(
        "{}{lines}\n{}",
        provider_table("agent", kind, model, &agent_base),
        provider_table("summary", kind, summary_model, &summary_base)
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let suite = tmp.path().join("suite.toml");
    std::fs::write(&suite, quickstart_with(&out, &providers)).unwrap();
    let run = ctxbench()
        .args(["run", suite.to_str().unwrap(), "--run-id", "params"])
        .args(["--eval", "needle", "--trace", "astropy__astropy-12907*"])
        .output()
        .unwrap();
    (
        run.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

#[test]
fn a_reasoning_effort_the_model_does_not_take_is_refused_at_load() {
    // gpt-5-mini takes minimal, low, medium and high; `none` is gpt-5.1's. The API answers
    // "Unsupported value: 'reasoning_effort' does not support 'none' with this model" to every
    // call, so the suite is refused at the key's line before any is made.
    let (_rt, server) = StrictLlm::on_own_runtime();
    let (code, err) = run_agent_with(
        &server,
        "openai",
        "gpt-5-mini",
        "reasoning_effort = \"none\"\n",
    );
    assert_eq!(code, 2, "{err}\nrejected: {:?}", server.rejected());
    assert!(
        err.contains("suite.toml:") && err.contains("provider `agent`: `reasoning_effort` = \"none\": `gpt-5-mini` takes only minimal, low, medium, high"),
        "{err}"
    );
    assert!(server.requests().is_empty(), "no call is made");
    // A model that does not reason takes none, from `extra_body` either ("Unsupported
    // parameter: 'reasoning_effort' is not supported with this model.").
    let lines = "extra_body = { reasoning_effort = \"low\" }\n";
    let (code, err) = run_agent_with(&server, "openai", "gpt-4o-mini", lines);
    assert_eq!(code, 2, "{err}\nrejected: {:?}", server.rejected());
    assert!(
        err.contains(
            "provider `agent`: `reasoning_effort`: `gpt-4o-mini` is not a reasoning model"
        ),
        "{err}"
    );
    assert!(server.requests().is_empty(), "no call is made");
    // A value it takes passes the server's rule.
    let (code, err) = run_agent_with(
        &server,
        "openai",
        "gpt-5-mini",
        "reasoning_effort = \"minimal\"\n",
    );
    assert_eq!(code, 0, "{err}");
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
    assert!(server
        .requests()
        .iter()
        .all(|r| r.body["reasoning_effort"] == "minimal"));
}

#[test]
fn gpt_5_1_without_reasoning_takes_a_temperature() {
    // With `reasoning_effort` "none" gpt-5.1 does not reason and takes `temperature`/`top_p`
    // again; ctxbench refused them at load for every reasoning model. With another effort the
    // API answers "Unsupported value: 'temperature' does not support 0 with this model".
    let (_rt, server) = StrictLlm::on_own_runtime();
    let lines = "reasoning_effort = \"none\"\ntemperature = 0.0\n";
    let (code, err) = run_agent_with(&server, "openai", "gpt-5.1", lines);
    assert_eq!(code, 0, "{err}\nrejected: {:?}", server.rejected());
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
    assert!(server
        .requests()
        .iter()
        .all(|r| r.body["temperature"] == 0.0 && r.body["reasoning_effort"] == "none"));
    let lines = "reasoning_effort = \"low\"\ntemperature = 0.0\n";
    let (code, err) = run_agent_with(&server, "openai", "gpt-5.1", lines);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`temperature`: `gpt-5.1` is a reasoning model"),
        "{err}"
    );
}

#[test]
fn stop_sequences_the_openai_api_refuses_are_refused_at_load() {
    // ctxbench sends no `stop` of its own; `extra_body` can. OpenAI takes at most 4 sequences
    // and none on a reasoning model: every call would be answered 400.
    for (model, stop, want) in [
        (
            "gpt-4o-mini",
            "[\"a\", \"b\", \"c\", \"d\", \"e\"]",
            "5 sequences; the OpenAI API takes 1 to 4",
        ),
        (
            "gpt-5-mini",
            "[\"DONE\"]",
            "reasoning models such as `gpt-5-mini` refuse it",
        ),
    ] {
        let (_rt, server) = StrictLlm::on_own_runtime();
        let lines = format!("extra_body = {{ stop = {stop} }}\n");
        let (code, err) = run_agent_with(&server, "openai", model, &lines);
        assert_eq!(code, 2, "{model}: {err}\nrejected: {:?}", server.rejected());
        assert!(
            err.contains("suite.toml:")
                && err.contains("provider `agent`: `stop` in `extra_body`: ")
                && err.contains(want),
            "{model}: {err}"
        );
        assert!(server.requests().is_empty(), "no call is made");
    }
    // Four on a model that takes them pass the server's rule.
    let (_rt, server) = StrictLlm::on_own_runtime();
    let lines = "extra_body = { stop = [\"a\", \"b\", \"c\", \"d\"] }\n";
    let (code, err) = run_agent_with(&server, "openai", "gpt-4o-mini", lines);
    assert_eq!(code, 0, "{err}");
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
    assert!(server
        .requests()
        .iter()
        .all(|r| r.body["stop"].as_array().is_some_and(|a| a.len() == 4)));
}

#[test]
fn a_thinking_budget_or_a_temperature_on_claude_opus_4_7_is_refused_at_load() {
    // Claude Opus 4.7 takes only adaptive thinking and no sampling parameters; `thinking =
    // 1024` sends the budget form,
    // which it answers 400 "\"thinking.type.enabled\" is not supported for this model".
    let (_rt, server) = StrictLlm::on_own_runtime();
    let (code, err) = run_agent_with(&server, "anthropic", "claude-opus-4-7", "thinking = 1024\n");
    assert_eq!(code, 2, "{err}\nrejected: {:?}", server.rejected());
    assert!(
        err.contains("suite.toml:")
            && err.contains(
                "provider `agent`: `thinking`: `claude-opus-4-7` takes only adaptive thinking"
            ),
        "{err}"
    );
    assert!(server.requests().is_empty(), "no call is made");
    // A temperature is refused alike ("`temperature` is deprecated for this model.").
    let (code, err) = run_agent_with(
        &server,
        "anthropic",
        "claude-opus-4-7",
        "temperature = 0.0\n",
    );
    assert_eq!(code, 2, "{err}\nrejected: {:?}", server.rejected());
    assert!(
        err.contains(
            "provider `agent`: `temperature`: `claude-opus-4-7` takes no sampling parameters"
        ),
        "{err}"
    );
    assert!(server.requests().is_empty(), "no call is made");
    // Without either the model passes (its output limit, 128,000, is known too).
    let (code, err) = run_agent_with(&server, "anthropic", "claude-opus-4-7", "");
    assert_eq!(code, 0, "{err}");
    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
}

#[test]
fn a_reasoning_model_cut_off_at_its_limit_scores_no_plain_miss() {
    // Every agent answer comes back "" with finish_reason length (a reasoning model that spent
    // its limit thinking); the summarizer is a normal server.
    let (_rt, agent) = StrictLlm::on_own_runtime();
    agent.always(Scenario::LengthEmpty);
    let summary = {
        let (rt, s) = StrictLlm::on_own_runtime();
        (rt, s)
    };
    let providers = format!(
        "{}\n{}",
        provider_table("agent", "openai", "gpt-5-mini", &agent.openai_base_url()),
        provider_table(
            "summary",
            "openai",
            "gpt-5-mini",
            &summary.1.openai_base_url()
        )
    );
    let (m, stderr, samples) = run_suite(
        &providers,
        &["--eval", "needle", "--trace", "astropy__astropy-12907*"],
    );
    assert!(agent.rejected().is_empty(), "{:?}", agent.rejected());
    let needle: Vec<&serde_json::Value> =
        samples.iter().filter(|s| s["eval"] == "needle").collect();
    assert!(!needle.is_empty(), "{m}\n{stderr}");
    for s in &needle {
        assert_eq!(
            s["error"]["kind"], "answer_cut_off",
            "a cut-off answer must be an error, not a scored miss: {s}"
        );
    }
    assert_eq!(m["units"]["failed"].as_u64(), Some(needle.len() as u64));
}

#[test]
fn a_server_that_truncates_prompts_silently_is_flagged() {
    // The agent's server reports a quarter of the prompt tokens it was sent (an Ollama cutting
    // the view to its context); the summarizer is a normal server.
    let (_rt, agent) = StrictLlm::on_own_runtime();
    agent.always(Scenario::UnderReportedPrompt(0.25));
    let (_rt2, summary) = StrictLlm::on_own_runtime();
    let providers = format!(
        "{}\n{}",
        provider_table("agent", "openai", "qwen3-8b", &agent.openai_base_url()),
        provider_table("summary", "openai", "qwen3-8b", &summary.openai_base_url())
    );
    let (m, out, samples) = run_suite(
        &providers,
        &["--eval", "needle", "--trace", "astropy__astropy-12907*"],
    );
    let needle: Vec<&serde_json::Value> =
        samples.iter().filter(|s| s["eval"] == "needle").collect();
    assert!(!needle.is_empty(), "{m}");
    for s in &needle {
        assert!(
            s["scores"]["prompt_truncated"]
                .as_f64()
                .is_some_and(|n| n >= 1.0),
            "{}",
            s["scores"]
        );
    }
    assert!(
        out.contains("FLAGGED") && out.contains("prompt_truncated"),
        "{out}"
    );
}

/// The quickstart's units of one trace with the agent on `agent` (`kind`, a normal summarizer
/// of the same kind) and `flags`: run.json, terminal output and samples of eval `eval`.
fn one_trace(
    agent: &StrictLlm,
    kind: &str,
    eval: &str,
    flags: &[&str],
) -> (serde_json::Value, String, Vec<serde_json::Value>) {
    let (_rt, summary) = StrictLlm::on_own_runtime();
    let (model, agent_base, summary_base) = match kind {
        "anthropic" => ("claude-sonnet-4-5", agent.base_url(), summary.base_url()),
        _ => (
            "gpt-5-mini",
            agent.openai_base_url(),
            summary.openai_base_url(),
        ),
    };
    let providers = format!(
        "{}\n{}",
        provider_table("agent", kind, model, &agent_base),
        provider_table("summary", kind, model, &summary_base)
    );
    let mut all = vec!["--eval", eval, "--trace", "astropy__astropy-12907*"];
    all.extend_from_slice(flags);
    let (m, out, samples) = run_suite(&providers, &all);
    assert!(agent.rejected().is_empty(), "{:?}", agent.rejected());
    let of_eval: Vec<serde_json::Value> =
        samples.into_iter().filter(|s| s["eval"] == eval).collect();
    assert!(!of_eval.is_empty(), "{m}\n{out}");
    (m, out, of_eval)
}

/// Dollars a sample spent on model calls (summarizer, judge, eval agent).
fn spent(s: &serde_json::Value) -> f64 {
    ["summarizer", "judge", "eval_agent"]
        .iter()
        .map(|r| s["cost_usd"][r].as_f64().unwrap_or(0.0))
        .sum()
}

#[test]
fn a_failed_unit_keeps_what_it_spent_and_the_budget_counts_it() {
    // Every agent answer is cut off at its limit (200 output tokens, billed): the units fail,
    // and what their calls cost (the cut-off calls, the references, the summaries) still counts.
    let (_rt, agent) = StrictLlm::on_own_runtime();
    agent.always(Scenario::LengthEmpty);
    let (m, out, needle) = one_trace(&agent, "openai", "needle", &[]);
    let mut total = 0.0;
    for s in &needle {
        assert_eq!(s["error"]["kind"], "answer_cut_off", "{s}");
        let t = &s["tokens"]["eval_agent"];
        assert!(
            t["output"].as_u64().unwrap() >= 200,
            "the cut-off call: {t}"
        );
        assert!(s["cost_usd"]["eval_agent"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["cost_usd"]["summarizer"].is_f64(), "{s}");
        total += spent(s);
    }
    assert!(
        needle
            .iter()
            .any(|s| s["tokens"]["summarizer"]["input"].as_u64() > Some(0)
                && s["cost_usd"]["summarizer"].as_f64() > Some(0.0)),
        "a failed unit's summaries count too"
    );
    let reported = m["totals"]["spent_usd"].as_f64().unwrap();
    assert!(
        (reported - total).abs() < 1e-6,
        "{} vs {total}\n{out}",
        m["totals"]
    );
    // A budget below what the failed units spend stops the run.
    let budget = format!("{}", total / 4.0);
    let (m, _, _) = one_trace(
        &agent,
        "openai",
        "needle",
        &["--max-cost-usd", &budget, "--ignore-estimate"],
    );
    let units = &m["units"];
    assert!(
        units["not_run_budget"].as_u64() > Some(0),
        "the budget stopped nothing: {units}"
    );
}
#[test]
fn answers_that_are_no_answers_are_errors() {
    for (kind, reason, content, expected) in [
        ("openai", "content_filter", "", "answer_refused"),
        ("openai", "stop", "", "answer_empty"),
        ("anthropic", "stop", "", "answer_empty"),
        (
            "anthropic",
            "model_context_window_exceeded",
            "The value is",
            "context_overflow",
        ),
    ] {
        let (_rt, agent) = StrictLlm::on_own_runtime();
        agent.always(Scenario::Finished(reason.into(), content.into()));
        let (m, out, needle) = one_trace(&agent, kind, "needle", &[]);
        for s in &needle {
            assert_eq!(s["error"]["kind"], expected, "{kind} {reason}: {s}");
            assert!(
                s["tokens"]["eval_agent"]["output"].as_u64() > Some(0),
                "{s}"
            );
        }
        assert_eq!(
            m["units"]["failed"].as_u64(),
            Some(needle.len() as u64),
            "{out}"
        );
    }
}
#[test]
fn an_agent_out_of_steps_is_flagged() {
    // The agent searches at every step and never answers: each question runs out of
    // `max_steps`; the samples keep their scores but are flagged, and the run says so.
    let (_rt, agent) = StrictLlm::on_own_runtime();
    agent.always(Scenario::Searching);
    let (m, out, needle) = one_trace(&agent, "openai", "needle", &[]);
    let mut flagged = 0;
    for s in &needle {
        assert!(s["error"].is_null(), "{s}");
        if s["evidence"]["reached"] != false {
            assert!(
                s["scores"]["step_limit"].as_f64().is_some_and(|n| n >= 1.0),
                "{}",
                s["scores"]
            );
            flagged += 1;
        }
    }
    assert!(flagged > 0, "{m}");
    assert!(
        out.contains("FLAGGED") && out.contains("`step_limit`"),
        "{out}"
    );
}
#[test]
fn every_judge_call_is_counted_in_its_unit() {
    // The judge grades every probe (3 output tokens a reply): the units succeed, and their
    // judge tokens are every call the judge server answered (the unit's ledger).
    let (_rt, llm) = StrictLlm::on_own_runtime();
    let (_rt2, judge) = StrictLlm::on_own_runtime();
    judge.always(Scenario::Text("SCORE: 4\nGood.".into()));
    let providers = format!(
        "{}\n{}\n{}",
        provider_table("agent", "openai", "gpt-5-mini", &llm.openai_base_url()),
        provider_table("summary", "openai", "gpt-5-mini", &llm.openai_base_url()),
        provider_table("judge", "openai", "gpt-5-mini", &judge.openai_base_url())
    );
    let (m, _, samples) = run_suite(
        &providers,
        &[
            "--eval",
            "drift",
            "--trace",
            "astropy__astropy-12907*",
            "--set",
            "evals.drift.judge=true",
        ],
    );
    let drift: Vec<&serde_json::Value> = samples.iter().filter(|s| s["eval"] == "drift").collect();
    assert!(drift.iter().all(|s| s["error"].is_null()), "{m}");
    let output: u64 = drift
        .iter()
        .map(|s| s["tokens"]["judge"]["output"].as_u64().unwrap())
        .sum();
    assert!(judge.accepted() > 0);
    assert_eq!(output, 3 * judge.accepted() as u64);
    for s in drift
        .iter()
        .filter(|s| s["tokens"]["judge"]["output"].as_u64() > Some(0))
    {
        assert!(s["cost_usd"]["judge"].as_f64() > Some(0.0), "{s}");
    }
}

#[test]
fn a_judge_without_a_grade_fails_the_unit() {
    for (scenario, expected) in [
        (
            Scenario::Text("Looks fine to me.".into()),
            "judge_unparseable",
        ),
        (Scenario::Refusal("no".into()), "judge_refused"),
        (Scenario::LengthEmpty, "judge_cut_off"),
    ] {
        let (_rt, llm) = StrictLlm::on_own_runtime();
        let (_rt2, judge) = StrictLlm::on_own_runtime();
        judge.always(scenario);
        let providers = format!(
            "{}\n{}\n{}",
            provider_table("agent", "openai", "gpt-5-mini", &llm.openai_base_url()),
            provider_table("summary", "openai", "gpt-5-mini", &llm.openai_base_url()),
            provider_table("judge", "openai", "gpt-5-mini", &judge.openai_base_url())
        );
        let (_, out, samples) = run_suite(
            &providers,
            &[
                "--eval",
                "drift",
                "--trace",
                "astropy__astropy-12907*",
                "--set",
                "evals.drift.judge=true",
            ],
        );
        let drift: Vec<&serde_json::Value> =
            samples.iter().filter(|s| s["eval"] == "drift").collect();
        let probed: Vec<_> = drift
            .iter()
            .filter(|s| s["tokens"]["eval_agent"]["output"].as_u64() > Some(0))
            .collect();
        assert!(!probed.is_empty(), "{out}");
        for s in probed {
            assert_eq!(s["error"]["kind"], expected, "{s}");
            assert!(s["tokens"]["judge"]["input"].as_u64() > Some(0), "{s}");
        }
    }
}

/// `--resume --retry-failed` runs failed units again; what their failed attempts spent is not
/// lost with their lines: they move to samples.replaced.jsonl, and the report says how much
/// they spent (the budget counts it on every later resume).
#[test]
fn retried_attempts_keep_what_they_spent() {
    let (_rt, agent) = StrictLlm::on_own_runtime();
    let (_rt2, summary) = StrictLlm::on_own_runtime();
    agent.always(Scenario::LengthEmpty);
    let providers = format!(
        "{}\n{}",
        provider_table("agent", "openai", "gpt-5-mini", &agent.openai_base_url()),
        provider_table(
            "summary",
            "openai",
            "gpt-5-mini",
            &summary.openai_base_url()
        )
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let suite = tmp.path().join("suite.toml");
    std::fs::write(&suite, quickstart_with(&out, &providers)).unwrap();
    let select = ["--eval", "needle", "--trace", "astropy__astropy-12907*"];
    let first = ctxbench()
        .args(["run", suite.to_str().unwrap(), "--run-id", "r", "-q"])
        .args(select)
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let dir = out.join("r");
    let samples: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let failed: Vec<&serde_json::Value> =
        samples.iter().filter(|s| !s["error"].is_null()).collect();
    assert!(!failed.is_empty());
    let lost: f64 = failed.iter().map(|s| spent(s)).sum();
    assert!(lost > 0.0);

    // The agent answers now: the failed units run again.
    agent.always(Scenario::Text("The value is 42.".into()));
    let again = ctxbench()
        .args(["run", suite.to_str().unwrap(), "--resume"])
        .arg(&dir)
        .args(["--retry-failed", "-q"])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    let replaced = std::fs::read_to_string(dir.join("samples.replaced.jsonl")).unwrap();
    assert_eq!(replaced.lines().count(), failed.len());
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let note = format!(
        "{} failed attempt(s) that `--retry-failed` ran again spent {}",
        failed.len(),
        ctxbench::metrics::cost::format_usd(Some(lost))
    );
    assert!(md.replace('\\', "").contains(&note), "{note}\n{md}");

    // A merge carries them: its report notes the same spend.
    let merged = tmp.path().join("merged");
    let m = ctxbench()
        .args([
            "merge",
            dir.to_str().unwrap(),
            "-o",
            merged.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(m.status.code(), Some(0), "{m:?}");
    assert_eq!(
        std::fs::read_to_string(merged.join("samples.replaced.jsonl")).unwrap(),
        replaced
    );
    let r = ctxbench()
        .args(["report", merged.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let md = std::fs::read_to_string(merged.join("report.md")).unwrap();
    assert!(md.replace('\\', "").contains(&note), "{note}\n{md}");
}

#[test]
fn flag_counts_are_written_for_every_unit_so_their_means_are_over_all() {
    // Offline agent and summarizer: nothing is flagged, and every needle unit that asked still
    // carries `step_limit`, `prompt_truncated` and `summary_failures` at 0 — written only when
    // > 0, their means (and a gate rule on them) were over the flagged units alone.
    let offline =
        "[providers.agent]\nkind = \"offline\"\n\n[providers.summary]\nkind = \"offline\"\n";
    let (m, _out, samples) = run_suite(
        offline,
        &["--eval", "needle", "--trace", "astropy__astropy-12907*"],
    );
    let asked: Vec<&serde_json::Value> = samples
        .iter()
        .filter(|s| s["eval"] == "needle" && s["evidence"]["reached"] != false)
        .collect();
    assert!(asked.len() > 2, "{m}");
    for s in &asked {
        for metric in ["step_limit", "prompt_truncated", "summary_failures"] {
            assert_eq!(
                s["scores"][metric].as_f64(),
                Some(0.0),
                "{metric}: {}",
                s["scores"]
            );
        }
        // The eval agent's spending is every call it made: the questions' and the references'.
        let (q, r) = (
            s["scores"]["probe_input_tokens"].as_f64().unwrap(),
            s["scores"]["reference_input_tokens"].as_f64().unwrap(),
        );
        assert!(q > 0.0 && r > 0.0, "{}", s["scores"]);
        assert_eq!(
            s["tokens"]["eval_agent"]["input"].as_f64(),
            Some(q + r),
            "{s}"
        );
    }
}

/// Bundled traces whose recorded shapes break rules both APIs share: tool names outside
/// `^[a-zA-Z0-9_-]{1,64}$` (SWE-agent's CTF runs call `./rock` and `RsaCtfTool.py`, a Codex
/// rollout has redacted names of 44 characters with spaces), tool-call ids over OpenAI's 40
/// characters (Gemini and Gemini CLI: 42), runs that stop on a call with no result (OpenHands'
/// `finish` calls: the needle's and drift's questions come right after it).
const RULE_BREAKING_TRACES: &[&str] = &[
    "swe-agent/ctf__rev__rock.traj",
    "swe-agent/ctf__crypto__BabyTimeCapsule.traj",
    "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
    "gemini-cli/session-2025-12-01T21-45-5b959dae.json",
    "gemini/session-5b959dae.contents.json",
    "openhands/multi_swe_bench__ponylang__ponyc-4595.json",
    "openhands/wrong_initial_state.json",
    "openhands/basic.json",
    "openhands/basic_interactions.json",
];

#[test]
fn bundled_traces_that_break_the_shared_rules_pass_the_strict_servers() {
    let (_rt, server) = StrictLlm::on_own_runtime();
    let repo = crate::support::suite::repo();
    let paths: Vec<String> = RULE_BREAKING_TRACES
        .iter()
        .map(|t| format!("{:?}", repo.join("datasets").join(t).display().to_string()))
        .collect();
    for (kind, model, base) in [
        ("anthropic", "claude-sonnet-4-5", server.base_url()),
        ("openai", "gpt-5-mini", server.openai_base_url()),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let suite = tmp.path().join("suite.toml");
        std::fs::write(
            &suite,
            format!(
                "[suite]\nname = \"rules\"\noutput_dir = {:?}\nseed = 7\nfail_on_errors = false\n\
                 [traces]\npaths = [{}]\nfrom = \"auto\"\n\
                 [engine]\nbaseline = \"baseline\"\n[engine.base]\npreset = \"deepagents\"\n\
                 window = 20000\n[engine.variants.baseline]\n\
                 [evals.needle]\ndepths = [0.5]\npositions = [\"tool\"]\nneedles = 1\n\
                 max_steps = 2\nask_at = \"end\"\n\
                 [evals.drift]\nafter_compactions = 1\njudge = false\n\n{}\n{}",
                out.display().to_string(),
                paths.join(", "),
                provider_table("agent", kind, model, &base),
                provider_table("summary", kind, model, &base),
            ),
        )
        .unwrap();
        let run = ctxbench()
            .args(["run", suite.to_str().unwrap(), "--run-id", "strict"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            run.status.code().is_some_and(|c| c == 0 || c == 1),
            "{stderr}"
        );
        let rejected = server.rejected();
        assert!(
            rejected.is_empty(),
            "{kind}: {} request(s) rejected, first: {}",
            rejected.len(),
            rejected[0]
        );
        let m = json(&out.join("strict/run.json"));
        let units = &m["units"];
        assert_eq!(units["failed"], 0, "{kind}: {units}\n{stderr}");
        assert_eq!(units["recorded"], units["planned"], "{kind}: {units}");
        assert!(
            units["planned"].as_u64().unwrap() >= 2 * RULE_BREAKING_TRACES.len() as u64,
            "{units}"
        );
    }
}

#[test]
fn a_summary_a_filter_or_the_window_stopped_is_a_summary_failure() {
    // The summarizer's replies stop at OpenAI's content filter or at Anthropic's context window,
    // with text: kept as summaries, the units' numbers would rest on a summary cut short.
    for (kind, model, reason) in [
        ("openai", "gpt-5-mini", "content_filter"),
        (
            "anthropic",
            "claude-sonnet-4-5",
            "model_context_window_exceeded",
        ),
    ] {
        let (_rt, agent) = StrictLlm::on_own_runtime();
        let (_rt2, summary) = StrictLlm::on_own_runtime();
        summary.always(Scenario::Finished(
            reason.into(),
            "## SESSION INTENT\nFix the separability of nested".into(),
        ));
        let base = |s: &StrictLlm| match kind {
            "openai" => s.openai_base_url(),
            _ => s.base_url(),
        };
        let providers = format!(
            "{}\n{}",
            provider_table("agent", kind, model, &base(&agent)),
            provider_table("summary", kind, model, &base(&summary))
        );
        let (m, out, samples) = run_suite(
            &providers,
            &["--eval", "needle", "--trace", "astropy__astropy-12907*"],
        );
        assert!(summary.accepted() > 0, "{kind}: the summarizer was asked");
        let failed: Vec<&serde_json::Value> = samples
            .iter()
            .filter(|s| s["error"]["kind"] == "summary_failed")
            .collect();
        assert!(!failed.is_empty(), "{kind}: {}\n{out}", m["units"]);
        let message = failed[0]["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{kind}: {message}");
    }
}
