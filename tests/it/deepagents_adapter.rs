//! The real deepagents through the external-engine protocol (issue 28 §2): on every golden
//! fixture, a variant whose engine is `python -m ctxbench_adapter deepagents` (deepagents 0.7.32's
//! own FilesystemMiddleware + SummarizationMiddleware, `adapters/python/`) and the built-in
//! `deepagents` preset produce the same events at the same trace indexes with the same token
//! counts, and the same model calls (tokens sent, messages sent, spans of the trace).
//!
//! Which figures are whose: the adapter reports what deepagents decided with its own counter
//! (`tokens_before` of a summary or an argument truncation, the call's `effective_tokens`, the
//! recount after a truncation); ctxbench counts the views it is sent (`sent_tokens`,
//! `tokens_after` of a summary) and the tool results it replaced. So both LangChain's
//! `count_tokens_approximately` and ctxbench's counter are checked against the preset.
//!
//! Needs the adapter's venv: `.ci/setup` (or `adapters/python/install`) builds it. The adapter's
//! source is taken from this checkout (`PYTHONPATH=adapters/python`), so an installed copy that
//! is out of date does not matter. A missing venv fails the test with that instruction; only
//! outside CI, `CTXBENCH_SKIP_ADAPTER=1` skips it (loudly).

use crate::support::traces::golden as fixture_dir;
use ctxbench::engine::external::ExternalSpec;
use ctxbench::engine::{fixture, FixedSummarizer, ReplayEnv, StoreTarget};
use regex::Regex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

const FIXTURES: [&str; 7] = [
    "mini-swe-django-11138",
    "synthetic-s11-w60k",
    "synthetic-s7",
    "synthetic-s7-anthropic",
    "synthetic-s7-out64k",
    "synthetic-s7-w100k",
    "synthetic-s7-w60k-out40k",
];

/// The venv's python (`CTXBENCH_ADAPTER_PYTHON`, else where `adapters/python/install` puts it),
/// or `None` when skipping was asked for outside CI.
fn adapter_python() -> Option<PathBuf> {
    let py = match std::env::var_os("CTXBENCH_ADAPTER_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => {
            let cache = std::env::var_os("CTXBENCH_CACHE")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                        .join(".cache/ctxbench")
                });
            cache.join("adapter/venv/bin/python")
        }
    };
    if py.is_file() {
        return Some(py);
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !in_ci && std::env::var("CTXBENCH_SKIP_ADAPTER").is_ok_and(|v| v == "1") {
        eprintln!(
            "\n!!!!! SKIPPED deepagents_adapter: no adapter venv at {} (CTXBENCH_SKIP_ADAPTER=1) !!!!!\n",
            py.display()
        );
        return None;
    }
    panic!(
        "the deepagents adapter's venv is missing ({} not found): run .ci/setup (or \
         adapters/python/install) first, or set CTXBENCH_ADAPTER_PYTHON; outside CI, \
         CTXBENCH_SKIP_ADAPTER=1 skips this test",
        py.display()
    );
}

fn spec(python: &Path) -> ExternalSpec {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/python");
    ExternalSpec {
        command: vec![
            python.display().to_string(),
            "-m".into(),
            "ctxbench_adapter".into(),
            "deepagents".into(),
        ],
        timeout_secs: Some(120.0),
        env: BTreeMap::from([("PYTHONPATH".to_string(), src.display().to_string())]),
        config: None,
    }
}

fn normalise(v: &Value) -> Value {
    let session = Regex::new(r"session_[0-9a-f]{32}").unwrap();
    let uuid = Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let s = v.to_string();
    let s = session.replace_all(&s, "session_<HEX>");
    serde_json::from_str(&uuid.replace_all(&s, "<UUID4>")).unwrap()
}

/// Differences between two arrays of fixture rows, each naming the row, its trace index and
/// the fields that differ (at most `limit`).
fn diff(fixture: &str, what: &str, got: &[Value], want: &[Value], limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if g == w {
            continue;
        }
        let mut fields = Vec::new();
        if let (Some(go), Some(wo)) = (g.as_object(), w.as_object()) {
            for key in wo.keys().chain(go.keys().filter(|k| !wo.contains_key(*k))) {
                if go.get(key) != wo.get(key) {
                    let show = |v: Option<&Value>| {
                        let s = v.map(Value::to_string).unwrap_or("<missing>".into());
                        s.chars().take(160).collect::<String>()
                    };
                    fields.push(format!(
                        "{key}: external {} built-in {}",
                        show(go.get(key)),
                        show(wo.get(key))
                    ));
                }
            }
        }
        out.push(format!(
            "{fixture} {what}[{k}] ({} at trace index {}): {}",
            w["type"].as_str().unwrap_or("call"),
            w["trace_index"],
            fields.join("; ")
        ));
        if out.len() >= limit {
            break;
        }
    }
    if got.len() != want.len() {
        out.push(format!(
            "{fixture} {what}: external has {}, built-in {}",
            got.len(),
            want.len()
        ));
    }
    out
}

