//! Rules of the conversation both APIs (OpenAI chat completions and Anthropic Messages) enforce
//! alike, applied once to every request before either wire format encodes it
//! ([`conform`], called by `HttpProvider::chat`). A recorded history breaks them in ways an API
//! answers 400 to:
//!
//! - **Tool names** must match `^[a-zA-Z0-9_-]{1,64}$` (OpenAI `FunctionObject.name`, Anthropic
//!   `tools.N.name`): SWE-agent's CTF traces call `./rock` and `RsaCtfTool.py`, a redacted Codex
//!   name has spaces and brackets. Such a name is sent as [`wire_token`] makes it (invalid
//!   characters → `_`, cut to fit, `_` and a hash of the whole name), the same in tool
//!   declarations, history tool calls and tool results; the answer's tool calls are mapped back.
//! - **Tool-call ids** are sent to OpenAI at most 40 characters long (the live API: "string too
//!   long. Expected a string with maximum length 40"; Gemini CLI ids are 42), and to Anthropic
//!   matching `^[a-zA-Z0-9_-]+$`: an id breaking either becomes a [`wire_token`] of at most 40,
//!   the same for the call and its result.
//! - **Every tool call has its result** right after its turn (OpenAI: "An assistant message with
//!   'tool_calls' must be followed by tool messages responding to each 'tool_call_id'";
//!   Anthropic: "`tool_use` ids were found without `tool_result` blocks immediately after"). A
//!   run stopped mid-step ends in a call with no result, and the eval's question comes right
//!   after it: such a call gets an error result saying [`NO_RESULT`], placed after the results
//!   its turn has.
//! - **Every tool result answers a call of the turn right before it** (OpenAI: "messages with
//!   role 'tool' must be a response to a preceding message with 'tool_calls'"; Anthropic: "Each
//!   `tool_result` block must have a corresponding `tool_use` block in the previous message").
//!   A compaction cut between a call and its result, or an imported trace's stray result, leaves
//!   a result whose call is not in the request: it is sent as user text naming the tool
//!   ([`orphan_text`]), after the results of its run, so what the tool returned stays in the
//!   conversation.
//!
//! A request that breaks none of them is sent as it is (nothing is copied).

use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};
use sha2::{Digest, Sha256};

use super::{Message, Role, ToolDef};

/// The content of the result given to a tool call the history has no result for.
pub(crate) const NO_RESULT: &str =
    "[no result was recorded: the run stopped before this tool call returned]";

/// Longest tool name both APIs accept.
pub(crate) const MAX_TOOL_NAME: usize = 64;
/// Longest tool-call id OpenAI accepts (its live API; the OpenAPI spec does not say).
pub(crate) const MAX_TOOL_CALL_ID: usize = 40;

