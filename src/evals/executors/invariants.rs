//! `invariants`: the engine's rules checked on the variant's replay (no model call); a unit
//! passes when no rule was violated.

use super::replay::{evidence, plain};
use super::{Eval, UnitCx};
use crate::evals::EvalError;
use crate::runner::UnitOutput;

pub struct Invariants;

impl Eval for Invariants {
    const NAME: &'static str = "invariants";

    async fn run(cx: &UnitCx<'_>) -> Result<UnitOutput, EvalError> {
        let (replay, mut out) = plain(cx).await?;
        let violations = &replay.invariants.violations;
        out.passed = Some(violations.is_empty());
        out.scores
            .insert("violations".into(), violations.len() as f64);
        out.evidence = evidence(&replay);
        Ok(out)
    }
}
