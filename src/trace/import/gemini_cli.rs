//! Gemini CLI chat sessions → one canonical trace each: the JSON Lines the CLI writes since 0.39
//! (`~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`; a subagent's in
//! `chats/<parent session id>/<session id>.jsonl`) and the single JSON document it wrote before
//! (`session-*.json`).
//!
//! The document: `{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`. The JSON
//! Lines: a header line `{sessionId, projectHash, startTime, lastUpdated, kind?, directories?}`,
//! then one line a message record, upserted by `id` (a message appended again when it changes
//! replaces its earlier record in its place), `{"$set": {...}}` session fields (its `messages`, a
//! checkpoint, replace the CLI's messages) and `{"$rewindTo": id}` (that message and every later
//! one dropped), read as the CLI reads them back, except that a checkpoint replacing the earlier
//! messages (`/compress`) drops none: they stay, then a `compaction` marker, then the
//! checkpoint's messages (`kind: "compaction_summary"`), warned of; any other line, operation or
//! session field is warned of and skipped, a line that is no object or a bad field is an error
//! at its line.
//!
//! A line that is not JSON is skipped, as the CLI's reader skips it (`loadConversationRecord` in
//! `packages/core/src/services/chatRecordingService.ts` of google-gemini/gemini-cli, as of commit
//! 5411f113 (August 2026), parses each line with `JSON.parse` in a `try` whose `catch` ignores
//! the error), but warned of, naming the lines and the parse error.
//! The last line apart: a record cut short, the CLI stopped while writing it (`appendRecord`
//! appends `JSON.stringify(record) + "\n"` with `fs.appendFileSync`). A bad line before the last
//! is skipped too, warned of as records lost: it is the same accident, once the session was
//! resumed (`initialize` reads the file back and appends after the cut-short record, with no
//! line end between, so the next record shares its line and is lost with it). A session with
//! no JSON line after its header is an error at its first bad line; JSON Lines of any other
//! format still fail at their first bad line.
//!
//! The session fields a trace has no field for are warned of: `kind` `"subagent"` (a
//! subagent's session; `"main"` is what every trace is) or any other kind, and `summary` (set by
//! `ChatRecordingService.saveSummary`: the one-line title `SessionSummaryService` generates for
//! the session list, or a subagent's final result; never sent to the model, so no compaction
//! summary), once, at the last place it was set.
//!
//! Each message is `{id, timestamp, type: "user" | "gemini" | "info" | "error" | "warning",
//! content, …}`:
//! - `user` → a user message (`content` a `PartListUnion`: a string, a part or a list of strings
//!   and parts; a file the person named with `@` is in it, inline data for an image or a PDF,
//!   which becomes a placeholder line with a warning); a `functionResponse` part (the CLI
//!   records the responses it sends as a user message since 0.44) is the result its call's
//!   `toolCalls` record already gave, skipped, or else a tool result of its own;
//! - `gemini` → an assistant message: `content` its text, `thoughts [{subject, description}]`
//!   its reasoning (never its text), `toolCalls [{id, name, args, result, status}]` its calls,
//!   each followed by its result (`result` holds the parts the model got: the
//!   `functionResponse`, its own inline data, and beside it the inline or file data of a tool
//!   that read an image or a PDF, each a placeholder line with a warning;
//!   `status: "error"` → `is_error`), `tokens {input, output, cached, thoughts, tool, total}`
//!   its usage (`input` includes `cached`; `output` counts the thought tokens too, as the
//!   other formats' output does), `model` the model. A message the CLI rewrote from the model's
//!   history (a checkpoint) has the model's parts as `content`: `thought` parts are reasoning,
//!   `functionCall` parts not in its `toolCalls` are calls;
//! - `info`, `error`, `warning` are messages the CLI showed the person, not the model: skipped;
//!   any other type is warned of and skipped.

use super::detect::{arr_of, str_of, Shape};
use super::gemini::{media, response_content, Conv};
use super::json::{placeholder, Node, Res};
use super::{BadLines, Importer, Input};
use crate::output::quoted;
use crate::trace::model::{ContextMarker, Message, SourceFormat, ToolCall, Trace, Usage};
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// Gemini CLI sessions: `{sessionId, messages: [{type: user|gemini, …}]}`, or JSON Lines whose
/// first line is a session header `{sessionId, projectHash, …}` (no `type`, no `messages`) and
/// whose other lines are message records and `$set` / `$rewindTo` operations.
pub const IMPORTER: Importer = Importer {
    format: SourceFormat::GeminiCli,
    detect: |shape| match shape {
        Shape::Object(o) => {
            o.contains_key("sessionId")
                && arr_of(o, "messages").is_some_and(|ms| {
                    ms.iter().any(|m| {
                        m.as_object()
                            .is_some_and(|m| matches!(str_of(m, "type"), Some("gemini" | "user")) && !m.contains_key("role"))
                    })
                })
        }
        Shape::Lines(lines, first) => {
            is_header(first)
                && (str_of(first, "projectHash").is_some()
                    || lines.iter().skip(1).any(|(_, v)| v.as_object().is_some_and(is_record)))
        }
        Shape::Array(..) => false,
    },
    import: |input, stem| match input {
        Input::Lines(lines) if lines.first().and_then(|(_, v)| v.as_object()).is_some_and(is_header) => {
            import_lines(std::mem::take(lines), stem).map(|t| vec![t])
        }
        _ => super::each_document_mut(input, stem, |v, path, id| {
            import_value(&Node::at(v, path), id).map(|t| vec![t])
        }),
    },
};

/// The message types Gemini CLI writes (`user`, `gemini`, and what it showed the person only).
const MESSAGE_TYPES: [&str; 5] = ["user", "gemini", "info", "error", "warning"];

/// The fields of a session (`ConversationRecord`), which a header line and `$set` hold.
const SESSION_FIELDS: [&str; 9] = [
    "sessionId",
    "projectHash",
    "startTime",
    "lastUpdated",
    "messages",
    "summary",
    "memoryScratchpad",
    "directories",
    "kind",
];

/// The first line of a JSON Lines session: `{sessionId, projectHash, startTime, lastUpdated,
/// kind?, directories?}`, with neither a `type` (a record of another tool) nor the `messages`
/// of a whole session document (JSON Lines of those are one session a line).
fn is_header(o: &Map<String, Value>) -> bool {
    str_of(o, "sessionId").is_some() && !o.contains_key("type") && !o.contains_key("messages")
}

/// A line of a JSON Lines session after its header: a `$set` or `$rewindTo` operation, or a
/// message record `{id, type: user|gemini|info|error|warning, …}` (no chat `role` or `message`).
fn is_record(o: &Map<String, Value>) -> bool {
    o.contains_key("$set")
        || o.contains_key("$rewindTo")
        || (str_of(o, "id").is_some()
            && str_of(o, "type").is_some_and(|t| MESSAGE_TYPES.contains(&t))
            && !o.contains_key("role")
            && !o.contains_key("message"))
}

