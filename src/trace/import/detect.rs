//! Format auto-detection from content (never from the file extension alone).
//!
//! Canonical traces are recognised by their first line (`{"type":"header", "schema_version":…}`).
//! Every other format's rule lives beside its importer (`IMPORTER.detect` in each module) and
//! answers for one [`Shape`]: an object document, an array document (by its first item) or
//! JSON Lines (by its first line). The first importer in `importers!` order whose rule says yes
//! wins; JSON Lines that no line-level rule claims are detected by their first line read as a
//! document (e.g. OpenHands evaluation rows). Today's rules, in that order:
//! - claude-code: JSON Lines holding a `{type: user|assistant, message, uuid|sessionId}` record
//!   (anywhere: interactive sessions start with bookkeeping records);
//! - codex: JSON Lines of `{type: session_meta|response_item|…, payload}`;
//! - mini-swe: `trajectory_format: "mini-swe-agent…"`; atif: `schema_version: "ATIF…"` or
//!   `{session_id, agent, steps}`; tau2: `simulations[]`;
//! - inspect: `{eval: {task…}, samples[]|plan|results}` or one sample `{epoch, input, messages}`
//!   (an `.eval` zip is recognised by its bytes before any JSON is read);
//! - gemini-cli: `{sessionId, messages: [{type: user|gemini, …}]}`, or JSON Lines whose first
//!   line is a session header `{sessionId, projectHash, …}` (no `type`, no `messages`);
//! - copilot: JSON Lines holding a `{type: session.start|user.message|assistant.message, data}`
//!   event (GitHub Copilot CLI's `events.jsonl`);
//! - swe-agent: `history[]` of `{role…}` or `{trajectory[], info}`; openhands: `history[]` of
//!   `{action|observation…}`, or an array of such events; tau: an array of `{task_id, traj}`;
//! - golden: JSON Lines of role lines (`{role, content}`, no `type`) with a LangChain-shaped
//!   tool call `{id, name, args}` somewhere (a deepagents golden fixture's `trace.jsonl`);
//! - langchain: `messages_to_dict` (`{type: human|ai|tool|system, data}`), `dumpd` (`{lc: 1,
//!   type: "constructor", id: [..., "AIMessage"]}`) or `model_dump` items, as an array, JSON
//!   Lines or a LangGraph state `{messages|values.messages|channel_values.messages}`;
//! - openai-responses: Responses items (`type: function_call|reasoning|message…`) as an array,
//!   JSON Lines or `{input: [items]}`;
//! - gemini: every item a Gemini `Content` (`role: "model"`, or `parts` without `content`), as
//!   an array, JSON Lines or `{contents: [...]}`;
//! - cline: an array of `{role, content}` whose user text has a `[tool…] Result:` header or
//!   `<environment_details>`;
//! - anthropic, then openai: chat messages (see [`chat_flavor`]), never Responses items or
//!   Gemini `Content` (`role: "model"`, `parts`), which they cannot read: any `role: tool|function|
//!   developer`, `tool_calls` or `function_call` means openai; any content block of type
//!   `tool_use`, `tool_result`, `thinking` or a top-level `system` field means anthropic; plain
//!   text conversations are read as openai (the two agree).

use super::Input;
use crate::trace::model::SourceFormat;
use serde::Deserialize;
use serde_json::{Map, Value};

/// True when the first non-blank line is a canonical trace header.
pub fn looks_canonical(bytes: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "type")]
        ty: Option<String>,
        schema_version: Option<serde::de::IgnoredAny>,
    }
    let first = bytes
        .split(|b| *b == b'\n')
        .find(|l| !l.iter().all(|b| b.is_ascii_whitespace()));
    match first.map(serde_json::from_slice::<Probe>) {
        Some(Ok(p)) => p.ty.as_deref() == Some("header") && p.schema_version.is_some(),
        _ => false,
    }
}

/// What detection looks at: a JSON object, a JSON array whose first item is an object, or JSON
/// Lines whose first line is an object. Each importer's `detect` rule answers for one shape;
/// the first importer in `importers!` order that says yes wins.
#[derive(Clone, Copy, Debug)]
pub enum Shape<'a> {
    Object(&'a Map<String, Value>),
    Array(&'a [Value], &'a Map<String, Value>),
    Lines(&'a [(usize, Value)], &'a Map<String, Value>),
}

impl<'a> Shape<'a> {
    /// The object of an object document.
    pub fn object(self) -> Option<&'a Map<String, Value>> {
        match self {
            Shape::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The first item of an array document.
    pub fn array_first(self) -> Option<&'a Map<String, Value>> {
        match self {
            Shape::Array(_, first) => Some(first),
            _ => None,
        }
    }

