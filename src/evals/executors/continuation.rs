//! `continuation`: after the k-th compaction, the next recorded tool calls predicted from the
//! compacted view (teacher forcing), scored against the recorded calls.

use super::{Eval, Ready, UnitCx};
use crate::evals::{continuation, EvalError};
use crate::runner::UnitOutput;

pub struct Continuation;

impl Eval for Continuation {
    const NAME: &'static str = "continuation";

    async fn run(cx: &UnitCx<'_>) -> Result<UnitOutput, EvalError> {
        let params = continuation::ContinuationParams::from_params(&cx.unit.params)?;
        let ((_, view), mut out) = match cx.prepare(&params, continuation::prepare).await? {
            Ready::Ask(prepared, out) => (prepared, out),
            Ready::Done(out) => return Ok(out),
        };
        let steps = match &view {
            Some(v) => {
                let agent = cx.agent()?;
                let steps =
                    continuation::ask(
                        cx.trace(),
                        v,
                        params.steps,
                        agent.as_ref(),
                        params.max_output_tokens,
                        &cx.nonce,
                    )
                        .await?;
                steps
            }
            None => Vec::new(),
        };
        let (scores, evidence) =
            continuation::score(&params, view.as_ref().map(|v| v.trace_index), &steps);
        out.scores.extend(scores);
        out.evidence = evidence;
        Ok(out)
    }
}