/// Whether `input` is a JSON Lines session (its first line a header) holding a line after its
/// header: then the lines that are not JSON are skipped, warned of ([`warn_of_bad_lines`]), as
/// the CLI's reader skips them; without one (every line after the header bad) the first bad
/// line is the error.
pub(crate) fn skips_bad_lines(input: &Input) -> bool {
    match input {
        Input::Lines(lines) => {
            lines.len() > 1 && lines.first().and_then(|(_, v)| v.as_object()).is_some_and(is_header)
        }
        Input::Json(_) => false,
    }
}

/// The warnings for the lines of a JSON Lines session that are not JSON, skipped (see
/// [`skips_bad_lines`]), first among the warnings of its trace: one for the lines before the
/// last (each a record lost), one for the last line (cut short), each naming the lines and the
/// first one's parse error.
pub(crate) fn warn_of_bad_lines(traces: &mut [Trace], bad: &BadLines) {
    let Some(t) = traces.first_mut() else { return };
    let (last, middle): (Vec<_>, Vec<_>) = bad.lines.iter().partition(|(n, _)| *n == bad.last);
    let mut warnings = Vec::new();
    if let Some((_, e)) = middle.first() {
        let numbers: Vec<_> = middle.iter().map(|(n, _)| n.to_string()).collect();
        warnings.push(format!(
            "{} {}: not JSON ({}: {}); skipped, as Gemini CLI's reader (`loadConversationRecord`) skips a line it \
             cannot parse: the record(s) on it are lost (a record cut short when the CLI was stopped ends up so, \
             joined to the next one the CLI appends when the session is resumed)",
            if numbers.len() == 1 { "line" } else { "lines" },
            numbers.join(", "),
            e.location,
            e.message
        ));
    }
    if let Some((n, e)) = last.first() {
        warnings.push(format!(
            "line {n}, the last: not JSON ({}: {}); skipped, as Gemini CLI's reader (`loadConversationRecord`) \
             skips it: the record the CLI was writing when it was stopped is lost",
            e.location, e.message
        ));
    }
    t.meta.warnings.splice(0..0, warnings);
}

/// A message record of a JSON Lines session, kept until the end of the file: where it was
/// read, and its value.
struct Kept {
    path: String,
    id: String,
    v: Value,
    /// A message of a checkpoint that replaced earlier messages (a compaction, as `/compress`
    /// writes): `kind: "compaction_summary"`.
    summary: bool,
}

/// Keep message record `v` (read at `path`): in the place of the earlier record of its `id`
/// among the CLI's current messages (`kept[live..]`: the CLI appends a message again whole when
/// it changes: its tool calls, its tokens), else last. An item that is no record (no string
/// `id`) is skipped, warned of.
fn keep(kept: &mut Vec<Kept>, live: usize, v: Value, path: String, warnings: &mut Vec<String>) -> Res<()> {
    let id = match Node::at(&v, path.clone()).key("id").opt_str()? {
        Some(id) => id.to_string(),
        None => {
            warnings.push(format!("{path}: an item with no message id; skipped"));
            return Ok(());
        }
    };
    match kept[live..].iter_mut().find(|k| k.id == id) {
        Some(k) => {
            k.path = path;
            k.v = v;
        }
        None => {
            kept.push(Kept { path, id, v, summary: false });
        }
    }
    Ok(())
}

/// A JSON Lines session (Gemini CLI 0.39 and later), read as the CLI reads it back
/// (`loadConversationRecord`): each line in turn is a `$rewindTo` (drop that message and every
/// later one), a message record (upserted by `id`), a `$set` (session fields; its `messages`, a
/// checkpoint, replace the CLI's messages) or a header (session fields; `messages` too, if any,
/// as upserts). A checkpoint that writes the CLI's messages again (at start, a sync) upserts
/// them; one that repeats the first and leaves out the later ones (a rolled-back request)
/// removes those, warned of; one that replaces them (`/compress`) keeps them, warned of, and
/// its messages follow a `compaction` marker: later upserts and rewinds act on its messages
/// only (the CLI's list), never on the history before the marker. Then the messages that remain
/// are converted as a session document's are.
fn import_lines(lines: Vec<(usize, Value)>, stem: &str) -> Res<Trace> {
    let mut c = Conv::new(stem, SourceFormat::GeminiCli);
    let mut kept: Vec<Kept> = Vec::new();
    // Where the CLI's current messages begin in `kept` (after the last compaction checkpoint;
    // the messages before it are the history it replaced).
    let mut live = 0;
    // Where a compaction marker goes: before `kept[i]` (or last, if nothing follows it).
    let mut compactions: Vec<usize> = Vec::new();
    // Where the session's `summary` was last set.
    let mut summary = None;
    for (n, mut v) in lines {
        let r = Node::line_root(&v, n);
        let o = r.obj()?;
        if o.contains_key("$rewindTo") {
            let to = r.key("$rewindTo");
            let id = to.str()?;
            match kept[live..].iter().position(|k| k.id == id) {
                Some(at) => kept.truncate(live + at),
                None => {
                    // The CLI (`loadConversationRecord`) clears its messages: after a
                    // compaction checkpoint those are the checkpoint's, and the history it
                    // replaced (before its marker) stays.
                    let dropped = if live == 0 {
                        "every earlier message was dropped".to_string()
                    } else {
                        format!(
                            "every message since the last compaction checkpoint was dropped \
                             (the {live} message(s) before its compaction marker, the history it replaced, stay)"
                        )
                    };
                    c.t.meta.warnings.push(format!(
                        "{}: rewind to message {}, which is not in the session: {dropped}, as Gemini CLI does",
                        to.path,
                        quoted(id)
                    ));
                    kept.truncate(live);
                }
            }
        } else if o.contains_key("id") {
            r.key("id").str()?;
            let path = r.path.clone();
            keep(&mut kept, live, v, path, &mut c.t.meta.warnings)?;
        } else if o.contains_key("$set") || str_of(o, "sessionId").is_some() {
            let set = if o.contains_key("$set") { r.key("$set") } else { r.clone() };
            let fields = set.obj()?;
            for k in fields.keys().filter(|k| !SESSION_FIELDS.contains(&k.as_str())) {
                c.t.meta.warnings.push(format!(
                    "{}: a session field Gemini CLI does not write; ignored",
                    set.key(k).path
                ));
            }
            if let Some(id) = set.key("sessionId").opt_str()? {
                c.t.meta.task_id = Some(id.to_string());
            }
            summary = kind_and_summary(&set, &mut c.t.meta.warnings)?.or(summary);
            if fields.contains_key("messages") {
                let path = set.path.clone();
                let checkpoint = o.contains_key("$set");
                let target = if checkpoint { v.get_mut("$set") } else { Some(&mut v) };
                let Some(target) = target else { continue };
                let items = Node::take_items(target, path.clone(), "messages")?;
                let mut compaction = false;
                if checkpoint {
                    // The CLI's messages the checkpoint writes again first, in order (a sync, a
                    // rolled-back request), by id.
                    let same = kept[live..]
                        .iter()
                        .zip(&items)
                        .take_while(|(k, (x, _))| x.get("id").and_then(Value::as_str) == Some(k.id.as_str()))
                        .count();
                    let replaced = kept.len() - live - same;
                    if replaced > 0 && same > 0 {
                        // A request rolled back (cancelled or failed): the CLI took its
                        // messages out of the model's history; so does the trace.
                        c.t.meta.warnings.push(format!(
                            "{path}: a checkpoint keeps the first {same} message(s) and drops the {replaced} later one(s) \
                             (a rolled-back request): they are removed, as Gemini CLI removed them from the model's history"
                        ));
                        kept.truncate(live + same);
                    } else if replaced > 0 {
                        // The history replaced (`/compress`): the messages the model saw stay,
                        // then a compaction marker, then the checkpoint's messages.
                        c.t.meta.warnings.push(format!(
                            "{path}: a checkpoint replaced the {replaced} earlier message(s) (a compaction, as `/compress` writes): \
                             they are kept, followed by a compaction marker and the checkpoint's messages"
                        ));
                        live = kept.len();
                        compactions.push(live);
                        compaction = true;
                    }
                }
                for (x, at) in items {
                    keep(&mut kept, live, x, at, &mut c.t.meta.warnings)?;
                }
                if compaction {
                    for k in &mut kept[live..] {
                        k.summary = true;
                    }
                }
            }
        } else {
            let what = match o.keys().find(|k| k.starts_with('$')) {
                Some(op) => format!("an operation Gemini CLI does not write ({})", quoted(op)),
                None => "no message record (no `id`), session header or `$set` / `$rewindTo` operation".to_string(),
            };
            c.t.meta.warnings.push(format!("{}: {what}; the line was skipped", r.path));
        }
    }
    c.t.meta.warnings.extend(summary.map(summary_not_imported));
    let mut answered = HashSet::new();
    let mut marks = compactions.into_iter().peekable();
    for (i, k) in kept.iter().enumerate() {
        while marks.next_if_eq(&i).is_some() {
            compaction_marker(&mut c);
        }
        let from = c.t.messages.len();
        message(&mut c, &mut answered, &Node::at(&k.v, k.path.clone()))?;
        if k.summary {
            for m in &mut c.t.messages[from..] {
                m.kind = Some("compaction_summary".into());
            }
        }
    }
    for _ in marks {
        compaction_marker(&mut c);
    }
    Ok(c.finish())
}

