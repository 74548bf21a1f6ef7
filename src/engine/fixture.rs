//! The golden-fixture layout (`trace.jsonl`, `config.json`, `system_prompt.txt`, `tools.json`,
//! `summary_text.txt`): reading it, replaying it with the `deepagents` preset and the fixture's
//! settings, and rendering the result in the fixture's own vocabulary (`events.json` /
//! `model_calls.json` type names and fields).
//!
//! Also a small JSONL trace reader for the fixture line format and canonical ctxbench JSONL,
//! used by `ctxbench replay` until the importers land.

use super::config::EngineConfig;
use super::event::{Event, EventDetail, EventKind};
use super::replay::{replay_shared, Replay, ReplayEnv, StoreTarget};
use super::summarizer::FixedSummarizer;
use super::EngineError;
use crate::trace::{
    ImportError, Message, Role, SourceFormat, ToolCall, Trace, TraceLine, TraceMeta,
};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

fn ierr(file: &Path, location: impl Into<String>, message: impl Into<String>) -> ImportError {
    ImportError {
        file: file.display().to_string(),
        location: location.into(),
        message: message.into(),
    }
}

fn read(path: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(path).map_err(|e| ierr(path, "file", format!("cannot read: {e}")))
}

fn str_field(v: &Value, key: &str, file: &Path, line: usize) -> Result<String, ImportError> {
    match v.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ierr(
            file,
            format!("line {line}: $.{key}"),
            "expected a string",
        )),
        None => Err(ierr(file, format!("line {line}: $.{key}"), "missing field")),
    }
}

/// One line of the fixture format: `{"role", "content", "tool_calls"?: [{"id","name","args"}],
/// "tool_call_id"?, "name"?}`.
fn fixture_message(v: &Value, file: &Path, line: usize) -> Result<Message, ImportError> {
    let role = match v.get("role").and_then(|r| r.as_str()) {
        Some("system") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        other => {
            return Err(ierr(
                file,
                format!("line {line}: $.role"),
                format!("expected system|user|assistant|tool, found {other:?}"),
            ))
        }
    };
    let mut m = Message::new(role, str_field(v, "content", file, line)?);
    if let Some(calls) = v.get("tool_calls") {
        let arr = calls.as_array().ok_or_else(|| {
            ierr(
                file,
                format!("line {line}: $.tool_calls"),
                "expected an array",
            )
        })?;
        for (k, c) in arr.iter().enumerate() {
            let loc = |f: &str| format!("line {line}: $.tool_calls[{k}].{f}");
            let id = c
                .get("id")
                .and_then(|x| x.as_str())
                .ok_or_else(|| ierr(file, loc("id"), "expected a string"))?;
            let name = c
                .get("name")
                .and_then(|x| x.as_str())
                .ok_or_else(|| ierr(file, loc("name"), "expected a string"))?;
            let args = c
                .get("args")
                .or_else(|| c.get("arguments"))
                .cloned()
                .unwrap_or(json!({}));
            m.tool_calls.push(ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args,
            });
        }
    }
    if role == Role::Tool {
        m.tool_call_id = Some(str_field(v, "tool_call_id", file, line)?);
    }
    if let Some(n) = v.get("name").and_then(|x| x.as_str()) {
        m.name = Some(n.to_string());
    }
    Ok(m)
}

/// Read a JSONL trace: the fixture line format, or canonical ctxbench JSONL (first trace).
pub fn read_jsonl_trace(path: &Path) -> Result<Trace, ImportError> {
    match read_jsonl_fast(path) {
        Some(t) => Ok(t),
        None => read_jsonl_general(path),
    }
}

/// A fixture line as typed fields; anything unusual (unknown or duplicate keys, `null`s, a
/// `type` key) fails here and goes to [`read_jsonl_general`], which decides as before.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureLine {
    role: Role,
    content: String,
    #[serde(default, deserialize_with = "present")]
    tool_calls: Option<Vec<FixtureCall>>,
    tool_call_id: Option<String>,
    name: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureCall {
    id: String,
    name: String,
    #[serde(default, deserialize_with = "present")]
    args: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
}

/// Present (even `null`) → `Some`; absent → `None` through `#[serde(default)]`.
fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl FixtureLine {
    /// The message [`fixture_message`] builds from the same line; `None` where it would fail.
    fn into_message(self) -> Option<Message> {
        let mut m = Message::new(self.role, self.content);
        for c in self.tool_calls.unwrap_or_default() {
            m.tool_calls.push(ToolCall {
                id: c.id,
                name: c.name,
                arguments: c.args.or(c.arguments).unwrap_or_else(|| json!({})),
            });
        }
        if self.role == Role::Tool {
            m.tool_call_id = Some(self.tool_call_id?);
        }
        m.name = self.name;
        Some(m)
    }
}

