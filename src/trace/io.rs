//! Reading and writing canonical trace JSONL (streamed, one line per message).
//!
//! A trace is a header line `{"type":"header","schema_version":1,"meta":{…}}` followed by its
//! `{"type":"message",…}` and `{"type":"marker",…}` lines; a marker line sits before the message
//! its `index` names. Several traces may follow each other in one file. Reading is streamed with
//! `BufRead` (one line in memory at a time, plus the trace being built) and every error names the
//! file, the line, and for a wrong field the JSON path (`line 7: $.tool_calls[0].id`).
//!
//! One reader for every JSONL trace ctxbench reads line by line: canonical lines (above) and
//! golden-fixture role lines (`{"role", "content", "tool_calls"?: [{"id", "name", "args"}],
//! "tool_call_id"?, "name"?}`, the `golden` input format, one trace per file, see
//! `read_role_lines`). Each line is deserialized once, typed, straight into the trace model
//! (`parse_line`); only a line that fails is parsed again with path tracking, to name the
//! JSON path of the bad field in the error.

use super::import::{json_error, ImportError, Located};
use super::model::{
    ContextMarker, Message, Role, SourceFormat, ThinkingBlock, ToolCall, Trace, TraceMeta, Usage,
    SCHEMA_VERSION,
};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

/// Borrowing twin of `TraceLine` so writing never clones message text.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum LineRef<'a> {
    Header {
        schema_version: u32,
        meta: &'a TraceMeta,
    },
    Message(&'a Message),
    Marker(&'a ContextMarker),
}

fn write_line<W: Write>(w: &mut W, line: &LineRef<'_>) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, line).map_err(std::io::Error::other)?;
    w.write_all(b"\n")
}

/// Write one trace: header, then messages with each marker placed before the message at its
/// index (markers are written in index order; markers past the end come last).
pub fn write_trace<W: Write>(w: &mut W, t: &Trace) -> std::io::Result<()> {
    write_line(
        w,
        &LineRef::Header {
            schema_version: SCHEMA_VERSION,
            meta: &t.meta,
        },
    )?;
    let mut markers: Vec<&ContextMarker> = t.markers.iter().collect();
    markers.sort_by_key(|m| m.index);
    let mut next = markers.into_iter().peekable();
    for (i, m) in t.messages.iter().enumerate() {
        while let Some(k) = next.next_if(|k| k.index <= i) {
            write_line(w, &LineRef::Marker(k))?;
        }
        write_line(w, &LineRef::Message(m))?;
    }
    for k in next {
        write_line(w, &LineRef::Marker(k))?;
    }
    Ok(())
}

/// Write several traces back to back.
pub fn write_traces<W: Write>(w: &mut W, traces: &[Trace]) -> std::io::Result<()> {
    for t in traces {
        write_trace(w, t)?;
    }
    Ok(())
}

/// Write traces to a file (created or truncated), buffered.
pub fn write_traces_file(path: &Path, traces: &[Trace]) -> std::io::Result<()> {
    let mut w = BufWriter::new(std::fs::File::create(path)?);
    write_traces(&mut w, traces)?;
    w.flush()
}

/// Serialize one trace to a string (handy in tests and for hashing).
pub fn trace_to_string(t: &Trace) -> String {
    let mut out = Vec::new();
    write_trace(&mut out, t).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Read every trace of a canonical JSONL file.
pub fn read_traces(path: &Path) -> Result<Vec<Trace>, ImportError> {
    let f = std::fs::File::open(path)
        .map_err(|e| ImportError::new(path, "file", format!("cannot open the file: {e}")))?;
    TraceReader::new(
        std::io::BufReader::with_capacity(1 << 16, f),
        path.display().to_string(),
    )
    .collect()
}

/// Read every trace from any buffered reader; `file` names the source in errors.
pub fn read_traces_from<R: BufRead>(r: R, file: &str) -> Result<Vec<Trace>, ImportError> {
    TraceReader::new(r, file).collect()
}

/// Streaming reader: yields one trace at a time. After an error it yields nothing more.
pub struct TraceReader<R> {
    r: R,
    file: String,
    line: usize,
    buf: Vec<u8>,
    /// A header already read that starts the next trace (line, meta).
    next_header: Option<TraceMeta>,
    done: bool,
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(r: R, file: impl Into<String>) -> Self {
        TraceReader {
            r,
            file: file.into(),
            line: 0,
            buf: Vec::new(),
            next_header: None,
            done: false,
        }
    }

    fn err(&self, location: impl Into<String>, message: impl Into<String>) -> ImportError {
        ImportError {
            file: self.file.clone(),
            location: location.into(),
            message: message.into(),
        }
    }

    fn parse_line(&self) -> Result<Line, ImportError> {
        parse_line(&self.buf, self.line).map_err(|l| self.err(l.location, l.message))
    }

    fn next_trace(&mut self) -> Result<Option<Trace>, ImportError> {
        let mut current: Option<Trace> = self.next_header.take().map(Trace::new);
        let mut marker_lines: Vec<(usize, usize)> = Vec::new();
        loop {
            self.buf.clear();
            let n = self.r.read_until(b'\n', &mut self.buf).map_err(|e| {
                self.err(
                    format!("line {}", self.line + 1),
                    format!("read error: {e}"),
                )
            })?;
            if n == 0 {
                self.done = true;
                break;
            }
            self.line += 1;
            if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            match self.parse_line()? {
                Line::Header(meta) => {
                    if current.is_some() {
                        self.next_header = Some(meta);
                        break;
                    }
                    current = Some(Trace::new(meta));
                }
                Line::Message(m, note) => match current.as_mut() {
                    Some(t) => {
                        t.messages.push(m);
                        t.meta.warnings.extend(note);
                    }
                    None => return Err(self.before_header()),
                },
                Line::Role(_) => {
                    return Err(self.err(
                        format!("line {}: $.type", self.line),
                        "expected \"header\", \"message\" or \"marker\"",
                    ))
                }
                Line::Marker(k) => match current.as_mut() {
                    Some(t) => {
                        marker_lines.push((k.index, self.line));
                        t.markers.push(k);
                    }
                    None => return Err(self.before_header()),
                },
            }
        }
        if let Some(t) = &current {
            if let Some((idx, line)) = marker_lines.iter().find(|(i, _)| *i > t.messages.len()) {
                return Err(self.err(
                    format!("line {line}: $.index"),
                    format!(
                        "marker index {idx} is past the end of trace {} ({} messages); expected at most {}",
                        crate::output::quoted(&t.meta.id),
                        t.messages.len(),
                        t.messages.len()
                    ),
                ));
            }
        }
        Ok(current)
    }

    fn before_header(&self) -> ImportError {
        self.err(
            format!("line {}", self.line),
            "a message or marker line before any header; expected {\"type\":\"header\",…} first",
        )
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<Trace, ImportError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done && self.next_header.is_none() {
            return None;
        }
        match self.next_trace() {
            Ok(Some(t)) => Some(Ok(t)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                self.next_header = None;
                Some(Err(e))
            }
        }
    }
}

/// One line of a JSONL trace.
#[derive(Debug, PartialEq)]
pub(crate) enum Line {
    /// A canonical header (its `schema_version` checked).
    Header(TraceMeta),
    /// A canonical message line, with what reading it noted (a partial `usage` read as none).
    Message(Message, Option<String>),
    /// A canonical marker line.
    Marker(ContextMarker),
    /// A golden-fixture role line (no `type`).
    Role(Message),
}

/// A field that must not be `null` when present (the model's type has no `Option` there):
/// present → `Some`, absent → `None` via `#[serde(default)]`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Every field a line of either kind may carry; unknown fields are ignored.
#[derive(Deserialize)]
struct AnyLine {
    #[serde(rename = "type")]
    ty: Option<String>,
    // header
    schema_version: Option<u64>,
    /// Read as a tree first (one line per trace), so the version is checked before the meta.
    meta: Option<Value>,
    // message and role line
    role: Option<Role>,
    #[serde(default, deserialize_with = "present")]
    content: Option<String>,
    #[serde(default, deserialize_with = "present")]
    tool_calls: Option<Vec<LineCall>>,
    tool_call_id: Option<String>,
    name: Option<String>,
    /// Kept as a tree: read (and checked) on message lines only; a role line carries no usage.
    usage: Option<Value>,
    reasoning: Option<String>,
    #[serde(default)]
    thinking_blocks: Vec<ThinkingBlock>,
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

/// A tool call: canonical `{id, name, arguments}`, or a role line's `{id, name, args}`
/// (LangChain's name; `arguments` also accepted there, `{}` when neither is given).
#[derive(Deserialize)]
struct LineCall {
    id: String,
    name: String,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    args: Option<Value>,
}

/// A message line's `usage` as written: any count may be missing.
#[derive(Deserialize)]
struct LineUsage {
    input: Option<u64>,
    output: Option<u64>,
    #[serde(default)]
    cache_read: u64,
    #[serde(default)]
    cache_write: u64,
}

/// A message line's usage: `input` and `output` both given → the usage (the cache counts default
/// to 0: they are breakdowns of `input`). With either missing the line is accepted but the
/// message has no usage, and the returned note says so: a count that was not recorded is not
/// zero, and a usage without the prompt or the completion size can neither be compared with
/// counted tokens nor priced.
fn line_usage(v: Option<Value>, line: usize) -> Result<(Option<Usage>, Option<String>), Located> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok((None, None));
    };
    let u: LineUsage = serde_path_to_error::deserialize(v).map_err(
        |e: serde_path_to_error::Error<serde_json::Error>| {
            let p = e.path().to_string();
            let location = if p == "." {
                format!("line {line}: $.usage")
            } else {
                format!("line {line}: $.usage.{p}")
            };
            Located::new(location, e.into_inner().to_string())
        },
    )?;
    match (u.input, u.output) {
        (Some(input), Some(output)) => Ok((
            Some(Usage {
                input,
                output,
                cache_read: u.cache_read,
                cache_write: u.cache_write,
            }),
            None,
        )),
        (input, output) => {
            let absent: Vec<&str> = [("input", input), ("output", output)]
                .into_iter()
                .filter(|(_, v)| v.is_none())
                .map(|(k, _)| k)
                .collect();
            Ok((
                None,
                Some(format!(
                    "line {line}: usage without `{}` (input {}, output {}); read as no usage: a count that was not recorded is not zero",
                    absent.join("` or `"),
                    input.map_or("absent".into(), |x| x.to_string()),
                    output.map_or("absent".into(), |x| x.to_string()),
                )),
            ))
        }
    }
}

fn missing(line: usize, field: &str, what: &str) -> Located {
    Located::new(format!("line {line}: $.{field}"), what.to_string())
}

/// Parse one non-blank line (`line` is its 1-based number, for errors). Typed, in one pass;
/// a line that fails is parsed again with path tracking so the error names the bad field.
pub(crate) fn parse_line(bytes: &[u8], line: usize) -> Result<Line, Located> {
    let l: AnyLine = match serde_json::from_slice(bytes) {
        Ok(l) => l,
        Err(e) => return Err(line_error(bytes, line, e)),
    };
    let calls = |calls: Option<Vec<LineCall>>, role_line: bool| -> Result<Vec<ToolCall>, Located> {
        let mut out = Vec::with_capacity(calls.as_ref().map_or(0, Vec::len));
        for (k, c) in calls.unwrap_or_default().into_iter().enumerate() {
            let arguments = if role_line {
                c.args
                    .or(c.arguments)
                    .unwrap_or_else(|| Value::Object(Default::default()))
            } else {
                c.arguments.ok_or_else(|| {
                    missing(
                        line,
                        &format!("tool_calls[{k}].arguments"),
                        "missing field `arguments`",
                    )
                })?
            };
            out.push(ToolCall {
                id: c.id,
                name: c.name,
                arguments,
            });
        }
        Ok(out)
    };
    let Some(ty) = l.ty else {
        // A golden-fixture role line.
        let role = l.role.ok_or_else(|| {
            missing(
                line,
                "role",
                "expected system|user|assistant|tool, found None",
            )
        })?;
        let content = l
            .content
            .ok_or_else(|| missing(line, "content", "missing field"))?;
        let mut m = Message::new(role, content);
        m.tool_calls = calls(l.tool_calls, true)?;
        if role == Role::Tool {
            m.tool_call_id = Some(
                l.tool_call_id
                    .ok_or_else(|| missing(line, "tool_call_id", "missing field"))?,
            );
        }
        m.name = l.name;
        return Ok(Line::Role(m));
    };
    match ty.as_str() {
        "header" => {
            let version = l.schema_version.ok_or_else(|| {
                missing(line, "schema_version", "expected a schema version number")
            })?;
            if version == 0 || version > u64::from(SCHEMA_VERSION) {
                return Err(missing(
                    line,
                    "schema_version",
                    &format!(
                        "unsupported schema_version {version}; this build reads versions 1..={SCHEMA_VERSION}"
                    ),
                ));
            }
            let meta = l.meta.unwrap_or(Value::Null);
            let meta = serde_path_to_error::deserialize(meta).map_err(
                |e: serde_path_to_error::Error<serde_json::Error>| {
                    let p = e.path().to_string();
                    let location = if p == "." {
                        format!("line {line}: $.meta")
                    } else {
                        format!("line {line}: $.meta.{p}")
                    };
                    Located::new(location, e.into_inner().to_string())
                },
            )?;
            Ok(Line::Header(meta))
        }
        // A struct literal (not `..`): a new `Message` field must be handled here too.
        "message" => {
            let (usage, note) = line_usage(l.usage, line)?;
            Ok(Line::Message(
                Message {
                    role: l
                        .role
                        .ok_or_else(|| missing(line, "role", "missing field `role`"))?,
                    content: l.content.unwrap_or_default(),
                    tool_calls: calls(l.tool_calls, false)?,
                    tool_call_id: l.tool_call_id,
                    name: l.name,
                    usage,
                    reasoning: l.reasoning,
                    thinking_blocks: l.thinking_blocks,
                    is_error: l.is_error.unwrap_or(false),
                    kind: l.kind,
                    timestamp: l.timestamp,
                },
                note,
            ))
        }
        "marker" => Ok(Line::Marker(ContextMarker {
            index: l
                .index
                .ok_or_else(|| missing(line, "index", "missing field `index`"))?,
            kind: l
                .kind
                .ok_or_else(|| missing(line, "kind", "missing field `kind`"))?,
            detail: l.detail,
            tokens_before: l.tokens_before,
        })),
        other => Err(missing(
            line,
            "type",
            &format!(
                "expected \"header\", \"message\" or \"marker\", found {other}",
                other = crate::output::quoted(other)
            ),
        )),
    }
}

/// The error of a line that does not deserialize: invalid JSON where it breaks, a line that is
/// not an object, or the JSON path of the wrong field (found by parsing again, tracking paths).
fn line_error(bytes: &[u8], line: usize, e: serde_json::Error) -> Located {
    if e.is_syntax() || e.is_eof() || e.is_io() {
        return json_error(&e, Some(line));
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Located::new(
            format!("line {line}: $"),
            "expected an object: a canonical line with \"type\": \"header\", \"message\" or \"marker\", or a role line with \"role\"",
        );
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, AnyLine>(&mut de) {
        Err(pe) => {
            let p = pe.path().to_string();
            let location = if p == "." {
                format!("line {line}: $")
            } else {
                format!("line {line}: $.{p}")
            };
            Located::new(location, pe.into_inner().to_string())
        }
        Ok(_) => Located::new(format!("line {line}"), e.to_string()),
    }
}

/// Read a file of golden-fixture role lines as one trace (id `stem`, format `golden`). Blank
/// lines are skipped; a canonical line is an error (a file is one format or the other).
pub(crate) fn read_role_lines<R: BufRead>(
    mut r: R,
    file: &str,
    stem: &str,
) -> Result<Trace, ImportError> {
    let err = |l: Located| ImportError {
        file: file.to_string(),
        location: l.location,
        message: l.message,
    };
    let mut t = Trace::new(TraceMeta::new(stem, SourceFormat::Golden));
    let mut buf = Vec::new();
    let mut line = 0usize;
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf).map_err(|e| {
            err(Located::new(
                format!("line {}", line + 1),
                format!("read error: {e}"),
            ))
        })?;
        if n == 0 {
            break;
        }
        line += 1;
        if buf.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match parse_line(&buf, line).map_err(err)? {
            Line::Role(m) => t.messages.push(m),
            _ => {
                return Err(err(Located::new(
                    format!("line {line}: $.type"),
                    "a canonical line in a file of role lines; expected {\"role\", \"content\", …} without \"type\"",
                )))
            }
        }
    }
    if t.messages.is_empty() {
        return Err(err(Located::new("file", "no messages")));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{Outcome, Role, SourceFormat, ToolCall, Usage};
    use serde_json::json;

    fn sample(id: &str) -> Trace {
        let mut meta = TraceMeta::new(id, SourceFormat::Tau);
        meta.goal = Some("réserver un vol ✈ — 東京".into());
        meta.outcome = Some(Outcome {
            success: Some(false),
            reward: Some(0.1 + 0.2),
            status: None,
        });
        meta.total_usage = Some(Usage {
            input: 10,
            output: 2,
            cache_read: 3,
            cache_write: 0,
        });
        meta.tools = vec![json!({"name": "f", "parameters": {"z": 1, "a": 2}})];
        meta.warnings = vec!["w \"quoted\"\nnewline".into()];
        let mut t = Trace::new(meta);
        t.messages.push(Message::system(""));
        t.messages
            .push(Message::user("emoji 👍🏽 and \u{2028} and \0 nul"));
        let mut a = Message::assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "edit".into(),
                arguments: json!({"z": [1, {"deep": {"x": null, "b": true}}], "a": "ü"}),
            }],
        );
        a.usage = Some(Usage {
            input: 100,
            output: 5,
            cache_read: 90,
            cache_write: 1,
        });
        a.reasoning = Some("think".into());
        t.messages.push(a);
        let mut r = Message::tool("c1", "edit", "");
        r.is_error = true;
        r.timestamp = Some("2025-01-01T00:00:00Z".into());
        t.messages.push(r);
        let mut u = Message::user("hook");
        u.kind = Some("meta".into());
        t.messages.push(u);
        t.markers.push(ContextMarker {
            index: 0,
            kind: "task_boundary".into(),
            detail: None,
            tokens_before: None,
        });
        t.markers.push(ContextMarker {
            index: 2,
            kind: "compaction".into(),
            detail: Some("auto".into()),
            tokens_before: Some(155_000),
        });
        t.markers.push(ContextMarker {
            index: 5,
            kind: "summary".into(),
            detail: None,
            tokens_before: None,
        });
        t
    }

    #[test]
    fn round_trip_is_identical_for_edge_cases() {
        let traces = vec![
            sample("a"),
            sample("b"),
            Trace::new(TraceMeta::new("empty", SourceFormat::Openai)),
        ];
        let mut buf = Vec::new();
        write_traces(&mut buf, &traces).unwrap();
        let back = read_traces_from(&buf[..], "mem").unwrap();
        assert_eq!(back, traces);
        // And the text is stable: writing again gives the same bytes.
        let mut buf2 = Vec::new();
        write_traces(&mut buf2, &back).unwrap();
        assert_eq!(buf, buf2);
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(text.lines().count(), 2 * (1 + 5 + 3) + 1);
        assert!(text
            .lines()
            .next()
            .unwrap()
            .starts_with("{\"type\":\"header\",\"schema_version\":1"));
        // argument key order survives
        assert!(text.contains("{\"z\":[1,{\"deep\":{\"x\":null,\"b\":true}}],\"a\":\"ü\"}"));
    }

    #[test]
    fn markers_sit_before_their_message() {
        let text = trace_to_string(&sample("a"));
        let kinds: Vec<String> = text
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                match v["type"].as_str().unwrap() {
                    "message" => v["role"].as_str().unwrap().to_string(),
                    t => t.to_string(),
                }
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "header",
                "marker",
                "system",
                "user",
                "marker",
                "assistant",
                "tool",
                "user",
                "marker"
            ]
        );
        assert_eq!(Role::Tool.as_str(), kinds[6]);
    }

    fn read_err(text: &str) -> ImportError {
        match read_traces_from(text.as_bytes(), "f.jsonl") {
            Err(e) => e,
            Ok(t) => panic!("expected an error, got {} traces", t.len()),
        }
    }

    #[test]
    fn errors_name_line_and_path() {
        let h =
            r#"{"type":"header","schema_version":1,"meta":{"id":"x","source_format":"openai"}}"#;
        let e = read_err(&format!("{h}\n{{\"type\":\"message\",\"role\":\"assistant\",\"tool_calls\":[{{\"id\":5,\"name\":\"f\",\"arguments\":{{}}}}]}}\n"));
        assert_eq!(e.file, "f.jsonl");
        assert_eq!(e.location, "line 2: $.tool_calls[0].id");
        assert!(e.message.contains("expected a string"), "{}", e.message);

        let e = read_err(&format!(
            "{h}\n{{\"type\":\"message\",\"role\":\"robot\"}}\n"
        ));
        assert_eq!(e.location, "line 2: $.role");

        let e = read_err(
            r#"{"type":"header","schema_version":1,"meta":{"id":"x","source_format":"nope"}}"#,
        );
        assert_eq!(e.location, "line 1: $.meta.source_format");

        let e = read_err(r#"{"type":"header","schema_version":9,"meta":{}}"#);
        assert!(e.message.contains("unsupported schema_version 9"));

        let e = read_err("{\"type\":\"message\",\"role\":\"user\"}\n");
        assert!(e.message.contains("before any header"));

        let e = read_err(&format!("{h}\n\n{{\"type\":\"message\",\"role\":\"us"));
        assert!(e.location.starts_with("line 3, column"), "{}", e.location);
        assert!(e.message.contains("cut short"), "{}", e.message);

        let e = read_err(&format!(
            "{h}\n{{\"type\":\"marker\",\"index\":3,\"kind\":\"compaction\"}}\n"
        ));
        assert_eq!(e.location, "line 2: $.index");

        let e = read_err(&format!("{h}\n[1]\n"));
        assert_eq!(e.location, "line 2: $");
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_panic() {
        let mut bytes =
            br#"{"type":"header","schema_version":1,"meta":{"id":"x","source_format":"openai"}}"#
                .to_vec();
        bytes.extend_from_slice(
            b"\n{\"type\":\"message\",\"role\":\"user\",\"content\":\"\xff\xfe\"}\n",
        );
        let e = read_traces_from(&bytes[..], "bad").unwrap_err();
        assert!(e.location.starts_with("line 2"), "{}", e.location);
    }

    /// A partial usage object: accepted everywhere. On a role line it is not read (role lines
    /// carry no usage); on a message line the message has no usage (a missing count is not
    /// zero) and the trace notes which line and count; a complete one reads as before, its
    /// cache counts defaulting to 0; a wrong type is still an error at its path.
    #[test]
    fn partial_usage_is_accepted_and_read_as_absent() {
        let role = concat!(
            "{\"role\": \"user\", \"content\": \"hi\", \"usage\": {\"input_tokens\": 5}}\n",
            "{\"role\": \"assistant\", \"content\": \"ok\", \"usage\": {\"output\": 3}}\n",
        );
        let t = read_role_lines(role.as_bytes(), "t.jsonl", "g").unwrap();
        assert_eq!(t.messages[1], Message::assistant("ok", vec![]));
        assert!(t.meta.warnings.is_empty());

        let header =
            r#"{"type":"header","schema_version":1,"meta":{"id":"x","source_format":"openai"}}"#;
        let text = format!(
            "{header}\n{}\n{}\n{}\n",
            r#"{"type":"message","role":"assistant","content":"a","usage":{"input":1200}}"#,
            r#"{"type":"message","role":"assistant","content":"b","usage":{"input":10,"output":2}}"#,
            r#"{"type":"message","role":"assistant","content":"c","usage":{"cache_read":7}}"#,
        );
        let t = read_traces_from(text.as_bytes(), "f").unwrap().remove(0);
        assert_eq!(t.messages[0].usage, None);
        assert_eq!(
            t.messages[1].usage,
            Some(Usage {
                input: 10,
                output: 2,
                cache_read: 0,
                cache_write: 0
            })
        );
        assert_eq!(t.messages[2].usage, None);
        assert_eq!(t.meta.warnings.len(), 2, "{:?}", t.meta.warnings);
        assert!(
            t.meta.warnings[0]
                .starts_with("line 2: usage without `output` (input 1200, output absent)"),
            "{}",
            t.meta.warnings[0]
        );
        assert!(t.meta.warnings[1].contains("without `input` or `output`"));
        // Round trip: the partial object is not rewritten as zeros.
        let mut out = Vec::new();
        write_trace(&mut out, &t).unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("\"output\":0"));

        let bad = format!(
            "{header}\n{}\n",
            r#"{"type":"message","role":"assistant","content":"a","usage":{"input":"many"}}"#
        );
        let e = read_traces_from(bad.as_bytes(), "f").unwrap_err();
        assert_eq!(e.location, "line 2: $.usage.input");
    }

    fn role_err(text: &str) -> ImportError {
        match read_role_lines(text.as_bytes(), "t.jsonl", "t") {
            Err(e) => e,
            Ok(t) => panic!("expected an error, got {} messages", t.messages.len()),
        }
    }

    #[test]
    fn role_lines_read_as_one_golden_trace() {
        let text = concat!(
            "{\"role\": \"system\", \"content\": \"be brief\"}\n",
            "\n",
            "{\"role\": \"user\", \"content\": \"hi\", \"reasoning\": \"r\", \"kind\": \"k\"}\n",
            "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [",
            "{\"id\": \"c1\", \"name\": \"ls\", \"args\": {\"z\": 1, \"a\": [2]}},",
            "{\"id\": \"c2\", \"name\": \"cat\", \"arguments\": {\"path\": \"x\"}},",
            "{\"id\": \"c3\", \"name\": \"pwd\"}]}\n",
            "{\"role\": \"tool\", \"content\": \"a b\", \"tool_call_id\": \"c1\", \"name\": \"ls\"}\n",
            "   \n",
        );
        let t = read_role_lines(text.as_bytes(), "t.jsonl", "s7").unwrap();
        assert_eq!(t.meta.id, "s7");
        assert_eq!(t.meta.source_format, SourceFormat::Golden);
        assert!(t.markers.is_empty());
        let roles: Vec<Role> = t.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::Tool]
        );
        // A role line carries role, content, tool calls, tool_call_id and name only: the
        // user line's canonical `reasoning` and `kind` are not read.
        assert_eq!(t.messages[1], Message::user("hi"));
        assert_eq!(
            t.messages[2],
            Message::assistant(
                "",
                vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "ls".into(),
                        arguments: json!({"z": 1, "a": [2]}),
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "cat".into(),
                        arguments: json!({"path": "x"}),
                    },
                    ToolCall {
                        id: "c3".into(),
                        name: "pwd".into(),
                        arguments: json!({}),
                    },
                ]
            )
        );
        // `args` keeps its key order (what the engine counts).
        assert_eq!(
            serde_json::to_string(&t.messages[2].tool_calls[0].arguments).unwrap(),
            r#"{"z":1,"a":[2]}"#
        );
        assert_eq!(t.messages[3], Message::tool("c1", "ls", "a b"));
    }

    #[test]
    fn role_line_errors_name_line_and_field() {
        let sys = "{\"role\": \"system\", \"content\": \"s\"}\n";
        let e = role_err(&format!("{sys}{{\"content\": \"no role\"}}\n"));
        assert_eq!(e.file, "t.jsonl");
        assert_eq!(e.location, "line 2: $.role");
        let e = role_err(&format!(
            "{sys}{{\"role\": \"robot\", \"content\": \"x\"}}\n"
        ));
        assert_eq!(e.location, "line 2: $.role");
        let e = role_err(&format!("{sys}\n{{\"role\": \"user\"}}\n"));
        assert_eq!(e.location, "line 3: $.content");
        let e = role_err(&format!(
            "{sys}{{\"role\": \"tool\", \"content\": \"r\", \"name\": \"ls\"}}\n"
        ));
        assert_eq!(e.location, "line 2: $.tool_call_id");
        let e = role_err(&format!(
            "{sys}{{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{{\"id\": \"c\"}}]}}\n"
        ));
        assert_eq!(e.location, "line 2: $.tool_calls[0]");
        let e = role_err(&format!("{sys}{{\"role\": \"user\", \"content\": \"x"));
        assert!(e.location.starts_with("line 2, column"), "{}", e.location);
        let e = role_err("\n  \n");
        assert_eq!(e.location, "file");
        assert_eq!(e.message, "no messages");
    }

    #[test]
    fn a_canonical_line_in_a_role_line_file_is_an_error() {
        let sys = "{\"role\": \"system\", \"content\": \"s\"}\n";
        for canonical in [
            r#"{"type":"header","schema_version":1,"meta":{"id":"x","source_format":"openai"}}"#,
            r#"{"type":"message","role":"user","content":"hi"}"#,
            r#"{"type":"marker","index":0,"kind":"compaction"}"#,
        ] {
            let e = role_err(&format!("{sys}{canonical}\n"));
            assert_eq!(e.location, "line 2: $.type", "{canonical}");
            assert!(
                e.message
                    .contains("a canonical line in a file of role lines"),
                "{}",
                e.message
            );
        }
        // And the other way round: a role line in a canonical file.
        let h =
            r#"{"type":"header","schema_version":1,"meta":{"id":"x","source_format":"openai"}}"#;
        let e = read_err(&format!("{h}\n{sys}"));
        assert_eq!(e.location, "line 2: $.type");
    }

    #[test]
    fn reader_streams_trace_by_trace() {
        let mut buf = Vec::new();
        write_traces(&mut buf, &[sample("a"), sample("b")]).unwrap();
        buf.extend_from_slice(b"garbage\n");
        let mut r = TraceReader::new(&buf[..], "m");
        assert_eq!(r.next().unwrap().unwrap().meta.id, "a");
        // the second trace ends at the garbage line, which is an error naming that line
        let e = r.next().unwrap().unwrap_err();
        assert!(e.location.starts_with("line 19"), "{}", e.location);
        assert!(r.next().is_none());
    }
}
