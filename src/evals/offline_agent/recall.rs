//! Recall questions: the key phrase a question asks about, the value a line states for it, and
//! the search of the context and then the store (or the reverse) that finds it.

use super::{answer, OfflineReply, DONT_KNOW};
use crate::evals::truth;
use crate::evalspec::needle::NeedleSearch;
use crate::trace::memo::MessageMemo;
use crate::trace::{Message, Role, ToolCall};
use regex::Regex;
use rustc_hash::FxHashMap;
use serde_json::json;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The phrase a recall question asks about (remembered per thread by question: each needle's
/// question is asked by every variant, on two conversations, at every step of its loop).
pub fn key_phrase(question: &str) -> String {
    thread_local! {
        static PHRASES: RefCell<FxHashMap<String, String>> = RefCell::default();
    }
    PHRASES.with(|kept| {
        if let Some(phrase) = kept.borrow().get(question) {
            return phrase.clone();
        }
        let phrase = find_key_phrase(question);
        let mut kept = kept.borrow_mut();
        if kept.len() >= MATCHERS_KEPT {
            kept.clear();
        }
        kept.insert(question.to_string(), phrase.clone());
        phrase
    })
}

fn find_key_phrase(question: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(?i)what\s+(?:exactly\s+)?(?:is|was|are|were)\s+(?:the|our|my)\s+([^?\n]+?)\s*\?",
        )
        .unwrap()
    });
    if let Some(c) = re.captures_iter(question).last() {
        return c[1].trim().to_lowercase();
    }
    truth::keywords(question, 4).join(" ")
}

/// A case-insensitive matcher for a key phrase (byte offsets stay valid for any text).
///
/// Compiling a case-insensitive phrase builds a DFA over Unicode case folds (~2 M instructions,
/// more than the rest of a needle question), and a sweep asks about the same few key phrases
/// over and over: compiled matchers are kept (cleared past `MATCHERS_KEPT` phrases). They are
/// shared, not cloned: a cloned `Regex` starts with an empty cache, so its lazy DFA would be
/// built again at every question.
pub fn phrase_matcher(phrase: &str) -> Arc<Regex> {
    static KEPT: OnceLock<Mutex<HashMap<String, Arc<Regex>>>> = OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    if let Some(re) = kept.lock().unwrap_or_else(|e| e.into_inner()).get(phrase) {
        return re.clone();
    }
    let re = Arc::new(
        Regex::new(&format!("(?i){}", regex::escape(phrase)))
            .expect("escaped phrase is a valid regex"),
    );
    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= MATCHERS_KEPT {
        kept.clear();
    }
    kept.insert(phrase.to_string(), re.clone());
    re
}

/// Compiled phrase matchers kept at most.
pub const MATCHERS_KEPT: usize = 1024;

/// The value a line states for the phrase: the text after it (and a linking `is`/`:`/`=`) up
/// to the end of the sentence.
pub fn value_after(line: &str, phrase: &Regex) -> Option<String> {
    let m = phrase.find(line)?;
    let mut rest = line[m.end()..].trim_start();
    for link in ["is:", "is", "was", "=", ":", "-"] {
        if let Some(r) = rest.strip_prefix(link) {
            rest = r.trim_start();
            break;
        }
    }
    rest = rest.strip_prefix("now ").unwrap_or(rest).trim_start();
    let rest = rest.trim_start_matches(['"', '\'', '`']);
    let end = rest
        .char_indices()
        .find(|&(i, c)| {
            c == '\n'
                || ((c == '.' || c == ',' || c == ';')
                    && rest[i + c.len_utf8()..]
                        .chars()
                        .next()
                        .is_none_or(char::is_whitespace))
        })
        .map(|(i, _)| i)
        .unwrap_or(rest.len());
    let value = rest[..end].trim().trim_end_matches(['"', '\'', '`']).trim();
    (!value.is_empty()).then(|| value.to_string())
}

fn find_in_text(text: &str, phrase: &Regex) -> Option<String> {
    // Cheap whole-text check first: most messages do not mention the phrase at all.
    if !phrase.is_match(text) {
        return None;
    }
    stated(text.lines(), phrase)
}

