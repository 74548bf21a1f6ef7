//! Factory-style probes generated from what the trace contains, asked at the last recorded tool
//! call with the view the variant would have sent there (after all its compaction):
//!
//! - `recall`: an exception a tool reported earlier (`What exactly was the ValueError?`);
//!   scored by token overlap with the recorded message (`recall_overlap`, pass at ≥ 0.5).
//!   Traces without a recorded exception ask for the first command run instead.
//! - `artifact`: the files created or edited so far (`artifact_recall`, `artifact_precision`).
//! - `continuation`: the next tool and its target (`next_tool_match`, `next_target_overlap`).
//! - `decision`: a choice between approaches the assistant's own text made ("the fix should use
//!   X instead of Y"): which approach, over which alternative (`decision_overlap`: the share of
//!   the recorded sentence's keywords the answer names, pass at ≥ 0.5). A trace whose assistant
//!   never states such a choice asks which file the agent decided to change (`decision_match`).
//!
//! With several candidates (exceptions, choices), `per_kind` of them are asked, picked by the
//! unit's seed (deterministic), and the scores are means (`questions` = how many). With
//! `judge = true` every answer is also graded by the judge provider on the six dimensions of
//! [`super::rubric`], each 0–5 and reported separately (`judge_accuracy`, …).
//!
//! Artifact and continuation questions share the drift probe's structured answer format, so
//! every provider (the offline agent included) answers them the same way.

use super::agent;
use super::answer_format::{DriftAnswer, DRIFT_QUESTION};
use super::needle::{question_point, AskAt, PROBE_PREAMBLE};
use super::{plant, rubric, truth, EvalError};
use crate::engine::{self, KeepViews, ReplayEnv, ResolvedConfig, StoreTarget, Summarizer};
use crate::evalspec::Asking;
use crate::pricing::PriceTable;
use crate::providers::Provider;
use crate::trace::{Message, Role, Trace};
use regex::Regex;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The probe kinds are the suite's (`[evals.probes] kinds`), typed once in `config`.
pub use crate::evalspec::probes::ProbeKind;

/// A probe sample's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeParams {
    pub kind: ProbeKind,
    /// Questions of this kind (when the trace offers that many candidates).
    pub per_kind: usize,
    pub judge: bool,
    /// The section's `max_output_tokens`: the output limit of each answer (`None`: 200 for a
    /// recalled value, 300 for a decision, 400 for the structured answer).
    pub max_output_tokens: Option<u32>,
}

impl ProbeParams {
    /// Read a unit's params (typed once in [`crate::evalspec::probes::ProbeParams`]).
    pub fn from_params(p: &BTreeMap<String, Value>) -> Result<Self, EvalError> {
        let t: crate::evalspec::probes::ProbeParams =
            crate::evalspec::from_params(p).map_err(|source| EvalError::Params {
                eval: "probes",
                source,
            })?;
        Ok(ProbeParams {
            kind: t.kind,
            per_kind: t.per_kind.max(1) as usize,
            judge: t.judge,
            max_output_tokens: t.max_output_tokens,
        })
    }
}

/// The replay up to the probe point and the view there.
pub struct Prepared {
    pub replay: engine::Replay,
    pub view: Vec<Message>,
    pub store_root: PathBuf,
    /// Trace index of the recorded call the view precedes.
    pub at: usize,
}

/// The probe point: the last assistant message that made a tool call.
fn probe_call(trace: &Trace) -> usize {
    trace
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .filter(|(_, m)| !m.tool_calls.is_empty())
        .map(|(i, _)| i)
        .next_back()
        .unwrap_or(trace.messages.len())
}

pub fn prepare(
    trace: &Trace,
    config: &ResolvedConfig,
    summarizer: &dyn Summarizer,
    prices: &PriceTable,
    store_root: PathBuf,
    seed: u64,
) -> Result<Prepared, EvalError> {
    let at = probe_call(trace);
    let nth = trace.messages[..at]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    let t = question_point(trace, AskAt::Call(nth));
    let mut env = ReplayEnv::new(summarizer);
    env.prices = Some(prices);
    env.store = StoreTarget::Dir(store_root.clone());
    env.seed = seed;
    env.keep_views = KeepViews::Last;
    let replay = engine::replay(&t, config, &env).map_err(EvalError::Engine)?;
    let view = replay
        .views
        .last()
        .map(|v| v.messages.clone())
        .ok_or(EvalError::Replay("the replay kept no view"))?;
    Ok(Prepared {
        replay,
        view,
        store_root,
        at,
    })
}

