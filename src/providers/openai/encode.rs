//! The chat-completions request body: serde-derived structs that borrow the resolved
//! [`Outgoing`] request (no JSON tree of the conversation is built). The bytes are those of the
//! JSON tree the format describes (checked against such a tree in the tests below).

use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;

use super::wants_max_completion_tokens;
use crate::providers::{Message, Outgoing, Role, ToolCall, ToolDef};

/// A body key sent only with `tools`.
const PARALLEL_TOOL_CALLS: &str = "parallel_tool_calls";

/// The body of a request. Keys come in this order: `model`, `messages`, `tools`, the sampling
/// fields that are set, then the other `Sampling::extra` entries; an `extra` key that names a
/// field that is sent replaces its value in place.
#[derive(Serialize)]
pub(super) struct ChatBody<'a> {
    model: Field<'a, &'a str>,
    messages: Field<'a, Vec<WireMessage<'a>>>,
    /// The keys after `messages` (written apart by [`ChatBody::write`]).
    #[serde(flatten)]
    rest: Rest<'a>,
}

/// The body's keys after `messages`: `tools`, the sampling fields that are set, then the other
/// `Sampling::extra` entries.
#[derive(Serialize)]
struct Rest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Field<'a, Vec<WireTool<'a>>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<Field<'a, f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<Field<'a, u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<Field<'a, u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<Field<'a, f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<Field<'a, &'a [String]>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<Field<'a, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frequency_penalty: Option<Field<'a, f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    presence_penalty: Option<Field<'a, f64>>,
    /// The `extra` entries that name no field above that is sent.
    #[serde(flatten)]
    extra: BTreeMap<&'a str, &'a Value>,
}

/// A body field: its own value, or the `Sampling::extra` value of the same name.
#[derive(Serialize)]
#[serde(untagged)]
enum Field<'a, T> {
    Own(T),
    Extra(&'a Value),
}

/// `value` under `key`, unless `extra` (the entries not placed yet) names `key`.
fn field<'a, T>(extra: &mut BTreeMap<&'a str, &'a Value>, key: &str, value: T) -> Field<'a, T> {
    match extra.remove(key) {
        Some(v) => Field::Extra(v),
        None => Field::Own(value),
    }
}

impl<'a> ChatBody<'a> {
    pub(super) fn new(r: &'a Outgoing<'_>) -> Self {
        let s = &*r.sampling;
        let mut extra: BTreeMap<&str, &Value> =
            s.extra.iter().map(|(k, v)| (k.as_str(), v)).collect();
        if r.tools.is_empty() {
            // "'parallel_tool_calls' is only allowed when 'tools' are specified" (the API's 400):
            // a provider's `extra_body` setting it also serves its requests without tools (the
            // judge, the summarizer, a question with no sandbox).
            extra.remove(PARALLEL_TOOL_CALLS);
        }
        let x = &mut extra;
        let model = field(x, "model", r.model);
        let messages = field(x, "messages", r.messages.iter().map(WireMessage::of).collect());
        let tools = (!r.tools.is_empty())
            .then(|| field(x, "tools", r.tools.iter().map(WireTool::of).collect()));
        let temperature = s.temperature.map(|t| field(x, "temperature", t));
        let (max_tokens, max_completion_tokens) = match s.max_tokens {
            Some(m) if wants_max_completion_tokens(r.model) => {
                (None, Some(field(x, "max_completion_tokens", m)))
            }
            Some(m) => (Some(field(x, "max_tokens", m)), None),
            None => (None, None),
        };
        let top_p = s.top_p.map(|p| field(x, "top_p", p));
        let stop = (!s.stop.is_empty()).then(|| field(x, "stop", s.stop.as_slice()));
        let seed = s.seed.map(|v| field(x, "seed", v));
        let frequency_penalty = s.frequency_penalty.map(|p| field(x, "frequency_penalty", p));
        let presence_penalty = s.presence_penalty.map(|p| field(x, "presence_penalty", p));
        ChatBody {
            model,
            messages,
            rest: Rest {
                tools,
            temperature,
            max_tokens,
            max_completion_tokens,
            top_p,
            stop,
            seed,
            frequency_penalty,
                presence_penalty,
                extra,
            },
        }
    }

