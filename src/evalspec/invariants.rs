//! `invariants`: the engine's rules checked on the replay (no params).

use super::MetricKind::{Count, Fraction};
use super::{headline, higher, lower, EvalSpec};

pub const SPEC: EvalSpec = EvalSpec {
    name: "invariants",
    metrics: &[lower("violations", Count), headline(higher("pass", Fraction))],
    headline_rank: 4,
};
