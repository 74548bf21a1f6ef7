//! Needle after compaction: plant unguessable facts at a depth of a real trace, replay it under
//! an (aggressive) engine variant so compaction moves them out of the context, then ask for them
//! with an agent whose only tools search the run's offload store.
//!
//! One sample = one planted trace, one replay, one question per needle. Scores:
//! `recall` (fraction of needles recovered exactly, normalized), `steps` (model calls per
//! question), `tool_calls`, `searched` (1 when any tool was used), `in_view` (fraction of needle
//! lines still verbatim in the final view: 1 means compaction never removed them), and the
//! probe's own `probe_input_tokens` / `probe_output_tokens` (and `reference_input_tokens` /
//! `reference_output_tokens` for the reference questions).
//!
//! Every question is also asked on the uncompressed history up to the same point (same agent,
//! same question, no tools: nothing was offloaded): `reference_recall`, and `recall_delta` = `recall − reference_recall`, the
//! part of a miss that compression caused. With `corrected`, `stale` is the fraction of
//! corrected needles answered with the superseded first value. With `fold = k` the question
//! comes right after the k-th summarization that followed the planting; a replay with fewer
//! such folds is `not_reached` (score 1, no recall: not a failure, left out of recall means).

use super::agent::{self, LoopOutcome};
use super::fs_tools::{Limits, MemFiles, Sandbox};
use super::offline_agent::OfflineProvider;
use super::plant::{self, Fact, PlantSpec, Position};
use super::prefixes::{Prefixes, WalkKey};
use super::EvalError;
use crate::engine::{
    self, EventDetail, KeepViews, ReplayEnv, ResolvedConfig, StoreTarget, Summarizer,
};
use crate::evalspec::needle::NeedleSearch;
use crate::evalspec::Asking;
use crate::pricing::{Calls, PriceTable};
use crate::providers::{Provider, ProviderError};
use crate::trace::{Message, Role, Trace, Usage};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
    /// Output limit of each answer (the section's `max_output_tokens`, else 200).
    pub max_output_tokens: u32,
    pub ask_at: AskAt,
    /// How the offline agent may search (`auto` when absent).
    pub search: NeedleSearch,
    /// Paraphrased questions and key-sharing distractors.
    pub paraphrase: bool,
    /// Correct every needle later in the trace; the latest value is the answer.
    pub corrected: bool,
    /// Ask right after the k-th summarization after the planting (overrides `ask_at`).
    pub fold: Option<usize>,
    /// Seed of what is planted (the runner gives the units that pair across variants the same
    /// one, so every variant is asked the same questions); `None`: the unit's seed.
    pub plant_seed: Option<u64>,
    /// Hold the offload store in memory (the agent's tools read it there; [`Prepared::store_files`]
    /// holds its files, for the caller to keep: the runner appends them to the run's pack file,
    /// `runner::stores`). False: the store is written under `store_root` as the replay goes.
    pub pack_store: bool,
}