/// The session fields `kind` and `summary` of a header, a `$set` or a session document
/// (`ConversationRecord` in `chatRecordingTypes.ts`), which a trace has no field for: `kind`
/// `"main"` is what every trace is; `"subagent"` (a subagent's session, which
/// `ChatRecordingService.initialize` writes under its parent's id) and any other kind are warned
/// of in `warnings`. `summary` (written by `ChatRecordingService.saveSummary`: the one-line title
/// `SessionSummaryService` generates for the session list, or a subagent's final result cut to
/// 200 characters, in `LocalAgentExecutor`; never sent to the model, so no compaction summary):
/// where it is, for [`summary_not_imported`].
fn kind_and_summary(set: &Node<'_>, warnings: &mut Vec<String>) -> Res<Option<String>> {
    let kind = set.key("kind");
    match kind.opt_str()? {
        None | Some("main") => {}
        Some("subagent") => warnings.push(format!(
            "{}: a subagent's session (`kind: \"subagent\"`, which a trace has no field for): \
             imported as a session of its own, apart from its parent agent's",
            kind.path
        )),
        Some(other) => warnings.push(format!(
            "{}: a session kind Gemini CLI does not write ({}; it writes main, subagent); ignored",
            kind.path,
            quoted(other)
        )),
    }
    let summary = set.key("summary");
    Ok(summary.opt_str()?.map(|_| summary.path))
}

/// The warning for the session's `summary` at `at` (the last one set: the one the CLI reads).
fn summary_not_imported(at: String) -> String {
    format!(
        "{at}: the session's summary (the one-line title Gemini CLI generates for its session list, \
         or a subagent's final result; never part of the model's context) is not imported"
    )
}

/// A `compaction` marker before the next message: a checkpoint replaced the messages before it.
fn compaction_marker(c: &mut Conv) {
    c.t.markers.push(ContextMarker {
        index: c.t.messages.len(),
        kind: "compaction".into(),
        detail: Some("gemini-cli".into()),
        tokens_before: None,
    });
}

fn import_value(root: &Node<'_>, id: &str) -> Res<Trace> {
    root.obj()?;
    let mut c = Conv::new(id, SourceFormat::GeminiCli);
    c.t.meta.task_id = root.key("sessionId").opt_str()?.map(String::from);
    let summary = kind_and_summary(root, &mut c.t.meta.warnings)?;
    let mut answered = HashSet::new();
    for m in root.key("messages").items()? {
        message(&mut c, &mut answered, &m)?;
    }
    c.t.meta.warnings.extend(summary.map(summary_not_imported));
    Ok(c.finish())
}