    /// The bytes `serde_json::to_writer` writes for this body, appended to `out`, with the
    /// messages (nearly all of a body's bytes) written by [`write_messages`]: their texts are
    /// escaped eight bytes at a time ([`write_str`]) where serde_json looks at every byte.
    pub(super) fn write(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"model\":");
        serde_json::to_writer(&mut *out, &self.model)?;
        out.extend_from_slice(b",\"messages\":");
        match &self.messages {
            Field::Own(messages) => write_messages(messages, out),
            Field::Extra(v) => serde_json::to_writer(&mut *out, v)?,
        }
        // `{…}` of the keys after `messages`: its members go on after a comma.
        let rest = serde_json::to_vec(&self.rest)?;
        if rest.len() > 2 {
            out.push(b',');
            out.extend_from_slice(&rest[1..]);
        } else {
            out.push(b'}');
        }
        Ok(())
    }
}

/// `[{"role", "tool_call_id"?, "content", "tool_calls"?}, …]` as serde_json writes the derived
/// [`WireMessage`]s (no spaces, keys in field order, `null` for a `None` content).
fn write_messages(messages: &[WireMessage<'_>], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"role\":");
        write_str(out, m.role);
        if let Some(id) = m.tool_call_id {
            out.extend_from_slice(b",\"tool_call_id\":");
            write_str(out, id);
        }
        out.extend_from_slice(b",\"content\":");
        match m.content {
            Some(c) => write_str(out, c),
            None => out.extend_from_slice(b"null"),
        }
        if !m.tool_calls.is_empty() {
            out.extend_from_slice(b",\"tool_calls\":[");
            for (j, c) in m.tool_calls.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"id\":");
                write_str(out, c.id);
                out.extend_from_slice(b",\"type\":");
                write_str(out, c.kind);
                out.extend_from_slice(b",\"function\":{\"name\":");
                write_str(out, c.function.name);
                out.extend_from_slice(b",\"arguments\":");
                write_str(out, &c.function.arguments);
                out.extend_from_slice(b"}}");
            }
            out.push(b']');
        }
        out.push(b'}');
    }
    out.push(b']');
}

/// `s` as a JSON string, the bytes serde_json writes: `\"`, `\\`, `\b`, `\t`, `\n`, `\f`,
/// `\r`, other control characters as `\u00xx` (lowercase hex), everything else (DEL and
/// non-ASCII included) as it is. The next byte to escape is found eight bytes at a time (about
/// twice serde_json's speed on the needle sweep's texts, which escape one byte in thirty).
fn write_str(out: &mut Vec<u8>, s: &str) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte of `x` that is zero. The lowest one set is exact (a false one
    // needs a borrow, which starts only at a zero byte below it).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    // The same for a byte below 0x20, a quote or a backslash.
    let special = |x: u64| {
        (x.wrapping_sub(ONES * 0x20) & !x & HIGHS)
            | zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')))
    };
    let needs_escape = |c: u8| c < 0x20 || c == b'"' || c == b'\\';
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    // `run`: the first byte not written yet; `i`: where the search goes on.
    let (mut i, mut run) = (0, 0);
    loop {
        let at = loop {
            match b.get(i..i + 8) {
                Some(chunk) => {
                    let m = special(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
                    if m == 0 {
                        i += 8;
                    } else {
                        // Little-endian: the lowest set bit is the first byte in the text.
                        break Some(i + (m.trailing_zeros() / 8) as usize);
                    }
                }
                None => break b[i..].iter().position(|&c| needs_escape(c)).map(|p| i + p),
            }
        };
        let Some(at) = at else { break };
        let c = b[at];
        out.extend_from_slice(&b[run..at]);
        let short = match c {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            b'\t' => b't',
            b'\n' => b'n',
            0x0c => b'f',
            b'\r' => b'r',
            _ => b'u',
        };
        if short == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let (hi, lo) = (HEX[usize::from(c >> 4)], HEX[usize::from(c & 0xf)]);
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hi, lo]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
        i = at + 1;
        run = i;
    }
    out.extend_from_slice(&b[run..]);
    out.push(b'"');
}