/// Replay `name` with the built-in preset and through the adapter (`config`: its
/// `external.config`); the differences.
fn compare(name: &str, dir: &Path, python: &Path, config: Option<Value>) -> Vec<String> {
    let builtin = fixture::run(dir, &[], StoreTarget::Memory).expect("built-in replay");

    let fx = fixture::load(dir).expect("fixture loads");
    let mut spec = spec(python);
    spec.config = config;
    let mut engine = fx.config.clone();
    engine.preset = None;
    engine.external = Some(spec);
    let resolved = engine.resolve(None).expect("external variant resolves");
    let summarizer = FixedSummarizer(fx.summary_text.clone());
    let mut env = ReplayEnv::new(&summarizer);
    env.system_prompt = Some(fx.system_prompt.clone());
    env.tools = Some(fx.tools.clone());
    env.store = StoreTarget::Memory;
    let external = match ctxbench::engine::replay(&fx.trace, &resolved, &env) {
        Ok(r) => r,
        Err(e) => return vec![format!("{name}: the external replay failed: {e}")],
    };

    let mut got = normalise(&fixture::to_fixture_json(&external));
    let mut want = normalise(&fixture::to_fixture_json(&builtin));
    let mut problems = Vec::new();
    // The one text that differs by design: an overflow's message is deepagents' exception
    // text through the adapter, ctxbench's own sentence (with the figures) in the preset.
    for (side, v) in [("external", &mut got), ("built-in", &mut want)] {
        for e in v["events"].as_array_mut().unwrap() {
            if e["type"] == "context_overflow_error" {
                match e.as_object_mut().unwrap().remove("message") {
                    Some(Value::String(m)) if !m.is_empty() => {}
                    other => problems.push(format!(
                        "{name}: {side} overflow without a message: {other:?}"
                    )),
                }
            }
        }
    }
    for what in ["events", "model_calls"] {
        problems.extend(diff(
            name,
            what,
            got[what].as_array().unwrap(),
            want[what].as_array().unwrap(),
            8,
        ));
    }
    // Every summary went through ctxbench's summarizer, and every view passes the invariants
    // (pointers of evicted results and history files are backed by the files the adapter sent).
    if external.summarizer_calls != builtin.summarizer_calls {
        problems.push(format!(
            "{name}: {} summarize requests through the protocol, the built-in preset made {}",
            external.summarizer_calls, builtin.summarizer_calls
        ));
    }
    if !external.invariants.passed() {
        problems.push(format!(
            "{name}: invariants of the external views: {:?}",
            external.invariants.violations
        ));
    }
    problems
}

