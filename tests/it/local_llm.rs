//! Integration tests against a real local model: llama.cpp's server (xllamacpp) with
//! Qwen2.5-Coder-0.5B-Instruct Q4_K_M, reached through the `openai` provider: a chat answer with
//! usage, a summary of a short history through the engine's `ProviderSummarizer`, and a needle
//! probe with the text tool protocol.
//!
//! Finding the server (see docs/local-llm.md):
//! - `CTXBENCH_LOCAL_LLM_URL` set: that base URL (`http://host:port/v1`) is used as is;
//! - otherwise `scripts/local-llm/start` runs: it reuses the server `.ci/setup` (or an earlier
//!   run) started from the same cache, or installs and starts one (20–75 s from an empty
//!   cache, 5 s from a warm one), and prints its URL;
//! - a developer without network may set `CTXBENCH_SKIP_LOCAL_LLM=1` to skip these tests; under
//!   CI (`CI=true`) that variable is ignored and a missing server is a failure.
//!
//! The tests take a lock so that only one talks to the model at a time (2 cores, one slot).
//! Temperature 0 and a fixed seed: the model's output is the same on every run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use ctxbench::engine::summarizer::{SummaryRequest, DEFAULT_SUMMARY_PROMPT};
use ctxbench::engine::Summarizer;
use ctxbench::providers::{
    build_provider, ChatRequest, ChatResponse, Message, Provider, ProviderConfig, ProviderKind,
    ProviderSummarizer, ToolCall, ToolDef, ToolProtocol,
};
use serde_json::{json, Value};

/// The name `scripts/local-llm/serve.py` gives the model (reported back in responses).
const MODEL: &str = "qwen2.5-coder-0.5b-instruct";

fn truthy(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

/// The server's base URL, or `None` when a developer opted out (never under CI).
fn server_url() -> Option<&'static str> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("CTXBENCH_LOCAL_LLM_URL") {
            if !url.trim().is_empty() {
                return Some(url.trim().to_string());
            }
        }
        if truthy("CTXBENCH_SKIP_LOCAL_LLM") && !truthy("CI") {
            eprintln!("local_llm: skipped (CTXBENCH_SKIP_LOCAL_LLM is set)");
            return None;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/local-llm/start");
        let started = Instant::now();
        let out = Command::new(&script)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{} failed ({}); these tests need the local model server (CI: .ci/setup starts it; \
             offline developers may set CTXBENCH_SKIP_LOCAL_LLM=1). Its output:\n{stderr}",
            script.display(),
            out.status
        );
        let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"),
            "{} printed {url:?}, expected http://127.0.0.1:PORT/v1",
            script.display()
        );
        eprintln!(
            "local_llm: server at {url} (start took {:.1}s)",
            started.elapsed().as_secs_f64()
        );
        Some(url)
    })
    .as_deref()
}

#[test]
fn start_reuses_the_running_server() {
    let Some(url) = server_url() else { return };
    if std::env::var("CTXBENCH_LOCAL_LLM_URL").is_ok_and(|u| !u.trim().is_empty()) {
        return; // a server of the developer's own: the script is not involved
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/local-llm/start");
    let started = Instant::now();
    let out = Command::new(&script).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), url);
    assert!(
        started.elapsed().as_secs() < 30,
        "reuse must not reinstall or restart ({:?})",
        started.elapsed()
    );
}

/// One test talks to the model at a time.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn config(url: &str, protocol: ToolProtocol) -> ProviderConfig {
    let mut c = ProviderConfig::new(ProviderKind::Openai, MODEL);
    c.base_url = Some(url.to_string());
    c.cache = false; // every run asks the model
    c.temperature = Some(0.0);
    c.seed = Some(42);
    c.max_retries = 1;
    c.timeout_secs = 300.0;
    c.concurrency = 1;
    c.tool_protocol = protocol;
    c
}

