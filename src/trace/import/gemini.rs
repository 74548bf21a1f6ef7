//! Gemini API `Content[]` history → one canonical trace. Accepted shapes: an array of
//! `Content`, JSON Lines of `Content`, or a request body `{contents: [...],
//! systemInstruction?: Content, model?}` (also snake_case `system_instruction`).
//!
//! A `Content` is `{role: "user" | "model" | "function"?, parts: [...]}`. Parts: `text` (with
//! `thought: true` it is the model's reasoning, never its text), `functionCall {name, args,
//! id?}` → a tool call, `functionResponse {name, response, id?}` → a tool result (its
//! `response.output` / `response.content` when that is the whole answer, else the JSON of
//! `response`; `response.error` → `is_error`), `executableCode` / `codeExecutionResult`
//! (the model's own code execution) → a call and its result, `inlineData` / `fileData` →
//! `[mime type]` ([`media`]: a placeholder line in its place, warned of), wherever it is: in a
//! user or model turn, in `systemInstruction`, and in a function response's own `parts` (a
//! tool's image or PDF, which the response's text follows). A result pairs with the call of its
//! `id`, else with the oldest open call of the same name (the API records no ids by default).
//! Usage is not part of `Content`.

use super::detect::{arr_of, str_of, Shape};
use super::json::{placeholder, Node, Res};
use super::{Importer, Input};
use crate::trace::model::{Message, SourceFormat, ToolCall, Trace, TraceMeta};
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// Is this object a Gemini `Content` (`parts` and a role `user`/`model`/`function`, or
/// `role: "model"` alone)?
pub fn is_content(o: &Map<String, Value>) -> bool {
    let role = str_of(o, "role");
    role == Some("model")
        || (arr_of(o, "parts").is_some()
            && !o.contains_key("content")
            && matches!(role, Some("user" | "function") | None))
}

/// Gemini `Content[]`: an array or JSON Lines of `{role, parts}` holding a `role: "model"`
/// content or a `functionCall`/`functionResponse` part, or `{contents: [...]}`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Gemini,
    detect: |shape| match shape {
        Shape::Array(items, _) => gemini_history(items.iter()),
        Shape::Lines(lines, _) => gemini_history(lines.iter().map(|(_, v)| v)),
        Shape::Object(o) => arr_of(o, "contents").is_some_and(|c| gemini_history(c.iter())),
    },
    import,
};

fn gemini_history<'a>(items: impl Iterator<Item = &'a Value>) -> bool {
    let mut any = false;
    for v in items {
        let Some(o) = v.as_object() else { return false };
        if !is_content(o) {
            return false;
        }
        any = true;
    }
    any
}

pub fn import(input: &mut Input, stem: &str) -> Res<Vec<Trace>> {
    let mut c = Conv::new(stem, SourceFormat::Gemini);
    match input {
        Input::Json(Value::Array(items)) => {
            for (i, v) in std::mem::take(items).into_iter().enumerate() {
                c.content(&Node::at(&v, format!("$[{i}]")))?;
            }
        }
        Input::Json(v) => {
            let root = Node::root(v);
            root.obj()?;
            c.t.meta.model = root.key("model").opt_str()?.map(String::from);
            for key in ["systemInstruction", "system_instruction"] {
                let s = root.key(key);
                if !s.is_null() {
                    let (text, _) = texts(&s.key("parts"), SYSTEM_PARTS, &mut c.t.meta.warnings)?;
                    c.t.messages.push(Message::system(text));
                }
            }
            let mut v = std::mem::take(v);
            for (x, path) in Node::take_items(&mut v, "$".into(), "contents")? {
                c.content(&Node::at(&x, path))?;
            }
        }
        Input::Lines(lines) => {
            for (n, v) in std::mem::take(lines) {
                c.content(&Node::line_root(&v, n))?;
            }
        }
    }
    Ok(vec![c.finish()])
}

/// The parts a model turn holds that this importer reads: text (and thoughts), inline and file
/// data, and the model's calls (`functionCall`, `executableCode` with its
/// `codeExecutionResult`).
const MODEL_PARTS: &[&str] = &[
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "executableCode",
    "codeExecutionResult",
];
/// The parts a user (or function) turn holds that this importer reads.
const USER_PARTS: &[&str] = &["text", "inlineData", "fileData", "functionResponse"];
/// The parts a system instruction holds that this importer reads.
const SYSTEM_PARTS: &[&str] = &["text", "inlineData", "fileData"];
/// A `Part`'s fields that qualify its data rather than being it: a part holding only these
/// holds nothing the model reads.
const PART_METADATA: &[&str] = &[
    "thought",
    "thoughtSignature",
    "videoMetadata",
    "partMetadata",
    "mediaResolution",
];

