//! `[evals.continuation]`: the next recorded tool calls predicted after each fold (one sample
//! per fold).

use super::{after_compactions, yes, EvalSample, EvalSection, Problem};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use crate::evalspec::continuation::{default_steps as default_continuation_steps, ContinuationParams};

/// `[evals.continuation]`: after the k-th compaction, the next recorded tool calls predicted
/// with teacher forcing, against the recorded calls and against the uncompressed view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContinuationEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// One sample per fold: after the 1st, 2nd, …, Nth compaction of a replay.
    #[serde(default = "after_compactions")]
    pub after_compactions: u32,
    /// Recorded model calls (with tool calls) predicted after each fold.
    #[serde(default = "default_continuation_steps")]
    pub steps: u32,
    /// Output limit (tokens) of each of this eval's answers; default 300. The agent
    /// provider's `max_tokens` wins when larger, and an OpenAI reasoning model without one gets
    /// 25,000 more for its hidden reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}
impl EvalSection for ContinuationEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, err: Problem<'_>) {
        super::check_folds(self.after_compactions, &mut *err);
        if self.steps == 0 {
            err(&["steps"], "`steps` must be at least 1".into());
        }
        super::check_output_limit(self.max_output_tokens, &mut *err);
    }

    /// One sample per fold, so reports can plot agreement by fold.
    fn samples(&self, name: &str) -> Vec<EvalSample> {
        let params = |fold| ContinuationParams {
            fold,
            steps: self.steps,
            max_output_tokens: self.max_output_tokens,
        };
        super::per_fold(name, self.after_compactions, params, false)
    }
}
