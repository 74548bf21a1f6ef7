//! Importers: recorded agent formats → canonical traces, with format auto-detection, directory
//! walking and the bookkeeping every format shares (stable ids, tool-call pairing, goals).
//!
//! How inputs are read: an input is first tried as one JSON document; if serde_json stops at
//! "trailing characters" it is read as JSON Lines instead (canonical JSONL is parsed line by line
//! by `trace::io`). A file on disk gets the same outcome while holding less: line-based files are
//! streamed, never held whole beside what is parsed from them (`file`). `detect` then picks the
//! format from the content (never from the extension alone); `--from` overrides detection.
//!
//! Which files a path selects is `crate::trace::discover`'s job (the same rules as `run`):
//! directories are walked (hidden entries skipped, only `*.json`, `*.jsonl`, `*.ndjson` and
//! `*.traj` kept) and quoted globs are expanded. A walked file that parses as JSON but matches no
//! trace format (e.g. mini-swe-agent's `results_summary.json`) is listed in `Imported::ignored`
//! instead of failing. A file named explicitly is always imported or rejected with an error.

mod calls;
pub(crate) mod detect;
mod file;
pub mod json;

/// One trace format's importer: how to recognise it and how to read it. Each importer module
/// declares `pub const IMPORTER` beside its code.
pub struct Importer {
    pub format: SourceFormat,
    /// Does a parsed input of this shape look like this format? (see `detect`)
    pub detect: fn(detect::Shape<'_>) -> bool,
    /// Read a whole input (one document or JSON Lines) into traces whose ids start with `stem`.
    /// The input is the importer's to consume: moving each line or message out and dropping it
    /// once converted keeps the parsed tree and the trace from coexisting whole.
    pub import: fn(&mut Input, &str) -> Res<Vec<Trace>>,
}

/// Declares the importer modules and [`IMPORTERS`], in detection order.
macro_rules! importers {
    ($($module:ident,)+) => {
        $(pub mod $module;)+
        /// Every importer, in detection order: the first whose rule matches an input wins.
        pub const IMPORTERS: &[Importer] = &[$($module::IMPORTER,)+];
    };
}

// Adding a format: a new `<format>.rs` with its `IMPORTER`, one line here (where its detection
// rule should take precedence), its name in `trace::model`'s `source_formats!`, its rule in
// `detect`'s list and a sample in `tests::DETECTION_SAMPLES` (docs/architecture.md; the test
// `every_importer_is_registered_at_every_site` checks all of them).
importers! {
    claude_code,
    codex,
    mini_swe,
    atif,
    tau2,
    inspect,
    gemini_cli,
    copilot,
    swe_agent,
    openhands,
    tau,
    golden,
    langchain,
    responses,
    gemini,
    cline,
    anthropic,
    openai,
}

pub use calls::{tool_calls, CallShape, Calls};
pub use json::Located;

use super::model::{Role, SourceFormat, Trace};
use json::Res;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// An input that cannot be imported. Always names the file, the line or JSON path, and what was
/// expected.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {}{message}", location_prefix(location))]
pub struct ImportError {
    pub file: String,
    /// `line 12`, `$.messages[3].content`, …
    pub location: String,
    pub message: String,
}

/// The location of a message about a whole file (`file`) is the file itself: said once.
const WHOLE_FILE: &str = "file";

/// `location: `, or nothing for an error about the whole file.
fn location_prefix(location: &str) -> String {
    if location.is_empty() || location == WHOLE_FILE {
        String::new()
    } else {
        format!("{location}: ")
    }
}

impl ImportError {
    pub fn new(file: &Path, location: impl Into<String>, message: impl Into<String>) -> Self {
        ImportError {
            file: file.display().to_string(),
            location: location.into(),
            message: message.into(),
        }
    }

    fn located(file: &Path, l: Located) -> Self {
        Self::new(file, l.location, l.message)
    }

