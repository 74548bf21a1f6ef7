//! The one cost model from the command line: the gate sees a cost regression over every paired
//! unit, the run's cost line is the same in every output, and `replay --counter X` counts as
//! `run` does with `counter = "X"`. With the report's relative changes and verdicts, the
//! dataframe libraries' column types (`dataframes`) and the streamed report (`report_streaming`),
//! checked on one shared quickstart run (one per test binary, `support::cli::quickstart`).

#[path = "cost_model/dataframes.rs"]
mod dataframes;
#[path = "cost_model/report_streaming.rs"]
mod report_streaming;

use crate::support::cli::{ctxbench, json, quickstart};
use crate::support::suite::{repo, SuiteBuilder};
use std::path::{Path, PathBuf};

/// The quickstart's traces and evals with one variant `v` configured by `variant` (TOML lines).
fn cost_suite(dir: &Path, variant: &str) -> SuiteBuilder {
    SuiteBuilder::new("cost-gate")
        .seed(7)
        .output_dir(&dir.join("runs"))
        .mini_swe(&[
            "astropy__astropy-12907.traj.json",
            "psf__requests-1142.traj.json",
        ])
        .dataset("claude-code/coverage-test-fix.jsonl")
        .baseline("v")
        .deepagents(20000)
        .variant("v", variant)
        .eval(
            "needle",
            "depths = [0.2, 0.5, 0.8]\npositions = [\"tool\", \"user\"]",
        )
        .eval("drift", "after_compactions = 2")
        .eval("invariants", "")
}

/// [`cost_suite`] written to `dir/<name>.toml`.
fn suite(dir: &Path, name: &str, variant: &str) -> PathBuf {
    cost_suite(dir, variant).write(dir, &format!("{name}.toml"))
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
    let qs = quickstart();
    let terminal = &qs.terminal;
    let md = qs.read("report.md");
    let html = qs.read("report.html");
    let run_json = qs.json("run.json");
    let summary = qs.json("summary.json");
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
        ("terminal", terminal),
        ("report.md", &md),
        ("report.html", &html),
    ] {
        assert!(text.contains(&line), "{name} lacks `{line}`");
    }
}

