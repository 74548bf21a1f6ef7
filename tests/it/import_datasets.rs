//! Every bundled dataset imports; per-format message counts, tool-call pairing, and usage sums
//! checked against the source files' own figures (computed here independently from the JSON).

use ctxbench::tokens::stats;
use ctxbench::trace::import::{import_file, import_paths, pairing_problems};
use ctxbench::trace::{Role, SourceFormat, Trace, Usage};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn ds(rel: &str) -> PathBuf {
    root().join("datasets").join(rel)
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn one(rel: &str) -> Trace {
    let mut t = import_file(&ds(rel), None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.len(), 1, "{rel}");
    t.remove(0)
}

fn roles(t: &Trace) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for msg in &t.messages {
        *m.entry(msg.role.as_str()).or_insert(0) += 1;
    }
    m
}

fn count(t: &Trace, role: Role) -> usize {
    t.messages.iter().filter(|m| m.role == role).count()
}

#[test]
fn every_dataset_file_imports_and_only_non_traces_are_ignored() {
    let imported = import_paths(&[root().join("datasets")], None, false).unwrap();
    assert!(imported.skipped.is_empty());
    let ignored: Vec<String> = imported
        .ignored
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ignored, ["results_summary.json"]);
    let mut by_format: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &imported.traces {
        *by_format.entry(t.meta.source_format.as_str()).or_insert(0) += 1;
        assert!(!t.messages.is_empty(), "{} has no messages", t.meta.id);
        assert!(
            t.meta.goal.as_deref().is_some_and(|g| !g.is_empty()),
            "{} has no goal",
            t.meta.id
        );
        assert!(t.meta.source_path.is_some());
    }
    let expected: BTreeMap<&str, usize> = [
        ("claude-code", 11),
        ("codex", 6),
        ("copilot", 1),
        ("gemini", 1),
        ("gemini-cli", 2),
        ("inspect", 13),
        ("langchain", 4),
        ("mini-swe", 22),
        ("openai-responses", 2),
        ("openhands", 7),
        ("swe-agent", 17),
        ("tau", 200),
        ("tau2", 4),
    ]
    .into();
    assert_eq!(by_format, expected);
    let ids: HashSet<&str> = imported.traces.iter().map(|t| t.meta.id.as_str()).collect();
    assert_eq!(ids.len(), imported.traces.len(), "trace ids are unique");
}

/// The bundled Codex rollouts' events are all read or repeat what the items hold: no warning
/// of unread records (a warning on every real file for Codex's bookkeeping would be noise).
#[test]
fn codex_bookkeeping_events_are_no_warning() {
    let imported = import_paths(&[ds("codex")], None, false).unwrap();
    assert_eq!(imported.traces.len(), 6);
    for t in &imported.traces {
        let unread: Vec<&String> = t
            .meta
            .warnings
            .iter()
            .filter(|w| w.contains("does not read"))
            .collect();
        assert!(unread.is_empty(), "{}: {unread:?}", t.meta.id);
    }
}

#[test]
fn tool_results_pair_with_exactly_one_call_everywhere() {
    let imported = import_paths(&[root().join("datasets")], None, false).unwrap();
    let mut dangling_traces = Vec::new();
    for t in &imported.traces {
        let problems = pairing_problems(t);
        for p in &problems {
            // Only a call left open by the source itself ending is acceptable, and it must be
            // recorded as a warning (a server-side web search, whose results the Responses API
            // does not record, is answered by a placeholder of kind `server_side`).
            assert!(p.contains("ends mid-call"), "{}: {p}", t.meta.id);
            assert!(
                t.meta.warnings.contains(p),
                "{}: {p} not in warnings",
                t.meta.id
            );
            dangling_traces.push(t.meta.id.clone());
        }
        let calls: HashSet<&str> = t
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
            .collect();
        for m in t.messages.iter().filter(|m| m.role == Role::Tool) {
            assert!(
                calls.contains(m.tool_call_id.as_deref().unwrap()),
                "{}",
                t.meta.id
            );
            assert!(
                m.name.as_deref().is_some_and(|n| !n.is_empty()),
                "{}: unnamed tool result",
                t.meta.id
            );
        }
    }
    // OpenHands `finish` calls are never answered: the recorded sessions end on them.
    assert!(
        dangling_traces.iter().all(|id| [
            "basic",
            "basic_interactions",
            "multi_swe_bench__ponylang__ponyc-4595",
            "wrong_initial_state"
        ]
        .contains(&id.as_str())),
        "{dangling_traces:?}"
    );
}

