//! Continuation: does the agent, after the k-th compaction, do what the recorded agent did?
//!
//! For fold k (the k-th compaction of the replay, `params.fold`), take the compacted view the
//! engine built for that call and, for each of the next `steps` recorded model calls that made
//! a tool call, give the agent that view plus the recorded messages since the compaction
//! (teacher forcing: the recorded tool results, never the agent's), ask for its next tool call
//! ([`CONTINUATION_QUESTION`]) and compare it with the recorded call ([`super::actions`]).
//! The same question is asked on the uncompressed history up to that call, so
//! `agreement − reference_agreement` (`agreement_delta`) is what compression cost. Nothing is
//! executed and no environment is needed.
//!
//! Scores (means over the steps asked): `agreement` (same tool and same target),
//! `tool_agreement`, `target_agreement`, the same three with a `reference_` prefix,
//! `agreement_delta`, `steps` (asked) and `fold`. A variant with fewer than k compactions has
//! no fold k: its sample records `steps` = 0 and no agreement scores.

use super::actions;
use super::agent;
use super::answer_format::DriftAnswer;
use super::EvalError;
use crate::engine::{
    self, KeepViews, KeptView, ReplayEnv, ResolvedConfig, StoreTarget, Summarizer,
};
use crate::evalspec::Asking;
use crate::pricing::PriceTable;
use crate::providers::Provider;
use crate::trace::{Message, ToolCall, Trace};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The question asked after the (teacher-forced) context; the request says it asks
/// `Asking::Continuation`, and the offline agent answers with [`offline_next_action`].
pub const CONTINUATION_QUESTION: &str = "Pause before your next action. Do not run anything. State the single tool call you would make next, in exactly this format, one line each:
NEXT TOOL: <the name of the tool>
NEXT TARGET: <the file path, URL or test it acts on; for a shell tool, the full command>";

/// The action a call performs, as the offline agent compares them: tool, and program plus
/// first path's file name (else the program, else the target text).
fn action_key(c: &ToolCall) -> (String, String) {
    let t = actions::call_target(c);
    let what = match (t.program.is_empty(), t.paths.iter().next()) {
        (_, Some(p)) => format!("{} {}", t.program, p.rsplit('/').next().unwrap_or(p)),
        (false, None) => t.program.clone(),
        (true, None) => t.text.clone(),
    };
    (c.name.to_lowercase(), what)
}

/// Of `candidates` (indexes into `keys`), the index of the most frequent action, ties going to
/// the most recent.
fn most_frequent(
    keys: &[(String, String)],
    candidates: impl Iterator<Item = usize>,
) -> Option<usize> {
    let mut seen: BTreeMap<&(String, String), (usize, usize)> = BTreeMap::new();
    for i in candidates {
        let e = seen.entry(&keys[i]).or_default();
        e.0 += 1;
        e.1 = e.1.max(i);
    }
    seen.into_values().max().map(|(_, last)| last)
}

/// The offline agent's answer: an action model of the agent learned from the view alone.
/// What followed the latest action each time it was taken before in view (the most frequent
/// successor; ties: the most recent) — an agent loops (edit, re-run the reproduction, edit) —
/// else the action taken most often in view. A deterministic baseline, no canned answer: the
/// more of the recorded work the view still shows, the more it has to learn from, so a view
/// that lost the history loses agreement. No calls in view: no prediction.
pub fn offline_next_action(view: &[Message]) -> DriftAnswer {
    let calls: Vec<&ToolCall> = view.iter().flat_map(|m| m.tool_calls.iter()).collect();
    let keys: Vec<(String, String)> = calls.iter().map(|c| action_key(c)).collect();
    let mut a = DriftAnswer::default();
    let Some(last) = keys.last() else {
        return a;
    };
    let successors = (1..keys.len()).filter(|&i| keys[i - 1] == *last);
    let pick = most_frequent(&keys, successors).or_else(|| most_frequent(&keys, 0..keys.len()));
    if let Some(i) = pick {
        a.next_tool = calls[i].name.clone();
        a.next_target = super::answer_format::one_line(&super::truth::call_target(calls[i]));
    }
    a
}

/// Continuation sample parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ContinuationParams {
    /// 1-based compaction index.
    pub fold: usize,
    /// Recorded tool-calling model calls predicted after the fold.
    pub steps: usize,
    /// Output limit of each predicted step (the section's `max_output_tokens`, else 300).
    pub max_output_tokens: u32,
}

