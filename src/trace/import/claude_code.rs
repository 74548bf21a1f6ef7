//! Claude Code session JSONL → canonical trace.
//!
//! - Assistant records that share `message.id` are one API response split per content block:
//!   they are merged into one assistant message, and its usage is taken once (from the last
//!   record of that id, the latest streaming snapshot). Usage is normalized Anthropic usage, so
//!   `input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens`, the prompt
//!   size of that call.
//! - Tool results come from `message.content` (`tool_result` blocks: what the model saw), never
//!   from the UI copy in `toolUseResult`.
//! - `isMeta: true` user records (hook feedback, command caveats) get `kind: "meta"`; the summary
//!   written after a compaction (`isCompactSummary`) gets `kind: "compaction_summary"`.
//! - `system` records with `subtype: "compact_boundary"` become `compaction` markers
//!   (`tokens_before` from `compactMetadata.preTokens`); other bookkeeping records
//!   (`queue-operation`, `file-history-snapshot`, `summary`, `progress`, other `system`) are
//!   skipped. Sidechain (subagent) records are skipped with a warning: they are another context.

use super::anthropic::{anthropic_usage, assistant_blocks, user_blocks, AssistantParts};
use super::json::{Node, Res};
use super::Calls;
use crate::trace::model::{ContextMarker, Role, SourceFormat, Trace, TraceMeta};
use serde_json::Value;
use std::collections::HashMap;
use super::detect::str_of;
use super::{Importer, Input};

/// Claude Code sessions: JSON Lines of records typed `user|assistant|system|summary|…` carrying
/// a `uuid` or `sessionId`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::ClaudeCode,
    detect: |shape| {
        shape.first_line().is_some_and(|o| {
            str_of(o, "type").is_some_and(|t| RECORD_TYPES.contains(&t))
                && (o.contains_key("uuid")
                    || o.contains_key("sessionId")
                    || o.contains_key("leafUuid"))
        })
    },
    import: |input, stem| match input {
        Input::Lines(lines) => import(std::mem::take(lines), stem),
        // A one-record session is valid JSON as a whole.
        Input::Json(v) => import(vec![(1, std::mem::take(v))], stem),
    },
};

const RECORD_TYPES: [&str; 7] = [
    "user",
    "assistant",
    "system",
    "summary",
    "queue-operation",
    "file-history-snapshot",
    "progress",
];

