//! The approximate counters the peers use: LangChain's `count_tokens_approximately`, exactly as
//! deepagents 0.7.32 runs it — `ceil(chars(m) / chars_per_token) + 3` per message, 4.0
//! chars/token (3.3 for Anthropic models), tool schemas as one `ceil` over their `json.dumps`.
//!
//! `chars(m)` = content + `repr(tool_calls)` (assistant messages with calls, Python repr of
//! `[{'name', 'args', 'id', 'type': 'tool_call'}]`) + `tool_call_id` (tool messages) + role
//! (`system`/`user`/`assistant`/`tool`) + name (when present). Lengths are Unicode code points;
//! the division is an IEEE-754 double division, as in Python.

mod printable;
pub(crate) mod pyrepr;

use super::TokenCounter;
use crate::trace::memo::MessageMemo;
use crate::trace::{Message, Role};
use std::cell::RefCell;
use std::sync::Arc;

/// Number of Unicode code points (`len()` in Python); a fast path for ASCII text.
pub fn code_points(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// LangChain-compatible approximate counter. Counts Unicode code points, not bytes.
#[derive(Clone, Debug)]
pub struct ApproxCounter {
    pub name: String,
    pub chars_per_token: f64,
    pub per_message: u64,
}

impl ApproxCounter {
    pub fn new(name: &str, chars_per_token: f64) -> Self {
        ApproxCounter {
            name: name.to_string(),
            chars_per_token,
            per_message: 3,
        }
    }

    /// `approx`: 4.0 chars/token, LangChain's default.
    pub fn langchain() -> Self {
        Self::new("approx", 4.0)
    }

    /// `approx-anthropic`: 3.3 chars/token, what LangChain uses for `anthropic-chat` models.
    pub fn anthropic() -> Self {
        Self::new("approx-anthropic", 3.3)
    }

    fn ceil_div(&self, chars: usize) -> u64 {
        (chars as f64 / self.chars_per_token).ceil() as u64
    }

    /// Characters the counter attributes to one message (see the module docs).
    pub fn message_chars(message: &Message) -> usize {
        code_points(&message.content) + Self::chars_besides_content(message)
    }

    /// [`message_chars`](Self::message_chars) but the content's.
    fn chars_besides_content(message: &Message) -> usize {
        let mut chars = role_name(message.role).len();
        if message.role == Role::Assistant && !message.tool_calls.is_empty() {
            chars += tool_calls_repr_len(message);
        }
        if message.role == Role::Tool {
            if let Some(id) = &message.tool_call_id {
                chars += code_points(id);
            }
        }
        if let Some(name) = &message.name {
            chars += code_points(name);
        }
        chars
    }
}

thread_local! {
    /// `(code points of the content, message chars)` of shared messages, per thread
    /// ([`MessageMemo`]: remembered while each message lives).
    static SHARED_CHARS: RefCell<MessageMemo<(usize, usize)>> = RefCell::default();
}

/// `(code points of the content, message chars)` of `message`.
fn shared_chars(message: &Arc<Message>) -> (usize, usize) {
    SHARED_CHARS.with(|memo| {
        *memo.borrow_mut().get_or_insert_with(message, || {
            let content = code_points(&message.content);
            (
                content,
                content + ApproxCounter::chars_besides_content(message),
            )
        })
    })
}

impl ApproxCounter {
    /// [`message_chars`](Self::message_chars) of a shared message, remembered while the
    /// message lives (per thread): the trace messages a sweep's units share are counted once
    /// per thread, not once per unit and question.
    pub fn shared_message_chars(message: &Arc<Message>) -> usize {
        shared_chars(message).1
    }

    /// [`code_points`] of a shared message's content, remembered as
    /// [`shared_message_chars`](Self::shared_message_chars) is.
    pub fn shared_content_chars(message: &Arc<Message>) -> usize {
        shared_chars(message).0
    }
}

/// The role string LangChain's counter adds (`HumanMessage` → `user`, `AIMessage` → `assistant`).
fn role_name(role: Role) -> &'static str {
    role.as_str()
}

/// Python `repr(message.tool_calls)` as LangChain stores them:
/// `[{'name': …, 'args': {…}, 'id': …, 'type': 'tool_call'}]`.
pub fn tool_calls_repr(message: &Message) -> String {
    let mut out = String::with_capacity(64);
    out.push('[');
    for (k, call) in message.tool_calls.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        out.push_str("{'name': ");
        pyrepr::py_repr_str(&call.name, &mut out);
        out.push_str(", 'args': ");
        pyrepr::py_repr_value(&call.arguments, &mut out);
        out.push_str(", 'id': ");
        pyrepr::py_repr_str(&call.id, &mut out);
        out.push_str(", 'type': 'tool_call'}");
    }
    out.push(']');
    out
}

