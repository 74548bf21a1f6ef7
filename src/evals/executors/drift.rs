//! `drift`: after the k-th compaction, ask the agent for the goal, progress and next step, and
//! score the answers against the trace (and the judge's rubric when asked for).

use super::{Eval, Ready, UnitCx};
use crate::evals::{drift, EvalError};
use crate::runner::UnitOutput;

pub struct Drift;

impl Eval for Drift {
    const NAME: &'static str = "drift";

    async fn run(cx: &UnitCx<'_>) -> Result<UnitOutput, EvalError> {
        let params = drift::DriftParams::from_params(&cx.unit.params)?;
        let ((_, views), mut out) = match cx.prepare(&params, drift::prepare).await? {
            Ready::Ask(prepared, out) => (prepared, out),
            Ready::Done(out) => return Ok(out),
        };
        let agent = cx.agent()?;
        let agent = agent.as_ref();
        let judge = cx.judge(params.judge)?;
        let judge = judge.as_deref();
        let probes =
            drift::ask(
                cx.trace(),
                &views,
                agent,
                judge,
                params.max_output_tokens,
                &cx.nonce,
            ).await?;
        let (scores, evidence) = match params.fold {
            Some(k) => drift::aggregate_fold(k, &probes),
            None => drift::aggregate(&probes),
        };
        out.scores.extend(scores);
        out.evidence = evidence;
        Ok(out)
    }
}