    /// The first line of a JSON Lines input.
    pub fn first_line(self) -> Option<&'a Map<String, Value>> {
        match self {
            Shape::Lines(_, first) => Some(first),
            _ => None,
        }
    }
}

/// `o[k]` as a string.
pub fn str_of<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    o.get(k).and_then(|x| x.as_str())
}

/// `o[k]` as an array.
pub fn arr_of<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a Vec<Value>> {
    o.get(k).and_then(|x| x.as_array())
}

/// The format of a parsed input, or why it is not a trace.
pub fn detect(input: &Input) -> Result<SourceFormat, String> {
    match input {
        Input::Json(v) => detect_doc(v),
        Input::Lines(lines) => {
            let Some((_, first)) = lines.first() else {
                return Err("no JSON lines".into());
            };
            let Some(o) = first.as_object() else {
                return Err(format!(
                    "JSON Lines whose first line is {}, not an object",
                    crate::output::json_kind(first)
                ));
            };
            // Line-level rules first, then the first line read as a document (e.g. OpenHands
            // evaluation rows with `history`).
            first_match(Shape::Lines(lines, o)).map_or_else(
                || detect_doc(first).map_err(|why| format!("JSON Lines whose first line is {why}")),
                Ok,
            )
        }
    }
}

fn first_match(shape: Shape<'_>) -> Option<SourceFormat> {
    super::IMPORTERS
        .iter()
        .find(|i| (i.detect)(shape))
        .map(|i| i.format)
}

fn keys_of(o: &Map<String, Value>) -> String {
    let mut k: Vec<&str> = o.keys().map(|k| k.as_str()).take(8).collect();
    if o.len() > 8 {
        k.push("…");
    }
    k.join(", ")
}

fn detect_doc(v: &Value) -> Result<SourceFormat, String> {
    match v {
        Value::Object(o) => first_match(Shape::Object(o)).ok_or_else(|| {
            if o.is_empty() {
                "an empty JSON object".into()
            } else if let Some(why) = api_response(o) {
                why
            } else {
                format!("a JSON object with keys {}", keys_of(o))
            }
        }),
        Value::Array(a) => {
            let Some(first) = a.first() else {
                return Err("an empty JSON array".into());
            };
            let Some(o) = first.as_object() else {
                return Err(format!(
                    "a JSON array of {}",
                    crate::output::json_kind(first)
                ));
            };
            first_match(Shape::Array(a, o)).ok_or_else(|| {
                if o.is_empty() {
                    "a JSON array whose first object is empty".into()
                } else {
                    format!("a JSON array of objects with keys {}", keys_of(o))
                }
            })
        }
        other => Err(format!(
            "a JSON document that is {}",
            crate::output::json_kind(other)
        )),
    }
}

/// How a "not a trace" reason for one model API response starts: such a file holds the
/// model's answer but not the input it answered, so no `--from` makes it a trace (the reason
/// says what to save instead).
pub const API_RESPONSE: &str = "one API response";

/// Why `o`, a single response of a model API (what a client gets back, often what people log),
/// is not a trace, and what to save instead; `None` for anything else.
fn api_response(o: &Map<String, Value>) -> Option<String> {
    let what = match (str_of(o, "object"), str_of(o, "type"), str_of(o, "role")) {
        (Some("response"), ..) if o.contains_key("output") => {
            "an OpenAI Responses API response (`\"object\": \"response\"`): it holds the model's \
             `output`, not the `input` it answered; save the request's `input` beside the \
             response's `output` (`{\"model\", \"input\": [...], \"output\": [...]}`, read as \
             openai-responses; `GET /v1/responses/{id}/input_items` lists a stored response's \
             input)"
        }
        (Some(kind), ..) if kind.starts_with("chat.completion") && o.contains_key("choices") => {
            "an OpenAI chat completion (`\"object\": \"chat.completion\"`): it holds the model's \
             answer, not the conversation it answered; save the request's `messages` with the \
             answer (`choices[0].message`) appended (`{\"model\", \"messages\": [...]}`, read as \
             openai)"
        }
        (_, Some("message"), Some("assistant")) if o.contains_key("content") => {
            "an Anthropic Messages API response (`\"type\": \"message\"`, `\"role\": \
             \"assistant\"`): it holds the model's answer, not the conversation it answered; \
             save the request's `messages` with the answer appended as an assistant message \
             (`{\"model\", \"system\", \"messages\": [...]}`, read as anthropic)"
        }
        _ => return None,
    };
    Some(format!("{API_RESPONSE}: {what}"))
}