fn provider(url: &str, protocol: ToolProtocol) -> Arc<dyn Provider> {
    build_provider(&config(url, protocol)).expect("provider for the local server")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn chat(p: &dyn Provider, req: &ChatRequest) -> ChatResponse {
    let started = Instant::now();
    let r = runtime()
        .block_on(p.chat(req))
        .unwrap_or_else(|e| panic!("chat with the local model failed: {e}"));
    eprintln!(
        "local_llm: call {:.1}s, usage {:?}, reply {:?}",
        started.elapsed().as_secs_f64(),
        r.usage,
        r.message.content
    );
    r
}

#[test]
fn chat_completion_answers_and_reports_usage() {
    let Some(url) = server_url() else { return };
    let _one = exclusive();
    let started = Instant::now();
    let p = provider(url, ToolProtocol::Native);
    let mut req = ChatRequest::new(vec![
        Message::system("You are a terse assistant."),
        Message::user("What is the capital of France? Answer with one word."),
    ]);
    req.sampling.max_tokens = Some(16);
    let r = chat(p.as_ref(), &req);
    assert!(
        r.message.content.to_lowercase().contains("paris"),
        "{:?}",
        r.message.content
    );
    assert_eq!(r.model, MODEL, "the server reports the alias start gave it");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(r.usage_reported);
    // ~30 prompt tokens with the chat template; at most max_tokens out.
    assert!(
        (15..200).contains(&r.usage.input),
        "input tokens {:?}",
        r.usage
    );
    assert!((1..=16).contains(&r.usage.output), "{:?}", r.usage);
    assert_eq!(r.message.usage, Some(r.usage));

    // The same prompt again: the server's prompt cache serves the prefix, reported as cached
    // input (prompt_tokens_details.cached_tokens), and temperature 0 repeats the answer.
    let again = chat(p.as_ref(), &req);
    assert_eq!(again.message.content, r.message.content);
    assert_eq!(again.usage.input, r.usage.input);
    assert!(
        again.usage.cache_read > 0 && again.usage.cache_read < again.usage.input,
        "{:?}",
        again.usage
    );
    eprintln!(
        "local_llm: chat test {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// A short agent session (about 470 tokens as the summarizer renders it) with six exact facts a
/// summary should keep.
fn short_history() -> (Vec<Arc<Message>>, [&'static str; 6]) {
    let messages = vec![
        Message::user("Move the billing-api service to port 8443 and make sure its tests pass. Do not touch the payments-api service."),
        Message::assistant("I'll start by reading the billing configuration.", vec![call("c1", "read_file", json!({"path": "config/billing.yaml"}))]),
        Message::tool("c1", "read_file", "service: billing-api\nport: 8080\nlog_level: info\ndatabase: billing_db\nreplicas: 2"),
        Message::assistant("The service listens on 8080. I'll change it to 8443.", vec![call("c2", "edit_file", json!({"path": "config/billing.yaml", "old": "port: 8080", "new": "port: 8443"}))]),
        Message::tool("c2", "edit_file", "Edited config/billing.yaml (1 line changed)."),
        Message::assistant("Now I'll run the billing tests.", vec![call("c3", "bash", json!({"command": "pytest tests/test_billing.py"}))]),
        Message::tool("c3", "bash", "ImportError while importing test module tests/test_billing.py: ModuleNotFoundError: No module named 'yaml'"),
        Message::assistant("The YAML parser is missing. I'll add it to requirements.txt.", vec![call("c4", "edit_file", json!({"path": "requirements.txt", "append": "pyyaml==6.0.1"}))]),
        Message::tool("c4", "edit_file", "Edited requirements.txt (1 line added)."),
        Message::assistant("Installing and re-running.", vec![call("c5", "bash", json!({"command": "pip install -r requirements.txt && pytest tests/test_billing.py"}))]),
        Message::tool("c5", "bash", "Successfully installed pyyaml-6.0.1\n12 passed, 1 failed: test_port_is_exposed expected 8080 in docker-compose.yml"),
        Message::assistant("One test still expects the old port in docker-compose.yml; I'll update the port mapping there next.", vec![]),
    ];
    let facts = [
        "billing-api",
        "8443",
        "config/billing.yaml",
        "pyyaml",
        "test_billing",
        "docker-compose.yml",
    ];
    (messages.into_iter().map(Arc::new).collect(), facts)
}

#[test]
fn summary_of_a_short_history_through_the_provider_summarizer() {
    let Some(url) = server_url() else { return };
    let _one = exclusive();
    let started = Instant::now();
    // Without these penalties the 0.5B model loops (docs/local-llm.md); they are provider
    // defaults, as a suite would configure them.
    let mut c = config(url, ToolProtocol::Native);
    c.frequency_penalty = Some(0.3);
    c.extra_body.insert("repeat_penalty".into(), json!(1.15));
    let p = build_provider(&c).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let summarizer = ProviderSummarizer::new(p, rt.handle().clone());
    let (history, facts) = short_history();
    let req = SummaryRequest {
        messages: &history,
        previous_summary: None,
        prompt: DEFAULT_SUMMARY_PROMPT,
        max_tokens: 160,
    };
    let out = summarizer
        .summarize(&req)
        .unwrap_or_else(|e| panic!("summary through the local model failed: {e}"));
    eprintln!("local_llm: summary usage {:?}:\n{}", out.usage, out.text);
    let text = out.text.trim();
    assert!(!text.is_empty(), "empty summary");
    assert_eq!(out.model, MODEL);
    assert!(
        out.usage.input <= 1500,
        "the history must stay small: {:?}",
        out.usage
    );
    assert!(out.usage.output <= 160, "{:?}", out.usage);
    let lower = text.to_lowercase();
    let kept: Vec<&str> = facts
        .iter()
        .copied()
        .filter(|f| lower.contains(&f.to_lowercase()))
        .collect();
    eprintln!("local_llm: summary kept {}/6 facts: {kept:?}", kept.len());
    assert!(
        kept.len() >= 2,
        "the summary kept only {kept:?} of {facts:?}:\n{text}"
    );
    // Not degenerate: no line repeated over and over.
    let mut lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.len() > 3)
        .collect();
    lines.sort_unstable();
    let worst = lines
        .chunk_by(|a, b| a == b)
        .map(<[&str]>::len)
        .max()
        .unwrap_or(0);
    assert!(worst <= 3, "a line repeats {worst} times:\n{text}");
    eprintln!(
        "local_llm: summary test {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// The files of the needle probe; the fact sits in one line of one file.
const FILES: &[(&str, &str)] = &[
    ("README.md", "# Demo service\nRun `make dev` to start it locally.\nSee notes/ for operations.\n"),
    ("notes/db.md", "# Databases\nproduction uses port 5432\nThe staging database listens on port 6117.\nBackups run nightly.\n"),
    ("notes/oncall.md", "# On-call\nPage the platform team for outages.\n"),
    ("src/app.py", "import os\n\nprint('hello from', os.getcwd())\n"),
];

fn needle_tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "grep".into(),
            description: "Search every file for a word (case-insensitive); returns the matching lines as path:line:text.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"pattern": {"type": "string", "description": "the word to search for"}},
                "required": ["pattern"]
            }),
        },
        ToolDef {
            name: "read_file".into(),
            description: "Read one file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "the file path, as grep printed it"}},
                "required": ["path"]
            }),
        },
    ]
}

