//! OpenAI Responses API items (also what the OpenAI Agents SDK records) → canonical traces.
//! Accepted shapes: a JSON array of items, JSON Lines of items, or a request body
//! `{model?, instructions?, input: [items], output?: [items]}` (`output`, a response's items,
//! follows `input`).
//!
//! Items: `message` (roles `user`, `assistant`, `system`, `developer`; content a string or
//! parts `input_text`/`output_text`, `refusal` parts by their `refusal` text (as every importer
//! reads them: `json::part_text`) with a warning at each of an assistant message
//! (`openai::refusal_warning`), other parts as a `[type]` placeholder; an item
//! without `type` but with `role` is an "easy input message"); `reasoning` (its `summary` and
//! `content` texts become the reasoning of the assistant message it belongs to, never its text;
//! `encrypted_content` alone gives no text); `function_call` (`call_id`, `name`, `arguments` a
//! JSON string), `custom_tool_call` (`input` a free string, kept as `{"input": …}`),
//! `local_shell_call` (`action` as arguments), and their `*_output` items, which pair by
//! `call_id`; server-side calls (`web_search_call`, `file_search_call`, …) are kept as tool
//! calls, with their result where the item holds one (`mcp_call.output`, `file_search_call.
//! results`); their results are not in the record otherwise (a web search's never are), so a
//! placeholder tool message of kind `server_side` answers the call (a warning says so): the
//! trace stays a request a chat API accepts. Consecutive output items (reasoning, assistant message, calls) are one model call:
//! one assistant message. `compaction` items become `compaction` markers.
//!
//! Cut-short output: an item whose `status` is `"incomplete"` (the response stopped before it
//! was complete) is warned of at its status; the item does not say why. A request body that is
//! also the Response (`status`, `incomplete_details` beside `input`/`output`) is warned of by its
//! `incomplete_details.reason`, `"content_filter"` or `"max_output_tokens"`, or by `status:
//! "incomplete"` alone. The items of an array or JSON Lines carry no such field of the response.
//!
//! The conversion ([`Conv`]) is shared with the Codex CLI importer, whose rollout lines wrap
//! these same items.

use super::detect::{arr_of, str_of, Shape};
use super::json::{content_text, parse_arguments, Node, Res};
use super::openai::{content_filter_warning, refusal_warning, token_limit_warning};
use super::{Calls, Importer, Input};
use crate::trace::model::{ContextMarker, Message, Role, SourceFormat, ToolCall, Trace, TraceMeta};
use serde_json::{json, Map, Value};
use crate::output::quoted;

/// Prefixes of the user messages Codex (and agents built like it) write themselves, marked
/// `kind: "meta"` so the goal is the person's first request.
const INJECTED: [&str; 4] = [
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<INSTRUCTIONS>",
];

/// Item types only the Responses API writes (a chat message never has them).
const ITEM_TYPES: [&str; 16] = [
    "function_call",
    "function_call_output",
    "reasoning",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
    "compaction",
    "item_reference",
];

/// Is this object a Responses item (a typed item, or a `message` item with content parts
/// `input_text`/`output_text`)?
pub fn is_item(o: &Map<String, Value>) -> bool {
    match str_of(o, "type") {
        Some("message") => o.contains_key("role"),
        Some(t) => ITEM_TYPES.contains(&t),
        None => false,
    }
}

/// Responses items: an array or JSON Lines whose items include a typed Responses item, or an
/// object with `input` (items, or a string as the API takes) where the input or an `output`
/// array holds a typed item (a request whose input is only plain `{role, content}` messages is
/// known by its response's items).
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::OpenaiResponses,
    detect: |shape| match shape {
        Shape::Array(items, _) => any_item(items.iter()),
        Shape::Lines(lines, _) => any_item(lines.iter().map(|(_, v)| v)),
        Shape::Object(o) => match o.get("input") {
            Some(Value::Array(input)) => {
                any_item(input.iter()) || arr_of(o, "output").is_some_and(|i| any_item(i.iter()))
            }
            Some(Value::String(_)) => arr_of(o, "output").is_some_and(|i| any_item(i.iter())),
            _ => false,
        },
    },
    import,
};

