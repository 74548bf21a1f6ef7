//! Factory-style probes, asked at the last recorded tool call of a trace with the view the
//! variant would have sent there (after all its compaction):
//!
//! - `recall`: an exception a tool reported earlier (`What exactly was the ValueError?`), a
//!   value answerable only from the history; scored by token overlap with the recorded message
//!   (`recall_overlap`, pass at ≥ 0.5). Traces without a recorded exception ask for the first
//!   command run instead.
//! - `artifact`: the files created or edited so far (`artifact_recall`, `artifact_precision`).
//! - `continuation`: the next tool and its target (`next_tool_match`, `next_target_overlap`).
//! - `decision`: which file the agent decided to change (the last one it edited): `decision_match`.
//!
//! Artifact, continuation and decision questions share the drift probe's structured answer
//! format, so every provider (the offline agent included) answers them the same way.

use super::agent;
use super::answer_format::{DriftAnswer, DRIFT_QUESTION};
use super::needle::{question_point, AskAt, PROBE_PREAMBLE};
use super::{plant, truth, EvalError};
use crate::engine::{self, KeepViews, ReplayEnv, ResolvedConfig, StoreTarget, Summarizer};
use crate::pricing::PriceTable;
use crate::providers::Provider;
use crate::trace::{Message, Role, Trace};
use regex::Regex;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    Recall,
    Artifact,
    Continuation,
    Decision,
}

impl ProbeKind {
    pub fn from_params(p: &BTreeMap<String, Value>) -> Result<Self, EvalError> {
        match p.get("kind").and_then(Value::as_str) {
            Some("recall") => Ok(ProbeKind::Recall),
            Some("artifact") => Ok(ProbeKind::Artifact),
            Some("continuation") => Ok(ProbeKind::Continuation),
            Some("decision") => Ok(ProbeKind::Decision),
            other => Err(EvalError::Config(format!("unknown probe kind {other:?}"))),
        }
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
    env.prices = prices;
    env.store = StoreTarget::Dir(store_root.clone());
    env.seed = seed;
    env.keep_views = KeepViews::Last;
    let replay = engine::replay(&t, config, &env).map_err(|e| EvalError::Engine(e.to_string()))?;
    let view = replay
        .views
        .last()
        .map(|v| v.messages.clone())
        .ok_or_else(|| EvalError::Engine("the replay kept no view".into()))?;
    Ok(Prepared {
        replay,
        view,
        store_root,
        at,
    })
}

/// A recall question with its expected answer: (exception name, message), or the first command.
pub fn recall_question(trace: &Trace, before: usize) -> Option<(String, String)> {
    let re = Regex::new(r"\b([A-Z][A-Za-z]*(?:Error|Exception)):\s+(\S.{3,200})").ok()?;
    for m in trace.messages[..before.min(trace.messages.len())]
        .iter()
        .filter(|m| m.role == Role::Tool || m.kind.as_deref() == Some("observation"))
    {
        if let Some(c) = re.captures(&m.content) {
            let msg = c[2].lines().next().unwrap_or("").trim().to_string();
            if msg.len() >= 4 {
                return Some((c[1].to_string(), msg));
            }
        }
    }
    let first = truth::next_tool_call(trace, 0)?;
    Some(("first command".into(), truth::call_target(first)))
}

/// A finished probe.
pub struct ProbeOutcome {
    pub scores: BTreeMap<String, f64>,
    pub passed: Option<bool>,
    pub evidence: Value,
}

pub async fn ask(
    trace: &Trace,
    prepared: &Prepared,
    kind: ProbeKind,
    agent: &dyn Provider,
    nonce: &str,
) -> Result<ProbeOutcome, EvalError> {
    let mut scores = BTreeMap::new();
    let passed;
    let evidence;
    match kind {
        ProbeKind::Recall => {
            let (name, expected) = recall_question(trace, prepared.at).ok_or_else(|| {
                EvalError::Config("the trace has no tool call to ask about".into())
            })?;
            let question = format!(
                "{PROBE_PREAMBLE}\n\nEarlier in this session a tool reported a {name}. What exactly was the {name}?"
            );
            let sandbox = super::fs_tools::Sandbox::new(&prepared.store_root)
                .map_err(|e| EvalError::Io(e.to_string()))?;
            let mut messages = prepared.view.clone();
            messages.push(Message::user(question.clone()));
            let out = agent::run(agent, messages, Some(&sandbox), 6, Some(200), nonce).await?;
            let overlap = truth::overlap(
                &truth::target_tokens(&expected),
                &truth::target_tokens(&out.answer),
            );
            let exact = plant::normalize(&out.answer).contains(&plant::normalize(&expected));
            let score = if exact { 1.0 } else { overlap };
            scores.insert("recall_overlap".into(), score);
            scores.insert("steps".into(), out.steps as f64);
            passed = Some(score >= 0.5);
            evidence = json!({"question": question, "expected": expected, "answer": out});
        }
        _ => {
            let mut messages = prepared.view.clone();
            messages.push(Message::user(DRIFT_QUESTION));
            let out = agent::run(agent, messages, None, 1, Some(400), nonce).await?;
            let answer = DriftAnswer::parse(&out.answer);
            let artifacts: BTreeSet<String> = truth::artifacts_before(trace, prepared.at);
            let next = truth::next_tool_call(trace, prepared.at);
            match kind {
                ProbeKind::Artifact => {
                    let (r, p) = truth::artifact_scores(&answer.files, &artifacts);
                    scores.insert("artifact_recall".into(), r);
                    scores.insert("artifact_precision".into(), p);
                    passed = Some(r >= 1.0 && p >= 0.5);
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
                    passed = Some(m);
                }
                _ => {
                    // The file the agent last decided to change.
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
                    passed = Some(m);
                }
            }
            evidence = json!({"answer": answer, "raw_answer": out.answer,
                              "truth_files": artifacts, "at": prepared.at});
        }
    }
    Ok(ProbeOutcome {
        scores,
        passed,
        evidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{SourceFormat, ToolCall, TraceMeta};

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
