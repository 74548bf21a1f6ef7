//! Needle after compaction: plant unguessable facts at a depth of a real trace, replay it under
//! an (aggressive) engine variant so compaction moves them out of the context, then ask for them
//! with an agent whose only tools search the run's offload store.
//!
//! One sample = one planted trace, one replay, one question per needle. Scores:
//! `recall` (fraction of needles recovered exactly, normalized), `steps` (model calls per
//! question), `tool_calls`, `searched` (1 when any tool was used), `in_view` (fraction of needle
//! lines still verbatim in the final view: 1 means compaction never removed them), and the
//! probe's own `probe_input_tokens` / `probe_output_tokens`.

use super::agent::{self, LoopOutcome};
use super::fs_tools::Sandbox;
use super::offline_agent::OfflineProvider;
use super::plant::{self, Fact, PlantSpec, Planted, Position};
use super::EvalError;
use crate::config::suite::NeedleSearch;
use crate::engine::{self, KeepViews, ReplayEnv, ResolvedConfig, StoreTarget, Summarizer};
use crate::pricing::PriceTable;
use crate::providers::Provider;
use crate::trace::{Message, Role, Trace, Usage};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// When the question is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskAt {
    /// After the last message of the trace.
    End,
    /// Before model call `n` (0-based count of assistant messages).
    Call(usize),
}

/// A needle sample's parameters (from the plan's unit params).
#[derive(Clone, Debug, PartialEq)]
pub struct NeedleParams {
    pub depth: f64,
    pub position: Position,
    /// Overrides the variant's compaction trigger (fraction of the window).
    pub trigger: Option<f64>,
    pub needles: usize,
    pub distractors: usize,
    pub max_steps: u32,
    pub ask_at: AskAt,
    /// How the offline agent may search (`auto` when absent).
    pub search: NeedleSearch,
    /// Paraphrased questions and key-sharing distractors.
    pub paraphrase: bool,
}

impl NeedleParams {
    /// Read the unit's params map (`depth`, `position`, `trigger`, `needles`, `distractors`,
    /// `max_steps`, `ask_at`).
    pub fn from_params(p: &BTreeMap<String, Value>) -> Result<Self, EvalError> {
        let bad = |k: &str, what: &str| EvalError::Config(format!("needle param `{k}`: {what}"));
        let f = |k: &str| p.get(k).and_then(Value::as_f64);
        let u = |k: &str, d: u64| p.get(k).and_then(Value::as_u64).unwrap_or(d);
        let depth = f("depth").ok_or_else(|| bad("depth", "expected a number in 0..=1"))?;
        let position = match p.get("position").and_then(Value::as_str) {
            Some("user") => Position::User,
            Some("tool") | None => Position::Tool,
            Some("assistant") => Position::Assistant,
            Some(other) => return Err(bad("position", &format!("unknown position {other:?}"))),
        };
        let ask_at = match p.get("ask_at") {
            None => AskAt::End,
            Some(Value::String(s)) if s == "end" => AskAt::End,
            Some(v) => AskAt::Call(
                v.as_u64()
                    .ok_or_else(|| bad("ask_at", "expected \"end\" or a call index"))?
                    as usize,
            ),
        };
        let search = match p.get("search").and_then(Value::as_str) {
            None => NeedleSearch::Auto,
            Some(s) => NeedleSearch::parse(s)
                .ok_or_else(|| bad("search", "expected \"auto\", \"always\" or \"never\""))?,
        };
        Ok(NeedleParams {
            search,
            paraphrase: p
                .get("paraphrase")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            depth,
            position,
            trigger: f("trigger"),
            needles: u("needles", 1) as usize,
            distractors: u("distractors", 0) as usize,
            max_steps: u("max_steps", 8) as u32,
            ask_at,
        })
    }
}

/// The probe instruction placed before each question.
pub const PROBE_PREAMBLE: &str = "Stop working on the task and answer one question about this session. \
Older parts of the conversation may have been moved out of your context into a file store; you \
can search it with the tools ls, glob, grep and read_file ('/' is the store root). Use them if the \
answer is not in front of you. Answer with the value only; if you cannot find it, say you don't know.";

/// Everything the replay phase of a needle sample produced (CPU work, no model calls except
/// the summarizer's).
pub struct Prepared {
    pub planted: Planted,
    pub replay: engine::Replay,
    /// The request the agent would have been sent at the question point.
    pub view: Vec<Message>,
    pub store_root: PathBuf,
}