/// A part of a kind this importer does not read where it is (none of `read`: a part kind it
/// does not know, or a `functionCall` in a user turn): the [`placeholder`] of its kind (its
/// first field that is not `PART_METADATA`), warned of at its path in `warnings`, as every
/// part no importer reads is. `None` for a part of a kind in `read`, and for one holding only
/// metadata.
pub fn other_part(p: &Node<'_>, read: &[&str], warnings: &mut Vec<String>) -> Option<String> {
    let kind = p
        .v
        .as_object()?
        .keys()
        .find(|k| !PART_METADATA.contains(&k.as_str()))?;
    if read.contains(&kind.as_str()) {
        return None;
    }
    Some(placeholder(p, kind, warnings))
}

/// Text and thought parts of a part list, as (text, reasoning); inline and file data in the
/// text, in their place, as their placeholders ([`media`], warned of in `warnings`), and so is
/// any part not in `read` ([`other_part`]).
fn texts(parts: &Node<'_>, read: &[&str], warnings: &mut Vec<String>) -> Res<(String, Vec<String>)> {
    let mut text = Vec::new();
    let mut thoughts = Vec::new();
    for p in parts.opt_items()? {
        if let Some(t) = p.key("text").opt_str()? {
            if p.key("thought").opt_bool()? == Some(true) {
                thoughts.push(t.to_string());
            } else {
                text.push(t.to_string());
            }
        } else if let Some(m) = media(&p, warnings)? {
            text.push(m);
        } else if let Some(o) = other_part(&p, read, warnings) {
            text.push(o);
        }
    }
    Ok((text.join("\n"), thoughts))
}

/// The placeholder of a part holding inline or file data (`inlineData` / `fileData`, as a
/// `Part` or a function response's `FunctionResponsePart` holds them): `[mime type]`
/// (`[image/png]`, `[application/pdf]`), or `[inlineData]` / `[fileData]` when it names no MIME
/// type, warned of at the part's path in `warnings` ([`placeholder`]). `None` for a part
/// holding neither.
pub fn media(p: &Node<'_>, warnings: &mut Vec<String>) -> Res<Option<String>> {
    for key in ["inlineData", "fileData"] {
        let d = p.key(key);
        if !d.is_null() {
            let mime = d.key("mimeType").opt_str()?.filter(|m| !m.is_empty());
            return Ok(Some(placeholder(p, mime.unwrap_or(key), warnings)));
        }
    }
    Ok(None)
}

/// Tool calls waiting for results, paired by id or else by name (oldest first).
#[derive(Default)]
pub struct Pairs {
    used: HashSet<String>,
    /// (recorded id, canonical id, name)
    open: Vec<(Option<String>, String, String)>,
    n: usize,
}

impl Pairs {
    /// Register a call: its canonical id (the recorded one if unused, else a fresh one).
    pub fn issue(&mut self, recorded: Option<&str>, name: &str, warnings: &mut Vec<String>, at: &str) -> String {
        let id = match recorded.filter(|r| !r.is_empty()) {
            Some(r) if !self.used.contains(r) => r.to_string(),
            other => loop {
                self.n += 1;
                let c = match other {
                    Some(r) => format!("{r}__{}", self.n),
                    None => format!("call_{}", self.n),
                };
                if !self.used.contains(&c) {
                    if let Some(r) = other {
                        warnings.push(format!(
                            "{at}: tool call id {} was already used in this trace; renamed to {}",
                            crate::output::quoted(r),
                            crate::output::quoted(&c)
                        ));
                    }
                    break c;
                }
            },
        };
        self.used.insert(id.clone());
        self.open
            .push((recorded.map(String::from), id.clone(), name.to_string()));
        id
    }

    /// The call a result answers: by recorded id, else the oldest open call of `name`.
    pub fn answer(&mut self, recorded: Option<&str>, name: &str) -> Option<(String, String)> {
        let pos = recorded
            .and_then(|r| self.open.iter().position(|(x, _, _)| x.as_deref() == Some(r)))
            .or_else(|| self.open.iter().position(|(_, _, n)| n == name))?;
        let (_, id, n) = self.open.remove(pos);
        Some((id, n))
    }
}

/// Builds a trace from `Content`s.
pub struct Conv {
    pub t: Trace,
    pub pairs: Pairs,
}

