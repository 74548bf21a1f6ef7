//! `[evals.probes]`: questions generated from the trace, one sample per probe kind.

use super::{one, yes, EvalSample, EvalSection, Problem};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
impl EvalSection for ProbesEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, err: Problem<'_>) {
        if self.kinds.is_empty() {
            err(&["kinds"], "`kinds` must not be empty".into());
        }
        if self.per_kind == 0 {
            err(&["per_kind"], "`per_kind` must be at least 1".into());
        }
    }

    /// One sample per probe kind.
    fn samples(&self, name: &str) -> Vec<EvalSample> {
        self.kinds
            .iter()
            .map(|kind| {
                let mut params = BTreeMap::new();
                params.insert("kind".to_string(), kind.as_str().into());
                params.insert("per_kind".to_string(), self.per_kind.into());
                params.insert("judge".to_string(), self.judge.into());
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