/// One message record into `c`. `answered` holds the recorded ids of the calls whose result a
/// `toolCalls` record gave: the CLI (0.44 and later) also records the function responses it
/// sends as a user message, and those are the same results, not new ones.
fn message(c: &mut Conv, answered: &mut HashSet<String>, m: &Node<'_>) -> Res<()> {
    m.obj()?;
    let ts = m.key("timestamp").opt_str()?.map(String::from);
    match m.key("type").str()? {
        "user" => {
            let mut text = Vec::new();
            let mut responses = false;
            for p in parts(&m.key("content"))? {
                let fr = p.key("functionResponse");
                if fr.is_null() {
                    text.extend(part(&p, &mut c.t.meta.warnings)?);
                    continue;
                }
                responses = true;
                if fr.key("id").opt_str()?.is_some_and(|id| answered.contains(id)) {
                    // The result its call's record holds (imported with the call).
                    continue;
                }
                if !text.is_empty() {
                    let mut u = Message::user(std::mem::take(&mut text).join("\n"));
                    u.timestamp = ts.clone();
                    c.t.messages.push(u);
                }
                let mut r = c.response(&fr)?;
                r.timestamp = ts.clone();
                c.t.messages.push(r);
            }
            if !text.is_empty() || !responses {
                let mut u = Message::user(text.join("\n"));
                u.timestamp = ts;
                c.t.messages.push(u);
            }
        }
        "gemini" => {
            if c.t.meta.model.is_none() {
                c.t.meta.model = m.key("model").opt_str()?.map(String::from);
            }
            let mut results = Vec::new();
            let mut calls = Vec::new();
            let mut recorded_calls = HashSet::new();
            for tc in m.key("toolCalls").opt_items()? {
                tc.obj()?;
                let name = tc.key("name").str()?;
                let recorded = tc.key("id").opt_str()?;
                recorded_calls.extend(recorded.map(String::from));
                let id = c.pairs.issue(recorded, name, &mut c.t.meta.warnings, &tc.path);
                let args = tc.key("args");
                calls.push(ToolCall {
                    id: id.clone(),
                    name: name.to_string(),
                    arguments: if args.is_null() { json!({}) } else { args.v.clone() },
                });
                // The result the model got: its parts, in order (the functionResponse, then the
                // inline or file data the CLI sends beside it).
                let mut texts = Vec::new();
                for part in parts(&tc.key("result"))? {
                    let fr = part.key("functionResponse");
                    let text = if fr.is_null() {
                        self::part(&part, &mut c.t.meta.warnings)?
                    } else {
                        Some(response_content(&fr, &mut c.t.meta.warnings)?)
                    };
                    texts.extend(text.filter(|t| !t.is_empty()));
                }
                let status = tc.key("status").opt_str()?;
                if tc.key("result").is_null() && status != Some("error") {
                    // Not run (cancelled, or the session ended first): the call stays open.
                    continue;
                }
                c.pairs.answer(recorded, name);
                answered.extend(recorded.map(String::from));
                let mut r = Message::tool(id, name, texts.join("\n"));
                r.is_error = matches!(status, Some("error" | "cancelled"));
                r.timestamp = tc.key("timestamp").opt_str()?.map(String::from);
                results.push(r);
            }
            // The content: a string, or (a message the CLI rewrote from the model's history) the
            // parts the model returned, whose thoughts are its reasoning and whose calls not
            // in `toolCalls` are calls too.
            let mut text = Vec::new();
            let mut thought_parts = Vec::new();
            for p in parts(&m.key("content"))? {
                let fc = p.key("functionCall");
                if !fc.is_null() {
                    fc.obj()?;
                    let recorded = fc.key("id").opt_str()?;
                    if recorded.is_some_and(|r| recorded_calls.contains(r)) {
                        continue;
                    }
                    let name = fc.key("name").str()?;
                    let id = c.pairs.issue(recorded, name, &mut c.t.meta.warnings, &fc.path);
                    let args = fc.key("args");
                    calls.push(ToolCall {
                        id,
                        name: name.to_string(),
                        arguments: if args.is_null() { json!({}) } else { args.v.clone() },
                    });
                } else if p.key("thought").opt_bool()? == Some(true) && p.key("text").opt_str()?.is_some() {
                    thought_parts.push(p.key("text").str()?.to_string());
                } else {
                    text.extend(part(&p, &mut c.t.meta.warnings)?);
                }
            }
            let mut a = Message::assistant(text.join("\n"), calls);
            let mut thoughts = Vec::new();
            for th in m.key("thoughts").opt_items()? {
                let subject = th.key("subject").opt_str()?.unwrap_or("");
                let desc = th.key("description").opt_str()?.unwrap_or("");
                thoughts.push(format!("{subject}: {}", desc.trim()));
            }
            thoughts.extend(thought_parts);
            if !thoughts.is_empty() {
                a.reasoning = Some(thoughts.join("\n"));
            }
            let tok = m.key("tokens");
            if !tok.is_null() {
                a.usage = Some(Usage {
                    input: tok.key("input").opt_u64()?.unwrap_or(0),
                    output: tok.key("output").opt_u64()?.unwrap_or(0)
                        + tok.key("thoughts").opt_u64()?.unwrap_or(0),
                    cache_read: tok.key("cached").opt_u64()?.unwrap_or(0),
                    cache_write: 0,
                });
            }
            a.timestamp = ts;
            c.t.messages.push(a);
            c.t.messages.extend(results);
        }
        "info" | "error" | "warning" => {}
        other => c.t.meta.warnings.push(format!(
            "{}: a message of type {}, which Gemini CLI does not write (user, gemini, info, error, warning); skipped",
            m.key("type").path,
            quoted(other)
        )),
    }
    Ok(())
}

/// The parts of a `PartListUnion` (a string, one part, or a list of strings and parts; `null`
/// or missing: none).
fn parts<'a>(n: &Node<'a>) -> Res<Vec<Node<'a>>> {
    match n.v {
        Value::Null => Ok(Vec::new()),
        Value::Array(_) => n.items(),
        Value::String(_) | Value::Object(_) => Ok(vec![n.clone()]),
        _ => Err(n.expected("a string, a part or a list of parts")),
    }
}