    /// This error with the advice on forcing a format ([`FORCE_FORMAT`], worded for
    /// `import` and `traces stats`, which take `--from`) replaced by `advice`, for a command
    /// that forces it another way (`run`: the suite's `[traces] from`) or not at all
    /// (`replay`). Any other error is returned as it is.
    pub fn force_format_by(mut self, advice: &str) -> Self {
        self.message = self.message.replace(FORCE_FORMAT, advice);
        self
    }
}

/// How "not a trace" says to force a format, as `import` and `traces stats` do (`--from`);
/// [`ImportError::force_format_by`] rewords it for the other commands.
pub const FORCE_FORMAT: &str = "(use --from FORMAT to force one)";

/// Result of importing many inputs: the traces, what was skipped (with `skip_invalid`), and
/// which files found while walking directories were not traces.
#[derive(Debug, Default)]
pub struct Imported {
    pub traces: Vec<Trace>,
    pub skipped: Vec<ImportError>,
    /// Files met while walking a directory that hold no trace, and entries never opened
    /// (symbolic links met while walking, files that are not regular) (path, reason).
    pub ignored: Vec<(PathBuf, String)>,
}

/// A parsed input: one JSON document, or JSON Lines (1-based line number, value).
#[derive(Debug)]
pub enum Input {
    Json(Value),
    Lines(Vec<(usize, Value)>),
}

/// What one file turned out to be.
#[derive(Debug)]
pub enum FileContent {
    Traces(Vec<Trace>),
    /// Valid JSON, but no trace format matched; the reason says what was seen.
    NotATrace(String),
}

pub use super::discover::TRACE_EXTENSIONS;

/// Import one file (auto-detecting its format unless `from` is given). A file may hold several
/// traces (τ-bench runs, JSONL of conversations); each gets a stable id.
pub fn import_file(path: &Path, from: Option<SourceFormat>) -> Result<Vec<Trace>, ImportError> {
    match import_file_content(path, from)? {
        FileContent::Traces(t) => Ok(t),
        FileContent::NotATrace(why) => Err(not_a_trace(path, &why)),
    }
}

/// Import one discovered file: like [`import_file_content`], but a file named explicitly
/// (not `walked`) that holds no trace is an error.
pub fn import_found(
    path: &Path,
    from: Option<SourceFormat>,
    walked: bool,
) -> Result<FileContent, ImportError> {
    match import_file_content(path, from)? {
        FileContent::NotATrace(why) if !walked => Err(not_a_trace(path, &why)),
        c => Ok(c),
    }
}

fn not_a_trace(path: &Path, why: &str) -> ImportError {
    if why.starts_with(NO_MESSAGE) {
        // Detected, but nothing in it: forcing another format would not help.
        return ImportError::new(path, "file", why);
    }
    if why.starts_with(detect::API_RESPONSE)
        || why.starts_with(&format!(
            "JSON Lines whose first line is {}",
            detect::API_RESPONSE
        ))
    {
        // A model's answer without its input: no format reads it as a trace.
        return ImportError::new(path, "file", format!("not a trace: {why}"));
    }
    ImportError::new(
        path,
        "file",
        format!(
            "not a trace: {why}; expected one of the formats {} {FORCE_FORMAT}",
            format_names()
        ),
    )
}

/// How the reason of a detected input that yields a trace without messages starts.
const NO_MESSAGE: &str = "no message";

/// Import one file, telling "not a trace" apart from a broken trace.
pub fn import_file_content(
    path: &Path,
    from: Option<SourceFormat>,
) -> Result<FileContent, ImportError> {
    if let Some(kind) = file::sniff(path) {
        return match kind {
            file::Sniffed::Zip => import_zip(path, from),
            file::Sniffed::Encoding(enc) => Err(ImportError::new(
                path,
                "file",
                format!(
                    "the file is {enc} text; expected UTF-8 (convert it, e.g. `iconv -f {enc} -t UTF-8 FILE > NEW`)"
                ),
            )),
            file::Sniffed::Unsupported(what) => Err(ImportError::new(
                path,
                "file",
                format!(
                    "{what}: not supported; expected one of the formats {}",
                    format_names()
                ),
            )),
        };
    }
    let (input, canonical, bad) = match file::read(path, from)? {
        file::FileRead::Empty => return Ok(FileContent::NotATrace("the file is empty".into())),
        file::FileRead::Canonical(traces) => return Ok(FileContent::Traces(traces)),
        file::FileRead::Golden(mut t) => {
            t.meta.source_path = Some(path.display().to_string());
            finalize(&mut t);
            return Ok(FileContent::Traces(vec![*t]));
        }
        file::FileRead::Parsed(input, canonical, bad) => (input, canonical, bad),
    };
    import_input_as(input, bad, &file_stem(path), from, Some(path), canonical)
        .map_err(|l| ImportError::located(path, l))
}

/// A zip archive: an Inspect `.eval` log is the only trace format that is one.
fn import_zip(path: &Path, from: Option<SourceFormat>) -> Result<FileContent, ImportError> {
    if let Some(f) = from.filter(|f| *f != SourceFormat::Inspect) {
        return Err(ImportError::new(
            path,
            "file",
            format!(
                "--from {}: the file is a zip archive, which only the inspect format (an Inspect .eval log) is",
                f.as_str()
            ),
        ));
    }
    let traces = inspect::import_zip(path, &file_stem(path))
        .and_then(|t| finish(t, SourceFormat::Inspect, None, Some(path)))
        .map_err(|l| ImportError::located(path, l))?;
    Ok(traces)
}

/// Import files, directories and globs (see `crate::trace::discover` for which files they
/// select). Files are imported in parallel (rayon) and the result keeps input
/// order. With `skip_invalid`, a file that fails is recorded in `Imported::skipped` and the rest
/// go on; without it the first failure (in input order) is returned.
pub fn import_paths(
    paths: &[impl AsRef<Path>],
    from: Option<SourceFormat>,
    skip_invalid: bool,
) -> Result<Imported, ImportError> {
    use rayon::prelude::*;
    // (file, found by walking a directory or a glob)
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    let mut passed: Vec<(PathBuf, String)> = Vec::new();
    for p in paths {
        let p = p.as_ref();
        let found = super::discover::discover(Path::new(""), p).map_err(|e| match e {
            super::discover::DiscoverError::Walk { source, .. } => ImportError::new(
                p,
                "directory",
                format!("cannot list the directory: {source}"),
            ),
            e => ImportError::new(p, "pattern", e.to_string()),
        })?;
        if found.files.is_empty() && found.passed.is_empty() && !p.is_dir() {
            // A missing file: importing it reports why.
            files.push((p.to_path_buf(), false));
        }
        files.extend(found.files.into_iter().map(|f| (f.path, f.walked)));
        // Links met while walking and files that are not regular are never opened: named
        // with the files that hold no trace.
        passed.extend(found.passed.into_iter().map(|f| (f.path, f.why)));
    }
    let results: Vec<Result<FileContent, ImportError>> = files
        .par_iter()
        .map(|(f, walked)| import_found(f, from, *walked))
        .collect();
    let mut out = Imported {
        ignored: passed,
        ..Imported::default()
    };
    for ((f, _), r) in files.into_iter().zip(results) {
        match r {
            Ok(FileContent::Traces(t)) => out.traces.extend(t),
            Ok(FileContent::NotATrace(why)) => out.ignored.push((f, why)),
            Err(e) if skip_invalid => out.skipped.push(e),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// `a/b/django__django-11138.traj.json` → `django__django-11138`.
pub fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    // Extensions in any case, as discovery matches them (`T.JSONL` is a trace, id `T`).
    let strip = |s: &'_ str, ext: &str| -> Option<usize> {
        let at = s.len().checked_sub(ext.len())?;
        s.get(at..)?.eq_ignore_ascii_case(ext).then_some(at)
    };
    let mut s = name.as_str();
    for ext in [".jsonl", ".ndjson", ".json", ".traj", ".eval"] {
        if let Some(at) = strip(s, ext) {
            s = &s[..at];
            if let Some(at) = strip(s, ".traj") {
                s = &s[..at];
            }
            break;
        }
    }
    if s.is_empty() {
        return "trace".into();
    }
    // Names a tool gives every session's file alike: the folder is the session (Cline / Roo Code
    // `tasks/<task id>/api_conversation_history.json`), so it names the trace.
    if s == "api_conversation_history" {
        if let Some(dir) = path.parent().and_then(|d| d.file_name()) {
            return dir.to_string_lossy().into_owned();
        }
    }
    s.to_string()
}

fn format_names() -> String {
    SourceFormat::ALL
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parse bytes as JSON or JSON Lines. Parse errors name the line and column.
///
/// A document followed by more text is JSON Lines when its first non-blank line is a complete
/// JSON value by itself; otherwise (a pretty-printed document with trailing garbage) the
/// "trailing characters" error is reported where it occurs.
pub fn parse_input(bytes: &[u8]) -> Res<Input> {
    parse_keeping_bad_lines(bytes).and_then(|(input, bad)| bad.or_first_error(input))
}

/// [`parse_input`], with the lines of JSON Lines that are not JSON set aside (see
/// [`BadLines`]) instead of failing at the first.
fn parse_keeping_bad_lines(bytes: &[u8]) -> Res<(Input, BadLines)> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => Ok((Input::Json(v), BadLines::default())),
        Err(e) if e.to_string().starts_with("trailing characters") => {
            let first = bytes
                .split(|b| *b == b'\n')
                .find(|l| !l.iter().all(|b| b.is_ascii_whitespace()))
                .unwrap_or_default();
            if serde_json::from_slice::<serde::de::IgnoredAny>(first).is_ok() {
                Ok(lines_keeping_bad_ones(bytes))
            } else {
                Err(json_error(&e, None))
            }
        }
        Err(e) => Err(json_error(&e, None)),
    }
}

/// Each non-blank line must be one JSON value.
pub fn parse_lines(bytes: &[u8]) -> Res<Input> {
    let (input, bad) = lines_keeping_bad_ones(bytes);
    bad.or_first_error(input)
}

/// The non-blank lines of `bytes` that are JSON values, and those that are not.
fn lines_keeping_bad_ones(bytes: &[u8]) -> (Input, BadLines) {
    let mut out = Vec::new();
    let mut bad = BadLines::default();
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        bad.last = i + 1;
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => out.push((i + 1, v)),
            Err(e) => bad.lines.push((i + 1, json_error(&e, Some(i + 1)))),
        }
    }
    (Input::Lines(out), bad)
}

