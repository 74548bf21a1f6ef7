//! `[evals.drift]`: goal, progress and next step probed after each compaction (one sample
//! per fold).

use super::{after_compactions, yes, EvalSample, EvalSection, Problem};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use crate::evalspec::drift::DriftParams;

/// `[evals.drift]`: probe goal, progress and next step after each compaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DriftEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Probe after each of the first N compactions of a replay.
    #[serde(default = "after_compactions")]
    pub after_compactions: u32,
    /// Also score with the judge provider (rubric 0–5); deterministic scores are always kept.
    #[serde(default)]
    pub judge: bool,
    /// Output limit (tokens) of each of this eval's answers; default 400. The agent
    /// provider's `max_tokens` wins when larger, and an OpenAI reasoning model without one gets
    /// 25,000 more for its hidden reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}
impl EvalSection for DriftEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, err: Problem<'_>) {
        super::check_folds(self.after_compactions, &mut *err);
        super::check_output_limit(self.max_output_tokens, &mut *err);
    }

    /// One sample per fold, so reports can plot drift by fold.
    fn samples(&self, name: &str) -> Vec<EvalSample> {
        let params = |fold| DriftParams {
            after_compactions: self.after_compactions,
            judge: self.judge,
            fold: Some(fold),
            max_output_tokens: self.max_output_tokens,
        };
        super::per_fold(name, self.after_compactions, params, self.judge)
    }
}
