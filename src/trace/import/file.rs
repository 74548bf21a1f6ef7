//! Reading one trace file with the least memory: the file is never held whole next to what is
//! parsed from it when it is line-based.
//!
//! The first non-blank line decides. A canonical header streams the file through
//! `trace::io::TraceReader` (one line buffer). A first line that is a whole JSON value followed
//! by more text is JSON Lines: each line is parsed as it is read, through one reused buffer.
//! Anything else is one JSON document, parsed straight from the reader (never held whole as
//! bytes beside the tree), with the errors [`super::parse_input`] gives on the whole bytes. The outcome is the same as
//! [`super::import_bytes`] on the whole file (same traces, same errors): a whole-document parse
//! of such a file stops after its first value with "trailing characters", which is where
//! `parse_input` switches to JSON Lines.

use super::json::Located;
use super::{detect, json_error, parse_input, BadLines, ImportError, Input};
use crate::trace::io::TraceReader;
use crate::trace::model::{SourceFormat, Trace};
use serde_json::Value;
use std::io::{BufRead, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

/// What reading a file gave before any importer ran.
pub(super) enum FileRead {
    /// Blank.
    Empty,
    /// A canonical file, read completely.
    Canonical(Vec<Trace>),
    /// A file of golden-fixture role lines, streamed through `trace::io` (its id and
    /// `source_path` still to set, and `finalize` to run).
    Golden(Box<Trace>),
    /// A parsed input for detection and an importer, and whether detection (no `--from`)
    /// would have read the file as canonical (its first line a canonical header): what the
    /// error of a `--from` that fails on it names; and the lines of JSON Lines that are not
    /// JSON, set aside (only a Gemini CLI session skips them).
    Parsed(Input, bool, BadLines),
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(|b| b.is_ascii_whitespace())
}

/// Read `path` as [`super::import_bytes`] would see it, streaming where the format allows.
pub(super) fn read(path: &Path, from: Option<SourceFormat>) -> Result<FileRead, ImportError> {
    read_as(path, from, true)
}

/// [`read`]; `try_golden` false once a file of role lines turned out not to be golden.
fn read_as(
    path: &Path,
    from: Option<SourceFormat>,
    try_golden: bool,
) -> Result<FileRead, ImportError> {
    let cannot =
        |e: std::io::Error| ImportError::new(path, "file", format!("cannot read the file: {e}"));
    let f = std::fs::File::open(path).map_err(cannot)?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    // A UTF-8 byte-order mark (as some Windows editors write) is not part of the text.
    let start = if r.fill_buf().map_err(cannot)?.starts_with(super::UTF8_BOM) {
        r.consume(super::UTF8_BOM.len());
        super::UTF8_BOM.len() as u64
    } else {
        0
    };
    // Everything read so far (blank lines, then the first non-blank one), kept so a document
    // or a canonical file is seen from its first byte.
    let mut head: Vec<u8> = Vec::new();
    let mut lines_read = 0usize;
    let first_start = loop {
        let start = head.len();
        if r.read_until(b'\n', &mut head).map_err(cannot)? == 0 {
            return Ok(FileRead::Empty);
        }
        lines_read += 1;
        if !blank(&head[start..]) {
            break start;
        }
    };
    // Whether detection takes the file as canonical, and whether it is read so.
    let (detected_canonical, canonical) = match from {
        Some(SourceFormat::Canonical) => (false, true),
        Some(_) => (detect::looks_canonical(&head[first_start..]), false),
        None => {
            let c = detect::looks_canonical(&head[first_start..]);
            (c, c)
        }
    };
    let as_parsed = |input: Input| FileRead::Parsed(input, detected_canonical, BadLines::default());
    if canonical {
        let reader = TraceReader::new(Cursor::new(head).chain(r), path.display().to_string());
        return reader.collect::<Result<_, _>>().map(FileRead::Canonical);
    }
    let located = |l: Located| ImportError::located(path, l);
    let first = trim_eol(&head[first_start..]);
    // Golden role lines: streamed through the line reader, no `Value` per line. Taken when a
    // tool call shows the LangChain shape (`detect`'s rule for the format) or `--from golden`;
    // else the file is read again below, as JSON Lines for detection.
    let role_line = || {
        serde_json::from_slice::<serde_json::Map<String, Value>>(first)
            .is_ok_and(|o| super::golden::is_role_line(&o))
    };
    let golden = match from {
        Some(SourceFormat::Golden) => true,
        Some(_) => false,
        None => try_golden && role_line(),
    };
    if golden {
        let stem = super::file_stem(path);
        let read = crate::trace::io::read_role_lines(
            Cursor::new(head).chain(r),
            &path.display().to_string(),
            &stem,
        );
        match read {
            Ok(t) if from.is_some() || t.messages.iter().any(|m| !m.tool_calls.is_empty()) => {
                return Ok(FileRead::Golden(Box::new(t)))
            }
            Err(e) if from.is_some() => return Err(e),
            // Not golden after all: the whole file again, as any other JSON Lines.
            _ => return read_as(path, None, false),
        }
    }
    if let Ok(v) = serde_json::from_slice::<Value>(first) {
        // JSON Lines if any non-blank text follows; else a one-line document (below).
        let mut buf = Vec::new();
        let mut lines = vec![(lines_read, v)];
        let mut bad = BadLines {
            lines: Vec::new(),
            last: lines_read,
        };
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf).map_err(cannot)? == 0 {
                break;
            }
            lines_read += 1;
            let line = trim_eol(&buf);
            if blank(line) {
                continue;
            }
            bad.last = lines_read;
            match serde_json::from_slice::<Value>(line) {
                Ok(v) => lines.push((lines_read, v)),
                Err(e) => bad
                    .lines
                    .push((lines_read, json_error(&e, Some(lines_read)))),
            }
        }
        if lines.len() > 1 || !bad.lines.is_empty() {
            return Ok(FileRead::Parsed(
                Input::Lines(lines),
                detected_canonical,
                bad,
            ));
        }
        // One line and only blank text after it: that line is the whole document.
        if let Some((_, v)) = lines.pop() {
            return Ok(as_parsed(Input::Json(v)));
        }
    }
    // One document, parsed from the reader, so the file's bytes are never held whole beside
    // the tree. Its first line is not a complete value, so a "trailing characters" error is
    // reported as is, as `parse_input` does on the whole bytes.
    // A reader reports some errors at another position than a slice (a number out of range
    // is seen after the next byte), so a broken document is parsed again whole for the error.
    // A file of up to `SLICE_PARSE_MAX` bytes is read whole and parsed from the slice, which
    // is several times faster than through a reader (and reports errors as the slice does).
    let size = r.get_ref().metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if size <= SLICE_PARSE_MAX {
        let mut bytes = head;
        r.read_to_end(&mut bytes).map_err(cannot)?;
        return parse_input(&bytes).map(as_parsed).map_err(located);
    }
    // From the file's start again when it can seek (a file, not a pipe): serde_json reads a
    // byte at a time, which a `BufReader` serves from its buffer, while the chain of what was
    // read and the rest answers each byte with a call through both readers.
    let parsed = if r.seek(SeekFrom::Start(start)).is_ok() {
        serde_json::from_reader::<_, Value>(r)
    } else {
        serde_json::from_reader::<_, Value>(Cursor::new(head).chain(r))
    };
    match parsed {
        Ok(v) => Ok(as_parsed(Input::Json(v))),
        Err(_) => {
            let bytes = std::fs::read(path).map_err(cannot)?;
            parse_input(super::without_bom(&bytes))
                .map(as_parsed)
                .map_err(located)
        }
    }
}