/// The value `lines` state for the phrase: an update (`<phrase> is now <value>`) over an
/// earlier statement, else the first statement.
fn stated<'a>(lines: impl Iterator<Item = &'a str>, phrase: &Regex) -> Option<String> {
    let mut first = None;
    for line in lines {
        if let Some(v) = value_after(line, phrase) {
            let update = phrase
                .find(line)
                .is_some_and(|m| line[m.end()..].trim_start().starts_with("is now "));
            if update {
                return Some(v);
            }
            first.get_or_insert(v);
        }
    }
    first
}

/// A message of the context a recall question is asked on: one shared with other
/// conversations (a trace's message behind its `Arc`: what it states for a phrase is
/// remembered while it lives, see [`Said`]) or one of the request's own.
#[derive(Clone, Copy)]
pub(super) enum Seen<'m> {
    Shared(&'m Arc<Message>),
    Own(&'m Message),
}

/// What one context message states for one key phrase, each part found once asked for: the
/// phrase's value in its text ([`find_in_text`]), and its best statement ranked by shared
/// stems (`(score, value)`, [`ranked_best`] over its lines).
#[derive(Default)]
struct Said {
    stated: Option<Option<String>>,
    ranked: Option<Option<(usize, String)>>,
}

/// [`Said`] of shared messages by phrase, per thread ([`MessageMemo`]: remembered while each
/// message lives). A sweep asks the same needles' questions on the same trace messages over and
/// over (each variant's reference question on the same planted history, each step of a
/// question's tool loop on the same context).
#[derive(Default)]
struct SaidMemo {
    by_message: MessageMemo<Vec<(String, Said)>>,
}

/// Phrases remembered per message.
const SAID_PHRASES_KEPT: usize = 32;

thread_local! {
    static SAID: RefCell<SaidMemo> = RefCell::default();
}

impl SaidMemo {
    /// The entry of `message` for `phrase`.
    fn entry(&mut self, message: &Arc<Message>, phrase: &str) -> &mut Said {
        let phrases = self.by_message.get_or_insert_with(message, Vec::new);
        let at = match phrases.iter().position(|(p, _)| p == phrase) {
            Some(at) => at,
            None => {
                if phrases.len() >= SAID_PHRASES_KEPT {
                    phrases.clear();
                }
                phrases.push((phrase.to_string(), Said::default()));
                phrases.len() - 1
            }
        };
        &mut phrases[at].1
    }
}

/// The value the context states for the phrase: the newest message stating the phrase
/// verbatim ([`find_in_text`]), else the statement sharing most stems with `want` over all
/// lines, newest first ([`ranked_value`]: the best of each message, the first of the best).
fn from_context<'m>(
    context: impl DoubleEndedIterator<Item = Seen<'m>> + Clone,
    phrase: &str,
    matcher: &Regex,
    want: &[String],
) -> Option<String> {
    SAID.with(|memo| {
        let mut memo = memo.borrow_mut();
        for m in context.clone().rev() {
            let found = match m {
                Seen::Shared(shared) => {
                    let said = memo.entry(shared, phrase);
                    said.stated
                        .get_or_insert_with(|| find_in_text(&shared.content, matcher))
                        .clone()
                }
                Seen::Own(own) => find_in_text(&own.content, matcher),
            };
            if found.is_some() {
                return found;
            }
        }
        let mut best: Option<(usize, String)> = None;
        for m in context.rev() {
            let own;
            let ranked = match m {
                Seen::Shared(shared) => memo
                    .entry(shared, phrase)
                    .ranked
                    .get_or_insert_with(|| ranked_best(may_link_lines_rev(&shared.content), want))
                    .as_ref(),
                Seen::Own(m) => {
                    own = ranked_best(may_link_lines_rev(&m.content), want);
                    own.as_ref()
                }
            };
            if let Some((score, v)) = ranked {
                if best.as_ref().is_none_or(|(b, _)| score > b) {
                    best = Some((*score, v.clone()));
                }
            }
        }
        best.map(|(_, v)| v)
    })
}