/// One part that is no function response: a string or a `text` part as it is, inline or file
/// data as its placeholder (`[image/png]`, `[application/pdf]`: [`media`]), any other part as
/// the placeholder of its field (`[functionCall]`, …); each placeholder warned of at the part's
/// path in `warnings`. `None` for an empty part.
fn part(p: &Node<'_>, warnings: &mut Vec<String>) -> Res<Option<String>> {
    match p.v {
        Value::String(s) => Ok(Some(s.clone())),
        Value::Object(o) => {
            if let Some(t) = p.key("text").opt_str()? {
                return Ok(Some(t.to_string()));
            }
            if let Some(m) = media(p, warnings)? {
                return Ok(Some(m));
            }
            Ok(o.keys().next().map(|k| placeholder(p, k, warnings)))
        }
        _ => Err(p.expected("a string or a part object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::import::detect::detect;
    use crate::trace::model::{ContextMarker, Role};

    #[test]
    fn calls_results_thoughts_and_tokens() {
        let v = json!({"sessionId": "s", "messages": [
            {"type": "user", "content": "list"},
            {"type": "info", "content": "shown to the person only"},
            {"type": "gemini", "content": "", "model": "gemini-3",
             "thoughts": [{"subject": "Plan", "description": "list the dir"}],
             "toolCalls": [{"id": "ls-1", "name": "list_directory", "args": {"dir_path": "/"},
                 "result": [{"functionResponse": {"id": "ls-1", "name": "list_directory", "response": {"output": "a\nb"}}}],
                 "status": "success"}],
             "tokens": {"input": 100, "output": 5, "cached": 40, "thoughts": 7, "tool": 0, "total": 112}},
            {"type": "gemini", "content": "two files"}
        ]});
        assert_eq!(detect(&crate::trace::import::Input::Json(v.clone())), Ok(SourceFormat::GeminiCli));
        let t = (IMPORTER.import)(&mut crate::trace::import::Input::Json(v), "g").unwrap().remove(0);
        let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
        assert_eq!(t.messages[1].reasoning.as_deref(), Some("Plan: list the dir"));
        assert_eq!(
            t.messages[1].usage,
            Some(Usage { input: 100, output: 12, cache_read: 40, cache_write: 0 })
        );
        assert_eq!(t.messages[2].content, "a\nb");
        assert_eq!(t.messages[2].tool_call_id.as_deref(), Some("ls-1"));
        assert_eq!(t.meta.model.as_deref(), Some("gemini-3"));
    }

    fn warned(at: &str, noun: &str, p: &str) -> String {
        format!("{at}: {noun} was replaced by the placeholder \"[{p}]\"; its tokens are not counted")
    }

    /// A session detected as a Gemini CLI one, imported.
    fn import_json(v: serde_json::Value) -> Trace {
        use crate::trace::import::Input;
        assert_eq!(detect(&Input::Json(v.clone())), Ok(SourceFormat::GeminiCli));
        (IMPORTER.import)(&mut Input::Json(v), "g").unwrap().remove(0)
    }

    /// What the CLI records when the person names an image with `@`: a user `content` list
    /// holding inline data, which becomes a placeholder line in its place, warned of at its
    /// path (the import used to fail: "expected a string"); a content that is one part reads
    /// as a list of it.
    #[test]
    fn a_user_content_with_inline_data_is_imported() {
        let t = import_json(json!({"sessionId": "s", "messages": [
            {"type": "user", "content": [
                {"text": "what is wrong in @shot.png?"},
                {"text": "\n--- Content from referenced files ---"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"text": "\n--- End of content ---"}]},
            {"type": "gemini", "content": {"text": "The button is cut off."}}
        ]}));
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "what is wrong in @shot.png?\n\n--- Content from referenced files ---\n[image/png]\n\n--- End of content ---",
                "The button is cut off.",
            ]
        );
        assert_eq!(t.meta.warnings, [warned("$.messages[0].content[2]", "an image", "image/png")]);
    }

    /// What the CLI records when a tool reads a PDF or an image: inline data beside the
    /// functionResponse, or in its own `parts` (a model that takes multimodal function
    /// responses). Each is a placeholder line after the response's text, warned of at its path
    /// (they were dropped without a word).
    #[test]
    fn a_tool_results_inline_data_is_a_placeholder() {
        let t = import_json(json!({"sessionId": "s", "messages": [
            {"type": "user", "content": "read both"},
            {"type": "gemini", "content": "", "toolCalls": [
                {"id": "r1", "name": "read_file", "args": {"absolute_path": "/w/spec.pdf"},
                 "result": [
                    {"functionResponse": {"id": "r1", "name": "read_file",
                        "response": {"output": "Binary content provided (1 item(s))."}}},
                    {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}}],
                 "status": "success"},
                {"id": "r2", "name": "read_file", "args": {"absolute_path": "/w/b.png"},
                 "result": [{"functionResponse": {"id": "r2", "name": "read_file",
                    "response": {"output": "Binary content provided (1 item(s))."},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}}],
                 "status": "success"}]},
            {"type": "gemini", "content": "done"}
        ]}));
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            [
                "read both",
                "",
                "Binary content provided (1 item(s)).\n[application/pdf]",
                "Binary content provided (1 item(s)).\n[image/png]",
                "done",
            ]
        );
        assert_eq!(
            t.meta.warnings,
            [
                warned("$.messages[1].toolCalls[0].result[1]", "a document part", "application/pdf"),
                warned(
                    "$.messages[1].toolCalls[1].result[0].functionResponse.parts[0]",
                    "an image",
                    "image/png"
                ),
            ]
        );
    }

    /// Lines of a JSON Lines session as the CLI writes them (one JSON object a line).
    fn lines(records: &[serde_json::Value]) -> crate::trace::import::Input {
        let text: String = records.iter().map(|r| format!("{r}\n")).collect();
        crate::trace::import::parse_input(text.as_bytes()).unwrap()
    }

    fn import_lines_of(records: &[serde_json::Value]) -> Trace {
        let mut input = lines(records);
        assert_eq!(detect(&input), Ok(SourceFormat::GeminiCli));
        (IMPORTER.import)(&mut input, "g").unwrap().remove(0)
    }

    fn header() -> serde_json::Value {
        json!({"sessionId": "s1", "projectHash": "h", "startTime": "t0", "lastUpdated": "t0", "kind": "main"})
    }

    /// What Gemini CLI 0.39 and later write, read as the CLI reads it back: a checkpoint
    /// (`$set.messages`) replaces the messages, a record appended again under its id replaces
    /// the earlier one in its place, `$rewindTo` drops that message and every later one, and the
    /// function responses the CLI records as a user message are the results the tool calls
    /// already hold (not imported twice).
    #[test]
    fn json_lines_upserts_checkpoints_and_rewinds() {
        let call = json!({"id": "ls-1", "name": "list_directory", "args": {"dir_path": "/"},
            "result": [{"functionResponse": {"id": "ls-1", "name": "list_directory", "response": {"output": "a\nb"}}}],
            "status": "success", "timestamp": "t4"});
        let t = import_lines_of(&[
            header(),
            json!({"$set": {"messages": [{"id": "ctx", "timestamp": "t1", "type": "user", "content": [{"text": "<session_context>"}]}], "lastUpdated": "t1"}}),
            json!({"id": "u1", "timestamp": "t2", "type": "user", "content": [{"text": "list /"}]}),
            json!({"$set": {"lastUpdated": "t2"}}),
            json!({"id": "g1", "timestamp": "t3", "type": "gemini", "content": "", "thoughts": [], "model": "gemini-3"}),
            json!({"id": "g1", "timestamp": "t3", "type": "gemini", "content": "", "thoughts": [], "model": "gemini-3",
                   "tokens": {"input": 100, "output": 5, "cached": 40, "thoughts": 7, "tool": 0, "total": 112},
                   "toolCalls": [call]}),
            json!({"id": "r1", "timestamp": "t5", "type": "user", "content": [{"functionResponse": {"id": "ls-1", "name": "list_directory", "response": {"output": "a\nb"}}}]}),
            json!({"id": "g2", "timestamp": "t6", "type": "gemini", "content": "two files", "model": "gemini-3"}),
            json!({"id": "u2", "timestamp": "t7", "type": "user", "content": [{"text": "wrong question"}]}),
            json!({"id": "g3", "timestamp": "t8", "type": "gemini", "content": "wrong answer"}),
            json!({"$rewindTo": "u2"}),
            json!({"id": "u3", "timestamp": "t9", "type": "user", "content": [{"text": "right question"}]}),
            json!({"id": "g4", "timestamp": "t10", "type": "gemini", "content": "right answer"}),
            json!({"$set": {"summary": "listing", "memoryScratchpad": {"version": 1}}}),
        ]);
        let got: Vec<_> = t.messages.iter().map(|m| (m.role, m.content.as_str())).collect();
        assert_eq!(
            got,
            [
                (Role::User, "<session_context>"),
                (Role::User, "list /"),
                (Role::Assistant, ""),
                (Role::Tool, "a\nb"),
                (Role::Assistant, "two files"),
                (Role::User, "right question"),
                (Role::Assistant, "right answer"),
            ]
        );
        assert_eq!(t.messages[2].tool_calls[0].name, "list_directory");
        assert_eq!(t.messages[3].tool_call_id.as_deref(), Some("ls-1"));
        assert_eq!(
            t.messages[2].usage,
            Some(Usage { input: 100, output: 12, cache_read: 40, cache_write: 0 })
        );
        assert_eq!(t.meta.task_id.as_deref(), Some("s1"));
        assert_eq!(t.meta.model.as_deref(), Some("gemini-3"));
        assert_eq!(t.meta.warnings, [summary_not_imported("line 14: $[\"$set\"].summary".into())]);
    }

    /// A checkpoint that replaces the earlier messages (`/compress` writes the history it made,
    /// a `<state_snapshot>`) drops none of them: the messages the model saw stay, then a
    /// `compaction` marker, then the checkpoint's messages (`kind: "compaction_summary"`), with
    /// one warning giving how many it replaced. It used to drop them without a word.
    #[test]
    fn a_compaction_checkpoint_keeps_the_earlier_messages() {
        let t = import_lines_of(&[
            header(),
            json!({"id": "m1", "timestamp": "t1", "type": "user", "content": "the secret code is 4711"}),
            json!({"id": "m2", "timestamp": "t2", "type": "gemini", "content": "noted",
                   "tokens": {"input": 10, "output": 2, "cached": 0, "thoughts": 0, "tool": 0, "total": 12}}),
            json!({"$set": {"messages": [{"id": "c1", "type": "user", "content": "<state_snapshot>summary</state_snapshot>"}]}}),
            json!({"id": "m3", "timestamp": "t3", "type": "user", "content": "what was the code?"}),
        ]);
        let got: Vec<_> = t.messages.iter().map(|m| (m.role, m.content.as_str(), m.kind.as_deref())).collect();
        assert_eq!(
            got,
            [
                (Role::User, "the secret code is 4711", None),
                (Role::Assistant, "noted", None),
                (Role::User, "<state_snapshot>summary</state_snapshot>", Some("compaction_summary")),
                (Role::User, "what was the code?", None),
            ]
        );
        assert_eq!(t.messages[1].usage.map(|u| u.input), Some(10));
        assert_eq!(
            t.markers,
            [ContextMarker { index: 2, kind: "compaction".into(), detail: Some("gemini-cli".into()), tokens_before: None }]
        );
        assert_eq!(
            t.meta.warnings,
            ["line 4: $[\"$set\"]: a checkpoint replaced the 2 earlier message(s) (a compaction, as `/compress` writes): \
              they are kept, followed by a compaction marker and the checkpoint's messages"]
        );
    }

    /// After a compaction checkpoint, a record upserted by id and a `$rewindTo` act on the
    /// CLI's messages, the checkpoint's (an id in both lists is the checkpoint's message; the
    /// history before the marker stays as the model saw it). A checkpoint at start (no earlier
    /// message) or one that writes the CLI's messages again needs no marker; one that repeats
    /// the first messages and leaves out the later ones (a rolled-back request) removes those,
    /// warned of, as the CLI removed them from the model's history.
    #[test]
    fn checkpoints_upserts_and_rewinds_together() {
        let t = import_lines_of(&[
            header(),
            json!({"$set": {"messages": [{"id": "ctx", "timestamp": "t0", "type": "user", "content": "<session_context>"}]}}),
            json!({"id": "m1", "timestamp": "t1", "type": "user", "content": "first"}),
            json!({"id": "m2", "timestamp": "t2", "type": "gemini", "content": "one"}),
            json!({"id": "m3", "timestamp": "t3", "type": "user", "content": "cancelled"}),
            // a rolled-back request: the CLI's messages again, without the last one
            json!({"$set": {"messages": [
                {"id": "ctx", "timestamp": "t0", "type": "user", "content": "<session_context>"},
                {"id": "m1", "timestamp": "t1", "type": "user", "content": "first"},
                {"id": "m2", "timestamp": "t2", "type": "gemini", "content": "one"}]}}),
            // a sync writing them again: nothing replaced
            json!({"$set": {"messages": [
                {"id": "ctx", "timestamp": "t0", "type": "user", "content": "<session_context>"},
                {"id": "m1", "timestamp": "t1", "type": "user", "content": "first"},
                {"id": "m2", "timestamp": "t2", "type": "gemini", "content": "one"}]}}),
            // /compress: a snapshot, and m2 kept in the new history
            json!({"$set": {"messages": [
                {"id": "c1", "timestamp": "t4", "type": "user", "content": "<state_snapshot>s</state_snapshot>"},
                {"id": "m2", "timestamp": "t2", "type": "gemini", "content": "one (kept)"}]}}),
            json!({"id": "m2", "timestamp": "t5", "type": "gemini", "content": "one (updated)"}),
            json!({"id": "m4", "timestamp": "t6", "type": "user", "content": "wrong question"}),
            json!({"$rewindTo": "m4"}),
            json!({"id": "m5", "timestamp": "t7", "type": "user", "content": "right question"}),
        ]);
        let got: Vec<_> = t.messages.iter().map(|m| (m.content.as_str(), m.kind.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("<session_context>", None),
                ("first", None),
                ("one", None),
                ("<state_snapshot>s</state_snapshot>", Some("compaction_summary")),
                ("one (updated)", Some("compaction_summary")),
                ("right question", None),
            ]
        );
        let at: Vec<_> = t.markers.iter().map(|m| (m.index, m.kind.as_str())).collect();
        assert_eq!(at, [(3, "compaction")]);
        assert_eq!(
            t.meta.warnings,
            [
                "line 6: $[\"$set\"]: a checkpoint keeps the first 3 message(s) and drops the 1 later one(s) \
                 (a rolled-back request): they are removed, as Gemini CLI removed them from the model's history",
                "line 8: $[\"$set\"]: a checkpoint replaced the 3 earlier message(s) (a compaction, as `/compress` writes): \
                 they are kept, followed by a compaction marker and the checkpoint's messages",
            ]
        );
    }

    /// A message the CLI rewrote from the model's history (a checkpoint): its content is the
    /// parts the model returned; its thoughts are reasoning, the calls its `toolCalls` hold are
    /// not called twice, and calls only in its parts are calls, answered by the function
    /// responses of the next user message.
    #[test]
    fn parts_of_a_rewritten_message_are_calls_and_reasoning() {
        let t = import_lines_of(&[
            header(),
            json!({"$set": {"messages": [
                {"id": "u1", "timestamp": "t1", "type": "user", "content": [{"text": "read a"}]},
                {"id": "g1", "timestamp": "t2", "type": "gemini", "content": [
                    {"text": "Reading it.", "thought": true, "thoughtSignature": "c2ln"},
                    {"functionCall": {"id": "r1", "name": "read_file", "args": {"file_path": "a"}}},
                    {"functionCall": {"id": "r2", "name": "read_file", "args": {"file_path": "b"}}}],
                 "toolCalls": [{"id": "r1", "name": "read_file", "args": {"file_path": "a"},
                    "result": [{"functionResponse": {"id": "r1", "name": "read_file", "response": {"output": "A"}}}],
                    "status": "success"}]},
                {"id": "u2", "timestamp": "t3", "type": "user", "content": [
                    {"functionResponse": {"id": "r1", "name": "read_file", "response": {"output": "A"}}},
                    {"functionResponse": {"id": "r2", "name": "read_file", "response": {"output": "B"}}}]},
                {"id": "g2", "timestamp": "t4", "type": "gemini", "content": [{"text": "A and B"}]}
            ]}}),
        ]);
        let got: Vec<_> = t.messages.iter().map(|m| (m.role, m.content.as_str())).collect();
        assert_eq!(
            got,
            [
                (Role::User, "read a"),
                (Role::Assistant, ""),
                (Role::Tool, "A"),
                (Role::Tool, "B"),
                (Role::Assistant, "A and B"),
            ]
        );
        let calls: Vec<_> = t.messages[1].tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(calls, ["r1", "r2"]);
        assert_eq!(t.messages[1].reasoning.as_deref(), Some("Reading it."));
        assert_eq!(t.messages[3].tool_call_id.as_deref(), Some("r2"));
        assert!(crate::trace::import::pairing_problems(&t).is_empty());
        assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    }

    /// Nothing is dropped without a word: an operation or a line of a kind the CLI does not
    /// write, a session field it does not write, a message type it does not write, and a rewind
    /// to a message the file does not hold (every earlier message dropped, as the CLI does) are
    /// each warned of at their line.
    #[test]
    fn unknown_lines_and_operations_are_warned_of() {
        let t = import_lines_of(&[
            header(),
            json!({"id": "u0", "timestamp": "t", "type": "user", "content": "lost"}),
            json!({"$rewindTo": "nowhere"}),
            json!({"id": "u1", "timestamp": "t", "type": "user", "content": "hi"}),
            json!({"$patch": {"id": "u1"}}),
            json!({"note": "x"}),
            json!({"$set": {"lastUpdated": "t", "color": "blue"}}),
            json!({"id": "s1", "timestamp": "t", "type": "system", "content": "?"}),
            json!({"id": "g1", "timestamp": "t", "type": "gemini", "content": "hello"}),
        ]);
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["hi", "hello"]);
        assert_eq!(
            t.meta.warnings,
            [
                "line 3: $[\"$rewindTo\"]: rewind to message \"nowhere\", which is not in the session: every earlier message was dropped, as Gemini CLI does",
                "line 5: $: an operation Gemini CLI does not write (\"$patch\"); the line was skipped",
                "line 6: $: no message record (no `id`), session header or `$set` / `$rewindTo` operation; the line was skipped",
                "line 7: $[\"$set\"].color: a session field Gemini CLI does not write; ignored",
                "line 8: $.type: a message of type \"system\", which Gemini CLI does not write (user, gemini, info, error, warning); skipped",
            ]
        );
    }

    /// A rewind to a message the file does not hold after a compaction checkpoint drops the
    /// CLI's messages, the checkpoint's, as the CLI clears them; the history before the
    /// compaction marker stays, and the warning says so (it said every earlier message was
    /// dropped).
    #[test]
    fn a_rewind_to_an_unknown_id_after_a_compaction_keeps_the_history() {
        let t = import_lines_of(&[
            header(),
            json!({"id": "m1", "timestamp": "t1", "type": "user", "content": "before"}),
            json!({"id": "m2", "timestamp": "t2", "type": "gemini", "content": "noted"}),
            json!({"$set": {"messages": [{"id": "c1", "type": "user", "content": "<state_snapshot>s</state_snapshot>"}]}}),
            json!({"id": "m3", "timestamp": "t3", "type": "user", "content": "after"}),
            json!({"$rewindTo": "nowhere"}),
            json!({"id": "m4", "timestamp": "t4", "type": "user", "content": "again"}),
        ]);
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["before", "noted", "again"]);
        let at: Vec<_> = t.markers.iter().map(|m| m.index).collect();
        assert_eq!(at, [2]);
        assert_eq!(
            t.meta.warnings[1],
            "line 6: $[\"$rewindTo\"]: rewind to message \"nowhere\", which is not in the session: every message since the \
             last compaction checkpoint was dropped (the 2 message(s) before its compaction marker, the history it replaced, \
             stay), as Gemini CLI does"
        );
    }

    /// The session fields `kind` and `summary`, which a trace has no field for, are warned of
    /// (they were dropped without a word): a subagent's session, a kind the CLI does not write,
    /// and the session's summary (its one-line title, never sent to the model: no compaction
    /// summary), once, at the last place it was set (the one the CLI reads), in JSON Lines and
    /// in a session document; `kind: "main"` is what every trace is.
    #[test]
    fn kind_and_summary_are_warned_of() {
        let t = import_lines_of(&[
            json!({"sessionId": "s1", "projectHash": "h", "kind": "subagent", "summary": "old"}),
            json!({"id": "u1", "timestamp": "t", "type": "user", "content": "find the bug"}),
            json!({"$set": {"summary": "Find the bug"}}),
            json!({"$set": {"kind": "helper"}}),
        ]);
        assert_eq!(t.messages.len(), 1);
        assert_eq!(
            t.meta.warnings,
            [
                "line 1: $.kind: a subagent's session (`kind: \"subagent\"`, which a trace has no field for): \
                 imported as a session of its own, apart from its parent agent's"
                    .to_string(),
                "line 4: $[\"$set\"].kind: a session kind Gemini CLI does not write (\"helper\"; it writes main, subagent); ignored"
                    .to_string(),
                summary_not_imported("line 3: $[\"$set\"].summary".into()),
            ]
        );
        assert!(import_lines_of(&[header(), json!({"id": "u1", "type": "user", "content": "hi"})]).meta.warnings.is_empty());
        let t = import_json(json!({"sessionId": "s", "kind": "main", "summary": "Say hi",
            "messages": [{"type": "user", "content": "hi"}]}));
        assert_eq!(t.meta.warnings, [summary_not_imported("$.summary".into())]);
    }

    /// A session's bytes imported by auto-detection, both whole and streamed from a file (the
    /// two readers of JSON Lines), which must agree.
    fn import_session_bytes(bytes: &[u8]) -> Result<Trace, String> {
        use crate::trace::import::{import_bytes, import_file_content, FileContent};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.jsonl");
        std::fs::write(&file, bytes).unwrap();
        let whole = import_bytes(bytes, "g", None, None).map_err(|e| format!("{}: {}", e.location, e.message));
        let streamed = import_file_content(&file, None).map_err(|e| format!("{}: {}", e.location, e.message));
        let one = |r: Result<FileContent, String>| match r {
            Ok(FileContent::Traces(mut t)) => {
                assert_eq!(t.len(), 1);
                Ok(t.remove(0))
            }
            Ok(FileContent::NotATrace(why)) => Err(why),
            Err(e) => Err(e),
        };
        let (whole, streamed) = (one(whole), one(streamed));
        match (&whole, &streamed) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.messages, b.messages);
                assert_eq!(a.meta.warnings, b.meta.warnings);
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("{whole:?} / {streamed:?}"),
        }
        whole
    }

    /// A line that is not JSON (a record cut short when the CLI was stopped mid-write: the last
    /// line, or in the middle when the session was resumed and the CLI appended after it) is
    /// skipped, as the CLI's reader (`loadConversationRecord`) skips it, and warned of with its
    /// line numbers and parse error: the import used to fail. Blank lines are no bad lines.
    #[test]
    fn lines_that_are_not_json_are_skipped_and_warned_of() {
        let rec = |r: serde_json::Value| format!("{r}\n");
        let bytes = [
            rec(header()),
            rec(json!({"id": "u1", "timestamp": "t1", "type": "user", "content": "one"})),
            "{\"id\":\"g1\",\"type\":\"gem{\"$set\":{\"sessionId\":\"s1\"}}\n".to_string(),
            "\n".to_string(),
            rec(json!({"id": "g2", "timestamp": "t2", "type": "gemini", "content": "two"})),
            "not json\n".to_string(),
            rec(json!({"id": "u3", "timestamp": "t3", "type": "user", "content": "three"})),
            "{\"id\":\"g3\",\"timestamp\":\"t4\",\"type\":\"gemini\",\"cont".to_string(),
        ]
        .concat();
        let t = import_session_bytes(bytes.as_bytes()).unwrap();
        let texts: Vec<_> = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["one", "two", "three"]);
        assert_eq!(t.meta.warnings.len(), 2, "{:?}", t.meta.warnings);
        assert!(
            t.meta.warnings[0].starts_with("lines 3, 6: not JSON (line 3, column "),
            "{}",
            t.meta.warnings[0]
        );
        assert!(t.meta.warnings[0].contains("skipped, as Gemini CLI's reader (`loadConversationRecord`)"));
        assert!(
            t.meta.warnings[1].starts_with("line 8, the last: not JSON (line 8, column "),
            "{}",
            t.meta.warnings[1]
        );
        assert!(t.meta.warnings[1].contains("the record the CLI was writing when it was stopped is lost"));
    }

    /// A session of which no line after the header is JSON is still an error, at the first bad
    /// line; so is a bad line in JSON Lines of another format (only a Gemini CLI session skips
    /// them, as its CLI does).
    #[test]
    fn a_session_of_bad_lines_only_is_an_error() {
        let bytes = format!("{}\nnot json\n{{\"id\":\"u1\",\"ty", header());
        let e = import_session_bytes(bytes.as_bytes()).unwrap_err();
        assert!(e.starts_with("line 2, column 2: invalid JSON: "), "{e}");
        let other = b"{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\nnot json\n";
        let e = import_session_bytes(other).unwrap_err();
        assert!(e.starts_with("line 3, column 2: invalid JSON: "), "{e}");
    }

    /// A bad line is an error naming its line and what was expected, never a panic.
    #[test]
    fn bad_lines_name_their_line() {
        let cases = [
            (json!([1]), "line 2: $", "expected an object"),
            (json!({"$rewindTo": 5}), "line 2: $[\"$rewindTo\"]", "expected a string"),
            (json!({"$set": "x"}), "line 2: $[\"$set\"]", "expected an object"),
            (json!({"id": 7, "type": "user"}), "line 2: $.id", "expected a string"),
            (json!({"id": "u", "content": "hi"}), "line 2: $.type", "expected a string"),
            (json!({"id": "g", "type": "gemini", "content": "", "toolCalls": [{"args": {}}]}), "line 2: $.toolCalls[0].name", "expected a string"),
        ];
        for (line, at, want) in cases {
            let mut input = lines(&[header(), line]);
            let e = (IMPORTER.import)(&mut input, "g").unwrap_err();
            assert_eq!(e.location, at);
            assert!(e.message.contains(want), "{at}: {}", e.message);
        }
    }

    /// The JSON Lines rule claims Gemini CLI sessions and no other tool's JSON Lines; a session
    /// document (one a line) is still read as documents.
    #[test]
    fn json_lines_detection() {
        use crate::trace::import::parse_input;
        let session = lines(&[header(), json!({"id": "u", "timestamp": "t", "type": "user", "content": "hi"})]);
        assert_eq!(detect(&session), Ok(SourceFormat::GeminiCli));
        // no projectHash: claimed by its records
        let bare = lines(&[json!({"sessionId": "s"}), json!({"$set": {"lastUpdated": "t"}})]);
        assert_eq!(detect(&bare), Ok(SourceFormat::GeminiCli));
        for (other, format) in [
            ("{\"type\":\"queue-operation\",\"sessionId\":\"s\"}\n{\"type\":\"user\",\"sessionId\":\"s\",\"uuid\":\"u\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n", SourceFormat::ClaudeCode),
            ("{\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\n{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}}\n", SourceFormat::Codex),
            ("{\"sessionId\":\"s\",\"messages\":[{\"type\":\"user\",\"content\":\"a\"}]}\n{\"sessionId\":\"t\",\"messages\":[{\"type\":\"user\",\"content\":\"b\"}]}\n", SourceFormat::GeminiCli),
        ] {
            let input = parse_input(other.as_bytes()).unwrap();
            assert_eq!(detect(&input), Ok(format), "{other}");
        }
        // a session document a line: one trace a line, as before
        let mut docs = parse_input(b"{\"sessionId\":\"s\",\"messages\":[{\"type\":\"user\",\"content\":\"a\"}]}\n{\"sessionId\":\"t\",\"messages\":[{\"type\":\"user\",\"content\":\"b\"}]}\n").unwrap();
        assert_eq!((IMPORTER.import)(&mut docs, "g").unwrap().len(), 2);
        // a canonical trace is not a session
        assert!(crate::trace::import::detect::looks_canonical(b"{\"type\":\"header\",\"schema_version\":1}\n"));
    }

    /// Audio or video a tool read: the CLI records it under `__binary_injection__` in the
    /// function response, base64 the model never read as text there. It is a placeholder line,
    /// warned of, not text.
    #[test]
    fn a_binary_injection_is_a_placeholder() {
        let t = import_json(json!({"sessionId": "s", "messages": [
            {"type": "user", "content": "transcribe a.mp3"},
            {"type": "gemini", "content": "", "toolCalls": [
                {"id": "r1", "name": "read_file", "args": {"file_path": "a.mp3"},
                 "result": [{"functionResponse": {"id": "r1", "name": "read_file", "response": {
                    "output": "Binary content (audio/mpeg) read successfully. Content will be injected for analysis in the next sequence.",
                    "__binary_injection__": [{"inlineData": {"mimeType": "audio/mpeg", "data": "SUQzBAAAAAAAI1RTU0UAAAAPAAADTGF2ZjU4"}}]}}}],
                 "status": "success"}]}
        ]}));
        assert_eq!(
            t.messages[2].content,
            "Binary content (audio/mpeg) read successfully. Content will be injected for analysis in the next sequence.\n[audio/mpeg]"
        );
        assert_eq!(
            t.meta.warnings,
            [warned(
                "$.messages[1].toolCalls[0].result[0].functionResponse.response.__binary_injection__[0]",
                "an audio part",
                "audio/mpeg"
            )]
        );
    }
}