impl ContinuationParams {
    /// Read a unit's params (typed once in
    /// [`crate::evalspec::continuation::ContinuationParams`]).
    pub fn from_params(p: &BTreeMap<String, Value>) -> Result<Self, EvalError> {
        let t: crate::evalspec::continuation::ContinuationParams = crate::evalspec::from_params(p)
            .map_err(|source| EvalError::Params {
                eval: "continuation",
                source,
            })?;
        Ok(ContinuationParams {
            fold: t.fold.max(1) as usize,
            steps: t.steps.max(1) as usize,
            max_output_tokens: crate::evalspec::output_limit(
                t.max_output_tokens,
                crate::evalspec::continuation::MAX_OUTPUT_TOKENS,
            ),
        })
    }
}

/// Replay, keeping the view of every compaction; the view of fold `params.fold`, if reached.
pub fn prepare(
    trace: &Trace,
    config: &ResolvedConfig,
    params: &ContinuationParams,
    summarizer: &dyn Summarizer,
    prices: &PriceTable,
    store_root: PathBuf,
    seed: u64,
) -> Result<(engine::Replay, Option<KeptView>), EvalError> {
    let mut env = ReplayEnv::new(summarizer);
    env.prices = Some(prices);
    env.store = StoreTarget::Dir(store_root);
    env.seed = seed;
    env.keep_views = KeepViews::AfterCompaction;
    let mut replay = engine::replay(trace, config, &env).map_err(EvalError::Engine)?;
    let views = std::mem::take(&mut replay.views);
    let view = views.into_iter().nth(params.fold - 1);
    Ok((replay, view))
}

/// Trace indexes of the next `steps` assistant messages with tool calls, from `from` on.
pub fn recorded_steps(trace: &Trace, from: usize, steps: usize) -> Vec<usize> {
    trace
        .messages
        .iter()
        .enumerate()
        .skip(from)
        .filter(|(_, m)| !m.tool_calls.is_empty())
        .map(|(i, _)| i)
        .take(steps)
        .collect()
}

/// One step's question on both contexts.
#[derive(Clone, Debug, Serialize)]
pub struct StepResult {
    /// Trace index of the recorded call predicted.
    pub trace_index: usize,
    pub recorded_tool: String,
    pub recorded_target: String,
    pub predicted_tool: String,
    pub predicted_target: String,
    pub reference_tool: String,
    pub reference_target: String,
    pub tool: bool,
    pub target: bool,
    pub reference_tool_ok: bool,
    pub reference_target_ok: bool,
}

/// The question with the agent's tools named: the tools the recorded agent called anywhere in
/// the trace, in first-use order (an agent knows its tools whatever its context lost).
pub fn question(trace: &Trace) -> String {
    let mut tools: Vec<&str> = Vec::new();
    for c in trace.messages.iter().flat_map(|m| m.tool_calls.iter()) {
        if !tools.contains(&c.name.as_str()) {
            tools.push(&c.name);
        }
    }
    if tools.is_empty() {
        return CONTINUATION_QUESTION.to_string();
    }
    format!("{CONTINUATION_QUESTION}\nYour tools: {}.", tools.join(", "))
}

async fn predict(
    agent: &dyn Provider,
    mut messages: Vec<Message>,
    question: &str,
    max_output_tokens: u32,
    nonce: &str,
) -> Result<DriftAnswer, EvalError> {
    messages.push(Message::user(question));
    let out = agent::run(
        agent,
        Asking::Continuation,
        messages,
        None,
        1,
        Some(max_output_tokens),
        nonce,
    )
    .await?;
    Ok(DriftAnswer::parse(&out.answer))
}

/// Ask every step on the teacher-forced compacted context and on the uncompressed one.
pub async fn ask(
    trace: &Trace,
    view: &KeptView,
    steps: usize,
    agent: &dyn Provider,
    max_output_tokens: u32,
    nonce: &str,
) -> Result<Vec<StepResult>, EvalError> {
    let mut out = Vec::new();
    let from = view.trace_index.min(trace.messages.len());
    let q = question(trace);
    for at in recorded_steps(trace, from, steps) {
        let recorded = &trace.messages[at].tool_calls[0];
        let mut forced = view.messages.clone();
        forced.extend(trace.messages[from..at].iter().cloned());
        let a = predict(
            agent,
            forced,
            &q,
            max_output_tokens,
            &format!("{nonce}/cont@{at}"),
        )
        .await?;
        let reference = trace.messages[..at].to_vec();
        let r = predict(
            agent,
            reference,
            &q,
            max_output_tokens,
            &format!("{nonce}/cont-ref@{at}"),
        )
        .await?;
        let (tool, target) = actions::agreement(&a.next_tool, &a.next_target, recorded);
        let (rt, rg) = actions::agreement(&r.next_tool, &r.next_target, recorded);
        out.push(StepResult {
            trace_index: at,
            recorded_tool: recorded.name.clone(),
            recorded_target: super::answer_format::one_line(&super::truth::call_target(recorded)),
            predicted_tool: a.next_tool,
            predicted_target: a.next_target,
            reference_tool: r.next_tool,
            reference_target: r.next_target,
            tool,
            target,
            reference_tool_ok: rt,
            reference_target_ok: rg,
        });
    }
    Ok(out)
}

