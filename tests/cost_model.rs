//! The one cost model from the command line: the gate sees a cost regression over every paired
//! unit, the run's cost line is the same in every output, and `replay --counter X` counts as
//! `run` does with `counter = "X"`.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn ctxbench() -> Command {
    let mut c = Command::cargo_bin("ctxbench").unwrap();
    c.env_remove("GITHUB_STEP_SUMMARY");
    c
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The quickstart's traces and evals with one variant `v` configured by `variant` (TOML lines).
fn suite(dir: &Path, name: &str, variant: &str) -> PathBuf {
    let data = repo().join("datasets");
    let text = format!(
        r#"[suite]
name = "cost-gate"
seed = 7
output_dir = "{out}"

[traces]
paths = [
  "{data}/mini-swe-agent/astropy__astropy-12907.traj.json",
  "{data}/mini-swe-agent/psf__requests-1142.traj.json",
  "{data}/claude-code/coverage-test-fix.jsonl",
]

[engine]
baseline = "v"

[engine.base]
preset = "deepagents"
window = 20000

[engine.variants.v]
{variant}

[evals.needle]
depths = [0.2, 0.5, 0.8]
positions = ["tool", "user"]

[evals.drift]
after_compactions = 2

[evals.invariants]
"#,
        out = dir.join("runs").display(),
        data = data.display(),
    );
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

fn run(suite: &Path, id: &str) -> PathBuf {
    let out = ctxbench()
        .arg("run")
        .arg(suite)
        .args(["--run-id", id, "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

#[test]
fn the_cost_gate_sees_a_regression_over_every_paired_unit() {
    let dir = tempfile::tempdir().unwrap();
    let base = run(
        &suite(dir.path(), "base", "summarize.trigger.fraction = 0.15"),
        "base",
    );
    let cand = run(&suite(dir.path(), "cand", "preset = \"none\""), "cand");
    let out = ctxbench()
        .arg("gate")
        .arg(&cand)
        .arg("--baseline")
        .arg(&base)
        .args(["--rule", "cost.delta_pct <= 5"])
        .args(["--rule", "cost.agent.delta_pct <= 5"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(10), "{stdout}");
    // Every unit is priced (the offline summarizer is a known $0), so every pair counts.
    assert!(stdout.contains("Δ% cost over 30 pair(s)"), "{stdout}");
    assert!(
        stdout.contains("FAIL  cost.agent.delta_pct <= 5"),
        "{stdout}"
    );
}

#[test]
fn the_run_cost_line_is_the_same_everywhere_on_the_quickstart() {
    let dir = tempfile::tempdir().unwrap();
    let out = ctxbench()
        .arg("run")
        .arg(repo().join("evals/quickstart.toml"))
        .args(["--run-id", "qs", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let terminal = String::from_utf8(out.stdout).unwrap();
    let run_dir = dir.path().join("qs");
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    let from_run = &run_json["totals"]["cost"];
    let from_summary = &summary["summary"]["totals"]["cost"]["headline"];
    assert_eq!(from_run, from_summary);
    let headline: ctxbench::metrics::cost::CostHeadline =
        serde_json::from_value(from_run.clone()).unwrap();
    assert_eq!(
        headline.unknown_units, 0,
        "the offline quickstart is fully priced"
    );
    assert!(headline.total_usd.unwrap() > 0.0);
    assert_eq!(
        headline.spent_usd,
        Some(0.0),
        "offline calls cost a known $0"
    );
    let line = headline.line();
    assert!(line.starts_with("modelled agent cost $"), "{line}");
    for (name, text) in [
        ("terminal", &terminal),
        ("report.md", &md),
        ("report.html", &html),
    ] {
        assert!(text.contains(&line), "{name} lacks `{line}`");
    }
}

fn replay_tokens(args: &[&str]) -> (u64, u64) {
    let out = ctxbench()
        .arg("replay")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = v["calls"].as_array().unwrap();
    let sum = |k: &str| calls.iter().map(|c| c[k].as_u64().unwrap()).sum::<u64>();
    (sum("input_tokens"), sum("reference_tokens"))
}

#[test]
fn replay_counts_like_run_for_every_counter() {
    let dir = tempfile::tempdir().unwrap();
    let trace = repo().join("datasets/mini-swe-agent/psf__requests-1142.traj.json");
    let mut seen = std::collections::BTreeSet::new();
    for counter in ["o200k", "cl100k", "approx", "approx-anthropic"] {
        let text = format!(
            "[suite]\nname = \"c\"\nseed = 7\noutput_dir = \"{out}\"\n\n[traces]\npaths = [\"{trace}\"]\n\n\
             [engine]\nbaseline = \"v\"\n\n[engine.base]\npreset = \"deepagents\"\nwindow = 20000\ncounter = \"{counter}\"\n\n\
             [engine.variants.v]\n\n[evals.replay]\n",
            out = dir.path().join("runs").display(),
            trace = trace.display(),
        );
        let suite = dir.path().join(format!("{counter}.toml"));
        std::fs::write(&suite, text).unwrap();
        let run_dir = run(&suite, counter);
        let samples = std::fs::read_to_string(run_dir.join("samples.jsonl")).unwrap();
        let s: serde_json::Value = serde_json::from_str(samples.lines().next().unwrap()).unwrap();
        let from_run = (
            s["scores"]["input_tokens"].as_f64().unwrap() as u64,
            s["scores"]["reference_tokens"].as_f64().unwrap() as u64,
        );
        let trace_arg = trace.to_str().unwrap();
        // The unit's store seed names the offloaded files, whose paths the views contain.
        let seed = ctxbench::runner::plan::unit_seed(7, s["unit_id"].as_str().unwrap());
        let seed = seed.to_string();
        let from_replay = replay_tokens(&[
            trace_arg,
            "--window",
            "20000",
            "--counter",
            counter,
            "--seed",
            &seed,
        ]);
        assert_eq!(from_run, from_replay, "counter {counter}");
        seen.insert(from_run.1);
    }
    assert_eq!(seen.len(), 4, "each counter counts differently: {seen:?}");
}

/// One replay unit of the bundled Claude Code trace under `variant` (TOML lines); returns the
/// sample's (compactions, input tokens, agent cost) and the run's first sample as JSON.
fn overhead_unit(dir: &Path, name: &str, variant: &str) -> (f64, f64, f64, serde_json::Value) {
    let trace = repo().join("datasets/claude-code/coverage-test-fix.jsonl");
    let text = format!(
        "[suite]\nname = \"{name}\"\nseed = 7\noutput_dir = \"{out}\"\n\n[traces]\npaths = [\"{trace}\"]\n\n\
         [engine]\nbaseline = \"v\"\n\n[engine.base]\npreset = \"deepagents\"\nwindow = 25000\n\n\
         [engine.variants.v]\n{variant}\n\n[evals.replay]\n",
        out = dir.join("runs").display(),
        trace = trace.display(),
    );
    let suite = dir.join(format!("{name}.toml"));
    std::fs::write(&suite, text).unwrap();
    let run_dir = run(&suite, name);
    let samples = std::fs::read_to_string(run_dir.join("samples.jsonl")).unwrap();
    let s: serde_json::Value = serde_json::from_str(samples.lines().next().unwrap()).unwrap();
    assert!(s["error"].is_null(), "{s}");
    let compactions = s["scores"]["compactions"].as_f64().unwrap_or(0.0);
    (
        compactions,
        s["scores"]["input_tokens"].as_f64().unwrap(),
        s["cost_usd"]["agent"].as_f64().unwrap(),
        s,
    )
}

#[test]
fn what_the_trace_left_out_is_counted_in_views_triggers_and_cost() {
    let dir = tempfile::tempdir().unwrap();
    let (c0, in0, usd0, _) = overhead_unit(dir.path(), "bare", "");
    let (c1, in1, usd1, s1) =
        overhead_unit(dir.path(), "claude", "overhead_tokens = \"claude-code\"");
    assert_eq!(c0, 0.0, "the bare trace never reaches the trigger");
    assert!(c1 > 0.0, "18,400 more tokens per request compact: {s1}");
    assert!(in1 > in0 && usd1 > usd0, "{in0} → {in1}, ${usd0} → ${usd1}");

    // Files: a system prompt and tool schemas as the provider receives them, per variant.
    std::fs::write(
        dir.path().join("system.md"),
        "You are a careful coding agent. ".repeat(400),
    )
    .unwrap();
    let tool = serde_json::json!({"name": "Bash", "description": "Run a shell command. ".repeat(300),
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}});
    std::fs::write(
        dir.path().join("tools.json"),
        serde_json::json!([tool]).to_string(),
    )
    .unwrap();
    let (_, in2, usd2, _) = overhead_unit(
        dir.path(),
        "files",
        "system_prompt.file = \"system.md\"\ntools.file = \"tools.json\"",
    );
    assert!(in2 > in0 && usd2 > usd0, "{in0} → {in2}");

    // `replay` counts the same overhead as `run`.
    let trace = repo().join("datasets/claude-code/coverage-test-fix.jsonl");
    let seed = ctxbench::runner::plan::unit_seed(7, s1["unit_id"].as_str().unwrap()).to_string();
    let (from_replay, _) = replay_tokens(&[
        trace.to_str().unwrap(),
        "--window",
        "25000",
        "--set",
        "overhead_tokens=claude-code",
        "--seed",
        &seed,
    ]);
    assert_eq!(from_replay as f64, in1);

    // A tools file that is not a JSON array is a config error naming the file.
    std::fs::write(dir.path().join("bad.json"), "{\"name\": 1}").unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(dir.path().join("bare.toml"))
            .unwrap()
            .replace(
                "[engine.variants.v]\n",
                "[engine.variants.v]\ntools.file = \"bad.json\"\n",
            ),
    )
    .unwrap();
    let out = ctxbench().arg("run").arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.json") && err.contains("JSON array"),
        "{err}"
    );
}

/// The evals' own agent calls (needle questions, drift probes) are their own role, summed into
/// the unit's tokens and `cost.total`: every model call lands in exactly one role.
#[test]
fn eval_agent_calls_are_their_own_cost_role() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = run(&suite(dir.path(), "roles", ""), "roles");
    let samples = std::fs::read_to_string(run_dir.join("samples.jsonl")).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for line in samples.lines() {
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        let eval = s["eval"].as_str().unwrap().to_string();
        let t = &s["tokens"]["eval_agent"];
        let input = t["input"].as_u64().unwrap();
        match eval.as_str() {
            "needle" => {
                // The needle's probe tokens are exactly the eval agent's.
                assert_eq!(
                    input as f64,
                    s["scores"]["probe_input_tokens"].as_f64().unwrap()
                );
                assert!(input > 0, "{s}");
            }
            // A drift fold the replay never reached asks nothing.
            "drift" => assert_eq!(input > 0, s["scores"]["probes"].as_f64() > Some(0.0), "{s}"),
            _ => assert_eq!(input, 0, "{s}"),
        }
        // The offline provider is a known $0 (a unit that asks nothing has no eval-agent cost).
        if input > 0 {
            assert_eq!(s["cost_usd"]["eval_agent"].as_f64(), Some(0.0), "{s}");
        }
        seen.insert(eval);
    }
    assert!(
        seen.contains("needle") && seen.contains("drift"),
        "{seen:?}"
    );
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(
        md.contains("| eval agent |"),
        "the role table lists the eval agent"
    );
}

/// An agent model with no price is named, with its units and how to add the price; every
/// variant says where its window came from and which model priced its views.
#[test]
fn unknown_prices_are_named_and_windows_and_pricing_models_are_shown() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = run(
        &suite(dir.path(), "unpriced", "agent_model = \"no-such-model\""),
        "unpriced",
    );
    // report.md escapes Markdown characters in notes; compare the text.
    let md = std::fs::read_to_string(run_dir.join("report.md"))
        .unwrap()
        .replace('\\', "");
    // Every unit of the run is unpriced.
    let units = std::fs::read_to_string(run_dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert!(units >= 27, "{units}");
    let named =
        format!("UNKNOWN PRICE: model `no-such-model` (agent) has no price: {units} unit(s)");
    assert!(md.contains(&named), "{md}");
    assert!(md.contains("[pricing.\"no-such-model\"]"), "{md}");
    assert!(
        md.contains("variant `v`: window 20000 (suite) ×3; agent views priced as `no-such-model` (agent_model) ×3"),
        "{md}"
    );
    // run.json states the same, per variant.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let sources = &manifest["totals"]["sources"]["v"];
    assert_eq!(sources["window"]["20000 (suite)"], 3, "{sources}");
    assert_eq!(
        sources["agent_priced_as"]["`no-such-model` (agent_model)"], 3,
        "{sources}"
    );
    // Priced by the trace's model by default, with the window from the suite.
    let priced = run(&suite(dir.path(), "priced", ""), "priced");
    let md = std::fs::read_to_string(priced.join("report.md")).unwrap();
    assert!(!md.contains("UNKNOWN PRICE"), "{md}");
    assert!(md.contains("(trace's model)"), "{md}");
}

/// The probes eval's questions are eval-agent calls too (tokens and a known $0 offline).
#[test]
fn probe_questions_are_eval_agent_calls() {
    let dir = tempfile::tempdir().unwrap();
    // The variant table is followed by the probes section (the suite's other evals stay).
    let run_dir = run(
        &suite(dir.path(), "probes", "\n[evals.probes]\nper_kind = 1\n"),
        "probes",
    );
    let samples = std::fs::read_to_string(run_dir.join("samples.jsonl")).unwrap();
    let probes: Vec<serde_json::Value> = samples
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|s| s["eval"] == "probes" && s["error"].is_null())
        .collect();
    assert!(!probes.is_empty(), "no probes sample");
    for s in &probes {
        assert!(
            s["tokens"]["eval_agent"]["input"].as_u64().unwrap() > 0,
            "{s}"
        );
        assert_eq!(s["cost_usd"]["eval_agent"].as_f64(), Some(0.0), "{s}");
    }
}