/// One message as the API takes it: tool results with their call id, assistant tool calls with
/// JSON-encoded arguments (`content` null when empty), else role and content.
#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
}

impl<'a> WireMessage<'a> {
    fn of(m: &'a Message) -> Self {
        let (tool_call_id, content) = match m.role {
            Role::Tool => (Some(m.tool_call_id.as_deref().unwrap_or("")), Some(&*m.content)),
            Role::Assistant if !m.tool_calls.is_empty() => {
                (None, (!m.content.is_empty()).then_some(&*m.content))
            }
            _ => (None, Some(&*m.content)),
        };
        let tool_calls = match m.role {
            Role::Assistant => m.tool_calls.iter().map(WireCall::of).collect(),
            _ => Vec::new(),
        };
        WireMessage {
            role: m.role.as_str(),
            tool_call_id,
            content,
            tool_calls,
        }
    }
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    /// The JSON text of an object (see [`object_arguments`]).
    arguments: Cow<'a, str>,
}

/// Tool-call arguments as the JSON text of an object, which strict servers require (vLLM
/// renders them into its chat template as an object and answers 400 otherwise): an object as it
/// is; a string holding an object's JSON text verbatim (the recorded key order kept); anything
/// else — invalid JSON recorded as raw text, a number, an array — wrapped as `{"_raw": …}`, as
/// the Anthropic wire does.
pub(super) fn object_arguments(v: &Value) -> Cow<'_, str> {
    match v {
        Value::Object(_) => Cow::Owned(v.to_string()),
        Value::String(s)
            if s.trim_start().starts_with('{')
                && serde_json::from_str::<Value>(s).is_ok_and(|x| x.is_object()) =>
        {
            Cow::Borrowed(s.as_str())
        }
        other => Cow::Owned(serde_json::json!({ "_raw": other }).to_string()),
    }
}

impl<'a> WireCall<'a> {
    fn of(c: &'a ToolCall) -> Self {
        let arguments = object_arguments(&c.arguments);
        WireCall {
            id: &c.id,
            kind: "function",
            function: CallFunction {
                name: &c.name,
                arguments,
            },
        }
    }
}

/// `{"type": "function", "function": {"name", "description", "parameters"}}`.
#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ToolFunction<'a>,
}

