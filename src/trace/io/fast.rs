//! Fast path of canonical JSONL reading: a line goes straight into the trace model by typed
//! deserialization (no intermediate `serde_json::Value` tree, no path tracking), and any line that
//! is not plain — an unknown or duplicate field, a `null` where the model has no `Option`, a
//! missing required field, bad UTF-8 — is left to the general path, which then decides exactly as
//! it always did (and names the JSON path of a bad field). So the fast path changes speed only:
//! whenever it returns a line, the general path would have returned the same one.
//!
//! Key order: tool-call `arguments` are still `serde_json::Value` maps built by the same parser
//! with `preserve_order`, so they keep the recorded order that token counting depends on.

use crate::trace::model::{ContextMarker, Message, Role, ToolCall, TraceLine, TraceMeta, Usage};
use serde::{Deserialize, Deserializer};

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum LineType {
    Header,
    Message,
    Marker,
}

/// A field that must not be `null` when present (the model's type has no `Option` there, so the
/// general path refuses `null`): present → `Some`, absent → `None` via `#[serde(default)]`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Every field a canonical line of any kind may carry. Unknown fields are refused here (the
/// general path ignores them; it gets those lines).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnyLine {
    #[serde(rename = "type")]
    ty: LineType,
    // header
    schema_version: Option<u64>,
    meta: Option<TraceMeta>,
    // message
    role: Option<Role>,
    #[serde(default, deserialize_with = "present")]
    content: Option<String>,
    #[serde(default, deserialize_with = "present")]
    tool_calls: Option<Vec<ToolCall>>,
    tool_call_id: Option<String>,
    name: Option<String>,
    usage: Option<Usage>,
    reasoning: Option<String>,
    #[serde(default, deserialize_with = "present")]
    is_error: Option<bool>,
    /// A message's optional `kind`, or a marker's required one.
    kind: Option<String>,
    timestamp: Option<String>,
    // marker
    #[serde(default, deserialize_with = "present")]
    index: Option<usize>,
    detail: Option<String>,
    tokens_before: Option<u64>,
}

/// One canonical line, or `None` when the general path must decide. The header's
/// `schema_version` is not range-checked here (callers do, as the general path does).
pub(crate) fn parse_line(line: &[u8]) -> Option<TraceLine> {
    let text = std::str::from_utf8(line).ok()?;
    let l: AnyLine = serde_json::from_str(text).ok()?;
    Some(match l.ty {
        LineType::Header => TraceLine::Header {
            schema_version: u32::try_from(l.schema_version?).ok()?,
            meta: l.meta?,
        },
        // A struct literal (not `..`): a new `Message` field must be handled here too.
        LineType::Message => TraceLine::Message(Message {
            role: l.role?,
            content: l.content.unwrap_or_default(),
            tool_calls: l.tool_calls.unwrap_or_default(),
            tool_call_id: l.tool_call_id,
            name: l.name,
            usage: l.usage,
            reasoning: l.reasoning,
            is_error: l.is_error.unwrap_or(false),
            kind: l.kind,
            timestamp: l.timestamp,
        }),
        LineType::Marker => TraceLine::Marker(ContextMarker {
            index: l.index?,
            kind: l.kind?,
            detail: l.detail,
            tokens_before: l.tokens_before,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The general path's reading of a line (internally tagged `TraceLine` via a `Value`).
    fn general(line: &str) -> Option<TraceLine> {
        let v: Value = serde_json::from_str(line).ok()?;
        serde_json::from_value(v).ok()
    }

    #[test]
    fn plain_lines_read_as_the_general_path_reads_them() {
        for line in [
            r#"{"type":"header","schema_version":1,"meta":{"id":"x","source_format":"openai","tools":[{"z":1,"a":2}]}}"#,
            r#"{"type":"message","role":"user","content":"h\u00e9 \"q\" \n"}"#,
            r#"{"type":"message","role":"assistant","tool_calls":[{"id":"c","name":"f","arguments":{"z":[1,{"y":null}],"a":"b"}}],"usage":{"input":3,"output":1},"is_error":true,"kind":"k","timestamp":"t","reasoning":"r"}"#,
            r#"{"type":"message","role":"tool","content":"","tool_call_id":"c","name":"f","usage":null}"#,
            r#"{"type":"marker","index":3,"kind":"compaction","detail":"auto","tokens_before":7}"#,
        ] {
            let fast = parse_line(line.as_bytes()).unwrap_or_else(|| panic!("not fast: {line}"));
            assert_eq!(Some(fast), general(line), "{line}");
        }
        let Some(TraceLine::Message(m)) = parse_line(
            br#"{"type":"message","role":"assistant","tool_calls":[{"id":"c","name":"f","arguments":{"z":1,"a":2,"m":3}}]}"#,
        ) else {
            panic!("expected a message")
        };
        let keys: Vec<&str> = m.tool_calls[0]
            .arguments
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["z", "a", "m"], "recorded argument order is kept");
    }

    #[test]
    fn anything_unusual_is_left_to_the_general_path() {
        for line in [
            // unknown field (the general path ignores it)
            r#"{"type":"message","role":"user","content":"a","extra":1}"#,
            // duplicate field (the general path keeps the last)
            r#"{"type":"message","role":"user","content":"a","content":"b"}"#,
            r#"{"type":"message","type":"marker","index":0,"kind":"k","role":"user"}"#,
            // null where the model has no Option
            r#"{"type":"message","role":"user","content":null}"#,
            r#"{"type":"marker","index":0,"kind":null}"#,
            // missing required fields
            r#"{"type":"message","content":"a"}"#,
            r#"{"type":"marker","kind":"k"}"#,
            r#"{"type":"header","schema_version":1}"#,
            r#"{"type":"header","meta":{"id":"x","source_format":"openai"}}"#,
            // wrong types, unknown kinds, not an object, trailing text
            r#"{"type":"message","role":"robot"}"#,
            r#"{"type":"note"}"#,
            r#"[1]"#,
            r#"{"type":"message","role":"user"} x"#,
        ] {
            assert!(parse_line(line.as_bytes()).is_none(), "{line}");
        }
        assert!(
            parse_line(b"{\"type\":\"message\",\"role\":\"user\",\"content\":\"\xff\"}").is_none()
        );
    }
}