/// Typed reading of a plain file; `None` sends the whole file to [`read_jsonl_general`] (so
/// every error, and its precedence, stays that reader's). Streamed line by line through one
/// reused buffer: a fresh process does not fault in a second copy of the file.
fn read_jsonl_fast(path: &Path) -> Option<Trace> {
    use std::io::BufRead as _;
    let file = std::fs::File::open(path).ok()?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    let mut trace: Option<Trace> = None;
    let mut fixture_lines = Vec::new();
    let mut finished = false;
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf).ok()? == 0 {
            break;
        }
        // The general reader takes the whole file as UTF-8, even past a second header.
        let line = std::str::from_utf8(&buf).ok()?;
        if finished || line.trim().is_empty() {
            continue;
        }
        if let Ok(l) = serde_json::from_str::<FixtureLine>(line) {
            fixture_lines.push(l.into_message()?);
            continue;
        }
        match crate::trace::io::parse_line_fast(line.as_bytes())? {
            TraceLine::Header { meta, .. } => {
                if trace.is_some() {
                    finished = true;
                    continue;
                }
                trace = Some(Trace::new(meta));
            }
            TraceLine::Message(m) => trace.as_mut()?.messages.push(m),
            TraceLine::Marker(mk) => trace.as_mut()?.markers.push(mk),
        }
    }
    assemble(path, trace, fixture_lines).ok()
}

/// The general reader: every line through a `Value`, precise errors.
fn read_jsonl_general(path: &Path) -> Result<Trace, ImportError> {
    let text = read(path)?;
    let mut trace: Option<Trace> = None;
    let mut fixture_lines = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let lineno = k + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| ierr(path, format!("line {lineno}"), format!("invalid JSON: {e}")))?;
        if v.get("type").is_some() {
            let tl: TraceLine = serde_json::from_value(v).map_err(|e| {
                ierr(
                    path,
                    format!("line {lineno}"),
                    format!("not a canonical trace line: {e}"),
                )
            })?;
            match tl {
                TraceLine::Header { meta, .. } => {
                    if trace.is_some() {
                        break;
                    }
                    trace = Some(Trace::new(meta));
                }
                TraceLine::Message(m) => trace
                    .as_mut()
                    .ok_or_else(|| {
                        ierr(
                            path,
                            format!("line {lineno}"),
                            "message before the header line",
                        )
                    })?
                    .messages
                    .push(m),
                TraceLine::Marker(mk) => trace
                    .as_mut()
                    .ok_or_else(|| {
                        ierr(
                            path,
                            format!("line {lineno}"),
                            "marker before the header line",
                        )
                    })?
                    .markers
                    .push(mk),
            }
        } else {
            fixture_lines.push(fixture_message(&v, path, lineno)?);
        }
    }
    assemble(path, trace, fixture_lines)
}

/// The trace a file holds: its canonical trace, or its fixture lines as one trace.
fn assemble(
    path: &Path,
    trace: Option<Trace>,
    fixture_lines: Vec<Message>,
) -> Result<Trace, ImportError> {
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "trace".into());
    match trace {
        Some(t) if fixture_lines.is_empty() => Ok(t),
        Some(_) => Err(ierr(path, "file", "mixes canonical lines and role lines")),
        None if fixture_lines.is_empty() => Err(ierr(path, "file", "no messages")),
        None => {
            let mut meta = TraceMeta::new(id, SourceFormat::Canonical);
            meta.source_path = Some(path.display().to_string());
            Ok(Trace {
                meta,
                messages: fixture_lines,
                markers: Vec::new(),
            })
        }
    }
}

/// A golden fixture folder, loaded.
#[derive(Debug)]
pub struct Fixture {
    pub trace: Trace,
    pub config: EngineConfig,
    pub system_prompt: String,
    pub tools: Vec<Value>,
    pub summary_text: String,
}

