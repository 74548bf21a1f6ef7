//! The one place that decides how things are shown to a person: tables, progress, colour.

use std::io::IsTerminal;

/// `eprint!` that never panics: a closed or full stderr (`ctxbench … 2>&1 | head`) loses the
/// message instead of ending the process with a panic (exit 101) before its exit code.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::output::emit_err(&format!($($arg)*))
    };
}

/// `eprintln!` that never panics (see [`err!`]).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::emit_err(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use {err, errln};

/// Write `text` to stderr, its control characters shown visibly ([`visible`]: stderr carries
/// trace ids, tool names and error messages, which come from untrusted traces); an error (a
/// closed pipe) is ignored: there is nowhere else to say it.
pub fn emit_err(text: &str) {
    use std::io::Write as _;
    let text = visible(text);
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush());
}

/// Whether `c` is a character that must not reach a terminal or a document raw: a C0 control
/// (`\n` and `\t` included: callers keep those), DEL, a C1 control, or a Unicode bidi control
/// (U+061C, U+200E/U+200F, U+202A–U+202E, U+2066–U+2069), which reorders what a reader sees.
/// ESC, CSI (U+009B) and OSC (U+009D) start the escape sequences that clear a terminal, colour
/// it, set its window title or print a hyperlink; BEL, BS, CR and NUL ring, overprint or
/// truncate.
pub fn is_control(c: char) -> bool {
    matches!(
        c,
        '\0'..='\x1f'
            | '\x7f'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// Append `c` written visibly, as a Rust escape: `\x1b` for an ASCII control, `\u{202e}`
/// otherwise.
pub fn push_visible(out: &mut String, c: char) {
    use std::fmt::Write as _;
    let n = u32::from(c);
    let _ = if n < 0x80 {
        write!(out, "\\x{n:02x}")
    } else {
        write!(out, "\\u{{{n:x}}}")
    };
}

/// `s` in double quotes, escaped as `{s:?}` escapes it (`\"`, `\\`, a non-printable
/// character as `\u{200b}`), but a control character as [`push_visible`] writes it: `\x1b`,
/// `\x0a`, `\u{202e}`, the one form every output uses (docs/reliability.md), where `{s:?}`
/// writes `\u{1b}` and `\n`. For untrusted names quoted in messages and import warnings (a
/// tool call id, a role, a block type).
pub fn quoted(s: &str) -> String {
    let debug = format!("{s:?}");
    let mut out = String::with_capacity(debug.len());
    let mut chars = debug.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        // An escape of `{:?}`: `\\`, `\"`, `\'`, `\n`, `\r`, `\t`, `\0` or `\u{HEX}`.
        match chars.next() {
            Some(e @ ('n' | 'r' | 't' | '0')) => {
                let c = match e {
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    _ => '\0',
                };
                push_visible(&mut out, c);
            }
            Some('u') => {
                let mut hex = String::new();
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                    if d != '{' {
                        hex.push(d);
                    }
                }
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(c) if is_control(c) => push_visible(&mut out, c),
                    _ => {
                        out.push_str("\\u{");
                        out.push_str(&hex);
                        out.push('}');
                    }
                }
            }
            Some(e) => {
                out.push('\\');
                out.push(e);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// `text` with every [`is_control`] character except newline and tab written visibly
/// ([`push_visible`]); borrowed when there is none. The one function that makes untrusted text
/// (trace ids, model and tool names, error messages) safe for a terminal: [`emit_err`] and
/// `cli::emit` pass everything they write through it, as does the progress bar. Also used for
/// results.csv cells and plot SVGs. A backslash is left as it is: `\x1b` in the output is
/// either an escaped ESC or those four characters in the trace.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    visible_but(text, |c| c == '\n' || c == '\t')
}

/// [`visible`] for a document a browser lays out (report.html): a carriage return is kept too
/// (the CRLF line ends of recorded text are whitespace there, not an overprint).
pub fn visible_in_page(text: &str) -> std::borrow::Cow<'_, str> {
    visible_but(text, |c| matches!(c, '\n' | '\t' | '\r'))
}

/// `text` with every [`is_control`] character but those `kept` written visibly; a carriage
/// return before a line feed is a line end (CRLF text: an HTTP body, Windows tool output), kept.
fn visible_but(text: &str, kept: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let keep = |at: usize, c: char| {
        !is_control(c) || kept(c) || (c == '\r' && bytes.get(at + 1) == Some(&b'\n'))
    };
    let Some((first, _)) = text.char_indices().find(|&(at, c)| !keep(at, c)) else {
        return std::borrow::Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for (at, c) in text[first..].char_indices() {
        if keep(first + at, c) {
            out.push(c);
        } else {
            push_visible(&mut out, c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// JSON text (as serde_json writes it) safe for a terminal with its values unchanged: every
/// [`is_control`] character but JSON's whitespace (`\n`, `\t`, `\r`) as a `\u` escape. serde_json
/// escapes the C0 controls in strings itself but writes DEL and the C1 and bidi controls raw.
/// Outside strings JSON holds only ASCII punctuation, letters, digits and whitespace, so every
/// such character is inside a string, where `\u009b` means the same as the character.
pub fn visible_json(json: &str) -> std::borrow::Cow<'_, str> {
    let Some(first) = json.find(is_control_in_json) else {
        return std::borrow::Cow::Borrowed(json);
    };
    let mut out = String::with_capacity(json.len() + 16);
    out.push_str(&json[..first]);
    for c in json[first..].chars() {
        if is_control_in_json(c) {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A control character that is not JSON whitespace.
fn is_control_in_json(c: char) -> bool {
    is_control(c) && !matches!(c, '\n' | '\t' | '\r')
}

/// Columns every line a person reads fits in (not `COLUMNS`: a fixed width, docs/report.md).
pub const WIDTH: usize = 100;

/// `e` and its causes joined by `: ` (what `{e:#}` prints), except a cause whose text the
/// message before it already ends with: an error that quotes its source (`{path}: {source}`)
/// and keeps it as its source printed it twice (`…: No such file (os error 2): No such file
/// (os error 2)`).
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut before = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.is_empty() {
            out.push_str(&text);
        } else if !before.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        before = text;
    }
    out
}

/// True when stdout is an interactive terminal (progress bars and colour only then).
pub fn stdout_is_tty() -> bool {
    std::io::stdout().is_terminal()
}

/// True when stderr is an interactive terminal (where the progress bar is drawn).
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// Environment variable setting the seconds between progress lines when stderr is not a
/// terminal (CI logs); a decimal number, `0` prints a line after every unit.
pub const PROGRESS_SECS_ENV: &str = "CTXBENCH_PROGRESS_SECS";

/// Seconds between progress lines when nothing overrides them.
pub const DEFAULT_PROGRESS_SECS: f64 = 10.0;

/// How a long-running command shows its progress on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ProgressMode {
    /// Nothing (`--quiet`, or tests).
    #[default]
    Hidden,
    /// A redrawn bar (stderr is a terminal).
    Bar,
    /// A plain line at most every `every` (stderr is a file or a pipe, e.g. a CI log).
    Lines { every: std::time::Duration },
}

/// The progress mode for this process: hidden with `quiet`, a bar when stderr is a terminal,
/// otherwise lines every [`PROGRESS_SECS_ENV`] seconds (default [`DEFAULT_PROGRESS_SECS`]).
/// A value that is not a non-negative number is an error naming the variable.
pub fn progress_mode(quiet: bool) -> Result<ProgressMode, String> {
    let env = std::env::var(PROGRESS_SECS_ENV).ok();
    progress_mode_from(quiet, stderr_is_tty(), env.as_deref())
}

/// [`progress_mode`] from its inputs (pure, for tests).
pub fn progress_mode_from(
    quiet: bool,
    stderr_tty: bool,
    secs: Option<&str>,
) -> Result<ProgressMode, String> {
    if quiet {
        return Ok(ProgressMode::Hidden);
    }
    if stderr_tty {
        return Ok(ProgressMode::Bar);
    }
    let secs = match secs.map(str::trim).filter(|s| !s.is_empty()) {
        None => DEFAULT_PROGRESS_SECS,
        Some(s) => s
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e9)
            .ok_or_else(|| {
                format!("{PROGRESS_SECS_ENV}={s}: expected seconds between progress lines (a number >= 0)")
            })?,
    };
    let every = std::time::Duration::try_from_secs_f64(secs).map_err(|_| {
        format!("{PROGRESS_SECS_ENV}: expected seconds between progress lines, got {secs}")
    })?;
    Ok(ProgressMode::Lines { every })
}

/// `42s`, `3m05s`, `2h07m`: a duration for a person (whole seconds).
pub fn human_duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Render rows as a left-aligned text table with a header line. Pure: returns the text. Cells
/// are measured as they will be shown ([`visible`]: a control character in a trace id takes
/// the columns of its escape) and in display columns ([`columns`]: a CJK character or an emoji
/// takes two, so the columns after it stay aligned).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<std::borrow::Cow<'_, str>> = header.iter().map(|h| visible(h)).collect();
    let header: Vec<&str> = header.iter().map(|h| h.as_ref()).collect();
    let rows: Vec<Vec<std::borrow::Cow<'_, str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| visible(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| columns(h)).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(columns(cell));
            }
        }
    }
    let mut out = String::new();
    let line = |cells: &mut dyn Iterator<Item = &str>, out: &mut String| {
        let mut first = true;
        for (i, c) in cells.enumerate() {
            if !first {
                out.push_str("  ");
            }
            first = false;
            out.push_str(c);
            let pad = widths[i].saturating_sub(columns(c));
            if i + 1 < widths.len() {
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        while out.ends_with(' ') {
            out.pop();
        }
        out.push('\n');
    };
    line(&mut header.iter().copied(), &mut out);
    for row in &rows {
        line(&mut row.iter().map(|s| s.as_ref()), &mut out);
    }
    out
}

/// [`table`] fitted to `width` columns: the last column's text wraps at word boundaries onto
/// lines of its own, aligned under it (a word too long for it is shortened around a `…`);
/// the other columns keep their widths.
pub fn table_fit(header: &[&str], rows: &[Vec<String>], width: usize) -> String {
    let n = header.len();
    if n == 0 {
        return table(header, rows);
    }
    // Fitted as shown: the escapes of control characters take columns too.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| visible(c).into_owned()).collect())
        .collect();
    let rows = &rows;
    let mut widths: Vec<usize> = header.iter().map(|h| columns(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row).take(n - 1) {
            *w = (*w).max(columns(cell));
        }
    }
    let indent: usize = widths[..n - 1].iter().map(|w| w + 2).sum();
    // Never narrower than a readable column, even when the others take the whole width.
    let room = width.saturating_sub(indent).max(24);
    let mut fitted: Vec<Vec<String>> = Vec::new();
    let mut continued: Vec<Vec<String>> = Vec::new();
    for row in rows {
        let last = row.get(n - 1).map_or("", String::as_str);
        let mut lines = wrap(last, room)
            .lines()
            .map(|l| ellipsize(l, room))
            .collect::<Vec<_>>()
            .into_iter();
        let mut first = row.clone();
        if let Some(cell) = first.get_mut(n - 1) {
            *cell = lines.next().unwrap_or_default();
        }
        fitted.push(first);
        continued.push(lines.collect());
    }
    let text = table(header, &fitted);
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines();
    if let Some(h) = lines.next() {
        out.push_str(h);
        out.push('\n');
    }
    for (line, more) in lines.zip(&continued) {
        out.push_str(line);
        out.push('\n');
        for m in more {
            out.extend(std::iter::repeat_n(' ', indent));
            out.push_str(m);
            out.push('\n');
        }
    }
    out
}

/// `s` as one word of a POSIX shell command line, for a command a message suggests
/// (`ctxbench run SUITE --resume DIR`): as it is when it holds only characters no shell treats
/// specially (letters, digits, `_ - . / , : @ % + =`), else in single quotes (a quote in it
/// written `'\''`), and with a control character (a newline in a file name) in bash's `$'…'`
/// form, where it is an escape (`\n`, `\x1b`). Nothing else makes a path with a space, a `$` or a
/// `;` in it copyable from the message into a shell.
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_alphanumeric() || "_-./,:@%+=".contains(c);
    if !s.is_empty() && s.chars().all(plain) && !s.starts_with('=') {
        return s.to_string();
    }
    if s.chars().any(is_control) {
        let mut out = String::from("$'");
        for c in s.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if is_control(c) && u32::from(c) < 0x80 => push_visible(&mut out, c),
                // A C1 or bidi control as its UTF-8 bytes, each `\xHH` (bash's `$'…'` reads
                // `\u` only in some versions).
                c if is_control(c) => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('\'');
        return out;
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The words of `text` for wrapping: split at whitespace, except that a span in single quotes
/// opened at the start of a word, or right after a backtick, `=` or another quote (a
/// [`shell_word`] such as `'my runs/a'`, `` `--resume 'a b'` ``, `'it'\''s'`) stays in its
/// word with its whitespace as it is: a line never breaks inside a quoted path, and its spaces
/// are not collapsed. A quote with no closing one is an ordinary character (an apostrophe).
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        rest = rest.trim_start();
        if rest.is_empty() {
            return None;
        }
        let (word, tail) = rest.split_at(word_end(rest));
        rest = tail;
        Some(word)
    })
}