/// The two tools over `root`, as a real agent harness would run them. `Err` = a tool error the
/// model sees.
fn run_tool(root: &Path, call: &ToolCall) -> Result<String, String> {
    let arg = |k: &str| {
        call.arguments
            .get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("missing string argument \"{k}\""))
    };
    let mut files: Vec<PathBuf> = FILES.iter().map(|(p, _)| PathBuf::from(p)).collect();
    files.sort();
    match call.name.as_str() {
        "grep" => {
            let pattern = arg("pattern")?.to_lowercase();
            let mut hits = Vec::new();
            for rel in &files {
                let text = std::fs::read_to_string(root.join(rel)).map_err(|e| e.to_string())?;
                for (i, line) in text.lines().enumerate() {
                    if line.to_lowercase().contains(&pattern) {
                        hits.push(format!("{}:{}:{line}", rel.display(), i + 1));
                    }
                }
            }
            if hits.is_empty() {
                Ok(format!("no matches for \"{pattern}\""))
            } else {
                Ok(hits.join("\n"))
            }
        }
        "read_file" => {
            let path = arg("path")?;
            let rel = Path::new(path.trim_start_matches("./"));
            if !files.iter().any(|f| f == rel) {
                let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                return Err(format!(
                    "no such file: {path}. The files are: {}",
                    names.join(", ")
                ));
            }
            std::fs::read_to_string(root.join(rel)).map_err(|e| e.to_string())
        }
        other => Err(format!("unknown tool {other}")),
    }
}

/// Outcome of one probe.
struct Probe {
    answer: Option<String>,
    tool_calls: Vec<ToolCall>,
    malformed: u32,
    repeated: u32,
    model_calls: u32,
}