/// Records an importer skips, counted by kind for one warning: the line of the first, and each
/// kind (as the warning shows it) with its count, in order of first appearance.
#[derive(Debug, Default)]
pub(crate) struct Skipped {
    first: Option<usize>,
    kinds: Vec<(String, usize)>,
}

impl Skipped {
    /// Count one record of `kind` (as shown: quoted by the caller) at `line`.
    pub fn note(&mut self, kind: String, line: usize) {
        self.first.get_or_insert(line);
        match self.kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, c)) => *c += 1,
            None => self.kinds.push((kind, 1)),
        }
    }

    /// `(line of the first, how many, "kind ×n, …")`, if any was noted.
    pub fn counted(&self) -> Option<(usize, usize, String)> {
        let first = self.first?;
        let total = self.kinds.iter().map(|(_, c)| c).sum();
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .map(|(k, c)| format!("{k} ×{c}"))
            .collect();
        Some((first, total, kinds.join(", ")))
    }
}

/// The lines of a JSON Lines input that are not JSON, set aside while parsing. A Gemini CLI
/// session skips them, warned of, as the CLI's own reader does
/// ([`gemini_cli::skips_bad_lines`]); any other input fails at the first, as before.
#[derive(Debug, Default)]
pub(crate) struct BadLines {
    /// Each bad line's number and its parse error.
    pub lines: Vec<(usize, json::Located)>,
    /// The number of the input's last non-blank line (to tell a line cut short at the end).
    pub last: usize,
}

impl BadLines {
    /// `input` when no line was bad, else the first bad line's error.
    fn or_first_error(self, input: Input) -> Res<Input> {
        match self.lines.into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(input),
        }
    }
}

/// A serde_json error as a location (line, column) and a message saying what was expected.
pub fn json_error(e: &serde_json::Error, line: Option<usize>) -> Located {
    // A line of JSON Lines parsed with its line end: an error on the slice's second line is at
    // that line end (serde_json says "column 0" of the next line).
    let at_its_end = line.is_some() && e.line() > 1;
    let location = match line {
        Some(l) if at_its_end => format!("line {l}, at its end"),
        Some(l) => format!("line {l}, column {}", e.column()),
        None => format!("line {}, column {}", e.line(), e.column()),
    };
    let full = e.to_string();
    let what = full
        .rsplit_once(" at line ")
        .map(|(m, _)| m.to_string())
        .unwrap_or(full);
    let hint = match (e.classify(), line) {
        // A line of JSON Lines: the file may go on after it.
        (serde_json::error::Category::Eof, Some(_)) => {
            "; expected a complete JSON value on this line (was it cut short?)"
        }
        (_, Some(_)) if at_its_end => "; the line ends inside its value (was it cut short?)",
        (serde_json::error::Category::Eof, None) => {
            "; expected a complete JSON value (is the file truncated?)"
        }
        // serde_json's words for a byte that is not UTF-8 inside a string.
        (serde_json::error::Category::Syntax, _) if what == "invalid unicode code point" => {
            "; expected UTF-8 text (this byte is not UTF-8: is the file in another encoding?)"
        }
        (serde_json::error::Category::Syntax, _) => "; expected valid JSON",
        _ => "",
    };
    Located::new(location, format!("invalid JSON: {what}{hint}"))
}

/// The UTF-8 byte-order mark some editors put first; not part of the text.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading [`UTF8_BOM`].
fn without_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes)
}