/// Largest JSON document parsed from its bytes read whole: at most 1 MiB is held beside the
/// tree (larger ones are parsed from the reader, so a big trace's bytes are never held beside
/// its tree: `tests/replay_memory.rs`).
const SLICE_PARSE_MAX: u64 = 1 << 20;

/// What the first bytes of a file say before any JSON parsing.
pub(super) enum Sniffed {
    /// A zip archive (an Inspect `.eval` log).
    Zip,
    /// A known kind of file no importer reads: what it looks like.
    Unsupported(&'static str),
    /// Text in an encoding other than UTF-8: which.
    Encoding(&'static str),
}

/// Recognise a file by its first bytes: a zip archive, or a known unsupported kind (an Aider
/// chat history, an SQLite database, HTML). `None` for anything else (read as JSON).
pub(super) fn sniff(path: &Path) -> Option<Sniffed> {
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .ok()?;
    let head = &head[..n];
    if head.starts_with(b"PK\x03\x04") {
        return Some(Sniffed::Zip);
    }
    // UTF-16: its byte-order mark, or ASCII text with a NUL beside every byte.
    let nul_beside = |h: &[u8]| h.len() >= 2 && (h[0] == 0) != (h[1] == 0);
    if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") || nul_beside(head) {
        return Some(Sniffed::Encoding("UTF-16"));
    }
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    if t.starts_with("# aider chat started at") {
        return Some(Sniffed::Unsupported("an Aider chat history (.md)"));
    }
    if head.starts_with(b"SQLite format 3\0") {
        return Some(Sniffed::Unsupported(
            "an SQLite database (a Codex state index or a LangGraph checkpointer: export the messages as JSON)",
        ));
    }
    if t.starts_with("<!DOCTYPE") || t.starts_with("<html") {
        return Some(Sniffed::Unsupported("an HTML page"));
    }
    None
}

/// A line without its `\n` and a `\r` before it (as `parse_lines` splits).
fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::super::{import_bytes, import_file_content, FileContent};
    use std::path::Path;