impl Conv {
    pub fn new(id: &str, format: SourceFormat) -> Self {
        Conv {
            t: Trace::new(TraceMeta::new(id, format)),
            pairs: Pairs::default(),
        }
    }

    pub fn finish(self) -> Trace {
        self.t
    }

    /// A `functionResponse` part's tool message.
    pub fn response(&mut self, fr: &Node<'_>) -> Res<Message> {
        fr.obj()?;
        let name = fr.key("name").opt_str()?.unwrap_or("");
        let id = fr.key("id").opt_str()?;
        let (cid, cname) = match self.pairs.answer(id, name) {
            Some(x) => x,
            None => {
                self.t.meta.warnings.push(format!(
                    "{}: function response {} answers no open call",
                    fr.path,
                    crate::output::quoted(name)
                ));
                (id.unwrap_or("").to_string(), name.to_string())
            }
        };
        let r = fr.key("response");
        let text = response_content(fr, &mut self.t.meta.warnings)?;
        let mut m = Message::tool(cid, if name.is_empty() { cname } else { name.to_string() }, text);
        m.is_error = r.has("error");
        Ok(m)
    }

    /// One `Content`.
    fn content(&mut self, c: &Node<'_>) -> Res<()> {
        c.obj()?;
        let role = c.key("role").opt_str()?.unwrap_or("user");
        let parts = c.key("parts");
        match role {
            "model" => {
                let (text, thoughts) = texts(&parts, MODEL_PARTS, &mut self.t.meta.warnings)?;
                let mut calls = Vec::new();
                let mut results = Vec::new();
                for p in parts.opt_items()? {
                    let fc = p.key("functionCall");
                    if !fc.is_null() {
                        let name = fc.key("name").str()?;
                        let id = self.pairs.issue(fc.key("id").opt_str()?, name, &mut self.t.meta.warnings, &fc.path);
                        let args = fc.key("args");
                        calls.push(ToolCall {
                            id,
                            name: name.to_string(),
                            arguments: if args.is_null() { json!({}) } else { args.v.clone() },
                        });
                    }
                    let code = p.key("executableCode");
                    if !code.is_null() {
                        let id = self.pairs.issue(None, "code_execution", &mut self.t.meta.warnings, &code.path);
                        calls.push(ToolCall {
                            id,
                            name: "code_execution".into(),
                            arguments: code.v.clone(),
                        });
                    }
                    let out = p.key("codeExecutionResult");
                    if !out.is_null() {
                        if let Some((id, name)) = self.pairs.answer(None, "code_execution") {
                            let text = out.key("output").opt_str()?.unwrap_or("").to_string();
                            let mut m = Message::tool(id, name, text);
                            m.is_error = out.key("outcome").v.as_str().is_some_and(|o| o != "OUTCOME_OK");
                            results.push(m);
                        }
                    }
                }
                let mut m = Message::assistant(text, calls);
                if !thoughts.is_empty() {
                    m.reasoning = Some(thoughts.join("\n"));
                }
                self.t.messages.push(m);
                self.t.messages.extend(results);
            }
            "user" | "function" | "tool" => {
                let mut text = Vec::new();
                for p in parts.opt_items()? {
                    let fr = p.key("functionResponse");
                    if !fr.is_null() {
                        if !text.is_empty() {
                            self.t.messages.push(Message::user(std::mem::take(&mut text).join("\n")));
                        }
                        let m = self.response(&fr)?;
                        self.t.messages.push(m);
                    } else if let Some(t) = p.key("text").opt_str()? {
                        text.push(t.to_string());
                    } else if let Some(m) = media(&p, &mut self.t.meta.warnings)? {
                        text.push(m);
                    } else if let Some(o) = other_part(&p, USER_PARTS, &mut self.t.meta.warnings) {
                        text.push(o);
                    }
                }
                if !text.is_empty() {
                    self.t.messages.push(Message::user(text.join("\n")));
                }
            }
            other => {
                return Err(c.key("role").error(format!(
                    "expected \"user\", \"model\" or \"function\", found {other}", other = crate::output::quoted(other)
                )))
            }
        }
        Ok(())
    }
}

