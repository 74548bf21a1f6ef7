//! Goal drift: after each compaction (or the first N), ask the agent — given only the compacted
//! view — for the user's goal, what has been done, the files it touched and its next step, and
//! score the answer against ground truth read from the trace.
//!
//! Deterministic scores per probe (averaged over the sample's probes):
//! `goal_coverage` (goal and correction keywords present in the stated goal), `next_tool_match`
//! (stated next tool = the recorded next call's tool), `next_target_overlap` (token Jaccard of
//! the stated and recorded target: path or command), `next_action_match` (same tool and same
//! action target, `evals::actions`), `artifact_recall` / `artifact_precision` (stated files vs
//! files written or edited so far). `score` = 5 × the mean of goal coverage, next-tool match
//! (next-action match on a trace whose calls all use one tool, where the tool always
//! matches), next-target overlap and artifact recall, on the judge's 0–5 scale. Goal
//! keywords include the user's later corrections before the probe.
//! With `judge = true` a judge provider also grades each answer 0–5 with a fixed rubric
//! (`judge_score`); its tokens are the sample's judge tokens, separate from the agent's.
//!
//! The suite plans one sample per fold (`params.fold` = k, the k-th compaction; `score`s by
//! fold make the degradation curve). A variant that never compacts is probed once, at its last
//! call, as fold 1, so every variant has a comparable drift score; its later folds, and folds a
//! variant does not reach, have `probes` = 0 and no scores.

use super::actions;
use super::agent;
use super::answer_format::{DriftAnswer, DRIFT_QUESTION};
use super::truth;
use super::{EvalError, JudgeFailure};
use crate::engine::{
    self, KeepViews, KeptView, ReplayEnv, ResolvedConfig, StoreTarget, Summarizer,
};
use crate::evalspec::Asking;
use crate::pricing::PriceTable;
use crate::providers::{ChatRequest, Provider};
use crate::trace::{Message, ToolCall, Trace};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Drift sample parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct DriftParams {
    /// Probe after the first N compactions (0 = after every one).
    pub after_compactions: usize,
    pub judge: bool,
    /// Probe only fold k (1-based compaction index; the suite plans one sample per fold).
    /// `None`: every fold up to `after_compactions`, averaged in one sample.
    pub fold: Option<usize>,
    /// Output limit of each answer (the section's `max_output_tokens`, else 400).
    pub max_output_tokens: u32,
}

impl DriftParams {
    /// Read a unit's params (typed once in [`crate::evalspec::drift::DriftParams`]).
    pub fn from_params(p: &BTreeMap<String, Value>) -> Result<Self, EvalError> {
        let t: crate::evalspec::drift::DriftParams =
            crate::evalspec::from_params(p).map_err(|source| EvalError::Params {
                eval: "drift",
                source,
            })?;
        Ok(DriftParams {
            after_compactions: t.after_compactions as usize,
            judge: t.judge,
            fold: t.fold.map(|f| f.max(1) as usize),
            max_output_tokens: crate::evalspec::output_limit(
                t.max_output_tokens,
                crate::evalspec::drift::MAX_OUTPUT_TOKENS,
            ),
        })
    }
}

/// Replay and keep the views to probe: after each compaction (first N), else the last call.
/// With `params.fold = Some(k)`: the view of the k-th compaction only — or, for a variant that
/// never compacts, the last call's view as fold 1 — and none when fold k is not reached.
pub fn prepare(
    trace: &Trace,
    config: &ResolvedConfig,
    params: &DriftParams,
    summarizer: &dyn Summarizer,
    prices: &PriceTable,
    store_root: PathBuf,
    seed: u64,
) -> Result<(engine::Replay, Vec<KeptView>), EvalError> {
    let run = |keep| {
        let mut env = ReplayEnv::new(summarizer);
        env.prices = Some(prices);
        env.store = StoreTarget::Dir(store_root.clone());
        env.seed = seed;
        env.keep_views = keep;
        engine::replay(trace, config, &env).map_err(EvalError::Engine)
    };
    let mut replay = run(KeepViews::AfterCompaction)?;
    let mut views = std::mem::take(&mut replay.views);
    if let Some(k) = params.fold.filter(|_| !views.is_empty()) {
        let view: Vec<KeptView> = views.into_iter().nth(k - 1).into_iter().collect();
        return Ok((replay, view));
    }
    if params.fold.is_some_and(|k| k > 1) {
        return Ok((replay, Vec::new())); // never compacts: only fold 1 is probed
    }
    if views.is_empty() {
        // No compaction: probe the uncompressed view at the last call instead.
        let _ = std::fs::remove_dir_all(&store_root);
        replay = run(KeepViews::Last)?;
        views = std::mem::take(&mut replay.views);
    } else if params.after_compactions > 0 {
        views.truncate(params.after_compactions);
    }
    Ok((replay, views))
}