/// A chat conversation (messages with roles, in any of the shapes chat exports take) and its
/// flavor: `Some(Anthropic)` or `Some(Openai)`; `None` when the input is not a conversation.
pub fn chat_flavor(shape: Shape<'_>) -> Option<SourceFormat> {
    let refused = match shape {
        Shape::Lines(lines, _) => foreign(
            lines
                .iter()
                .flat_map(|(_, v)| messages(v).map_or(std::slice::from_ref(v), |m| m.as_slice())),
        ),
        Shape::Object(o) => arr_of(o, "messages").is_some_and(|m| foreign(m.iter())),
        Shape::Array(a, _) => foreign(
            a.iter()
                .flat_map(|v| messages(v).map_or(std::slice::from_ref(v), |m| m.as_slice())),
        ),
    };
    if refused {
        return None;
    }
    match shape {
        Shape::Lines(lines, first) => {
            if first.contains_key("role") {
                return Some(flavor(lines.iter().map(|(_, v)| v), None));
            }
            let ms = arr_of(first, "messages")?;
            if !(ms.first().is_some_and(|m| m.get("role").is_some()) || ms.is_empty()) {
                return None;
            }
            let all = lines.iter().filter_map(|(_, v)| messages(v)).flatten();
            Some(flavor(all, lines.first().map(|(_, v)| v)))
        }
        Shape::Object(o) => {
            let ms = arr_of(o, "messages")?;
            if !ms.iter().all(|m| m.get("role").is_some()) {
                return None;
            }
            Some(flavor_with_system(ms.iter(), o.get("system")))
        }
        Shape::Array(a, first) => {
            if first.contains_key("role") {
                return Some(flavor(a.iter(), None));
            }
            first.get("messages").filter(|m| m.is_array())?;
            let all = a.iter().filter_map(messages).flatten();
            Some(flavor_with_system(all, first.get("system")))
        }
    }
}

fn flavor<'a>(messages: impl Iterator<Item = &'a Value>, root: Option<&Value>) -> SourceFormat {
    flavor_with_system(messages, root.and_then(|r| r.get("system")))
}

fn messages(v: &Value) -> Option<&Vec<Value>> {
    v.get("messages").and_then(|m| m.as_array())
}

/// Messages another format wrote, which neither chat importer can read: OpenAI Responses
/// items (`type: function_call|reasoning|…`, or `message` items) and Gemini `Content`
/// (`role: "model"` or `parts`).
fn foreign<'a>(mut messages: impl Iterator<Item = &'a Value>) -> bool {
    messages.any(|m| {
        m.as_object().is_some_and(|o| {
            super::responses::is_item(o)
                || str_of(o, "role") == Some("model")
                || (o.contains_key("parts") && !o.contains_key("content"))
        })
    })
}

