//! `rules`: a sample's typed params (one sample per fold) and the eval's metrics.

use super::MetricKind::{Count, Fraction, Score};
use super::{headline, higher, neutral, EvalSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const SPEC: EvalSpec = EvalSpec {
    name: "rules",
    metrics: &[
        neutral("rules", Count),
        higher("retained.*", Fraction),
        higher("restated.*", Fraction),
        higher("rules_retained", Fraction),
        higher("rules_restated", Fraction),
        headline(higher("score", Score)),
        headline(higher("judge_score", Score)),
    ],
    headline_rank: 3,
};

fn one() -> u32 {
    1
}
fn all_kinds() -> Vec<RuleKind> {
    RuleKind::ALL.to_vec()
}

/// Output limit of the rules answer when the section sets no `max_output_tokens`.
pub const MAX_OUTPUT_TOKENS: u32 = 400;

/// One rules sample's params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RulesParams {
    /// The compaction after which the rules are checked (from 1).
    #[serde(default = "one")]
    pub fold: u32,
    #[serde(default = "all_kinds")]
    pub kinds: Vec<RuleKind>,
    #[serde(default)]
    pub judge: bool,
    /// Output limit of each answer (`None`: the eval's default, [`MAX_OUTPUT_TOKENS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// Kinds of standing instruction `[evals.rules]` can plant.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// "Never modify anything under `vendor/legacy/`."
    ForbidPath,
    /// "Always write your explanations to me in French."
    Language,
    /// "Never run `git push`."
    NeverCommand,
    /// "Always end your final report with a markdown table."
    AlwaysFormat,
}

impl RuleKind {
    pub const ALL: [RuleKind; 4] = [
        RuleKind::ForbidPath,
        RuleKind::Language,
        RuleKind::NeverCommand,
        RuleKind::AlwaysFormat,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::ForbidPath => "forbid_path",
            RuleKind::Language => "language",
            RuleKind::NeverCommand => "never_command",
            RuleKind::AlwaysFormat => "always_format",
        }
    }

    pub fn parse(s: &str) -> Option<RuleKind> {
        RuleKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

