//! `replay`: the variant's replay scored by its own numbers (no params).

use super::MetricKind::{Count, Fraction, Tokens};
use super::{headline, higher, lower, neutral, EvalSpec};

pub const SPEC: EvalSpec = EvalSpec {
    name: "replay",
    metrics: &[
        lower("input_tokens", Tokens),
        // The uncompressed reference: the same for every variant, not a goal.
        neutral("reference_tokens", Tokens),
        higher("token_savings", Fraction),
        neutral("calls", Count),
        neutral("compactions", Count),
        headline(lower("futile_compactions", Count)),
        lower("invariant_violations", Count),
    ],
    headline_rank: 5,
};