/// Ground truth at the call whose request is the view at `trace_index`.
#[derive(Clone, Debug, Serialize)]
pub struct Truth {
    pub goal_keywords: Vec<String>,
    pub artifacts: Vec<String>,
    pub next_tool: Option<String>,
    pub next_target: Option<String>,
    /// Every recorded tool call of the trace uses one tool (e.g. bash-only agents): the tool
    /// match says nothing, so the score uses the action-target agreement instead.
    #[serde(default)]
    pub single_tool: bool,
    #[serde(skip)]
    pub next_call: Option<ToolCall>,
}

impl Truth {
    pub fn at(trace: &Trace, trace_index: usize) -> Truth {
        let mut goal_text = truth::goal(trace);
        for c in truth::corrections(trace, trace_index) {
            goal_text.push('\n');
            goal_text.push_str(&c);
        }
        let next = truth::next_tool_call(trace, trace_index);
        Truth {
            goal_keywords: truth::keywords(&goal_text, 16),
            artifacts: truth::artifacts_before(trace, trace_index)
                .into_iter()
                .collect(),
            next_tool: next.map(|c| c.name.clone()),
            next_target: next.map(truth::call_target),
            single_tool: single_tool(trace),
            next_call: next.cloned(),
        }
    }
}

/// True when the trace's tool calls all use one tool (and there is at least one).
pub fn single_tool(trace: &Trace) -> bool {
    let mut names = trace
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| c.name.to_lowercase());
    match names.next() {
        Some(first) => names.all(|n| n == first),
        None => false,
    }
}

/// One probe's answer and scores.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeResult {
    pub trace_index: usize,
    pub view_tokens: u64,
    pub answer: DriftAnswer,
    pub raw_answer: String,
    pub truth: Truth,
    pub scores: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_rationale: Option<String>,
}

/// Deterministic scores of one answer.
pub fn score_answer(answer: &DriftAnswer, t: &Truth) -> BTreeMap<String, f64> {
    let mut s = BTreeMap::new();
    s.insert(
        "goal_coverage".into(),
        truth::keyword_coverage(&answer.goal, &t.goal_keywords),
    );
    let norm = |x: &str| x.trim().to_lowercase();
    let tool_match = match &t.next_tool {
        Some(tool) => (norm(tool) == norm(&answer.next_tool)) as u8 as f64,
        None => 1.0,
    };
    s.insert("next_tool_match".into(), tool_match);
    let target = match &t.next_target {
        Some(tt) => truth::overlap(
            &truth::target_tokens(tt),
            &truth::target_tokens(&answer.next_target),
        ),
        None => 1.0,
    };
    s.insert("next_target_overlap".into(), target);
    // Same tool and same action target (program + path arguments for a shell command).
    let action = match &t.next_call {
        Some(call) => {
            let (tool, tgt) = actions::agreement(&answer.next_tool, &answer.next_target, call);
            (tool && tgt) as u8 as f64
        }
        None => 1.0,
    };
    s.insert("next_action_match".into(), action);
    let arts: std::collections::BTreeSet<String> = t.artifacts.iter().cloned().collect();
    let (recall, precision) = truth::artifact_scores(&answer.files, &arts);
    s.insert("artifact_recall".into(), recall);
    s.insert("artifact_precision".into(), precision);
    // On a single-tool trace the tool always matches: the action agreement replaces it.
    let next = if t.single_tool { action } else { tool_match };
    let composite = (s["goal_coverage"] + next + target + recall) / 4.0;
    s.insert("score".into(), 5.0 * composite);
    s
}