pub(super) fn recall<'m>(
    question: &str,
    context: impl DoubleEndedIterator<Item = Seen<'m>> + Clone,
    loop_msgs: &[Message],
    tool_names: &[&str],
    search: NeedleSearch,
) -> OfflineReply {
    let phrase = key_phrase(question);
    if phrase.is_empty() {
        return answer(DONT_KNOW);
    }
    let matcher = phrase_matcher(&phrase);
    let say = |v: String| answer(&format!("The {phrase} is {v}."));
    let want = stems(&phrase);
    // The context itself (newest first: a later statement overrides an earlier one); the
    // phrase verbatim, else the statement sharing most words with it.
    let from_context = || from_context(context.clone(), &phrase, &matcher, &want);
    // What the probe's own tool calls returned.
    let from_tools = || {
        // grep lines are `path:line: text`; read_file lines are `   N\ttext`.
        let lines = || {
            loop_msgs
                .iter()
                .filter(|m| m.role == Role::Tool)
                .flat_map(|m| m.content.lines())
                .map(|line| line.split_once('\t').map(|(_, t)| t).unwrap_or(line))
        };
        stated(lines(), &matcher).or_else(|| ranked_value(lines(), &want))
    };
    match search {
        NeedleSearch::Never => return from_context().map_or_else(|| answer(DONT_KNOW), say),
        NeedleSearch::Auto => {
            if let Some(v) = from_context().or_else(from_tools) {
                return say(v);
            }
        }
        NeedleSearch::Always => {
            if let Some(v) = from_tools() {
                return say(v);
            }
        }
    }
    // Search the store: the phrase first, then its longest word.
    let next = next_search(&phrase, loop_msgs).filter(|_| tool_names.contains(&"grep"));
    match next {
        Some(call) => OfflineReply {
            content: String::new(),
            tool_calls: vec![call],
        },
        // `always`: the store had nothing, the view is the last resort.
        None => from_context().map_or_else(|| answer(DONT_KNOW), say),
    }
}

/// Words that carry no meaning for matching a question to a statement.
const STOP: [&str; 24] = [
    "the", "we", "with", "our", "what", "exactly", "that", "for", "and", "was", "are", "is", "of",
    "to", "this", "one", "who", "whoever", "goes", "by", "use", "into", "on", "in",
];

/// Content-word stems of `text` (lowercase, first five letters, words of 3+ characters).
pub fn stems(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for_each_stem(text, &mut String::new(), |stem| {
        if !out.iter().any(|s| s == stem) {
            out.push(stem.to_string());
        }
    });
    out
}

/// Calls `f` with the stem of every content word of `text` ([`stems`] without the list:
/// duplicates included), lowercasing into `lower` (a buffer kept across calls).
fn for_each_stem(text: &str, lower: &mut String, mut f: impl FnMut(&str)) {
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.len() < 3 {
            // Fewer than 3 bytes: fewer than 3 characters, also once lowercased (an ASCII
            // word keeps its length; a shorter one has at most 2 characters to map).
            if w.is_ascii() {
                continue;
            }
        }
        lower.clear();
        if w.is_ascii() {
            lower.extend(w.chars().map(|c| c.to_ascii_lowercase()));
        } else {
            // `str::to_lowercase` (final sigma and the like), as the words were always mapped.
            lower.push_str(&w.to_lowercase());
        }
        let w = lower.as_str();
        if w.chars().count() < 3 || STOP.contains(&w) {
            continue;
        }
        let end = w.char_indices().nth(5).map_or(w.len(), |(i, _)| i);
        f(&w[..end]);
    }
}

/// How many of the (distinct) stems `want` occur among the stems of `line`: what
/// `want.iter().filter(|w| stems(line).contains(w)).count()` says, without building the list.
fn shared_stems(line: &str, want: &[String], lower: &mut String, seen: &mut Vec<bool>) -> usize {
    seen.clear();
    seen.resize(want.len(), false);
    let mut count = 0;
    for_each_stem(line, lower, |stem| {
        for (k, w) in want.iter().enumerate() {
            if !seen[k] && w == stem {
                seen[k] = true;
                count += 1;
            }
        }
    });
    count
}