#[test]
fn real_deepagents_through_the_adapter_matches_the_preset_on_every_golden_fixture() {
    let Some(python) = adapter_python() else {
        return;
    };
    let mut problems = Vec::new();
    // Default: the request's tools are the suite's (here the fixture's tools.json); and once
    // with deepagents' own FilesystemMiddleware tool objects, which the fixtures counted.
    let mut runs: Vec<(String, PathBuf, Option<Value>)> = FIXTURES
        .iter()
        .map(|n| (n.to_string(), fixture_dir(n), None))
        .collect();
    runs.push((
        "synthetic-s7".into(),
        fixture_dir("synthetic-s7"),
        Some(serde_json::json!({"tools": "deepagents"})),
    ));
    // No fixture overflows: one that does, synthetic-s7-w60k-out40k with max_output_tokens
    // 55000 (budget 2,000 tokens, below the system prompt and tools alone).
    let tmp = tempfile::tempdir().unwrap();
    let overflow = tmp.path().join("overflow");
    std::fs::create_dir(&overflow).unwrap();
    let src = fixture_dir("synthetic-s7-w60k-out40k");
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, overflow.join(f.file_name().unwrap())).unwrap();
    }
    let cfg_path = overflow.join("config.json");
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg_path).unwrap()).unwrap();
    cfg["max_output_tokens"] = 55_000.into();
    std::fs::write(&cfg_path, cfg.to_string()).unwrap();
    runs.push((
        "overflow (s7-w60k, max_output_tokens 55000)".into(),
        overflow,
        None,
    ));
    for (name, dir, config) in runs {
        let name = name.as_str();
        let t = Instant::now();
        let shown = config.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
        let p = compare(name, &dir, &python, config);
        eprintln!(
            "deepagents_adapter: {name}{shown}: {} in {:.1} s",
            if p.is_empty() { "same" } else { "DIFFERS" },
            t.elapsed().as_secs_f64()
        );
        problems.extend(p);
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// LangChain's `SummarizationMiddleware` and `ContextEditingMiddleware` through the adapter on
/// the django trace: both act, every summary is asked of ctxbench's summarizer, the cleared
/// tool results are sent as LangChain's placeholder, and every view passes the invariants.
#[test]
fn langchain_summarization_and_context_editing_run_through_the_adapter() {
    let Some(python) = adapter_python() else {
        return;
    };
    let mut spec = spec(&python);
    spec.command[3] = "langchain".into();
    spec.config = Some(serde_json::json!({
        "summarization": {"trigger": ["tokens", 12000], "keep": ["messages", 12]},
        "context_editing": {"trigger": 6000, "keep": 2, "placeholder": "[cleared by LangChain]"},
    }));
    let config = ctxbench::engine::EngineConfig {
        window: Some(30_000),
        external: Some(spec),
        ..Default::default()
    };
    let resolved = config.resolve(None).unwrap();
    let trace = ctxbench::trace::import::import_file(
        &fixture_dir("mini-swe-django-11138").join("trace.jsonl"),
        None,
    )
    .unwrap()
    .remove(0);
    let summarizer = ctxbench::engine::OfflineSummarizer;
    let mut env = ReplayEnv::new(&summarizer);
    env.keep_views = ctxbench::engine::KeepViews::All;
    let r = ctxbench::engine::replay(&trace, &resolved, &env).expect("langchain replay");
    let counts = r.event_counts();
    let summaries = counts.get("summarized").copied().unwrap_or(0);
    assert!(summaries >= 2, "{counts:?}");
    assert!(
        counts.get("cleared").copied().unwrap_or(0) >= 10,
        "{counts:?}"
    );
    assert_eq!(r.summarizer_calls, summaries);
    assert!(r.invariants.passed(), "{:?}", r.invariants.violations);
    let placeholders = r
        .views
        .iter()
        .flat_map(|v| &v.messages)
        .filter(|m| m.content == "[cleared by LangChain]")
        .count();
    assert!(placeholders > 0);
    // After a summary the request starts with LangChain's summary message, then trace spans.
    let ev = r.events.iter().find(|e| e.kind() == "summarized").unwrap();
    let after = r
        .calls
        .iter()
        .find(|c| c.trace_index > ev.trace_index)
        .unwrap();
    let spans = serde_json::to_value(&after.sent_view).unwrap();
    assert_eq!(spans[0], "summary", "{spans}");
    let s = ev.detail.summary().unwrap();
    assert!(s
        .summary_message
        .starts_with("Here is a summary of the conversation to date:"));
    assert!(s.newly_summarized > 0 && s.state_cutoff > 0);
}

/// A bad `external.config` is a clean error of the unit: it names the command and shows the
/// adapter's own message from its stderr.
#[test]
fn a_bad_adapter_config_is_an_error_naming_the_command_and_the_key() {
    let Some(python) = adapter_python() else {
        return;
    };
    let mut spec = spec(&python);
    spec.config = Some(serde_json::json!({"tools": "bogus"}));
    let config = ctxbench::engine::EngineConfig {
        window: Some(30_000),
        external: Some(spec),
        ..Default::default()
    };
    let resolved = config.resolve(None).unwrap();
    let trace = fixture::load(&fixture_dir("synthetic-s7")).unwrap().trace;
    let summarizer = ctxbench::engine::OfflineSummarizer;
    let env = ReplayEnv::new(&summarizer);
    let e = match ctxbench::engine::replay(&trace, &resolved, &env) {
        Ok(_) => panic!("a bad config must fail the replay"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("-m ctxbench_adapter deepagents"), "{e}");
    assert!(
        e.contains("external.config.tools: expected 'deepagents' or 'suite', got 'bogus'"),
        "{e}"
    );
}
