//! `needle`: plant facts (seeded per pair of units, so every variant is asked the same), replay,
//! ask the agent for them back, score recall.

use super::{Eval, Ready, UnitCx};
use crate::evals::prefixes::WalkKey;
use crate::evals::{needle, EvalError};
use crate::runner::UnitOutput;

pub struct Needle;

impl Eval for Needle {
    const NAME: &'static str = "needle";

    async fn run(cx: &UnitCx<'_>) -> Result<UnitOutput, EvalError> {
        let mut params = needle::NeedleParams::from_params(&cx.unit.params)?;
        params.plant_seed = Some(cx.unit.pair_seed);
        // The store stays in memory while the unit runs; the runner writes it if it may be kept.
        params.pack_store = true;
        let share = cx.prefixes().map(|p| {
            let key = WalkKey {
                trace: cx.unit.trace,
                variant: cx.unit.variant_index,
                extra: params.trigger.map(f64::to_bits),
            };
            (p, key)
        });
        let p = params.clone();
        let ready = cx
            .prepare_by(move |r| {
                let prepared = needle::prepare_shared(
                    &r.trace,
                    &r.config,
                    &p,
                    r.summarizer.as_ref(),
                    &r.prices,
                    r.store,
                    r.seed,
                    share.as_ref().map(|(p, k)| (p.as_ref(), k)),
                )?;
                if let Some(files) = &prepared.store_files {
                    r.held.hold(files.clone());
                }
                Ok(prepared)
            })
            .await?;
        let (prepared, mut out) = match ready {
            Ready::Ask(prepared, out) => (prepared, out),
            Ready::Done(out) => return Ok(out),
        };
        let agent = cx.agent()?;
        let answers = needle::ask(
            &prepared,
            agent.as_ref(),
            params.max_steps,
            params.max_output_tokens,
            params.search,
            &cx.nonce,
        )
        .await?;
        // Scored, and the replay freed, on rayon's pool (in place for a unit run whole there):
        // the evidence and the replay's buffers are a unit's largest, and a tokio worker busy
        // with them does not send or read the other units' calls.
        let (scores, evidence) =
            crate::runner::cpu(move || needle::score(&prepared, &answers)).await;
        // A fold the replay never reached has no recall and no verdict.
        out.passed = scores.get("recall").map(|r| *r >= 1.0);
        out.scores.extend(scores);
        out.evidence = evidence;
        Ok(out)
    }
}
