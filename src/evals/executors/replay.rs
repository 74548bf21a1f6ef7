//! `replay`: the variant's replay of the trace, scored by its own numbers (tokens against the
//! uncompressed reference, calls, compactions, futile compactions, invariant violations).

use super::{Eval, UnitCx};
use crate::engine;
use crate::evals::EvalError;
use crate::runner::UnitOutput;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub struct Replay;

impl Eval for Replay {
    const NAME: &'static str = "replay";

    async fn run(cx: &UnitCx<'_>) -> Result<UnitOutput, EvalError> {
        let (replay, mut out) = plain(cx).await?;
        replay_scores(&replay, &mut out.scores);
        out.evidence = evidence(&replay);
        Ok(out)
    }
}

/// The plain replay and its base output (shared with `invariants`).
pub(super) async fn plain(cx: &UnitCx<'_>) -> Result<(engine::Replay, UnitOutput), EvalError> {
    let replay = cx
        .replay(|p| {
            let mut env = engine::ReplayEnv::new(p.summarizer.as_ref());
            env.prices = Some(&p.prices);
            env.store = engine::StoreTarget::Dir(p.store);
            env.seed = p.seed;
            engine::replay(&p.trace, &p.config, &env).map_err(EvalError::Engine)
        })
        .await?;
    let out = cx.base(&replay)?;
    Ok((replay, out))
}

/// The replay's invariant check, as `replay` and `invariants` samples record it.
pub(super) fn evidence(replay: &engine::Replay) -> Value {
    let inv = &replay.invariants;
    json!({
        "violations": inv.violations.iter().take(20).collect::<Vec<_>>(),
        "violations_total": inv.violations.len(),
        "trace_defects": inv.trace_defects.len(),
        "calls_checked": inv.calls_checked,
        // Calls larger than without compression (a flag, not a violation) and the first one.
        "flagged_calls": inv.flagged_calls,
        "first_flag": inv.first_flag,
        "stopped": replay.stopped,
    })
}

/// The replay's own scores (only for `replay` units: other evals report what they measure, and
/// their tokens and cost are in the sample's token and cost fields).
fn replay_scores(replay: &engine::Replay, scores: &mut BTreeMap<String, f64>) {
    let input: u64 = replay.calls.iter().map(|c| c.input_tokens).sum();
    let reference: u64 = replay.calls.iter().map(|c| c.reference_tokens).sum();
    scores.insert("input_tokens".into(), input as f64);
    scores.insert("reference_tokens".into(), reference as f64);
    if reference > 0 {
        scores.insert(
            "token_savings".into(),
            1.0 - input as f64 / reference as f64,
        );
    }
    scores.insert("calls".into(), replay.calls.len() as f64);
    scores.insert(
        "compactions".into(),
        replay.events.iter().filter(|e| e.persistent).count() as f64,
    );
    scores.insert(
        "futile_compactions".into(),
        replay.futile_compactions() as f64,
    );
    scores.insert(
        "invariant_violations".into(),
        replay.invariants.violations.len() as f64,
    );
}