/// `tool_calls_repr(message).chars().count()`, computed without building the string.
pub fn tool_calls_repr_len(message: &Message) -> usize {
    const FIXED: usize =
        "{'name': ".len() + ", 'args': ".len() + ", 'id': ".len() + ", 'type': 'tool_call'}".len();
    let calls = &message.tool_calls;
    2 + 2 * calls.len().saturating_sub(1)
        + calls
            .iter()
            .map(|c| {
                FIXED
                    + pyrepr::py_repr_str_len(&c.name)
                    + pyrepr::py_repr_value_len(&c.arguments)
                    + pyrepr::py_repr_str_len(&c.id)
            })
            .sum::<usize>()
}

/// Python `json.dumps(schema)` of one tool schema (default separators, ASCII-escaped).
pub fn tool_schema_json(schema: &serde_json::Value) -> String {
    let mut out = String::new();
    pyrepr::py_json_dumps(schema, &mut out);
    out
}

impl TokenCounter for ApproxCounter {
    fn name(&self) -> &str {
        &self.name
    }
    fn count_text(&self, text: &str) -> u64 {
        self.ceil_div(code_points(text))
    }
    fn count_message(&self, message: &Message) -> u64 {
        self.ceil_div(Self::message_chars(message)) + self.per_message
    }
    fn count_shared(&self, message: &Arc<Message>) -> u64 {
        self.ceil_div(Self::shared_message_chars(message)) + self.per_message
    }
    fn count_shared_content(&self, message: &Arc<Message>) -> u64 {
        self.ceil_div(Self::shared_content_chars(message))
    }
    fn count_tools(&self, tools: &[serde_json::Value]) -> u64 {
        let chars: usize = tools
            .iter()
            .map(|t| tool_schema_json(t).chars().count())
            .sum();
        self.ceil_div(chars)
    }
    fn counts_characters_only(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ToolCall;
    use serde_json::json;

    #[test]
    fn counts_role_content_and_per_message_overhead() {
        let c = ApproxCounter::langchain();
        // "user" (4) + 12 chars = 16 → 4 tokens + 3.
        assert_eq!(c.count_message(&Message::user("hello world!")), 7);
        // 17 chars → ceil(4.25) = 5, + 3.
        assert_eq!(c.count_message(&Message::user("hello world!!")), 8);
    }

    #[test]
    fn tool_message_counts_id_and_name() {
        let c = ApproxCounter::langchain();
        let m = Message::tool("call_1", "bash", "ok");
        // content 2 + id 6 + role 4 + name 4 = 16 → 4 + 3.
        assert_eq!(c.count_message(&m), 7);
    }

    #[test]
    fn assistant_counts_python_repr_of_tool_calls() {
        let m = Message::assistant(
            "",
            vec![ToolCall {
                id: "call_1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls -la"}),
            }],
        );
        assert_eq!(
            tool_calls_repr(&m),
            "[{'name': 'bash', 'args': {'command': 'ls -la'}, 'id': 'call_1', 'type': 'tool_call'}]"
        );
        let chars = ApproxCounter::message_chars(&m);
        assert_eq!(chars, tool_calls_repr(&m).len() + "assistant".len());
    }

    /// A shared message's count is remembered only while it is that message: a changed copy
    /// (`Arc::make_mut`) and messages allocated after others were freed are counted afresh.
    #[test]
    fn shared_counts_are_the_counts_of_the_messages_they_remember() {
        let c = ApproxCounter::langchain();
        let mut m = Arc::new(Message::user("hello world!"));
        let other = m.clone();
        assert_eq!(c.count_shared(&m), 7);
        assert_eq!(c.count_shared(&m), 7);
        assert_eq!(c.count_shared_content(&m), 3);
        Arc::make_mut(&mut m)
            .content
            .push_str(" and more text here");
        assert_eq!(c.count_shared(&m), c.count_message(&m));
        assert_eq!(c.count_shared(&other), 7);
        drop(other);
        let mut unique = Arc::new(Message::user("x"));
        assert_eq!(c.count_shared(&unique), c.count_message(&unique));
        Arc::make_mut(&mut unique).content = "a much longer text than before".into();
        assert_eq!(c.count_shared(&unique), c.count_message(&unique));
        // Freed and allocated again, many times over (past the entries kept).
        for k in 0..3 * MessageMemo::<(usize, usize)>::KEPT {
            let m = Arc::new(Message::user("y".repeat(k % 50)));
            assert_eq!(c.count_shared(&m), c.count_message(&m), "{k}");
            assert_eq!(c.count_shared_content(&m), c.count_text(&m.content), "{k}");
        }
        // Freed messages' entries are dropped as the memo grows: it holds the live ones and at
        // most as many freed ones again plus a floor.
        SHARED_CHARS
            .with(|memo| assert!(memo.borrow().len() <= 2 + MessageMemo::<(usize, usize)>::FLOOR));
    }

    #[test]
    fn code_points_not_bytes_and_anthropic_ratio() {
        let c = ApproxCounter::anthropic();
        // 9 code points ("user" + "ééééé"), 14 bytes: ceil(9 / 3.3) = 3, + 3.
        assert_eq!(c.count_message(&Message::user("ééééé")), 6);
    }
}