fn any_item<'a>(mut items: impl Iterator<Item = &'a Value>) -> bool {
    items.any(|v| v.as_object().is_some_and(is_item))
}

pub fn import(input: &mut Input, stem: &str) -> Res<Vec<Trace>> {
    let mut conv = Conv::new(stem, SourceFormat::OpenaiResponses);
    match input {
        Input::Json(Value::Array(items)) => {
            for (i, v) in std::mem::take(items).into_iter().enumerate() {
                conv.item(&Node::at(&v, format!("$[{i}]")))?;
            }
        }
        Input::Json(v) => {
            let root = Node::root(v);
            root.obj()?;
            conv.t.meta.model = root.key("model").opt_str()?.map(String::from);
            let instructions = root.key("instructions");
            if !instructions.is_null() {
                conv.t
                    .messages
                    .push(Message::system(content_text(&instructions, &mut conv.t.meta.warnings)?));
            }
            conv.t.meta.tools = root
                .key("tools")
                .opt_items()?
                .into_iter()
                .map(|n| n.v.clone())
                .collect();
            // A Response object (`output` beside its `input`) says why it stopped early.
            conv.t.meta.warnings.extend(incomplete_warning(&root));
            let mut v = std::mem::take(v);
            // `input` as a string is one user message (the API's shorthand).
            if let Some(text) = v.get_mut("input").and_then(|i| i.as_str().map(String::from)) {
                let item = json!({"role": "user", "content": text});
                conv.item(&Node::at(&item, "$.input".into()))?;
                v["input"] = Value::Array(Vec::new());
            }
            for key in ["input", "output"] {
                if key == "output" && Node::root(&v).key(key).is_null() {
                    continue;
                }
                for (x, path) in Node::take_items(&mut v, "$".into(), key)? {
                    conv.item(&Node::at(&x, path))?;
                }
            }
        }
        Input::Lines(lines) => {
            for (n, v) in std::mem::take(lines) {
                conv.item(&Node::line_root(&v, n))?;
            }
        }
    }
    Ok(vec![conv.finish()])
}

/// Builds one trace from Responses items, grouping consecutive output items into one assistant
/// message (one model call).
pub struct Conv {
    pub t: Trace,
    calls: Calls,
    /// Index of the assistant message the next output item joins, while no input item came
    /// between.
    open: Option<usize>,
    /// Server-side calls left without a result (named in one warning at the end).
    server_calls: usize,
    /// Input messages recorded between calls and their outputs (e.g. a Codex developer
    /// message), placed after the outputs so results follow their calls.
    deferred: Vec<Message>,
    /// Client-side calls of the current model call still waiting for their output.
    awaiting: std::collections::HashSet<String>,
}

impl Conv {
    pub fn new(id: &str, format: SourceFormat) -> Self {
        Conv {
            t: Trace::new(TraceMeta::new(id, format)),
            calls: Calls::default(),
            open: None,
            server_calls: 0,
            deferred: Vec::new(),
            awaiting: Default::default(),
        }
    }

    /// Place the deferred input messages (see `deferred`).
    fn flush(&mut self) {
        self.t.messages.append(&mut self.deferred);
    }

    pub fn finish(mut self) -> Trace {
        self.flush();
        if self.server_calls > 0 {
            self.t.meta.warnings.push(format!(
                "{} server-side tool call(s) (web search, file search, …) have no recorded \
                 result: each is answered by a placeholder (a tool message of kind `server_side`)",
                self.server_calls
            ));
        }
        self.t
    }

    /// Close the current model call: the next output item starts a new assistant message.
    pub fn end_call(&mut self) {
        self.open = None;
    }

    /// The assistant message output items join (created when needed).
    pub fn assistant(&mut self, timestamp: Option<&str>) -> &mut Message {
        let i = match self.open {
            Some(i) => i,
            None => {
                // Calls never answered do not hold later input back past the next model call.
                self.awaiting.clear();
                self.flush();
                let mut m = Message::assistant("", Vec::new());
                m.timestamp = timestamp.map(String::from);
                self.t.messages.push(m);
                let i = self.t.messages.len() - 1;
                self.open = Some(i);
                i
            }
        };
        &mut self.t.messages[i]
    }