#[test]
fn mini_swe_counts_and_usage_match_the_source() {
    let t = one("mini-swe-agent/django__django-11138.traj.json");
    assert_eq!(t.messages.len(), 232);
    assert_eq!(
        roles(&t),
        [
            ("assistant", 115),
            ("system", 1),
            ("tool", 100),
            ("user", 16)
        ]
        .into()
    );
    assert_eq!(
        t.messages
            .iter()
            .filter(|m| !m.tool_calls.is_empty())
            .count(),
        100
    );
    assert_eq!(
        t.messages
            .iter()
            .filter(|m| m.kind.as_deref() == Some("format_error"))
            .count(),
        15
    );
    assert_eq!(
        t.meta
            .goal
            .as_deref()
            .map(|g| g.starts_with("TIME_ZONE value in DATABASES")),
        Some(true)
    );

    for entry in std::fs::read_dir(ds("mini-swe-agent")).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".traj.json") {
            continue;
        }
        let src = json(&path);
        let t = import_file(&path, None).unwrap().remove(0);
        let api_calls = src["info"]["model_stats"]["api_calls"].as_u64().unwrap() as usize;
        let with_usage = t.messages.iter().filter(|m| m.usage.is_some()).count();
        assert_eq!(with_usage, api_calls, "{}", path.display());
        assert_eq!(count(&t, Role::Assistant), api_calls);
        let mut want = Usage::default();
        let mut cost = 0.0;
        for m in src["messages"].as_array().unwrap() {
            let u = &m["extra"]["response"]["usage"];
            if u.is_object() {
                want.input += u["prompt_tokens"].as_u64().unwrap();
                want.output += u["completion_tokens"].as_u64().unwrap();
                want.cache_read += u["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0);
                cost += u["cost"].as_f64().unwrap_or(0.0);
            }
        }
        assert_eq!(t.recorded_usage(), want, "{}", path.display());
        let instance_cost = src["info"]["model_stats"]["instance_cost"]
            .as_f64()
            .unwrap();
        assert!((cost - instance_cost).abs() < 1e-6 && t.meta.cost_usd == Some(instance_cost));
        // observations: every user message after a single-action assistant became a tool result
        assert_eq!(
            count(&t, Role::Tool),
            t.messages
                .iter()
                .filter(|m| !m.tool_calls.is_empty())
                .count()
        );
    }
}

/// The one completion of the bundled mini-swe-agent 1 runs that its token limit stopped
/// (65,536 output tokens, `finish_reason: "length"`) is warned of; no other 1.x file has a
/// warning (their refusals are all null, their finishes `stop`).
#[test]
fn mini_swe_length_finish_is_warned_of_and_nothing_else() {
    let imported = import_paths(&[ds("mini-swe-agent")], None, false).unwrap();
    assert_eq!(imported.traces.len(), 20);
    for t in &imported.traces {
        if t.meta.id == "scikit-learn__scikit-learn-25102" {
            assert_eq!(t.meta.warnings.len(), 1, "{:?}", t.meta.warnings);
            assert!(t.meta.warnings[0].starts_with(
                "$.messages[20].extra.response.choices[0].finish_reason: the model's output was \
                 stopped at its output token limit (\"length\")"
            ));
        } else {
            assert!(
                t.meta.warnings.is_empty(),
                "{}: {:?}",
                t.meta.id,
                t.meta.warnings
            );
        }
    }
}