/// What a `functionResponse` gave the model: its `response` ([`response_text`]), then the
/// placeholder of each of its own `parts` (the inline or file data of a multimodal function
/// response: a tool's image or PDF; [`media`], warned of in `warnings`), one a line.
///
/// Gemini CLI's `read_file` puts the audio and video it read (which a function response cannot
/// carry) in the response under [`BINARY_INJECTION_KEY`], as inline data parts whose base64
/// data is no text the model read there (the CLI takes them out and sends them in a turn of
/// their own): each is its placeholder line instead, after the response's text, warned of.
pub fn response_content(fr: &Node<'_>, warnings: &mut Vec<String>) -> Res<String> {
    let r = fr.key("response");
    let injected = r.key(BINARY_INJECTION_KEY);
    let mut text = match r.v.as_object() {
        Some(o) if !injected.is_null() => {
            let mut rest = o.clone();
            rest.remove(BINARY_INJECTION_KEY);
            let rest = Value::Object(rest);
            vec![response_text(&Node::at(&rest, r.path.clone()))]
        }
        _ => vec![response_text(&r)],
    };
    text.retain(|t| !t.is_empty());
    for p in injected.opt_items()? {
        if let Some(m) = media(&p, warnings)? {
            text.push(m);
        } else if let Some(o) = other_part(&p, &[], warnings) {
            text.push(o);
        }
    }
    for p in fr.key("parts").opt_items()? {
        if let Some(m) = media(&p, warnings)? {
            text.push(m);
        } else if let Some(o) = other_part(&p, &[], warnings) {
            text.push(o);
        }
    }
    Ok(text.join("\n"))
}

/// The field of a Gemini CLI function response holding the audio and video parts a tool read
/// (`__binary_injection__`, upstream `BINARY_INJECTION_KEY`).
pub const BINARY_INJECTION_KEY: &str = "__binary_injection__";

