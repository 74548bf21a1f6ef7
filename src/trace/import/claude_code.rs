//! Claude Code session JSONL → canonical traces.
//!
//! - Detection reads the records a session holds, not its first line: interactive sessions
//!   start with a `file-history-snapshot`, `summary` or `queue-operation` record, so any
//!   `user`/`assistant` record with a `message` and a `uuid` or `sessionId` makes the file a
//!   Claude Code session.
//! - Assistant records that share `message.id` are one API response split per content block:
//!   they are merged into one assistant message, and its usage is taken once (from the last
//!   record of that id, the latest streaming snapshot). Usage is normalized Anthropic usage, so
//!   `input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens`, the prompt
//!   size of that call.
//! - Tool results come from `message.content` (`tool_result` blocks: what the model saw), never
//!   from the UI copy in `toolUseResult`.
//! - `isMeta: true` user records (hook feedback, command caveats) get `kind: "meta"`; slash
//!   commands and their output (`<command-name>`, `<local-command-stdout>`) `kind: "command"`,
//!   also where Claude Code 2.1 records them, as `system` records of subtype `local_command`;
//!   the summary written after a compaction (`isCompactSummary`) `kind: "compaction_summary"`.
//! - `system` records with `subtype: "compact_boundary"` become `compaction` markers
//!   (`tokens_before` from `compactMetadata.preTokens`, `detail` the trigger) placed before the
//!   summary that follows; other bookkeeping records (`file-history-snapshot`, `summary`,
//!   `progress`, `last-prompt`, other `system`) are skipped. `attachment` records (hook runs and
//!   their output, files read at an @-mention, reminders; Claude Code renders some into the
//!   model's context) are not read: one warning counts them by kind.
//! - An assistant message ended by a refusal (`stop_reason: "refusal"`) is the text the model
//!   produced, with one warning per response (`anthropic::stop_warning`, which also warns of an
//!   answer the output token limit, `max_tokens`, or the context window stopped); a server-side call
//!   (`server_tool_use`) is answered by its `*_tool_result` block, a tool message after it.
//! - A message the user typed while the agent worked (`queue-operation`) that Claude Code gave
//!   to the running turn (`remove`) is recorded nowhere else: it becomes a user message of kind
//!   `queued` after the tool results that followed it (`Queue`); one handed over as a turn
//!   of its own (`dequeue`) is the `user` record that follows.
//! - Subagents are contexts of their own. A subagent transcript (`<session>/subagents/
//!   agent-<id>.jsonl`, every record `isSidechain`) is one trace with id
//!   `<sessionId>__agent-<agentId>` and `task_id` the parent's `sessionId` (the parent session's
//!   file is `<sessionId>.jsonl`, so its trace id is that `sessionId`). Sidechain records inside
//!   a main session file (older versions) become their own traces too, `<stem>__agent-<agentId>`
//!   (or `<stem>__sidechain-<n>`, grouped by their `parentUuid` chain).

