//! The offline provider's agent: a deterministic, lexical stand-in for a model that answers the
//! evals' questions by reading the context and calling the same file tools a model would get.
//!
//! It is a real baseline, not a canned answer: it only answers from text it actually saw — in
//! the request's messages or in tool results it asked for — so its score moves with whether the
//! information survived compaction or is recoverable from the offload store.
//!
//! Policy, decided afresh from the request each turn (the agent is stateless, like a model):
//! - a drift probe ([`DRIFT_MARKER`]) is answered extractively from the view: the latest
//!   summary's sections when there is one, else the first human turn and the recorded actions;
//! - a continuation question ([`super::continuation::CONTINUATION_MARKER`]) is answered with
//!   what followed the latest action before in view, else the most frequent action in view
//!   ([`super::continuation::offline_next_action`]);
//! - a rules question ([`super::rules::RULES_MARKER`]) with the instruction-like lines of the
//!   human turns, summaries and reminders in view ([`super::rules::offline_answer`]); a
//!   decision probe ([`super::probes::DECISION_MARKER`]) with the choice sentences in view;
//! - any other question is a recall question: take its key phrase (`What … is the <phrase>?`,
//!   else its content words); if a line of the context states it, answer from that line; else
//!   `grep` the store for the phrase (then for its longest words), answer from a matching line
//!   (the phrase verbatim, else the statement sharing most words with it, so a statement about
//!   a neighbouring key can fool it),
//!   and say it does not know when nothing matches. Among statements of the same key, an
//!   update (`… is now …`) wins over an earlier statement, as it would for a careful reader;
//!   an update that was compacted away cannot win, so the first value comes back (`stale`).
//!   A search bound (`[evals.needle] search`)
//!   changes the order: `never` answers from the context alone, `always` greps the store first
//!   and falls back to the context only when the store has nothing.

use super::answer_format::{one_line, DriftAnswer, DRIFT_MARKER};
use super::truth;
use crate::config::suite::NeedleSearch;
use crate::engine::layers::truncate::REMINDER_KIND;
use crate::providers::{
    BoxFuture, ChatRequest, ChatResponse, Provider, ProviderConfig, ProviderError, ProviderInfo,
    ProviderKind, Sampling, ToolProtocol,
};
use crate::tokens::approx::ApproxCounter;
use crate::tokens::TokenCounter;
use crate::trace::{Message, Role, ToolCall, Usage};
use regex::Regex;
use serde_json::json;
use std::sync::{Arc, OnceLock};

/// Reply of the offline agent for one turn.
#[derive(Clone, Debug, PartialEq)]
pub struct OfflineReply {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
}

/// What the agent says when the information is nowhere it can see.
pub const DONT_KNOW: &str =
    "I don't know: I could not find it in the conversation or the saved history.";

/// Decide the next turn for a conversation. `tool_names` are the tools offered in the request.
pub fn respond(messages: &[Message], tool_names: &[&str]) -> OfflineReply {
    respond_with(messages, tool_names, NeedleSearch::Auto)
}

/// [`respond`] with a search bound for recall questions (`[evals.needle] search`).
pub fn respond_with(
    messages: &[Message],
    tool_names: &[&str],
    search: NeedleSearch,
) -> OfflineReply {
    let q = question_index(messages);
    let Some(q) = q else {
        return answer(DONT_KNOW);
    };
    let question = &messages[q].content;
    let context = &messages[..q];
    let loop_msgs = &messages[q + 1..];
    if question.contains(super::continuation::CONTINUATION_MARKER) {
        return answer(&super::continuation::offline_next_action(context).render());
    }
    if question.contains(super::probes::DECISION_MARKER) {
        return answer(&super::probes::offline_decision_answer(context));
    }
    if question.contains(super::rules::RULES_MARKER) {
        return answer(&super::rules::offline_answer(context));
    }
    if question.contains(DRIFT_MARKER) {
        return answer(&drift_answer(context).render());
    }
    recall(question, context, loop_msgs, tool_names, search)
}

fn answer(text: &str) -> OfflineReply {
    OfflineReply {
        content: text.to_string(),
        tool_calls: Vec::new(),
    }
}

/// The question is the last user message; only the probe's own tool loop may follow it.
fn question_index(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|m| m.role == Role::User)
}

/// The phrase a recall question asks about.
pub fn key_phrase(question: &str) -> String {
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
pub fn phrase_matcher(phrase: &str) -> Regex {
    Regex::new(&format!("(?i){}", regex::escape(phrase))).expect("escaped phrase is a valid regex")
}

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

fn recall(
    question: &str,
    context: &[Message],
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
    let from_context = || {
        context
            .iter()
            .rev()
            .find_map(|m| find_in_text(&m.content, &matcher))
            .or_else(|| {
                let lines = context.iter().rev().flat_map(|m| m.content.lines().rev());
                ranked_value(lines, &want)
            })
    };
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
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        let w = w.to_lowercase();
        if w.chars().count() < 3 || STOP.contains(&w.as_str()) {
            continue;
        }
        let stem: String = w.chars().take(5).collect();
        if !out.contains(&stem) {
            out.push(stem);
        }
    }
    out
}

