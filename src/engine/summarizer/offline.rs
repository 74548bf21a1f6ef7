//! The deterministic offline summarizer: extractive section writers over the leaving turns
//! (intent, what was done, artifacts, next steps, verbatim values), chained on the previous
//! summary.

use super::sections::{asks_for_values, prompt_sections, Body, Section};
use super::{
    approx_tokens, request_bytes, Summarizer, SummaryError, SummaryOutput, SummaryRequest,
};
use crate::trace::{Message, Role, Usage};
use std::sync::Arc;

/// A line that states a value: `the <key words> is [now] <token with a digit>` (how a note,
/// a log line or a user states a token, id or code), clipped to 240 characters.
fn value_statement(line: &str) -> Option<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"(?i)\bthe [a-z][a-z -]{1,60} is (?:now )?`?[a-z0-9][\w.-]*\d[\w.-]*")
            .unwrap()
    });
    let l = line.trim();
    (l.len() <= 400 && re.is_match(l)).then(|| clip(l, 240))
}

/// Body of `## TITLE` in a previous summary (up to the next `## ` heading).
/// The searchers of `previous_section` are built once (per thread and section): building one
/// cost more than searching a summary with it.
fn previous_section(summary: &str, s: Section) -> Option<String> {
    use memchr::memmem::Finder;
    use std::cell::RefCell;
    thread_local! {
        static HEADINGS: RefCell<Vec<(Section, Finder<'static>)>> = const { RefCell::new(Vec::new()) };
        static NEXT: Finder<'static> = Finder::new(b"\n## ").into_owned();
    }
    let start = HEADINGS.with(|h| {
        let mut h = h.borrow_mut();
        let i = match h.iter().position(|(t, _)| *t == s) {
            Some(i) => i,
            None => {
                let heading = format!("## {}", s.title());
                h.push((s, Finder::new(heading.as_bytes()).into_owned()));
                h.len() - 1
            }
        };
        let f = &h[i].1;
        f.find(summary.as_bytes()).map(|at| at + f.needle().len())
    })?;
    let rest = &summary[start..];
    let end = NEXT.with(|f| f.find(rest.as_bytes())).unwrap_or(rest.len());
    let body = rest[..end].trim().trim_end_matches("</summary>").trim();
    (!body.is_empty()).then(|| body.to_string())
}

fn first_line(s: &str, max_chars: usize) -> String {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    clip(line, max_chars)
}

fn clip(s: &str, max_chars: usize) -> String {
    match clip_at(s, max_chars) {
        None => s.to_string(),
        Some(cut) => clipped(&s[..cut]),
    }
}

/// [`clip`] of an owned text (returned as it is when it fits).
fn clip_owned(s: String, max_chars: usize) -> String {
    match clip_at(&s, max_chars) {
        None => s,
        Some(cut) => clipped(&s[..cut]),
    }
}

/// `None` when `s` has at most `max_chars` characters, else the byte offset of its character
/// `max_chars − 1` (where the clipped text ends, before its `…`). Stops counting there.
fn clip_at(s: &str, max_chars: usize) -> Option<usize> {
    // A character is at least one byte.
    if s.len() <= max_chars {
        return None;
    }
    // The first `max_chars + 1` bytes are ASCII (most text): character k is byte k.
    if s.as_bytes()[..=max_chars].is_ascii() {
        return Some(max_chars.saturating_sub(1));
    }
    // One pass to where character `max_chars` starts (the text has more characters than
    // fit), then back over the continuation bytes to the start of the one before it.
    let past = char_start(s, max_chars)?;
    let b = s.as_bytes();
    let mut cut = past.saturating_sub(1);
    while cut > 0 && is_continuation(b[cut]) {
        cut -= 1;
    }
    Some(cut)
}

/// A UTF-8 byte that continues a character (`10xxxxxx`).
fn is_continuation(b: u8) -> bool {
    (b as i8) < -0x40
}

/// Byte offset where character `k` of `s` starts; `None` when `s` has at most `k` characters.
/// Counts the bytes that start a character 64 at a time (a sum that vectorizes), then byte by
/// byte in the block where character `k` is.
fn char_start(s: &str, k: usize) -> Option<usize> {
    let b = s.as_bytes();
    let (mut seen, mut i) = (0usize, 0usize);
    for chunk in b.chunks_exact(64) {
        let n = chunk
            .iter()
            .fold(0u8, |n, &x| n + (!is_continuation(x)) as u8) as usize;
        if seen + n > k {
            break;
        }
        seen += n;
        i += 64;
    }
    for (j, &x) in b[i..].iter().enumerate() {
        if !is_continuation(x) {
            if seen == k {
                return Some(i + j);
            }
            seen += 1;
        }
    }
    None
}

fn clipped(head: &str) -> String {
    let mut out = String::with_capacity(head.len() + '…'.len_utf8());
    out.push_str(head);
    out.push('…');
    out
}

/// Tool names that write files: their path arguments are artifacts.
fn is_writing_tool(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "write", "edit", "create", "patch", "replace", "insert", "save", "apply",
    ]
    .iter()
    .any(|k| n.contains(k))
}