/// A function response as the model read it: its `output` / `content` / `result` string when
/// that is all it holds, else its JSON.
pub fn response_text(r: &Node<'_>) -> String {
    if let Some(s) = r.v.as_str() {
        return s.to_string();
    }
    if let Some(o) = r.v.as_object() {
        if o.len() == 1 {
            for k in ["output", "content", "result", "error"] {
                if let Some(s) = o.get(k).and_then(|v| v.as_str()) {
                    return s.to_string();
                }
            }
        }
    }
    serde_json::to_string(r.v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::import::detect::detect;
    use crate::trace::model::Role;

    fn history() -> Value {
        json!([
            {"role": "user", "parts": [{"text": "weather and time in Paris?"}]},
            {"role": "model", "parts": [{"text": "plan", "thought": true},
                {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "time", "args": {"tz": "CET"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "time", "response": {"output": "10:00"}}},
                {"functionResponse": {"name": "weather", "response": {"temp": 18}}}]},
            {"role": "model", "parts": [{"text": "18C, 10:00"}]}
        ])
    }

    #[test]
    fn calls_pair_by_name_and_thoughts_are_reasoning() {
        assert_eq!(detect(&Input::Json(history())), Ok(SourceFormat::Gemini));
        let t = import(&mut Input::Json(history()), "g").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Tool, Role::Assistant]);
        let a = &t.messages[1];
        assert_eq!((a.content.as_str(), a.reasoning.as_deref()), ("", Some("plan")));
        assert_eq!(t.messages[2].tool_call_id.as_deref(), Some(a.tool_calls[1].id.as_str()));
        assert_eq!(t.messages[2].content, "10:00");
        assert_eq!(t.messages[3].content, "{\"temp\":18}");
        let body = json!({"systemInstruction": {"parts": [{"text": "be brief"}]}, "contents": history()});
        assert_eq!(detect(&Input::Json(body.clone())), Ok(SourceFormat::Gemini));
        let b = import(&mut Input::Json(body), "g").unwrap().remove(0);
        assert_eq!(b.messages[0].content, "be brief");
        assert_eq!(&b.messages[1..], &t.messages[..]);
    }

    /// Inline and file data become a placeholder line in their place, each warned of at its
    /// path, wherever they are: a model turn, the system instruction, a user turn (with or
    /// without a MIME type) and a function response's own parts (they were dropped without a
    /// word but in a user turn).
    #[test]
    fn inline_data_is_a_placeholder_wherever_it_is() {
        let body = json!({
            "systemInstruction": {"parts": [{"text": "You describe images."},
                {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}}]},
            "contents": [
                {"role": "user", "parts": [{"text": "draw a cat"}, {"fileData": {"fileUri": "gs://b/f"}}]},
                {"role": "model", "parts": [{"text": "Here it is:"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                    {"text": "and the PDF:"},
                    {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/cat.pdf"}},
                    {"functionCall": {"id": "r1", "name": "read_file", "args": {"path": "a.png"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "r1", "name": "read_file",
                    "response": {"output": "read a.png"},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}}]}
            ]
        });
        assert_eq!(detect(&Input::Json(body.clone())), Ok(SourceFormat::Gemini));
        let t = import(&mut Input::Json(body), "g").unwrap().remove(0);
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "You describe images.\n[image/jpeg]",
                "draw a cat\n[fileData]",
                "Here it is:\n[image/png]\nand the PDF:\n[application/pdf]",
                "read a.png\n[image/png]",
            ]
        );
        let warned = |at: &str, noun: &str, p: &str| {
            format!("{at}: {noun} was replaced by the placeholder \"[{p}]\"; its tokens are not counted")
        };
        assert_eq!(
            t.meta.warnings,
            [
                warned("$.systemInstruction.parts[1]", "an image", "image/jpeg"),
                warned("$.contents[0].parts[1]", "a non-text part", "fileData"),
                warned("$.contents[1].parts[1]", "an image", "image/png"),
                warned("$.contents[1].parts[3]", "a document part", "application/pdf"),
                warned("$.contents[2].parts[0].functionResponse.parts[0]", "an image", "image/png"),
            ]
        );
    }

    /// A part of a kind this importer does not read where it is (a kind it does not know, a
    /// call in a user turn, a response in a model turn) is a placeholder line of its kind,
    /// warned of at its path (they were dropped without a word); a part holding only metadata
    /// (a thought signature) holds nothing to read.
    #[test]
    fn other_parts_are_placeholders_not_dropped() {
        let body = json!({
            "systemInstruction": {"parts": [{"text": "be brief"}, {"toolCall": {"id": "x"}}]},
            "contents": [
                {"role": "user", "parts": [{"text": "go"}, {"functionCall": {"name": "ls", "args": {}}}]},
                {"role": "model", "parts": [{"text": "ok"}, {"thoughtSignature": "c2ln"},
                    {"functionResponse": {"name": "ls", "response": {}}}, {"toolResponse": {"id": "x"}}]}
            ]
        });
        let t = import(&mut Input::Json(body), "g").unwrap().remove(0);
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            ["be brief\n[toolCall]", "go\n[functionCall]", "ok\n[functionResponse]\n[toolResponse]"]
        );
        let warned = |at: &str, p: &str| {
            format!("{at}: a non-text part was replaced by the placeholder \"[{p}]\"; its tokens are not counted")
        };
        assert_eq!(
            t.meta.warnings,
            [
                warned("$.systemInstruction.parts[1]", "toolCall"),
                warned("$.contents[0].parts[1]", "functionCall"),
                warned("$.contents[1].parts[2]", "functionResponse"),
                warned("$.contents[1].parts[3]", "toolResponse"),
            ]
        );
    }

    #[test]
    fn a_bad_part_names_its_path() {
        let v = json!([{"role": "model", "parts": [{"functionCall": {"name": 1}}]}]);
        let e = import(&mut Input::Json(v), "g").unwrap_err();
        assert_eq!(e.location, "$[0].parts[0].functionCall.name");
    }
    use proptest::prelude::*;

    proptest! {
        /// Without ids, responses to calls of distinct names pair by name whatever their order.
        #[test]
        fn responses_pair_by_name_in_any_order(
            names in proptest::collection::btree_set("[a-z]{1,8}", 1..8),
            seed in any::<u64>(),
        ) {
            let names: Vec<String> = names.into_iter().collect();
            let calls: Vec<Value> = names.iter().map(|n| json!({"functionCall": {"name": n, "args": {}}})).collect();
            let mut order: Vec<usize> = (0..names.len()).collect();
            fastrand::Rng::with_seed(seed).shuffle(&mut order);
            let responses: Vec<Value> = order.iter().map(|&k| json!({"functionResponse": {"name": names[k], "response": {"output": format!("r{k}")}}})).collect();
            let v = json!([{"role": "user", "parts": [{"text": "go"}]}, {"role": "model", "parts": calls}, {"role": "user", "parts": responses}]);
            let t = import(&mut Input::Json(v), "g").unwrap().remove(0);
            prop_assert!(crate::trace::import::pairing_problems(&t).is_empty());
            for m in &t.messages[2..] {
                let k = names.iter().position(|n| Some(n.as_str()) == m.name.as_deref()).unwrap();
                prop_assert_eq!(&m.content, &format!("r{k}"));
                let call = t.messages[1].tool_calls.iter().find(|c| Some(&c.id) == m.tool_call_id.as_ref()).unwrap();
                prop_assert_eq!(&call.name, &names[k]);
            }
        }
    }
}
