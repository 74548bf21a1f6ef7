//! `[evals.probes]`: questions generated from the trace, one sample per probe kind.

use super::{one, yes, EvalSample, EvalSection, Problem};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use crate::evalspec::probes::{ProbeKind, ProbeParams};

fn default_probe_kinds() -> Vec<ProbeKind> {
    vec![
        ProbeKind::Recall,
        ProbeKind::Artifact,
        ProbeKind::Continuation,
        ProbeKind::Decision,
    ]
}

/// `[evals.probes]`: Factory-style questions generated from the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbesEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "default_probe_kinds")]
    pub kinds: Vec<ProbeKind>,
    /// Questions per kind and trace.
    #[serde(default = "one")]
    pub per_kind: u32,
    /// Score with the judge provider (0–5) where no deterministic check exists.
    #[serde(default)]
    pub judge: bool,
    /// Output limit (tokens) of each of this eval's answers; default 200 for a recalled value, 300 for a decision, 400 for the structured answer. The agent
    /// provider's `max_tokens` wins when larger, and an OpenAI reasoning model without one gets
    /// 25,000 more for its hidden reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

impl EvalSection for ProbesEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, err: Problem<'_>) {
        if self.kinds.is_empty() {
            err(&["kinds"], "`kinds` must not be empty".into());
        }
        super::check_distinct("kinds", &self.kinds, |k| format!("\"{}\"", k.as_str()), &mut *err);
        if self.per_kind == 0 {
            err(&["per_kind"], "`per_kind` must be at least 1".into());
        }
        super::check_output_limit(self.max_output_tokens, &mut *err);
    }

    /// One sample per probe kind.
    fn samples(&self, name: &str) -> Vec<EvalSample> {
        self.kinds
            .iter()
            .map(|kind| {
                let params = crate::evalspec::to_params(&ProbeParams {
                    kind: *kind,
                    per_kind: self.per_kind,
                    judge: self.judge,
                    max_output_tokens: self.max_output_tokens,
                });
                EvalSample {
                    eval: name.into(),
                    sample: format!("kind={}", kind.as_str()),
                    params,
                    providers: super::asking(self.judge),
                }
            })
            .collect()
    }
}
