//! LangChain / LangGraph message dumps → one canonical trace per message list.
//!
//! The four shapes people have (each as a JSON array, or as JSON Lines of messages):
//! - `messages_to_dict`: `[{type: human|ai|tool|system|…, data: {content, …}}]`;
//! - `dumpd` / the lc-constructor serialization: `[{lc: 1, type: "constructor", id: [...,
//!   "AIMessage" | "AIMessageChunk" | …], kwargs: {content, …}}]`;
//! - a message's own `model_dump()`: `[{type: "human", content, …}]`;
//! - LangGraph state: `{"messages": [one of the above]}`, also under `values` (a stream's
//!   `values` event) or `channel_values` (a checkpoint).
//!
//! Fields: `content` a string or a list of blocks (`text`; `reasoning`/`thinking` blocks and
//! `additional_kwargs.reasoning` / `reasoning_content` → reasoning, never text; Anthropic
//! `tool_use` blocks are calls unless `tool_calls` already holds that id); `tool_calls`
//! `[{name, args, id}]` (and `invalid_tool_calls`, whose `args` is a string; older dumps only
//! have OpenAI `additional_kwargs.tool_calls`); a `tool` message answers `tool_call_id`
//! (`status: "error"` → `is_error`); `usage_metadata` → per-call usage (`input_tokens`
//! already includes `input_token_details.cache_read`); `response_metadata.model_name` → model.
//! Consecutive `AIMessageChunk`s with the same `id` are one streamed message and are merged.
//! An OpenAI refusal (`additional_kwargs.refusal`, where `langchain_openai` puts the response
//! message's `refusal`, its `content` empty) is the message's text, with a warning; a
//! `response_metadata.finish_reason` of `"content_filter"` is warned of, and so is an answer the
//! output token limit stopped (`finish_reason` `"length"` or `"MAX_TOKENS"`, `stop_reason`
//! `"max_tokens"`).

use super::detect::{arr_of, str_of, Shape};
use super::json::{content_text, parse_arguments, placeholder, Node, Res};
use super::openai::{content_filter_warning, refusal_warning, token_limit_warning};
use super::{tool_calls, CallShape, Calls, Importer, Input};
use crate::trace::model::{Message, Role, SourceFormat, ToolCall, Trace, TraceMeta, Usage};
use serde_json::{Map, Value};

/// `messages_to_dict` type names and the class names of `dumpd`, with their canonical role.
fn role_of(class: &str) -> Option<Role> {
    let base = class.strip_suffix("Chunk").unwrap_or(class);
    Some(match base {
        "human" | "HumanMessage" => Role::User,
        "ai" | "AIMessage" => Role::Assistant,
        "tool" | "ToolMessage" | "function" | "FunctionMessage" => Role::Tool,
        "system" | "SystemMessage" => Role::System,
        "chat" | "ChatMessage" => Role::User,
        _ => return None,
    })
}

/// A LangChain message in any of the three item shapes.
pub fn is_message(o: &Map<String, Value>) -> bool {
    let ty = str_of(o, "type");
    if o.get("lc").is_some() && ty == Some("constructor") {
        return arr_of(o, "id")
            .and_then(|id| id.last())
            .and_then(|c| c.as_str())
            .is_some_and(|c| role_of(c).is_some());
    }
    let Some(ty) = ty else { return false };
    role_of(ty).is_some()
        && !o.contains_key("role")
        && (o.get("data").is_some_and(|d| d.get("content").is_some())
            || o.contains_key("content"))
}

/// The message list of a LangGraph state: `messages`, `values.messages` or
/// `channel_values.messages`.
fn state_messages(o: &Map<String, Value>) -> Option<&Vec<Value>> {
    arr_of(o, "messages")
        .or_else(|| o.get("values").and_then(|v| v.get("messages")?.as_array()))
        .or_else(|| {
            o.get("channel_values")
                .and_then(|v| v.get("messages")?.as_array())
        })
}