/// `^[a-zA-Z0-9_-]{1,max}$`: the APIs' rule for tool names (max 64) and, with max 40, a rule
/// for tool-call ids that meets both OpenAI's length and Anthropic's pattern.
pub(crate) fn wire_ok(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What `s` is sent as when it breaks [`wire_ok`]: its characters with every one outside
/// `[a-zA-Z0-9_-]` replaced by `_`, cut so the whole fits in `max`, then `_` and the first hex
/// digits of the SHA-256 of `s` (8, or 16 from `attempt` 1; from `attempt` 2 also the attempt's
/// number), so two names that read alike after the replacement still differ.
pub(crate) fn wire_token(s: &str, max: usize, attempt: u32) -> String {
    let digest = hex::encode(Sha256::digest(s.as_bytes()));
    let mut suffix = format!("_{}", &digest[..if attempt == 0 { 8 } else { 16 }]);
    if attempt >= 2 {
        suffix.push_str(&format!("_{attempt}"));
    }
    let keep = max.saturating_sub(suffix.len());
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(keep)
        .collect();
    out.push_str(&suffix);
    out
}

/// A one-to-one map of the strings `all()` yields that break [`wire_ok`] to [`wire_token`]s
/// that collide with no other string of the request (valid ones included), assigned in sorted
/// order so the same strings always map alike. Allocates nothing when every string is valid
/// (the common request: this runs on every call).
fn assign<'a, I: Iterator<Item = &'a str>>(
    all: impl Fn() -> I,
    max: usize,
) -> FxHashMap<String, String> {
    let mut invalid: Vec<&str> = all().filter(|s| !wire_ok(s, max)).collect();
    if invalid.is_empty() {
        return FxHashMap::default();
    }
    invalid.sort_unstable();
    invalid.dedup();
    let mut taken: FxHashSet<String> = all()
        .filter(|s| wire_ok(s, max))
        .map(str::to_string)
        .collect();
    let mut map = FxHashMap::default();
    for s in invalid {
        let token = (0u32..)
            .map(|attempt| wire_token(s, max, attempt))
            .find(|t| !taken.contains(t))
            .unwrap_or_default();
        taken.insert(token.clone());
        map.insert(s.to_string(), token);
    }
    map
}

/// A request's messages and tools as the APIs accept them, and how to read the answer back.
#[derive(Debug, Default)]
pub(crate) struct Conformed {
    /// The messages to send, when they differ from the caller's.
    pub messages: Option<Vec<Message>>,
    /// The tools to send, when their names differ from the caller's.
    pub tools: Option<Vec<ToolDef>>,
    /// Sent tool name → the caller's, for the names that were changed.
    pub names_back: FxHashMap<String, String>,
}

impl Conformed {
    /// Gives the answer's tool calls the caller's names back.
    pub fn restore(&self, message: &mut Message) {
        if self.names_back.is_empty() {
            return;
        }
        for c in &mut message.tool_calls {
            if let Some(original) = self.names_back.get(&c.name) {
                c.name = original.clone();
            }
        }
    }
}

/// A tool result whose call is not in the request, as the user text it is sent as: the tool's
/// name, the call's id and the result, with a note saying why it is not a tool result.
pub(crate) fn orphan_text(result: &Message) -> String {
    let name = match result.name.as_deref() {
        Some(n) if !n.is_empty() => format!("`{n}`"),
        _ => "a tool".to_string(),
    };
    let kind = if result.is_error {
        "error result"
    } else {
        "result"
    };
    format!(
        "[tool {kind} of {name} (call id {}), sent as text: its call is not in this conversation]\n{}",
        result.tool_call_id.as_deref().unwrap_or(""),
        result.content
    )
}

/// What the run of tool messages `run` right after `turn` (the message before it, if any) is
/// sent as, when it breaks the pairing rules, or `None` when it keeps them: the results that
/// answer a call of `turn` (the first one for each call), in their order; then an error result
/// saying [`NO_RESULT`] for each call of `turn` the run does not answer; then each other result
/// (an orphan: its call is not in the request, or was already answered) as user text
/// ([`orphan_text`]).
fn pair_run(turn: Option<&Message>, run: &[Message]) -> Option<Vec<Message>> {
    let calls = match turn {
        Some(t) if t.role == Role::Assistant => t.tool_calls.as_slice(),
        _ => &[],
    };
    let answers = |r: &Message, earlier: &[Message]| {
        r.tool_call_id.as_deref().is_some_and(|id| {
            calls.iter().any(|c| c.id == id)
                && !earlier
                    .iter()
                    .any(|e| e.tool_call_id.as_deref() == Some(id))
        })
    };
    let answered = |id: &str| run.iter().any(|r| r.tool_call_id.as_deref() == Some(id));
    let all_pair = run.iter().enumerate().all(|(k, r)| answers(r, &run[..k]));
    if all_pair && calls.iter().all(|c| answered(&c.id)) {
        return None;
    }
    let mut kept = Vec::with_capacity(run.len() + calls.len());
    let mut orphans = Vec::new();
    for (k, r) in run.iter().enumerate() {
        if answers(r, &run[..k]) {
            kept.push(r.clone());
        } else {
            orphans.push(Message::user(orphan_text(r)));
        }
    }
    kept.extend(calls.iter().filter(|c| !answered(&c.id)).map(|c| {
        let mut r = Message::tool(c.id.clone(), c.name.clone(), NO_RESULT);
        r.is_error = true;
        r
    }));
    kept.extend(orphans);
    Some(kept)
}

/// `messages` with each result recorded later than the run of tool messages right after its
/// call (a user note, or another turn, in between: an importer keeps such a trace, both APIs
/// refuse it) moved to the end of that run, so its call gets its real result and not an error
/// result saying [`NO_RESULT`] with the real one sent as text after it. A later result counts
/// only before any later turn that calls the same id. Borrowed when no result is elsewhere
/// (the common request: nothing is allocated).
fn gathered(messages: &[Message]) -> Cow<'_, [Message]> {
    // (the late result's index, the end of the run it is moved to)
    let mut moves: Vec<(usize, usize)> = Vec::new();
    for (t, turn) in messages.iter().enumerate() {
        if turn.role != Role::Assistant || turn.tool_calls.is_empty() {
            continue;
        }
        let end = t
            + 1
            + messages[t + 1..]
                .iter()
                .take_while(|m| m.role == Role::Tool)
                .count();
        for call in &turn.tool_calls {
            let id = Some(call.id.as_str());
            if messages[t + 1..end]
                .iter()
                .any(|r| r.tool_call_id.as_deref() == id)
            {
                continue;
            }
            let next = messages[end..].iter().position(|m| {
                (m.role == Role::Tool && m.tool_call_id.as_deref() == id)
                    || (m.role == Role::Assistant && m.tool_calls.iter().any(|c| c.id == call.id))
            });
            if let Some(k) = next.map(|k| end + k) {
                if messages[k].role == Role::Tool && !moves.iter().any(|&(m, _)| m == k) {
                    moves.push((k, end));
                }
            }
        }
    }
    if moves.is_empty() {
        return Cow::Borrowed(messages);
    }
    let mut v = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        if !moves.iter().any(|&(k, _)| k == i) {
            v.push(m.clone());
        }
        v.extend(
            moves
                .iter()
                .filter(|&&(_, end)| end == i + 1)
                .map(|&(k, _)| messages[k].clone()),
        );
    }
    Cow::Owned(v)
}

