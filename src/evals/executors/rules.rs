//! `rules`: standing instructions planted early, checked after the k-th compaction (does the
//! view still state them, does the agent restate them; the judge grades when asked for).

use super::{Eval, Ready, UnitCx};
use crate::evals::{rules, EvalError};
use crate::runner::UnitOutput;

pub struct Rules;

impl Eval for Rules {
    const NAME: &'static str = "rules";

    async fn run(cx: &UnitCx<'_>) -> Result<UnitOutput, EvalError> {
        let params = rules::RulesParams::from_params(&cx.unit.params)?;
        let (prepared, mut out) = match cx.prepare(&params, rules::prepare).await? {
            Ready::Ask(prepared, out) => (prepared, out),
            Ready::Done(out) => return Ok(out),
        };
        let agent = cx.agent()?;
        let agent = agent.as_ref();
        let judge = cx.judge(params.judge)?;
        let judge = judge.as_deref();
        let answer = rules::ask(
            &prepared.probe,
            agent,
            judge,
            params.max_output_tokens,
            &cx.nonce,
        ).await?;
        let (scores, evidence) = rules::score(&params, &prepared.probe, answer.as_ref());
        out.scores.extend(scores);
        out.evidence = evidence;
        Ok(out)
    }
}
