//! `[evals.rules]`: the standing-instruction eval's suite section, its checks and its samples
//! (one per fold).

use super::{after_compactions, yes, EvalSample, EvalSection, Problem};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

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
    #[serde(default = "after_compactions")]
    pub after_compactions: u32,
    /// Also grade the agent's restatement with the judge provider (0–5, fixed rubric).
    #[serde(default)]
    pub judge: bool,
}

impl EvalSection for RulesEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, err: Problem<'_>) {
        super::check_folds(self.after_compactions, &mut *err);
        if self.kinds.is_empty() {
            err(&["kinds"], "`kinds` must not be empty".into());
        }
    }

    /// One sample per fold, like continuation.
    fn samples(&self, name: &str) -> Vec<EvalSample> {
        let kinds: Vec<Value> = self.kinds.iter().map(|k| k.as_str().into()).collect();
        let params = BTreeMap::from([
            ("kinds".to_string(), Value::Array(kinds)),
            ("judge".to_string(), self.judge.into()),
        ]);
        super::per_fold(name, self.after_compactions, params, self.judge)
    }
}