/// Load a fixture folder.
pub fn load(dir: &Path) -> Result<Fixture, ImportError> {
    let mut trace = read_jsonl_trace(&dir.join("trace.jsonl"))?;
    if let Some(name) = dir.file_name() {
        trace.meta.id = name.to_string_lossy().to_string();
    }
    let cfg_path = dir.join("config.json");
    let cfg: Value = serde_json::from_str(&read(&cfg_path)?)
        .map_err(|e| ierr(&cfg_path, "file", format!("invalid JSON: {e}")))?;
    let window = cfg
        .get("window_max_input_tokens")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| {
            ierr(
                &cfg_path,
                "$.window_max_input_tokens",
                "expected a positive integer",
            )
        })?;
    let max_output_tokens = match cfg.get("max_output_tokens") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            ierr(
                &cfg_path,
                "$.max_output_tokens",
                "expected an integer or null",
            )
        })?),
    };
    let cpt = cfg
        .get("chars_per_token")
        .and_then(|v| v.as_f64())
        .unwrap_or(4.0);
    let counter = if (cpt - 3.3).abs() < 1e-9 {
        "approx-anthropic"
    } else if (cpt - 4.0).abs() < 1e-9 {
        "approx"
    } else {
        return Err(ierr(
            &cfg_path,
            "$.chars_per_token",
            format!("expected 4.0 or 3.3, found {cpt}"),
        ));
    };
    let system_prompt = read(&dir.join("system_prompt.txt"))?;
    let tools_path = dir.join("tools.json");
    let tools_v: Value = serde_json::from_str(&read(&tools_path)?)
        .map_err(|e| ierr(&tools_path, "file", format!("invalid JSON: {e}")))?;
    let dumps = tools_v
        .get("json_dumps")
        .and_then(|v| v.as_array())
        .ok_or_else(|| ierr(&tools_path, "$.json_dumps", "expected an array of strings"))?;
    let mut tools = Vec::with_capacity(dumps.len());
    for (k, d) in dumps.iter().enumerate() {
        let s = d.as_str().ok_or_else(|| {
            ierr(
                &tools_path,
                format!("$.json_dumps[{k}]"),
                "expected a string",
            )
        })?;
        tools.push(serde_json::from_str(s).map_err(|e| {
            ierr(
                &tools_path,
                format!("$.json_dumps[{k}]"),
                format!("invalid JSON: {e}"),
            )
        })?);
    }
    let summary_text = read(&dir.join("summary_text.txt"))?;
    let config = EngineConfig {
        preset: Some("deepagents".into()),
        window: Some(window),
        max_output_tokens,
        counter: Some(counter.into()),
        ..EngineConfig::default()
    };
    Ok(Fixture {
        trace,
        config,
        system_prompt,
        tools,
        summary_text,
    })
}

/// Replay a fixture folder with the `deepagents` preset and its settings (plus `sets`).
pub fn run(dir: &Path, sets: &[String], store: StoreTarget) -> Result<Replay, EngineError> {
    let fx = load(dir)?;
    let config = fx.config.apply_sets(sets)?.resolve(None)?;
    let summarizer = FixedSummarizer(fx.summary_text);
    let mut env = ReplayEnv::new(&summarizer);
    env.system_prompt = Some(fx.system_prompt);
    env.tools = Some(fx.tools);
    env.store = store;
    // Moved into `Arc`s, not cloned (what `replay` would do with a borrowed trace).
    let Trace {
        meta,
        messages,
        markers,
    } = fx.trace;
    let messages: Vec<Arc<Message>> = messages.into_iter().map(Arc::new).collect();
    replay_shared(&meta, &markers, &messages, &config, &env)
}