fn first_is_message(items: &[Value]) -> bool {
    items
        .first()
        .and_then(|v| v.as_object())
        .is_some_and(is_message)
}

/// LangChain messages (see the module docs for the shapes), or a LangGraph state holding them.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Langchain,
    detect: |shape| match shape {
        Shape::Array(_, first) | Shape::Lines(_, first) => {
            is_message(first) || state_messages(first).is_some_and(|m| first_is_message(m))
        }
        Shape::Object(o) => state_messages(o).is_some_and(|m| first_is_message(m)),
    },
    import,
};

pub fn import(input: &mut Input, stem: &str) -> Res<Vec<Trace>> {
    match input {
        Input::Json(Value::Array(items)) if !items.first().is_some_and(is_state) => {
            let mut c = Conv::new(stem);
            for (i, v) in std::mem::take(items).into_iter().enumerate() {
                c.message(&Node::at(&v, format!("$[{i}]")))?;
            }
            Ok(vec![c.t])
        }
        Input::Json(Value::Array(states)) => std::mem::take(states)
            .into_iter()
            .enumerate()
            .map(|(i, s)| state(&Node::at(&s, format!("$[{i}]")), &format!("{stem}__{i}")))
            .collect(),
        Input::Json(v) => Ok(vec![state(&Node::root(v), stem)?]),
        Input::Lines(lines) => {
            let lines = std::mem::take(lines);
            if lines.first().is_some_and(|(_, v)| is_state(v)) {
                let one = lines.len() == 1;
                return lines
                    .into_iter()
                    .map(|(n, v)| {
                        let id = if one { stem.to_string() } else { format!("{stem}__L{n}") };
                        state(&Node::line_root(&v, n), &id)
                    })
                    .collect();
            }
            let mut c = Conv::new(stem);
            for (n, v) in lines {
                c.message(&Node::line_root(&v, n))?;
            }
            Ok(vec![c.t])
        }
    }
}

fn is_state(v: &Value) -> bool {
    v.as_object().is_some_and(|o| state_messages(o).is_some())
}

/// One LangGraph state object.
fn state(root: &Node<'_>, id: &str) -> Res<Trace> {
    root.obj()?;
    let list = [
        root.key("messages"),
        root.key("values").key("messages"),
        root.key("channel_values").key("messages"),
    ]
    .into_iter()
    .find(|n| !n.is_null())
    .unwrap_or_else(|| root.key("messages"));
    let mut c = Conv::new(id);
    for m in list.items()? {
        c.message(&m)?;
    }
    Ok(c.t)
}

struct Conv {
    t: Trace,
    calls: Calls,
    /// `id` of the last message when it was an `AIMessageChunk` (chunks of one id merge).
    chunk: Option<String>,
    /// Whether the refusal of the streamed message `chunk` was warned of (each chunk of a
    /// streamed refusal holds a piece of it).
    chunk_refused: bool,
}

impl Conv {
    fn new(id: &str) -> Self {
        Conv {
            t: Trace::new(TraceMeta::new(id, SourceFormat::Langchain)),
            calls: Calls::default(),
            chunk: None,
            chunk_refused: false,
        }
    }