/// The value of the statement (`… is <value>`) among `lines` sharing the most stems with
/// `want` (at least two, or all of them when fewer); ties go to the first line seen. This is
/// how a careless reader is fooled by a statement about a neighbouring key.
fn ranked_value<'a>(lines: impl Iterator<Item = &'a str>, want: &[String]) -> Option<String> {
    ranked_best(lines, want).map(|(_, v)| v)
}

/// [`ranked_value`] with the number of stems its statement shares.
fn ranked_best<'a>(
    lines: impl Iterator<Item = &'a str>,
    want: &[String],
) -> Option<(usize, String)> {
    static LINK: OnceLock<Regex> = OnceLock::new();
    let link = LINK.get_or_init(|| Regex::new(r"(?i)\s(?:is|was)\s").unwrap());
    let need = want.len().min(2);
    if need == 0 {
        return None;
    }
    let (mut lower, mut seen) = (String::new(), Vec::new());
    let mut best: Option<(usize, String)> = None;
    for line in lines {
        if !may_link(line) || !link.is_match(line) {
            continue;
        }
        let score = shared_stems(line, want, &mut lower, &mut seen);
        if score < need || best.as_ref().is_some_and(|(b, _)| *b >= score) {
            continue;
        }
        if let Some(v) = value_after(line, link) {
            best = Some((score, v));
        }
    }
    best
}

/// False when `line` cannot match the statement link `(?i)\s(?:is|was)\s`: it has no `is` or
/// `was` in any case. Under `(?i)`, `i`, `a` and `w` match only their two ASCII cases, and `s`
/// also matches `ſ` (U+017F, bytes C5 BF; `link_letters_fold_as_assumed` checks all three).
/// Most lines of a view state nothing; this skips the regex call for them.
fn may_link(line: &str) -> bool {
    let b = line.as_bytes();
    memchr::memchr3_iter(b's', b'S', 0xBF, b).any(|p| {
        let s_at = match b[p] {
            0xBF if p > 0 && b[p - 1] == 0xC5 => p - 1,
            0xBF => return false,
            _ => p,
        };
        s_at > 0 && matches!(b[s_at - 1], b'i' | b'I' | b'a' | b'A')
    })
}

/// The lines of `text` that [`may_link`], last first: what
/// `text.lines().rev().filter(|l| may_link(l))` yields, found from the candidate bytes of the
/// whole text (one search) instead of line by line.
fn may_link_lines_rev(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    // Bytes before `end` are still to be looked at (a line found moves it to its start).
    let mut end = b.len();
    std::iter::from_fn(move || {
        while let Some(p) = memchr::memchr3_iter(b's', b'S', 0xBF, &b[..end]).next_back() {
            let start = memchr::memrchr(b'\n', &b[..p]).map_or(0, |i| i + 1);
            let stop = memchr::memchr(b'\n', &b[p..]).map_or(b.len(), |i| p + i);
            // `str::lines`: a `\r` before the `\n` is not part of the line.
            let stop = if stop < b.len() && stop > start && b[stop - 1] == b'\r' {
                stop - 1
            } else {
                stop
            };
            end = start;
            let line = &text[start..stop];
            if may_link(line) {
                return Some(line);
            }
        }
        None
    })
}