/// The fixed judge rubric.
pub const JUDGE_RUBRIC: &str =
    "You grade how well an AI agent remembers its task after its context was compressed.
Compare the AGENT ANSWER with the GROUND TRUTH and give one integer score:
5 = goal with all constraints, correct files, correct next action
4 = goal and next action right, minor omissions
3 = goal mostly right, next action or files partly wrong
2 = goal vague or missing constraints, next action wrong
1 = goal largely wrong
0 = no usable answer
Reply with a first line `SCORE: <0-5>` and one sentence of rationale.";

/// Parse `SCORE: n` (0–5) from a judge reply.
pub fn parse_judge_score(text: &str) -> Option<f64> {
    let re = regex::Regex::new(r"(?i)score\s*[:=]\s*\**\s*([0-5](?:\.\d+)?)").ok()?;
    re.captures(text)?[1].parse().ok()
}

/// The grade of `resp`, a judge's reply to [`JUDGE_RUBRIC`]: a refused, cut-off or
/// unparseable reply is an error ([`JudgeFailure`]), never a silently missing score.
pub(crate) fn judge_score(resp: &crate::providers::ChatResponse) -> Result<f64, EvalError> {
    if let Some(failure) = JudgeFailure::of_reply(resp) {
        return Err(EvalError::Judge(failure));
    }
    parse_judge_score(&resp.message.content).ok_or_else(|| {
        EvalError::Judge(JudgeFailure::unparseable(
            "`SCORE: <0-5>`",
            &resp.message.content,
        ))
    })
}

async fn judge_one(
    judge: &dyn Provider,
    answer: &str,
    t: &Truth,
    goal: &str,
    nonce: &str,
) -> Result<(f64, String), EvalError> {
    let truth_text = format!(
        "GOAL: {}\nFILES: {}\nNEXT TOOL: {}\nNEXT TARGET: {}",
        super::answer_format::one_line(&goal.chars().take(2000).collect::<String>()),
        t.artifacts.join(", "),
        t.next_tool.as_deref().unwrap_or("(none)"),
        t.next_target.as_deref().unwrap_or("(none)")
    );
    let req = ChatRequest::new(vec![
        Message::system(JUDGE_RUBRIC),
        Message::user(format!(
            "GROUND TRUTH\n{truth_text}\n\nAGENT ANSWER\n{answer}"
        )),
    ])
    .with_nonce(nonce);
    let resp = judge.chat(&req).await?;
    Ok((judge_score(&resp)?, resp.message.content))
}

/// Ask the drift probe at every kept view; judge when asked.
pub async fn ask(
    trace: &Trace,
    views: &[KeptView],
    agent: &dyn Provider,
    judge: Option<&dyn Provider>,
    max_output_tokens: u32,
    nonce: &str,
) -> Result<Vec<ProbeResult>, EvalError> {
    let goal = truth::goal(trace);
    let mut out = Vec::new();
    for v in views {
        let mut messages = v.messages.clone();
        messages.push(Message::user(DRIFT_QUESTION));
        let outcome = agent::run(
            agent,
            Asking::Drift,
            messages,
            None,
            1,
            Some(max_output_tokens),
            &format!("{nonce}/drift@{}", v.trace_index),
        )
        .await?;
        let answer = DriftAnswer::parse(&outcome.answer);
        let t = Truth::at(trace, v.trace_index);
        let mut scores = score_answer(&answer, &t);
        let mut rationale = None;
        if let Some(j) = judge {
            let (s, text) = judge_one(
                j,
                &outcome.answer,
                &t,
                &goal,
                &format!("{nonce}/judge@{}", v.trace_index),
            )
            .await?;
            scores.insert("judge_score".into(), s);
            rationale = Some(text);
        }
        out.push(ProbeResult {
            trace_index: v.trace_index,
            view_tokens: v.tokens,
            answer,
            raw_answer: outcome.answer,
            truth: t,
            scores,
            judge_rationale: rationale,
        });
    }
    Ok(out)
}

