//! Golden-fixture role lines → one canonical trace: the `trace.jsonl` of a deepagents golden
//! fixture folder (`ctxbench replay --fixture DIR`), JSON Lines of `{"role", "content",
//! "tool_calls"?: [{"id", "name", "args"}], "tool_call_id"?, "name"?}` (LangChain's message
//! dump). The reader is `trace::io`'s (one line parser for canonical and role lines); a file on
//! disk is streamed through it by `file::read` without building a `Value` per line.
//!
//! Detection: role lines (no `type`) where a tool call is LangChain-shaped (`name` beside `id`,
//! no `function` object). Role lines without any tool call read the same as OpenAI chat lines
//! and stay `openai`.

use super::detect::Shape;
use super::json::{Located, Res};
use super::{Importer, Input};
use crate::trace::io::{parse_line, Line};
use crate::trace::model::{SourceFormat, Trace, TraceMeta};
use serde_json::{Map, Value};

pub const IMPORTER: Importer = Importer {
    format: SourceFormat::Golden,
    detect,
    import,
};

/// A role line: an object with `role` and no `type`.
pub fn is_role_line(o: &Map<String, Value>) -> bool {
    o.contains_key("role") && !o.contains_key("type")
}

/// Does this role line carry a LangChain-shaped tool call (`{id, name, args?}`)?
pub fn has_langchain_call(o: &Map<String, Value>) -> bool {
    o.get("tool_calls")
        .and_then(Value::as_array)
        .is_some_and(|calls| {
            calls.iter().any(|c| {
                c.as_object()
                    .is_some_and(|c| c.contains_key("name") && !c.contains_key("function"))
            })
        })
}

fn detect(shape: Shape<'_>) -> bool {
    match shape {
        Shape::Lines(lines, first) => {
            is_role_line(first)
                && lines
                    .iter()
                    .any(|(_, v)| v.as_object().is_some_and(has_langchain_call))
        }
        Shape::Object(o) => is_role_line(o) && has_langchain_call(o),
        Shape::Array(..) => false,
    }
}

/// Each line through `trace::io::parse_line` (the reader of files on disk), so an input held in
/// memory reads exactly as a streamed file does.
fn import(input: &mut Input, stem: &str) -> Res<Vec<Trace>> {
    let lines = match input {
        Input::Lines(lines) => std::mem::take(lines),
        Input::Json(v) => vec![(1, std::mem::take(v))],
    };
    let mut t = Trace::new(TraceMeta::new(stem, SourceFormat::Golden));
    for (n, v) in lines {
        let bytes = serde_json::to_vec(&v).map_err(|e| Located::new(format!("line {n}"), e.to_string()))?;
        match parse_line(&bytes, n)? {
            Line::Role(m) => t.messages.push(m),
            _ => {
                return Err(Located::new(
                    format!("line {n}: $.type"),
                    "a canonical line in a file of role lines; expected {\"role\", \"content\", …} without \"type\"",
                ))
            }
        }
    }
    Ok(vec![t])
}

#[cfg(test)]
mod tests {
    use super::super::{import_bytes, FileContent};
    use crate::trace::model::SourceFormat;

    #[test]
    fn role_lines_with_langchain_calls_are_golden_and_plain_ones_openai() {
        let golden = b"{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c\",\"name\":\"ls\",\"args\":{\"z\":1,\"a\":2}}]}\n{\"role\":\"tool\",\"content\":\"r\",\"tool_call_id\":\"c\",\"name\":\"ls\"}\n";
        let Ok(FileContent::Traces(t)) = import_bytes(golden, "g", None, None) else {
            panic!("golden lines not imported")
        };
        assert_eq!(t[0].meta.source_format, SourceFormat::Golden);
        assert_eq!(t[0].messages.len(), 3);
        let keys: Vec<&String> = t[0].messages[1].tool_calls[0]
            .arguments
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["z", "a"], "argument order is kept");
        let plain = b"{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\n";
        let Ok(FileContent::Traces(t)) = import_bytes(plain, "p", None, None) else {
            panic!("plain lines not imported")
        };
        assert_eq!(t[0].meta.source_format, SourceFormat::Openai);
    }
}
