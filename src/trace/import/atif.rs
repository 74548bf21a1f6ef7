//! Harbor ATIF (Agent Trajectory Interchange Format, `ATIF-v1.x`) import and export.
//!
//! Import: `system`/`user` steps → system/user messages; an `agent` step → one assistant message
//! (`message`, `reasoning_content`, `tool_calls` `{tool_call_id, function_name, arguments}`,
//! usage from `metrics`: `prompt_tokens` already includes `cached_tokens`; cache writes from
//! `metrics.extra.cache_creation_input_tokens`) followed by one tool message per
//! `observation.results[]` entry (`source_call_id`; a result without one becomes a user message
//! `kind: "observation"`). Compaction steps (a `system` step whose `extra` says
//! `compaction: true` or `type`/`kind` `compaction`/`compact_boundary`) become `compaction`
//! markers. `final_metrics` → `meta.total_usage` / `meta.cost_usd`.
//!
//! Export (`to_atif`) writes `ATIF-v1.4` and keeps what ATIF has no field for (trace metadata,
//! message kinds, error flags, tool-result names and timestamps, thinking blocks with their
//! signatures, markers) under `extra.ctxbench`,
//! so export → import gives back the identical trace. Tool messages that directly follow an
//! assistant message become its step's observation; any other tool message becomes a `system`
//! step holding only an observation.

use super::json::{content_text, Node, Res};
use super::{tool_calls, CallShape, Calls};
use crate::trace::model::{
    ContextMarker, Message, Role, SourceFormat, ToolCall, Trace, TraceMeta, Usage,
};
use serde_json::{json, Map, Value};
use super::detect::{arr_of, str_of};
use super::Importer;
use crate::output::quoted;

pub const EXPORT_SCHEMA_VERSION: &str = "ATIF-v1.4";

// ---------------------------------------------------------------- import

/// Agent Trajectory Interchange Format: `schema_version: "ATIF…"` or `{session_id, agent, steps}`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Atif,
    detect: |shape| {
        shape.object().is_some_and(|o| {
            str_of(o, "schema_version").is_some_and(|f| f.starts_with("ATIF"))
                || (arr_of(o, "steps").is_some()
                    && o.contains_key("agent")
                    && o.contains_key("session_id"))
        })
    },
    import: |input, stem| {
        super::each_document_mut(input, stem, |v, path, id| {
            import_value(v, path, id).map(|t| vec![t])
        })
    },
};

pub fn import(root: &Node<'_>, stem: &str) -> Res<Trace> {
    import_value(&mut root.v.clone(), root.path.clone(), stem)
}