/// Recall candidates before `before`: every distinct (exception name, message) a tool reported,
/// in order; the first command run when there is none.
pub fn recall_candidates(trace: &Trace, before: usize) -> Vec<(String, String)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"\b([A-Z][A-Za-z]*(?:Error|Exception)):\s+(\S.{3,200})").unwrap()
    });
    let mut out: Vec<(String, String)> = Vec::new();
    for m in trace.messages[..before.min(trace.messages.len())]
        .iter()
        .filter(|m| m.role == Role::Tool || m.kind.as_deref() == Some("observation"))
    {
        for c in re.captures_iter(&m.content) {
            let msg = c[2].lines().next().unwrap_or("").trim().to_string();
            let item = (c[1].to_string(), msg);
            if item.1.len() >= 4 && !out.contains(&item) {
                out.push(item);
            }
        }
    }
    if out.is_empty() {
        if let Some(first) = truth::next_tool_call(trace, 0) {
            out.push(("first command".into(), truth::call_target(first)));
        }
    }
    out
}

/// The first recall question (kept for callers that want one).
pub fn recall_question(trace: &Trace, before: usize) -> Option<(String, String)> {
    recall_candidates(trace, before).into_iter().next()
}

/// Sentences of the assistant's text before `before` that state a choice between approaches:
/// a decision word (`should`, `I'll`, `let's`, `better`, …) and a contrast (`instead of`,
/// `rather than`, `better than`, `alternatively`) in one sentence.
pub fn decision_candidates(trace: &Trace, before: usize) -> Vec<String> {
    static SENTENCE: OnceLock<Regex> = OnceLock::new();
    static DECIDE: OnceLock<Regex> = OnceLock::new();
    static CONTRAST: OnceLock<Regex> = OnceLock::new();
    let sentence = SENTENCE.get_or_init(|| Regex::new(r"[^.!?\n]{12,400}[.!?\n]").unwrap());
    let decide = DECIDE.get_or_init(|| {
        Regex::new(r"(?i)\b(should|i'll|i will|let's|let me|we can|i can|better|prefer|decided?|choose|chose|go with|the fix is)\b").unwrap()
    });
    let contrast = CONTRAST.get_or_init(|| {
        Regex::new(r"(?i)\b(instead of|rather than|better than|alternatively)\b").unwrap()
    });
    let mut out: Vec<String> = Vec::new();
    for m in trace.messages[..before.min(trace.messages.len())]
        .iter()
        .filter(|m| m.role == Role::Assistant)
    {
        for s in sentence.find_iter(&m.content) {
            let s = s.as_str().trim().to_string();
            if decide.is_match(&s) && contrast.is_match(&s) && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// `n` items of `items` chosen by `seed`: a seeded rotation, so the same seed asks the same
/// questions and another seed starts elsewhere.
pub fn seeded_pick<T: Clone>(items: &[T], n: usize, seed: u64) -> Vec<T> {
    if items.is_empty() {
        return Vec::new();
    }
    let start = (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % items.len();
    (0..n.min(items.len()))
        .map(|i| items[(start + i) % items.len()].clone())
        .collect()
}

/// The offline agent's answer to a decision question: the choice sentences of the assistant
/// turns (and summaries) still in view, newest first, at most five.
pub fn offline_decision_answer(context: &[Message]) -> String {
    let mut t = Trace::new(crate::trace::TraceMeta::new(
        "view",
        crate::trace::SourceFormat::Canonical,
    ));
    t.messages = context
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if m.content.contains("<summary>") {
                m.role = Role::Assistant; // a summary restates the assistant's choices
            }
            m
        })
        .collect();
    let found = decision_candidates(&t, t.messages.len());
    if found.is_empty() {
        return super::offline_agent::DONT_KNOW.into();
    }
    found
        .iter()
        .rev()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A finished probe.
pub struct ProbeOutcome {
    pub scores: BTreeMap<String, f64>,
    pub passed: Option<bool>,
    pub evidence: Value,
}

/// One question asked: its text, what the trace says, the answer and its deterministic score.
struct Asked {
    question: String,
    expected: String,
    answer: String,
    scores: BTreeMap<String, f64>,
    evidence: Value,
}

/// Ask the probe's questions (`per_kind`, seeded), score them, and grade them when a judge is
/// given.
pub async fn ask(
    trace: &Trace,
    prepared: &Prepared,
    params: ProbeParams,
    agent: &dyn Provider,
    judge: Option<&dyn Provider>,
    seed: u64,
    nonce: &str,
) -> Result<ProbeOutcome, EvalError> {
    let asked = match params.kind {
        ProbeKind::Recall => {
            let picks = seeded_pick(
                &recall_candidates(trace, prepared.at),
                params.per_kind,
                seed,
            );
            if picks.is_empty() {
                return Err(EvalError::Config(
                    "the trace has no tool call to ask about".into(),
                ));
            }
            let mut v = Vec::new();
            for (i, (name, expected)) in picks.into_iter().enumerate() {
                v.push(
                    ask_recall(
                        prepared,
                        &name,
                        &expected,
                        agent,
                        output_limit(params.max_output_tokens, ProbeKind::Recall),
                        &format!("{nonce}/{i}"),
                    )
                    .await?,
                );
            }
            v
        }
        ProbeKind::Decision if !decision_candidates(trace, prepared.at).is_empty() => {
            let picks = seeded_pick(
                &decision_candidates(trace, prepared.at),
                params.per_kind,
                seed,
            );
            let mut v = Vec::new();
            for (i, expected) in picks.into_iter().enumerate() {
                v.push(
                    ask_decision(
                        prepared,
                        &expected,
                        agent,
                        output_limit(params.max_output_tokens, ProbeKind::Decision),
                        &format!("{nonce}/{i}"),
                    )
                    .await?,
                );
            }
            v
        }
        // A decision probe without a decision to ask about asks the structured question.
        kind => {
            let limit = output_limit(params.max_output_tokens, ProbeKind::Artifact);
            vec![ask_structured(trace, prepared, kind, agent, limit, nonce).await?]
        }
    };
    let n = asked.len() as f64;
    let mut scores: BTreeMap<String, f64> = BTreeMap::new();
    for a in &asked {
        for (k, v) in &a.scores {
            *scores.entry(k.clone()).or_default() += v / n;
        }
    }
    scores.insert("questions".into(), n);
    let passed = match params.kind {
        ProbeKind::Recall => Some(scores["recall_overlap"] >= 0.5),
        ProbeKind::Artifact => {
            Some(scores["artifact_recall"] >= 1.0 && scores["artifact_precision"] >= 0.5)
        }
        ProbeKind::Continuation => Some(scores["next_tool_match"] >= 1.0),
        ProbeKind::Decision => Some(
            scores
                .get("decision_overlap")
                .map_or(scores.get("decision_match") == Some(&1.0), |o| *o >= 0.5),
        ),
    };
    let mut evidence: Vec<Value> = Vec::new();
    for (i, a) in asked.iter().enumerate() {
        let mut e = a.evidence.clone();
        if let Some(j) = judge {
            let g = rubric::grade(
                j,
                &a.question,
                &a.expected,
                &a.answer,
                &format!("{nonce}/judge{i}"),
            )
            .await?;
            for (d, v) in &g.grades {
                *scores.entry(format!("judge_{d}")).or_default() += v / n;
            }
            e["judge"] = json!({"grades": g.grades, "reply": g.reply});
        }
        evidence.push(e);
    }
    // Every answer has all six grades (`rubric::grade` fails the unit otherwise), so each
    // `judge_<dimension>` is a mean over every answer.
    let evidence = if evidence.len() == 1 {
        evidence.remove(0)
    } else {
        json!({ "questions": evidence })
    };
    Ok(ProbeOutcome {
        scores,
        passed,
        evidence,
    })
}

/// The output limit of a probe answer: the section's, else `kind`'s default.
fn output_limit(set: Option<u32>, kind: ProbeKind) -> u32 {
    crate::evalspec::output_limit(set, crate::evalspec::probes::max_output_tokens(kind))
}

async fn ask_recall(
    prepared: &Prepared,
    name: &str,
    expected: &str,
    agent: &dyn Provider,
    max_output_tokens: u32,
    nonce: &str,
) -> Result<Asked, EvalError> {
    let question = format!(
        "{PROBE_PREAMBLE}\n\nEarlier in this session a tool reported a {name}. What exactly was the {name}?"
    );
    let sandbox = super::fs_tools::Sandbox::new(&prepared.store_root).map_err(EvalError::from)?;
    let mut messages = prepared.view.clone();
    messages.push(Message::user(question.clone()));
    let out = agent::run(
        agent,
        Asking::Recall,
        messages,
        Some(&sandbox),
        6,
        Some(max_output_tokens),
        nonce,
    )
    .await?;
    let overlap = truth::overlap(
        &truth::target_tokens(expected),
        &truth::target_tokens(&out.answer),
    );
    let exact = plant::normalize(&out.answer).contains(&plant::normalize(expected));
    let score = if exact { 1.0 } else { overlap };
    let mut scores = BTreeMap::new();
    scores.insert("recall_overlap".into(), score);
    scores.insert("steps".into(), out.steps as f64);
    let answer = out.answer.clone();
    Ok(Asked {
        evidence: json!({"question": question, "expected": expected, "answer": out}),
        question,
        expected: expected.to_string(),
        answer,
        scores,
    })
}

async fn ask_decision(
    prepared: &Prepared,
    expected: &str,
    agent: &dyn Provider,
    max_output_tokens: u32,
    nonce: &str,
) -> Result<Asked, EvalError> {
    let question = format!(
        "{PROBE_PREAMBLE}\n\nAt one point in this session you weighed approaches and chose one over another. Which approach did you choose, and instead of what? Name the specific code, values or commands."
    );
    let mut messages = prepared.view.clone();
    messages.push(Message::user(question.clone()));
    let out = agent::run(
        agent,
        Asking::Decision,
        messages,
        None,
        1,
        Some(max_output_tokens),
        nonce,
    )
    .await?;
    let keys = truth::keywords(expected, 12);
    let mut scores = BTreeMap::new();
    scores.insert(
        "decision_overlap".into(),
        truth::keyword_coverage(&out.answer, &keys),
    );
    Ok(Asked {
        evidence: json!({"question": question, "expected": expected, "keywords": keys,
                         "answer": out.answer}),
        question,
        expected: expected.to_string(),
        answer: out.answer,
        scores,
    })
}

async fn ask_structured(
    trace: &Trace,
    prepared: &Prepared,
    kind: ProbeKind,
    agent: &dyn Provider,
    max_output_tokens: u32,
    nonce: &str,
) -> Result<Asked, EvalError> {
    let mut scores = BTreeMap::new();
    let mut messages = prepared.view.clone();
    messages.push(Message::user(DRIFT_QUESTION));
    let out = agent::run(
        agent,
        Asking::Drift,
        messages,
        None,
        1,
        Some(max_output_tokens),
        nonce,
    )
    .await?;
    let answer = DriftAnswer::parse(&out.answer);
    let artifacts: BTreeSet<String> = truth::artifacts_before(trace, prepared.at);
    let next = truth::next_tool_call(trace, prepared.at);
    let expected = match kind {
        ProbeKind::Artifact => {
            let (r, p) = truth::artifact_scores(&answer.files, &artifacts);
            scores.insert("artifact_recall".into(), r);
            scores.insert("artifact_precision".into(), p);
            format!(
                "FILES: {}",
                artifacts.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        }
        ProbeKind::Continuation => {
            let tool = next.map(|c| c.name.as_str()).unwrap_or_default();
            let m = tool.eq_ignore_ascii_case(answer.next_tool.trim());
            let o = next
                .map(|c| {
                    truth::overlap(
                        &truth::target_tokens(&truth::call_target(c)),
                        &truth::target_tokens(&answer.next_target),
                    )
                })
                .unwrap_or(1.0);
            scores.insert("next_tool_match".into(), m as u8 as f64);
            scores.insert("next_target_overlap".into(), o);
            format!(
                "NEXT TOOL: {tool}\nNEXT TARGET: {}",
                next.map(truth::call_target).unwrap_or_default()
            )
        }
        _ => {
            // No choice stated in the assistant's text: the file it last decided to change.
            let last_edit = trace.messages[..prepared.at]
                .iter()
                .flat_map(|m| m.tool_calls.iter())
                .flat_map(truth::written_paths)
                .next_back();
            let m = match &last_edit {
                Some(p) => answer.files.iter().any(|f| truth::same_file(f, p)),
                None => answer.files.is_empty(),
            };
            scores.insert("decision_match".into(), m as u8 as f64);
            format!("LAST FILE CHANGED: {}", last_edit.unwrap_or_default())
        }
    };
    Ok(Asked {
        evidence: json!({"answer": answer, "raw_answer": out.answer,
                         "truth_files": artifacts, "at": prepared.at}),
        question: DRIFT_QUESTION.to_string(),
        expected,
        answer: out.answer,
        scores,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{SourceFormat, ToolCall, TraceMeta};

    #[test]
    fn params_name_a_kind_of_the_suite() {
        let params = |kind: Value| BTreeMap::from([("kind".to_string(), kind)]);
        let p = ProbeParams::from_params(&params(json!("decision"))).unwrap();
        assert_eq!(
            (p.kind, p.per_kind, p.judge),
            (ProbeKind::Decision, 1, false)
        );
        for bad in [json!("bogus"), json!(3), Value::Null] {
            let e = ProbeParams::from_params(&params(bad.clone())).unwrap_err();
            assert!(e.to_string().starts_with("probes params: "), "{bad}: {e}");
            assert_eq!(e.kind(), "eval_config");
            assert!(
                std::error::Error::source(&e).is_some(),
                "the serde error is kept"
            );
        }
    }

    #[test]
    fn decisions_come_from_the_assistants_own_choices() {
        let mut t = Trace::new(TraceMeta::new("t", SourceFormat::Canonical));
        t.messages.push(Message::user("fix it"));
        t.messages.push(Message::assistant(
            "The output shows the full number instead of the formatted one. The fix should be to use `right` instead of `1` in the matrix.",
            vec![],
        ));
        t.messages
            .push(Message::assistant("Let me run the tests.", vec![]));
        let d = decision_candidates(&t, 3);
        assert_eq!(
            d,
            vec!["The fix should be to use `right` instead of `1` in the matrix.".to_string()]
        );
        // The offline agent answers from the view; without the turn it does not know.
        let a = offline_decision_answer(&t.messages);
        assert!(a.contains("`right` instead of `1`"), "{a}");
        assert_eq!(
            offline_decision_answer(&t.messages[2..]),
            super::super::offline_agent::DONT_KNOW
        );
    }

    #[test]
    fn seeded_picks_are_deterministic_and_move_with_the_seed() {
        let items: Vec<u32> = (0..7).collect();
        assert_eq!(seeded_pick(&items, 3, 5), seeded_pick(&items, 3, 5));
        assert_eq!(seeded_pick(&items, 9, 5).len(), 7);
        assert!((0..20).any(|s| seeded_pick(&items, 1, s) != seeded_pick(&items, 1, 0)));
        assert!(seeded_pick::<u32>(&[], 2, 1).is_empty());
    }

    #[test]
    fn recall_question_finds_the_first_exception() {
        let mut t = Trace::new(TraceMeta::new("t", SourceFormat::Canonical));
        t.messages.push(Message::user("go"));
        t.messages.push(Message::assistant(
            "",
            vec![ToolCall {
                id: "a".into(),
                name: "bash".into(),
                arguments: json!({"command": "python x.py"}),
            }],
        ));
        t.messages.push(Message::tool(
            "a",
            "bash",
            "Traceback:\n  File x\nValueError: invalid literal for int() with base 10: 'x'\n",
        ));
        let (name, msg) = recall_question(&t, 3).unwrap();
        assert_eq!(name, "ValueError");
        assert_eq!(msg, "invalid literal for int() with base 10: 'x'");
        // Before the result: only the first command is known.
        assert_eq!(
            recall_question(&t, 2).unwrap(),
            ("first command".into(), "python x.py".into())
        );
    }
}