/// One event in the fixture vocabulary (`None` for kinds the fixtures do not have).
pub fn event_json(e: &Event) -> Option<Value> {
    let t = e.trace_index;
    Some(match &e.detail {
        EventDetail::Evicted {
            tool,
            chars_before,
            chars_after,
            path,
            replacement,
            ..
        } => json!({"type": "tool_result_evicted", "trace_index": t, "tool": tool,
            "chars_before": chars_before, "chars_after": chars_after,
            "tokens_before": e.tokens_before, "tokens_after": e.tokens_after,
            "path": path, "replacement_content": replacement}),
        EventDetail::EvictionSkipped { tool, chars, .. } => json!({
            "type": "tool_result_NOT_evicted_excluded_tool", "trace_index": t, "tool": tool, "chars": chars}),
        EventDetail::UserMessageEvicted {
            evicted_index,
            path,
            chars_before,
            chars_after,
            preview,
        } => json!({"type": "human_message_evicted", "trace_index": t,
            "evicted_trace_index": evicted_index, "path": path, "chars_before": chars_before,
            "chars_after": chars_after, "preview_content": preview}),
        EventDetail::ArgsTruncated {
            calls,
            summarized_in_same_call,
        } => json!({"type": "args_truncated_in_request", "trace_index": t,
            "tool_calls_truncated": calls.len(), "truncated": calls,
            "tokens_before": e.tokens_before, "tokens_after": e.tokens_after,
            "summarized_in_same_call": summarized_in_same_call}),
        EventDetail::Summarized {
            state_len,
            view_cutoff,
            state_cutoff,
            newly_summarized,
            kept,
            history_file,
            summary_chars,
            summary_message,
            ..
        } => json!({"type": "summarization", "trace_index": t, "state_len": state_len,
            "effective_cutoff_index": view_cutoff, "state_cutoff_index": state_cutoff,
            "messages_newly_summarized": newly_summarized, "kept_messages": kept,
            "tokens_before": e.tokens_before, "tokens_after": e.tokens_after,
            "history_file": history_file, "summary_chars": summary_chars,
            "summary_message_content": summary_message}),
        EventDetail::Clipped {
            clipped_index,
            tool,
            chars_before,
            chars_after,
            replacement,
            ..
        } => json!({"type": "tool_result_clipped_over_budget", "trace_index": t,
            "clipped_trace_index": clipped_index, "tool": tool, "chars_before": chars_before,
            "chars_after": chars_after, "replacement_content": replacement}),
        EventDetail::Overflow { message, .. } if e.kind == EventKind::Overflow => {
            json!({"type": "context_overflow_error", "trace_index": t, "message": message})
        }
        EventDetail::Error { message } => {
            json!({"type": "error", "trace_index": t, "message": message})
        }
        _ => return None,
    })
}

/// `{"events": [...], "model_calls": [...]}` in the fixture vocabulary; events sorted by
/// `(trace_index, type)` (stable), as `events.json` is.
pub fn to_fixture_json(r: &Replay) -> Value {
    let mut events: Vec<Value> = r.events.iter().filter_map(event_json).collect();
    events.sort_by(|a, b| {
        let key = |v: &Value| {
            (
                v["trace_index"].as_u64().unwrap_or(0),
                v["type"].as_str().unwrap_or("").to_string(),
            )
        };
        key(a).cmp(&key(b))
    });
    let calls: Vec<Value> = r
        .calls
        .iter()
        .map(|c| {
            json!({"trace_index": c.trace_index, "state_msgs": c.state_msgs,
                "effective_tokens": c.effective_tokens, "sent_tokens": c.input_tokens,
                "sent_msgs": c.sent_msgs, "sent_view": c.sent_view})
        })
        .collect();
    json!({"events": events, "model_calls": calls})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceLine;

    #[test]
    fn reads_canonical_and_fixture_lines() {
        let dir = tempfile::tempdir().unwrap();
        let canon = dir.path().join("c.jsonl");
        let mut meta = TraceMeta::new("t1", SourceFormat::Canonical);
        meta.window = Some(1234);
        let lines = [
            TraceLine::Header {
                schema_version: 1,
                meta,
            },
            TraceLine::Message(Message::user("hi")),
            TraceLine::Message(Message::assistant("ok", vec![])),
        ];
        let text: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect();
        std::fs::write(&canon, text).unwrap();
        let t = read_jsonl_trace(&canon).unwrap();
        assert_eq!(
            (t.meta.id.as_str(), t.meta.window, t.messages.len()),
            ("t1", Some(1234), 2)
        );

        let fx = dir.path().join("f.jsonl");
        std::fs::write(
            &fx,
            "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c\",\"name\":\"bash\",\"args\":{\"b\":1,\"a\":2}}]}\n{\"role\":\"tool\",\"content\":\"x\",\"tool_call_id\":\"c\",\"name\":\"bash\"}\n",
        )
        .unwrap();
        let t = read_jsonl_trace(&fx).unwrap();
        let keys: Vec<&String> = t.messages[0].tool_calls[0]
            .arguments
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["b", "a"], "argument order is kept");
        assert_eq!(t.messages[1].tool_call_id.as_deref(), Some("c"));
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.jsonl");
        std::fs::write(
            &p,
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"tool\",\"content\":\"x\"}\n",
        )
        .unwrap();
        let e = read_jsonl_trace(&p).unwrap_err();
        assert_eq!(e.location, "line 2: $.tool_call_id");
        std::fs::write(&p, "not json\n").unwrap();
        let e = read_jsonl_trace(&p).unwrap_err();
        assert!(
            e.location == "line 1" && e.message.contains("invalid JSON"),
            "{e}"
        );
        let e = load(dir.path()).unwrap_err();
        assert!(e.file.ends_with("trace.jsonl"), "{e}");
    }
}
