//! `[evals.invariants]`: the engine's rules checked on every replay (no model call).

use super::{yes, EvalSample, EvalSection, Problem};
use crate::config::suite::ProviderRole;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[evals.invariants]`: the engine's rules checked on every replay (no LLM).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvariantsEval {
    #[serde(default = "yes")]
    pub enabled: bool,
}

impl EvalSection for InvariantsEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, _err: Problem<'_>) {}

    fn samples(&self, name: &str) -> Vec<EvalSample> {
        vec![EvalSample::single(name, vec![ProviderRole::Summary])]
    }
}