#[test]
fn a_long_context_tier_prices_a_call_never_a_units_sum() {
    // Gemini 3 Pro and Claude Sonnet 4.5 bill a call past 200,000 input tokens at higher rates.
    // On the quickstart's 20,000-token window no replayed call comes near that, though a unit's
    // calls add up past it: every such unit costs its tokens at the normal rates.
    let qs = quickstart();
    let prices = ctxbench::pricing::PriceTable::bundled();
    let (mut checked, mut summed_past) = (0, 0);
    for line in qs.read("samples.jsonl").lines() {
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        let calls = s["timeline"].as_array().unwrap();
        let largest = calls.iter().map(|p| p["tokens"].as_u64().unwrap()).max();
        if largest.unwrap_or(0) > 150_000 {
            continue; // digitorn's own window lets some calls reach the tier
        }
        let model = s["evidence"]["priced_as"]["agent"].as_str().unwrap();
        let (_, p) = prices.lookup(model).unwrap();
        let Some(tier) = &p.long_context else {
            continue;
        };
        let t = &s["tokens"]["agent"];
        let n = |k: &str| t[k].as_u64().unwrap() as f64;
        let want = ((n("input") - n("cached")) * p.input
            + n("cached") * p.cache_read.unwrap_or(p.input)
            + n("output") * p.output)
            / 1e6;
        let got = s["cost_usd"]["agent"].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1e-9 * want.max(1.0),
            "{}: ${got}, at the normal rates ${want}",
            s["unit_id"]
        );
        checked += 1;
        summed_past += usize::from(n("input") > tier.threshold as f64);
    }
    assert!(checked > 0 && summed_past > 0, "{checked} {summed_past}");
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
        let suite = SuiteBuilder::new("c")
            .seed(7)
            .output_dir(&dir.path().join("runs"))
            .trace(&trace)
            .baseline("v")
            .base(format!(
                "preset = \"deepagents\"\nwindow = 20000\ncounter = \"{counter}\""
            ))
            .variant("v", "")
            .eval("replay", "")
            .write(dir.path(), &format!("{counter}.toml"));
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
    let suite = SuiteBuilder::new(name)
        .seed(7)
        .output_dir(&dir.join("runs"))
        .trace(&trace)
        .baseline("v")
        .deepagents(25000)
        .variant("v", variant)
        .eval("replay", "")
        .write(dir, &format!("{name}.toml"));
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
/// the unit's `tokens` and `cost`: every model call lands in exactly one role.
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
                // The eval agent's tokens are the needle question's and its reference's (both
                // spent).
                let reference = s["scores"]["reference_input_tokens"].as_f64().unwrap();
                assert!(reference > 0.0, "{s}");
                assert_eq!(
                    input as f64,
                    s["scores"]["probe_input_tokens"].as_f64().unwrap() + reference
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
    let named = format!(
        "UNKNOWN PRICE: model `no-such-model` (agent) has no price: {units} successful unit(s)"
    );
    assert!(md.contains(&named), "{md}");
    assert!(md.contains("[pricing.\"no-such-model\"]"), "{md}");
    assert!(
        md.contains("variant `v`: window 20000 (suite) ×3; agent views priced as `no-such-model` (agent_model) ×3"),
        "{md}"
    );
    // run.json states the same, per variant.
    let manifest = json(&run_dir.join("run.json"));
    let sources = &manifest["totals"]["sources"]["v"];
    assert_eq!(sources["window"]["20000 (suite)"], 3, "{sources}");
    assert_eq!(
        sources["agent_priced_as"]["`no-such-model` (agent_model)"], 3,
        "{sources}"
    );
    // The run's closing lines say it too, within 100 columns (the tokens line ran to 176).
    let out = ctxbench()
        .arg("run")
        .arg(suite(
            dir.path(),
            "unpriced",
            "agent_model = \"no-such-model\"",
        ))
        .args(["--run-id", "unpriced-shown"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{stdout}");
    let at = stdout.find("\ntokens   ").expect("a tokens line") + 1;
    let tokens: String = stdout[at..].lines().take(2).collect::<Vec<_>>().join(" ");
    assert!(tokens.contains("unit(s) with an unknown price"), "{stdout}");
    for l in stdout.lines() {
        assert!(l.chars().count() <= 100, "wider than 100 columns: {l}");
    }
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
    // The suite's other evals stay.
    let suite = cost_suite(dir.path(), "")
        .eval("probes", "per_kind = 1")
        .write(dir.path(), "probes.toml");
    let run_dir = run(&suite, "probes");
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

/// The report's numbers on the quickstart: every relative change's CI is the ratio's own
/// interval (never below −100% for the quickstart's non-negative metrics, holding the point
/// estimate), and each verdict item reads the same in the terminal, report.md, report.html and
/// summary.json.
#[test]
fn relative_change_cis_are_bounded_and_the_same_everywhere_on_the_quickstart() {
    let qs = quickstart();
    let terminal = &qs.terminal;
    let summary = qs.json("summary.json");
    let comparisons = summary["summary"]["comparisons"].as_array().unwrap();
    let mut checked = 0;
    let mut wide = 0;
    let mut unbounded = 0;
    for c in comparisons {
        let Some(point) = c["delta_pct"].as_f64() else {
            continue;
        };
        let (b, m) = (c["baseline_mean"].as_f64().unwrap(), &c["metric"]);
        // A difference (`needle.recall_delta`) is centred on 0, not a non-negative quantity:
        // its verdict is an absolute change, never a percent.
        if m.as_str().is_some_and(|m| m.ends_with("_delta")) {
            continue;
        }
        assert!(b >= 0.0, "{m}: the quickstart's metrics are non-negative");
        let ci = &c["pct_ci"];
        if ci.is_null() {
            // Only where a baseline unit scores 0 (few traces): no finite interval.
            unbounded += 1;
            continue;
        }
        let (lo, hi) = (ci["lo"].as_f64().unwrap(), ci["hi"].as_f64().unwrap());
        assert!(lo >= -100.0 - 1e-9, "{m} {}: {lo}", c["candidate"]);
        assert!(
            lo - 1e-9 <= point && point <= hi + 1e-9,
            "{m} {}: {point} outside [{lo}, {hi}]",
            c["candidate"]
        );
        // The old scaled interval went below −100% on aggressive tokens; the ratio's own CI
        // must not be a copy of it.
        let scaled_lo = 100.0 * c["ci"]["lo"].as_f64().unwrap() / b;
        if scaled_lo < -100.0 {
            wide += 1;
        }
        checked += 1;
    }
    assert!(checked > 30, "{checked} comparisons with a relative change");
    assert!(
        unbounded < checked / 2,
        "{unbounded} of {checked} without a finite CI"
    );
    assert!(
        wide > 0,
        "the quickstart has a metric whose scaled CI passed −100%"
    );

    // Markdown escapes brackets and underscores: read it unescaped.
    let md = unescape_md(&qs.read("report.md"));
    let html = qs.read("report.html");
    let mut items = 0;
    for line in summary["summary"]["verdicts"].as_array().unwrap() {
        for item in line["items"].as_array().unwrap() {
            let text = item["text"].as_str().unwrap();
            let collapsed: String = terminal.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(collapsed.contains(text), "terminal lacks {text:?}");
            assert!(md.contains(text), "report.md lacks {text:?}");
            assert!(html.contains(text), "report.html lacks {text:?}");
            items += 1;
        }
    }
    assert!(items >= 12, "{items}");
}

fn unescape_md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(n)) if n.is_ascii_punctuation() => {}
            _ => out.push(c),
        }
    }
    out
}