    /// One message in any item shape.
    fn message(&mut self, m: &Node<'_>) -> Res<()> {
        m.obj()?;
        let (class, data) = if m.key("lc").v.is_number() {
            let id = m.key("id");
            let last = id.items()?.pop().ok_or_else(|| id.expected("a class path"))?;
            (last.str()?, m.key("kwargs"))
        } else if m.has("data") {
            (m.key("type").str()?, m.key("data"))
        } else {
            (m.key("type").str()?, m.clone())
        };
        data.obj()?;
        let Some(mut role) = role_of(class) else {
            return Err(m.key("type").error(format!(
                "expected a LangChain message type (human, ai, tool, system, or a *Message class), found {class}", class = crate::output::quoted(class)
            )));
        };
        if matches!(class, "chat" | "ChatMessage" | "ChatMessageChunk") {
            role = match data.key("role").opt_str()? {
                Some("assistant" | "ai") => Role::Assistant,
                Some("system") => Role::System,
                _ => Role::User,
            };
        }
        let id = data.key("id").opt_str()?.map(String::from);
        let is_chunk = class.ends_with("Chunk");
        let mut parts = Parts::default();
        parts.content(&data.key("content"), &mut self.t.meta.warnings)?;
        let kw = data.key("additional_kwargs");
        for key in ["reasoning_content", "reasoning"] {
            let r = kw.key(key);
            if let Some(s) = r.v.as_str() {
                parts.reasoning.push(s.to_string());
            } else if r.v.is_object() {
                for s in r.key("summary").opt_items()? {
                    if let Some(t) = s.key("text").opt_str()? {
                        parts.reasoning.push(t.to_string());
                    }
                }
            }
        }
        match role {
            Role::Assistant => {
                // An OpenAI refusal (`langchain_openai` keeps the response message's `refusal`
                // in `additional_kwargs`, `content` empty): the model's answer, kept as text.
                let refusal = kw.key("refusal");
                let refused = match refusal.v.as_str() {
                    Some(r) if !r.is_empty() => {
                        // After the text, if any (an empty `content` is no text).
                        parts.text.retain(|x| !x.is_empty());
                        parts.text.push(r.to_string());
                        true
                    }
                    _ => false,
                };
                let continued = is_chunk && id.is_some() && self.chunk == id;
                if refused && !(continued && self.chunk_refused) {
                    self.t.meta.warnings.push(refusal_warning(
                        &refusal.path,
                        "`additional_kwargs.refusal`",
                    ));
                }
                self.chunk_refused = refused || (continued && self.chunk_refused);
                // How the provider's response ended, as each integration records it in
                // `response_metadata`: `finish_reason` (`langchain_openai`: "content_filter",
                // "length"; `langchain_google_genai`: the enum's name, "MAX_TOKENS") or
                // `stop_reason` (`langchain_anthropic`, Bedrock: "max_tokens").
                let meta = data.key("response_metadata");
                let finish = meta.key("finish_reason");
                let stop = meta.key("stop_reason");
                match (finish.v.as_str(), stop.v.as_str()) {
                    (Some("content_filter"), _) => {
                        self.t.meta.warnings.push(content_filter_warning(&finish));
                    }
                    (Some(r @ ("length" | "MAX_TOKENS")), _) => {
                        self.t.meta.warnings.push(token_limit_warning(&finish, r));
                    }
                    (_, Some(r @ "max_tokens")) => {
                        self.t.meta.warnings.push(token_limit_warning(&stop, r));
                    }
                    _ => {}
                }
                let warnings = &mut self.t.meta.warnings;
                let mut calls = Vec::new();
                let mut seen: Vec<String> = Vec::new();
                for key in ["tool_calls", "invalid_tool_calls"] {
                    for c in data.key(key).opt_items()? {
                        c.obj()?;
                        let name = c.key("name").opt_str()?.unwrap_or("");
                        let recorded = c.key("id").opt_str()?.unwrap_or("");
                        let arguments = parse_arguments(&c.key("args"), warnings)?;
                        seen.push(recorded.to_string());
                        let id = self.calls.issue(recorded, name, &c.path, warnings);
                        calls.push(ToolCall {
                            id,
                            name: name.to_string(),
                            arguments,
                        });
                    }
                }
                if calls.is_empty() {
                    calls = tool_calls(&kw.key("tool_calls"), CallShape::OpenAi, &mut self.calls, warnings)?
                        .into_iter()
                        .map(|(r, c)| {
                            seen.push(r);
                            c
                        })
                        .collect();
                }
                for (recorded, name, args, path) in parts.uses.drain(..) {
                    if !seen.contains(&recorded) {
                        let id = self.calls.issue(&recorded, &name, &path, warnings);
                        calls.push(ToolCall { id, name, arguments: args });
                    }
                }
                let usage = usage(&data.key("usage_metadata"))?;
                let rm = data.key("response_metadata");
                if self.t.meta.model.is_none() {
                    self.t.meta.model = match rm.key("model_name").opt_str()? {
                        Some(m) => Some(m.to_string()),
                        None => rm.key("model").v.as_str().map(String::from),
                    };
                }
                // A chunk continuing the previous chunk of the same id.
                if continued {
                    if let Some(prev) = self.t.messages.last_mut() {
                        prev.content.push_str(&parts.text.join("\n"));
                        prev.tool_calls.extend(calls);
                        if !parts.reasoning.is_empty() {
                            let more = parts.reasoning.join("\n");
                            prev.reasoning = Some(match prev.reasoning.take() {
                                Some(r) => format!("{r}{more}"),
                                None => more,
                            });
                        }
                        if let Some(u) = usage {
                            let mut sum = prev.usage.unwrap_or_default();
                            sum.add(&u);
                            prev.usage = Some(sum);
                        }
                        return Ok(());
                    }
                }
                let mut a = Message::assistant(parts.text.join("\n"), calls);
                if !parts.reasoning.is_empty() {
                    a.reasoning = Some(parts.reasoning.join("\n"));
                }
                a.usage = usage;
                self.t.messages.push(a);
            }
            Role::Tool => {
                let recorded = data.key("tool_call_id").opt_str()?;
                let (cid, name) =
                    self.calls.answer_or_warn(recorded, &m.path, &mut self.t.meta.warnings);
                let name = data.key("name").opt_str()?.map(String::from).unwrap_or(name);
                let mut t = Message::tool(cid, name, parts.text.join("\n"));
                t.is_error = data.key("status").opt_str()? == Some("error");
                self.t.messages.push(t);
            }
            Role::User | Role::System => {
                self.t
                    .messages
                    .push(Message::new(role, parts.text.join("\n")));
            }
        }
        self.chunk = if is_chunk { id } else { None };
        Ok(())
    }
}