    /// The last assistant message, if any (for usage recorded after the call).
    pub fn last_assistant(&mut self) -> Option<&mut Message> {
        self.t
            .messages
            .iter_mut()
            .rev()
            .find(|m| m.role == Role::Assistant)
    }

    fn push_input(&mut self, m: Message) {
        self.open = None;
        if m.role != Role::Tool && !self.awaiting.is_empty() {
            self.deferred.push(m);
            return;
        }
        self.t.messages.push(m);
        if self.awaiting.is_empty() {
            self.flush();
        }
    }

    /// Drop the last `n` turns of the person (each from one of their messages, a user message
    /// of no kind, to the next), as Codex does when the thread is rolled back
    /// (`drop_last_n_user_turns`): the messages removed, counted. `n` at least the number of
    /// turns drops every turn (what precedes the first, the system message and injected
    /// context, stays); `n` 0 or no turn removes nothing.
    pub fn rollback(&mut self, n: usize) -> usize {
        self.open = None;
        self.flush();
        self.awaiting.clear();
        let starts: Vec<usize> = self
            .t
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::User && m.kind.is_none())
            .map(|(i, _)| i)
            .collect();
        let Some(&first) = starts.first() else {
            return 0;
        };
        if n == 0 {
            return 0;
        }
        let cut = if n >= starts.len() { first } else { starts[starts.len() - n] };
        let removed = self.t.messages.len() - cut;
        self.t.messages.truncate(cut);
        self.t.markers.retain(|m| m.index <= cut);
        removed
    }

    /// A compaction recorded by the source: a marker before the summary, if there is one.
    pub fn compaction(&mut self, summary: Option<String>, detail: Option<String>) {
        self.open = None;
        self.flush();
        self.t.markers.push(ContextMarker {
            index: self.t.messages.len(),
            kind: "compaction".into(),
            detail,
            tokens_before: None,
        });
        if let Some(s) = summary.filter(|s| !s.trim().is_empty()) {
            let mut m = Message::user(s);
            m.kind = Some("compaction_summary".into());
            self.t.messages.push(m);
        }
    }

    /// Issue a call on the current assistant message; a client-side call is awaited (its
    /// output is a later item), a server-side one is not.
    fn call(&mut self, item: &Node<'_>, name: &str, recorded: &str, arguments: Value, ts: Option<&str>, client: bool) {
        let id = self
            .calls
            .issue(recorded, name, &item.path, &mut self.t.meta.warnings);
        if client {
            self.awaiting.insert(id.clone());
        }
        self.assistant(ts).tool_calls.push(ToolCall {
            id,
            name: name.to_string(),
            arguments,
        });
    }

    /// The tool message answering call `recorded`, of `kind` (`server_side`: a placeholder).
    fn result(
        &mut self,
        item: &Node<'_>,
        recorded: &str,
        content: String,
        ts: Option<&str>,
        kind: Option<&str>,
    ) {
        let (id, name) = match self.calls.answer(recorded) {
            Some(x) => x,
            None => {
                self.t.meta.warnings.push(format!(
                    "{}: output for call {} follows no open call",
                    item.path,
                    quoted(recorded)
                ));
                (recorded.to_string(), String::new())
            }
        };
        self.awaiting.remove(&id);
        let mut m = Message::tool(id, name, content);
        m.timestamp = ts.map(String::from);
        m.kind = kind.map(String::from);
        self.push_input(m);
    }

    /// Convert one item (see the module docs). `timestamp` is the enclosing record's, if any.
    pub fn item_at(&mut self, it: &Node<'_>, timestamp: Option<&str>) -> Res<()> {
        it.obj()?;
        let ty = match it.key("type").opt_str()? {
            Some(t) => t,
            None if it.has("role") => "message",
            None => return Err(it.key("type").expected("a Responses item type")),
        };
        if it.key("status").v.as_str() == Some("incomplete") {
            self.t.meta.warnings.push(format!(
                "{}: the item's status is \"incomplete\": the response stopped before the item \
                 was complete (at its output token limit or by a content filter, which the \
                 response's `incomplete_details` says, not the item): it is imported as recorded",
                it.key("status").path
            ));
        }
        match ty {
            "message" => {
                let role = it.key("role").str()?;
                let text = content_text(&it.key("content"), &mut self.t.meta.warnings)?;
                match role {
                    "assistant" => {
                        // A refusal part is the model's answer, read as its text by
                        // `content_text`; a warning says the message is one.
                        for p in it.key("content").opt_items().unwrap_or_default() {
                            if p.key("type").v.as_str() == Some("refusal") {
                                self.t
                                    .meta
                                    .warnings
                                    .push(refusal_warning(&p.path, "a `refusal` part"));
                            }
                        }
                        let m = self.assistant(timestamp);
                        if !m.content.is_empty() {
                            m.content.push('\n');
                        }
                        m.content.push_str(&text);
                    }
                    "user" | "system" | "developer" => {
                        let mut m = if role == "user" {
                            let injected = INJECTED.iter().any(|x| text.trim_start().starts_with(x));
                            let mut m = Message::user(text);
                            if injected {
                                m.kind = Some("meta".into());
                            }
                            m
                        } else {
                            Message::system(text)
                        };
                        m.timestamp = timestamp.map(String::from);
                        self.push_input(m);
                    }
                    _ => {
                        return Err(it.key("role").error(format!(
                            "expected \"user\", \"assistant\", \"system\" or \"developer\", found {role}", role = crate::output::quoted(role)
                        )))
                    }
                }
            }
            "reasoning" => {
                let mut texts = Vec::new();
                for key in ["summary", "content"] {
                    for p in it.key(key).opt_items()? {
                        if let Some(t) = p.key("text").opt_str()? {
                            texts.push(t.to_string());
                        } else if let Some(s) = p.v.as_str() {
                            texts.push(s.to_string());
                        }
                    }
                }
                let m = self.assistant(timestamp);
                if !texts.is_empty() {
                    let more = texts.join("\n");
                    m.reasoning = Some(match m.reasoning.take() {
                        Some(r) => format!("{r}\n{more}"),
                        None => more,
                    });
                }
            }
            "function_call" => {
                let name = it.key("name").str()?;
                let recorded = call_id(it)?;
                let args = parse_arguments(&it.key("arguments"), &mut self.t.meta.warnings)?;
                self.call(it, name, &recorded, args, timestamp, true);
            }
            "custom_tool_call" => {
                let name = it.key("name").str()?;
                let recorded = call_id(it)?;
                let input = it.key("input").opt_str()?.unwrap_or("");
                self.call(it, name, &recorded, json!({ "input": input }), timestamp, true);
            }
            "local_shell_call" | "computer_call" => {
                let recorded = call_id(it)?;
                let name = ty.trim_end_matches("_call");
                let action = it.key("action").v.clone();
                self.call(it, name, &recorded, action, timestamp, true);
            }
            "function_call_output"
            | "custom_tool_call_output"
            | "local_shell_call_output"
            | "computer_call_output" => {
                let recorded = call_id(it)?;
                let content = output_text(&it.key("output"), &mut self.t.meta.warnings)?;
                self.result(it, &recorded, content, timestamp, None);
            }
            "mcp_call" => {
                let name = it.key("name").str()?;
                let recorded = call_id(it)?;
                let args = parse_arguments(&it.key("arguments"), &mut self.t.meta.warnings)?;
                self.call(it, name, &recorded, args, timestamp, false);
                let out = it.key("output");
                let err = it.key("error");
                let content = if out.is_null() { output_text(&err, &mut self.t.meta.warnings)? } else { output_text(&out, &mut self.t.meta.warnings)? };
                self.result(it, &recorded, content, timestamp, None);
                if let Some(m) = self.t.messages.last_mut() {
                    m.is_error = out.is_null() && !err.is_null();
                }
                // A server-side call runs inside the same model call.
                self.open = self.t.messages.iter().rposition(|m| m.role == Role::Assistant);
            }
            "web_search_call" | "file_search_call" | "code_interpreter_call"
            | "image_generation_call" => {
                let recorded = call_id(it)?;
                let name = ty.trim_end_matches("_call");
                let mut args = it.key("action").v.clone();
                if args.is_null() {
                    args = match it.key("queries").v {
                        Value::Null => json!({}),
                        q => json!({ "queries": q }),
                    };
                }
                self.call(it, name, &recorded, args, timestamp, false);
                let results = match ty {
                    "file_search_call" => it.key("results"),
                    "code_interpreter_call" => it.key("outputs"),
                    _ => Node::at(&Value::Null, String::new()),
                };
                // Its results are not in the record (a web search's never are): a placeholder
                // result of kind `server_side` answers the call, so the trace stays a valid
                // request for a chat API (an open call is a 400) and no replay calls it a defect.
                let (text, kind) = if results.is_null() {
                    self.server_calls += 1;
                    (
                        format!("[server-side {name}: its results are not in the record]"),
                        Some("server_side"),
                    )
                } else {
                    (serde_json::to_string(results.v).unwrap_or_default(), None)
                };
                self.result(it, &recorded, text, timestamp, kind);
                // A server-side call runs inside the same model call.
                self.open = self.t.messages.iter().rposition(|m| m.role == Role::Assistant);
            }
            "compaction" | "compaction_summary" => {
                let summary = it.key("summary").opt_str().ok().flatten().map(String::from);
                self.compaction(summary, None);
            }
            "item_reference" => {}
            other => self.t.meta.warnings.push(format!(
                "{}: item of type {} skipped",
                it.path,
                quoted(other)
            )),
        }
        Ok(())
    }

    pub fn item(&mut self, it: &Node<'_>) -> Res<()> {
        self.item_at(it, None)
    }
}

