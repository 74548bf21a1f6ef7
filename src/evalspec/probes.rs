//! `probes`: a sample's typed params (one sample per probe kind) and the eval's metrics.

use super::MetricKind::{Count, Fraction, Score};
use super::{higher, neutral, EvalSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const SPEC: EvalSpec = EvalSpec {
    name: "probes",
    metrics: &[
        neutral("questions", Count),
        neutral("steps", Count),
        higher("recall_overlap", Fraction),
        higher("artifact_recall", Fraction),
        higher("artifact_precision", Fraction),
        higher("next_tool_match", Fraction),
        higher("next_target_overlap", Fraction),
        higher("decision_match", Fraction),
        higher("decision_overlap", Fraction),
        // The judge's rubric dimensions (`judge_accuracy`, …), 0–5.
        higher("judge_*", Score),
        super::PASS,
    ],
    // No default headline metric of its own.
    headline_rank: 5,
};

fn one() -> u32 {
    1
}

/// One probe sample's params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeParams {
    pub kind: ProbeKind,
    /// Questions of this kind (when the trace offers that many candidates).
    #[serde(default = "one")]
    pub per_kind: u32,
    #[serde(default)]
    pub judge: bool,
    /// Output limit of each answer (`None`: the kind's default, [`max_output_tokens`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// Output limit of a probe answer when the section sets no `max_output_tokens`: a recalled
/// value 200, a decision 300, the structured goal/progress/next-step answer 400.
pub fn max_output_tokens(kind: ProbeKind) -> u32 {
    match kind {
        ProbeKind::Recall => 200,
        ProbeKind::Decision => 300,
        ProbeKind::Artifact | ProbeKind::Continuation => 400,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    Recall,
    Artifact,
    Continuation,
    Decision,
}

impl ProbeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Recall => "recall",
            ProbeKind::Artifact => "artifact",
            ProbeKind::Continuation => "continuation",
            ProbeKind::Decision => "decision",
        }
    }
}