/// Import a whole input held in memory. `stem` is the base of the trace ids; `path`, when
/// given, is recorded as `meta.source_path` (canonical traces keep the path they recorded).
pub fn import_bytes(
    bytes: &[u8],
    stem: &str,
    from: Option<SourceFormat>,
    path: Option<&Path>,
) -> Res<FileContent> {
    let bytes = without_bom(bytes);
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(FileContent::NotATrace("the file is empty".into()));
    }
    // Whether detection takes the input as canonical (said when a forced format fails on it).
    let detected_canonical =
        from != Some(SourceFormat::Canonical) && detect::looks_canonical(bytes);
    let canonical = match from {
        Some(SourceFormat::Canonical) => true,
        Some(_) => false,
        None => detected_canonical,
    };
    if canonical {
        let traces = super::io::read_traces_from(bytes, "").map_err(|e| Located {
            location: e.location,
            message: e.message,
        })?;
        return Ok(FileContent::Traces(traces));
    }
    let (input, bad) = parse_keeping_bad_lines(bytes)?;
    import_input_as(input, bad, stem, from, path, detected_canonical)
}

/// Detect the format of a parsed input (unless `from` names it) and import it; the part of
/// [`import_bytes`] after parsing. `canonical`: detection takes the input as canonical (its
/// first line a canonical header: decided on its bytes, before parsing). `bad`: the lines that
/// are not JSON, which only a Gemini CLI session skips (warned of); any other input fails at
/// the first.
fn import_input_as(
    mut input: Input,
    bad: BadLines,
    stem: &str,
    from: Option<SourceFormat>,
    path: Option<&Path>,
    canonical: bool,
) -> Res<FileContent> {
    let detected = match from {
        Some(f) => Ok(f),
        None => detect::detect(&input),
    };
    if let Some((_, e)) = bad.lines.first() {
        if detected != Ok(SourceFormat::GeminiCli) || !gemini_cli::skips_bad_lines(&input) {
            return Err(e.clone());
        }
    }
    let format = match detected {
        Ok(f) => f,
        Err(why) => return Ok(FileContent::NotATrace(why)),
    };
    // What detection would choose (canonical before any importer's rule, as without --from),
    // kept for the error should a forced format yield nothing or fail.
    let looks = from.map(|_| {
        if canonical {
            Ok(SourceFormat::Canonical)
        } else {
            detect::detect(&input)
        }
    });
    let traces = match import_input(&mut input, stem, format) {
        Ok(mut t) => {
            if !bad.lines.is_empty() {
                gemini_cli::warn_of_bad_lines(&mut t, &bad);
            }
            t
        }
        // A forced format that fails on an input of another: said, as when it reads nothing.
        Err(mut e) => {
            if let Some(Ok(f)) = &looks {
                if *f != format {
                    e.message = format!(
                        "{} (--from {}: the input looks like {}; drop --from to detect it)",
                        e.message,
                        format.as_str(),
                        f.as_str()
                    );
                }
            }
            return Err(e);
        }
    };
    finish(traces, format, looks, path)
}

/// The checks and bookkeeping after an importer ran: a trace without messages makes the input
/// an error (`looks`, what detection said of an input read with a forced format) or, when
/// detected, not a trace; otherwise each trace gets its source path, goal and pairing warnings.
fn finish(
    mut traces: Vec<Trace>,
    format: SourceFormat,
    looks: Option<Result<SourceFormat, String>>,
    path: Option<&Path>,
) -> Res<FileContent> {
    if let Some(why) = empty_traces(&traces, format) {
        return match looks {
            // Nothing dropped silently: a forced format that reads nothing is an error.
            Some(looks) => Err(Located::new(
                "file",
                format!(
                    "--from {} read {why}; {}",
                    format.as_str(),
                    match looks {
                        Ok(f) if f != format => format!(
                            "the input looks like {} (drop --from to detect it)",
                            f.as_str()
                        ),
                        Ok(_) => "the input holds no message this format reads".to_string(),
                        Err(what) => format!("the input is {what}"),
                    }
                ),
            )),
            None => Ok(FileContent::NotATrace(format!(
                "{NO_MESSAGE}: detected as {} but {why}",
                format.as_str()
            ))),
        };
    }
    for t in traces.iter_mut() {
        if let Some(p) = path {
            t.meta.source_path = Some(p.display().to_string());
        }
        finalize(t);
    }
    Ok(FileContent::Traces(traces))
}

/// Why `traces` must not be taken as an import: no trace at all, or a trace without messages
/// (every trace of a format holds at least one message).
fn empty_traces(traces: &[Trace], format: SourceFormat) -> Option<String> {
    if traces.is_empty() {
        return Some(format!("no {} trace", format.as_str()));
    }
    let empty: Vec<&str> = traces
        .iter()
        .filter(|t| t.messages.is_empty())
        .map(|t| t.meta.id.as_str())
        .collect();
    match empty.as_slice() {
        [] => None,
        // The importer may say why (its first warning), e.g. a Claude Code summary-only file.
        [one] if traces.len() == 1 => Some(match traces[0].meta.warnings.first() {
            Some(why) => format!("a trace with no message ({one}): {why}"),
            None => format!("a trace with no message ({one})"),
        }),
        some => Some(format!(
            "{} trace(s) with no message ({}{})",
            some.len(),
            some.iter().take(3).copied().collect::<Vec<_>>().join(", "),
            if some.len() > 3 { ", …" } else { "" }
        )),
    }
}

/// Dispatch a parsed input to the importer of `format` (which may consume it).
pub fn import_input(input: &mut Input, stem: &str, format: SourceFormat) -> Res<Vec<Trace>> {
    match IMPORTERS.iter().find(|i| i.format == format) {
        Some(i) => (i.import)(input, stem),
        None => Err(Located::new(
            "line 1",
            "expected a canonical header line {\"type\":\"header\",…}",
        )),
    }
}