impl NeedleParams {
    /// Read a unit's params (typed once in [`crate::evalspec::needle::NeedleParams`], with its
    /// defaults: `position` tool, `max_steps` 8, `ask_at` end, …).
    pub fn from_params(p: &BTreeMap<String, Value>) -> Result<Self, EvalError> {
        use crate::evalspec::needle::{self as spec, NeedlePosition};
        let t: spec::NeedleParams =
            crate::evalspec::from_params(p).map_err(|source| EvalError::Params {
                eval: "needle",
                source,
            })?;
        if t.fold == Some(0) {
            return Err(EvalError::Config(
                "needle param `fold`: expected a fold number of at least 1".into(),
            ));
        }
        Ok(NeedleParams {
            depth: t.depth,
            position: match t.position {
                NeedlePosition::User => Position::User,
                NeedlePosition::Tool => Position::Tool,
                NeedlePosition::Assistant => Position::Assistant,
            },
            trigger: t.trigger,
            needles: t.needles as usize,
            distractors: t.distractors as usize,
            max_steps: t.max_steps,
            max_output_tokens: crate::evalspec::output_limit(
                t.max_output_tokens,
                spec::MAX_OUTPUT_TOKENS,
            ),
            ask_at: match t.ask_at {
                spec::AskAt::End => AskAt::End,
                spec::AskAt::Call(i) => AskAt::Call(i as usize),
            },
            search: t.search,
            paraphrase: t.paraphrase,
            corrected: t.corrected,
            fold: t.fold.map(|k| k as usize),
            plant_seed: None,
            pack_store: false,
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
    /// What was planted where: needles first (in planting order), then distractors.
    pub facts: Vec<Fact>,
    /// The replay up to the question point (its kept view moved out into the conversations).
    pub replay: engine::Replay,
    conversations: Mutex<Shelf>,
    /// Messages of the view at the question point.
    pub view_len: usize,
    /// Messages of the planted trace before the question point (the reference's length).
    pub cut: usize,
    pub store_root: PathBuf,
    /// The store's files when it was held in memory (`NeedleParams::pack_store`).
    pub store_files: Option<Arc<MemFiles>>,
    /// Summarizations after the (last) needle that the view went through; with `fold = k`,
    /// `Some(k)` when reached.
    pub folds: usize,
    /// False when `fold = k` asked for more folds than the replay made (nothing is asked).
    pub reached: bool,
    pub fold: Option<usize>,
    /// Why nothing was planted: the trace has no message of the needle's `position` (a trace
    /// without tool calls and `position = "tool"`). Nothing is asked; the unit records
    /// `not_applicable` = 1 and no recall (not a failure).
    pub not_applicable: Option<String>,
}

/// The two conversations a sample's questions are asked on. They hold the whole planted
/// history, so the sample owns them and lends them to each question's requests (both shared
/// by [`agent::run_after`]; never copied for the offline agent, whose answers and counts of
/// shared messages are remembered while they live).
#[derive(Debug, Default)]
pub struct Conversations {
    /// The request the agent would have been sent at the question point, its messages
    /// shared with the replay's state (asked with [`agent::run_after`], never copied for the
    /// offline agent).
    pub view: Vec<Arc<Message>>,
    /// The same point with no compression: the planted trace up to the question, its
    /// messages shared with the loaded trace (asked with [`agent::run_after`], never copied
    /// for the offline agent).
    pub reference: Vec<Arc<Message>>,
}

/// Where the conversations are kept, and whether they are lent out right now.
#[derive(Default)]
struct Shelf {
    conversations: Conversations,
    lent: bool,
}

/// Conversations lent out of a [`Prepared`]; put back when dropped (also when `ask` fails).
struct Lent<'a> {
    home: &'a Mutex<Shelf>,
    conversations: Conversations,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        let mut shelf = self.home.lock().unwrap_or_else(|e| e.into_inner());
        shelf.conversations = std::mem::take(&mut self.conversations);
        shelf.lent = false;
    }
}

impl Prepared {
    fn new(facts: Vec<Fact>, replay: engine::Replay, conversations: Conversations) -> Self {
        Prepared {
            facts,
            replay,
            view_len: conversations.view.len(),
            cut: conversations.reference.len(),
            conversations: Mutex::new(Shelf {
                conversations,
                lent: false,
            }),
            store_root: PathBuf::new(),
            store_files: None,
            folds: 0,
            reached: true,
            fold: None,
            not_applicable: None,
        }
    }

    pub fn needles(&self) -> impl Iterator<Item = &Fact> {
        self.facts.iter().filter(|f| f.is_needle)
    }

    fn lend(&self) -> Result<Lent<'_>, EvalError> {
        let mut shelf = self.conversations.lock().unwrap_or_else(|e| e.into_inner());
        if shelf.lent {
            return Err(EvalError::Config(
                "a needle sample is being asked twice at once".into(),
            ));
        }
        shelf.lent = true;
        Ok(Lent {
            home: &self.conversations,
            conversations: std::mem::take(&mut shelf.conversations),
        })
    }
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
    prepare_shared(
        trace, config, params, summarizer, prices, store_root, seed, None,
    )
}