#[test]
fn mini_swe_matches_the_golden_converter_exactly() {
    let t = one("mini-swe-agent/django__django-11138.traj.json");
    let golden = std::fs::read_to_string(
        root().join("testdata/deepagents-golden/mini-swe-django-11138/trace.jsonl"),
    )
    .unwrap();
    let golden: Vec<Value> = golden
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(t.messages.len(), golden.len());
    for (i, (m, g)) in t.messages.iter().zip(&golden).enumerate() {
        assert_eq!(m.role.as_str(), g["role"], "message {i}");
        assert_eq!(m.content, g["content"].as_str().unwrap(), "message {i}");
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| serde_json::json!({"id": c.id, "name": c.name, "args": c.arguments}))
            .collect();
        let gcalls = g.get("tool_calls").cloned().unwrap_or(Value::Array(vec![]));
        assert_eq!(Value::Array(calls), gcalls, "message {i}");
        assert_eq!(
            m.tool_call_id.as_deref(),
            g.get("tool_call_id").and_then(|v| v.as_str()),
            "message {i}"
        );
        if m.role == Role::Tool {
            assert_eq!(m.name.as_deref(), g["name"].as_str(), "message {i}");
        }
    }
}

#[test]
fn claude_code_merges_records_and_counts_usage_once_per_response() {
    for entry in std::fs::read_dir(ds("claude-code")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let recs: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mut ids = Vec::new();
        let mut want = Usage::default();
        let mut results = 0;
        for r in &recs {
            if r["type"] == "assistant" {
                let id = r["message"]["id"].as_str().unwrap();
                if !ids.contains(&id) {
                    ids.push(id);
                    let u = &r["message"]["usage"];
                    let (i, cw, cr) = (
                        u["input_tokens"].as_u64().unwrap(),
                        u["cache_creation_input_tokens"].as_u64().unwrap(),
                        u["cache_read_input_tokens"].as_u64().unwrap(),
                    );
                    want.input += i + cw + cr;
                    want.cache_read += cr;
                    want.cache_write += cw;
                }
            }
            if let Some(blocks) = r["message"]["content"].as_array() {
                results += blocks.iter().filter(|b| b["type"] == "tool_result").count();
            }
        }
        let t = import_file(&path, None).unwrap().remove(0);
        assert_eq!(count(&t, Role::Assistant), ids.len(), "{}", path.display());
        assert_eq!(count(&t, Role::Tool), results);
        let got = t.recorded_usage();
        assert_eq!(
            (got.input, got.cache_read, got.cache_write),
            (want.input, want.cache_read, want.cache_write)
        );
    }
    let t = one("claude-code/coverage-test-fix.jsonl");
    assert_eq!(count(&t, Role::Assistant), 14);
    assert_eq!(
        t.messages
            .iter()
            .filter(|m| m.kind.as_deref() == Some("meta"))
            .count(),
        2
    );
    assert_eq!(t.meta.model.as_deref(), Some("claude-opus-4-5-20251101"));
    let t = one("claude-code/hello-world-script.jsonl");
    assert_eq!(
        t.meta.goal.as_deref(),
        Some("Write a shell script called hello.sh that prints \"Hello world\" and run it.")
    );
    // tool result text is what the model saw, not the toolUseResult UI copy
    assert_eq!(
        t.messages[2].content,
        "File created successfully at: /tmp/tmp74wiyiny/hello.sh"
    );
}