/// The `import` of a format whose documents hold one trace each: a document is read whole
/// (trace id `stem`); JSON Lines one document per line (see [`per_line`]), each line dropped
/// once imported. `f` gets the document to move parts out of, and its JSON path (`$` or
/// `line N: $`).
pub(crate) fn each_document_mut(
    input: &mut Input,
    stem: &str,
    f: impl Fn(&mut Value, String, &str) -> Res<Vec<Trace>>,
) -> Res<Vec<Trace>> {
    match input {
        Input::Json(v) => f(v, "$".into(), stem),
        Input::Lines(lines) => per_line(std::mem::take(lines), stem, f),
    }
}

/// A JSON Lines file whose lines are whole documents of a single-document format: one import
/// per line, ids `<stem>__L<line>` (just `<stem>` when there is one line).
fn per_line(
    lines: Vec<(usize, Value)>,
    stem: &str,
    f: impl Fn(&mut Value, String, &str) -> Res<Vec<Trace>>,
) -> Res<Vec<Trace>> {
    let one = lines.len() == 1;
    let mut out = Vec::new();
    for (n, mut v) in lines {
        let id = if one {
            stem.to_string()
        } else {
            format!("{stem}__L{n}")
        };
        let path = json::Node::line_root(&v, n).path;
        out.extend(f(&mut v, path, &id)?);
    }
    Ok(out)
}

/// Shared post-processing: default goal, and warnings for calls without results or results
/// without calls.
pub fn finalize(t: &mut Trace) {
    if t.meta.goal.is_none() {
        t.meta.goal = t
            .messages
            .iter()
            .find(|m| {
                m.role == Role::User
                    && matches!(m.kind.as_deref(), None | Some("user_simulator"))
                    && !m.content.trim().is_empty()
            })
            .map(|m| extract_goal(&m.content));
    }
    // A result the importer already reported as answering no open call (with its JSON path)
    // is not reported again in other words: one warning per fact. The importer's warning
    // quotes the result's recorded id (which the result keeps), or, for the few that quote
    // none (SWE-agent's observations, Gemini's responses by name), is paired in order.
    let problems = pairing(t);
    let mut reported: Vec<Option<&String>> = t
        .meta
        .warnings
        .iter()
        .filter(|w| w.contains("no open"))
        .map(Some)
        .collect();
    let mut shown = vec![true; problems.len()];
    for (k, p) in problems.iter().enumerate() {
        if let Pairing::Orphan { id, .. } = p {
            let quoted = crate::output::quoted(id);
            if let Some(r) = reported
                .iter_mut()
                .find(|r| r.is_some_and(|w| w.contains(&quoted)))
            {
                *r = None;
                shown[k] = false;
            }
        }
    }
    for (k, p) in problems.iter().enumerate() {
        if shown[k] && matches!(p, Pairing::Orphan { .. }) {
            if let Some(r) = reported.iter_mut().find(|r| r.is_some()) {
                *r = None;
                shown[k] = false;
            }
        }
    }
    let texts: Vec<String> = problems
        .iter()
        .zip(shown)
        .filter(|(_, s)| *s)
        .map(|(p, _)| p.to_string())
        .collect();
    for p in texts {
        if !t.meta.warnings.contains(&p) {
            t.meta.warnings.push(p);
        }
    }
}

/// One problem of a trace's tool-call pairing (message indexes are 0-based).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pairing<'a> {
    /// A call id used by an earlier call too.
    Reused { at: usize, id: &'a str },
    /// A tool result whose id answers no open call.
    Orphan { at: usize, id: &'a str },
    /// A call no result answers; `ends`: nothing follows it but results of its own message's
    /// other calls (the source ends mid-call), else the source goes on without answering it.
    Unanswered {
        at: usize,
        id: &'a str,
        name: &'a str,
        ends: bool,
    },
}

impl std::fmt::Display for Pairing<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pairing::Reused { at, id } => {
                write!(
                    f,
                    "message {at}: tool call id {} is used more than once",
                    crate::output::quoted(id)
                )
            }
            Pairing::Orphan { at, id } => write!(
                f,
                "message {at}: tool result for call id {} answers no open tool call",
                crate::output::quoted(id)
            ),
            Pairing::Unanswered { at, id, name, ends } => write!(
                f,
                "message {at}: tool call {} ({name}) has no result ({})",
                crate::output::quoted(id),
                if *ends {
                    "the source ends mid-call"
                } else {
                    "the source goes on without answering it"
                }
            ),
        }
    }
}

/// Tool calls without a result and results that answer no open call, as warnings (message
/// indexes are 0-based). Empty for a well-formed trace.
pub fn pairing_problems(t: &Trace) -> Vec<String> {
    pairing(t).iter().map(|p| p.to_string()).collect()
}

/// The problems of `t`'s tool-call pairing, in message order (unanswered calls last).
fn pairing(t: &Trace) -> Vec<Pairing<'_>> {
    let mut out = Vec::new();
    let mut open: HashMap<&str, (usize, &str)> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    // For each message, the message of the call it answered (tool results only).
    let mut answered: Vec<Option<usize>> = vec![None; t.messages.len()];
    for (i, m) in t.messages.iter().enumerate() {
        for c in &m.tool_calls {
            if !seen.insert(c.id.as_str()) {
                out.push(Pairing::Reused {
                    at: i,
                    id: c.id.as_str(),
                });
            }
            open.insert(c.id.as_str(), (i, c.name.as_str()));
        }
        if m.role == Role::Tool {
            let id = m.tool_call_id.as_deref().unwrap_or("");
            match open.remove(id) {
                Some((from, _)) => answered[i] = Some(from),
                None => out.push(Pairing::Orphan { at: i, id }),
            }
        }
    }
    let mut dangling: Vec<_> = open.into_iter().collect();
    dangling.sort_by_key(|(id, (i, _))| (*i, *id));
    for (id, (i, name)) in dangling {
        let ends = answered[i + 1..].iter().all(|a| *a == Some(i));
        out.push(Pairing::Unanswered {
            at: i,
            id,
            name,
            ends,
        });
    }
    out
}

