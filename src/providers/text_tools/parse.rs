//! Text tool protocol, incoming side: a model reply parsed tolerantly into an answer, a tool
//! call or a malformed call with the reason.

use serde_json::{Map, Value};

use super::super::ToolDef;
use super::render::required_names;

/// What a reply means under the text protocol.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// No call: the reply is the answer.
    Answer(String),
    /// A usable call. `prose` is the text before it (trimmed), often empty.
    Call {
        prose: String,
        name: String,
        arguments: Value,
    },
    /// A call was attempted but cannot be used; `reason` is told to the model.
    Malformed { reason: String },
}

/// A JSON candidate found in a reply.
struct Candidate<'a> {
    /// Byte offset where the candidate (its fence, or its `{`) starts.
    start: usize,
    fenced: bool,
    text: &'a str,
}

/// Fenced code blocks whose tag is empty or JSON-like (blocks in other languages are left to
/// the bare-object scan, so a shell `{ …; }` in an answer is not a malformed call).
fn fenced_blocks(text: &str) -> Vec<Candidate<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(open) = text[pos..].find("```").map(|i| pos + i) {
        let after = open + 3;
        let line_end = text[after..].find('\n').map_or(text.len(), |i| after + i);
        let tag = text[after..line_end].trim().to_ascii_lowercase();
        // ```{"tool": …}``` on one line: no tag, the body starts right after the fence.
        let (body_start, tag) = if tag.starts_with('{') {
            (after, String::new())
        } else {
            ((line_end + 1).min(text.len()), tag)
        };
        let (body_end, next) = match text[body_start..].find("```") {
            Some(i) => (body_start + i, body_start + i + 3),
            // An unclosed fence (reply cut by max_tokens, or the model forgot): to the end.
            None => (text.len(), text.len()),
        };
        let body = text[body_start..body_end].trim();
        let jsonish = matches!(tag.as_str(), "" | "json" | "json5" | "jsonc" | "tool_call");
        if jsonish && !body.is_empty() {
            out.push(Candidate {
                start: open,
                fenced: true,
                text: body,
            });
        }
        pos = next;
    }
    out
}

/// Bare JSON objects: each `{` from which one complete JSON object parses (nested objects of an
/// earlier candidate are skipped).
fn bare_objects(text: &str) -> Vec<Candidate<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(i) = text[pos..].find('{').map(|i| pos + i) {
        let mut stream = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Object(_))) => {
                let end = i + stream.byte_offset();
                out.push(Candidate {
                    start: i,
                    fenced: false,
                    text: &text[i..end],
                });
                pos = end;
            }
            _ => pos = i + 1,
        }
    }
    out
}

/// Removes commas that directly precede `}` or `]` outside strings (a frequent small-model
/// slip). Returns `None` when there was nothing to repair.
fn repair_trailing_commas(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut changed = false;
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}' | ']')) {
                changed = true;
                continue;
            }
        }
        out.push(c);
    }
    changed.then_some(out)
}

fn parse_json(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(text).or_else(|e| match repair_trailing_commas(text) {
        Some(fixed) => serde_json::from_str(&fixed).map_err(|_| e),
        None => Err(e),
    })
}

const NAME_KEYS: [&str; 4] = ["tool", "name", "tool_name", "function"];
const ARG_KEYS: [&str; 4] = ["arguments", "args", "parameters", "input"];

/// The tool name and raw arguments an object carries, if it names a tool at all.
fn name_and_args(o: &Map<String, Value>, tools: &[ToolDef]) -> Option<(String, Option<Value>)> {
    // OpenAI's own shape: {"type": "function", "function": {"name": …, "arguments": "…"}}.
    if let Some(Value::Object(f)) = o.get("function") {
        if let Some(Value::String(n)) = f.get("name") {
            return Some((n.clone(), f.get("arguments").cloned()));
        }
    }
    for k in NAME_KEYS {
        if let Some(Value::String(n)) = o.get(k) {
            let args = ARG_KEYS.iter().find_map(|a| o.get(*a)).cloned();
            return Some((n.clone(), args));
        }
    }
    // {"grep": {"pattern": "x"}}: the tool name as the only key.
    if o.len() == 1 {
        let (k, v) = o.iter().next()?;
        if v.is_object() && tools.iter().any(|t| &t.name == k) {
            return Some((k.clone(), Some(v.clone())));
        }
    }
    None
}