/// OpenAI or Anthropic, from the messages (and the enclosing object's `system` field, if any).
fn flavor_with_system<'a>(
    messages: impl Iterator<Item = &'a Value>,
    system: Option<&Value>,
) -> SourceFormat {
    for m in messages {
        let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("");
        if matches!(role, "tool" | "function" | "developer")
            || m.get("tool_calls").is_some_and(|t| !t.is_null())
            || m.get("function_call").is_some_and(|t| !t.is_null())
        {
            return SourceFormat::Openai;
        }
        if let Some(Value::Array(blocks)) = m.get("content") {
            let anthropic = blocks.iter().any(|b| {
                matches!(
                    b.get("type").and_then(|t| t.as_str()),
                    Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking")
                )
            });
            if anthropic {
                return SourceFormat::Anthropic;
            }
        }
    }
    if system.is_some_and(|s| !s.is_null()) {
        return SourceFormat::Anthropic;
    }
    SourceFormat::Openai
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> Result<SourceFormat, String> {
        detect(&Input::Json(v))
    }

    /// One API response (an answer without the input it answered) is named, with what to save
    /// instead, in a file and as the first line of JSON Lines; shapes near it are not.
    #[test]
    fn an_api_response_is_named_with_what_to_save_instead() {
        let text = json!([{"type": "output_text", "text": "Hello"}]);
        let cases = [
            (
                json!({"id": "resp_1", "object": "response", "status": "completed",
                       "output": [{"type": "message", "role": "assistant", "content": text}]}),
                "an OpenAI Responses API response",
            ),
            (
                json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},
                                    "finish_reason": "stop"}]}),
                "an OpenAI chat completion",
            ),
            (
                json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": {"content": "Hi"}}]}),
                "an OpenAI chat completion",
            ),
            (
                json!({"id": "msg_1", "type": "message", "role": "assistant",
                       "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "Hi"}],
                       "stop_reason": "end_turn"}),
                "an Anthropic Messages API response",
            ),
        ];
        for (v, what) in cases {
            let why = doc(v.clone()).unwrap_err();
            assert!(why.starts_with(&format!("{API_RESPONSE}: {what}")), "{why}");
            assert!(why.contains("save the request's"), "{why}");
            if what.starts_with("an Anthropic") {
                // As lines, each is a Responses `message` item (`type` and `role`): read so.
                continue;
            }
            let lines = detect(&Input::Lines(vec![(1, v.clone()), (2, v)])).unwrap_err();
            assert!(
                lines.starts_with(&format!(
                    "JSON Lines whose first line is {API_RESPONSE}: {what}"
                )),
                "{lines}"
            );
        }
        for v in [
            json!({"object": "response"}),
            json!({"object": "list", "data": []}),
            json!({"type": "message", "role": "user", "content": "hi"}),
        ] {
            let why = doc(v).unwrap_err();
            assert!(why.starts_with("a JSON object with keys"), "{why}");
        }
    }

    #[test]
    fn documents() {
        assert_eq!(
            doc(json!({"trajectory_format": "mini-swe-agent-1", "messages": []})),
            Ok(SourceFormat::MiniSwe)
        );
        assert_eq!(
            doc(json!({"schema_version": "ATIF-v1.2", "steps": []})),
            Ok(SourceFormat::Atif)
        );
        assert_eq!(
            doc(json!({"info": {}, "simulations": []})),
            Ok(SourceFormat::Tau2)
        );
        assert_eq!(
            doc(json!({"history": [{"role": "system"}], "info": {}})),
            Ok(SourceFormat::SweAgent)
        );
        assert_eq!(
            doc(json!({"history": [{"action": "run"}]})),
            Ok(SourceFormat::Openhands)
        );
        assert_eq!(
            doc(json!([{"task_id": 1, "traj": []}])),
            Ok(SourceFormat::Tau)
        );
        assert_eq!(
            doc(json!([{"id": 0, "action": "message"}])),
            Ok(SourceFormat::Openhands)
        );
        assert_eq!(
            doc(json!([{"role": "user", "content": "hi"}])),
            Ok(SourceFormat::Openai)
        );
        assert_eq!(
            doc(json!({"system": "s", "messages": [{"role": "user", "content": "hi"}]})),
            Ok(SourceFormat::Anthropic)
        );
        assert_eq!(
            doc(
                json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}])
            ),
            Ok(SourceFormat::Anthropic)
        );
        assert_eq!(
            doc(json!({"messages": [{"role": "assistant", "content": null, "tool_calls": []}]})),
            Ok(SourceFormat::Openai)
        );
    }

    #[test]
    fn non_traces_say_what_they_are() {
        let e = doc(json!({"total": 500, "passed": 371})).unwrap_err();
        assert!(e.contains("total, passed"), "{e}");
        assert!(doc(json!([])).unwrap_err().contains("empty"));
        // No empty key list ("with keys ;"): the object is called empty.
        assert_eq!(doc(json!({})).unwrap_err(), "an empty JSON object");
        assert_eq!(
            doc(json!([{}])).unwrap_err(),
            "a JSON array whose first object is empty"
        );
        let blank = Input::Lines(vec![(1, json!({})), (2, json!({}))]);
        assert_eq!(
            detect(&blank).unwrap_err(),
            "JSON Lines whose first line is an empty JSON object"
        );
        assert!(doc(json!(42)).unwrap_err().contains("a number"));
    }

    #[test]
    fn lines() {
        let cc = Input::Lines(vec![(
            1,
            json!({"type": "queue-operation", "sessionId": "s"}),
        )]);
        assert_eq!(detect(&cc), Ok(SourceFormat::ClaudeCode));
        let conv = Input::Lines(vec![(
            1,
            json!({"messages": [{"role": "user", "content": "x"}]}),
        )]);
        assert_eq!(detect(&conv), Ok(SourceFormat::Openai));
        let rows = Input::Lines(vec![(
            1,
            json!({"history": [{"action": "run"}], "metrics": {}}),
        )]);
        assert_eq!(detect(&rows), Ok(SourceFormat::Openhands));
        let junk = Input::Lines(vec![(1, json!(1)), (2, json!(2))]);
        assert!(detect(&junk).is_err());
    }

    #[test]
    fn canonical_header_probe() {
        assert!(looks_canonical(
            b"\n{\"type\":\"header\",\"schema_version\":1,\"meta\":{}}\n"
        ));
        assert!(!looks_canonical(b"{\"type\":\"user\"}\n"));
        assert!(!looks_canonical(b"\xff\xfe"));
    }
}