const PATH_ARGS: [&str; 5] = ["file_path", "path", "filename", "file", "target_file"];

/// Deterministic extractive summarizer (no model): first user request → intent, written files
/// → artifacts, last assistant intents → next steps, a factual digest → summary. Honors the
/// prompt's section list and caps the text at `max_tokens` (chars/4).
#[derive(Clone, Debug, Default)]
pub struct OfflineSummarizer;

impl OfflineSummarizer {
    /// The value statements a section that asks for them keeps: the previous summary's first
    /// (oldest first), then the summarized turns' in order, each once; and the rest of the
    /// previous section without them.
    fn values(prev: Option<&str>, msgs: &[Arc<Message>]) -> (Vec<String>, Option<String>) {
        let mut values: Vec<String> = Vec::new();
        let mut rest: Vec<&str> = Vec::new();
        for l in prev.map(str::lines).into_iter().flatten() {
            match l.trim().strip_prefix("- ").and_then(value_statement) {
                Some(v) if !values.contains(&v) => values.push(v),
                Some(_) => {}
                None => rest.push(l),
            }
        }
        for m in msgs {
            for v in m.content.lines().filter_map(value_statement) {
                if !values.contains(&v) {
                    values.push(v);
                }
            }
        }
        let rest = rest.join("\n");
        let rest = (!rest.trim().is_empty()).then_some(rest);
        (values, rest)
    }

    fn section_body(&self, s: Section, req: &SummaryRequest<'_>, with_values: bool) -> String {
        let mut prev = req.previous_summary.and_then(|p| previous_section(p, s));
        let msgs = req.messages;
        if with_values {
            let (values, rest) = Self::values(prev.as_deref(), msgs);
            prev = rest;
            let body = self.body(s, prev, msgs);
            if values.is_empty() {
                return body;
            }
            let values: Vec<String> = values.iter().map(|v| format!("- {v}")).collect();
            return if body == "None" {
                values.join("\n")
            } else {
                format!("{}\n{body}", values.join("\n"))
            };
        }
        self.body(s, prev, msgs)
    }