/// [`prepare`], the replay forked from the walk of `share` at the planting point when it can
/// be (the part before it is the same for every unit of the trace × variant; see
/// [`crate::evals::prefixes`]); the result is the same either way.
#[allow(clippy::too_many_arguments)]
pub fn prepare_shared(
    trace: &Trace,
    config: &ResolvedConfig,
    params: &NeedleParams,
    summarizer: &dyn Summarizer,
    prices: &PriceTable,
    store_root: PathBuf,
    seed: u64,
    share: Option<(&Prefixes, &WalkKey)>,
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
    // The loaded trace's messages behind `Arc`s: with shared prefixes, the same list for every
    // unit of the trace (and its walks), so planting copies only the messages it changes and a
    // fork recognizes the prefix's messages by pointer.
    let shared: Arc<[Arc<Message>]> = match share {
        Some((prefixes, key)) if prefixes.enabled() => prefixes.messages(key.trace, trace),
        _ => trace.messages.iter().cloned().map(Arc::new).collect(),
    };
    // A needle's position the trace has no message of (tool results in a trace without tool
    // calls): the sample does not apply to it. The unit replays the trace as it is (its tokens
    // are those of any unit) and asks nothing.
    if let Some(reason) = plant::missing_position(&shared, params.position, params.depth) {
        let mut env = ReplayEnv::new(summarizer);
        env.prices = Some(prices);
        env.seed = seed;
        let replay = engine::replay_shared(&trace.meta, &trace.markers, &shared, &config, &env)
            .map_err(EvalError::Engine)?;
        return Ok(Prepared {
            store_root,
            reached: false,
            fold: params.fold,
            not_applicable: Some(reason),
            ..Prepared::new(Vec::new(), replay, Conversations::default())
        });
    }
    let planted = plant::plant_shared(
        &shared,
        &trace.markers,
        &PlantSpec {
            depth: params.depth,
            position: params.position,
            needles: params.needles,
            distractors: params.distractors,
            seed: params.plant_seed.unwrap_or(seed),
            paraphrase: params.paraphrase,
            corrected: params.corrected,
        },
    )
    .map_err(EvalError::Config)?;
    // A list of this unit's own: its messages are now the planted list's alone.
    drop(shared);
    let plant::PlantedMessages {
        messages: mut planted_messages,
        markers: planted_markers,
        facts,
    } = planted;
    let mut env = ReplayEnv::new(summarizer);
    env.prices = Some(prices);
    env.seed = seed;
    let after = facts
        .iter()
        .filter(|f| f.is_needle)
        .map(|f| f.index)
        .max()
        .unwrap_or(0);
    let ask_at = match params.fold {
        None => params.ask_at,
        Some(k) => {
            // A first replay (store in memory) finds the model call of the k-th fold.
            let full = engine::replay_shared(
                &trace.meta,
                &planted_markers,
                &planted_messages,
                &config,
                &env,
            )
            .map_err(EvalError::Engine)?;
            let folds = fold_calls(&full, after);
            match folds.get(k - 1) {
                Some(&call) => AskAt::Call(assistants_before(&planted_messages, call)),
                None => {
                    let empty = Conversations::default();
                    return Ok(Prepared {
                        store_root,
                        folds: folds.len(),
                        reached: false,
                        fold: Some(k),
                        ..Prepared::new(facts, full, empty)
                    });
                }
            }
        }
    };
    let cut = cut_at(&planted_messages, ask_at);
    env.store = if params.pack_store {
        StoreTarget::Memory
    } else {
        StoreTarget::Dir(store_root.clone())
    };
    env.keep_views = KeepViews::LastShared;
    // The planted messages before the question, followed by the synthetic probe call (the
    // engine builds the view for that call: exactly what the agent would be sent next); the
    // reference is the planted trace itself, still in its `Arc`s (most shared with the loaded
    // trace: copying them, and freeing the copy, was some 7% of an offline sweep).
    let cut_short = planted_messages.len() > cut;
    planted_messages.truncate(cut);
    let mut messages = planted_messages;
    messages.push(Arc::new(probe_call()));
    let markers: Vec<_> = planted_markers
        .iter()
        .filter(|m| !cut_short || m.index <= cut)
        .cloned()
        .collect();
    // Messages before the first one planting changed are the loaded trace's.
    let planted_from = facts
        .iter()
        .flat_map(|f| [Some(f.index), f.corrected_at])
        .flatten()
        .min()
        .unwrap_or(cut)
        .min(cut);
    let forked = match share {
        Some((prefixes, key)) if params.fold.is_none() => {
            let walk_env = ReplayEnv {
                store: StoreTarget::Memory,
                keep_views: KeepViews::LastShared,
                prices: Some(prices),
                ..ReplayEnv::new(summarizer)
            };
            prefixes
                .fork(
                    key,
                    trace,
                    &messages,
                    planted_from,
                    &config,
                    &walk_env,
                    seed,
                )
                .map_err(EvalError::Engine)?
        }
        _ => None,
    };
    let replay = match forked {
        Some(f) => f.finish(&trace.meta, &messages, &config, &env),
        None => engine::replay_shared(&trace.meta, &markers, &messages, &config, &env),
    };
    messages.pop();
    let reference = messages;
    let mut replay = replay.map_err(EvalError::Engine)?;
    let view = replay
        .views
        .pop()
        .map(|v| v.shared)
        .ok_or(EvalError::Replay("the replay kept no view to ask from"))?;
    let store_files = params
        .pack_store
        .then(|| Arc::new(replay.store.materialize()));
    Ok(Prepared {
        folds: fold_calls(&replay, after).len(),
        store_root,
        store_files,
        fold: params.fold,
        ..Prepared::new(facts, replay, Conversations { view, reference })
    })
}

