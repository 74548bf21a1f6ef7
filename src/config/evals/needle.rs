//! `[evals.needle]`: plant facts, force compaction, ask for them back. The section, its checks
//! and its samples (trigger × fold × depth × position).

use super::{num, one, yes, EvalSample, EvalSection, Problem};
use crate::config::suite::ProviderRole;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;

fn default_depths() -> Vec<f64> {
    vec![0.25, 0.5, 0.75]
}
fn default_positions() -> Vec<NeedlePosition> {
    vec![NeedlePosition::Tool]
}
fn default_max_steps() -> u32 {
    8
}

/// `[evals.needle]`: plant facts, force compaction, ask for them back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeedleEval {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Where to plant, as fractions of the trace (0 = start, 1 = end).
    #[serde(default = "default_depths")]
    pub depths: Vec<f64>,
    /// Which kind of message carries the needle.
    #[serde(default = "default_positions")]
    pub positions: Vec<NeedlePosition>,
    /// Summarization triggers (fractions of the window) that override the variant's; empty =
    /// use each variant's own.
    #[serde(default)]
    pub triggers: Vec<f64>,
    /// Needles planted per sample.
    #[serde(default = "one")]
    pub needles: u32,
    /// Distractor facts of the same shape per sample.
    #[serde(default)]
    pub distractors: u32,
    /// Tool-call budget of the answering agent.
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// When to ask: `"end"` of the trace, or after this model-call index.
    #[serde(default)]
    pub ask_at: AskAt,
    /// How the offline agent may search the offload store (real models always get the tools).
    #[serde(default)]
    pub search: NeedleSearch,
    /// Ask in other words than the planted key (seeded paraphrase templates per fact kind),
    /// with distractors that share part of the key.
    #[serde(default)]
    pub paraphrase: bool,
    /// Correct every needle later in the trace (`Update: the … is now …`, at a seeded depth
    /// after it): the latest value is the answer, the first one scores as `stale`.
    #[serde(default)]
    pub corrected: bool,
    /// Ask right after the k-th summarization that followed the planting, one sample per k
    /// (`params.fold`); a replay with fewer folds records `not_reached`. Empty: ask at `ask_at`.
    #[serde(default)]
    pub folds: Vec<u32>,
}

/// `search = "auto" | "always" | "never"`: the bounds of what an agent can recover. Steers the
/// offline agent only; a real model always gets the search tools and decides for itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NeedleSearch {
    /// Search the store only when the view does not state the fact.
    #[default]
    Auto,
    /// Search the store before answering (is the fact recoverable at all?).
    Always,
    /// Answer from the compacted view alone (did the fact survive in the context?).
    Never,
}

impl NeedleSearch {
    pub fn as_str(self) -> &'static str {
        match self {
            NeedleSearch::Auto => "auto",
            NeedleSearch::Always => "always",
            NeedleSearch::Never => "never",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(NeedleSearch::Auto),
            "always" => Some(NeedleSearch::Always),
            "never" => Some(NeedleSearch::Never),
            _ => None,
        }
    }
}

/// Message kind that carries a needle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NeedlePosition {
    User,
    Tool,
    Assistant,
}

impl NeedlePosition {
    pub fn as_str(self) -> &'static str {
        match self {
            NeedlePosition::User => "user",
            NeedlePosition::Tool => "tool",
            NeedlePosition::Assistant => "assistant",
        }
    }
}

/// `ask_at = "end"` or `ask_at = 12` (after model call 12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AskAt {
    #[default]
    End,
    Call(u64),
}

impl AskAt {
    pub fn to_json(self) -> serde_json::Value {
        match self {
            AskAt::End => "end".into(),
            AskAt::Call(i) => i.into(),
        }
    }
}

impl Serialize for AskAt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AskAt::End => s.serialize_str("end"),
            AskAt::Call(i) => s.serialize_u64(*i),
        }
    }
}