/// The warning for a Response object that says it is incomplete: `incomplete_details.reason`
/// `"content_filter"` or `"max_output_tokens"` (the reasons the API gives), or `status:
/// "incomplete"` with no reason. Its last output item is what the model produced before it
/// stopped.
fn incomplete_warning(root: &Node<'_>) -> Option<String> {
    let reason = root.key("incomplete_details").key("reason");
    match reason.v.as_str() {
        Some("content_filter") => Some(content_filter_warning(&reason)),
        Some(r @ "max_output_tokens") => Some(token_limit_warning(&reason, r)),
        Some(other) => Some(format!(
            "{}: the response is incomplete ({}): its last output is the text the model \
             produced before it stopped",
            reason.path,
            quoted(other)
        )),
        None if root.key("status").v.as_str() == Some("incomplete") => Some(format!(
            "{}: the response is incomplete (no `incomplete_details.reason`): its last output is \
             the text the model produced before it stopped",
            root.key("status").path
        )),
        None => None,
    }
}

/// The `call_id` of a call or output item (`id` when there is no `call_id`).
fn call_id(it: &Node<'_>) -> Res<String> {
    Ok(match it.key("call_id").opt_str()? {
        Some(c) => c.to_string(),
        None => it.key("id").opt_str()?.unwrap_or("").to_string(),
    })
}