use super::anthropic::{
    anthropic_usage, assistant_blocks, stop_warning, user_blocks, AssistantParts,
};
use super::detect::str_of;
use super::json::{content_text, Node, Res};
use super::Calls;
use super::{Importer, Input};
use crate::trace::model::{ContextMarker, Role, SourceFormat, Trace, TraceMeta};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Claude Code sessions: JSON Lines holding a `user`/`assistant` record with a `message` and a
/// `uuid` or `sessionId` (wherever it is: interactive sessions start with bookkeeping records),
/// or whose first record is a Claude Code record type with a `uuid`, `sessionId` or `leafUuid`.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::ClaudeCode,
    detect: |shape| match shape {
        super::detect::Shape::Lines(lines, first) => {
            (is_record_type(first) && has_session_ids(first))
                || (str_of(first, "type").is_some()
                    && lines
                        .iter()
                        .filter_map(|(_, v)| v.as_object())
                        .any(is_message_record))
        }
        _ => false,
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

fn is_record_type(o: &Map<String, Value>) -> bool {
    str_of(o, "type").is_some_and(|t| RECORD_TYPES.contains(&t))
}

fn has_session_ids(o: &Map<String, Value>) -> bool {
    o.contains_key("uuid") || o.contains_key("sessionId") || o.contains_key("leafUuid")
}

/// A `user` or `assistant` record of a session: `{type, message: {…}, uuid | sessionId}`.
fn is_message_record(o: &Map<String, Value>) -> bool {
    matches!(str_of(o, "type"), Some("user" | "assistant"))
        && o.get("message").is_some_and(|m| m.is_object())
        && (o.contains_key("uuid") || o.contains_key("sessionId"))
}

/// One context being rebuilt: the main session, or one subagent (sidechain).
struct Session {
    t: Trace,
    calls: Calls,
    /// `message.id` → index of its merged assistant message.
    by_id: HashMap<String, usize>,
    /// The `message.id`s whose refusal was warned of (every record of a split response
    /// repeats its `stop_reason`).
    refused: std::collections::HashSet<String>,
}

impl Session {
    /// Whether a message may come next without parting a call from its result: `r` does not
    /// continue an assistant message already begun (the same `message.id`), and every call of
    /// the last assistant message has its result.
    fn may_insert_before(&self, r: &Node<'_>) -> bool {
        let continues = r.key("type").v.as_str() == Some("assistant")
            && r
                .key("message")
                .key("id")
                .v
                .as_str()
                .is_some_and(|id| !id.is_empty() && self.by_id.contains_key(id));
        let msgs = &self.t.messages;
        let answered = msgs
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .is_none_or(|a| {
                msgs[a].tool_calls.iter().all(|c| {
                    msgs[a + 1..]
                        .iter()
                        .any(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(&c.id))
                })
            });
        !continues && answered
    }

    fn new(id: String) -> Self {
        Session {
            t: Trace::new(TraceMeta::new(id, SourceFormat::ClaudeCode)),
            calls: Calls::default(),
            by_id: HashMap::new(),
            refused: Default::default(),
        }
    }

    /// Add one `user`, `assistant` or `system` record.
    fn record(&mut self, r: &Node<'_>, ty: &str) -> Res<()> {
        let t = &mut self.t;
        if t.meta.task_id.is_none() {
            t.meta.task_id = r.key("sessionId").opt_str()?.map(String::from);
        }
        let timestamp = r.key("timestamp").opt_str()?.map(String::from);
        match ty {
            "user" => {
                let msg = r.key("message");
                msg.obj()?;
                let content = msg.key("content");
                let mut ms = user_blocks(&content, &mut self.calls, &mut t.meta.warnings)?;
                let kind = if r.key("isCompactSummary").opt_bool()? == Some(true) {
                    Some("compaction_summary")
                } else if r.key("isMeta").opt_bool()? == Some(true) {
                    Some("meta")
                } else if content.v.as_str().is_some_and(is_command_text) {
                    Some("command")
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
                    &mut self.calls,
                    &mut t.meta.warnings,
                )?;
                let usage = anthropic_usage(&msg.key("usage"))?;
                if let Some(w) = stop_warning(&msg)? {
                    if id.is_empty() || self.refused.insert(id.clone()) {
                        t.meta.warnings.push(w);
                    }
                }
                if t.meta.model.is_none() {
                    t.meta.model = msg
                        .key("model")
                        .opt_str()?
                        .filter(|m| !m.starts_with('<'))
                        .map(String::from);
                }
                match self.by_id.get(&id).copied().filter(|_| !id.is_empty()) {
                    Some(i) => {
                        let m = &mut t.messages[i];
                        for text in parts.texts {
                            if !m.content.is_empty() {
                                m.content.push('\n');
                            }
                            m.content.push_str(&text);
                        }
                        m.tool_calls.extend(parts.calls);
                        m.thinking_blocks.extend(parts.blocks);
                        let results = std::mem::take(&mut parts.results);
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
                        t.messages.extend(results);
                    }
                    None => {
                        let (mut m, results) = parts.into_messages();
                        m.usage = usage;
                        m.timestamp = timestamp;
                        if r.key("isApiErrorMessage").opt_bool()? == Some(true) {
                            m.kind = Some("api_error".into());
                        }
                        self.by_id.insert(id, t.messages.len());
                        t.messages.push(m);
                        t.messages.extend(results);
                    }
                }
            }
            // Claude Code 2.1 records a slash command and its output as a `system` record
            // (`<command-name>…`, `<local-command-stdout>…`) where 1.x and 2.0 wrote a user
            // record with the same text, after the same `<local-command-caveat>` meta message
            // telling the model not to answer them: read as those were, `kind: "command"`.
            "system"
                if r.key("subtype").opt_str()? == Some("local_command")
                    && r.key("content").opt_str()?.is_some_and(is_command_text) =>
            {
                let text = r.key("content").opt_str()?.unwrap_or_default();
                let mut m = crate::trace::model::Message::user(text);
                m.kind = Some("command".into());
                m.timestamp = timestamp;
                t.messages.push(m);
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
        Ok(())
    }
}

/// A slash command or its local output, as Claude Code records them in user turns.
fn is_command_text(s: &str) -> bool {
    let s = s.trim_start();
    s.starts_with("<command-name>")
        || s.starts_with("<command-message>")
        || s.starts_with("<local-command-stdout>")
        || s.starts_with("<local-command-stderr>")
}

/// The sidechains (subagent contexts) of one file, grouped by `agentId` or, without one, by
/// their `parentUuid` chain.
#[derive(Default)]
struct Sidechains {
    /// (agent id if recorded, session), in order of first appearance.
    groups: Vec<(Option<String>, Session)>,
    by_agent: HashMap<String, usize>,
    by_uuid: HashMap<String, usize>,
}

impl Sidechains {
    fn group_of(&mut self, r: &Node<'_>) -> Res<usize> {
        let agent = r.key("agentId").opt_str()?;
        let parent = match r.key("parentUuid").opt_str()? {
            Some(p) => Some(p),
            None => r.key("logicalParentUuid").opt_str()?,
        };
        let g = match (agent, parent) {
            (Some(a), _) if self.by_agent.contains_key(a) => self.by_agent[a],
            (None, Some(p)) if self.by_uuid.contains_key(p) => self.by_uuid[p],
            _ => {
                self.groups
                    .push((agent.map(String::from), Session::new(String::new())));
                let g = self.groups.len() - 1;
                if let Some(a) = agent {
                    self.by_agent.insert(a.to_string(), g);
                }
                g
            }
        };
        if let Some(u) = r.key("uuid").opt_str()? {
            self.by_uuid.insert(u.to_string(), g);
        }
        Ok(g)
    }
}

/// Messages the user typed while the agent worked (`queue-operation` records). `enqueue`
/// holds the text; `dequeue` hands it over as the regular `user` record that follows (nothing
/// to add); `remove` gives it to the running turn with the next tool results, recorded nowhere
/// else (the model answers it in its next message: `datasets/claude-code-interactive/
/// session-624a4a58.jsonl`, lines 191–196). Such a message is placed after those tool results,
/// as a user message of kind `queued`, with a warning; an image or a document in it is a
/// placeholder line, warned of when the message is placed ([`text_of`]).
#[derive(Debug, Default)]
struct Queue {
    /// Enqueued and not yet dequeued or removed, oldest first.
    waiting: std::collections::VecDeque<Queued>,
    /// Removed (given to the running turn): placed before the next record that is not tool
    /// results.
    given: Vec<(Queued, Option<String>)>,
}

/// A message the user typed while the agent worked.
#[derive(Debug)]
struct Queued {
    /// The line of its `enqueue` record.
    line: usize,
    text: String,
    /// The warnings of the placeholders in its text, given to the trace if it is placed.
    warnings: Vec<String>,
}

impl Queue {
    fn operation(&mut self, r: &Node<'_>, line: usize) -> Res<()> {
        match r.key("operation").v.as_str() {
            Some("enqueue") => {
                // Its text: a string, or the blocks of a list (an image as its placeholder);
                // none, and the operation is bookkeeping.
                let mut warnings = Vec::new();
                let text = text_of(&r.key("content"), &mut warnings)?;
                if !text.trim().is_empty() {
                    self.waiting.push_back(Queued {
                        line,
                        text,
                        warnings,
                    });
                }
            }
            Some("dequeue") => {
                self.waiting.pop_front();
            }
            Some("remove") => {
                if let Some(q) = self.waiting.pop_front() {
                    let when = r.key("timestamp").v.as_str().map(String::from);
                    self.given.push((q, when));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Add the messages given to the running turn to `t`, before `next` (a record that is not
    /// tool results; `None`: the end of the file). A `user` record holding the same text is
    /// that message, recorded after all: it is not added twice.
    fn place(&mut self, t: &mut Trace, next: Option<&Node<'_>>) {
        // The record's own import warns of its placeholders: these are only compared.
        let recorded = next
            .filter(|r| r.key("type").v.as_str() == Some("user"))
            .and_then(|r| text_of(&r.key("message").key("content"), &mut Vec::new()).ok());
        for (q, when) in self.given.drain(..) {
            if recorded.as_deref().is_some_and(|r| r.trim() == q.text.trim()) {
                continue;
            }
            t.meta.warnings.push(format!(
                "line {}: a message the user typed while the agent worked (`queue-operation` \
                 enqueue, then remove) is placed after the tool results that followed it, as a \
                 user message of kind `queued`: Claude Code gave it to the running turn without \
                 recording where",
                q.line
            ));
            t.meta.warnings.extend(q.warnings);
            let mut m = crate::trace::model::Message::user(q.text);
            m.kind = Some("queued".into());
            m.timestamp = when;
            t.messages.push(m);
        }
    }
}

/// The text of a message `content`: a string, or its blocks (and strings) as a user message's
/// content reads them ([`content_text`]): text as it is, an image or a document as its
/// placeholder line, warned of in `warnings`. Another value has no text.
fn text_of(content: &Node<'_>, warnings: &mut Vec<String>) -> Res<String> {
    match content.v {
        Value::String(s) => Ok(s.clone()),
        Value::Array(_) => content_text(content, warnings),
        _ => Ok(String::new()),
    }
}

/// The `attachment` records of a session (Claude Code 2.1: hook runs and their output, files
/// read at an @-mention, plan-mode and todo reminders, skill and tool listings, queued
/// commands, …). A hook's additional context is read (the message Claude Code renders from
/// it); the others are counted by `attachment.type`: Claude Code renders some of them into the
/// model's context as a `<system-reminder>` too, shows others to the person only, and which is
/// which changes from version to version; one warning says how many of each kind the trace
/// lacks.
#[derive(Debug, Default)]
struct Attachments {
    /// Those not read, counted by kind.
    skipped: super::Skipped,
    /// A hook's additional context (`hook_additional_context`, of the main session) as the
    /// user message Claude Code renders from it (`hook_context`), waiting to be placed before
    /// the next record that is not tool results (as a `queued` message is: never between a
    /// call and its result).
    hooks: Vec<crate::trace::model::Message>,
    /// How many of them were placed.
    placed: usize,
}

impl Attachments {
    fn place(&mut self, t: &mut Trace) {
        self.placed += self.hooks.len();
        t.messages.append(&mut self.hooks);
    }

    fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.placed > 0 {
            out.push(format!(
                "{} hook additional context attachment(s) (`hook_additional_context`) imported \
                 as user messages of kind `meta`, rendered as Claude Code renders them \
                 (<system-reminder> \"<hook> hook additional context: …\"), after the tool \
                 results they follow: where they reached the model is not recorded",
                self.placed
            ));
        }
        out.extend(self.warning());
        out
    }

    fn warning(&self) -> Option<String> {
        let (first, total, kinds) = self.skipped.counted()?;
        Some(format!(
            "line {first}: {total} `attachment` record(s) skipped ({kinds}): Claude Code renders \
             some kinds into the model's context as a <system-reminder> (a file read at an \
             @-mention, for one); their text is not in the trace"
        ))
    }
}

/// The user message Claude Code renders from a hook's additional context (an `attachment`
/// record `{type: "hook_additional_context", content: [strings], hookName, hookEvent}`): a
/// meta message `<system-reminder>\n<hookName> hook additional context: <content, one per
/// line>\n</system-reminder>`, as a real compaction transcript of Claude Code 2.1.39 holds it
/// (`datasets/claude-code/agent-acompact-fffbd0.jsonl`, lines 1–2). No text,
/// no message.
fn hook_context(r: &Node<'_>, warnings: &mut Vec<String>) -> Res<Option<crate::trace::model::Message>> {
    let a = r.key("attachment");
    let text = text_of(&a.key("content"), warnings)?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let name = match a.key("hookName").opt_str()? {
        Some(n) => n,
        None => a.key("hookEvent").opt_str()?.unwrap_or("hook"),
    };
    let mut m = crate::trace::model::Message::user(format!(
        "<system-reminder>\n{name} hook additional context: {text}\n</system-reminder>"
    ));
    m.kind = Some("meta".into());
    m.timestamp = r.key("timestamp").opt_str()?.map(String::from);
    Ok(Some(m))
}

/// Whether `r` is a `user` record of tool results only (the answers to one assistant message,
/// which nothing may come between).
fn only_tool_results(r: &Node<'_>) -> bool {
    r.key("type").v.as_str() == Some("user")
        && r.key("message")
            .key("content")
            .v
            .as_array()
            .is_some_and(|blocks| {
                !blocks.is_empty()
                    && blocks
                        .iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            })
}

/// Each record is dropped once converted, so the parsed lines and the trace never coexist whole.
pub fn import(lines: Vec<(usize, Value)>, stem: &str) -> Res<Vec<Trace>> {
    let mut main = Session::new(stem.to_string());
    let mut side = Sidechains::default();
    let mut main_records = 0usize;
    let mut summaries = 0usize;
    let mut queue = Queue::default();
    let mut attachments = Attachments::default();
    // Each record's uuid and a hash of its `message` (a record written again is read once), and
    // the line of the first repeat with how many.
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut repeated: Option<(usize, usize)> = None;
    for (n, v) in lines {
        let r = Node::line_root(&v, n);
        r.obj()?;
        let ty = r.key("type").str()?;
        if ty == "summary" {
            summaries += 1;
        }
        if ty == "queue-operation" {
            queue.operation(&r, n)?;
            continue;
        }
        if ty == "attachment" {
            let a = r.key("attachment");
            let kind = a.key("type").opt_str()?.unwrap_or("?");
            if kind == "hook_additional_context" && r.key("isSidechain").opt_bool()? != Some(true)
            {
                if let Some(m) = hook_context(&r, &mut main.t.meta.warnings)? {
                    attachments.hooks.push(m);
                    continue;
                }
            }
            attachments.skipped.note(crate::output::quoted(kind), n);
            continue;
        }
        if !matches!(ty, "user" | "assistant" | "system") {
            continue;
        }
        if let Some(uuid) = r.key("uuid").opt_str()? {
            let hash = {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                r.key("message").v.to_string().hash(&mut h);
                h.finish()
            };
            match seen.get(uuid) {
                Some(&h) if h == hash => {
                    // The same message again under its uuid (Claude Code 1.0 wrote the last
                    // record again when the session was resumed, under the new sessionId):
                    // the model had it once, as Claude Code's own loader (a map by uuid) keeps it.
                    repeated.get_or_insert((n, 0)).1 += 1;
                    continue;
                }
                _ => {
                    seen.insert(uuid.to_string(), hash);
                }
            }
        }
        if r.key("isSidechain").opt_bool()? == Some(true) {
            let g = side.group_of(&r)?;
            side.groups[g].1.record(&r, ty)?;
        } else {
            main_records += 1;
            // Placed before the next record that is not tool results, once every call of the
            // last assistant message is answered (a record that continues that message, with
            // the same `message.id`, or an open call keeps it waiting).
            if (!queue.given.is_empty() || !attachments.hooks.is_empty())
                && !only_tool_results(&r)
                && main.may_insert_before(&r)
            {
                attachments.place(&mut main.t);
                queue.place(&mut main.t, Some(&r));
            }
            main.record(&r, ty)?;
        }
    }
    attachments.place(&mut main.t);
    queue.place(&mut main.t, None);
    main.t.meta.warnings.extend(attachments.warnings());
    main.t.meta.warnings.extend(repeated.map(|(first, total)| {
            format!(
                "line {first}: {total} record(s) repeating an earlier record's uuid and message \
                 (written again when the session was resumed) read once"
            )
        }));
    let subagent_file = main_records == 0 && !side.groups.is_empty();
    if main.t.messages.is_empty() && side.groups.is_empty() && summaries > 0 {
        // Claude Code writes such files beside the sessions: the titles of earlier
        // conversations, each `leafUuid` pointing into another session file. Said here so the
        // "no message" error or skip note says what the file is.
        main.t.meta.warnings.push(format!(
            "a Claude Code summary-only file: {summaries} `summary` record(s) (titles of \
             sessions kept in other files), no conversation"
        ));
    }
    let mut out = Vec::new();
    if !subagent_file {
        out.push(main.t);
    }
    let n_groups = side.groups.len();
    for (i, (agent, mut s)) in side.groups.into_iter().enumerate() {
        let session = s.t.meta.task_id.clone();
        s.t.meta.id = match (&agent, subagent_file) {
            // The parent session's trace id is its file stem, its `sessionId`.
            (Some(a), true) => match &session {
                Some(sid) => format!("{sid}__agent-{a}"),
                None => format!("{stem}__agent-{a}"),
            },
            (Some(a), false) => format!("{stem}__agent-{a}"),
            (None, true) if n_groups == 1 => stem.to_string(),
            (None, _) => format!("{stem}__sidechain-{}", i + 1),
        };
        out.push(s.t);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each message's role, text and kind.
    fn shape(t: &Trace) -> Vec<(Role, &str, Option<&str>)> {
        t.messages
            .iter()
            .map(|m| (m.role, m.content.as_str(), m.kind.as_deref()))
            .collect()
    }

    use crate::trace::import::numbered as lines;

    /// A message typed while the agent worked and given to the running turn (`remove`) is
    /// placed after the tool results that followed it (they stay paired with their calls); one
    /// handed over as a turn of its own (`dequeue`) is the user record that follows, once.
    #[test]
    fn a_message_given_to_the_running_turn_is_placed_after_its_tool_results() {
        let recs = lines(vec![
            json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "go"}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Edit", "input": {}}, {"type": "tool_use", "id": "t2", "name": "Edit", "input": {}}]}}),
            json!({"type": "queue-operation", "operation": "enqueue", "content": "no, keep the field"}),
            json!({"type": "queue-operation", "operation": "remove", "timestamp": "T"}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "y"}]}}),
            json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "I will keep it"}]}}),
            json!({"type": "queue-operation", "operation": "enqueue", "content": "now commit"}),
            json!({"type": "queue-operation", "operation": "dequeue"}),
            json!({"type": "user", "message": {"role": "user", "content": "now commit"}}),
        ]);
        let t = import(recs, "cc").unwrap().remove(0);
        assert_eq!(
            shape(&t),
            [
                (Role::User, "go", None),
                (Role::Assistant, "", None),
                (Role::Tool, "x", None),
                (Role::Tool, "y", None),
                (Role::User, "no, keep the field", Some("queued")),
                (Role::Assistant, "I will keep it", None),
                (Role::User, "now commit", None),
            ]
        );
        assert_eq!(t.messages[4].timestamp.as_deref(), Some("T"));
        assert!(
            t.meta.warnings.iter().any(|w| w.starts_with("line 3: a message the user typed")),
            "{:?}",
            t.meta.warnings
        );
    }

    /// Placement holds while a call of the last assistant message is open or the next record
    /// continues that message (the same `message.id`); a list content gives its text (an image
    /// its placeholder), and a user record holding the same text blocks is the message itself.
    #[test]
    fn a_queued_message_never_parts_a_call_from_its_result() {
        let recs = lines(vec![
            json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "go"}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "looking"}]}}),
            json!({"type": "queue-operation", "operation": "enqueue", "content": [{"type": "text", "text": "use the v2 API"}, {"type": "image", "source": {}}]}),
            json!({"type": "queue-operation", "operation": "remove"}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}}),
            json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "switching to v2"}]}}),
            json!({"type": "queue-operation", "operation": "enqueue", "content": 42}),
            json!({"type": "queue-operation", "operation": "enqueue", "content": "and add tests"}),
            json!({"type": "queue-operation", "operation": "remove"}),
            json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "and add tests"}]}}),
        ]);
        let t = import(recs, "cc").unwrap().remove(0);
        assert_eq!(
            shape(&t),
            [
                (Role::User, "go", None),
                (Role::Assistant, "looking", None),
                (Role::Tool, "x", None),
                (Role::User, "use the v2 API\n[image]", Some("queued")),
                (Role::Assistant, "switching to v2", None),
                (Role::User, "and add tests", None),
            ]
        );
    }

    /// An image or a document in a message typed while the agent worked is a placeholder line
    /// of the message placed in the trace, warned of at its path when the message is placed
    /// (it was dropped without a word, and an image alone made the message bookkeeping, lost);
    /// a message handed over as a recorded `user` record warns of its own image, once.
    #[test]
    fn an_image_in_a_queued_message_is_a_placeholder() {
        let png = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}});
        let recs = lines(vec![
            json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "go"}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}}),
            json!({"type": "queue-operation", "operation": "enqueue", "content": [{"type": "text", "text": "look at this error"}, png]}),
            json!({"type": "queue-operation", "operation": "enqueue", "content": [png]}),
            json!({"type": "queue-operation", "operation": "remove", "timestamp": "T"}),
            json!({"type": "queue-operation", "operation": "remove", "timestamp": "T"}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}}),
            json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "I see it"}]}}),
            json!({"type": "queue-operation", "operation": "enqueue", "content": ["and this one", png]}),
            json!({"type": "queue-operation", "operation": "remove"}),
            json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "and this one"}, png]}}),
        ]);
        let t = import(recs, "cc").unwrap().remove(0);
        assert_eq!(
            shape(&t),
            [
                (Role::User, "go", None),
                (Role::Assistant, "", None),
                (Role::Tool, "x", None),
                (Role::User, "look at this error\n[image]", Some("queued")),
                (Role::User, "[image]", Some("queued")),
                (Role::Assistant, "I see it", None),
                (Role::User, "and this one\n[image]", None),
            ]
        );
        let images: Vec<&str> = t
            .meta
            .warnings
            .iter()
            .filter(|w| w.contains("an image was replaced"))
            .map(|w| w.split_once(": an image").unwrap().0)
            .collect();
        assert_eq!(images, ["line 3: $.content[1]", "line 4: $.content[0]", "line 11: $.message.content[1]"]);
    }

    /// The real session the importer lost it from: the user's correction, which the model
    /// answers next ("Wait, the user wants me to ADD the conversationId field"), is in the trace.
    #[test]
    fn the_real_session_keeps_the_correction_the_model_answered() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("datasets/claude-code-interactive/session-624a4a58.jsonl");
        let t = crate::trace::import::import_file(&path, None).unwrap().remove(0);
        let at = t
            .messages
            .iter()
            .position(|m| m.content.contains("no, add conversationId field"))
            .expect("the queued message");
        assert_eq!(t.messages[at].role, Role::User);
        assert_eq!(t.messages[at].kind.as_deref(), Some("queued"));
        assert_eq!(t.messages[at - 1].role, Role::Tool);
        let next = &t.messages[at + 1];
        assert_eq!(next.role, Role::Assistant);
        let said = format!("{} {}", next.content, next.reasoning.as_deref().unwrap_or(""));
        assert!(said.contains("conversationId"), "{said}");
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

    /// A response ended by a refusal is warned of once, though each of its records repeats
    /// the `stop_reason`; a hook's additional context (`attachment` record) is the meta user
    /// message Claude Code renders from it, placed after the tool results (never between a call
    /// and its result), and the other attachments are counted by kind in one warning (all were
    /// dropped without a word); a server-side call split over records of one response is
    /// answered by its result block; an empty signed thinking gives no reasoning text.
    /// A response the output token limit stopped (`stop_reason: "max_tokens"`: its text and
    /// calls are cut short) or the context window stopped (`"model_context_window_exceeded"`)
    /// is warned of once, though every record of the split response repeats the reason (it
    /// read as a finished answer before); a finished one is not.
    #[test]
    fn answers_stopped_by_a_limit_are_warned_of_once() {
        let recs = lines(vec![
            json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "go"}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Here is the fi"}], "stop_reason": "max_tokens"}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "le"}], "stop_reason": "max_tokens"}}),
            json!({"type": "user", "message": {"role": "user", "content": "go on"}}),
            json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "and"}], "stop_reason": "model_context_window_exceeded"}}),
            json!({"type": "user", "message": {"role": "user", "content": "ok"}}),
            json!({"type": "assistant", "message": {"id": "m3", "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}}),
        ]);
        let t = import(recs, "cc").unwrap().remove(0);
        assert_eq!(t.messages[1].content, "Here is the fi\nle");
        assert_eq!(
            t.meta.warnings,
            [
                "line 2: $.message.stop_reason: the model's output was stopped at its output \
                 token limit (\"max_tokens\"): the message is the text it produced before it \
                 stopped",
                "line 5: $.message.stop_reason: the model's output was stopped at its context \
                 window (\"model_context_window_exceeded\"): the message is the text it \
                 produced before it stopped"
            ]
        );
    }

    #[test]
    fn refusals_attachments_and_server_results_are_not_silent() {
        let recs = lines(vec![
            json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "go"}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "thinking", "thinking": "", "signature": "Et"}], "stop_reason": "refusal"}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "I won't"}], "stop_reason": "refusal"}}),
            json!({"type": "user", "message": {"role": "user", "content": "list then"}}),
            json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}, {"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}]}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}}),
            json!({"type": "attachment", "timestamp": "T", "attachment": {"type": "hook_additional_context", "content": ["token Z", "twice"], "hookName": "PostToolUse:Bash", "hookEvent": "PostToolUse"}}),
            json!({"type": "attachment", "attachment": {"type": "hook_success", "hookName": "PostToolUse:Bash"}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "b"}]}}),
            json!({"type": "attachment", "attachment": {"type": "hook_success"}}),
            json!({"type": "attachment", "attachment": {"type": "todo_reminder", "content": []}}),
            json!({"type": "assistant", "message": {"id": "m3", "content": [{"type": "server_tool_use", "id": "srv1", "name": "web_search", "input": {"query": "q"}}]}}),
            json!({"type": "assistant", "message": {"id": "m3", "content": [{"type": "web_search_tool_result", "tool_use_id": "srv1", "content": [{"type": "web_search_result", "title": "T", "url": "u"}]}]}}),
            json!({"type": "assistant", "message": {"id": "m3", "content": [{"type": "text", "text": "found T"}]}}),
        ]);
        let t = import(recs, "cc").unwrap().remove(0);
        let hook = "<system-reminder>\nPostToolUse:Bash hook additional context: token Z\ntwice\n</system-reminder>";
        assert_eq!(
            shape(&t),
            [
                (Role::User, "go", None),
                (Role::Assistant, "I won't", None),
                (Role::User, "list then", None),
                (Role::Assistant, "", None),
                (Role::Tool, "a", None),
                (Role::Tool, "b", None),
                (Role::User, hook, Some("meta")),
                (Role::Assistant, "found T", None),
                (Role::Tool, "T\nu", None),
            ]
        );
        assert_eq!(t.messages[6].timestamp.as_deref(), Some("T"));
        assert_eq!(t.messages[1].reasoning, None);
        assert_eq!(t.messages[1].thinking_blocks.len(), 1);
        assert_eq!(t.messages[8].tool_call_id.as_deref(), Some("srv1"));
        let refusals = t.meta.warnings.iter().filter(|w| w.contains("refused")).count();
        assert_eq!(refusals, 1, "{:?}", t.meta.warnings);
        assert!(t.meta.warnings.iter().any(|w| w.starts_with(
            "1 hook additional context attachment(s) (`hook_additional_context`) imported"
        )), "{:?}", t.meta.warnings);
        assert!(t.meta.warnings.iter().any(|w| w
            == "line 8: 3 `attachment` record(s) skipped (\"hook_success\" ×2, \
                \"todo_reminder\" ×1): Claude Code renders some kinds into the model's context \
                as a <system-reminder> (a file read at an @-mention, for one); their text is not \
                in the trace"), "{:?}", t.meta.warnings);
    }

    #[test]
    fn errors_name_the_line() {
        let recs = lines(vec![
            json!({"type": "user", "message": {"content": [{"type": "tool_result"}]}}),
        ]);
        let e = import(recs, "cc").unwrap_err();
        assert_eq!(e.location, "line 1: $.message.content[0].tool_use_id");
    }
    #[test]
    fn detection_reads_the_records_not_the_first_line() {
        use super::super::detect::detect;
        let session = Input::Lines(lines(vec![
            json!({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}),
            json!({"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}}),
        ]));
        assert_eq!(detect(&session), Ok(SourceFormat::ClaudeCode));
        // Records with a `type` but no session record are not claimed.
        let other = Input::Lines(lines(vec![
            json!({"type": "session_meta", "payload": {}}),
            json!({"type": "response_item", "payload": {"type": "message"}}),
        ]));
        assert_ne!(detect(&other), Ok(SourceFormat::ClaudeCode));
    }

    #[test]
    fn subagent_transcripts_and_inline_sidechains_are_their_own_traces() {
        let rec = |ty: &str, uuid: &str, parent: Option<&str>, agent: Option<&str>, content: Value| {
            let mut r = json!({"type": ty, "uuid": uuid, "parentUuid": parent, "sessionId": "S",
                "isSidechain": true, "message": {"role": ty, "id": uuid, "content": content}});
            if let Some(a) = agent {
                r["agentId"] = json!(a);
            }
            r
        };
        let call = json!([{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]);
        let result = json!([{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]);
        // A transcript of its own: id from the parent session and the agent id.
        let file = lines(vec![
            rec("user", "a", None, Some("ab12"), json!("do the task")),
            rec("assistant", "b", Some("a"), Some("ab12"), call.clone()),
            rec("user", "c", Some("b"), Some("ab12"), result.clone()),
        ]);
        let ts = import(file, "agent-ab12").unwrap();
        assert_eq!(ts.len(), 1);
        assert_eq!(ts[0].meta.id, "S__agent-ab12");
        assert_eq!(ts[0].meta.task_id.as_deref(), Some("S"));
        assert_eq!(ts[0].messages.len(), 3);
        assert_eq!(ts[0].messages[2].tool_call_id.as_deref(), Some("t1"));
        // Inside a main session without agent ids: grouped by their parentUuid chains.
        let mut main = vec![
            json!({"type": "user", "uuid": "m1", "sessionId": "S", "message": {"content": "<command-name>/clear</command-name>"}}),
            json!({"type": "user", "uuid": "m2", "sessionId": "S", "message": {"content": "real goal"}}),
        ];
        main.push(rec("user", "x1", None, None, json!("first sub")));
        main.push(rec("user", "y1", None, None, json!("second sub")));
        main.push(rec("assistant", "x2", Some("x1"), None, call));
        main.push(rec("user", "x3", Some("x2"), None, result));
        let ts = import(lines(main), "S").unwrap();
        let ids: Vec<_> = ts.iter().map(|t| t.meta.id.as_str()).collect();
        assert_eq!(ids, ["S", "S__sidechain-1", "S__sidechain-2"]);
        assert_eq!(ts[1].messages.len(), 3);
        assert_eq!(ts[2].messages.len(), 1);
        assert_eq!(ts[0].messages[0].kind.as_deref(), Some("command"));
        let mut main = ts[0].clone();
        super::super::finalize(&mut main);
        assert_eq!(main.meta.goal.as_deref(), Some("real goal"));
    }

    /// Claude Code 2.1 writes a slash command and its output as `system` records of subtype
    /// `local_command` (after the same caveat 1.x and 2.0 wrote before their user records of
    /// it): they were skipped silently, and the replay lost what 1.x sessions keep.
    #[test]
    fn local_command_records_of_claude_code_2_1_are_commands() {
        let file = lines(vec![
            json!({"type": "user", "uuid": "c0", "sessionId": "S", "isMeta": true, "message": {"role": "user", "content": "<local-command-caveat>Caveat: generated locally.</local-command-caveat>"}}),
            json!({"type": "system", "subtype": "local_command", "uuid": "c1", "parentUuid": "c0", "sessionId": "S", "level": "info", "isMeta": false, "timestamp": "2026-02-01T10:00:00.000Z", "content": "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>opus</command-args>"}),
            json!({"type": "system", "subtype": "local_command", "uuid": "c2", "parentUuid": "c1", "sessionId": "S", "level": "info", "content": "<local-command-stdout>Set model to opus</local-command-stdout>"}),
            json!({"type": "system", "subtype": "informational", "uuid": "c3", "parentUuid": "c2", "sessionId": "S", "content": "Remote Control disconnected"}),
            json!({"type": "user", "uuid": "u1", "parentUuid": "c3", "sessionId": "S", "message": {"role": "user", "content": "real goal"}}),
        ]);
        let ts = import(file, "S").unwrap();
        let kinds: Vec<_> = ts[0].messages.iter().map(|m| m.kind.as_deref()).collect();
        assert_eq!(kinds, [Some("meta"), Some("command"), Some("command"), None]);
        assert!(ts[0].messages[1].content.starts_with("<command-name>/model"));
        assert_eq!(
            ts[0].messages[2].content,
            "<local-command-stdout>Set model to opus</local-command-stdout>"
        );
        assert_eq!(
            ts[0].messages[1].timestamp.as_deref(),
            Some("2026-02-01T10:00:00.000Z")
        );
        let mut main = ts[0].clone();
        super::super::finalize(&mut main);
        assert_eq!(main.meta.goal.as_deref(), Some("real goal"));
    }
}