/// Scores of one fold's sample: [`aggregate`] plus `fold`; `evidence.reached` says whether
/// the fold was probed (a variant with fewer compactions has `probes` = 0 and no scores).
pub fn aggregate_fold(fold: usize, probes: &[ProbeResult]) -> (BTreeMap<String, f64>, Value) {
    let (scores, mut evidence) = aggregate(probes);
    evidence["fold"] = json!(fold);
    evidence["reached"] = json!(!probes.is_empty());
    (scores, evidence)
}

/// Mean of every score over the probes, plus `probes` (how many were asked).
pub fn aggregate(probes: &[ProbeResult]) -> (BTreeMap<String, f64>, Value) {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for p in probes {
        for (k, v) in &p.scores {
            let e = sums.entry(k.clone()).or_default();
            e.0 += v;
            e.1 += 1;
        }
    }
    let mut scores: BTreeMap<String, f64> = sums
        .into_iter()
        .map(|(k, (s, n))| (k, s / n as f64))
        .collect();
    scores.insert("probes".into(), probes.len() as f64);
    (scores, json!({ "probes": probes }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_keywords_take_in_corrections_made_before_the_probe() {
        use crate::trace::{SourceFormat, TraceMeta};
        let mut t = Trace::new(TraceMeta::new("t", SourceFormat::Canonical));
        t.messages.push(Message::user("Port the tokenizer to Rust"));
        t.messages.push(Message::assistant("ok", vec![]));
        t.messages.push(Message::user(
            "Correction: keep the Python bindings working",
        ));
        t.messages.push(Message::assistant("ok", vec![]));
        t.messages
            .push(Message::user("Later: benchmark against criterion"));
        let at3 = Truth::at(&t, 3).goal_keywords;
        assert!(at3.contains(&"bindings".to_string()), "{at3:?}");
        assert!(!at3.contains(&"criterion".to_string()), "{at3:?}");
        let before = Truth::at(&t, 1).goal_keywords;
        assert!(!before.contains(&"bindings".to_string()), "{before:?}");
        // An answer with the goal but not the correction covers less.
        let a = DriftAnswer {
            goal: "Port the tokenizer to Rust".into(),
            ..DriftAnswer::default()
        };
        let b = DriftAnswer {
            goal: "Port the tokenizer to Rust; keep the Python bindings working".into(),
            ..DriftAnswer::default()
        };
        let t3 = Truth::at(&t, 3);
        assert!(score_answer(&a, &t3)["goal_coverage"] < score_answer(&b, &t3)["goal_coverage"]);
    }

    #[test]
    fn judge_scores_parse() {
        assert_eq!(parse_judge_score("SCORE: 4\nGood."), Some(4.0));
        assert_eq!(parse_judge_score("**Score:** 3.5"), Some(3.5));
        assert_eq!(parse_judge_score("I'd say 9"), None);
    }

    #[test]
    fn perfect_and_empty_answers_bracket_the_score() {
        let t = Truth {
            goal_keywords: vec!["parser".into(), "rust".into()],
            artifacts: vec!["/w/src/parser.rs".into()],
            next_tool: Some("bash".into()),
            next_target: Some("cargo test".into()),
            single_tool: true,
            next_call: Some(ToolCall {
                id: "c".into(),
                name: "bash".into(),
                arguments: json!({"command": "cargo test"}),
            }),
        };
        let good = DriftAnswer {
            goal: "Port the parser to Rust".into(),
            done: String::new(),
            files: vec!["src/parser.rs".into()],
            next_tool: "bash".into(),
            next_target: "cargo test".into(),
        };
        assert_eq!(score_answer(&good, &t)["score"], 5.0);
        let empty = DriftAnswer::default();
        let s = score_answer(&empty, &t);
        assert_eq!(s["score"], 0.0);
        assert_eq!(
            s["artifact_precision"], 1.0,
            "nothing claimed, nothing wrong"
        );
        // Bash-only trace: the right tool with the wrong action no longer scores the tool.
        let wrong = DriftAnswer {
            next_target: "ls -la".into(),
            ..good.clone()
        };
        let s = score_answer(&wrong, &t);
        assert_eq!(s["next_tool_match"], 1.0);
        assert_eq!(s["next_action_match"], 0.0);
        let multi = Truth {
            single_tool: false,
            ..t.clone()
        };
        assert!(score_answer(&wrong, &multi)["score"] > s["score"]);
    }
}
