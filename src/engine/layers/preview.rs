//! deepagents' head/tail content previews and the stub texts built around them (eviction stub,
//! human-message preview, summary message, `read_file` clip notice), reproduced exactly.

use crate::tokens::approx::code_points;

/// Python's `str.splitlines()` (no keepends): splits on `\n`, `\r`, `\r\n`, `\v`, `\f`,
/// `\x1c`–`\x1e`, `\x85`, U+2028, U+2029; no trailing empty line.
pub fn py_splitlines(s: &str) -> Vec<&str> {
    if !has_rare_breaks(s) {
        // Only `\n` can break lines: std's memchr-based split.
        let mut v: Vec<&str> = s.split('\n').collect();
        if v.last() == Some(&"") {
            v.pop();
        }
        return v;
    }
    let mut out = Vec::new();
    let bytes = s.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        match break_len(bytes, i) {
            Some(len) => {
                out.push(&s[start..i]);
                i += len;
                start = i;
            }
            None => i += 1,
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The length in bytes of the line break starting at byte `i` of UTF-8 text (`\r\n` is one
/// break), `None` when none starts there. UTF-8 is self-synchronizing: `C2 85` is always
/// U+0085 and `E2 80 A8`/`A9` always U+2028/U+2029, so bytes need no decoding.
#[inline]
fn break_len(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes[i] {
        b'\r' if bytes.get(i + 1) == Some(&b'\n') => Some(2),
        b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1e => Some(1),
        0xc2 if bytes.get(i + 1) == Some(&0x85) => Some(2),
        0xe2 if bytes.get(i + 1) == Some(&0x80)
            && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) =>
        {
            Some(3)
        }
        _ => None,
    }
}

/// A line break other than `\n` occurs in `s` (exact: [`scan_breaks`] only says one may).
/// Vectorized searches, not a byte loop: it runs over whole tool results.
fn rare_break_in(s: &str) -> bool {
    use memchr::{memchr3, memmem};
    let b = s.as_bytes();
    memchr3(b'\r', 0x0b, 0x0c, b).is_some()
        || memchr3(0x1c, 0x1d, 0x1e, b).is_some()
        || ["\u{85}", "\u{2028}", "\u{2029}"]
            .iter()
            .any(|p| memmem::find(b, p.as_bytes()).is_some())
}

/// One pass over the bytes: the number of `\n`, and whether a line break other than `\n` may
/// occur (`\v \f \r \x1c-\x1e`, or `C2`/`E2`, the lead bytes of U+0085 and U+2028/9).
/// Fixed-size blocks with byte accumulators so the compiler vectorizes it.
fn scan_breaks(s: &str) -> (usize, bool) {
    #[inline(always)]
    fn rare(b: u8) -> u8 {
        u8::from(b.wrapping_sub(0x0b) < 3)
            | u8::from(b.wrapping_sub(0x1c) < 3)
            | u8::from(b & 0xdf == 0xc2)
    }
    let bytes = s.as_bytes();
    let mut blocks = bytes.chunks_exact(64);
    let (mut newlines, mut any_rare) = (0usize, 0u8);
    for block in &mut blocks {
        let (mut n, mut r) = (0u8, 0u8);
        for &b in block {
            n += u8::from(b == b'\n');
            r |= rare(b);
        }
        newlines += usize::from(n);
        any_rare |= r;
    }
    for &b in blocks.remainder() {
        newlines += usize::from(b == b'\n');
        any_rare |= rare(b);
    }
    (newlines, any_rare != 0)
}

fn has_rare_breaks(s: &str) -> bool {
    scan_breaks(s).1 && rare_break_in(s)
}

/// A rendered preview plus what it left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Preview {
    pub text: String,
    pub lines_omitted: bool,
    pub lines_clipped: bool,
}

fn clip_line(line: &str, max_chars: usize) -> (&str, bool) {
    match line.char_indices().nth(max_chars) {
        Some((byte, _)) => (&line[..byte], true),
        None => (line, false),
    }
}

fn numbered(lines: &[&str], start: usize, max_chars: usize, out: &mut String) -> bool {
    let mut clipped = false;
    for (k, line) in lines.iter().enumerate() {
        let (l, c) = clip_line(line, max_chars);
        clipped |= c;
        if k > 0 {
            out.push('\n');
        }
        out.push_str(&(start + k).to_string());
        out.push_str("  ");
        out.push_str(l);
    }
    clipped
}

/// `_create_content_preview`: all lines when they fit in `head + tail`, else head, a
/// `... [N lines truncated] ...` marker and tail; every line cut at `max_chars`.
pub fn content_preview(content: &str, head: usize, tail: usize, max_chars: usize) -> Preview {
    let (newlines, maybe_rare) = scan_breaks(content);
    // Text with `C2`/`E2` lead bytes (`—`, box drawing, quotes) seldom holds a rare break.
    if !maybe_rare || !rare_break_in(content) {
        return preview_lf(content, newlines, head, tail, max_chars);
    }
    let lines = py_splitlines(content);
    let mut text = String::new();
    if lines.len() <= head + tail {
        let clipped = numbered(&lines, 1, max_chars, &mut text);
        return Preview {
            text,
            lines_omitted: false,
            lines_clipped: clipped,
        };
    }
    let c1 = numbered(&lines[..head], 1, max_chars, &mut text);
    text.push_str(&format!(
        "\n... [{} lines truncated] ...\n",
        lines.len() - head - tail
    ));
    let tail_start = lines.len() - tail;
    let c2 = numbered(&lines[tail_start..], tail_start + 1, max_chars, &mut text);
    Preview {
        text,
        lines_omitted: true,
        lines_clipped: c1 || c2,
    }
}

/// [`content_preview`] for text whose only line break is `\n` (`newlines` of them): touches
/// only the head and tail lines (no per-line allocation).
fn preview_lf(
    content: &str,
    newlines: usize,
    head: usize,
    tail: usize,
    max_chars: usize,
) -> Preview {
    let n_lines = newlines + usize::from(!content.is_empty() && !content.ends_with('\n'));
    let mut text = String::new();
    if n_lines <= head + tail {
        let lines = py_splitlines(content);
        let clipped = numbered(&lines, 1, max_chars, &mut text);
        return Preview {
            text,
            lines_omitted: false,
            lines_clipped: clipped,
        };
    }
    let head_lines: Vec<&str> = content.split('\n').take(head).collect();
    // The last `tail` lines: the text after the (tail)-th newline from the end, ignoring
    // the final newline that ends the last line.
    let body = content.strip_suffix('\n').unwrap_or(content);
    let mut start = body.len();
    for _ in 0..tail {
        match body[..start].rfind('\n') {
            Some(p) => start = p,
            None => {
                start = 0;
                break;
            }
        }
    }
    let tail_text = if start == 0 && !body.starts_with('\n') {
        body
    } else {
        &body[start + 1..]
    };
    let tail_lines: Vec<&str> = tail_text.split('\n').collect();
    let c1 = numbered(&head_lines, 1, max_chars, &mut text);
    text.push_str(&format!(
        "\n... [{} lines truncated] ...\n",
        n_lines - head - tail
    ));
    let c2 = numbered(&tail_lines, n_lines - tail + 1, max_chars, &mut text);
    Preview {
        text,
        lines_omitted: true,
        lines_clipped: c1 || c2,
    }
}

/// `_preview_note`: the sentence introducing a preview, naming only the losses it has.
pub fn preview_note(p: &Preview, subject: &str, max_chars: usize) -> String {
    let mut note = if p.lines_omitted {
        format!("Here is a preview showing the head and tail of the {subject}")
    } else {
        format!("Here is a preview of the {subject}")
    };
    let mut caveats: Vec<String> = Vec::new();
    if p.lines_omitted {
        caveats.push(
            "lines of the form `... [N lines truncated] ...` indicate omitted lines in the middle of the content"
                .to_string(),
        );
    }
    if p.lines_clipped {
        caveats.push(format!(
            "the output contains lines longer than {max_chars} characters; this preview shows only their first {max_chars} characters"
        ));
    }
    if !caveats.is_empty() {
        note.push_str(&format!(" ({})", caveats.join("; ")));
    }
    note.push(':');
    note
}

/// Preview settings shared by the eviction layers.
#[derive(Clone, Copy, Debug)]
pub struct PreviewShape {
    pub head: usize,
    pub tail: usize,
    pub line_chars: usize,
}

/// The tool ids shown in stubs are cut to 32 characters + `...`.
fn visible_id(id: &str) -> String {
    match id.char_indices().nth(32) {
        Some((byte, _)) => format!("{}...", &id[..byte]),
        None => id.to_string(),
    }
}

/// deepagents' `_TOO_LARGE_TOOL_MSG` stub for a tool result offloaded to `path`.
pub fn tool_stub(tool_call_id: &str, path: &str, content: &str, shape: PreviewShape) -> String {
    let p = content_preview(content, shape.head, shape.tail, shape.line_chars);
    format!(
        "Tool result too large, the result of this tool call {} was saved in the filesystem at this path: {path}\n\n\
You can read the result from the filesystem by using the read_file tool, but make sure to only read part of the result at a time.\n\n\
You can do this by specifying an offset and limit in the read_file tool call. For example, to read the first 100 lines, you can use the read_file tool with offset=0 and limit=100.\n\n\
{}\n\n{}\n",
        visible_id(tool_call_id),
        preview_note(&p, "result", shape.line_chars),
        p.text
    )
}

/// deepagents' `TOO_LARGE_HUMAN_MSG` preview for a user message offloaded to `path`.
pub fn human_preview(path: &str, content: &str, shape: PreviewShape) -> String {
    let p = content_preview(content, shape.head, shape.tail, shape.line_chars);
    format!(
        "Message content too large and was saved to the filesystem at: {path}\n\n\
You can read the full content using the read_file tool with pagination (offset and limit parameters).\n\n\
{}\n\n{}\n",
        preview_note(&p, "content", shape.line_chars),
        p.text
    )
}

/// deepagents' summary message (a user message with `lc_source = "summarization"`).
pub fn summary_message(history_file: &str, summary: &str) -> String {
    // Built in one allocation of its final size: `format!` sized it for the literal parts and
    // grew it (copying the summary) several times.
    let parts = [
        "You are in the middle of a conversation that has been summarized.\n\n\
The full conversation history has been saved to ",
        history_file,
        " should you need to refer back to it for details.\n\n\
A condensed summary follows:\n\n<summary>\n",
        summary,
        "\n</summary>",
    ];
    parts.concat()
}

/// A summary message for a slice whose raw turns the agent cannot reach: `memory` names the
/// memory file holding the summaries (turn-trimming agent), `None` names nothing (LangChain,
/// digitorn, core-agent). Same `<summary>` block as deepagents' message.
pub fn summary_message_without_history(memory_file: Option<&str>, summary: &str) -> String {
    // One allocation of the final size (see `summary_message`).
    let (before, file, after) = match memory_file {
        Some(f) => ("Notes of the earlier parts are kept in ", f, ".\n\n"),
        None => ("", "", ""),
    };
    [
        "You are in the middle of a conversation that has been summarized.\n\n",
        before,
        file,
        after,
        "A condensed summary follows:\n\n<summary>\n",
        summary,
        "\n</summary>",
    ]
    .concat()
}

/// deepagents' `_slice_read_file_tm`: a `read_file` result clipped to `slice` characters with a
/// notice pointing back at the original file (text dropped entirely when it is that short).
pub fn read_file_clip(content: &str, original_path: &str, slice: usize) -> String {
    let truncated = code_points(content) > slice;
    let omitted = !content.is_empty() && !truncated;
    let mut out: String = if omitted {
        String::new()
    } else {
        content.chars().take(slice).collect()
    };
    if truncated {
        out.push_str(&format!(
            "\n\n[Output was truncated due to context window size limits. The full content is at {original_path}. \
Use read_file with offset and limit parameters to retrieve specific portions. \
For example, to read the first 100 lines, call read_file with file_path='{original_path}', offset=0, limit=100.]"
        ));
    }
    if omitted {
        out.push_str(&format!(
            "[Output was omitted due to context window size limits. The full content is at {original_path}. \
Use read_file with offset and limit parameters to retrieve specific portions.]"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_messages_read_as_the_templates() {
        let summary = "## SUMMARY\nline {1}";
        assert_eq!(
            summary_message("/conversation_history/s.md", summary),
            format!(
                "You are in the middle of a conversation that has been summarized.\n\n\
The full conversation history has been saved to /conversation_history/s.md should you need to refer back to it for details.\n\n\
A condensed summary follows:\n\n<summary>\n{summary}\n</summary>"
            )
        );
        assert_eq!(
            summary_message_without_history(Some("/m/MEMORY.md"), summary),
            format!(
                "You are in the middle of a conversation that has been summarized.\n\n\
Notes of the earlier parts are kept in /m/MEMORY.md.\n\n\
A condensed summary follows:\n\n<summary>\n{summary}\n</summary>"
            )
        );
        assert_eq!(
            summary_message_without_history(None, summary),
            format!(
                "You are in the middle of a conversation that has been summarized.\n\n\
A condensed summary follows:\n\n<summary>\n{summary}\n</summary>"
            )
        );
    }

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(
            py_splitlines("a\nb\r\nc\rd\u{2028}e\n"),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(py_splitlines(""), Vec::<&str>::new());
        assert_eq!(py_splitlines("\n\nx"), ["", "", "x"]);
        assert_eq!(py_splitlines("x\u{0c}y\u{85}"), ["x", "y"]);
        // Fast path (only \n) and slow path agree.
        assert_eq!(py_splitlines("a\n\nb\n"), ["a", "", "b"]);
        assert_eq!(py_splitlines("\n"), [""]);
        assert_eq!(py_splitlines("é—\nx"), ["é—", "x"]);
        assert_eq!(
            py_splitlines("a\u{0b}b\u{1c}c\u{1d}d\u{1e}e\u{2029}f\r\rg\u{85}\u{2027}h\r"),
            ["a", "b", "c", "d", "e", "f", "", "g", "\u{2027}h"]
        );
        // The vectorized check says what a byte-by-byte one says.
        for text in [
            "",
            "a\nb",
            "x\ry",
            "\u{0b}",
            "\u{1d}",
            "é\u{85}",
            "—\u{2028}",
            "\u{2029}",
            "\u{2027}é—",
        ] {
            let b = text.as_bytes();
            let bytewise = (0..b.len()).any(|i| b[i] != b'\n' && break_len(b, i).is_some());
            assert_eq!(rare_break_in(text), bytewise, "{text:?}");
        }
        // Lead bytes of rare breaks without one: no rare break.
        for text in ["a — b ─ “q”\n", "\u{80}\u{2027}\u{202a}", "x\u{a0}"] {
            assert!(!rare_break_in(text), "{text:?}");
            assert_eq!(
                py_splitlines(text),
                text.split('\n')
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
            );
        }
        for (text, rare) in [
            ("a\rb", true),
            ("\u{0b}", true),
            ("\u{1e}", true),
            ("\u{85}", true),
            ("\u{2029}", true),
            ("é ü\n", false),
            ("\u{1f}\u{0a}", false),
        ] {
            assert_eq!(scan_breaks(&text.repeat(70)).1, rare, "{text:?}");
        }
    }

    #[test]
    fn preview_head_tail_and_clipping() {
        let content: String = (1..=12).map(|i| format!("line{i}\n")).collect();
        let p = content_preview(&content, 5, 5, 1000);
        assert!(p.lines_omitted && !p.lines_clipped);
        assert_eq!(
            p.text,
            "1  line1\n2  line2\n3  line3\n4  line4\n5  line5\n... [2 lines truncated] ...\n8  line8\n9  line9\n10  line10\n11  line11\n12  line12"
        );
        let long = "é".repeat(1500);
        let p = content_preview(&long, 5, 5, 1000);
        assert!(!p.lines_omitted && p.lines_clipped);
        assert_eq!(p.text.chars().count(), 3 + 1000);
        assert_eq!(
            preview_note(&p, "result", 1000),
            "Here is a preview of the result (the output contains lines longer than 1000 characters; this preview shows only their first 1000 characters):"
        );
    }

    #[test]
    fn fast_preview_equals_the_general_one() {
        let cases = [
            String::new(),
            "one".into(),
            "one\n".into(),
            "\n\n\n".into(),
            (1..=30).map(|i| format!("l{i}\n")).collect::<String>(),
            (1..=30).map(|i| format!("l{i}\n")).collect::<String>() + "last",
            "\n".repeat(12) + "x",
            (1..=11)
                .map(|i| format!("{}\n", "é".repeat(i * 150)))
                .collect::<String>(),
        ];
        for c in &cases {
            let lines = py_splitlines(c);
            let mut slow = String::new();
            let want = if lines.len() <= 10 {
                numbered(&lines, 1, 1000, &mut slow);
                slow
            } else {
                numbered(&lines[..5], 1, 1000, &mut slow);
                slow.push_str(&format!(
                    "\n... [{} lines truncated] ...\n",
                    lines.len() - 10
                ));
                numbered(&lines[lines.len() - 5..], lines.len() - 4, 1000, &mut slow);
                slow
            };
            let (nl, rare) = scan_breaks(c);
            assert!(!rare);
            assert_eq!(preview_lf(c, nl, 5, 5, 1000).text, want, "{c:?}");
        }
    }

    #[test]
    fn stub_shortens_long_ids_and_read_file_clip_notices() {
        let id = "x".repeat(40);
        let s = tool_stub(
            &id,
            "/large_tool_results/p",
            "a\nb",
            PreviewShape {
                head: 5,
                tail: 5,
                line_chars: 1000,
            },
        );
        assert!(s.starts_with(&format!(
            "Tool result too large, the result of this tool call {}... was saved",
            "x".repeat(32)
        )));
        assert!(
            s.ends_with("Here is a preview of the result:\n\n1  a\n2  b\n"),
            "{s}"
        );
        let c = read_file_clip(&"z".repeat(5000), "/a.py", 4000);
        assert!(c.starts_with(&"z".repeat(4000)));
        assert!(c.ends_with("file_path='/a.py', offset=0, limit=100.]"));
        let o = read_file_clip("short", "/a.py", 4000);
        assert!(o.starts_with("[Output was omitted"));
    }
}
