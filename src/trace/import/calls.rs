//! Tool-call bookkeeping every importer shares: canonical call ids ([`Calls`]) and the parsing
//! of a recorded `tool_calls` list ([`tool_calls`]) in the OpenAI shape or a flat one.

use super::json::{parse_arguments, Node, Res};
use crate::output::quoted;
use crate::trace::model::ToolCall;
use std::collections::HashSet;

/// Tool calls waiting for their results, with call-id rewriting: a recorded id that was already
/// used in the trace gets a unique `<id>__<n>` and a warning; a result is paired with the most
/// recent open call of its recorded id (so reused ids pair with the preceding call).
#[derive(Debug, Default)]
pub struct Calls {
    used: HashSet<String>,
    /// (recorded id, canonical id, tool name), in issue order.
    open: Vec<(String, String, String)>,
    generated: usize,
}

impl Calls {
    /// Register a call; returns its canonical id. An empty recorded id gets `call_<n>`.
    pub fn issue(
        &mut self,
        recorded: &str,
        name: &str,
        at: &str,
        warnings: &mut Vec<String>,
    ) -> String {
        let canonical = if recorded.is_empty() {
            loop {
                self.generated += 1;
                let c = format!("call_{}", self.generated);
                if !self.used.contains(&c) {
                    break c;
                }
            }
        } else if self.used.contains(recorded) {
            let mut n = 2;
            let c = loop {
                let c = format!("{recorded}__{n}");
                if !self.used.contains(&c) {
                    break c;
                }
                n += 1;
            };
            warnings.push(format!(
                "{at}: tool call id {recorded} was already used in this trace; renamed to {c}",
                recorded = quoted(recorded),
                c = quoted(&c)
            ));
            c
        } else {
            recorded.to_string()
        };
        self.used.insert(canonical.clone());
        self.open
            .push((recorded.to_string(), canonical.clone(), name.to_string()));
        canonical
    }

    /// The result for `recorded`: (canonical id, tool name) of the most recent open call with
    /// that recorded id, which is then closed.
    pub fn answer(&mut self, recorded: &str) -> Option<(String, String)> {
        let pos = self.open.iter().rposition(|(r, _, _)| r == recorded)?;
        let (_, c, n) = self.open.remove(pos);
        Some((c, n))
    }

    /// The call a tool result answers: by its recorded id, or the oldest open call when it
    /// records none. A result that answers no open call keeps its recorded id, and a warning
    /// naming `at` (the message's JSON path) says so.
    pub fn answer_or_warn(
        &mut self,
        recorded: Option<&str>,
        at: impl std::fmt::Display,
        warnings: &mut Vec<String>,
    ) -> (String, String) {
        let answered = match recorded {
            Some(r) => self.answer(r),
            None => self.answer_next(),
        };
        answered.unwrap_or_else(|| {
            let recorded = recorded.unwrap_or("");
            warnings.push(format!(
                "{at}: tool result for {} follows no open tool call",
                quoted(recorded)
            ));
            (recorded.to_string(), String::new())
        })
    }

    /// The open call whose canonical id is `canonical`, which is then closed.
    pub fn answer_canonical(&mut self, canonical: &str) -> Option<(String, String)> {
        let pos = self.open.iter().position(|(_, c, _)| c == canonical)?;
        let (_, c, n) = self.open.remove(pos);
        Some((c, n))
    }

    /// The oldest open call (for formats that pair results by position).
    pub fn answer_next(&mut self) -> Option<(String, String)> {
        if self.open.is_empty() {
            None
        } else {
            let (_, c, n) = self.open.remove(0);
            Some((c, n))
        }
    }

    /// The oldest open call named `name` (for formats that pair results by tool name).
    pub fn answer_named(&mut self, name: &str) -> Option<(String, String)> {
        let pos = self.open.iter().position(|(_, _, n)| n == name)?;
        let (_, c, n) = self.open.remove(pos);
        Some((c, n))
    }