/// The value of the statement (`… is <value>`) among `lines` sharing the most stems with
/// `want` (at least two, or all of them when fewer); ties go to the first line seen. This is
/// how a careless reader is fooled by a statement about a neighbouring key.
fn ranked_value<'a>(lines: impl Iterator<Item = &'a str>, want: &[String]) -> Option<String> {
    static LINK: OnceLock<Regex> = OnceLock::new();
    let link = LINK.get_or_init(|| Regex::new(r"(?i)\s(?:is|was)\s").unwrap());
    let need = want.len().min(2);
    if need == 0 {
        return None;
    }
    let mut best: Option<(usize, String)> = None;
    for line in lines {
        if !link.is_match(line) {
            continue;
        }
        let have = stems(line);
        let score = want.iter().filter(|w| have.contains(w)).count();
        if score < need || best.as_ref().is_some_and(|(b, _)| *b >= score) {
            continue;
        }
        if let Some(v) = value_after(line, link) {
            best = Some((score, v));
        }
    }
    best.map(|(_, v)| v)
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

const SECTIONS: [&str; 4] = ["SESSION INTENT", "SUMMARY", "ARTIFACTS", "NEXT STEPS"];

fn section_title(line: &str) -> String {
    line.trim()
        .trim_matches(['#', '*', ' ', ':'])
        .to_ascii_uppercase()
}

fn is_section_boundary(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('#') || t == "</summary>" || SECTIONS.contains(&section_title(line).as_str())
}

/// A section of a structured summary (`SESSION INTENT`, `SUMMARY`, `ARTIFACTS`, `NEXT STEPS`):
/// the lines after its title up to the next title.
pub fn summary_section(text: &str, name: &str) -> Option<String> {
    let mut lines = text.lines();
    lines.find(|l| section_title(l) == name)?;
    let body: Vec<&str> = lines.take_while(|l| !is_section_boundary(l)).collect();
    let s = body.join("\n").trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Extractive answer to the drift probe from the view alone.
pub fn drift_answer(view: &[Message]) -> DriftAnswer {
    let summary = view
        .iter()
        .rev()
        .find(|m| matches!(m.role, Role::User | Role::System) && m.content.contains("<summary>"));
    let mut a = DriftAnswer::default();
    // deepagents' sections, core-agent's handover / checkpoint and digitorn's recap.
    let first = |text: &str, names: &[&str]| names.iter().find_map(|n| summary_section(text, n));
    if let Some(s) = summary {
        let c = &s.content;
        a.goal = first(c, &["SESSION INTENT", "CURRENT STATE", "TASK"]).unwrap_or_default();
        a.done = first(c, &["SUMMARY", "TECHNICAL CONTEXT", "DECISIONS"]).unwrap_or_default();
        if let Some(arts) = first(c, &["ARTIFACTS", "FILES & CHANGES", "FILES TOUCHED"]) {
            a.files = arts
                .lines()
                .map(|l| l.trim().trim_start_matches(['-', '*', ' ']).trim())
                .filter_map(|l| l.split_whitespace().next())
                .map(|p| p.trim_matches(['`', ':', ',']).to_string())
                .filter(|p| p.contains('.') || p.contains('/'))
                .collect();
        }
    }
    // Every place a preset puts the goal: the summary's SESSION INTENT (above), a context
    // reminder's `Goal:` line (truncate / emergency layers), and the human turns still in view
    // — the first one and later corrections, which count as constraints.
    let mut parts: Vec<String> = Vec::new();
    if !a.goal.is_empty() {
        parts.push(std::mem::take(&mut a.goal));
    }
    for m in view {
        for line in m.content.lines() {
            if let Some(g) = line.trim().strip_prefix("Goal:") {
                if !g.trim().is_empty() && !parts.iter().any(|p| p.contains(g.trim())) {
                    parts.push(g.trim().to_string());
                }
            }
        }
    }
    let humans = view
        .iter()
        .filter(|m| truth::is_human_turn(m) && !m.content.contains("<summary>"))
        .filter(|m| m.kind.as_deref().is_none_or(|k| k != REMINDER_KIND));
    for m in humans {
        parts.push(m.content.clone());
    }
    a.goal = parts.join(" ");
    let calls: Vec<&ToolCall> = view.iter().flat_map(|m| m.tool_calls.iter()).collect();
    if a.done.is_empty() {
        a.done = format!("{} tool calls so far", calls.len());
    }
    for c in &calls {
        for p in truth::written_paths(c) {
            if !a.files.iter().any(|f| truth::same_file(f, &p)) {
                a.files.push(p);
            }
        }
    }
    if let Some(last) = calls.last() {
        a.next_tool = last.name.clone();
        a.next_target = one_line(&truth::call_target(last));
    }
    a.goal = one_line(&a.goal);
    a
}

/// Model id the offline provider reports (priced at $0 in `data/pricing.toml`: it is free).
pub const OFFLINE_MODEL: &str = "offline";

/// The offline provider: [`respond`] behind the [`Provider`] interface. Usage is counted with
/// the `approx` counter (chars/4 + 3 per message) so token totals move with what was sent.
pub struct OfflineProvider {
    info: ProviderInfo,
    counter: ApproxCounter,
    search: NeedleSearch,
}

impl OfflineProvider {
    /// The offline agent with a search bound for recall questions.
    pub fn with_search(search: NeedleSearch) -> Self {
        OfflineProvider {
            search,
            ..Self::new()
        }
    }

    pub fn new() -> Self {
        OfflineProvider {
            info: ProviderInfo {
                kind: "offline".into(),
                model: OFFLINE_MODEL.into(),
                endpoint: None,
                defaults: Sampling::default(),
                tool_protocol: ToolProtocol::Native,
            },
            counter: ApproxCounter::langchain(),
            search: NeedleSearch::Auto,
        }
    }
}

impl Default for OfflineProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl Provider for OfflineProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let tool_names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            let reply = respond_with(&request.messages, &tool_names, self.search);
            let mut message = Message::assistant(reply.content, reply.tool_calls);
            let input: u64 = request
                .messages
                .iter()
                .map(|m| self.counter.count_message(m))
                .sum();
            let output = self.counter.count_message(&message);
            let usage = Usage {
                input,
                output,
                cache_read: 0,
                cache_write: 0,
            };
            message.usage = Some(usage);
            let finish = if message.tool_calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            Ok(ChatResponse {
                message,
                usage,
                usage_reported: true,
                model: OFFLINE_MODEL.into(),
                finish_reason: Some(finish.into()),
                latency: started.elapsed(),
                attempts: 1,
                from_cache: false,
                text_tools: None,
            })
        })
    }
}

