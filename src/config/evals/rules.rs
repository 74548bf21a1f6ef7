//! `[evals.rules]`: the standing-instruction eval's suite section, its checks and its samples
//! (one per fold).

use super::{after_compactions, yes, EvalSample, EvalSection, Problem};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use crate::evalspec::rules::{RuleKind, RulesParams};

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
        let params = |fold| RulesParams {
            fold,
            kinds: self.kinds.clone(),
            judge: self.judge,
        };
        super::per_fold(name, self.after_compactions, params, self.judge)
    }
}
