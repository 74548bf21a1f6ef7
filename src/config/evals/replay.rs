//! `[evals.replay]`: plain replay of every trace through every variant (on by default).

use super::{yes, EvalSample, EvalSection, Problem};
use crate::config::suite::ProviderRole;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[evals.replay]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayEval {
    #[serde(default = "yes")]
    pub enabled: bool,
}

impl Default for ReplayEval {
    fn default() -> Self {
        ReplayEval { enabled: true }
    }
}

impl EvalSection for ReplayEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, _err: Problem<'_>) {}

    fn samples(&self, name: &str) -> Vec<EvalSample> {
        vec![EvalSample::single(name, vec![ProviderRole::Summary])]
    }
}