/// The needle eval's tool loop in miniature: ask, run each call, feed results back, until the
/// model answers or `max_turns` replies have been spent.
fn needle_probe(p: &dyn Provider, root: &Path, question: &str, max_turns: usize) -> Probe {
    let mut messages = vec![
        Message::system(
            "You answer questions about the files of a project. You cannot see the files: use \
             the tools to find the answer.",
        ),
        Message::user(question),
    ];
    let mut probe = Probe {
        answer: None,
        tool_calls: Vec::new(),
        malformed: 0,
        repeated: 0,
        model_calls: 0,
    };
    for _ in 0..max_turns {
        let mut req = ChatRequest::new(messages.clone()).with_tools(needle_tools());
        req.sampling.max_tokens = Some(120);
        let r = chat(p, &req);
        let t = r.text_tools.expect("text protocol telemetry");
        probe.malformed += t.malformed;
        probe.repeated += t.repeated;
        probe.model_calls += t.model_calls;
        if r.message.tool_calls.is_empty() {
            probe.answer = Some(r.message.content);
            return probe;
        }
        let calls = r.message.tool_calls.clone();
        messages.push(r.message);
        for c in calls {
            let (text, is_error) = match run_tool(root, &c) {
                Ok(t) => (t, false),
                Err(e) => (e, true),
            };
            eprintln!("local_llm: {}({}) -> {text:?}", c.name, c.arguments);
            let mut m = Message::tool(c.id.clone(), c.name.clone(), text);
            m.is_error = is_error;
            messages.push(m);
            probe.tool_calls.push(c);
        }
    }
    probe
}

fn needle_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in FILES {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn needle_probe_with_the_text_tool_protocol() {
    let Some(url) = server_url() else { return };
    let _one = exclusive();
    let started = Instant::now();
    let dir = needle_dir();
    let p = provider(url, ToolProtocol::Text);
    let probe = needle_probe(
        p.as_ref(),
        dir.path(),
        "What port does the staging database listen on? Use grep to search for \"staging\".",
        6,
    );
    eprintln!(
        "local_llm: needle: {} tool calls, {} model calls, {} malformed, {} repeated, answer {:?}, {:.1}s",
        probe.tool_calls.len(),
        probe.model_calls,
        probe.malformed,
        probe.repeated,
        probe.answer,
        started.elapsed().as_secs_f64()
    );
    assert!(
        !probe.tool_calls.is_empty(),
        "the model answered without looking: {:?}",
        probe.answer
    );
    let answer = probe.answer.expect("the model answered within 6 turns");
    assert!(
        answer.contains("6117"),
        "the answer misses the planted fact: {answer:?}"
    );
    // 6117 appears nowhere but in notes/db.md: the model must have seen that file's text.
    assert!(probe
        .tool_calls
        .iter()
        .any(|c| { run_tool(dir.path(), c).is_ok_and(|out| out.contains("6117")) }));
}

/// Reliability of the probe over several planted facts (run by hand, ~2 minutes:
/// `cargo test --test local_llm -- --ignored --nocapture`). Figures are in docs/local-llm.md.
#[test]
#[ignore = "measurement: several minutes of model time"]
fn needle_probe_reliability() {
    let Some(url) = server_url() else { return };
    let _one = exclusive();
    let dir = needle_dir();
    let p = provider(url, ToolProtocol::Text);
    // Each question names the word to search for: without that hint the 0.5B model guesses
    // file names (read_file "staging.db") and never finds the file (measured).
    let cases = [
        ("What port does the staging database listen on? Use grep to search for \"staging\".", "6117"),
        ("Which port does production use for its database? Use grep to search for \"production\".", "5432"),
        ("Which team should be paged for outages? Use grep to search for \"outages\".", "platform"),
        ("What command starts the demo service locally? Use grep to search for \"start\".", "make dev"),
        ("How often do backups run? Use grep to search for \"backups\".", "nightly"),
    ];
    let mut passed = 0;
    for (q, want) in cases {
        let started = Instant::now();
        let probe = needle_probe(p.as_ref(), dir.path(), q, 6);
        let ok = !probe.tool_calls.is_empty()
            && probe
                .answer
                .as_deref()
                .is_some_and(|a| a.to_lowercase().contains(want));
        passed += usize::from(ok);
        eprintln!(
            "local_llm: reliability {q:?}: {} ({} tool calls, {} malformed, {} repeated, {:.1}s) answer {:?}",
            if ok { "PASS" } else { "FAIL" },
            probe.tool_calls.len(),
            probe.malformed,
            probe.repeated,
            started.elapsed().as_secs_f64(),
            probe.answer
        );
    }
    eprintln!("local_llm: reliability {passed}/{}", cases.len());
    assert!(
        passed * 2 > cases.len(),
        "fewer than half the probes passed"
    );
}