impl<'de> Deserialize<'de> for AskAt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = AskAt;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"end\" or a model-call index (a non-negative integer)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<AskAt, E> {
                if v == "end" {
                    Ok(AskAt::End)
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(v), &self))
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<AskAt, E> {
                u64::try_from(v)
                    .map(AskAt::Call)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<AskAt, E> {
                Ok(AskAt::Call(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for AskAt {
    fn schema_name() -> Cow<'static, str> {
        "AskAt".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "\"end\" or a model-call index",
            "anyOf": [{"const": "end"}, {"type": "integer", "minimum": 0}]
        })
    }
}
impl EvalSection for NeedleEval {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn check(&self, err: Problem<'_>) {
        if self.depths.is_empty() {
            err(&["depths"], "`depths` must not be empty".into());
        }
        for (i, d) in self.depths.iter().enumerate() {
            if !(0.0..=1.0).contains(d) {
                err(
                    &["depths", &i.to_string()],
                    format!("needle depth {d} is outside [0, 1]"),
                );
            }
        }
        for (i, t) in self.triggers.iter().enumerate() {
            if !(*t > 0.0 && *t <= 1.0) {
                err(
                    &["triggers", &i.to_string()],
                    format!("trigger {t} must be a fraction of the window in (0, 1]"),
                );
            }
        }
        if self.positions.is_empty() {
            err(&["positions"], "`positions` must not be empty".into());
        }
        if self.needles == 0 {
            err(&["needles"], "`needles` must be at least 1".into());
        }
        if self.max_steps == 0 {
            err(&["max_steps"], "`max_steps` must be at least 1".into());
        }
        for (i, k) in self.folds.iter().enumerate() {
            if *k == 0 {
                err(
                    &["folds", &i.to_string()],
                    "fold 0 is not a fold: folds count from 1 (after the first summary)".into(),
                );
            }
        }
    }

    /// Trigger × fold × depth × position, in that nesting.
    fn samples(&self, name: &str) -> Vec<EvalSample> {
        let n = self;
        let mut out = Vec::new();
        let triggers: Vec<Option<f64>> = if n.triggers.is_empty() {
            vec![None]
        } else {
            n.triggers.iter().copied().map(Some).collect()
        };
        let folds: Vec<Option<u32>> = if n.folds.is_empty() {
            vec![None]
        } else {
            n.folds.iter().copied().map(Some).collect()
        };
        for (trigger, fold) in triggers
            .iter()
            .flat_map(|t| folds.iter().map(move |f| (t, f)))
        {
            for depth in &n.depths {
                for pos in &n.positions {
                    let mut key = format!("depth={depth}/pos={}", pos.as_str());
                    let mut params = BTreeMap::new();
                    params.insert("depth".to_string(), num(*depth));
                    params.insert("position".to_string(), pos.as_str().into());
                    if let Some(t) = trigger {
                        key.push_str(&format!("/trigger={t}"));
                        params.insert("trigger".to_string(), num(*t));
                    }
                    params.insert("needles".to_string(), n.needles.into());
                    params.insert("distractors".to_string(), n.distractors.into());
                    params.insert("max_steps".to_string(), n.max_steps.into());
                    params.insert("ask_at".to_string(), n.ask_at.to_json());
                    // Only a non-default bound is a parameter (unit params stay as they were).
                    if n.search != NeedleSearch::Auto {
                        params.insert("search".to_string(), n.search.as_str().into());
                    }
                    if n.paraphrase {
                        params.insert("paraphrase".to_string(), true.into());
                    }
                    if n.corrected {
                        params.insert("corrected".to_string(), true.into());
                    }
                    if let Some(k) = fold {
                        key.push_str(&format!("/fold={k}"));
                        params.insert("fold".to_string(), (*k).into());
                    }
                    out.push(EvalSample {
                        eval: name.into(),
                        sample: key,
                        params,
                        providers: vec![ProviderRole::Summary, ProviderRole::Agent],
                    });
                }
            }
        }
        out
    }
}