#[derive(Serialize)]
struct ToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> WireTool<'a> {
    fn of(t: &'a ToolDef) -> Self {
        WireTool {
            kind: "function",
            function: ToolFunction {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::openai::OpenAiWire;
    use crate::providers::http::Wire;
    use crate::providers::{ChatRequest, Sampling};
    use proptest::prelude::*;
    use serde_json::{json, Map};

    /// The body as a JSON tree, built the way this format was first written (the oracle).
    fn tree(r: &Outgoing<'_>) -> Value {
        fn message_json(m: &Message) -> Value {
            match m.role {
                Role::Tool => json!({
                    "role": "tool",
                    "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content,
                }),
                Role::Assistant if !m.tool_calls.is_empty() => {
                    let calls: Vec<Value> = m
                        .tool_calls
                        .iter()
                        .map(|c| {
                            // Always an object's JSON text (an independent statement of
                            // `object_arguments`).
                            let args = match &c.arguments {
                                Value::Object(_) => c.arguments.to_string(),
                                Value::String(s)
                                    if matches!(
                                        serde_json::from_str::<Value>(s),
                                        Ok(Value::Object(_))
                                    ) =>
                                {
                                    s.clone()
                                }
                                v => json!({"_raw": v}).to_string(),
                            };
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": args}})
                        })
                        .collect();
                    let content = if m.content.is_empty() {
                        Value::Null
                    } else {
                        Value::String(m.content.clone())
                    };
                    json!({"role": "assistant", "content": content, "tool_calls": calls})
                }
                role => json!({"role": role.as_str(), "content": m.content}),
            }
        }
        let mut b = Map::new();
        b.insert("model".into(), json!(r.model));
        let messages = r.messages.iter().map(message_json).collect();
        b.insert("messages".into(), Value::Array(messages));
        if !r.tools.is_empty() {
            let tools = r
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
            b.insert("tools".into(), Value::Array(tools));
        }
        let s = &r.sampling;
        if let Some(t) = s.temperature {
            b.insert("temperature".into(), json!(t));
        }
        if let Some(m) = s.max_tokens {
            let field = if wants_max_completion_tokens(r.model) {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            b.insert(field.into(), json!(m));
        }
        if let Some(p) = s.top_p {
            b.insert("top_p".into(), json!(p));
        }
        if !s.stop.is_empty() {
            b.insert("stop".into(), json!(s.stop));
        }
        if let Some(seed) = s.seed {
            b.insert("seed".into(), json!(seed));
        }
        if let Some(p) = s.frequency_penalty {
            b.insert("frequency_penalty".into(), json!(p));
        }
        if let Some(p) = s.presence_penalty {
            b.insert("presence_penalty".into(), json!(p));
        }
        for (k, v) in &s.extra {
            if k != PARALLEL_TOOL_CALLS || !r.tools.is_empty() {
                b.insert(k.clone(), v.clone());
            }
        }
        Value::Object(b)
    }

    fn same_bytes(req: &ChatRequest) {
        let r = Outgoing::from(req);
        let mut bytes = Vec::new();
        OpenAiWire.encode(&r, &mut bytes).unwrap();
        let want = serde_json::to_vec(&tree(&r)).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            String::from_utf8(want).unwrap()
        );
        assert_eq!(OpenAiWire.body(&r).unwrap(), tree(&r));
    }

    fn call(id: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "grep".into(),
            arguments,
        }
    }

    fn conversation() -> ChatRequest {
        let mut err = Message::tool("c2", "grep", "no such file: \"a\\b\"\n\t\u{1}");
        err.is_error = true;
        let mut orphan = Message::tool("", "grep", "x");
        orphan.tool_call_id = None;
        ChatRequest::new(vec![
            Message::system("sys ✓"),
            Message::user("find \"it\" 🦀"),
            Message::assistant(
                "",
                vec![
                    call("c1", json!({"pattern": "x", "a": [1, 2.5, null, true]})),
                    call("c2", json!("{bad json")),
                    call("c3", json!(7)),
                ],
            ),
            Message::tool("c1", "grep", "a.txt:3: x"),
            err,
            orphan,
            Message::assistant("Thinking.", vec![call("c4", json!({}))]),
            Message::assistant("done", vec![]),
        ])
        .with_tools(vec![
            ToolDef {
                name: "grep".into(),
                description: "search \"files\"".into(),
                parameters: json!({"type": "object", "properties": {"z": {}, "a": {}}}),
            },
            ToolDef {
                name: "ls".into(),
                description: String::new(),
                parameters: json!({}),
            },
        ])
        .with_nonce("repeat-1")
    }

    #[test]
    fn bytes_equal_the_json_tree() {
        let mut req = conversation();
        same_bytes(&req);
        req.model = Some("gpt-4o".into());
        req.sampling = Sampling {
            temperature: Some(0.0),
            max_tokens: Some(64),
            top_p: Some(0.9),
            stop: vec!["\n\n".into()],
            seed: Some(u64::MAX),
            frequency_penalty: Some(-0.5),
            presence_penalty: Some(1e-7),
            extra: [("repeat_penalty".to_string(), json!(1.15))].into(),
        };
        same_bytes(&req);
        req.model = Some("o4-mini".into());
        same_bytes(&req);
        req.sampling.temperature = Some(f64::NAN);
        same_bytes(&req);
        req.tools.to_mut().clear();
        req.messages.clear();
        same_bytes(&req);
    }

    #[test]
    fn extra_fields_replace_in_place_or_come_last() {
        let mut req = conversation();
        req.model = Some("gpt-4o".into());
        req.sampling.max_tokens = Some(10);
        req.sampling.extra = [
            ("model", json!("other")),
            ("max_tokens", json!(20)),
            ("top_p", json!(0.5)),
            ("a_first", json!({"k": [1]})),
            ("zzz", Value::Null),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        same_bytes(&req);
        let b = OpenAiWire.body(&(&req).into()).unwrap();
        let keys: Vec<&str> = b.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            ["model", "messages", "tools", "max_tokens", "a_first", "top_p", "zzz"]
        );
        assert_eq!((&b["model"], &b["max_tokens"]), (&json!("other"), &json!(20)));
    }

    /// `parallel_tool_calls` (from a provider's `extra_body`) is sent only with tools: OpenAI
    /// answers it without them 400.
    #[test]
    fn parallel_tool_calls_goes_only_with_tools() {
        let mut req = conversation();
        req.sampling.extra = [("parallel_tool_calls".to_string(), json!(false))].into();
        same_bytes(&req);
        let b = OpenAiWire.body(&(&req).into()).unwrap();
        assert_eq!(b["parallel_tool_calls"], json!(false));
        req.tools.to_mut().clear();
        same_bytes(&req);
        let b = OpenAiWire.body(&(&req).into()).unwrap();
        assert!(b.get("parallel_tool_calls").is_none(), "{b}");
    }

    /// An `extra` key named `messages` replaces the messages in place, written as serde_json
    /// writes it (the one path of the body's writer that does not escape the texts itself).
    #[test]
    fn extra_messages_replace_the_conversation_in_place() {
        let mut req = conversation();
        req.sampling.extra = [(
            "messages".to_string(),
            json!([{"role": "user", "content": "swapped \"in\"\n"}]),
        )]
        .into_iter()
        .collect();
        same_bytes(&req);
        let b = OpenAiWire.body(&(&req).into()).unwrap();
        assert_eq!(b["messages"][0]["content"], json!("swapped \"in\"\n"));
    }

    /// Every byte that may need an escape, at every offset of an eight-byte chunk, is written
    /// as serde_json writes it.
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = (0u8..=0x7f)
            .map(|c| char::from(c).to_string())
            .chain(["", "é✓🦀", "\u{7f}\u{80}\u{ff}", "plain text of sixteen"].map(String::from))
            .collect();
        for c in [0u8, 0x08, b'\t', b'\n', 0x0c, b'\r', 0x1b, 0x1f, b' ', b'"', b'\\', 0x7f] {
            for at in 0..17 {
                let mut t = "abcdefghijklmnopq".to_string();
                t.insert(at, char::from(c));
                texts.push(t.clone());
                texts.push(format!("{t}é{t}\"\\"));
            }
        }
        for t in texts {
            let mut ours = Vec::new();
            write_str(&mut ours, &t);
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(&t).unwrap(),
                "{t:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_string_is_escaped_as_serde_json_escapes_it(t in any::<String>()) {
            let mut ours = Vec::new();
            write_str(&mut ours, &t);
            prop_assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(&t).unwrap());
        }

        #[test]
        fn any_text_encodes_like_the_tree(
            content in any::<String>(),
            tool in any::<String>(),
            key in any::<String>(),
            arg in any::<String>(),
            raw in any::<bool>(),
        ) {
            let arguments = if raw { json!(arg) } else { json!({ key: arg }) };
            let req = ChatRequest::new(vec![
                Message::user(content.clone()),
                Message::assistant(content.clone(), vec![call(&tool, arguments)]),
                Message::tool(tool.clone(), "t", content),
            ]);
            same_bytes(&req);
        }
    }
}