/// A call output: a string, a list of content parts (as a message's content: [`content_text`],
/// which reads a `refusal` part as its text), or another JSON value (kept as JSON text).
pub fn output_text(n: &Node<'_>, warnings: &mut Vec<String>) -> Res<String> {
    match n.v {
        Value::Null | Value::String(_) | Value::Array(_) => content_text(n, warnings),
        v => Ok(serde_json::to_string(v).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::import::detect::detect;

    fn items() -> Value {
        json!([
            {"role": "user", "content": "weather in Paris?"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "need the tool"}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "18C"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "18C in Paris"}]},
            {"type": "web_search_call", "id": "ws_1", "action": {"type": "search", "query": "x"}}
        ])
    }

    #[test]
    fn items_group_into_model_calls_with_reasoning_apart() {
        let t = import(&mut Input::Json(items()), "r").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant, Role::Tool]
        );
        let a = &t.messages[1];
        assert_eq!(a.content, "");
        assert_eq!(a.reasoning.as_deref(), Some("need the tool"));
        assert_eq!(a.tool_calls[0].arguments, json!({"city": "Paris"}));
        assert_eq!(t.messages[2].name.as_deref(), Some("get_weather"));
        // the final answer and the server-side search are one call, the search answered by a
        // placeholder (its results are not in the record)
        assert_eq!(t.messages[3].content, "18C in Paris");
        assert_eq!(t.messages[3].tool_calls[0].name, "web_search");
        let placeholder = &t.messages[4];
        assert_eq!(placeholder.role, Role::Tool);
        assert_eq!(
            placeholder.tool_call_id.as_deref(),
            Some(t.messages[3].tool_calls[0].id.as_str())
        );
        assert_eq!(placeholder.kind.as_deref(), Some("server_side"));
        assert!(placeholder.content.contains("not in the record"));
        assert!(t.meta.warnings[0].contains("server-side"), "{:?}", t.meta.warnings);
    }

    #[test]
    fn the_three_shapes_give_the_same_messages() {
        let a = import(&mut Input::Json(items()), "r").unwrap().remove(0);
        let lines: Vec<(usize, Value)> = items()
            .as_array()
            .unwrap()
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, v)| (i + 1, v))
            .collect();
        let b = import(&mut Input::Lines(lines.clone()), "r").unwrap().remove(0);
        let body = json!({"model": "gpt-5", "instructions": "be brief", "input": items()});
        let c = import(&mut Input::Json(body.clone()), "r").unwrap().remove(0);
        assert_eq!(a.messages, b.messages);
        assert_eq!(c.messages[0].content, "be brief");
        assert_eq!(&c.messages[1..], &a.messages[..]);
        assert_eq!(c.meta.model.as_deref(), Some("gpt-5"));
        for input in [Input::Json(items()), Input::Lines(lines), Input::Json(body)] {
            assert_eq!(detect(&input), Ok(SourceFormat::OpenaiResponses));
        }
    }

    /// A request body whose `input` is only plain `{role, content}` messages, or a string (the
    /// API's shorthand for one user message), is known by the typed items of its `output`, and
    /// the string is the person's message.
    #[test]
    fn a_body_with_plain_or_string_input_is_known_by_its_output() {
        let output = json!([{"type": "message", "role": "assistant",
                             "content": [{"type": "output_text", "text": "Once upon a time"}]}]);
        for input in [json!([{"role": "user", "content": "Tell me a story"}]), json!("Tell me a story")] {
            let body = Input::Json(json!({"model": "gpt-4.1", "input": input, "output": output}));
            assert_eq!(detect(&body), Ok(SourceFormat::OpenaiResponses));
            let mut body = body;
            let t = import(&mut body, "r").unwrap().remove(0);
            let said: Vec<_> = t.messages.iter().map(|m| (m.role, m.content.as_str())).collect();
            assert_eq!(
                said,
                [(Role::User, "Tell me a story"), (Role::Assistant, "Once upon a time")]
            );
        }
        // Plain messages alone, with no typed item anywhere, are a chat conversation's shape.
        let plain = Input::Json(json!({"input": [{"role": "user", "content": "hi"}]}));
        assert_ne!(detect(&plain), Ok(SourceFormat::OpenaiResponses));
    }

    /// A refusal part is its text, beside the other parts of its message (one reading for
    /// both chat formats: `json::part_text`), with a warning at the part saying the message is
    /// a refusal.
    #[test]
    fn a_refusal_part_is_its_text_with_a_warning() {
        let v = json!([
            {"role": "user", "content": "pick the lock"},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Sorry."},
                {"type": "refusal", "refusal": "I can't help with that."}]}
        ]);
        let t = import(&mut Input::Json(v), "r").unwrap().remove(0);
        assert_eq!(t.messages[1].content, "Sorry.\nI can't help with that.");
        assert_eq!(
            t.meta.warnings,
            ["$[1].content[1]: the model refused (a `refusal` part): the message is the \
              refusal's text"]
        );
    }

    /// An item whose `status` is `incomplete` (the response stopped early) is warned of at
    /// its status; the item is imported as recorded.
    #[test]
    fn an_incomplete_item_is_warned_of() {
        let v = json!([
            {"role": "user", "content": "write a long essay"},
            {"type": "message", "role": "assistant", "status": "incomplete",
             "content": [{"type": "output_text", "text": "Once upon a"}]},
            {"type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "done"}]}
        ]);
        let t = import(&mut Input::Json(v), "r").unwrap().remove(0);
        assert_eq!(t.messages[1].content, "Once upon a\ndone");
        assert_eq!(t.meta.warnings.len(), 1, "{:?}", t.meta.warnings);
        assert!(
            t.meta.warnings[0].starts_with("$[1].status: the item's status is \"incomplete\""),
            "{:?}",
            t.meta.warnings
        );
    }

    /// A Response object beside its input (`{model, input, output, status,
    /// incomplete_details}`) that a content filter or the output token limit stopped is warned
    /// of at `incomplete_details.reason`; `status: "incomplete"` alone too; a completed one not.
    #[test]
    fn an_incomplete_response_says_why() {
        let body = |status: &str, details: Value| {
            json!({"model": "gpt-5", "status": status, "incomplete_details": details,
                   "input": [{"role": "user", "content": "hi"}],
                   "output": [{"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": "Hel"}]}]})
        };
        let warnings = |v: Value| import(&mut Input::Json(v), "r").unwrap().remove(0).meta.warnings;
        let w = warnings(body("incomplete", json!({"reason": "content_filter"})));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("$.incomplete_details.reason: the model's output was stopped by a content filter"),
            "{w:?}"
        );
        let w = warnings(body("incomplete", json!({"reason": "max_output_tokens"})));
        assert_eq!(
            w,
            ["$.incomplete_details.reason: the model's output was stopped at its output token \
              limit (\"max_output_tokens\"): the message is the text it produced before it stopped"]
        );
        let w = warnings(body("incomplete", Value::Null));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("$.status: the response is incomplete"), "{w:?}");
        assert!(warnings(body("completed", Value::Null)).is_empty());
    }

    #[test]
    fn a_bad_item_names_its_path() {
        let v = json!([{"type": "function_call", "call_id": "c", "name": 3}]);
        let e = import(&mut Input::Json(v), "r").unwrap_err();
        assert_eq!(e.location, "$[0].name");
    }
    use proptest::prelude::*;

    proptest! {
        /// Parallel calls answered in any order: every output pairs with its own call (by
        /// `call_id`), the calls stay in one assistant message, and nothing is left open.
        #[test]
        fn outputs_in_any_order_pair_with_their_calls(
            names in proptest::collection::vec("[a-z]{1,8}", 1..8),
            seed in any::<u64>(),
        ) {
            let mut items = vec![json!({"role": "user", "content": "go"})];
            for (k, n) in names.iter().enumerate() {
                items.push(json!({"type": "function_call", "call_id": format!("c{k}"), "name": n, "arguments": "{}"}));
            }
            let mut order: Vec<usize> = (0..names.len()).collect();
            let mut rng = fastrand::Rng::with_seed(seed);
            rng.shuffle(&mut order);
            for &k in &order {
                items.push(json!({"type": "function_call_output", "call_id": format!("c{k}"), "output": format!("r{k}")}));
            }
            let mut t = import(&mut Input::Json(Value::Array(items)), "p").unwrap().remove(0);
            crate::trace::import::finalize(&mut t);
            prop_assert_eq!(t.messages[1].tool_calls.len(), names.len());
            prop_assert!(crate::trace::import::pairing_problems(&t).is_empty());
            for m in &t.messages[2..] {
                let k: usize = m.tool_call_id.as_deref().unwrap()[1..].parse().unwrap();
                prop_assert_eq!(&m.content, &format!("r{k}"));
                prop_assert_eq!(m.name.as_deref(), Some(names[k].as_str()));
            }
        }
    }
}