/// The user's request inside a harness prompt: the text inside the well-known wrappers
/// (`<pr_description>`, `<issue_description>`, SWE-agent's `ISSUE:` … `INSTRUCTIONS:`, the
/// OpenHands resolver's `# Problem Statement`), else the text before SWE-agent's
/// `INSTRUCTIONS:` block, else the whole message, trimmed.
pub fn extract_goal(text: &str) -> String {
    const WRAPPERS: [(&str, &str); 5] = [
        ("<pr_description>", "</pr_description>"),
        ("<issue_description>", "</issue_description>"),
        ("<issue>", "</issue>"),
        ("ISSUE:\n", "\n\nINSTRUCTIONS:"),
        ("# Problem Statement\n", "\n\nIMPORTANT:"),
    ];
    for (open, close) in WRAPPERS {
        if let Some(start) = text.find(open) {
            let rest = &text[start + open.len()..];
            if let Some(end) = rest.find(close) {
                let inner = rest[..end].trim();
                let inner = inner
                    .strip_prefix("Consider the following PR description:")
                    .unwrap_or(inner)
                    .trim();
                if !inner.is_empty() {
                    return inner.to_string();
                }
            }
        }
    }
    // SWE-agent templates without an ISSUE: block (e.g. CTF challenges) still end the request
    // where the harness instructions begin.
    if let Some(end) = text.find("\nINSTRUCTIONS:\n") {
        let before = text[..end].trim();
        if !before.is_empty() {
            return before.to_string();
        }
    }
    text.trim().to_string()
}