#[test]
fn openhands_usage_equals_the_recorded_metrics() {
    let path = ds("openhands/multi_swe_bench__ponylang__ponyc-4595.json");
    let src = json(&path);
    let t = import_file(&path, None).unwrap().remove(0);
    let tu = src["metrics"]["token_usages"].as_array().unwrap();
    let sum = |k: &str| tu.iter().map(|u| u[k].as_u64().unwrap()).sum::<u64>();
    let acc = &src["metrics"]["accumulated_token_usage"];
    let got = t.recorded_usage();
    assert_eq!(got.input, sum("prompt_tokens"));
    assert_eq!(got.output, sum("completion_tokens"));
    assert_eq!(got.input, acc["prompt_tokens"].as_u64().unwrap());
    assert_eq!(t.meta.total_usage, Some(got));
    assert_eq!(count(&t, Role::Assistant), tu.len());
    assert_eq!(
        roles(&t),
        [("assistant", 23), ("system", 1), ("tool", 22), ("user", 1)].into()
    );
    let tools: Vec<&str> = t
        .meta
        .tools
        .iter()
        .map(|x| x["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 4);
    assert!(
        tools.contains(&"execute_bash") && tools.contains(&"str_replace_editor"),
        "{tools:?}"
    );
    assert!(t.messages[0].content.starts_with("You are OpenHands agent"));
    assert!(t
        .meta
        .goal
        .as_deref()
        .unwrap()
        .starts_with("ponyc segfaults"));

    let t = one("openhands/basic_gui_mode.json");
    assert_eq!(
        count(&t, Role::Assistant),
        5,
        "4 responses + 1 agent message"
    );
    assert_eq!(count(&t, Role::Tool), 4);

    let rows = import_file(&ds("openhands/resolver_mock_output.jsonl"), None).unwrap();
    let src: Vec<Value> = std::fs::read_to_string(ds("openhands/resolver_mock_output.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    for (t, s) in rows.iter().zip(&src) {
        assert_eq!(
            count(t, Role::Assistant),
            s["metrics"]["costs"].as_array().unwrap().len(),
            "{}",
            t.meta.id
        );
        assert_eq!(t.meta.cost_usd, s["metrics"]["accumulated_cost"].as_f64());
        assert!(pairing_problems(t).is_empty());
    }
    assert_eq!(rows[0].meta.id, "resolver_mock_output__issue-5");
}

/// The multi_swe_bench row records a `recall` observation (history[3]: runtime hosts, date and
/// the github/gitlab microagents). Its harness ran with `enable_prompt_extensions=False` (the
/// recorded first prompt, 5920 tokens, matches the system prompt, tools and task without it), so
/// as recorded it stays out, with a warning; the same row saying the extensions were on gets the
/// workspace-context message OpenHands renders, and every counted prompt grows by it.
#[test]
fn openhands_recall_is_imported_when_the_agent_showed_it() {
    let path = ds("openhands/multi_swe_bench__ponylang__ponyc-4595.json");
    let mut src = json(&path);
    let o200k = ctxbench::tokens::counter("o200k").unwrap();
    let off = import_file(&path, None).unwrap().remove(0);
    assert!(off
        .messages
        .iter()
        .all(|m| !m.content.contains("<EXTRA_INFO>")));
    let warned: Vec<&String> = off
        .meta
        .warnings
        .iter()
        .filter(|w| w.contains("recall"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", off.meta.warnings);
    assert!(warned[0].starts_with("$.history[3]: "), "{warned:?}");
    assert!(warned[0].contains("enable_prompt_extensions=false"));

    src["metadata"]["agent_config"] = serde_json::json!({"enable_prompt_extensions": true});
    let dir = tempfile::tempdir().unwrap();
    let on_path = dir.path().join("ponyc-4595-extensions-on.json");
    std::fs::write(&on_path, serde_json::to_vec(&src).unwrap()).unwrap();
    let on = import_file(&on_path, None).unwrap().remove(0);
    assert_eq!(
        on.meta.source_format,
        SourceFormat::Openhands,
        "auto-detected"
    );
    assert!(
        on.meta.warnings.iter().all(|w| !w.contains("recall")),
        "{:?}",
        on.meta.warnings
    );
    assert_eq!(on.messages.len(), off.messages.len() + 1);
    // system, task, then the recall's message, before the first model call
    let m = &on.messages[2];
    assert_eq!((m.role, m.kind.as_deref()), (Role::User, Some("meta")));
    assert_eq!(on.messages[3].role, Role::Assistant);
    assert!(
        m.content.starts_with("\n\n<RUNTIME_INFORMATION>\n"),
        "{}",
        m.content
    );
    let extras = &src["history"][3]["extras"];
    for host in extras["runtime_hosts"].as_object().unwrap().keys() {
        assert!(m.content.contains(&format!("* {host} (port ")), "{host}");
    }
    assert!(m.content.contains("Today's date is 2025-04-30 (UTC)."));
    let agents = extras["microagent_knowledge"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    for a in agents {
        let block = format!(
            "<EXTRA_INFO>\nThe following information has been included based on a keyword match \
             for \"{}\".\nIt may or may not be relevant to the user's request.\n\n{}\n</EXTRA_INFO>",
            a["trigger"].as_str().unwrap(),
            a["content"].as_str().unwrap()
        );
        assert!(m.content.contains(&block), "{}", a["name"]);
    }

    // token counts: the trace grows by the message, every one of the 23 prompts too
    let recall = o200k.count_message(m);
    assert!(recall > 1000, "{recall}");
    let (s_off, s_on) = (
        stats::compute(std::slice::from_ref(&off), o200k.as_ref(), 1),
        stats::compute(std::slice::from_ref(&on), o200k.as_ref(), 1),
    );
    assert_eq!(
        s_on.total.figures.tokens,
        s_off.total.figures.tokens + recall
    );
    let (c_off, c_on) = (
        s_off.total.figures.calibration.unwrap(),
        s_on.total.figures.calibration.unwrap(),
    );
    assert_eq!(c_on.calls, 23);
    assert_eq!(c_on.counted_input, c_off.counted_input + 23 * recall);
    assert_eq!(c_on.recorded_input, c_off.recorded_input);
}

#[test]
fn tau_runs_split_with_instructions_and_rewritten_ids() {
    let path = ds("tau-bench/gpt-4o-airline.json");
    let src = json(&path);
    let traces = import_file(&path, None).unwrap();
    assert_eq!(traces.len(), 200);
    let mut runs_with_reuse = 0;
    for (t, s) in traces.iter().zip(src.as_array().unwrap()) {
        assert_eq!(
            t.meta.id,
            format!("gpt-4o-airline__task{}_trial{}", s["task_id"], s["trial"])
        );
        assert_eq!(
            t.meta.instruction.as_deref(),
            s["info"]["task"]["instruction"].as_str()
        );
        assert_eq!(t.messages.len(), s["traj"].as_array().unwrap().len());
        assert_eq!(
            t.meta.outcome.as_ref().unwrap().reward,
            s["reward"].as_f64()
        );
        let ids: Vec<&str> = s["traj"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        let distinct: HashSet<&&str> = ids.iter().collect();
        if distinct.len() < ids.len() {
            runs_with_reuse += 1;
            assert!(
                t.meta.warnings.iter().any(|w| w.contains("already used")),
                "{}",
                t.meta.id
            );
        }
        assert!(pairing_problems(t).is_empty(), "{}", t.meta.id);
    }
    assert_eq!(runs_with_reuse, 49);
}

#[test]
fn tau2_counts_agent_usage_only() {
    let path = ds("tau2-bench/2025-10-06T19-24-15.909785_airline_relaxed_llm_agent_grok-3-mini_user_simulator_grok-3-mini.json");
    let src = json(&path);
    let traces = import_file(&path, None).unwrap();
    assert_eq!(traces.len(), 4);
    for (t, s) in traces.iter().zip(src["simulations"].as_array().unwrap()) {
        let msgs = s["messages"].as_array().unwrap();
        let sum_role = |role: &str| {
            msgs.iter()
                .filter(|m| m["role"] == role)
                .filter_map(|m| m["usage"]["prompt_tokens"].as_u64())
                .sum::<u64>()
        };
        assert_eq!(t.recorded_usage().input, sum_role("assistant"));
        assert!(
            sum_role("user") > 0,
            "the simulator did record usage, and it is excluded"
        );
        let agent_cost: f64 = msgs
            .iter()
            .filter(|m| m["role"] == "assistant")
            .filter_map(|m| m["cost"].as_f64())
            .sum();
        assert!((agent_cost - s["agent_cost"].as_f64().unwrap()).abs() < 1e-9);
        assert_eq!(t.meta.cost_usd, s["agent_cost"].as_f64());
        assert_eq!(
            t.messages.len(),
            msgs.len() + 1,
            "policy system prompt added"
        );
        assert_eq!(t.messages[0].role, Role::System);
        assert!(t
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .all(|m| m.kind.as_deref() == Some("user_simulator")));
        assert!(t
            .meta
            .instruction
            .as_deref()
            .unwrap()
            .contains("sophia_silva_7557"));
    }
}

#[test]
fn swe_agent_variants() {
    // 1.x function calling with real GPT-4 usage totals. The history ends on the observation of
    // step 4; step 5 (`submit` and the diff it printed) is only in the trajectory.
    let rel = "swe-agent/test__gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1__6e44b9__sweagenttestrepo-1c2844.traj";
    let src = json(&ds(rel));
    let t = one(rel);
    assert_eq!(
        roles(&t),
        [("assistant", 5), ("system", 1), ("tool", 5), ("user", 1)].into()
    );
    let step = src["trajectory"].as_array().unwrap().last().unwrap();
    let [.., submit, diff] = &t.messages[..] else {
        unreachable!()
    };
    assert_eq!(Some(submit.content.as_str()), step["response"].as_str());
    assert_eq!(submit.tool_calls[0].name, "submit");
    assert_eq!(diff.tool_call_id.as_ref(), Some(&submit.tool_calls[0].id));
    assert_eq!(Some(diff.content.as_str()), step["observation"].as_str());
    assert_eq!(
        Some(diff.content.as_str()),
        src["info"]["submission"].as_str()
    );
    assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    assert!(pairing_problems(&t).is_empty());
    assert_eq!(
        t.meta.total_usage,
        Some(Usage {
            input: 7141,
            output: 243,
            cache_read: 0,
            cache_write: 0
        })
    );
    assert_eq!(t.meta.goal.as_deref(), Some("SyntaxError: invalid syntax\nI'm running `missing_colon.py` as follows:\r\n\r\n```python\r\ndivision(23, 0)\r\n```\r\n\r\nbut I get the following error:\r\n\r\n```\r\n  File \"/Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py\", line 4\r\n    def division(a: float, b: float) -> float\r\n                                             ^\r\nSyntaxError: invalid syntax\r\n```"));
    // 0.x text actions: the history ends on `submit`, whose observation comes from the trajectory
    let path = ds("swe-agent/replay__marshmallow-code__marshmallow-1867__default__t-0.20__p-0.95__c-2.00__install-1___install_from_source__marshmallow-code__marshmallow-1867.traj");
    let src = json(&path);
    let t = import_file(&path, None).unwrap().remove(0);
    assert_eq!(
        t.messages.len(),
        src["history"].as_array().unwrap().len() + 1
    );
    let last = t.messages.last().unwrap();
    assert_eq!(last.role, Role::Tool);
    assert_eq!(last.name.as_deref(), Some("submit"));
    assert_eq!(
        Some(last.content.as_str()),
        src["trajectory"].as_array().unwrap().last().unwrap()["observation"].as_str()
    );
    assert!(pairing_problems(&t).is_empty());
}

/// Every SWE-agent trajectory step is imported as an assistant turn, or named in a warning; the
/// one step of the bundled files that is in the trajectory only is in a hand-made demonstration.
#[test]
fn swe_agent_every_trajectory_step_is_kept_or_named() {
    let mut skipped = Vec::new();
    for entry in std::fs::read_dir(ds("swe-agent")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("traj") {
            continue;
        }
        let src = json(&path);
        let steps = src["trajectory"].as_array().map_or(0, Vec::len);
        let history_turns = src["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant" && m["is_demo"] != true)
            .count();
        let t = import_file(&path, None).unwrap().remove(0);
        let named: Vec<&String> = t
            .meta
            .warnings
            .iter()
            .filter(|w| w.contains("is not in history"))
            .collect();
        let expected = if steps == 0 { history_turns } else { steps };
        assert_eq!(
            count(&t, Role::Assistant) + named.len(),
            expected,
            "{}",
            t.meta.id
        );
        assert!(pairing_problems(&t).is_empty(), "{}", t.meta.id);
        skipped.extend(named.into_iter().map(|w| format!("{}: {w}", t.meta.id)));
    }
    assert_eq!(
        skipped,
        [
            "ctf__crypto__BabyEncryption: $.trajectory[8]: step (action \"edit 2:2 decrypt.py\") \
          is not in history, the model's context; skipped"
        ]
    );
}

#[test]
fn forcing_a_wrong_format_gives_a_located_error() {
    let e = import_file(
        &ds("tau-bench/gpt-4o-airline.json"),
        Some(SourceFormat::MiniSwe),
    )
    .unwrap_err();
    assert!(e.file.ends_with("gpt-4o-airline.json"));
    assert_eq!(e.location, "$");
    assert!(e.message.contains("expected an object"), "{}", e.message);
    let e = import_file(&ds("SOURCE.txt"), None).unwrap_err();
    assert_eq!(e.location, "file");
    let e = import_file(&ds("mini-swe-agent/results_summary.json"), None).unwrap_err();
    assert!(
        e.message
            .starts_with("not a trace: a JSON object with keys total, passed"),
        "{}",
        e.message
    );
}