/// Scores and evidence of one fold's steps (`view_index` = trace index of the fold's call).
pub fn score(
    params: &ContinuationParams,
    view_index: Option<usize>,
    steps: &[StepResult],
) -> (BTreeMap<String, f64>, Value) {
    let mut s = BTreeMap::new();
    s.insert("steps".into(), steps.len() as f64);
    if !steps.is_empty() {
        let n = steps.len() as f64;
        let mean =
            |f: &dyn Fn(&StepResult) -> bool| steps.iter().filter(|x| f(x)).count() as f64 / n;
        let agreement = mean(&|x| x.tool && x.target);
        let reference = mean(&|x| x.reference_tool_ok && x.reference_target_ok);
        s.insert("agreement".into(), agreement);
        s.insert("tool_agreement".into(), mean(&|x| x.tool));
        s.insert("target_agreement".into(), mean(&|x| x.target));
        s.insert("reference_agreement".into(), reference);
        s.insert(
            "reference_tool_agreement".into(),
            mean(&|x| x.reference_tool_ok),
        );
        s.insert(
            "reference_target_agreement".into(),
            mean(&|x| x.reference_target_ok),
        );
        s.insert("agreement_delta".into(), agreement - reference);
    }
    let evidence = json!({
        "fold": params.fold,
        "reached": view_index.is_some(),
        "view_trace_index": view_index,
        "steps": steps,
    });
    (s, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(tool: bool, target: bool, rt: bool, rg: bool) -> StepResult {
        StepResult {
            trace_index: 3,
            recorded_tool: "bash".into(),
            recorded_target: "ls".into(),
            predicted_tool: String::new(),
            predicted_target: String::new(),
            reference_tool: String::new(),
            reference_target: String::new(),
            tool,
            target,
            reference_tool_ok: rt,
            reference_target_ok: rg,
        }
    }

    #[test]
    fn scores_are_means_and_the_delta_is_against_the_reference() {
        let p = ContinuationParams {
            fold: 2,
            steps: 3,
            max_output_tokens: 300,
        };
        let (s, e) = score(
            &p,
            Some(10),
            &[step(true, true, true, true), step(true, false, true, true)],
        );
        assert_eq!(s["agreement"], 0.5);
        assert_eq!(s["tool_agreement"], 1.0);
        assert_eq!(s["reference_agreement"], 1.0);
        assert_eq!(s["agreement_delta"], -0.5);
        assert!(!s.contains_key("fold"), "a parameter is not a score");
        assert_eq!(e["reached"], true);
        let (s, e) = score(&p, None, &[]);
        assert_eq!(s["steps"], 0.0);
        assert!(!s.contains_key("agreement"));
        assert_eq!(e["reached"], false);
    }

    #[test]
    fn offline_prediction_learns_the_loop_from_the_view() {
        let bash = |cmd: &str| {
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "c".into(),
                    name: "bash".into(),
                    arguments: json!({ "command": cmd }),
                }],
            )
        };
        let edit = "sed -i 's/a/b/' src/x.py";
        let run = "python reproduce.py";
        let full = vec![
            bash("cat > reproduce.py"),
            bash(run),
            bash(edit),
            bash(run),
            bash("grep -n foo src/x.py"),
            bash(edit),
        ];
        // After an edit this agent re-ran its reproduction: predicted from the history.
        assert_eq!(offline_next_action(&full).next_target, run);
        // A view that lost the history has only the edit to go on.
        assert_eq!(offline_next_action(&full[4..]).next_target, edit);
        assert_eq!(offline_next_action(&[]), DriftAnswer::default());
    }

    #[test]
    fn params_default_and_clamp() {
        let p = ContinuationParams::from_params(&BTreeMap::new()).unwrap();
        assert_eq!(
            p,
            ContinuationParams {
                fold: 1,
                steps: 3,
                max_output_tokens: 300
            }
        );
        let mut m = BTreeMap::new();
        m.insert("fold".to_string(), json!(0));
        m.insert("steps".to_string(), json!(5));
        assert_eq!(
            ContinuationParams::from_params(&m).unwrap(),
            ContinuationParams {
                fold: 1,
                steps: 5,
                max_output_tokens: 300
            }
        );
    }
}
