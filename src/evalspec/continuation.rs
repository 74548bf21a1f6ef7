//! `continuation`: a sample's typed params (one sample per fold) and the eval's metrics.

use super::MetricKind::{Count, Fraction, Score};
use super::{higher, neutral, EvalSpec};
use serde::{Deserialize, Serialize};

pub const SPEC: EvalSpec = EvalSpec {
    name: "continuation",
    metrics: &[
        // Recorded steps found after the fold (at most `params.steps`).
        neutral("steps", Count),
        higher("agreement", Fraction),
        higher("tool_agreement", Fraction),
        higher("target_agreement", Fraction),
        higher("reference_agreement", Fraction),
        higher("reference_tool_agreement", Fraction),
        higher("reference_target_agreement", Fraction),
        higher("agreement_delta", Score),
    ],
    headline_rank: 3,
};

fn one() -> u32 {
    1
}
/// Recorded model calls predicted after each fold when the section does not say.
pub fn default_steps() -> u32 {
    3
}

/// Output limit of each predicted step when the section sets no `max_output_tokens`.
pub const MAX_OUTPUT_TOKENS: u32 = 300;

/// One continuation sample's params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContinuationParams {
    /// The compaction after which the steps are predicted (from 1).
    #[serde(default = "one")]
    pub fold: u32,
    #[serde(default = "default_steps")]
    pub steps: u32,
    /// Output limit of each answer (`None`: the eval's default, [`MAX_OUTPUT_TOKENS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}
