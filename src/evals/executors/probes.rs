//! `probes`: questions of one kind generated from the trace, asked after the replay, scored
//! deterministically (and by the judge where no check exists, when asked for).

use super::{Eval, Ready, UnitCx};
use crate::evals::{probes, EvalError};
use crate::runner::UnitOutput;

pub struct Probes;

impl Eval for Probes {
    const NAME: &'static str = "probes";

    async fn run(cx: &UnitCx<'_>) -> Result<UnitOutput, EvalError> {
        let params = probes::ProbeParams::from_params(&cx.unit.params)?;
        // `probes::prepare` takes no params (they only shape the asking).
        let (prepared, mut out) = match cx
            .prepare(&(), |trace, config, _, summ, prices, store, seed| {
                probes::prepare(trace, config, summ, prices, store, seed)
            })
            .await?
        {
            Ready::Ask(prepared, out) => (prepared, out),
            Ready::Done(out) => return Ok(out),
        };
        let agent = cx.agent()?;
        let agent = agent.as_ref();
        let judge = cx.judge(params.judge)?;
        let judge = judge.as_deref();
        let seed = cx.unit.seed;
        let result =
            probes::ask(cx.trace(), &prepared, params, agent, judge, seed, &cx.nonce).await?;
        out.scores.extend(result.scores);
        out.passed = result.passed;
        out.evidence = result.evidence;
        Ok(out)
    }
}