/// Checks a named call against the tools; the arguments normalized to an object.
fn validate(name: &str, args: Option<Value>, tools: &[ToolDef]) -> Result<Value, String> {
    let Some(tool) = tools.iter().find(|t| t.name == name) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return Err(format!(
            "there is no tool named \"{name}\"; the tools are: {}",
            names.join(", ")
        ));
    };
    let args = match args {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) => match parse_json(&s) {
            Ok(v @ Value::Object(_)) => v,
            _ if s.trim().is_empty() => Value::Object(Map::new()),
            _ => {
                return Err(format!(
                    "the arguments of {name} must be a JSON object, got the string {}",
                    Value::String(s.clone())
                ))
            }
        },
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            return Err(format!(
                "the arguments of {name} must be a JSON object, got {other}"
            ))
        }
    };
    let missing: Vec<String> = required_names(&tool.parameters)
        .into_iter()
        .filter(|r| args.get(r).is_none_or(Value::is_null))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{name} needs the argument{} {}",
            if missing.len() > 1 { "s" } else { "" },
            missing
                .iter()
                .map(|m| format!("\"{m}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(args)
}

/// Reads a reply under the text protocol (see the module docs for the accepted shapes). The
/// first usable call wins; with none, the first problem of a fenced block or of an object that
/// names a tool is reported; a reply with neither is an answer.
pub fn parse_reply(text: &str, tools: &[ToolDef]) -> Reply {
    let fenced = fenced_blocks(text);
    let candidates = if fenced.is_empty() {
        bare_objects(text)
    } else {
        fenced
    };
    let mut first_problem: Option<String> = None;
    for c in candidates {
        let problem = match parse_json(c.text) {
            Err(e) if c.fenced => format!("the JSON block is not valid JSON ({e})"),
            Err(_) => continue,
            Ok(Value::Object(o)) => match name_and_args(&o, tools) {
                Some((name, args)) => match validate(&name, args, tools) {
                    Ok(arguments) => {
                        return Reply::Call {
                            prose: prose_before(&text[..c.start]),
                            name,
                            arguments,
                        }
                    }
                    Err(p) => p,
                },
                None if c.fenced => {
                    "the JSON block has no \"tool\" field naming the tool to call".to_string()
                }
                None => continue,
            },
            Ok(other) if c.fenced => {
                format!(
                    "the JSON block must be an object, got {}",
                    crate::output::json_kind(&other)
                )
            }
            Ok(_) => continue,
        };
        first_problem.get_or_insert(problem);
    }
    match first_problem {
        Some(reason) => Reply::Malformed { reason },
        None => Reply::Answer(text.trim().to_string()),
    }
}

/// The text before a call, without an opening `<tool_call>` tag (Qwen's native format) or the
/// opening fence of a block in another language.
fn prose_before(text: &str) -> String {
    let t = text.trim_end();
    let t = t.strip_suffix("<tool_call>").unwrap_or(t).trim_end();
    let t = match t.rsplit_once('\n') {
        Some((head, last)) if last.trim_start().starts_with("```") => head,
        None if t.trim_start().starts_with("```") => "",
        _ => t,
    };
    t.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{call, tools};
    use super::*;
    use serde_json::json;

    fn malformed(reply: &str) -> String {
        match parse_reply(reply, &tools()) {
            Reply::Malformed { reason } => reason,
            other => panic!("expected malformed for {reply:?}, got {other:?}"),
        }
    }

    #[test]
    fn fenced_calls_as_small_models_write_them() {
        let t = tools();
        let cases: Vec<(&str, Reply)> = vec![
            // Qwen2.5-Coder-0.5B, verbatim.
            (
                "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"staging\"}}\n```",
                call("grep", json!({"pattern": "staging"})),
            ),
            // Upper-case tag, `name` + `parameters`, trailing prose.
            (
                "```JSON\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"notes/db.md\"}}\n```\nI will read it.",
                call("read_file", json!({"path": "notes/db.md"})),
            ),
            // No language tag; `args`; pretty-printed with a trailing comma.
            (
                "```\n{\n  \"tool\": \"grep\",\n  \"args\": {\"pattern\": \"port\",},\n}\n```",
                call("grep", json!({"pattern": "port"})),
            ),
            // Arguments JSON-encoded as a string (the OpenAI wire shape).
            (
                "```json\n{\"type\": \"function\", \"function\": {\"name\": \"grep\", \"arguments\": \"{\\\"pattern\\\": \\\"db\\\"}\"}}\n```",
                call("grep", json!({"pattern": "db"})),
            ),
            // One line, the JSON right after the fence.
            (
                "```{\"tool\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}```",
                call("read_file", json!({"path": "a.txt"})),
            ),
            // Unclosed fence (reply cut at max_tokens after the object).
            (
                "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}",
                call("grep", json!({"pattern": "x"})),
            ),
            // A call inside a block tagged with another language: found by the bare scan.
            (
                "```python\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"y\"}}\n```",
                call("grep", json!({"pattern": "y"})),
            ),
            // Tool name as the only key.
            (
                "```json\n{\"read_file\": {\"path\": \"b.md\"}}\n```",
                call("read_file", json!({"path": "b.md"})),
            ),
        ];
        for (reply, want) in cases {
            assert_eq!(parse_reply(reply, &t), want, "reply: {reply}");
        }
    }

    #[test]
    fn bare_json_and_tagged_calls() {
        let t = tools();
        assert_eq!(
            parse_reply(
                "{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"port\"}}",
                &t
            ),
            call("grep", json!({"pattern": "port"}))
        );
        // Qwen's native template output.
        assert_eq!(
            parse_reply(
                "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"x.py\"}}\n</tool_call>",
                &t
            ),
            call("read_file", json!({"path": "x.py"}))
        );
        // Prose before the call is kept; the call's nested object is not a second candidate.
        assert_eq!(
            parse_reply(
                "Let me search the notes first.\n```js\n{\"tool\": \"grep\", \"input\": {\"pattern\": \"TODO\"}}\n``` and then read.",
                &t
            ),
            Reply::Call {
                prose: "Let me search the notes first.".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "TODO"}),
            }
        );
        // Missing arguments are fine when nothing is required… and an error when something is.
        assert!(matches!(
            parse_reply("{\"tool\": \"grep\"}", &t),
            Reply::Malformed { .. }
        ));
    }

    #[test]
    fn answers_are_not_calls() {
        let t = tools();
        for reply in [
            "The staging database port is 6117.",
            "  The port is 6117 (see notes/db.md).\n",
            // Braces in prose, and bare JSON that names no tool, are part of the answer.
            "Use {curly braces} for templates; the config is {\"port\": 6117}.",
            "{\"answer\": \"6117\"}",
            // Code that is not JSON, also when it starts with a brace.
            "```python\nprint('hi')\n```",
            "Run this:\n```bash\n{ make dev; } 2>&1\n```",
            "",
        ] {
            assert_eq!(
                parse_reply(reply, &t),
                Reply::Answer(reply.trim().to_string()),
                "reply: {reply:?}"
            );
        }
    }

    #[test]
    fn malformed_calls_say_what_is_wrong() {
        // Invalid JSON inside a json fence (the model merged two objects).
        let r = malformed(
            "```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"port\": \"6117\"}}\n```",
        );
        assert!(
            r.starts_with("the JSON block is not valid JSON (expected `,`"),
            "{r}"
        );
        let r = malformed("```json\n{\"tool\": \"search\", \"arguments\": {\"q\": \"x\"}}\n```");
        assert_eq!(
            r,
            "there is no tool named \"search\"; the tools are: grep, read_file"
        );
        let r = malformed("```json\n{\"pattern\": \"port\"}\n```");
        assert_eq!(
            r,
            "the JSON block has no \"tool\" field naming the tool to call"
        );
        let r =
            malformed("```json\n{\"tool\": \"read_file\", \"arguments\": {\"offset\": 3}}\n```");
        assert_eq!(r, "read_file needs the argument \"path\"");
        let r = malformed("```json\n{\"tool\": \"grep\", \"arguments\": [\"port\"]}\n```");
        assert_eq!(
            r,
            "the arguments of grep must be a JSON object, got [\"port\"]"
        );
        let r = malformed("```json\n[{\"tool\": \"grep\"}]\n```");
        assert_eq!(r, "the JSON block must be an object, got an array");
        let r = malformed("{\"name\": \"grep\", \"arguments\": \"port\"}");
        assert_eq!(
            r,
            "the arguments of grep must be a JSON object, got the string \"port\""
        );
        let r = malformed("{\"tool\": \"grep\", \"arguments\": {\"pattern\": null}}");
        assert_eq!(r, "grep needs the argument \"pattern\"");
    }

    #[test]
    fn first_usable_call_wins_over_earlier_problems() {
        let reply = "```json\n{\"tool\": \"find\"}\n```\nSorry:\n```json\n{\"tool\": \"grep\", \"arguments\": {\"pattern\": \"a\"}}\n```\n```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n```";
        match parse_reply(reply, &tools()) {
            Reply::Call {
                name,
                arguments,
                prose,
            } => {
                assert_eq!(name, "grep");
                assert_eq!(arguments, json!({"pattern": "a"}));
                assert!(
                    prose.starts_with("```json\n{\"tool\": \"find\"}"),
                    "{prose}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn trailing_comma_repair_leaves_strings_alone() {
        assert_eq!(
            repair_trailing_commas("{\"a\": \"x,}\", \"b\": [1, 2,],}").as_deref(),
            Some("{\"a\": \"x,}\", \"b\": [1, 2]}")
        );
        assert_eq!(repair_trailing_commas("{\"a\": \"\\\",}\"}"), None);
        assert_eq!(repair_trailing_commas("{\"a\": 1}"), None);
    }
}