/// Plant, cut at the question point, and replay. `store_root` is this unit's offload store.
pub fn prepare(
    trace: &Trace,
    config: &ResolvedConfig,
    params: &NeedleParams,
    summarizer: &dyn Summarizer,
    prices: &PriceTable,
    store_root: PathBuf,
    seed: u64,
) -> Result<Prepared, EvalError> {
    let mut config = config.clone();
    if let Some(t) = params.trigger {
        if !config.set_compaction_trigger(t) {
            return Err(EvalError::Config(format!(
                "trigger {t} asked for, but preset `{}` has no summarize or truncate layer",
                config.preset
            )));
        }
    }
    let planted = plant::plant(
        trace,
        &PlantSpec {
            depth: params.depth,
            position: params.position,
            needles: params.needles,
            distractors: params.distractors,
            seed,
            paraphrase: params.paraphrase,
        },
    )
    .map_err(EvalError::Config)?;
    let probe_trace = question_point(&planted.trace, params.ask_at);
    let mut env = ReplayEnv::new(summarizer);
    env.prices = prices;
    env.store = StoreTarget::Dir(store_root.clone());
    env.seed = seed;
    env.keep_views = KeepViews::Last;
    let replay = engine::replay(&probe_trace, &config, &env)
        .map_err(|e| EvalError::Engine(e.to_string()))?;
    let view = replay
        .views
        .last()
        .map(|v| v.messages.clone())
        .ok_or_else(|| EvalError::Engine("the replay kept no view to ask from".into()))?;
    Ok(Prepared {
        planted,
        replay,
        view,
        store_root,
    })
}

/// The trace up to the question point, ending in a synthetic assistant message: the engine
/// builds the view for that call, which is exactly what the agent would be sent next.
pub fn question_point(trace: &Trace, ask_at: AskAt) -> Trace {
    let mut t = trace.clone();
    if let AskAt::Call(n) = ask_at {
        if let Some(cut) = t
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant)
            .nth(n)
            .map(|(i, _)| i)
        {
            t.messages.truncate(cut);
            t.markers.retain(|m| m.index <= cut);
        }
    }
    let mut probe = Message::assistant("", vec![]);
    probe.kind = Some("probe".into());
    t.messages.push(probe);
    t
}

/// One question's result.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    pub key: String,
    /// The question as the agent was asked it (the report shows it).
    pub question: String,
    pub expected: String,
    pub recovered: bool,
    /// The needle's line was still verbatim in the view.
    pub in_view: bool,
    #[serde(flatten)]
    pub outcome: LoopOutcome,
}

/// Ask for every needle with the agent. Questions are independent conversations.
///
/// `search` steers the offline agent only (a bounded stand-in for a model); any other agent
/// always gets the search tools.
pub async fn ask(
    prepared: &Prepared,
    agent: &dyn Provider,
    max_steps: u32,
    search: NeedleSearch,
    nonce: &str,
) -> Result<Vec<Answer>, EvalError> {
    let bounded;
    let agent: &dyn Provider = if agent.info().kind == "offline" && search != NeedleSearch::Auto {
        bounded = OfflineProvider::with_search(search);
        &bounded
    } else {
        agent
    };
    let sandbox = Sandbox::new(&prepared.store_root).map_err(|e| EvalError::Io(e.to_string()))?;
    let mut answers = Vec::new();
    for fact in prepared.planted.needles() {
        let mut messages = prepared.view.clone();
        let question = fact.question();
        messages.push(Message::user(format!("{PROBE_PREAMBLE}\n\n{question}")));
        let outcome = agent::run(
            agent,
            messages,
            Some(&sandbox),
            max_steps,
            Some(200),
            &format!("{nonce}/{}", fact.key),
        )
        .await?;
        answers.push(Answer {
            key: fact.key.clone(),
            question,
            expected: fact.value.clone(),
            recovered: plant::recovered(&outcome.answer, &fact.value),
            in_view: line_in_view(&prepared.view, fact),
            outcome,
        });
    }
    Ok(answers)
}

fn line_in_view(view: &[Message], fact: &Fact) -> bool {
    let line = fact.line();
    view.iter().any(|m| m.content.contains(&line))
}

/// Scores and evidence of a finished needle sample.
pub fn score(prepared: &Prepared, answers: &[Answer]) -> (BTreeMap<String, f64>, Value, Usage) {
    let n = answers.len().max(1) as f64;
    let mut usage = Usage::default();
    for a in answers {
        usage.add(&a.outcome.usage);
    }
    let mean = |f: &dyn Fn(&Answer) -> f64| answers.iter().map(f).sum::<f64>() / n;
    let mut scores = BTreeMap::new();
    scores.insert("recall".into(), mean(&|a| a.recovered as u8 as f64));
    scores.insert("in_view".into(), mean(&|a| a.in_view as u8 as f64));
    scores.insert("steps".into(), mean(&|a| a.outcome.steps as f64));
    scores.insert(
        "tool_calls".into(),
        answers
            .iter()
            .map(|a| a.outcome.tool_uses.len())
            .sum::<usize>() as f64,
    );
    scores.insert(
        "searched".into(),
        answers.iter().any(|a| a.outcome.searched()) as u8 as f64,
    );
    scores.insert("probe_input_tokens".into(), usage.input as f64);
    scores.insert("probe_output_tokens".into(), usage.output as f64);
    let facts: Vec<Value> = prepared
        .planted
        .facts
        .iter()
        .map(|f| {
            json!({"key": f.key, "value": f.value, "trace_index": f.index,
                   "position": f.position.as_str(), "needle": f.is_needle})
        })
        .collect();
    let evidence = json!({
        "facts": facts,
        "answers": answers,
        "view_messages": prepared.view.len(),
        "store_files": prepared.replay.store.writes().len(),
    });
    (scores, evidence, usage)
}