/// `messages` with every run of tool messages (and every assistant turn with calls and no run
/// after it) made to keep the pairing rules ([`pair_run`]); borrowed when all do.
fn paired(messages: &[Message]) -> Cow<'_, [Message]> {
    // (the run's start, its end, what it is sent as)
    let mut fixes: Vec<(usize, usize, Vec<Message>)> = Vec::new();
    let mut i = 0;
    while i <= messages.len() {
        // The run of tool messages at `i`, after the message before it.
        let run = messages[i..]
            .iter()
            .take_while(|r| r.role == Role::Tool)
            .count();
        let turn = i.checked_sub(1).map(|t| &messages[t]);
        if let Some(fixed) = pair_run(turn, &messages[i..i + run]) {
            fixes.push((i, i + run, fixed));
        }
        i += run + 1;
    }
    if fixes.is_empty() {
        return Cow::Borrowed(messages);
    }
    let mut v = Vec::with_capacity(messages.len() + 4);
    let mut at = 0;
    for (start, end, fixed) in fixes {
        v.extend_from_slice(&messages[at..start]);
        v.extend(fixed);
        at = end;
    }
    v.extend_from_slice(&messages[at..]);
    Cow::Owned(v)
}

/// `messages` and `tools` made to meet the rules of the module doc.
pub(crate) fn conform(messages: &[Message], tools: &[ToolDef]) -> Conformed {
    let late_moved = gathered(messages);
    let with_results = match paired(&late_moved) {
        Cow::Owned(v) => Cow::Owned(v),
        Cow::Borrowed(_) => late_moved,
    };
    let names = assign(
        || {
            let called = with_results
                .iter()
                .flat_map(|m| m.tool_calls.iter().map(|c| c.name.as_str()));
            let answered = with_results
                .iter()
                .filter(|m| m.role == Role::Tool)
                .filter_map(|m| m.name.as_deref())
                .filter(|n| !n.is_empty());
            tools
                .iter()
                .map(|t| t.name.as_str())
                .chain(called)
                .chain(answered)
        },
        MAX_TOOL_NAME,
    );
    let ids = assign(
        || {
            let called = with_results
                .iter()
                .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()));
            let answered = with_results
                .iter()
                .filter(|m| m.role == Role::Tool)
                .filter_map(|m| m.tool_call_id.as_deref());
            called.chain(answered)
        },
        MAX_TOOL_CALL_ID,
    );
    let messages = if names.is_empty() && ids.is_empty() {
        match with_results {
            Cow::Borrowed(_) => None,
            Cow::Owned(v) => Some(v),
        }
    } else {
        let mut v = with_results.into_owned();
        for m in &mut v {
            for c in &mut m.tool_calls {
                if let Some(n) = names.get(&c.name) {
                    c.name = n.clone();
                }
                if let Some(id) = ids.get(&c.id) {
                    c.id = id.clone();
                }
            }
            if m.role == Role::Tool {
                if let Some(n) = m.name.as_ref().and_then(|n| names.get(n)) {
                    m.name = Some(n.clone());
                }
                if let Some(id) = m.tool_call_id.as_ref().and_then(|id| ids.get(id)) {
                    m.tool_call_id = Some(id.clone());
                }
            }
        }
        Some(v)
    };
    let renamed = |t: &ToolDef| names.contains_key(&t.name);
    let tools = tools.iter().any(renamed).then(|| {
        tools
            .iter()
            .map(|t| ToolDef {
                name: names
                    .get(&t.name)
                    .cloned()
                    .unwrap_or_else(|| t.name.clone()),
                ..t.clone()
            })
            .collect()
    });
    let names_back = names.into_iter().map(|(from, to)| (to, from)).collect();
    Conformed {
        messages,
        tools,
        names_back,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ToolCall;
    use serde_json::json;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({}),
        }
    }

    #[test]
    fn a_valid_request_is_not_copied() {
        let m = vec![
            Message::user("go"),
            Message::assistant("", vec![call("c1", "bash")]),
            Message::tool("c1", "bash", "ok"),
        ];
        let c = conform(&m, &[]);
        assert!(c.messages.is_none() && c.tools.is_none() && c.names_back.is_empty());
    }

    #[test]
    fn invalid_names_map_alike_everywhere_and_back() {
        let long = "[REDACTED_NAME len=44 sha=cf7b17a4] with more text to pass 64 chars";
        let m = vec![
            Message::user("go"),
            Message::assistant("", vec![call("c1", "./rock"), call("c2", long)]),
            Message::tool("c1", "./rock", "ok"),
            Message::tool("c2", long, "ok"),
        ];
        let tools = [ToolDef {
            name: "RsaCtfTool.py".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }];
        let c = conform(&m, &tools);
        let sent = c.messages.as_ref().unwrap();
        let rock = &sent[1].tool_calls[0].name;
        assert!(rock.starts_with("__rock_") && wire_ok(rock, 64), "{rock}");
        assert_eq!(sent[2].name.as_ref(), Some(rock));
        let redacted = &sent[1].tool_calls[1].name;
        assert!(wire_ok(redacted, 64) && redacted.len() == 64, "{redacted}");
        assert_eq!(sent[3].name.as_ref(), Some(redacted));
        let tool = &c.tools.as_ref().unwrap()[0].name;
        assert!(tool.starts_with("RsaCtfTool_py_"), "{tool}");
        // The answer's calls get the caller's names back.
        let mut answer = Message::assistant("", vec![call("x", tool), call("y", "grep")]);
        c.restore(&mut answer);
        assert_eq!(answer.tool_calls[0].name, "RsaCtfTool.py");
        assert_eq!(answer.tool_calls[1].name, "grep");
        // Deterministic.
        assert_eq!(conform(&m, &tools).messages, c.messages);
    }

    #[test]
    fn names_that_read_alike_after_the_replacement_stay_distinct() {
        let names = ["a.b", "a/b", "a_b", "a b"];
        let m = vec![Message::assistant(
            "",
            names
                .iter()
                .enumerate()
                .map(|(i, n)| call(&format!("c{i}"), n))
                .collect(),
        )];
        let c = conform(&m, &[]);
        let sent: FxHashSet<&str> = c.messages.as_ref().unwrap()[0]
            .tool_calls
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(sent.len(), 4);
        assert!(sent.contains("a_b"), "a valid name is kept");
        // A valid name equal to another's token pushes that one to a longer hash.
        let token = wire_token("a.b", 64, 0);
        let m = vec![Message::assistant(
            "",
            vec![call("c1", "a.b"), call("c2", &token)],
        )];
        let c = conform(&m, &[]);
        let sent = &c.messages.as_ref().unwrap()[0].tool_calls;
        assert_eq!(sent[1].name, token);
        assert_eq!(sent[0].name, wire_token("a.b", 64, 1));
        assert_ne!(sent[0].name, sent[1].name);
    }

    #[test]
    fn long_ids_are_shortened_alike_for_the_call_and_its_result() {
        let gemini = "list_directory-1764625554423-6b5d2c6179cc4";
        assert_eq!(gemini.len(), 42);
        let m = vec![
            Message::user("go"),
            Message::assistant(
                "",
                vec![call(gemini, "list_directory"), call("functions.x:0", "x")],
            ),
            Message::tool(gemini, "list_directory", "a b"),
            Message::tool("functions.x:0", "x", "y"),
        ];
        let c = conform(&m, &[]);
        let sent = c.messages.unwrap();
        let id = &sent[1].tool_calls[0].id;
        assert!(wire_ok(id, 40) && id.len() <= 40, "{id}");
        assert!(id.starts_with("list_directory-1764625554423-"), "{id}");
        assert_eq!(sent[2].tool_call_id.as_ref(), Some(id));
        let other = &sent[1].tool_calls[1].id;
        assert!(wire_ok(other, 40), "{other}");
        assert_eq!(sent[3].tool_call_id.as_ref(), Some(other));
    }

    #[test]
    fn a_call_without_its_result_gets_an_error_result_after_the_others() {
        let m = vec![
            Message::user("go"),
            Message::assistant("", vec![call("c1", "bash"), call("c2", "bash")]),
            Message::tool("c1", "bash", "ok"),
            Message::user("next"),
            Message::assistant("", vec![call("c3", "finish")]),
        ];
        let sent = conform(&m, &[]).messages.unwrap();
        let shape: Vec<(Role, Option<&str>)> = sent
            .iter()
            .map(|m| (m.role, m.tool_call_id.as_deref()))
            .collect();
        assert_eq!(
            shape,
            [
                (Role::User, None),
                (Role::Assistant, None),
                (Role::Tool, Some("c1")),
                (Role::Tool, Some("c2")),
                (Role::User, None),
                (Role::Assistant, None),
                (Role::Tool, Some("c3")),
            ]
        );
        assert!(sent[3].is_error && sent[3].content == NO_RESULT);
        assert_eq!(sent[6].name.as_deref(), Some("finish"));
    }

    #[test]
    fn a_result_recorded_after_a_later_turn_is_moved_to_its_call() {
        let m = vec![
            Message::user("go"),
            Message::assistant("", vec![call("c1", "ls"), call("c2", "cat")]),
            Message::tool("c2", "cat", "text"),
            Message::user("(a note)"),
            Message::tool("c1", "ls", "README.md"),
            Message::assistant("done", vec![]),
        ];
        let sent = conform(&m, &[]).messages.unwrap();
        let shape: Vec<(Role, Option<&str>, &str)> = sent
            .iter()
            .map(|m| (m.role, m.tool_call_id.as_deref(), m.content.as_str()))
            .collect();
        assert_eq!(
            shape,
            [
                (Role::User, None, "go"),
                (Role::Assistant, None, ""),
                (Role::Tool, Some("c2"), "text"),
                (Role::Tool, Some("c1"), "README.md"),
                (Role::User, None, "(a note)"),
                (Role::Assistant, None, "done"),
            ]
        );
        // A later turn calling the same id takes its own result: nothing is moved past it.
        let m = vec![
            Message::user("go"),
            Message::assistant("", vec![call("c1", "ls")]),
            Message::user("again"),
            Message::assistant("", vec![call("c1", "ls")]),
            Message::tool("c1", "ls", "README.md"),
        ];
        let sent = conform(&m, &[]).messages.unwrap();
        assert_eq!(sent[2].content, NO_RESULT);
        assert_eq!(sent[5].content, "README.md");
        // Nothing late: nothing copied.
        let ok = vec![
            Message::assistant("", vec![call("c1", "ls")]),
            Message::tool("c1", "ls", "x"),
        ];
        assert!(conform(&ok, &[]).messages.is_none());
    }

    #[test]
    fn an_orphan_result_becomes_user_text_after_the_results_of_its_run() {
        let mut err = Message::tool("gone2", "", "boom");
        err.is_error = true;
        let m = vec![
            Message::tool("cut", "grep", "before the cut"),
            Message::user("go"),
            Message::assistant("", vec![call("c1", "bash"), call("c2", "bash")]),
            Message::tool("gone", "./rock", "stray"),
            Message::tool("c1", "bash", "ok"),
            Message::tool("c1", "bash", "again"),
            Message::user("next"),
            err,
        ];
        let sent = conform(&m, &[]).messages.unwrap();
        let shape: Vec<(Role, Option<&str>)> = sent
            .iter()
            .map(|m| (m.role, m.tool_call_id.as_deref()))
            .collect();
        assert_eq!(
            shape,
            [
                (Role::User, None),
                (Role::User, None),
                (Role::Assistant, None),
                (Role::Tool, Some("c1")),
                (Role::Tool, Some("c2")),
                (Role::User, None),
                (Role::User, None),
                (Role::User, None),
                (Role::User, None),
            ]
        );
        assert_eq!(
            sent[0].content,
            "[tool result of `grep` (call id cut), sent as text: its call is not in this conversation]\nbefore the cut"
        );
        assert!(sent[4].is_error && sent[4].content == NO_RESULT);
        assert!(sent[5].content.contains("`./rock`") && sent[5].content.ends_with("stray"));
        assert!(sent[6].content.contains("call id c1") && sent[6].content.ends_with("again"));
        assert!(sent[8]
            .content
            .starts_with("[tool error result of a tool (call id gone2)"));
        // No tool name of a result sent as text is mapped (nor declared).
        assert!(conform(&m, &[]).names_back.is_empty());
    }

    #[test]
    fn tokens_fit_and_keep_what_they_can() {
        for (s, max) in [("./rock", 64), ("", 64), (&"é".repeat(100) as &str, 40)] {
            for attempt in 0..4 {
                let t = wire_token(s, max, attempt);
                assert!(wire_ok(&t, max), "{s:?} → {t:?}");
            }
        }
    }
}