/// Builds the provider a configuration describes, the offline agent included. The provider
/// layer builds every HTTP provider; the offline one answers the evals' questions, so it is
/// built here, above both (evals → providers, never the reverse).
pub fn build_provider(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    if config.kind == ProviderKind::Offline {
        config.validate()?;
        return Ok(Arc::new(OfflineProvider::new()));
    }
    crate::providers::build_provider(config)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn drift_answer_uses_summary_sections_or_first_turn() {
        let summary = "You are in the middle of a conversation that has been summarized.\n\n<summary>\n## SESSION INTENT\nPort the parser to Rust, keep CLI flags.\n\n## SUMMARY\nRead the code.\n\n## ARTIFACTS\n- src/parser.rs: new\n\n## NEXT STEPS\nRun tests.\n</summary>";
        let view = vec![
            Message::system("sys"),
            Message::user(summary),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "c".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "cargo test"}),
                }],
            ),
        ];
        let a = drift_answer(&view);
        assert_eq!(a.goal, "Port the parser to Rust, keep CLI flags.");
        assert_eq!(a.files, vec!["src/parser.rs"]);
        assert_eq!(
            (a.next_tool.as_str(), a.next_target.as_str()),
            ("bash", "cargo test")
        );
        // Without a summary: the first human turn is the goal.
        let view = vec![
            Message::system("s"),
            Message::user("Fix bug 12 in the CSV reader"),
        ];
        assert_eq!(drift_answer(&view).goal, "Fix bug 12 in the CSV reader");
        // A summary without SESSION INTENT loses the goal.
        let no_intent = summary.replace(
            "## SESSION INTENT\nPort the parser to Rust, keep CLI flags.\n\n",
            "",
        );
        let a = drift_answer(&[Message::user(no_intent)]);
        assert!(a.goal.is_empty(), "{}", a.goal);
        let mut probe = vec![Message::user("Fix bug 12")];
        probe.push(q(super::super::answer_format::DRIFT_QUESTION));
        let r = respond(&probe, &[]);
        assert!(DriftAnswer::parse(&r.content).goal.contains("Fix bug 12"));
    }

    #[test]
    fn drift_goal_reads_reminders_and_later_corrections() {
        let mut reminder = Message::user(
            "[Context reminder] 12 earlier messages were dropped.\n\nGoal: Fix separability_matrix for nested models\n",
        );
        reminder.kind = Some(REMINDER_KIND.into());
        let view = vec![
            Message::system("sys"),
            reminder,
            Message::user("Also: never touch tests/"),
        ];
        let goal = drift_answer(&view).goal;
        assert!(goal.contains("separability_matrix"), "{goal}");
        assert!(goal.contains("never touch tests/"), "{goal}");
        assert!(!goal.contains("Context reminder"), "{goal}");
    }
}