/// Model calls (trace indexes) at which a summarization happened after trace index `after`.
pub fn fold_calls(replay: &engine::Replay, after: usize) -> Vec<usize> {
    let mut calls: Vec<usize> = replay
        .events
        .iter()
        .filter(|e| matches!(e.detail, EventDetail::Summarized(_)) && e.trace_index > after)
        .map(|e| e.trace_index)
        .collect();
    calls.dedup();
    calls
}

/// Number of assistant messages (model calls) before trace index `index`.
fn assistants_before(messages: &[Arc<Message>], index: usize) -> usize {
    messages[..index.min(messages.len())]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

/// Number of messages of `trace` before the question point: all of them for [`AskAt::End`],
/// those before the `n`-th assistant message for [`AskAt::Call`] (all when there are fewer).
pub fn question_cut(trace: &Trace, ask_at: AskAt) -> usize {
    cut_at(&trace.messages, ask_at)
}

/// [`question_cut`] of a list of messages.
fn cut_at<M: std::borrow::Borrow<Message>>(messages: &[M], ask_at: AskAt) -> usize {
    let all = messages.len();
    match ask_at {
        AskAt::End => all,
        AskAt::Call(n) => messages
            .iter()
            .map(|m| m.borrow())
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant)
            .nth(n)
            .map_or(all, |(i, _)| i),
    }
}

/// The trace up to the question point, ending in a synthetic assistant message: the engine
/// builds the view for that call, which is exactly what the agent would be sent next.
pub fn question_point(trace: &Trace, ask_at: AskAt) -> Trace {
    let cut = question_cut(trace, ask_at);
    let mut t = trace.clone();
    if cut < t.messages.len() {
        t.messages.truncate(cut);
        t.markers.retain(|m| m.index <= cut);
    }
    t.messages.push(probe_call());
    t
}

/// The synthetic assistant message appended at the question point: the engine builds the view
/// for that call, which is exactly what the agent would be sent next.
fn probe_call() -> Message {
    let mut probe = Message::assistant("", vec![]);
    probe.kind = Some("probe".into());
    probe
}

/// One question's result.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    pub key: String,
    /// The question as the agent was asked it (the report shows it).
    pub question: String,
    pub expected: String,
    pub recovered: bool,
    /// The superseded value of a corrected needle (asked after the correction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_value: Option<String>,
    /// The answer states the superseded value and not the latest one.
    pub stale: bool,
    /// The line stating the expected value was still verbatim in the view.
    pub in_view: bool,
    #[serde(flatten)]
    pub outcome: LoopOutcome,
    /// The same question on the uncompressed history.
    pub reference: Option<ReferenceAnswer>,
}