/// Import the document `v` at `path`, moving its steps out and dropping each once converted.
pub fn import_value(v: &mut Value, path: String, stem: &str) -> Res<Trace> {
    let root = Node::at(v, path.clone());
    root.obj()?;
    let version = root.key("schema_version").str()?;
    if !version.starts_with("ATIF-v1") {
        return Err(root.key("schema_version").error(format!(
            "expected an ATIF v1.x schema version (\"ATIF-v1.2\", …), found {version}", version = crate::output::quoted(version)
        )));
    }
    let saved_meta = root.key("extra").key("ctxbench").key("meta");
    let meta = if saved_meta.is_null() {
        let mut meta = TraceMeta::new(stem, SourceFormat::Atif);
        meta.model = root
            .key("agent")
            .key("model_name")
            .opt_str()?
            .map(String::from);
        meta.task_id = root.key("session_id").scalar_text()?;
        let fm = root.key("final_metrics");
        if !fm.is_null() {
            let p = fm.key("total_prompt_tokens").opt_u64()?;
            let c = fm.key("total_completion_tokens").opt_u64()?;
            if p.is_some() || c.is_some() {
                meta.total_usage = Some(Usage {
                    input: p.unwrap_or(0),
                    output: c.unwrap_or(0),
                    cache_read: fm.key("total_cached_tokens").opt_u64()?.unwrap_or(0),
                    cache_write: 0,
                });
            }
            meta.cost_usd = fm.key("total_cost_usd").opt_f64()?;
        }
        meta
    } else {
        serde_path_to_error::deserialize::<_, TraceMeta>(saved_meta.v.clone()).map_err(|e| {
            let p = e.path().to_string();
            saved_meta.error(format!("{} (at {p})", e.into_inner()))
        })?
    };
    let mut t = Trace::new(meta);
    let mut calls = Calls::default();
    for (s_value, s_path) in Node::take_items(v, path, "steps")? {
        let s = Node::at(&s_value, s_path);
        s.obj()?;
        let source = s.key("source").str()?;
        let extra = s.key("extra");
        let ours = extra.key("ctxbench");
        let marker = ours.key("marker");
        if !marker.is_null() {
            t.markers.push(ContextMarker {
                index: t.messages.len(),
                kind: marker.key("kind").str()?.to_string(),
                detail: marker.key("detail").opt_str()?.map(String::from),
                tokens_before: marker.key("tokens_before").opt_u64()?,
            });
            continue;
        }
        let message = content_text(&s.key("message"), &mut t.meta.warnings)?;
        if source == "system" && ours.is_null() && is_compaction(&extra)? {
            t.markers.push(ContextMarker {
                index: t.messages.len(),
                kind: "compaction".into(),
                detail: None,
                tokens_before: extra.key("tokens_before").opt_u64().ok().flatten(),
            });
            if !message.is_empty() {
                let mut m = Message::user(message);
                m.kind = Some("compaction_summary".into());
                t.messages.push(m);
            }
            continue;
        }
        let only_results = ours.key("role").opt_str()? == Some("tool");
        if !only_results {
            let mut m = match source {
                "system" => Message::system(message),
                "user" => Message::user(message),
                "agent" => {
                    let shape = CallShape::Flat {
                        id: "tool_call_id",
                        name: "function_name",
                    };
                    let tool_calls: Vec<ToolCall> = tool_calls(
                        &s.key("tool_calls"),
                        shape,
                        &mut calls,
                        &mut t.meta.warnings,
                    )?
                    .into_iter()
                    .map(|(_, c)| c)
                    .collect();
                    let mut a = Message::assistant(message, tool_calls);
                    a.reasoning = s.key("reasoning_content").opt_str()?.map(String::from);
                    let mt = s.key("metrics");
                    if !mt.is_null() {
                        mt.obj()?;
                        a.usage = Some(Usage {
                            input: mt.key("prompt_tokens").opt_u64()?.unwrap_or(0),
                            output: mt.key("completion_tokens").opt_u64()?.unwrap_or(0),
                            cache_read: mt.key("cached_tokens").opt_u64()?.unwrap_or(0),
                            cache_write: mt
                                .key("extra")
                                .key("cache_creation_input_tokens")
                                .opt_u64()?
                                .unwrap_or(0),
                        });
                    }
                    if t.meta.model.is_none() {
                        t.meta.model = s.key("model_name").opt_str()?.map(String::from);
                    }
                    a
                }
                _ => {
                    return Err(s
                        .key("source")
                        .expected("\"system\", \"user\" or \"agent\""))
                }
            };
            m.timestamp = s.key("timestamp").opt_str()?.map(String::from);
            apply_extras(&mut m, &ours.key("own"))?;
            t.messages.push(m);
        }
        let results = s.key("observation").key("results").opt_items()?;
        let result_extras = ours.key("results");
        for (k, r) in results.iter().enumerate() {
            r.obj()?;
            let content = content_text(&r.key("content"), &mut t.meta.warnings)?;
            let mut m = match r.key("source_call_id").opt_str()? {
                Some(cid) => {
                    let (id, name) = calls.answer(cid).unwrap_or_else(|| {
                        t.meta.warnings.push(format!(
                            "{}: result for {} answers no open call",
                            r.path,
                            quoted(cid)
                        ));
                        (cid.to_string(), String::new())
                    });
                    Message::tool(id, name, content)
                }
                None => {
                    let mut m = Message::user(content);
                    m.kind = Some("observation".into());
                    m
                }
            };
            apply_extras(&mut m, &result_extras.idx(k))?;
            t.messages.push(m);
        }
    }
    Ok(t)
}

