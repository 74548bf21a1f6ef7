//! The chat-completions request body, written straight from the borrowed [`Outgoing`] request:
//! no JSON tree of the conversation is built, so a call that sends a long history costs one pass
//! over its text. The bytes are those of the JSON tree the format describes (checked against
//! such a tree in the tests below).

use serde::ser::{Error as _, SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;

use super::wants_max_completion_tokens;
use crate::providers::{Message, Outgoing, Role, ToolCall, ToolDef};

/// The chat-completions body of a request, serialized straight from the borrowed request (no
/// JSON tree of the conversation is built). Keys come in this order: `model`, `messages`,
/// `tools`, the sampling fields that are set, then `Sampling::extra`; an `extra` key that names
/// one of those fields replaces its value in place.
pub(super) struct ChatBody<'r, 'a> {
    r: &'r Outgoing<'a>,
    /// Text of tool-call arguments that are not a string (reused for every call).
    scratch: RefCell<Vec<u8>>,
}

impl<'r, 'a> ChatBody<'r, 'a> {
    pub(super) fn new(r: &'r Outgoing<'a>) -> Self {
        ChatBody {
            r,
            scratch: RefCell::new(Vec::new()),
        }
    }
}

/// One body field: its value, or the `extra` value of the same name.
fn field<M: SerializeMap, T: Serialize + ?Sized>(
    map: &mut M,
    extra: &BTreeMap<String, Value>,
    key: &str,
    value: &T,
) -> Result<(), M::Error> {
    match extra.get(key) {
        Some(v) => map.serialize_entry(key, v),
        None => map.serialize_entry(key, value),
    }
}

impl Serialize for ChatBody<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.r;
        let s = &*r.sampling;
        let extra = &s.extra;
        let mut map = serializer.serialize_map(None)?;
        let mut sent: Vec<&str> = vec!["model", "messages"];
        field(&mut map, extra, "model", r.model)?;
        let messages = Messages {
            messages: r.messages,
            scratch: &self.scratch,
        };
        field(&mut map, extra, "messages", &messages)?;
        if !r.tools.is_empty() {
            sent.push("tools");
            field(&mut map, extra, "tools", &Tools(r.tools))?;
        }
        if let Some(t) = s.temperature {
            sent.push("temperature");
            field(&mut map, extra, "temperature", &t)?;
        }
        if let Some(m) = s.max_tokens {
            let key = if wants_max_completion_tokens(r.model) {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            sent.push(key);
            field(&mut map, extra, key, &m)?;
        }
        if let Some(p) = s.top_p {
            sent.push("top_p");
            field(&mut map, extra, "top_p", &p)?;
        }
        if !s.stop.is_empty() {
            sent.push("stop");
            field(&mut map, extra, "stop", &s.stop)?;
        }
        if let Some(seed) = s.seed {
            sent.push("seed");
            field(&mut map, extra, "seed", &seed)?;
        }
        if let Some(p) = s.frequency_penalty {
            sent.push("frequency_penalty");
            field(&mut map, extra, "frequency_penalty", &p)?;
        }
        if let Some(p) = s.presence_penalty {
            sent.push("presence_penalty");
            field(&mut map, extra, "presence_penalty", &p)?;
        }
        for (k, v) in extra {
            if !sent.contains(&k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

struct Messages<'a> {
    messages: &'a [Message],
    scratch: &'a RefCell<Vec<u8>>,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.messages.len()))?;
        for m in self.messages {
            seq.serialize_element(&WireMessage {
                m,
                scratch: self.scratch,
            })?;
        }
        seq.end()
    }
}

/// One message as the API takes it: tool results with their call id, assistant tool calls with
/// JSON-encoded arguments (`content` null when empty), else role and content.
struct WireMessage<'a> {
    m: &'a Message,
    scratch: &'a RefCell<Vec<u8>>,
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let m = self.m;
        match m.role {
            Role::Tool => {
                let mut o = serializer.serialize_map(Some(3))?;
                o.serialize_entry("role", "tool")?;
                o.serialize_entry("tool_call_id", m.tool_call_id.as_deref().unwrap_or(""))?;
                o.serialize_entry("content", &m.content)?;
                o.end()
            }
            Role::Assistant if !m.tool_calls.is_empty() => {
                let mut o = serializer.serialize_map(Some(3))?;
                o.serialize_entry("role", "assistant")?;
                let content = (!m.content.is_empty()).then_some(m.content.as_str());
                o.serialize_entry("content", &content)?;
                let calls = WireCalls {
                    calls: &m.tool_calls,
                    scratch: self.scratch,
                };
                o.serialize_entry("tool_calls", &calls)?;
                o.end()
            }
            role => {
                let mut o = serializer.serialize_map(Some(2))?;
                o.serialize_entry("role", role.as_str())?;
                o.serialize_entry("content", &m.content)?;
                o.end()
            }
        }
    }
}

struct WireCalls<'a> {
    calls: &'a [ToolCall],
    scratch: &'a RefCell<Vec<u8>>,
}

impl Serialize for WireCalls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.calls.len()))?;
        for c in self.calls {
            let mut text = self.scratch.borrow_mut();
            let arguments: &str = match &c.arguments {
                // Malformed arguments recorded as raw text go back verbatim.
                Value::String(s) => s,
                v => {
                    text.clear();
                    serde_json::to_writer(&mut *text, v).map_err(S::Error::custom)?;
                    std::str::from_utf8(&text).map_err(S::Error::custom)?
                }
            };
            seq.serialize_element(&json_call(c, arguments))?;
        }
        seq.end()
    }
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
fn json_call<'a>(c: &'a ToolCall, arguments: &'a str) -> impl Serialize + 'a {
    #[derive(Serialize)]
    struct Function<'a> {
        name: &'a str,
        arguments: &'a str,
    }
    #[derive(Serialize)]
    struct Call<'a> {
        id: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
        function: Function<'a>,
    }
    Call {
        id: &c.id,
        kind: "function",
        function: Function {
            name: &c.name,
            arguments,
        },
    }
}

/// `{"type": "function", "function": {"name", "description", "parameters"}}` per tool.
struct Tools<'a>(&'a [ToolDef]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        serializer.collect_seq(self.0.iter().map(|t| Tool {
            kind: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        }))
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
                            let args = match &c.arguments {
                                Value::String(s) => s.clone(),
                                v => v.to_string(),
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
            b.insert(k.clone(), v.clone());
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
        req.tools.clear();
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

    proptest! {
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
