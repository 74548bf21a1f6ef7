//! `drift`: a sample's typed params (one sample per fold) and the eval's metrics.

use super::MetricKind::{Count, Fraction, Score};
use super::{headline, higher, neutral, EvalSpec};
use serde::{Deserialize, Serialize};

pub const SPEC: EvalSpec = EvalSpec {
    name: "drift",
    metrics: &[
        higher("goal_coverage", Fraction),
        higher("next_tool_match", Fraction),
        higher("next_target_overlap", Fraction),
        higher("next_action_match", Fraction),
        higher("artifact_recall", Fraction),
        higher("artifact_precision", Fraction),
        headline(higher("score", Score)),
        headline(higher("judge_score", Score)),
        neutral("probes", Count),
    ],
    headline_rank: 3,
};

/// Probe after each of the first N compactions when the section does not say (shared by the
/// per-fold evals: drift, continuation, rules).
pub fn default_after_compactions() -> u32 {
    3
}

/// Output limit of each drift answer when the section sets no `max_output_tokens`.
pub const MAX_OUTPUT_TOKENS: u32 = 400;

/// One drift sample's params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftParams {
    #[serde(default = "default_after_compactions")]
    pub after_compactions: u32,
    #[serde(default)]
    pub judge: bool,
    /// The compaction this sample probes after (from 1); `None`: every one of the first N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fold: Option<u32>,
    /// Output limit of each answer (`None`: the eval's default, [`MAX_OUTPUT_TOKENS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}
