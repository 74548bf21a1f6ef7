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
    /// Output limit (tokens) of each of this eval's answers; default 400. The agent
    /// provider's `max_tokens` wins when larger, and an OpenAI reasoning model without one gets
    /// 25,000 more for its hidden reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
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
        super::check_distinct("kinds", &self.kinds, |k| format!("\"{}\"", k.as_str()), &mut *err);
        super::check_output_limit(self.max_output_tokens, &mut *err);
    }

    /// One sample per fold, like continuation.
    fn samples(&self, name: &str) -> Vec<EvalSample> {
        let params = |fold| RulesParams {
            fold,
            kinds: self.kinds.clone(),
            judge: self.judge,
            max_output_tokens: self.max_output_tokens,
        };
        super::per_fold(name, self.after_compactions, params, self.judge)
    }
}