/// Each record is dropped once converted, so the parsed lines and the trace never coexist whole.
pub fn import(lines: Vec<(usize, Value)>, stem: &str) -> Res<Vec<Trace>> {
    let mut t = Trace::new(TraceMeta::new(stem, SourceFormat::ClaudeCode));
    let mut calls = Calls::default();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut sidechain = 0usize;
    for (n, v) in lines {
        let r = Node::line_root(&v, n);
        r.obj()?;
        let ty = r.key("type").str()?;
        if matches!(ty, "user" | "assistant") && r.key("isSidechain").opt_bool()? == Some(true) {
            sidechain += 1;
            continue;
        }
        if t.meta.task_id.is_none() {
            t.meta.task_id = r.key("sessionId").opt_str()?.map(String::from);
        }
        let timestamp = r.key("timestamp").opt_str()?.map(String::from);
        match ty {
            "user" => {
                let msg = r.key("message");
                msg.obj()?;
                let mut ms = user_blocks(&msg.key("content"), &mut calls, &mut t.meta.warnings)?;
                let kind = if r.key("isCompactSummary").opt_bool()? == Some(true) {
                    Some("compaction_summary")
                } else if r.key("isMeta").opt_bool()? == Some(true) {
                    Some("meta")
                } else {
                    None
                };
                for m in ms.iter_mut() {
                    if m.role == Role::User {
                        m.kind = kind.map(String::from);
                    }
                    m.timestamp = timestamp.clone();
                }
                t.messages.extend(ms);
            }
            "assistant" => {
                let msg = r.key("message");
                msg.obj()?;
                let id = msg.key("id").opt_str()?.unwrap_or("").to_string();
                let mut parts = AssistantParts::default();
                assistant_blocks(
                    &msg.key("content"),
                    &mut parts,
                    &mut calls,
                    &mut t.meta.warnings,
                )?;
                let usage = anthropic_usage(&msg.key("usage"))?;
                if t.meta.model.is_none() {
                    t.meta.model = msg
                        .key("model")
                        .opt_str()?
                        .filter(|m| !m.starts_with('<'))
                        .map(String::from);
                }
                match by_id.get(&id).copied().filter(|_| !id.is_empty()) {
                    Some(i) => {
                        let m = &mut t.messages[i];
                        for text in parts.texts {
                            if !m.content.is_empty() {
                                m.content.push('\n');
                            }
                            m.content.push_str(&text);
                        }
                        m.tool_calls.extend(parts.calls);
                        if !parts.thinking.is_empty() {
                            let more = parts.thinking.join("\n");
                            m.reasoning = Some(match m.reasoning.take() {
                                Some(r) => format!("{r}\n{more}"),
                                None => more,
                            });
                        }
                        if usage.is_some() {
                            m.usage = usage;
                        }
                    }
                    None => {
                        let mut m = parts.into_message();
                        m.usage = usage;
                        m.timestamp = timestamp;
                        if r.key("isApiErrorMessage").opt_bool()? == Some(true) {
                            m.kind = Some("api_error".into());
                        }
                        by_id.insert(id, t.messages.len());
                        t.messages.push(m);
                    }
                }
            }
            "system" if r.key("subtype").opt_str()? == Some("compact_boundary") => {
                let cm = r.key("compactMetadata");
                t.markers.push(ContextMarker {
                    index: t.messages.len(),
                    kind: "compaction".into(),
                    detail: cm.key("trigger").opt_str()?.map(String::from),
                    tokens_before: cm.key("preTokens").opt_u64()?,
                });
            }
            _ => {}
        }
    }
    if sidechain > 0 {
        t.meta.warnings.push(format!(
            "{sidechain} sidechain (subagent) records skipped: they belong to another context"
        ));
    }
    Ok(vec![t])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(v: Vec<Value>) -> Vec<(usize, Value)> {
        v.into_iter().enumerate().map(|(i, v)| (i + 1, v)).collect()
    }

    #[test]
    fn merges_records_of_one_response_and_counts_usage_once() {
        let u = json!({"input_tokens": 1, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 100, "output_tokens": 2});
        let recs = lines(vec![
            json!({"type": "queue-operation", "sessionId": "s"}),
            json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "go"}}),
            json!({"type": "assistant", "message": {"id": "m1", "model": "opus", "content": [{"type": "text", "text": "a"}], "usage": u}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}], "usage": u}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {}}], "usage": u}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}, "toolUseResult": {"stdout": "NOT THIS"}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "y"}]}}),
            json!({"type": "system", "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto", "preTokens": 155000}}),
            json!({"type": "user", "isMeta": true, "message": {"content": "Stop hook feedback"}}),
        ]);
        let t = import(recs, "cc").unwrap().remove(0);
        assert_eq!(t.messages.len(), 5);
        assert_eq!(t.messages[1].content, "a");
        assert_eq!(t.messages[1].tool_calls.len(), 2);
        assert_eq!(t.recorded_usage().input, 111);
        assert_eq!(t.messages[2].content, "x");
        assert_eq!(t.messages[3].name.as_deref(), Some("Read"));
        assert_eq!(t.messages[4].kind.as_deref(), Some("meta"));
        assert_eq!(
            t.markers,
            vec![ContextMarker {
                index: 4,
                kind: "compaction".into(),
                detail: Some("auto".into()),
                tokens_before: Some(155000)
            }]
        );
        assert_eq!(t.meta.task_id.as_deref(), Some("s"));
        assert_eq!(t.meta.model.as_deref(), Some("opus"));
    }

    #[test]
    fn errors_name_the_line() {
        let recs = lines(vec![
            json!({"type": "user", "message": {"content": [{"type": "tool_result"}]}}),
        ]);
        let e = import(recs, "cc").unwrap_err();
        assert_eq!(e.location, "line 1: $.message.content[0].tool_use_id");
    }
}