    fn body(&self, s: Section, prev: Option<String>, msgs: &[Arc<Message>]) -> String {
        match s.body() {
            Body::Facts => {
                // Newest first, so the length cap drops the oldest facts.
                let mut lines: Vec<String> = Vec::new();
                // Human statements only (a planted fact is one; harness feedback is not).
                for m in msgs.iter().rev().filter(|m| {
                    m.role == Role::User
                        && !m.is_error
                        && matches!(m.kind.as_deref(), None | Some("planted"))
                }) {
                    for l in m.content.lines().map(str::trim).filter(|l| !l.is_empty()) {
                        let l = format!("- {}", clip(l, 240));
                        if !lines.contains(&l) {
                            lines.push(l);
                        }
                        if lines.len() == 12 {
                            break;
                        }
                    }
                }
                if let Some(p) = prev {
                    lines.push(p);
                }
                if lines.is_empty() {
                    "None".into()
                } else {
                    lines.join("\n")
                }
            }
            Body::Intent => {
                if let Some(p) = prev {
                    return p;
                }
                // Human turns only: harness feedback (errors, format complaints) is not intent;
                // a message the user typed while the agent worked (`queued`) is.
                let users: Vec<&Arc<Message>> = msgs
                    .iter()
                    .filter(|m| {
                        m.role == Role::User
                            && !m.is_error
                            && matches!(m.kind.as_deref(), None | Some("queued"))
                    })
                    .collect();
                let mut out = users
                    .first()
                    .map(|m| clip(m.content.trim(), 600))
                    .unwrap_or_else(|| "Not stated in the summarized turns.".into());
                let mut seen: Vec<String> = Vec::new();
                for m in users.iter().skip(1) {
                    let line = first_line(&m.content, 200);
                    if line.is_empty() || seen.contains(&line) {
                        continue;
                    }
                    out.push_str("\nLater: ");
                    out.push_str(&line);
                    seen.push(line);
                    if seen.len() == 3 {
                        break;
                    }
                }
                out
            }
            Body::Digest => {
                // Newest first, so the length cap drops the oldest facts.
                let mut lines: Vec<String> = Vec::new();
                let count = |r: Role| msgs.iter().filter(|m| m.role == r).count();
                lines.push(format!(
                    "- {} messages summarized: {} user, {} assistant, {} tool results.",
                    msgs.len(),
                    count(Role::User),
                    count(Role::Assistant),
                    count(Role::Tool)
                ));
                let mut tools: Vec<(String, usize)> = Vec::new();
                for call in msgs.iter().flat_map(|m| m.tool_calls.iter()) {
                    match tools.iter_mut().find(|(n, _)| *n == call.name) {
                        Some((_, c)) => *c += 1,
                        None => tools.push((call.name.clone(), 1)),
                    }
                }
                if !tools.is_empty() {
                    let list: Vec<String> =
                        tools.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
                    lines.push(format!("- Tools used: {}.", list.join(", ")));
                }
                let errors = msgs
                    .iter()
                    .filter(|m| m.role == Role::Tool && m.is_error)
                    .count();
                if errors > 0 {
                    lines.push(format!("- {errors} tool calls failed."));
                }
                let said: Vec<&Arc<Message>> = msgs
                    .iter()
                    .filter(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
                    .collect();
                for m in &said[said.len().saturating_sub(4)..] {
                    lines.push(format!("- {}", first_line(&m.content, 200)));
                }
                if let Some(p) = prev {
                    lines.push(format!("Earlier:\n{p}"));
                }
                lines.join("\n")
            }
            Body::Files => {
                let mut paths: Vec<String> = prev
                    .map(|p| {
                        p.lines()
                            .map(|l| l.trim().trim_start_matches("- ").to_string())
                            .filter(|l| !l.is_empty() && l != "None")
                            .collect()
                    })
                    .unwrap_or_default();
                for call in msgs.iter().flat_map(|m| m.tool_calls.iter()) {
                    if !is_writing_tool(&call.name) {
                        continue;
                    }
                    for key in PATH_ARGS {
                        if let Some(p) = call.arguments.get(key).and_then(|v| v.as_str()) {
                            if !paths.iter().any(|x| x == p) {
                                paths.push(p.to_string());
                            }
                        }
                    }
                }
                if paths.is_empty() {
                    "None".into()
                } else {
                    paths
                        .iter()
                        .map(|p| format!("- {p}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                }
            }
            Body::Next => {
                let intents: Vec<String> = msgs
                    .iter()
                    .rev()
                    .filter(|m| m.role == Role::Assistant)
                    .filter_map(|m| {
                        let text = first_line(&m.content, 240);
                        if !text.is_empty() {
                            Some(text)
                        } else {
                            m.tool_calls.first().map(|c| {
                                format!("Call {} {}", c.name, clip(&c.arguments.to_string(), 160))
                            })
                        }
                    })
                    .take(2)
                    .collect();
                if intents.is_empty() {
                    prev.unwrap_or_else(|| "Continue the task.".into())
                } else {
                    intents
                        .iter()
                        .rev()
                        .map(|t| format!("- {t}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                }
            }
        }
    }
}

/// The sections a summary prompt asks for, each with whether it asks for values verbatim.
type Plan = Arc<[(Section, bool)]>;

/// The [`Plan`] of `prompt`.
/// Parsing the prompt is most of a short summary's cost and a replay asks with one prompt
/// throughout, so the last prompt's plan is kept per thread.
fn prompt_plan(prompt: &str) -> Plan {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, Plan)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((p, plan)) = last.as_ref() {
            if p == prompt {
                return plan.clone();
            }
        }
        let plan: Plan = prompt_sections(prompt)
            .into_iter()
            .map(|s| (s, asks_for_values(prompt, s)))
            .collect();
        *last = Some((prompt.to_string(), plan.clone()));
        plan
    })
}

impl Summarizer for OfflineSummarizer {
    fn summarize(&self, req: &SummaryRequest<'_>) -> Result<SummaryOutput, SummaryError> {
        let sections = prompt_plan(req.prompt);
        let budget_chars = (req.max_tokens as usize).saturating_mul(4);
        // Each section gets an equal share of the budget (minus its heading).
        let share = budget_chars / sections.len().max(1);
        // The sections `## TITLE\n<body>`, separated by blank lines.
        let mut text = String::new();
        for &(s, with_values) in sections.iter() {
            let title = s.title();
            let heading_chars = "## ".len() + title.chars().count() + 1;
            let room = share.saturating_sub(heading_chars + 2);
            if room == 0 {
                continue;
            }
            let body = clip_owned(self.section_body(s, req, with_values), room);
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.reserve(heading_chars + body.len());
            text.push_str("## ");
            text.push_str(title);
            text.push('\n');
            text.push_str(&body);
        }
        if text.trim().is_empty() {
            return Err(SummaryError::Unusable(format!(
                "max_tokens {} leaves no room for any section",
                req.max_tokens
            )));
        }
        Ok(SummaryOutput {
            usage: Usage {
                input: approx_tokens(request_bytes(req)),
                output: approx_tokens(text.len()),
                ..Usage::default()
            },
            text,
            model: "offline-extractive".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::summarizer::*;

    /// `clip` keeps texts of at most `max` characters and cuts longer ones to `max − 1`
    /// characters and `…`, counting characters, not bytes.
    #[test]
    fn clip_counts_characters() {
        let naive = |s: &str, max: usize| -> String {
            if s.chars().count() <= max {
                s.to_string()
            } else {
                let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
                out.push('…');
                out
            }
        };
        for s in [
            "",
            "abc",
            "héllo wörld",
            "日本語のテキスト",
            "a…b",
            "abcdefghijklmnopq",
            "abcdefé",
        ] {
            for max in 0..14 {
                assert_eq!(clip(s, max), naive(s, max), "{s:?} {max}");
                assert_eq!(clip_owned(s.to_string(), max), naive(s, max), "{s:?} {max}");
            }
        }
        // Long texts: whole 64-byte blocks counted at once, the cut in any block.
        let long = [
            format!("{}é{}", "a".repeat(70), "ü×".repeat(80)),
            "日本語".repeat(60),
            format!("{}…", "x".repeat(200)),
            "é".repeat(130),
        ];
        for s in &long {
            for max in (0..300).step_by(7).chain([63, 64, 65, 127, 128, 129]) {
                assert_eq!(clip(s, max), naive(s, max), "{s:?} {max}");
                assert_eq!(clip_owned(s.to_string(), max), naive(s, max), "{s:?} {max}");
            }
        }
    }
    use crate::trace::ToolCall;
    use serde_json::json;

    fn turns() -> Vec<Arc<Message>> {
        vec![
            Arc::new(Message::user(
                "Fix the flaky parser test in tests/test_parser.py.",
            )),
            Arc::new(Message::assistant(
                "I'll patch the tokenizer first.",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "write_file".into(),
                    arguments: json!({"file_path": "/src/tokenizer.py", "content": "x"}),
                }],
            )),
            Arc::new(Message::tool("c1", "write_file", "ok")),
            Arc::new(Message::assistant(
                "Next I will run pytest -k parser.",
                vec![],
            )),
        ]
    }

    fn run(prompt: &str, max_tokens: u64, prev: Option<&str>) -> String {
        run_on(&turns(), prompt, max_tokens, prev)
    }

    fn run_on(msgs: &[Arc<Message>], prompt: &str, max_tokens: u64, prev: Option<&str>) -> String {
        OfflineSummarizer
            .summarize(&SummaryRequest {
                messages: msgs,
                previous_summary: prev,
                prompt,
                max_tokens,
            })
            .unwrap()
            .text
    }

    #[test]
    fn fills_all_sections_from_the_turns() {
        let s = run(DEFAULT_SUMMARY_PROMPT, 2000, None);
        assert!(
            s.contains("## SESSION INTENT\nFix the flaky parser test"),
            "{s}"
        );
        assert!(s.contains("## ARTIFACTS\n- /src/tokenizer.py"), "{s}");
        assert!(s.contains("## NEXT STEPS"), "{s}");
        assert!(s.contains("run pytest -k parser"), "{s}");
        assert!(s.contains("write_file ×1"), "{s}");
    }

    #[test]
    fn honours_the_prompt_section_list() {
        let prompt = "Summarize.\n## SUMMARY\n## NEXT STEPS\n";
        let s = run(prompt, 2000, None);
        assert!(!s.contains("SESSION INTENT"), "{s}");
        assert!(!s.contains("ARTIFACTS"), "{s}");
        assert!(s.starts_with("## SUMMARY"), "{s}");
        assert_eq!(
            prompt_sections("1. NEXT STEPS:\n2. **Session intent**"),
            vec![Section::NextSteps, Section::SessionIntent]
        );
    }

    #[test]
    fn caps_length_and_chains_previous_summary() {
        let s = run(DEFAULT_SUMMARY_PROMPT, 40, None);
        assert!(s.chars().count() <= 160, "{} chars: {s}", s.chars().count());
        let prev = "## SESSION INTENT\nShip v2.\n\n## ARTIFACTS\n- /old.py\n";
        let s = run(DEFAULT_SUMMARY_PROMPT, 2000, Some(prev));
        assert!(s.contains("## SESSION INTENT\nShip v2."), "{s}");
        assert!(s.contains("- /old.py\n- /src/tokenizer.py"), "{s}");
    }

    #[test]
    fn intent_skips_harness_feedback_and_summary_keeps_newest_first() {
        let mut msgs = turns();
        let mut feedback = Message::user("Please provide EXACTLY ONE action.");
        feedback.kind = Some("format_error".into());
        msgs.push(Arc::new(feedback));
        msgs.push(Arc::new(Message::user("Also keep Python 3.8 support.")));
        msgs.push(Arc::new(Message::user("Also keep Python 3.8 support.")));
        let out = OfflineSummarizer
            .summarize(&SummaryRequest {
                messages: &msgs,
                previous_summary: Some("## SUMMARY\n- old fact"),
                prompt: DEFAULT_SUMMARY_PROMPT,
                max_tokens: 2000,
            })
            .unwrap()
            .text;
        assert!(!out.contains("EXACTLY ONE"), "{out}");
        assert_eq!(
            out.matches("Later: Also keep Python 3.8").count(),
            1,
            "{out}"
        );
        let new = out.find("messages summarized").unwrap();
        let old = out.find("Earlier:\n- old fact").unwrap();
        assert!(new < old, "{out}");
    }

    #[test]
    fn a_section_asked_for_values_verbatim_lists_them_oldest_first() {
        let a = "Write:\n## SUMMARY\nWhat was done.\n\n## ARTIFACTS\nEvery file, and any \
                 identifiers, values or tokens later steps need verbatim.\n\n## NEXT STEPS\nNext.";
        let b = "Write:\n## SUMMARY\nWhat was done.\n\n## ARTIFACTS\nEvery file.\n\n\
                 ## NEXT STEPS\nNext. Keep values verbatim.";
        assert!(asks_for_values(a, Section::Artifacts));
        assert!(!asks_for_values(a, Section::Summary));
        // Only a section's own description counts; `b`'s NEXT STEPS asks, its ARTIFACTS not.
        assert!(!asks_for_values(b, Section::Artifacts));
        assert!(!asks_for_values(DEFAULT_SUMMARY_PROMPT, Section::Artifacts));
        let mut msgs = turns();
        msgs.insert(
            1,
            Arc::new(Message::tool(
                "c0",
                "bash",
                "log\nNote for later: the deploy token is teal-otter-7731.\nthe file is ok",
            )),
        );
        let summarize = |prompt: &str, prev: Option<&str>, max_tokens: u64| {
            run_on(&msgs, prompt, max_tokens, prev)
        };
        let out = summarize(a, None, 2000);
        assert!(
            out.contains("## ARTIFACTS\n- Note for later: the deploy token is teal-otter-7731.\n- /src/tokenizer.py"),
            "{out}"
        );
        assert!(!out.contains("the file is ok"), "{out}");
        let out = summarize(b, None, 2000);
        let (before, next) = out.split_once("## NEXT STEPS").unwrap();
        assert!(
            !before.contains("teal-otter") && next.contains("teal-otter"),
            "{out}"
        );
        // Chained: the previous summary's values come first and stay once; a tight cap keeps
        // the oldest, so an update made later is the one that is lost.
        let prev = "## ARTIFACTS\n- Note: the build id is b-100.\n- /old.py";
        let out = summarize(a, Some(prev), 2000);
        let art = out.split("## ARTIFACTS\n").nth(1).unwrap();
        assert!(
            art.starts_with("- Note: the build id is b-100.\n- Note for later: the deploy token"),
            "{out}"
        );
        assert!(art.contains("- /old.py\n- /src/tokenizer.py"), "{out}");
        let out = summarize(a, Some(prev), 60);
        assert!(
            out.contains("b-100") && !out.contains("teal-otter"),
            "{out}"
        );
    }

    #[test]
    fn fixed_summarizer_returns_its_text() {
        let msgs = turns();
        let out = FixedSummarizer("S".into())
            .summarize(&SummaryRequest {
                messages: &msgs,
                previous_summary: None,
                prompt: "p",
                max_tokens: 10,
            })
            .unwrap();
        assert_eq!(out.text, "S");
        assert!(out.usage.input > 0);
    }
}