/// The answer on the uncompressed history; `error` when it could not be had (a model whose
/// context the full history overflows): the reference is then missing, never counted as 0.
#[derive(Clone, Debug, Serialize)]
pub struct ReferenceAnswer {
    pub recovered: bool,
    pub answer: String,
    /// What the reference question cost (spent on top of the probe's own tokens: counted in
    /// the unit's eval-agent tokens and cost, and apart in `reference_*_tokens`).
    #[serde(skip)]
    pub usage: Calls,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Ask for every needle with the agent. Questions are independent conversations.
///
/// `search` steers the offline agent only (a bounded stand-in for a model); any other agent
/// always gets the search tools.
pub async fn ask(
    prepared: &Prepared,
    agent: &dyn Provider,
    max_steps: u32,
    max_output_tokens: u32,
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
    if !prepared.reached {
        return Ok(Vec::new());
    }
    let sandbox = match &prepared.store_files {
        Some(files) => Sandbox::in_memory(&prepared.store_root, files.clone(), Limits::default()),
        None => Sandbox::new(&prepared.store_root).map_err(EvalError::from)?,
    };
    let cut = prepared.cut;
    // Every question is asked on the two conversations in turn, lent out of the sample.
    let mut lent = prepared.lend()?;
    let Conversations {
        view,
        reference: history,
    } = &mut lent.conversations;
    let mut answers = Vec::new();
    for fact in prepared.needles() {
        let (expected, stale_value) = fact.expected_before(cut);
        let question = Message::user(format!("{PROBE_PREAMBLE}\n\n{}", fact.question()));
        let in_view = line_in_view(view, fact, cut);
        // The reference question does not depend on the compacted one (its own conversation,
        // no tools): both are asked at once, so a unit waits on one round of calls, not two.
        let question_nonce = format!("{nonce}/{}", fact.key);
        let reference_nonce = format!("{nonce}/reference/{}", fact.key);
        let (outcome, reference) = tokio::join!(
            agent::run_after(
                agent,
                Asking::Recall,
                view,
                question.clone(),
                Some(&sandbox),
                max_steps,
                Some(max_output_tokens),
                &question_nonce,
            ),
            agent::run_after(
                agent,
                Asking::Recall,
                history,
                question,
                None,
                max_steps,
                Some(max_output_tokens),
                &reference_nonce,
            )
        );
        let outcome = outcome?;
        // The uncompressed history offloaded nothing: the reference has no store to search,
        // so its agent gets no tools (a search bound would only spend steps on nothing).
        let reference = match reference {
            Ok(r) => ReferenceAnswer {
                recovered: plant::recovered(&r.answer, expected),
                answer: r.answer,
                usage: r.usage,
                error: None,
            },
            // The full history may not fit a small model's context: that reference is missing
            // (recorded, never 0). Any other failure fails the unit like the question itself,
            // so `--resume --retry-failed` runs it again.
            Err(e @ ProviderError::ContextOverflow { .. }) => ReferenceAnswer {
                recovered: false,
                answer: String::new(),
                usage: Calls::default(),
                error: Some(e.to_string()),
            },
            Err(e) => return Err(e.into()),
        };
        let recovered = plant::recovered(&outcome.answer, expected);
        answers.push(Answer {
            key: fact.key.clone(),
            question: fact.question().to_string(),
            expected: expected.to_string(),
            recovered,
            stale: !recovered && stale_value.is_some_and(|v| plant::recovered(&outcome.answer, v)),
            stale_value: stale_value.map(str::to_string),
            in_view,
            outcome,
            reference: Some(reference),
        });
    }
    Ok(answers)
}

/// The line stating the value a question at `cut` expects is verbatim in the view.
fn line_in_view(view: &[Arc<Message>], fact: &Fact, cut: usize) -> bool {
    let line = match fact.expected_before(cut) {
        (_, Some(_)) => fact.correction_line().unwrap_or_else(|| fact.line()),
        _ => fact.line(),
    };
    view.iter().any(|m| m.content.contains(&line))
}

/// Scores and evidence of a finished needle sample.
pub fn score(prepared: &Prepared, answers: &[Answer]) -> (BTreeMap<String, f64>, Value) {
    let n = answers.len().max(1) as f64;
    // The questions' calls alone (`probe_*_tokens`; what every call of the eval agent spent,
    // the references' too, is the unit's ledger's: `executors::unit`).
    let mut usage = Usage::default();
    for a in answers {
        usage.add(&a.outcome.usage.total());
    }
    let mean = |f: &dyn Fn(&Answer) -> f64| answers.iter().map(f).sum::<f64>() / n;
    let mut scores = BTreeMap::new();
    if let Some(reason) = &prepared.not_applicable {
        scores.insert("not_applicable".into(), 1.0);
        let evidence = json!({"not_applicable": reason});
        return (scores, evidence);
    }
    // 0 on every unit it applies to, so its mean is the share of units not applicable (as
    // `not_reached` and `step_limit`), not 1.000 over the not applicable ones alone.
    scores.insert("not_applicable".into(), 0.0);
    if prepared.fold.is_some() {
        scores.insert("not_reached".into(), (!prepared.reached) as u8 as f64);
    }
    if !prepared.reached {
        let evidence = json!({
            "reached": false,
            "folds_after_needle": prepared.folds,
            "facts": facts_json(prepared),
        });
        return (scores, evidence);
    }
    scores.insert("recall".into(), mean(&|a| a.recovered as u8 as f64));
    let refs: Vec<bool> = answers
        .iter()
        .filter_map(|a| a.reference.as_ref().filter(|r| r.error.is_none()))
        .map(|r| r.recovered)
        .collect();
    // Only when every question has its reference: a partial one would not pair with recall.
    if !answers.is_empty() && refs.len() == answers.len() {
        let reference = refs.iter().filter(|r| **r).count() as f64 / n;
        scores.insert("reference_recall".into(), reference);
        scores.insert("recall_delta".into(), scores["recall"] - reference);
    }
    let corrected: Vec<&Answer> = answers.iter().filter(|a| a.stale_value.is_some()).collect();
    if !corrected.is_empty() {
        let stale = corrected.iter().filter(|a| a.stale).count() as f64;
        scores.insert("stale".into(), stale / corrected.len() as f64);
    }
    scores.insert("in_view".into(), mean(&|a| a.in_view as u8 as f64));
    scores.insert("steps".into(), mean(&|a| a.outcome.steps as f64));
    // Decision: a question whose agent ran out of `max_steps` before answering stays scored
    // (not recovered: compression that makes the store too hard to search within the budget
    // is what the eval measures, and leaving such units out of the statistics would hide it),
    // but the sample is flagged with the count, as the report and the end of the run say.
    // Written for every unit, 0 included, so its mean is over every unit, not the flagged ones.
    let step_limit = answers.iter().filter(|a| a.outcome.hit_step_limit).count();
    scores.insert("step_limit".into(), step_limit as f64);
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
    let mut reference_usage = Usage::default();
    for r in answers.iter().filter_map(|a| a.reference.as_ref()) {
        reference_usage.add(&r.usage.total());
    }
    scores.insert(
        "reference_input_tokens".into(),
        reference_usage.input as f64,
    );
    scores.insert(
        "reference_output_tokens".into(),
        reference_usage.output as f64,
    );
    let evidence = json!({
        "facts": facts_json(prepared),
        "answers": answers,
        "view_messages": prepared.view_len,
        "reference_messages": prepared.cut,
        "folds_after_needle": prepared.folds,
        "store_files": prepared.replay.store.writes().len(),
    });
    (scores, evidence)
}

fn facts_json(prepared: &Prepared) -> Vec<Value> {
    prepared
        .facts
        .iter()
        .map(|f| {
            let mut v = json!({"key": f.key, "value": f.value, "trace_index": f.index,
                   "position": f.position.as_str(), "needle": f.is_needle});
            if let (Some(old), Some(at)) = (&f.stale, f.corrected_at) {
                v["first_value"] = json!(old);
                v["corrected_at"] = json!(at);
            }
            v
        })
        .collect()
}

#[cfg(test)]
mod tests;