/// The parts of a message's `content`.
#[derive(Default)]
struct Parts {
    text: Vec<String>,
    reasoning: Vec<String>,
    /// Anthropic `tool_use` blocks: (id, name, input, path).
    uses: Vec<(String, String, Value, String)>,
}

impl Parts {
    /// Add `c`'s parts; a non-text block becomes its `[type]` placeholder, warned of in
    /// `warnings`.
    fn content(&mut self, c: &Node<'_>, warnings: &mut Vec<String>) -> Res<()> {
        match c.v {
            Value::Null => {}
            Value::String(s) => self.text.push(s.clone()),
            Value::Array(_) => {
                for b in c.items()? {
                    if let Some(s) = b.v.as_str() {
                        self.text.push(s.to_string());
                        continue;
                    }
                    b.obj()?;
                    match b.key("type").opt_str()?.unwrap_or("text") {
                        "text" | "output_text" | "input_text" => {
                            self.text.push(b.key("text").str()?.to_string())
                        }
                        "reasoning" | "thinking" => {
                            for key in ["thinking", "reasoning", "text"] {
                                if let Some(t) = b.key(key).v.as_str() {
                                    self.reasoning.push(t.to_string());
                                }
                            }
                            for s in b.key("summary").opt_items()? {
                                if let Some(t) = s.key("text").opt_str()? {
                                    self.reasoning.push(t.to_string());
                                }
                            }
                        }
                        "tool_use" => self.uses.push((
                            b.key("id").opt_str()?.unwrap_or("").to_string(),
                            b.key("name").str()?.to_string(),
                            b.key("input").v.clone(),
                            b.path.clone(),
                        )),
                        // Calls are read from `tool_calls`; the streaming pieces repeat them.
                        "tool_call" | "tool_call_chunk" | "function_call" => {}
                        "tool_result" => self.text.push(content_text(&b.key("content"), warnings)?),
                        other => self.text.push(placeholder(&b, other, warnings)),
                    }
                }
            }
            _ => return Err(c.expected("a string or a list of content blocks")),
        }
        Ok(())
    }
}