    /// The streamed reading of a file gives what importing its bytes whole gives: the same
    /// traces or the same error, for documents, JSON Lines, canonical files and broken input.
    #[test]
    fn streamed_file_equals_whole_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = concat!(
            "{\"type\":\"header\",\"schema_version\":1,\"meta\":{\"id\":\"c\",\"source_format\":\"openai\"}}\n",
            "{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}\n"
        );
        let cases: &[(&str, &[u8])] = &[
            ("doc", b"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}"),
            ("pretty", b"\n\n{\n \"messages\": [{\"role\":\"user\",\"content\":\"a\"}]\n}\n\n"),
            ("lines", b"{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"assistant\",\"content\":\"b\"}\r\n"),
            ("one-line", b"\n{\"role\":\"user\",\"content\":\"a\"}\n  \n"),
            ("canonical", canonical.as_bytes()),
            ("blank", b"  \n\n"),
            ("trailing", b"{\n  \"a\": 1\n}\n}"),
            ("bad-line-3", b"{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\n"),
            ("truncated", b"{\"a\": [1, 2"),
            ("huge-number-lines", b"1e400\n2\n"),
            ("not-a-trace", b"[1, 2]\n"),
            ("fixture-style", b"{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"x\",\"name\":\"f\",\"args\":{}}]}\n{\"role\":\"tool\",\"content\":\"r\",\"tool_call_id\":\"x\"}\n"),
        ];
        // Past `SLICE_PARSE_MAX`, a document is parsed from the reader (the file read again
        // from its start): a pretty one after blank lines, and a broken one.
        let long = "x".repeat(super::SLICE_PARSE_MAX as usize);
        let big =
            format!("\n\n{{\n \"messages\": [{{\"role\":\"user\",\"content\":\"{long}\"}}]\n}}\n");
        let big_broken =
            format!("\n{{\n \"messages\": [{{\"role\":\"user\",\"content\":\"{long}\"}}\n");
        let big_cases: [(&str, &[u8]); 2] = [
            ("big", big.as_bytes()),
            ("big-broken", big_broken.as_bytes()),
        ];
        for (name, bytes) in cases.iter().chain(&big_cases) {
            let path = dir.path().join(format!("{name}.jsonl"));
            std::fs::write(&path, bytes).unwrap();
            let streamed = import_file_content(&path, None);
            let whole = import_bytes(bytes, name, None, Some(Path::new(&path)))
                .map_err(|l| format!("{}: {}", l.location, l.message));
            let streamed = streamed.map_err(|e| format!("{}: {}", e.location, e.message));
            let show = |r: &Result<FileContent, String>| match r {
                Ok(FileContent::Traces(t)) => format!("traces {t:?}"),
                Ok(FileContent::NotATrace(why)) => format!("not a trace: {why}"),
                Err(e) => format!("error {e}"),
            };
            assert_eq!(show(&streamed), show(&whole), "{name}");
        }
    }
}