/// Where the word at the start of `s` (which starts with no whitespace) ends ([`words`]); a
/// quoted span closes on its line.
fn word_end(s: &str) -> usize {
    let mut at = 0;
    let mut prev: Option<char> = None;
    while let Some(c) = s[at..].chars().next() {
        if c.is_whitespace() {
            break;
        }
        let next = at + c.len_utf8();
        if c == '\'' && matches!(prev, None | Some('`' | '=' | '\'' | '$')) {
            let line = s[next..]
                .find('\n')
                .map_or(&s[next..], |nl| &s[next..next + nl]);
            // In bash's `$'…'` a backslash escapes the next character (`\'` is a quote).
            let close = if prev == Some('$') {
                let mut escaped = false;
                line.char_indices()
                    .find(|&(_, d)| {
                        let end = d == '\'' && !escaped;
                        escaped = d == '\\' && !escaped;
                        end
                    })
                    .map(|(i, _)| i)
            } else {
                line.find('\'')
            };
            if let Some(close) = close {
                at = next + close + 1;
                prev = Some('\'');
                continue;
            }
        }
        at = next;
        prev = Some(c);
    }
    at
}

/// `text` wrapped at word boundaries to `width` display columns ([`columns`]: a CJK character
/// or an emoji takes two), each line ending in a newline (a word longer than `width` gets a
/// line of its own; a quoted span stays whole: a path `shell_word` quoted).
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    let mut used = 0;
    for word in words(text) {
        let w = columns(word);
        if !line.is_empty() && used + 1 + w > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
            used = 0;
        }
        if !line.is_empty() {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += w;
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `text` after `label` on lines of at most `width` columns, wrapped at word boundaries, the
/// lines after the first indented by `indent` spaces; unlike [`wrap_after`], a word is never
/// shortened: a path or an id too long for a line stands whole on a line of its own (the label
/// on the line before it), for a reader to copy. Measured as shown ([`visible`]), in display
/// columns. Each line ends in a newline.
pub fn wrap_whole(label: &str, indent: usize, text: &str, width: usize) -> String {
    let text = visible(text);
    let pad = " ".repeat(indent);
    let mut out = String::new();
    let mut line = label.to_string();
    // Only the label (or the indent) on the line so far.
    let mut bare = true;
    for word in words(&text) {
        let needed = if bare { 0 } else { 1 } + columns(word);
        if columns(&line) + needed > width && !(bare && line.trim().is_empty()) {
            out.push_str(line.trim_end());
            out.push('\n');
            line.clone_from(&pad);
            bare = true;
        }
        if !bare {
            line.push(' ');
        }
        line.push_str(word);
        bare = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The text of an error that the binary prints after `error: `, wrapped with [`wrap_whole`] so
/// that every line, the first with that label, fits [`WIDTH`] columns (a path stands whole on a
/// line of its own when it is too long for one). No trailing newline.
pub fn error_text(text: &str) -> String {
    const LABEL: &str = "error: ";
    let wrapped = wrap_whole(LABEL, 0, text, WIDTH);
    let body = wrapped
        .strip_prefix(LABEL)
        // A first word too long for the label's line stands on the next one.
        .or_else(|| wrapped.strip_prefix(LABEL.trim_end()))
        .unwrap_or(&wrapped);
    body.trim_end_matches('\n').to_string()
}

/// The display columns of `s`: two for a wide (East Asian, emoji) character, none for a
/// combining mark, one for the rest (the terminal's count, not the characters').
pub fn columns(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `text` after `label` on lines of at most `width` columns: wrapped at word boundaries, the
/// lines after the first indented by `indent` spaces, a word too long for its line shortened
/// around a `…` ([`ellipsize`]). Measured as shown ([`visible`]). Each line ends in a newline.
pub fn wrap_after(label: &str, indent: usize, text: &str, width: usize) -> String {
    let text = visible(text);
    let first = width.saturating_sub(columns(label)).max(24);
    let rest = width.saturating_sub(indent).max(24);
    let mut out = String::new();
    let mut lines = wrap(&text, first)
        .lines()
        .map(str::to_string)
        .collect::<Vec<_>>();
    // Lines after the first have `rest` columns: rewrap what follows the first line at them.
    if lines.len() > 1 && rest != first {
        let tail = lines[1..].join(" ");
        lines.truncate(1);
        lines.extend(wrap(&tail, rest).lines().map(str::to_string));
    }
    for (i, line) in lines.iter().enumerate() {
        if i == 0 {
            out.push_str(label);
            out.push_str(&ellipsize(line, first));
        } else {
            out.extend(std::iter::repeat_n(' ', indent));
            out.push_str(&ellipsize(line, rest));
        }
        out.push('\n');
    }
    if lines.is_empty() {
        out.push_str(label.trim_end());
        out.push('\n');
    }
    out
}

/// The user-perceived characters of `s` as shown in a terminal, each with its display
/// columns: a character with the combining marks, variation selectors and emoji skin-tone
/// modifiers that follow it, and an emoji joined to the next by a zero-width joiner (`👩‍💻`),
/// so that shortening never separates a mark from its base. (An approximation of Unicode's
/// extended grapheme clusters without a segmentation table.)
fn clusters(s: &str) -> Vec<(&str, usize)> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    let mut start = 0;
    let mut joined = false;
    for (i, c) in s.char_indices() {
        let attached = i > 0
            && (joined
                || unicode_width::UnicodeWidthChar::width(c) == Some(0)
                || ('\u{1F3FB}'..='\u{1F3FF}').contains(&c));
        if !attached && i > start {
            out.push((&s[start..i], 0));
            start = i;
        }
        joined = c == '\u{200D}';
    }
    if start < s.len() {
        out.push((&s[start..], 0));
    }
    for (text, w) in &mut out {
        *w = columns(text);
    }
    out
}

/// `s` if it fits in `max` display columns ([`columns`]), else its start and end around a
/// `…`, in at most `max` columns (a wide character that would overflow its half is left out;
/// a combining mark stays with its base).
pub fn ellipsize(s: &str, max: usize) -> String {
    if columns(s) <= max || max < 3 {
        return s.to_string();
    }
    let parts = clusters(s);
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let (mut out, mut used) = (String::new(), 0);
    let mut first_tail = parts.len();
    for (text, w) in &parts {
        if used + w > head {
            break;
        }
        used += w;
        out.push_str(text);
    }
    let mut back = 0;
    while first_tail > 0 && back + parts[first_tail - 1].1 <= tail {
        first_tail -= 1;
        back += parts[first_tail].1;
    }
    out.push('…');
    for (text, _) in &parts[first_tail..] {
        out.push_str(text);
    }
    out
}

/// Ids shortened to about `max` display columns for a table column, never two different ids
/// the same way. An id that fits is shown whole; a longer one as its start and end around a
/// `…`; when that would print two different ids alike (ids that differ only in the middle), the
/// shortened form keeps its start, a window around where it first differs from the most similar
/// other id, and its end (`replay__marshm…ault_sys-env_cursors_windo…e-1867`); and if even that
/// is ambiguous, the whole id. Same order as `ids`; equal ids get equal text. Measured in
/// display columns ([`columns`]), cut between user-perceived characters, as [`ellipsize`].
pub fn short_ids(ids: &[&str], max: usize) -> Vec<String> {
    use std::collections::HashMap;
    let mut out: Vec<String> = ids.iter().map(|id| ellipsize(id, max)).collect();
    // Rows whose text is shared with a different id.
    let ambiguous = |out: &[String]| -> Vec<usize> {
        let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, t) in out.iter().enumerate() {
            by_text.entry(t.as_str()).or_default().push(i);
        }
        let mut bad: Vec<usize> = by_text
            .values()
            .filter(|rows| rows.iter().any(|&r| ids[r] != ids[rows[0]]))
            .flatten()
            .copied()
            .collect();
        bad.sort_unstable();
        bad
    };
    let first = ambiguous(&out);
    if first.is_empty() {
        return out;
    }
    let parts: Vec<Vec<(&str, usize)>> = ids.iter().map(|id| clusters(id)).collect();
    for &i in &first {
        let x = &parts[i];
        // Longest common prefix with any other id: x differs from all of them by x[..=p].
        let p = parts
            .iter()
            .filter(|y| *y != x)
            .map(|y| {
                x.iter()
                    .zip(y.iter())
                    .take_while(|(a, b)| a.0 == b.0)
                    .count()
            })
            .max()
            .unwrap_or(0);
        out[i] = windowed(x, p, max);
    }
    for i in ambiguous(&out) {
        out[i] = ids[i].to_string();
    }
    out
}

/// `x` (the user-perceived characters of an id wider than `max`, with their columns) as
/// start…window…end in at most `max` columns, the window showing `x[p]` with some context.
fn windowed(x: &[(&str, usize)], p: usize, max: usize) -> String {
    let n = x.len();
    let (lead, tail) = (max / 3, max / 8);
    let win = max.saturating_sub(lead + tail + 2).max(1);
    // The most characters from `from` on (or back from `to`) that fit in `cols` columns.
    let fit_from = |from: usize, cols: usize| {
        let mut used = 0;
        let mut end = from;
        while end < n && used + x[end].1 <= cols {
            used += x[end].1;
            end += 1;
        }
        end
    };
    let lead_end = fit_from(0, lead);
    // Start about half a window before the difference, never inside the lead.
    let mut start = p.min(n);
    let mut back = 0;
    while start > lead_end && back + x[start - 1].1 <= win / 2 {
        start -= 1;
        back += x[start].1;
    }
    let start = start.max(lead_end);
    let end = fit_from(start, win);
    let mut tail_start = n;
    let mut used = 0;
    while tail_start > end && used + x[tail_start - 1].1 <= tail {
        tail_start -= 1;
        used += x[tail_start].1;
    }
    let mut s: String = x[..lead_end].iter().map(|c| c.0).collect();
    if start > lead_end {
        s.push('…');
    }
    s.extend(x[start..end].iter().map(|c| c.0));
    if tail_start > end {
        s.push('…');
    }
    s.extend(x[tail_start..].iter().map(|c| c.0));
    s
}

/// What a JSON value is, in a file's words, for "expected …, found …" messages: "null", "a
/// boolean", "a number", "a string", "an array", "an object".
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// File-name extensions a directory to write into may not end in: it is a directory whose files
/// have fixed names (see [`not_a_directory`]).
const FILE_EXTENSIONS: [&str; 12] = [
    "html", "htm", "md", "json", "jsonl", "csv", "xml", "txt", "png", "svg", "toml", "pdf",
];

/// The nearest existing ancestor of `path` when it is a file, not a directory: nothing can be
/// created at `path` then (the system's "Not a directory").
pub fn file_above(path: &std::path::Path) -> Option<&std::path::Path> {
    path.ancestors()
        .skip(1)
        .find(|a| !a.as_os_str().is_empty() && std::fs::metadata(a).is_ok())
        .filter(|a| !a.is_dir())
}

/// Why `path` cannot be the directory a command writes its files into (`-o/--output DIR`, the
/// suite's `output_dir`), or `None` when it can (it is a directory, or can be created as one).
/// Refused: an existing file; a path under a file (no directory can be made there); a path that
/// is no directory yet and ends in a file extension (`out.html`, `results.csv`): a directory is
/// not silently named like a file (docs/reliability.md, "Output convention"). The caller puts
/// the flag or key and the path before it.
pub fn not_a_directory(path: &std::path::Path) -> Option<String> {
    if path.is_dir() {
        return None;
    }
    if path.exists() {
        return Some(
            "is a file; it names a directory (files inside it have fixed names)".to_string(),
        );
    }
    if let Some(file) = file_above(path) {
        return Some(format!(
            "{} is a file, not a directory; expected a directory (or a path where one can be \
             created)",
            file.display()
        ));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)?;
    FILE_EXTENSIONS.contains(&ext.as_str()).then(|| {
        format!(
            "looks like a .{ext} file name; it names a directory and the files inside it have \
             fixed names (e.g. {})",
            path.with_extension("").display()
        )
    })
}

/// `path` lexically normalized (`a/./b/../c` → `a/c`; no file-system access, symlinks are not
/// resolved) and, when it lies under the current directory, relative to it: what a person
/// should see (`reports/quickstart-…`, never `evals/../reports/…` or a long absolute path).
pub fn display_path(path: &std::path::Path) -> String {
    let cwd = std::env::current_dir().ok();
    display_path_from(path, cwd.as_deref())
}

/// [`display_path`] relative to `cwd` (pure, for tests).
pub fn display_path_from(path: &std::path::Path, cwd: Option<&std::path::Path>) -> String {
    use std::path::{Component, PathBuf};
    fn normalize(p: &std::path::Path) -> PathBuf {
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    let last = out.components().next_back();
                    match last {
                        Some(Component::Normal(_)) => {
                            out.pop();
                        }
                        Some(Component::RootDir) => {}
                        _ => out.push(".."),
                    }
                }
                other => out.push(other.as_os_str()),
            }
        }
        out
    }
    let norm = normalize(path);
    if let Some(cwd) = cwd {
        let cwd = normalize(cwd);
        let abs = if norm.is_absolute() {
            norm.clone()
        } else {
            normalize(&cwd.join(&norm))
        };
        if let Ok(rel) = abs.strip_prefix(&cwd) {
            if rel.as_os_str().is_empty() {
                return ".".to_string();
            }
            return rel.display().to_string();
        }
    }
    if norm.as_os_str().is_empty() {
        return ".".to_string();
    }
    norm.display().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_error_chain_says_a_quoted_source_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("{path}: {source}")]
        struct Quoting {
            path: String,
            #[source]
            source: std::io::Error,
        }
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(Quoting {
            path: "/tmp/x".into(),
            source: io,
        })
        .context("reports were not written");
        assert_eq!(format!("{e:#}").matches("no such file").count(), 2);
        assert_eq!(
            super::error_chain(&e),
            "reports were not written: /tmp/x: no such file"
        );
        // A source the message does not quote is kept.
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(super::error_chain(&plain), "outer: inner");
    }

    #[test]
    fn a_fitted_table_wraps_its_last_column_under_itself() {
        let rows = vec![
            vec!["1".to_string(), "short".to_string()],
            vec![
                "22".to_string(),
                "summarized 7303→1649 18 msgs, keep from #18, history \
                 /conversation_history/session_d6f596f9b4a24ee2a500ed0eb61978cc.md"
                    .to_string(),
            ],
        ];
        let t = super::table_fit(&["n", "events"], &rows, 40);
        assert_eq!(
            t,
            "n   events\n\
             1   short\n\
             22  summarized 7303→1649 18 msgs, keep\n    \
             from #18, history\n    \
             /conversation_his…500ed0eb61978cc.md\n"
        );
        assert!(t.lines().all(|l| l.chars().count() <= 40), "{t}");
    }

    #[test]
    fn a_value_wraps_under_itself_after_its_label() {
        let w = |label, indent, text| super::wrap_after(label, indent, text, 30);
        assert_eq!(w("plan     ", 9, "short"), "plan     short\n");
        assert_eq!(
            w(
                "variants ",
                9,
                "base (baseline), aggressive, prompt-b, digitorn"
            ),
            "variants base (baseline),\n         aggressive, prompt-b,\n         digitorn\n"
        );
        // A word too long for its line is shortened around a `…`; continuation lines may
        // start nearer the margin than the first.
        let t = w(
            "  ",
            4,
            "a/very/long/path/to/some/trace.jsonl: no trace in it",
        );
        assert_eq!(t, "  a/very/long/p…e/trace.jsonl:\n    no trace in it\n");
        assert!(t.lines().all(|l| l.chars().count() <= 30), "{t}");
        // Control characters take the columns of their escapes.
        assert_eq!(w("x ", 2, "a\x1bb"), "x a\\x1bb\n");
        assert_eq!(w("overrides ", 10, ""), "overrides\n");
    }

    #[test]
    fn a_shell_word_is_plain_or_quoted_as_a_shell_reads_it() {
        use super::shell_word;
        for plain in ["reports/run-1", "/tmp/a.b/c_d", "x=1", "été/日本"] {
            assert_eq!(shell_word(plain), plain);
        }
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("my  runs/a"), "'my  runs/a'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$HOME;rm"), "'$HOME;rm'");
        assert_eq!(shell_word("=x"), "'=x'");
        assert_eq!(shell_word("a\nb'c"), "$'a\\nb\\'c'");
        assert_eq!(shell_word("a\u{1b}b"), "$'a\\x1bb'");
        assert_eq!(shell_word("a\u{202e}b"), "$'a\\xe2\\x80\\xaeb'");
        #[cfg(unix)]
        for s in ["my  runs/a", "it's", "$HOME;rm `x`", "a\nb'c", "\\'\"", "*"] {
            let out = std::process::Command::new("bash")
                .args(["-c", &format!("printf %s {}", shell_word(s))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s, "{}", shell_word(s));
        }
    }

    #[test]
    fn a_quoted_span_is_one_word_when_wrapped_and_keeps_its_spaces() {
        let path = super::shell_word("/tmp/my  runs/it's here");
        let text = format!("start it over with `ctxbench run SUITE --resume {path}` or not");
        for width in 20..90 {
            let wrapped = super::wrap_whole("error: ", 0, &text, width);
            assert!(wrapped.contains(&path), "{width}: {wrapped}");
            let plain = super::wrap(&text, width);
            assert!(plain.contains(&path), "{width}: {plain}");
        }
        // An apostrophe in prose opens nothing; a quote without its closing one neither.
        let words: Vec<_> = super::words("it can't  be 'open ended").collect();
        assert_eq!(words, ["it", "can't", "be", "'open", "ended"]);
        let path = super::shell_word("a\n'b c");
        assert_eq!(path, "$'a\\n\\'b c'");
        let text = format!("--resume {path} next");
        assert_eq!(
            super::words(&text).collect::<Vec<_>>(),
            ["--resume", &path, "next"]
        );
        let words: Vec<_> = super::words("x 'a b'c d `'e  f'` g='h i' 'j\nk'").collect();
        assert_eq!(
            words,
            ["x", "'a b'c", "d", "`'e  f'`", "g='h i'", "'j", "k'"]
        );
    }

    #[test]
    fn an_error_text_fits_the_width_after_its_label() {
        let text = format!("RUN_DIR {}: {}", "p/".repeat(20), "word ".repeat(40));
        let e = super::error_text(&text);
        assert!(!e.starts_with("error") && !e.ends_with('\n'), "{e}");
        let shown = format!("error: {e}");
        assert!(
            shown.lines().all(|l| super::columns(l) <= super::WIDTH),
            "{shown}"
        );
        assert_eq!(
            e.split_whitespace().collect::<Vec<_>>().join(" "),
            text.trim()
        );
        // A word too long for the label's line starts the next one, whole.
        let long = "x".repeat(super::WIDTH);
        assert_eq!(super::error_text(&long), format!("\n{long}"));
        assert_eq!(super::error_text("short"), "short");
    }

    #[test]
    fn whole_words_wrap_under_their_label_and_are_never_cut() {
        let w = |label: &str, indent, text: &str| super::wrap_whole(label, indent, text, 30);
        assert_eq!(w("  3× ", 5, "short"), "  3× short\n");
        assert_eq!(
            w(
                "  3× ",
                5,
                "tool call id was already used (first: in/a.jsonl)"
            ),
            "  3× tool call id was already\n     used (first: in/a.jsonl)\n"
        );
        // A word too long for a line stands alone on its own, whole; so does one too long to
        // follow the label.
        let path = "datasets/codex/rollout-2026-02-23T12-41-04.jsonl:17";
        assert_eq!(
            w("  ", 4, &format!("first: {path} [id]")),
            format!("  first:\n    {path}\n    [id]\n")
        );
        assert_eq!(
            w("ignored ", 4, &format!("{path}: no trace")),
            format!("ignored\n    {path}:\n    no trace\n")
        );
        // Measured as shown: control characters take the columns of their escapes, a wide
        // character two.
        assert_eq!(w("", 2, "a\x1bb"), "a\\x1bb\n");
        assert_eq!(
            w("", 2, "日本語日本語日本語 日本語日本語日本語"),
            "日本語日本語日本語\n  日本語日本語日本語\n"
        );
        assert_eq!(w("note: ", 2, ""), "note:\n");
    }

    #[test]
    fn display_paths_are_normalized_and_relative() {
        use super::display_path_from as d;
        use std::path::Path;
        let cwd = Some(Path::new("/w/repo"));
        assert_eq!(d(Path::new("evals/../reports/q-1"), cwd), "reports/q-1");
        assert_eq!(d(Path::new("/w/repo/reports/./q-1"), cwd), "reports/q-1");
        assert_eq!(d(Path::new("/tmp/x/../y"), cwd), "/tmp/y");
        assert_eq!(d(Path::new("../other/a"), cwd), "../other/a");
        assert_eq!(d(Path::new("../other/a"), None), "../other/a");
        assert_eq!(d(Path::new("/w/repo"), cwd), ".");
    }

    #[test]
    fn progress_mode_follows_quiet_tty_and_the_interval_variable() {
        use super::{progress_mode_from as m, ProgressMode};
        use std::time::Duration;
        assert_eq!(m(true, false, Some("1")), Ok(ProgressMode::Hidden));
        assert_eq!(m(true, true, None), Ok(ProgressMode::Hidden));
        assert_eq!(m(false, true, Some("1")), Ok(ProgressMode::Bar));
        assert_eq!(
            m(false, false, None),
            Ok(ProgressMode::Lines {
                every: Duration::from_secs(10)
            })
        );
        assert_eq!(
            m(false, false, Some("0.5")),
            Ok(ProgressMode::Lines {
                every: Duration::from_millis(500)
            })
        );
        let e = m(false, false, Some("-1")).unwrap_err();
        assert!(e.contains("CTXBENCH_PROGRESS_SECS=-1"), "{e}");
        assert!(m(false, false, Some("soon")).is_err());
    }

    #[test]
    fn durations_for_people() {
        use super::human_duration as h;
        use std::time::Duration;
        assert_eq!(h(Duration::from_millis(42_900)), "42s");
        assert_eq!(h(Duration::from_secs(185)), "3m05s");
        assert_eq!(h(Duration::from_secs(7620)), "2h07m");
    }

    #[test]
    fn long_ids_are_shortened_in_the_middle() {
        use super::ellipsize;
        assert_eq!(ellipsize("short", 8), "short");
        assert_eq!(ellipsize("abcdefghij", 5), "ab…ij");
        assert_eq!(ellipsize("abcdefghij", 6), "ab…hij");
        assert_eq!(ellipsize(&"é".repeat(60), 48).chars().count(), 48);
    }

    /// Shortened and wrapped in display columns: a CJK character or an emoji takes two, so
    /// counting characters let a line of them run to twice its width; a combining mark, a
    /// skin tone or a zero-width-joined emoji stays with its base.
    #[test]
    fn wide_and_combined_characters_are_measured_in_columns_and_never_split() {
        use super::{columns, ellipsize, short_ids, table_fit, wrap};
        let cjk = "漢字".repeat(30);
        let e = ellipsize(&cjk, 48);
        assert_eq!(
            e,
            format!("{}…{}", "漢字".repeat(5) + "漢", "漢字".repeat(6))
        );
        assert_eq!(columns(&e), 47);
        // An odd half: the wide character that would overflow it is left out.
        assert_eq!(ellipsize(&"🚀".repeat(40), 10), "🚀🚀…🚀🚀");
        assert_eq!(ellipsize("a漢字bcd", 5), "a…cd");
        // A decomposed é (e + U+0301) is one column and one character to cut.
        let decomposed = "e\u{301}".repeat(60);
        let e = ellipsize(&decomposed, 11);
        assert_eq!(
            e,
            format!("{}…{}", "e\u{301}".repeat(5), "e\u{301}".repeat(5))
        );
        // Joined and toned emoji stay whole.
        for glyph in ["👩\u{200D}💻", "👍\u{1F3FD}", "❤\u{FE0F}"] {
            let e = ellipsize(&glyph.repeat(30), 12);
            let (head, tail) = e.split_once('…').unwrap();
            assert!(!head.is_empty() && !tail.is_empty(), "{e}");
            assert_eq!(head.replace(glyph, ""), "", "{glyph}: {e}");
            assert_eq!(tail.replace(glyph, ""), "", "{glyph}: {e}");
            assert!(columns(&e) <= 12, "{e}");
        }
        // Words wrap at their columns.
        assert_eq!(
            wrap("漢字漢字 漢字漢字 漢字漢字", 17),
            "漢字漢字 漢字漢字\n漢字漢字\n"
        );
        assert_eq!(wrap("🚀🚀🚀 🚀🚀🚀 ok", 13), "🚀🚀🚀 🚀🚀🚀\nok\n");
        // Ids differing deep inside: distinct, within the width.
        let ids: Vec<String> = ["甲", "乙", "丙"]
            .iter()
            .map(|m| format!("{}{m}{}", "トレース".repeat(8), "🚀終わり".repeat(6)))
            .collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let short = short_ids(&refs, 40);
        let distinct: std::collections::HashSet<&String> = short.iter().collect();
        assert_eq!(distinct.len(), 3, "{short:#?}");
        for s in &short {
            assert!(columns(s) <= 40, "{s}: {}", columns(s));
            assert!(s.starts_with("トレース") && s.ends_with("わり"), "{s}");
        }
        // A note of wide characters fits its table.
        let note = format!(
            "{} {} 👩\u{200D}💻{}",
            "注意".repeat(12),
            "漢字".repeat(30),
            "x".repeat(5)
        );
        let rows = vec![vec!["trace-1".to_string(), note]];
        let t = table_fit(&["trace", "note"], &rows, 40);
        assert!(t.lines().all(|l| columns(l) <= 40), "{t}");
        assert!(t.contains("👩\u{200D}💻"), "{t}");
    }

    #[test]
    fn short_ids_never_print_two_ids_alike() {
        use super::short_ids;
        let common = "replay__marshmallow-code__marshmallow-1867__";
        let end = "__install-1__marshmallow-code__marshmallow-1867";
        let ids: Vec<String> = [
            "default_sys-env_cursors_window100",
            "default_sys-env_window100",
            "function_calling",
            "function_calling_replace",
        ]
        .iter()
        .map(|m| format!("{common}{m}{end}"))
        .chain(["short".to_string(), "short".to_string()])
        .collect();
        let refs: Vec<&str> = ids.iter().map(|s| s.as_str()).collect();
        // The plain middle cut prints the four long ids alike.
        let plain: std::collections::HashSet<String> =
            refs[..4].iter().map(|i| super::ellipsize(i, 48)).collect();
        assert_eq!(plain.len(), 1);
        let short = short_ids(&refs, 48);
        let distinct: std::collections::HashSet<&String> = short[..5].iter().collect();
        assert_eq!(distinct.len(), 5, "{short:#?}");
        assert_eq!(short[4], "short");
        assert_eq!(short[5], "short", "equal ids print alike");
        for s in &short[..4] {
            assert!(s.chars().count() <= 48, "{s}");
            assert!(
                s.starts_with("replay__marshm") && s.ends_with("1867"),
                "{s}"
            );
        }
        assert!(short[0].contains("cursors"), "{}", short[0]);
        // Unambiguous ids keep the plain cut.
        let other = ["a".repeat(60), "b".repeat(60)];
        let refs: Vec<&str> = other.iter().map(|s| s.as_str()).collect();
        assert_eq!(short_ids(&refs, 48)[0], super::ellipsize(&other[0], 48));
        // Ids that differ in one character deep inside, with nothing else to go on, still differ.
        let twins = [
            format!("{}x{}", "a".repeat(50), "b".repeat(50)),
            format!("{}y{}", "a".repeat(50), "b".repeat(50)),
        ];
        let refs: Vec<&str> = twins.iter().map(|s| s.as_str()).collect();
        let s = short_ids(&refs, 48);
        assert_ne!(s[0], s[1]);
    }

    #[test]
    fn control_characters_from_a_trace_are_shown_not_obeyed() {
        use super::visible;
        let hostile = "id\x1b[2J\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \
                       \x1b]0;TITLE\x07\x07\x08\r\0\u{7f}\u{9b}31m\u{9d}\u{202e}RLO\u{2066}\u{200f}";
        let shown = visible(hostile);
        assert_eq!(
            shown,
            "id\\x1b[2J\\x1b[31mRED\\x1b[0m \\x1b]8;;http://evil.example\\x07link\\x1b]8;;\\x07 \
             \\x1b]0;TITLE\\x07\\x07\\x08\\x0d\\x00\\x7f\\u{9b}31m\\u{9d}\\u{202e}RLO\\u{2066}\\u{200f}"
        );
        assert!(!shown.chars().any(super::is_control), "{shown}");
        // Newlines and tabs stay; plain text (accents, arrows, CJK) is borrowed unchanged.
        assert_eq!(visible("a\tb\nc"), "a\tb\nc");
        // A CRLF line end is a line end (an HTTP body, Windows output); a lone CR overprints.
        assert_eq!(visible("a\r\nb\rc\r"), "a\r\nb\\x0dc\\x0d");
        assert!(matches!(visible("a\r\nb"), std::borrow::Cow::Borrowed(_)));
        for plain in ["a\tb\nc", "summarized 7303→1649 — é 漢字 …", ""] {
            assert!(
                matches!(visible(plain), std::borrow::Cow::Borrowed(_)),
                "{plain}"
            );
        }
        // Idempotent: what it writes holds no control character.
        assert_eq!(visible(&shown), shown);
    }

    #[test]
    fn quoted_names_escape_as_debug_does_but_controls_as_every_output_does() {
        use super::quoted;
        assert_eq!(quoted("call_1"), "\"call_1\"");
        assert_eq!(
            quoted("\x1b[2Jid\u{202e}"),
            "\"\\x1b[2Jid\\u{202e}\"",
            "not \\u{{1b}}"
        );
        assert_eq!(quoted("a\nb\tc\r\0"), "\"a\\x0ab\\x09c\\x0d\\x00\"");
        // Quotes and backslashes as `{:?}` escapes them; a non-printable character that is not
        // a control, and plain text, as it does too.
        assert_eq!(
            quoted("say \"hi\" \\ it's"),
            format!("{:?}", "say \"hi\" \\ it's")
        );
        assert_eq!(
            quoted("a\u{200b}é 日本"),
            format!("{:?}", "a\u{200b}é 日本")
        );
        // A backslash-u written in the name is not an escape.
        assert_eq!(quoted("\\u{1b}"), "\"\\\\u{1b}\"");
        assert!(!quoted("\x07\u{9b}\u{7f}").chars().any(super::is_control));
    }

    #[test]
    fn json_for_a_terminal_keeps_its_values() {
        let value = serde_json::json!({
            "id": "a\u{1b}[2J\u{7f}\u{9b}\u{202e}b\n",
            "n": 1,
        });
        let json = serde_json::to_string_pretty(&value).unwrap();
        assert!(
            json.contains('\u{202e}') && json.contains('\u{9b}'),
            "serde_json writes them raw"
        );
        let shown = super::visible_json(&json);
        assert!(
            !shown.chars().any(|c| super::is_control(c) && c != '\n'),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn tables_measure_cells_as_shown() {
        let t = super::table(&["id", "n"], &[vec!["a\x1bb".into(), "1".into()]]);
        assert_eq!(t, "id      n\na\\x1bb  1\n");
    }

    /// A wide character (CJK, emoji) takes two columns: the columns after it stay aligned
    /// (counted as characters, `日本語 😀` left the next column 4 to the left).
    #[test]
    fn tables_align_wide_characters_by_their_display_width() {
        let rows = vec![
            vec!["üñí©ødé 日本語 😀".to_string(), "mini-swe".to_string()],
            vec!["plain-ok".to_string(), "mini-swe".to_string()],
        ];
        for t in [
            super::table(&["trace", "format"], &rows),
            super::table_fit(&["trace", "format"], &rows, 100),
        ] {
            let at: Vec<usize> = t
                .lines()
                .map(|l| {
                    let i = l.find("mini-swe").or_else(|| l.find("format")).unwrap();
                    super::columns(&l[..i])
                })
                .collect();
            assert_eq!(at, [19, 19, 19], "{t}");
        }
    }

    #[test]
    fn table_aligns_columns() {
        let t = super::table(&["a", "bbb"], &[vec!["xx".into(), "y".into()]]);
        assert_eq!(t, "a   bbb\nxx  y\n");
    }
}
