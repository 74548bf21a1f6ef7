//! `needle`: a sample's typed params (trigger × fold × depth × position, and the section's
//! settings) and the eval's metrics.

use super::MetricKind::{Count, Fraction, Score, Tokens};
use super::{headline, higher, lower, neutral, EvalSpec};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

pub const SPEC: EvalSpec = EvalSpec {
    name: "needle",
    metrics: &[
        headline(higher("recall", Fraction)),
        higher("reference_recall", Fraction),
        // recall − reference_recall: the part of a miss compression caused (negative = worse).
        headline(higher("recall_delta", Score)),
        lower("stale", Fraction),
        neutral("not_reached", Fraction),
        // 1 on a unit whose trace has no message of the needle's position (nothing planted or
        // asked; see `evals::needle::Prepared::not_applicable`); 0 on every other unit, so its
        // mean is the share of needle units not applicable.
        neutral("not_applicable", Fraction),
        neutral("in_view", Fraction),
        neutral("steps", Count),
        // Questions whose agent ran out of `max_steps` before answering (a flag: see
        // `evals::needle::score`).
        lower("step_limit", Count),
        neutral("tool_calls", Count),
        neutral("searched", Fraction),
        lower("probe_input_tokens", Tokens),
        lower("probe_output_tokens", Tokens),
        lower("reference_input_tokens", Tokens),
        lower("reference_output_tokens", Tokens),
        // Every needle of the unit recovered.
        super::PASS,
    ],
    headline_rank: 2,
};

fn tool() -> NeedlePosition {
    NeedlePosition::Tool
}
fn one() -> u32 {
    1
}
/// Output limit of each needle answer when the section sets no `max_output_tokens`.
pub const MAX_OUTPUT_TOKENS: u32 = 200;

/// Distinct fact keys one trace can hold: needles + distractors of a sample (the planted
/// vocabulary, `evals::plant`, has this many keys).
pub const MAX_FACTS: usize = 16;

/// Fact kinds a paraphrased needle is drawn from (`paraphrase = true`): at most this many
/// needles, and each needle adds two sibling keys to the other kinds' keys for distractors.
pub const PARAPHRASE_KINDS: usize = 8;

/// Why `needles` needles and `distractors` distractors do not fit in one trace, if they do
/// not: the one rule the suite's load (`[evals.needle]`, with the line of the key) and the
/// planting (`evals::plant`) both apply, so a suite that could only fail every needle unit is
/// refused before it runs.
pub fn capacity_error(needles: usize, distractors: usize, paraphrase: bool) -> Option<String> {
    if needles.saturating_add(distractors) > MAX_FACTS {
        return Some(format!(
            "at most {MAX_FACTS} needles + distractors fit in one trace"
        ));
    }
    if paraphrase {
        if needles > PARAPHRASE_KINDS {
            return Some(format!(
                "at most {PARAPHRASE_KINDS} paraphrased needles fit in one trace"
            ));
        }
        let pool = PARAPHRASE_KINDS + needles;
        if distractors > pool {
            return Some(format!(
                "at most {pool} distractors fit with {needles} paraphrased needles"
            ));
        }
    }
    None
}

/// Tool-call budget of the answering agent when the section does not set one.
pub fn default_max_steps() -> u32 {
    8
}
fn is_false(b: &bool) -> bool {
    !*b
}
fn is_auto(s: &NeedleSearch) -> bool {
    *s == NeedleSearch::Auto
}

/// One needle sample's params, as the suite section writes them and the executor reads them.
/// Only a non-default `search`, `paraphrase` or `corrected` is written (unit params stay as
/// they were before these settings existed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeedleParams {
    /// Where to plant, as a fraction of the trace.
    pub depth: f64,
    #[serde(default = "tool")]
    pub position: NeedlePosition,
    /// Overrides the variant's compaction trigger (fraction of the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<f64>,
    #[serde(default = "one")]
    pub needles: u32,
    #[serde(default)]
    pub distractors: u32,
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    #[serde(default)]
    pub ask_at: AskAt,
    #[serde(default, skip_serializing_if = "is_auto")]
    pub search: NeedleSearch,
    #[serde(default, skip_serializing_if = "is_false")]
    pub paraphrase: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub corrected: bool,
    /// Ask right after the k-th summarization after the planting (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fold: Option<u32>,
    /// Output limit of each answer (`None`: the eval's default, [`MAX_OUTPUT_TOKENS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
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