fn is_compaction(extra: &Node<'_>) -> Res<bool> {
    if extra.key("compaction").v.as_bool() == Some(true) {
        return Ok(true);
    }
    for k in ["type", "kind", "subtype"] {
        if matches!(
            extra.key(k).v.as_str(),
            Some("compaction" | "compact_boundary" | "context_compaction" | "context_management")
        ) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Fields ATIF has no slot for, saved per message by `to_atif`.
fn apply_extras(m: &mut Message, e: &Node<'_>) -> Res<()> {
    if e.is_null() {
        return Ok(());
    }
    e.obj()?;
    if let Some(k) = e.key("kind").opt_str()? {
        m.kind = Some(k.to_string());
    }
    if let Some(b) = e.key("is_error").opt_bool()? {
        m.is_error = b;
    }
    if e.has("name") {
        m.name = e.key("name").opt_str()?.map(String::from);
    }
    if e.key("no_name").opt_bool()? == Some(true) {
        m.name = None;
    }
    if let Some(ts) = e.key("timestamp").opt_str()? {
        m.timestamp = Some(ts.to_string());
    }
    if let Some(r) = e.key("reasoning").opt_str()? {
        m.reasoning = Some(r.to_string());
    }
    let blocks = e.key("thinking_blocks");
    if !blocks.is_null() {
        m.thinking_blocks = serde_json::from_value(blocks.v.clone())
            .map_err(|err| blocks.error(format!("expected thinking blocks: {err}")))?;
    }
    Ok(())
}

// ---------------------------------------------------------------- export

/// Per-message fields ATIF cannot hold (empty object when there are none).
fn extras_of(m: &Message, in_step_timestamp: bool, call_name: Option<&str>) -> Map<String, Value> {
    let mut e = Map::new();
    if let Some(k) = &m.kind {
        e.insert("kind".into(), json!(k));
    }
    if m.is_error {
        e.insert("is_error".into(), json!(true));
    }
    if m.role == Role::Tool {
        match (&m.name, call_name) {
            (Some(n), Some(c)) if n == c => {}
            (Some(n), _) => {
                e.insert("name".into(), json!(n));
            }
            (None, _) => {
                e.insert("no_name".into(), json!(true));
            }
        }
    }
    if !in_step_timestamp {
        if let Some(ts) = &m.timestamp {
            e.insert("timestamp".into(), json!(ts));
        }
    }
    // Anthropic thinking blocks with their signatures (ATIF's `reasoning_content` is text only).
    if !m.thinking_blocks.is_empty() {
        e.insert("thinking_blocks".into(), json!(m.thinking_blocks));
    }
    e
}

fn step_extra(
    own: Option<Map<String, Value>>,
    results: Vec<Map<String, Value>>,
    role_tool: bool,
) -> Option<Value> {
    let mut c = Map::new();
    if let Some(o) = own.filter(|o| !o.is_empty()) {
        c.insert("own".into(), Value::Object(o));
    }
    if results.iter().any(|r| !r.is_empty()) {
        c.insert(
            "results".into(),
            Value::Array(results.into_iter().map(Value::Object).collect()),
        );
    }
    if role_tool {
        c.insert("role".into(), json!("tool"));
    }
    (!c.is_empty()).then(|| json!({"ctxbench": c}))
}

/// Export a trace as an ATIF v1.4 document (see the module docs).
pub fn to_atif(t: &Trace) -> Value {
    let mut steps: Vec<Value> = Vec::new();
    let mut markers: Vec<&ContextMarker> = t.markers.iter().collect();
    markers.sort_by_key(|m| m.index);
    let mut mi = 0usize;
    let mut call_names: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    // Emit the markers that sit before message `upto`.
    let push_markers = |upto: usize, mi: &mut usize, steps: &mut Vec<Value>| {
        while let Some(k) = markers.get(*mi).filter(|k| k.index <= upto) {
            *mi += 1;
            let mut mk = Map::new();
            mk.insert("kind".into(), json!(k.kind));
            if let Some(d) = &k.detail {
                mk.insert("detail".into(), json!(d));
            }
            if let Some(n) = k.tokens_before {
                mk.insert("tokens_before".into(), json!(n));
            }
            steps.push(json!({
                "step_id": steps.len() + 1,
                "source": "system",
                "message": "",
                "extra": {"ctxbench": {"marker": mk}, "compaction": k.kind == "compaction"}
            }));
        }
    };
    let marker_due = |i: usize, mi: usize| markers.get(mi).is_some_and(|k| k.index <= i);
    let msgs = &t.messages;
    let mut i = 0;
    while i < msgs.len() {
        push_markers(i, &mut mi, &mut steps);
        let m = &msgs[i];
        let mut step = Map::new();
        step.insert("step_id".into(), json!(steps.len() + 1));
        if let Some(ts) = &m.timestamp {
            step.insert("timestamp".into(), json!(ts));
        }
        let mut own = None;
        let mut role_tool = false;
        match m.role {
            Role::System | Role::User | Role::Assistant => {
                let source = match m.role {
                    Role::System => "system",
                    Role::User => "user",
                    _ => "agent",
                };
                step.insert("source".into(), json!(source));
                step.insert("message".into(), json!(m.content));
                let mut e = extras_of(m, true, None);
                if m.role == Role::Assistant {
                    if let Some(r) = &m.reasoning {
                        step.insert("reasoning_content".into(), json!(r));
                    }
                    if !m.tool_calls.is_empty() {
                        let calls: Vec<Value> = m
                            .tool_calls
                            .iter()
                            .map(|c| {
                                call_names.insert(c.id.as_str(), c.name.as_str());
                                json!({"tool_call_id": c.id, "function_name": c.name, "arguments": c.arguments})
                            })
                            .collect();
                        step.insert("tool_calls".into(), Value::Array(calls));
                    }
                    if let Some(u) = &m.usage {
                        let mut mt = json!({
                            "prompt_tokens": u.input,
                            "completion_tokens": u.output,
                            "cached_tokens": u.cache_read,
                        });
                        if u.cache_write > 0 {
                            mt["extra"] = json!({"cache_creation_input_tokens": u.cache_write});
                        }
                        step.insert("metrics".into(), mt);
                    }
                } else if m.reasoning.is_some() {
                    // Reasoning on a non-assistant message has no ATIF slot; it is rare enough
                    // to keep in the extras rather than lose.
                    e.insert("reasoning".into(), json!(m.reasoning));
                }
                own = Some(e);
                i += 1;
            }
            Role::Tool => {
                step.insert("source".into(), json!("system"));
                step.insert("message".into(), json!(""));
                step.remove("timestamp");
                role_tool = true;
            }
        }
        // Tool messages directly after (or, for an orphan step, starting at) position i.
        let mut results = Vec::new();
        let mut result_extras = Vec::new();
        if m.role == Role::Assistant || role_tool {
            while i < msgs.len() && msgs[i].role == Role::Tool {
                if marker_due(i, mi) {
                    break;
                }
                let r = &msgs[i];
                let id = r.tool_call_id.clone().unwrap_or_default();
                results.push(json!({"source_call_id": id, "content": r.content}));
                result_extras.push(extras_of(r, false, call_names.get(id.as_str()).copied()));
                i += 1;
            }
        }
        if !results.is_empty() {
            step.insert("observation".into(), json!({"results": results}));
        }
        if let Some(x) = step_extra(own, result_extras, role_tool) {
            step.insert("extra".into(), x);
        }
        steps.push(Value::Object(step));
    }
    push_markers(usize::MAX, &mut mi, &mut steps);
    let meta = serde_json::to_value(&t.meta).expect("TraceMeta serializes");
    let u = t.recorded_usage();
    let mut root = json!({
        "schema_version": EXPORT_SCHEMA_VERSION,
        "session_id": t.meta.task_id.clone().unwrap_or_else(|| t.meta.id.clone()),
        "agent": {"name": "ctxbench", "version": env!("CARGO_PKG_VERSION")},
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": u.input,
            "total_completion_tokens": u.output,
            "total_cached_tokens": u.cache_read,
            "total_steps": steps.len(),
        },
        "extra": {"ctxbench": {"meta": meta}},
    });
    if let Some(model) = &t.meta.model {
        root["agent"]["model_name"] = json!(model);
    }
    if let Some(c) = t.meta.cost_usd {
        root["final_metrics"]["total_cost_usd"] = json!(c);
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        let mut meta = TraceMeta::new("rt", SourceFormat::ClaudeCode);
        meta.model = Some("opus".into());
        meta.goal = Some("do it".into());
        meta.warnings = vec!["w".into()];
        let mut t = Trace::new(meta);
        t.messages.push(Message::system("sys"));
        let mut u = Message::user("go ✓");
        u.timestamp = Some("t0".into());
        t.messages.push(u);
        let mut a = Message::assistant(
            "calling",
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "Bash".into(),
                    arguments: json!({"z": 1, "a": {"n": [1]}}),
                },
                ToolCall {
                    id: "b".into(),
                    name: "Read".into(),
                    arguments: json!("raw"),
                },
            ],
        );
        a.usage = Some(Usage {
            input: 120,
            output: 4,
            cache_read: 100,
            cache_write: 7,
        });
        a.reasoning = Some("hm".into());
        t.messages.push(a);
        let mut r = Message::tool("a", "Bash", "");
        r.is_error = true;
        r.timestamp = Some("t1".into());
        t.messages.push(r);
        let mut meta_msg = Message::user("hook");
        meta_msg.kind = Some("meta".into());
        meta_msg.reasoning = Some("odd but kept".into());
        t.messages.push(meta_msg);
        t.messages.push(Message::tool("b", "Read", "late result"));
        t.messages.push(Message::assistant("", vec![]));
        t.markers.push(ContextMarker {
            index: 4,
            kind: "compaction".into(),
            detail: Some("auto".into()),
            tokens_before: Some(9),
        });
        t.markers.push(ContextMarker {
            index: 7,
            kind: "summary".into(),
            detail: None,
            tokens_before: None,
        });
        t
    }

    #[test]
    fn export_then_import_is_identical() {
        let t = sample();
        let doc = to_atif(&t);
        let back = import(&Node::root(&doc), "ignored").unwrap();
        assert_eq!(back, t);
        assert_eq!(doc["schema_version"], "ATIF-v1.4");
        // the orphan-position tool result is a system step holding only an observation
        let steps = doc["steps"].as_array().unwrap();
        assert!(steps.iter().any(|s| s["source"] == "system"
            && s["observation"]["results"][0]["content"] == "late result"));
        assert_eq!(steps[2]["metrics"]["prompt_tokens"], 120);
    }

    #[test]
    fn plain_atif_without_our_extras() {
        let doc = json!({
        "schema_version": "ATIF-v1.2", "session_id": "s-1",
        "agent": {"name": "claude-code", "version": "2", "model_name": "opus"},
        "final_metrics": {"total_prompt_tokens": 520, "total_completion_tokens": 80, "total_cached_tokens": 200},
        "steps": [
            {"step_id": 1, "source": "user", "message": "price?"},
            {"step_id": 2, "source": "agent", "message": "searching",
             "tool_calls": [{"tool_call_id": "c1", "function_name": "search", "arguments": {"q": "x"}}],
             "observation": {"results": [{"source_call_id": "c1", "content": "185"}, {"content": "note"}]},
             "metrics": {"prompt_tokens": 520, "completion_tokens": 80, "cached_tokens": 200}},
            {"step_id": 3, "source": "system", "message": "summary text", "extra": {"compaction": true}}
        ]});
        let t = import(&Node::root(&doc), "traj").unwrap();
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::User,
                Role::User
            ]
        );
        assert_eq!(t.messages[2].name.as_deref(), Some("search"));
        assert_eq!(t.messages[3].kind.as_deref(), Some("observation"));
        assert_eq!(t.messages[4].kind.as_deref(), Some("compaction_summary"));
        assert_eq!(t.markers[0].index, 4);
        assert_eq!(t.recorded_usage(), t.meta.total_usage.unwrap());
        assert_eq!(t.meta.task_id.as_deref(), Some("s-1"));
    }

    #[test]
    fn wrong_version_is_an_error() {
        let e = import(
            &Node::root(&json!({"schema_version": "2.0", "steps": []})),
            "x",
        )
        .unwrap_err();
        assert_eq!(e.location, "$.schema_version");
    }
}