/// The next `grep` for `phrase` not yet made in this probe (the phrase, then its longest word).
fn next_search(phrase: &str, loop_msgs: &[Message]) -> Option<ToolCall> {
    let searched: Vec<String> = loop_msgs
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .filter(|c| c.name == "grep")
        .filter_map(|c| c.arguments.get("pattern")?.as_str().map(str::to_string))
        .collect();
    // The phrase, then its words longest first (at most three): a paraphrased question's
    // phrase matches nothing, one of its words may.
    let mut words: Vec<&str> = phrase.split_whitespace().collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    words.dedup();
    let candidates =
        std::iter::once(regex::escape(phrase)).chain(words.into_iter().take(3).map(regex::escape));
    let pattern = candidates.into_iter().find(|p| !searched.contains(p))?;
    Some(ToolCall {
        id: format!("offline_call_{}", searched.len() + 1),
        name: "grep".into(),
        arguments: json!({"pattern": pattern, "ignore_case": true}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evals::offline_agent::*;
    use crate::evalspec::Asking;

    fn q(text: &str) -> Message {
        Message::user(text)
    }

    #[test]
    fn key_phrase_and_value_extraction() {
        assert_eq!(
            key_phrase("Earlier a deploy token was mentioned. What exactly is the deploy token? Answer with the value only."),
            "deploy token"
        );
        let p = phrase_matcher("deploy token");
        assert_eq!(
            value_after("Note for later: the Deploy Token is teal-otter-7731.", &p),
            Some("teal-otter-7731".into())
        );
        assert_eq!(
            value_after("deploy token = `abc-1`, ok", &p),
            Some("abc-1".into())
        );
        assert_eq!(value_after("nothing here", &p), None);
        // Case folding that changes byte lengths must not shift the slice.
        assert_eq!(value_after("İİİ deploy token is x", &p), Some("x".into()));
    }

    #[test]
    fn shared_stems_counts_as_the_stem_lists_do() {
        let want = stems("staging deploy token of the ΟΔΥΣΣΕΥΣ build");
        let lines = [
            "the staging deploy token is teal-otter-7731.",
            "Deploying TOKENS: production STAGE stagingarea is x",
            "ΟΔΥΣΣΕΥΣ odysseus ΣΣΣ is ς; İİİ is x, ﬀ ǅ is y",
            "",
            "a b c is d",
            "Builds built builder is tokenized by staging",
        ];
        let (mut lower, mut seen) = (String::new(), Vec::new());
        for line in lines {
            let have = stems(line);
            let old = want.iter().filter(|w| have.contains(w)).count();
            assert_eq!(
                shared_stems(line, &want, &mut lower, &mut seen),
                old,
                "{line}"
            );
        }
        assert_eq!(stems("The deploy token, DEPLOY tokens"), ["deplo", "token"]);
    }

    #[test]
    fn may_link_lines_rev_are_the_lines_may_link_keeps() {
        let texts = [
            "",
            "\n",
            "is",
            "a is b\nnothing\r\nx was y\r\n\nlast i\u{17F} line",
            "ends with\r",
            "this is\r",
            "this is\r\n",
            "\r\n is \r\n",
            "many s s s\nas\nAS\nsis\n\u{17F}\u{17F}\n",
            "no match here\nor here\n",
            "é\u{BF}s is\n\u{C5}\u{BF}",
        ];
        for text in texts {
            let want: Vec<&str> = text.lines().rev().filter(|l| may_link(l)).collect();
            let got: Vec<&str> = may_link_lines_rev(text).collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn link_letters_fold_as_assumed() {
        // `may_link` relies on these being every character `(?i)` matches for each letter.
        for (letter, all) in [("i", "Ii"), ("a", "Aa"), ("w", "Ww"), ("s", "Ss\u{17F}")] {
            let re = Regex::new(&format!("(?i)^{letter}$")).unwrap();
            let folds: String = (0..=char::MAX as u32)
                .filter_map(char::from_u32)
                .filter(|c| re.is_match(c.encode_utf8(&mut [0; 4])))
                .collect();
            assert_eq!(folds, all, "{letter}");
        }
    }

    #[test]
    fn may_link_never_skips_a_line_the_link_matches() {
        let link = Regex::new(r"(?i)\s(?:is|was)\s").unwrap();
        let lines = [
            "the token is x",
            "it WAS\tthere",
            "a Is b",
            "x wAs y",
            "a i\u{17F} b",
            "a wa\u{17F}\u{3000}b",
            "\u{17F} alone is\u{A0}here",
            "this isn't",
            "nothing here",
            "was",
            " is",
            "\u{BF}\u{C5}",
            "\u{17F}",
            "é\u{17F}",
            "",
        ];
        for line in lines {
            assert!(may_link(line) || !link.is_match(line), "{line:?}");
        }
        assert!(!may_link("nothing here") && !may_link("") && !may_link("\u{17F}"));
        assert!(may_link("a i\u{17F} b") && may_link("it WAS\tthere"));
    }

    #[test]
    fn answers_from_context_without_searching() {
        let msgs = vec![
            Message::system("sys"),
            q("hello"),
            Message::tool(
                "c1",
                "bash",
                "log\nNote for later: the deploy token is teal-otter-7731.\nmore",
            ),
            q("What exactly is the deploy token?"),
        ];
        let r = respond(&msgs, &["grep", "read_file"]);
        assert!(r.tool_calls.is_empty());
        assert!(r.content.contains("teal-otter-7731"));
    }

    #[test]
    fn searches_the_store_then_answers_from_the_hit() {
        let mut msgs = vec![
            Message::system("sys"),
            q("What exactly is the deploy token?"),
        ];
        let r = respond(&msgs, &["grep", "read_file"]);
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].name, "grep");
        assert_eq!(r.tool_calls[0].arguments["pattern"], "deploy token");
        msgs.push(Message::assistant("", r.tool_calls.clone()));
        msgs.push(Message::tool(
            "offline_call_1",
            "grep",
            "/conversation_history/session_1.md:40: Note for later: the deploy token is teal-otter-7731.",
        ));
        let r = respond(&msgs, &["grep", "read_file"]);
        assert!(r.tool_calls.is_empty());
        assert!(r.content.contains("teal-otter-7731"), "{}", r.content);
    }

    #[test]
    fn says_it_does_not_know_when_nothing_is_found() {
        let mut msgs = vec![q("What exactly is the deploy token?")];
        for (i, pat) in ["deploy token", "deploy", "token"].iter().enumerate() {
            let r = respond(&msgs, &["grep"]);
            assert_eq!(r.tool_calls[0].arguments["pattern"], *pat, "step {i}");
            msgs.push(Message::assistant("", r.tool_calls.clone()));
            msgs.push(Message::tool(
                format!("offline_call_{}", i + 1),
                "grep",
                "No matches for 'x'.",
            ));
        }
        let r = respond(&msgs, &["grep"]);
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content, DONT_KNOW);
        // Without tools it cannot search at all.
        assert_eq!(
            respond(&[q("What is the deploy token?")], &[]).content,
            DONT_KNOW
        );
    }

    #[test]
    fn paraphrased_questions_rank_statements_by_shared_words() {
        let needle = "Note for later: the staging deploy token is teal-otter-7731.";
        let distractor = "Note for later: the production deploy token is amber-yak-1234.";
        let question = q("What exactly is the token we deploy staging with?");
        let both = vec![
            Message::user(needle),
            Message::tool("c", "bash", format!("x\n{distractor}\ny")),
            question.clone(),
        ];
        let r = respond(&both, &["grep"]);
        assert!(r.content.contains("teal-otter-7731"), "{}", r.content);
        // The needle was compacted away: the neighbouring key fools it.
        let r = respond(&both[1..], &["grep"]);
        assert!(r.content.contains("amber-yak-1234"), "{}", r.content);
        // One shared word is not enough.
        let r = respond(&[Message::user("the token is x-1."), question], &[]);
        assert_eq!(r.content, DONT_KNOW);
    }

    /// Answers on a shared history (what its messages state is remembered per thread) are
    /// the answers on the same messages owned: asked again (remembered), about other phrases,
    /// ranked by shared stems across messages (ties to the newest), and after a shared
    /// message was changed (`Arc::make_mut`: a new message, not the one remembered).
    #[test]
    fn answers_on_a_shared_history_are_the_answers_on_it_owned() {
        let mut history: Vec<Arc<Message>> = [
            Message::system("You fix bugs."),
            Message::user("Note for later: the staging deploy token is teal-otter-7731."),
            Message::tool(
                "c1",
                "bash",
                "x\nthe production deploy token is amber-yak-1234.\ny",
            ),
            Message::assistant("The build id is 77.", vec![]),
            Message::user("the deploy staging secret is gray-fox-9.\nthe staging token was red-1."),
            Message::tool(
                "c2",
                "bash",
                "the token for staging is blue-2\nnothing else",
            ),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let questions = [
            "What exactly is the staging deploy token?",
            "What exactly is the token we deploy staging with?",
            "What is the staging token?",
            "What is the build id?",
            "What is the release name?",
            "Which token does staging use?",
        ];
        let ask = |history: &[Arc<Message>]| {
            for question in questions {
                let owned: Vec<Message> = history
                    .iter()
                    .map(|m| (**m).clone())
                    .chain([q(question)])
                    .collect();
                for tools in [&[][..], &["grep"][..]] {
                    let want = respond(&owned, tools);
                    for _ in 0..2 {
                        let got = respond_after(
                            Asking::Recall,
                            history,
                            &[q(question)],
                            tools,
                            NeedleSearch::Auto,
                        );
                        assert_eq!(got, Some(want.clone()), "{question}");
                    }
                }
            }
        };
        ask(&history);
        // Shared elsewhere: changed in a copy; owned only here: changed after a move.
        let kept = history[1].clone();
        Arc::make_mut(&mut history[1]).content = "the staging deploy token is now lime-5.".into();
        Arc::make_mut(&mut history[5]).content = "the staging token is now pink-6.".into();
        ask(&history);
        assert!(kept.content.contains("teal-otter-7731"));
        ask(&history[2..]);
    }

    #[test]
    fn an_update_wins_over_the_first_statement_wherever_it_is() {
        let q = q("What exactly is the deploy token?");
        let first = "Note for later: the deploy token is teal-otter-7731.";
        let update = "Update: the deploy token is now amber-yak-1234.";
        // In one message, in either order (a newest-first summary lists the update first).
        for text in [format!("{first}\n{update}"), format!("{update}\n{first}")] {
            let r = respond(&[Message::user(text), q.clone()], &[]);
            assert!(r.content.contains("amber-yak-1234"), "{}", r.content);
        }
        // The update was compacted away: the first value comes back.
        let r = respond(&[Message::user(first), q.clone()], &[]);
        assert!(r.content.contains("teal-otter-7731"), "{}", r.content);
        // In grep output (history in order): the update, not the first hit.
        let mut msgs = vec![q.clone()];
        let r = respond_with(&msgs, &["grep"], NeedleSearch::Always);
        msgs.push(Message::assistant("", r.tool_calls));
        msgs.push(Message::tool(
            "offline_call_1",
            "grep",
            format!("/h.md:3: {first}\n/h.md:90: {update}"),
        ));
        let r = respond_with(&msgs, &["grep"], NeedleSearch::Always);
        assert_eq!(r.content, "The deploy token is amber-yak-1234.");
    }

    #[test]
    fn search_bounds_steer_the_order_of_view_and_store() {
        let ctx = Message::tool(
            "c1",
            "bash",
            "Note for later: the deploy token is old-view-1.",
        );
        let question = q("What exactly is the deploy token?");
        // never: the view alone, no tools even when offered.
        let r = respond_with(
            &[ctx.clone(), question.clone()],
            &["grep"],
            NeedleSearch::Never,
        );
        assert!(r.tool_calls.is_empty() && r.content.contains("old-view-1"));
        let r = respond_with(
            std::slice::from_ref(&question),
            &["grep"],
            NeedleSearch::Never,
        );
        assert_eq!(r.content, DONT_KNOW);
        // always: greps first although the view states it, then answers from the store.
        let mut msgs = vec![ctx.clone(), question.clone()];
        let r = respond_with(&msgs, &["grep"], NeedleSearch::Always);
        assert_eq!(r.tool_calls[0].arguments["pattern"], "deploy token");
        msgs.push(Message::assistant("", r.tool_calls.clone()));
        msgs.push(Message::tool(
            "offline_call_1",
            "grep",
            "/conversation_history/s.md:3: the deploy token is from-store-2.",
        ));
        let r = respond_with(&msgs, &["grep"], NeedleSearch::Always);
        assert!(r.content.contains("from-store-2"), "{}", r.content);
        // always, nothing in the store: the view is the last resort.
        let mut msgs = vec![ctx, question];
        for i in 0..3 {
            let r = respond_with(&msgs, &["grep"], NeedleSearch::Always);
            assert_eq!(r.tool_calls.len(), 1, "search {i}");
            msgs.push(Message::assistant("", r.tool_calls.clone()));
            msgs.push(Message::tool(
                format!("offline_call_{}", i + 1),
                "grep",
                "No matches.",
            ));
        }
        let r = respond_with(&msgs, &["grep"], NeedleSearch::Always);
        assert!(r.content.contains("old-view-1"), "{}", r.content);
    }
}
