//! `[evals.rules]`: the standing-instruction eval's suite section (kept beside `suite.rs` so
//! that file stays one screenful per concept).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

fn all_kinds() -> Vec<RuleKind> {
    RuleKind::ALL.to_vec()
}

fn three() -> u32 {
    3
}

fn yes() -> bool {
    true
}

/// `[evals.rules]`: standing instructions planted early (one user turn per kind, seeded), then
/// checked after each of the first N compactions: does the compacted view still state each
/// rule, and does the agent, asked which constraints apply, restate it? One sample per fold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RulesEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Kinds of rule to plant, one user turn each, right after the opening request.
    #[serde(default = "all_kinds")]
    pub kinds: Vec<RuleKind>,
    /// One sample per fold: after the 1st, 2nd, …, Nth compaction of a replay.
    #[serde(default = "three")]
    pub after_compactions: u32,
    /// Also grade the agent's restatement with the judge provider (0–5, fixed rubric).
    #[serde(default)]
    pub judge: bool,
}