/// Records numbered from line 1, as a JSON Lines file's are (the importers' unit tests).
#[cfg(test)]
pub(crate) fn numbered(records: Vec<serde_json::Value>) -> Vec<(usize, serde_json::Value)> {
    records
        .into_iter()
        .enumerate()
        .map(|(i, v)| (i + 1, v))
        .collect()
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{Message, ToolCall, TraceMeta};
    use serde_json::json;

    #[test]
    fn every_format_but_canonical_has_exactly_one_importer() {
        for f in SourceFormat::ALL {
            let n = IMPORTERS.iter().filter(|i| i.format == *f).count();
            let want = usize::from(*f != SourceFormat::Canonical);
            assert_eq!(n, want, "{}: {n} importers", f.as_str());
        }
    }

    /// One small input per importer that detection must attribute to it (through its `detect`
    /// rule and its place in `importers!`).
    const DETECTION_SAMPLES: &[(SourceFormat, &str)] = &[
        (SourceFormat::ClaudeCode, "{\"type\":\"user\",\"sessionId\":\"s\",\"uuid\":\"u\"}\n{\"type\":\"assistant\",\"sessionId\":\"s\",\"uuid\":\"v\"}\n"),
        (SourceFormat::MiniSwe, r#"{"trajectory_format": "mini-swe-agent-1", "messages": []}"#),
        (SourceFormat::Atif, r#"{"schema_version": "ATIF-v1.2", "steps": []}"#),
        (SourceFormat::Tau2, r#"{"info": {}, "simulations": []}"#),
        (SourceFormat::SweAgent, r#"{"history": [{"role": "system"}], "info": {}}"#),
        (SourceFormat::Openhands, r#"{"history": [{"action": "run"}]}"#),
        (SourceFormat::Tau, r#"[{"task_id": 1, "traj": []}]"#),
        (SourceFormat::Golden, "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c\",\"name\":\"ls\",\"args\":{}}]}\n"),
        (SourceFormat::Codex, "{\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\n{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}}\n"),
        (SourceFormat::Inspect, r#"{"version": 2, "eval": {"task": "t"}, "samples": []}"#),
        (SourceFormat::GeminiCli, r#"{"sessionId": "s", "messages": [{"type": "user", "content": "hi"}]}"#),
        (SourceFormat::GeminiCli, "{\"sessionId\":\"s\",\"projectHash\":\"h\",\"startTime\":\"t\",\"lastUpdated\":\"t\",\"kind\":\"main\"}\n{\"id\":\"u\",\"timestamp\":\"t\",\"type\":\"user\",\"content\":[{\"text\":\"hi\"}]}\n"),
        (SourceFormat::Copilot, "{\"type\":\"session.start\",\"data\":{\"sessionId\":\"s\",\"producer\":\"copilot-agent\"}}\n{\"type\":\"user.message\",\"data\":{\"content\":\"hi\"}}\n"),
        (SourceFormat::Langchain, r#"[{"type": "human", "data": {"content": "hi"}}]"#),
        (SourceFormat::Langchain, r#"{"messages": [{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": {"content": "x"}}]}"#),
        (SourceFormat::OpenaiResponses, r#"[{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]"#),
        (SourceFormat::Gemini, r#"[{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"text": "yo"}]}]"#),
        (SourceFormat::Cline, r#"[{"role": "user", "content": [{"type": "text", "text": "<task>x</task>"}, {"type": "text", "text": "<environment_details>\n</environment_details>"}]}]"#),
        (SourceFormat::Anthropic, r#"{"system": "s", "messages": [{"role": "user", "content": "hi"}]}"#),
        (SourceFormat::Openai, r#"[{"role": "user", "content": "hi"}]"#),
    ];

    /// Every site an importer needs (docs/architecture.md, "an importer"): its `IMPORTER` in
    /// `importers!` (checked above), its name in `source_formats!` (parsed back, offered by
    /// `--from`), its rule in `detect`'s documented list, and a sample its `detect` rule claims.
    #[test]
    fn every_importer_is_registered_at_every_site() {
        let detect_doc = include_str!("detect.rs");
        for i in IMPORTERS {
            let name = i.format.as_str();
            assert_eq!(
                SourceFormat::parse(name),
                Some(i.format),
                "{name}: source_formats!"
            );
            assert!(
                ["- {}:", "- {},", "; {}:", "then {}:"]
                    .iter()
                    .any(|p| detect_doc.contains(&p.replace("{}", name))),
                "{name}: its detection rule is not in detect.rs's list of rules"
            );
            let samples: Vec<&str> = DETECTION_SAMPLES
                .iter()
                .filter(|(f, _)| *f == i.format)
                .map(|(_, s)| *s)
                .collect();
            assert!(
                !samples.is_empty(),
                "{name}: no sample in DETECTION_SAMPLES"
            );
            for s in samples {
                let input = parse_input(s.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e:?}"));
                assert_eq!(detect::detect(&input), Ok(i.format), "{name}: {s}");
            }
        }
    }

    #[test]
    fn stems_drop_trace_extensions() {
        assert_eq!(
            file_stem(Path::new(
                "tasks/1769064454592/api_conversation_history.json"
            )),
            "1769064454592"
        );
        assert_eq!(
            file_stem(Path::new("api_conversation_history.json")),
            "api_conversation_history"
        );
        assert_eq!(file_stem(Path::new("a/x.traj.json")), "x");
        assert_eq!(file_stem(Path::new("x.traj")), "x");
        assert_eq!(file_stem(Path::new("x.jsonl")), "x");
        // Discovery takes extensions in any case; so does the id.
        assert_eq!(file_stem(Path::new("GOOD4.JSONL")), "GOOD4");
        assert_eq!(file_stem(Path::new("a/X.Traj.Json")), "X");
        assert_eq!(file_stem(Path::new("é.JSON")), "é");
        assert_eq!(
            file_stem(Path::new("2025-10-06T19-24-15.909785_a.json")),
            "2025-10-06T19-24-15.909785_a"
        );
    }

    #[test]
    fn goal_comes_from_known_wrappers() {
        let t = "<pr_description>\nConsider the following PR description:\nFix X\n</pr_description>\nmore";
        assert_eq!(extract_goal(t), "Fix X");
        assert_eq!(extract_goal("ISSUE:\nBug Y\n\nINSTRUCTIONS:\ndo"), "Bug Y");
        assert_eq!(extract_goal("  plain request \n"), "plain request");
        assert_eq!(
            extract_goal("CTF named x.\n\nINSTRUCTIONS:\nNow, you"),
            "CTF named x."
        );
    }

    #[test]
    fn pairing_problems_find_orphans_and_dangling_calls() {
        let mut t = Trace::new(TraceMeta::new("t", SourceFormat::Openai));
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: json!({}),
        };
        t.messages
            .push(Message::assistant("", vec![call("a"), call("b")]));
        t.messages.push(Message::tool("a", "f", "ok"));
        t.messages.push(Message::tool("zz", "f", "?"));
        t.messages.push(Message::assistant("", vec![call("c")]));
        let p = pairing_problems(&t);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("\"zz\""));
        assert!(p[1].contains("\"b\"") && !p[1].contains("mid-call"));
        assert!(p[2].contains("\"c\"") && p[2].contains("mid-call"));
    }

    /// One orphan result is one warning, the importer's (with its JSON path), not a second in
    /// other words from the pairing check; the call it did not answer is said to have none
    /// while the source goes on (not "the source ends mid-call": a message follows it).
    #[test]
    fn an_orphan_result_is_warned_once_and_the_call_it_skips_accurately() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.json");
        std::fs::write(
            &f,
            r#"[{"role": "user", "content": "list"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "zzz", "content": "out"}]"#,
        )
        .unwrap();
        let t = import_file(&f, None).unwrap().remove(0);
        assert_eq!(
            t.meta.warnings,
            [
                "$[2]: tool result for \"zzz\" follows no open tool call",
                "message 1: tool call \"a\" (ls) has no result (the source goes on without answering it)",
            ]
        );
        // The pairing check alone (a canonical trace) still finds both.
        let p = pairing_problems(&t);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("answers no open tool call"), "{p:?}");
        // A call whose message is the last but for results of its other calls: the source
        // ends mid-call.
        std::fs::write(
            &f,
            r#"[{"role": "user", "content": "list"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}, {"id": "b", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "out"}]"#,
        )
        .unwrap();
        let t = import_file(&f, None).unwrap().remove(0);
        assert_eq!(
            t.meta.warnings,
            ["message 1: tool call \"b\" (cat) has no result (the source ends mid-call)"]
        );
    }

    /// Images an importer replaces by a placeholder are warned of, one warning each (the replay
    /// counts none of their tokens): a real Codex rollout with 17 `input_image` parts, and a
    /// real Inspect log with an `image` part. Nothing said so.
    #[test]
    fn images_replaced_by_placeholders_are_warned_of() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets");
        // Each warned of where the importer replaced it: the part's line and JSON path.
        for (file, placeholder, n, first) in [
            (
                "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
                "[input_image]",
                17,
                "line 1422: $.payload.content[2]",
            ),
            (
                "inspect/log_images_tc.json",
                "[image]",
                1,
                "$.samples[0].messages[1].content[1]",
            ),
        ] {
            let t = import_file(&root.join(file), None).unwrap().remove(0);
            let images: Vec<&String> = t
                .meta
                .warnings
                .iter()
                .filter(|w| w.contains("an image was replaced by the placeholder"))
                .collect();
            assert_eq!(images.len(), n, "{file}");
            let in_text: usize = t
                .messages
                .iter()
                .map(|m| m.content.lines().filter(|l| *l == placeholder).count())
                .sum();
            assert_eq!(in_text, n, "{file}");
            assert!(
                images[0].starts_with(&format!("{first}: "))
                    && images[0].ends_with(&format!(
                        "an image was replaced by the placeholder {placeholder:?}; its tokens are not counted"
                    )),
                "{}",
                images[0]
            );
            // Imported again (finalize twice), not warned twice.
            let mut again = t.clone();
            finalize(&mut again);
            assert_eq!(again.meta.warnings, t.meta.warnings);
        }
    }

    /// The one trace of a small input (detected, imported and finalized as a file would be).
    fn imported(text: &str) -> Trace {
        match import_bytes(text.as_bytes(), "t", None, None) {
            Ok(FileContent::Traces(mut t)) if t.len() == 1 => t.remove(0),
            other => panic!("{other:?}"),
        }
    }

    /// Text that reads like a placeholder is text: a tool output of a markdown file with a line
    /// `[image]`, a user message `[image_url]` (a string, then a text part) replace nothing and
    /// are warned of by nobody. The scan of the finished text warned of each as an image.
    #[test]
    fn a_placeholder_line_in_text_is_not_warned_of() {
        let t = imported(
            r##"[{"role": "user", "content": "[image_url]"},
                {"role": "user", "content": [{"type": "text", "text": "see README.md:\n[image]"}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "cat", "arguments": "{\"path\": \"README.md\"}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "# Logo\n[image]\n[image/png]\n![logo](logo.png)"}]"##,
        );
        assert_eq!(t.meta.source_format, SourceFormat::Openai);
        assert!(t.messages[3].content.contains("\n[image]\n"));
        assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    }

    /// Documents, audio and files replaced by a placeholder are warned of like images, each
    /// where the importer replaced it, in the wording of its kind: OpenAI chat `input_audio` and
    /// `file` parts, Anthropic `document` blocks (in a user turn and in a tool result), Gemini
    /// inline and file data of non-image MIME types, a Responses `input_file`, an Inspect
    /// `audio` part. None was warned of.
    #[test]
    fn non_image_parts_replaced_by_placeholders_are_warned_of() {
        let warned = |at: &str, noun: &str, p: &str| {
            format!("{at}: {noun} was replaced by the placeholder \"[{p}]\"; its tokens are not counted")
        };
        let openai = imported(
            r#"{"model": "gpt-4o-audio-preview", "messages": [
                {"role": "user", "content": [{"type": "text", "text": "transcribe and summarise"},
                    {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                    {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}}]},
                {"role": "assistant", "content": "done"}]}"#,
        );
        assert_eq!(openai.meta.source_format, SourceFormat::Openai);
        assert_eq!(
            openai.messages[0].content,
            "transcribe and summarise\n[input_audio]\n[file]"
        );
        assert_eq!(
            openai.meta.warnings,
            [
                warned("$.messages[0].content[1]", "an audio part", "input_audio"),
                warned("$.messages[0].content[2]", "a file part", "file"),
            ]
        );

        let anthropic = imported(
            r#"{"system": "be brief", "messages": [
                {"role": "user", "content": [
                    {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
                    {"type": "text", "text": "summarise"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "fetch", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
                    {"type": "text", "text": "fetched"},
                    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]}]}]}"#,
        );
        assert_eq!(anthropic.meta.source_format, SourceFormat::Anthropic);
        assert_eq!(anthropic.messages[1].content, "[document]\nsummarise");
        assert_eq!(anthropic.messages[3].content, "fetched\n[document]");
        assert_eq!(
            anthropic.meta.warnings,
            [
                warned("$.messages[0].content[0]", "a document part", "document"),
                warned(
                    "$.messages[2].content[0].content[1]",
                    "a document part",
                    "document"
                ),
            ]
        );

        let gemini = imported(
            r#"[{"role": "user", "parts": [{"text": "what is said in these?"},
                    {"inlineData": {"mimeType": "audio/mp3", "data": "SUQz"}},
                    {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/a.pdf"}}]},
                {"role": "model", "parts": [{"text": "nothing"}]}]"#,
        );
        assert_eq!(gemini.meta.source_format, SourceFormat::Gemini);
        assert_eq!(
            gemini.messages[0].content,
            "what is said in these?\n[audio/mp3]\n[application/pdf]"
        );
        assert_eq!(
            gemini.meta.warnings,
            [
                warned("$[0].parts[1]", "an audio part", "audio/mp3"),
                warned("$[0].parts[2]", "a document part", "application/pdf"),
            ]
        );

        let responses = imported(
            "{\"type\": \"message\", \"role\": \"user\", \"content\": [{\"type\": \"input_file\", \"file_id\": \"file-1\"}, {\"type\": \"input_text\", \"text\": \"read it\"}]}\n\
             {\"type\": \"function_call\", \"call_id\": \"c\", \"name\": \"f\", \"arguments\": \"{}\"}\n\
             {\"type\": \"function_call_output\", \"call_id\": \"c\", \"output\": \"ok\"}\n",
        );
        assert_eq!(responses.meta.source_format, SourceFormat::OpenaiResponses);
        assert_eq!(
            responses.meta.warnings,
            [warned("line 1: $.content[0]", "a file part", "input_file")]
        );

        let inspect = imported(
            r#"{"id": 1, "epoch": 1, "input": "listen", "messages": [
                {"role": "user", "content": [{"type": "text", "text": "listen"}, {"type": "audio", "audio": "a.mp3", "format": "mp3"}]},
                {"role": "assistant", "content": "a bird"}]}"#,
        );
        assert_eq!(inspect.meta.source_format, SourceFormat::Inspect);
        assert_eq!(
            inspect.meta.warnings,
            [warned("$.messages[0].content[1]", "an audio part", "audio")]
        );
    }

    #[test]
    fn parse_errors_name_line_and_column() {
        let e = match parse_input(b"{\"a\": [1, 2") {
            Err(e) => e,
            Ok(_) => panic!("truncated JSON parsed"),
        };
        assert_eq!(e.location, "line 1, column 11");
        assert!(e.message.contains("truncated"), "{}", e.message);
        let e = match parse_input(b"{\"a\":1}\n{\"b\":\n") {
            Err(e) => e,
            Ok(_) => panic!("truncated JSONL parsed"),
        };
        assert!(e.location.starts_with("line 2"), "{}", e.location);
        let e = match parse_input(b"{\n  \"a\": 1\n}\n}") {
            Err(e) => e,
            Ok(_) => panic!("trailing garbage parsed"),
        };
        assert_eq!(e.location, "line 4, column 1");
        assert!(e.message.contains("trailing characters"), "{}", e.message);
        match parse_input(b"{\"a\":1}\n\n{\"b\":2}\n").unwrap() {
            Input::Lines(l) => assert_eq!(l.iter().map(|x| x.0).collect::<Vec<_>>(), [1, 3]),
            Input::Json(_) => panic!("expected lines"),
        }
    }
}
