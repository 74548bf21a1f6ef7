//! suite.toml loading as a user meets it: error messages (snapshotted), the bundled eval suites,
//! the JSON Schema, and `ctxbench run` exit codes for bad suites.

use assert_cmd::Command;
use ctxbench::config::LoadedSuite;
use std::path::Path;

const FIXTURES: &str = "tests/fixtures/suites";

fn load_err(name: &str) -> String {
    let p = Path::new(FIXTURES).join(name);
    let loaded = LoadedSuite::load(&p);
    match loaded.and_then(|s| s.trace_files().map(|_| s)) {
        Ok(_) => panic!("{name} should not load"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unknown_keys_name_line_and_suggestion() {
    let msg = load_err("unknown_keys.toml");
    insta::assert_snapshot!("unknown_keys", msg);
}

#[test]
fn wrong_type_names_the_line() {
    insta::assert_snapshot!("wrong_type", load_err("wrong_type.toml"));
}

#[test]
fn bad_values_are_all_reported() {
    insta::assert_snapshot!("bad_values", load_err("bad_values.toml"));
}

#[test]
fn glob_matching_nothing_names_its_line() {
    insta::assert_snapshot!("no_match", load_err("no_match.toml"));
}

#[test]
fn missing_prompt_file_names_the_override() {
    insta::assert_snapshot!("missing_prompt", load_err("missing_prompt.toml"));
}

#[test]
fn toml_syntax_error_names_the_line() {
    let msg = load_err("syntax.toml");
    assert!(
        msg.starts_with("tests/fixtures/suites/syntax.toml:3: "),
        "{msg}"
    );
}

#[test]
fn misspelled_enum_values_get_suggestions() {
    insta::assert_snapshot!("variant_enum", load_err("variant_enum.toml"));
}

/// An engine error whose value comes from `[engine.base]` names that section (not the first
/// variant that inherits it), once, in the file's words: no Rust type names, and no serde
/// "variant" for what is a key of the file.
#[test]
fn engine_base_preset_error_names_the_base() {
    insta::assert_snapshot!("engine_base_preset", load_err("engine_base_preset.toml"));
}

#[test]
fn engine_base_negative_window_names_the_base_without_a_rust_type() {
    insta::assert_snapshot!("engine_base_window", load_err("engine_base_window.toml"));
}

#[test]
fn engine_base_misspelt_trigger_is_an_unknown_field_of_the_base() {
    insta::assert_snapshot!("engine_base_trigger", load_err("engine_base_trigger.toml"));
}

#[test]
fn missing_suite_file() {
    let msg = load_err("no-such-suite.toml");
    assert!(
        msg.starts_with("tests/fixtures/suites/no-such-suite.toml: cannot read suite file:"),
        "{msg}"
    );
}

#[test]
fn bundled_eval_suites_parse_and_resolve() {
    let mut n = 0;
    for entry in std::fs::read_dir("evals").unwrap() {
        let p = entry.unwrap().path();
        if p.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        n += 1;
        // Loading types every variant (resolved) and every provider role.
        let s = LoadedSuite::load(&p).unwrap_or_else(|e| panic!("{e}"));
        let files = s.trace_files().unwrap_or_else(|e| panic!("{e}"));
        assert!(!files.is_empty(), "{}", p.display());
        assert!(
            s.variants.iter().any(|v| v.name == s.baseline),
            "{}",
            p.display()
        );
    }
    assert!(n >= 5, "expected the five draft suites, found {n}");
    let q = LoadedSuite::load(Path::new("evals/quickstart.toml")).unwrap();
    assert!(q.suite.evals.needle.is_some() && q.suite.evals.drift.is_some());
    let aggressive = q.variants.iter().find(|v| v.name == "aggressive").unwrap();
    assert_eq!(
        aggressive.engine["summarize"]["trigger"]["fraction"].as_float(),
        Some(0.15)
    );
    // The A/B pair of prompts resolves to files next to the suite, digested for run.json.
    assert_eq!(q.prompt_files.len(), 2);
    let b = q.variants.iter().find(|v| v.name == "prompt-b").unwrap();
    let pf = b.engine["summarize"]["prompt"]["file"].as_str().unwrap();
    assert!(Path::new(pf).is_file(), "{pf}");
    assert!(pf.ends_with("prompts/summary-b.md"));
    let real = LoadedSuite::load(Path::new("evals/real-provider.toml")).unwrap();
    // Provider roles are typed at load (a misspelt `timeout_s` is a load error, not ignored).
    let agent = &real
        .provider(ctxbench::config::suite::ProviderRole::Agent)
        .config;
    assert_eq!(agent.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!(agent.timeout_secs, 60.0);
}

#[test]
fn schema_command_prints_the_suite_schema() {
    let out = Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["schema", "suite"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let props = v["properties"].as_object().unwrap();
    for k in [
        "suite",
        "traces",
        "engine",
        "evals",
        "providers",
        "pricing",
        "gates",
    ] {
        assert!(props.contains_key(k), "schema lacks `{k}`");
    }
    assert_eq!(v["additionalProperties"], serde_json::json!(false));
    assert!(v["$defs"]["SuiteSection"]["properties"]["max_cost_usd"].is_object());
}

#[test]
fn bad_suite_exits_2_with_the_message() {
    let out = Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["run", "tests/fixtures/suites/unknown_keys.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown_keys.toml:3: unknown key `max_cost` in `[suite]` (did you mean `max_cost_usd`?)"),
        "{err}"
    );
}

#[test]
fn missing_section_and_wrong_bool() {
    insta::assert_snapshot!("missing_section", load_err("missing_section.toml"));
}

#[test]
fn output_limits_out_of_range_exit_2_naming_key_and_line() {
    let out = Command::cargo_bin("ctxbench")
        .unwrap()
        .args([
            "run",
            "tests/fixtures/suites/output_limits.toml",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("output_limits.toml:14") && err.contains("max_output_tokens"),
        "a string is a type error at its line:\n{err}"
    );
    // With the type right, the ranges are checked, each at its line.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string("tests/fixtures/suites/output_limits.toml")
        .unwrap()
        .replace("\"lots\"", "300")
        .replace(
            "../../../datasets",
            &format!("{}/datasets", env!("CARGO_MANIFEST_DIR")),
        );
    let suite = dir.path().join("output_limits.toml");
    std::fs::write(&suite, text).unwrap();
    let out = Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["run", suite.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for want in [
        "output_limits.toml:8: `max_output_tokens` = 0: expected 1 to 128000 tokens per answer",
        "output_limits.toml:11: `max_output_tokens` = 200000: expected 1 to 128000",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    assert!(!err.contains(":14:"), "{err}");
}

#[test]
fn parameters_the_api_refuses_exit_2_naming_key_and_line() {
    let out = Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["run", "tests/fixtures/suites/provider_params.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for want in [
        "provider_params.toml:13: provider `agent`: `temperature` = 1.2: the Anthropic Messages API accepts 0..=1",
        "provider_params.toml:15: provider `agent`: `max_tokens` = 1000: with `thinking` = 2048",
        "provider_params.toml:16: provider `agent`: `top_p` with `temperature`: Anthropic models",
        "provider_params.toml:22: provider `summary`: `temperature`: `o3` is a reasoning model",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
}

/// Gate rules and `[report] metrics` are checked against the evals the suite runs once `--set`
/// is applied, at the rule's line of the file: a `--set` that turns an eval on makes a rule of
/// its metric valid, one that turns an eval off makes the rules of its metrics wrong (and says
/// which `--set` did it). A `--eval` selection for one run still leaves the rules alone.
#[test]
fn gate_rule_metrics_are_checked_against_the_suite_as_set_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    let trace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/mini-swe-agent/psf__requests-1142.traj.json");
    let write = |needle: &str, drift: &str, rules: &str| {
        std::fs::write(
            &suite,
            format!(
                "[suite]\nname = \"s\"\n[traces]\npaths = [{trace:?}]\n\
                 [evals.needle]\ndepths = [0.5]\nenabled = {needle}\n\
                 [evals.drift]\njudge = false\nenabled = {drift}\n\
                 [gates]\nrules = [\n  \"tokens < 1e9\",\n  {rules},\n]\n"
            ),
        )
        .unwrap();
    };
    let run = |args: &[&str]| {
        let out = Command::cargo_bin("ctxbench")
            .unwrap()
            .args(["run", suite.to_str().unwrap(), "--dry-run"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let file = suite.display();

    // A rule of drift's metric, drift off in the file: refused as written, at its line (14),
    // saying to enable the table the file has (it said to add it)…
    write("true", "false", "\"drift.score >= 4\"");
    let (code, err) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{file}:14: gate rule `drift.score >= 4`: metric `drift.score` is eval `drift`'s, \
             which this suite does not run (`[evals.drift]` has `enabled = false`: set \
             `enabled = true` there or pass `--set evals.drift.enabled=true`, or drop the rule)"
        )),
        "{err}"
    );
    // …and valid once `--set` turns drift on, also with a `--eval` selection of needle alone.
    let (code, err) = run(&["--set", "evals.drift.enabled=true"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = run(&["--set", "evals.drift.enabled=true", "--eval", "needle"]);
    assert_eq!(code, Some(0), "{err}");

    // A rule of needle's metric, valid as written, refused once `--set` turns needle off: at
    // the rule's line of the file, naming the `--set`.
    write("true", "true", "\"needle.recall >= 0.8\"");
    let (code, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = run(&["--set", "evals.needle.enabled=false"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{file}:14: gate rule `needle.recall >= 0.8`: metric `needle.recall` is eval \
             `needle`'s, which this suite does not run (`--set evals.needle.enabled=false` \
             turns it off); the suite's evals: replay, drift"
        )),
        "{err}"
    );
}

/// A suite of two variants over one bundled trace, deepagents with `max_output_tokens` set in
/// `[engine.base]`: `a` with a window of its own (400,000), `b` with an `agent_model` and no
/// window. Returns the suite's path.
fn output_reservation_suite(dir: &Path, max_output: u64, agent_model: &str) -> std::path::PathBuf {
    let suite = dir.join("suite.toml");
    let trace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/mini-swe-agent/psf__requests-1142.traj.json");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"s\"\noutput_dir = \"out\"\n[traces]\npaths = [{trace:?}]\n\
             [engine]\nbaseline = \"a\"\n[engine.base]\npreset = \"deepagents\"\n\
             max_output_tokens = {max_output}\n[engine.variants.a]\nwindow = 400000\n\
             [engine.variants.b]\nagent_model = \"{agent_model}\"\n[evals.replay]\n"
        ),
    )
    .unwrap();
    suite
}

/// An output reservation is checked at load against the window the variant runs with (on a
/// trace that records none): its `window`, else its `agent_model`'s context window in the price
/// table, else the preset's default. `max_output_tokens = 150000` fits deepagents' default
/// window (200,000) but not gpt-4o's (128,000), which `b` runs with: refused at load at its
/// line (it was let through, and the dry run's estimate then failed without a line, a real
/// run's units of `b` failed one by one).
#[test]
fn max_output_tokens_past_the_agent_models_window_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let suite = output_reservation_suite(dir.path(), 150_000, "gpt-4o");
    let out = Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["run", suite.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}:10: `[engine.base]` as merged into engine variant `b`: `max_output_tokens`: \
             150000 leaves no input budget in a window of 128000 tokens (from the price table's \
             context window of `gpt-4o`)",
            suite.display()
        )),
        "{err}"
    );
    assert!(!out.stdout.starts_with(b"plan"), "refused before the plan");
}

/// The other direction: `max_output_tokens = 250000` leaves no budget in deepagents' default
/// window but fits gpt-4.1's (1,047,576), which `b` runs with (and `a`'s own 400,000): the
/// suite loads (it was refused, checked against the preset's default) and its units run.
#[test]
fn max_output_tokens_within_the_agent_models_window_loads_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = output_reservation_suite(dir.path(), 250_000, "gpt-4.1");
    let out = Command::cargo_bin("ctxbench")
        .unwrap()
        .args(["run", suite.to_str().unwrap(), "--run-id", "r"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let samples = std::fs::read_to_string(dir.path().join("out/r/samples.jsonl")).unwrap();
    assert_eq!(samples.lines().count(), 2);
    assert!(!samples.contains("\"error\""), "{samples}");
}