/// `usage_metadata`: `input_tokens` includes the cache reads and writes it details.
fn usage(u: &Node<'_>) -> Res<Option<Usage>> {
    if u.is_null() {
        return Ok(None);
    }
    u.obj()?;
    let d = u.key("input_token_details");
    Ok(Some(Usage {
        input: u.key("input_tokens").opt_u64()?.unwrap_or(0),
        output: u.key("output_tokens").opt_u64()?.unwrap_or(0),
        cache_read: d.key("cache_read").opt_u64()?.unwrap_or(0),
        cache_write: d.key("cache_creation").opt_u64()?.unwrap_or(0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::import::detect::detect;
    use serde_json::json;

    /// The same conversation in the `data` of each shape.
    fn datas() -> Vec<(&'static str, &'static str, Value)> {
        vec![
            ("human", "HumanMessage", json!({"content": "weather?"})),
            ("ai", "AIMessage", json!({"content": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "use the tool"}]}],
                "tool_calls": [{"name": "get_weather", "args": {"city": "Tokyo"}, "id": "c1", "type": "tool_call"}],
                "usage_metadata": {"input_tokens": 300, "output_tokens": 20, "input_token_details": {"cache_read": 100}},
                "response_metadata": {"model_name": "gpt-5"}})),
            ("tool", "ToolMessage", json!({"content": "20C", "tool_call_id": "c1", "name": "get_weather"})),
            ("ai", "AIMessage", json!({"content": "It is 20C."})),
        ]
    }

    fn shapes() -> Vec<Value> {
        let to_dict: Vec<Value> = datas()
            .into_iter()
            .map(|(t, _, d)| json!({"type": t, "data": d}))
            .collect();
        let dumpd: Vec<Value> = datas()
            .into_iter()
            .map(|(_, c, d)| json!({"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", c], "kwargs": d}))
            .collect();
        let dump: Vec<Value> = datas()
            .into_iter()
            .map(|(t, _, mut d)| {
                d["type"] = json!(t);
                d
            })
            .collect();
        vec![
            Value::Array(to_dict.clone()),
            Value::Array(dumpd.clone()),
            Value::Array(dump),
            json!({"messages": dumpd}),
            json!({"values": {"messages": to_dict}}),
        ]
    }

    /// An OpenAI refusal, which `langchain_openai` keeps in `additional_kwargs.refusal` beside
    /// an empty `content`, is the message's text with a warning (it was dropped: the message was
    /// empty); a streamed one, a piece in each chunk, is joined and warned of once. A
    /// `content_filter` finish is warned of.
    #[test]
    fn refusals_and_content_filter_finishes_are_not_silent() {
        let chunk = |text: &str| {
            json!({"type": "AIMessageChunk", "id": "run-2", "content": "",
                   "additional_kwargs": {"refusal": text}})
        };
        let v = json!([
            {"type": "human", "data": {"content": "how do I pick a lock?"}},
            {"type": "ai", "data": {"content": "", "additional_kwargs": {"refusal": "I can't help with that."},
             "response_metadata": {"finish_reason": "stop"}}},
            {"type": "human", "content": "please?"},
            chunk("I cannot "),
            chunk("help with that."),
            {"type": "human", "content": "and now?"},
            {"type": "ai", "content": "Sure, here", "additional_kwargs": {"refusal": null},
             "response_metadata": {"finish_reason": "content_filter"}}
        ]);
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        let texts: Vec<&str> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "how do I pick a lock?",
                "I can't help with that.",
                "please?",
                "I cannot help with that.",
                "and now?",
                "Sure, here"
            ]
        );
        assert_eq!(
            t.meta.warnings,
            [
                "$[1].data.additional_kwargs.refusal: the model refused \
                 (`additional_kwargs.refusal`): the message is the refusal's text",
                "$[3].additional_kwargs.refusal: the model refused (`additional_kwargs.refusal`): \
                 the message is the refusal's text",
                "$[6].response_metadata.finish_reason: the model's output was stopped by a \
                 content filter (\"content_filter\"): the message is the text it produced before \
                 it stopped"
            ]
        );
    }

    /// An answer the output token limit stopped is warned of, as each integration records it:
    /// `finish_reason: "length"` (`langchain_openai`), `"MAX_TOKENS"` (`langchain_google_genai`)
    /// and `stop_reason: "max_tokens"` (`langchain_anthropic`); it read as a finished answer.
    #[test]
    fn answers_the_token_limit_stopped_are_warned_of() {
        let v = json!([
            {"type": "human", "content": "write"},
            {"type": "ai", "content": "Once upon", "response_metadata": {"finish_reason": "length"}},
            {"type": "human", "content": "again"},
            {"type": "ai", "content": "Once", "response_metadata": {"finish_reason": "MAX_TOKENS"}},
            {"type": "human", "content": "again"},
            {"type": "ai", "content": "In a", "response_metadata": {"stop_reason": "max_tokens"}},
            {"type": "human", "content": "fine"},
            {"type": "ai", "content": "Done.", "response_metadata": {"finish_reason": "stop", "stop_reason": "end_turn"}}
        ]);
        let t = import(&mut Input::Json(v), "s").unwrap().remove(0);
        assert_eq!(t.messages.len(), 8);
        assert_eq!(
            t.meta.warnings,
            [
                "$[1].response_metadata.finish_reason: the model's output was stopped at its \
                 output token limit (\"length\"): the message is the text it produced before it \
                 stopped",
                "$[3].response_metadata.finish_reason: the model's output was stopped at its \
                 output token limit (\"MAX_TOKENS\"): the message is the text it produced before \
                 it stopped",
                "$[5].response_metadata.stop_reason: the model's output was stopped at its output \
                 token limit (\"max_tokens\"): the message is the text it produced before it \
                 stopped"
            ]
        );
    }

    #[test]
    fn every_shape_gives_the_same_trace() {
        let mut first: Option<Vec<Message>> = None;
        for v in shapes() {
            let input = Input::Json(v.clone());
            assert_eq!(detect(&input), Ok(SourceFormat::Langchain), "{v}");
            let t = import(&mut Input::Json(v), "lc").unwrap().remove(0);
            let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
            assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
            let a = &t.messages[1];
            assert_eq!(a.content, "");
            assert_eq!(a.reasoning.as_deref(), Some("use the tool"));
            assert_eq!(a.usage.unwrap().input, 300);
            assert_eq!(t.messages[2].tool_call_id.as_deref(), Some("c1"));
            assert_eq!(t.meta.model.as_deref(), Some("gpt-5"));
            match &first {
                None => first = Some(t.messages),
                Some(f) => assert_eq!(f, &t.messages),
            }
        }
    }

    #[test]
    fn chunks_of_one_message_merge() {
        let v = json!([
            {"type": "human", "data": {"content": "hi"}},
            {"type": "AIMessageChunk", "data": {"id": "r1", "content": "Hel", "usage_metadata": {"input_tokens": 5, "output_tokens": 1}}},
            {"type": "AIMessageChunk", "data": {"id": "r1", "content": "lo", "usage_metadata": {"input_tokens": 0, "output_tokens": 1}}}
        ]);
        let t = import(&mut Input::Json(v), "lc").unwrap().remove(0);
        assert_eq!(t.messages.len(), 2);
        assert_eq!(t.messages[1].content, "Hello");
        assert_eq!(t.messages[1].usage.unwrap().output, 2);
    }

    #[test]
    fn a_bad_message_names_its_path() {
        let v = json!([{"type": "human", "data": {"content": 5}}]);
        let e = import(&mut Input::Json(v), "lc").unwrap_err();
        assert_eq!(e.location, "$[0].data.content");
    }
}