    /// Forget every open call: they stay unanswered in the trace (pairing reports them), and no
    /// later result is paired with them.
    pub fn close_open(&mut self) {
        self.open.clear();
    }

    pub fn has_open(&self) -> bool {
        !self.open.is_empty()
    }
}

/// How a recorded tool call is written.
#[derive(Debug, Clone, Copy)]
pub enum CallShape {
    /// OpenAI chat completions: `{"id", "function": {"name", "arguments"}}`, the arguments a
    /// JSON-encoded string or an object (see [`parse_arguments`]).
    OpenAi,
    /// `{<id>, <name>, "arguments": {...}}` with the arguments as recorded (`{}` when absent):
    /// τ²-bench (`id`, `name`), ATIF (`tool_call_id`, `function_name`).
    Flat {
        id: &'static str,
        name: &'static str,
    },
}

/// The calls of a recorded `tool_calls` list (absent or `null`: none), each issued through
/// `calls`, as (recorded id, call with its canonical id).
pub fn tool_calls(
    list: &Node<'_>,
    shape: CallShape,
    calls: &mut Calls,
    warnings: &mut Vec<String>,
) -> Res<Vec<(String, ToolCall)>> {
    let mut out = Vec::new();
    for c in list.opt_items()? {
        c.obj()?;
        let (name, recorded, arguments) = match shape {
            CallShape::OpenAi => {
                let f = c.key("function");
                f.obj()?;
                let name = f.key("name").str()?;
                let recorded = c.key("id").opt_str()?.unwrap_or("");
                (
                    name,
                    recorded,
                    parse_arguments(&f.key("arguments"), warnings)?,
                )
            }
            CallShape::Flat { id, name } => {
                let name = c.key(name).str()?;
                let recorded = c.key(id).opt_str()?.unwrap_or("");
                let args = c.key("arguments");
                let arguments = if args.is_null() {
                    serde_json::json!({})
                } else {
                    args.v.clone()
                };
                (name, recorded, arguments)
            }
        };
        let id = calls.issue(recorded, name, &c.path, warnings);
        out.push((
            recorded.to_string(),
            ToolCall {
                id,
                name: name.to_string(),
                arguments,
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reused_call_ids_pair_with_the_preceding_call() {
        let mut c = Calls::default();
        let mut w = Vec::new();
        let a = c.issue("x", "f", "$.a", &mut w);
        assert_eq!(c.answer("x"), Some((a.clone(), "f".into())));
        let b = c.issue("x", "g", "$.b", &mut w);
        assert_eq!(b, "x__2");
        assert_eq!(w.len(), 1);
        assert_eq!(c.answer("x"), Some(("x__2".into(), "g".into())));
        assert_eq!(c.answer("x"), None);
        assert_eq!(c.issue("", "h", "$", &mut w), "call_1");
    }

    #[test]
    fn both_shapes_parse_and_issue_ids() {
        let v = json!([{"id": "a", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
                       {"function": {"name": "g", "arguments": {}}}]);
        let mut c = Calls::default();
        let mut w = Vec::new();
        let got = tool_calls(&Node::root(&v), CallShape::OpenAi, &mut c, &mut w).unwrap();
        assert_eq!(got[0].0, "a");
        assert_eq!(got[0].1.arguments, json!({"x": 1}));
        assert_eq!(
            (got[1].1.id.as_str(), got[1].1.name.as_str()),
            ("call_1", "g")
        );
        let flat = CallShape::Flat {
            id: "tool_call_id",
            name: "function_name",
        };
        let v = json!([{"tool_call_id": "a", "function_name": "h"}]);
        let got = tool_calls(&Node::root(&v), flat, &mut c, &mut w).unwrap();
        assert_eq!(got[0].1.id, "a__2");
        assert_eq!(got[0].1.arguments, json!({}));
        assert_eq!(w.len(), 1);
        let bad = json!([{"id": "a", "function": "oops"}]);
        let e = tool_calls(&Node::root(&bad), CallShape::OpenAi, &mut c, &mut w).unwrap_err();
        assert_eq!(e.location, "$[0].function");
    }
}
