//! What each eval is, declared once below everything that uses it: its typed params (the one
//! serde struct the suite config writes into a sample and the executor reads back) and its
//! metrics (name, polarity, kind, whether a headline), the way inspect_ai's
//! `@scorer(metrics=…)` declares them.
//!
//! One file per eval (`evalspec/<name>.rs`: its `SPEC` and its params struct) and one line in
//! `eval_specs!` register it here. `config::evals` (the suite section that expands into
//! samples) and `evals::executors` (the run hook) each keep one line per eval, and a test in
//! `evals::executors` fails when the three lists differ. The report reads polarity and the
//! default headline from here ([`polarity`], [`headline_rank`]); `summary.json` carries each
//! metric's polarity.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Which direction of a metric is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Polarity {
    Higher,
    Lower,
    /// Neither direction is better (counts of steps, calls, …).
    Neutral,
}

/// What an eval's question to the agent asks for: set on the request
/// (`providers::ChatRequest::asking`, never sent to a model, not part of the cache key) so the
/// offline agent knows what it is asked without reading the prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Asking {
    /// A fact to recall (needle questions, recall probes); also a request that says nothing.
    #[default]
    Recall,
    /// Goal, progress and next step in the drift answer format (drift, structured probes).
    Drift,
    /// The next tool call (continuation).
    Continuation,
    /// The standing instructions that still apply (rules).
    Rules,
    /// The approach chosen over another (decision probes).
    Decision,
}

/// What a metric's number is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// A graded score (e.g. 0–5 rubric).
    Score,
    /// A fraction in [0, 1] (recall, agreement, a 0/1 outcome).
    Fraction,
    /// A count of things (calls, violations, failures).
    Count,
    /// A number of tokens.
    Tokens,
    /// US dollars.
    Dollars,
}

/// One declared metric. `name` is the leaf below the eval (`recall` of `needle.recall`); a name
/// ending in `*` declares a family (`judge_*`, `retained.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub polarity: Polarity,
    pub kind: MetricKind,
    /// A default headline metric of the report.
    pub headline: bool,
}

impl Metric {
    fn matches(&self, leaf: &str) -> bool {
        match self.name.strip_suffix('*') {
            Some(prefix) => leaf.starts_with(prefix),
            None => self.name == leaf,
        }
    }
}

/// Higher is better.
pub const fn higher(name: &'static str, kind: MetricKind) -> Metric {
    Metric {
        name,
        polarity: Polarity::Higher,
        kind,
        headline: false,
    }
}

/// Lower is better.
pub const fn lower(name: &'static str, kind: MetricKind) -> Metric {
    Metric {
        name,
        polarity: Polarity::Lower,
        kind,
        headline: false,
    }
}

/// Neither direction is better.
pub const fn neutral(name: &'static str, kind: MetricKind) -> Metric {
    Metric {
        name,
        polarity: Polarity::Neutral,
        kind,
        headline: false,
    }
}

/// The same metric, as a default headline metric.
pub const fn headline(m: Metric) -> Metric {
    Metric {
        headline: true,
        ..m
    }
}

/// One eval: its name (`[evals.<name>]`, the `eval` of its samples), its metrics, and where its
/// headline metrics go in the headline (lower first; `tokens` and `cost` are 0 and 1).
#[derive(Clone, Copy, Debug)]
pub struct EvalSpec {
    pub name: &'static str,
    pub metrics: &'static [Metric],
    pub headline_rank: u8,
}

use MetricKind::{Count, Dollars, Fraction, Tokens};

/// Metrics of every sample of every eval (`<eval>.summary_failures`, `<eval>.prompt_truncated`,
/// `<eval>.flagged_calls`: calls of the unit's replay whose request was larger than the same call
/// without compression). `<eval>.pass`, the share of units whose verdict is pass, is declared by
/// the evals whose units have a verdict (needle, probes, invariants): the others (replay, drift,
/// continuation, rules) never record one, and a gate rule on it would pass the suite's check and
/// fail in CI as "not in the run".
pub const COMMON_METRICS: &[Metric] = &[
    lower("summary_failures", Count),
    lower("prompt_truncated", Count),
    lower("flagged_calls", Count),
];

/// `<eval>.pass` of an eval whose units have a verdict (`Sample::passed`).
pub const PASS: Metric = higher("pass", Fraction);

/// Metrics of the run, not of one eval: `tokens`, `cost` and their per-role splits
/// (`tokens.agent`, `cost.judge`, …).
pub const RUN_METRICS: &[Metric] = &[
    headline(lower("tokens", Tokens)),
    headline(lower("cost", Dollars)),
    lower("tokens.*", Tokens),
    lower("cost.*", Dollars),
];

/// The roles whose tokens and cost are run metrics of their own (`tokens.<role>`,
/// `cost.<role>`), in display order.
pub const ROLES: [&str; 4] = ["agent", "summarizer", "judge", "eval_agent"];

macro_rules! eval_specs {
    ($($name:ident,)+) => {
        $(pub mod $name;)+

        /// Every eval, in plan order.
        pub const EVALS: &[&EvalSpec] = &[$(&$name::SPEC,)+];
    };
}

// Adding an eval: `<name>.rs` here (its `SPEC` and params struct) and one line below; then its
// suite section (`config::evals`) and its run hook (`evals::executors`), one line each.
eval_specs! {
    replay,
    invariants,
    needle,
    drift,
    probes,
    continuation,
    rules,
}

/// The spec of eval `name`.
pub fn spec(name: &str) -> Option<&'static EvalSpec> {
    EVALS.iter().copied().find(|s| s.name == name)
}

/// The declaration of a metric by its full name (`needle.recall`, `tokens`, `cost.agent`);
/// `None` for a name no eval declares (a run recorded by another version).
pub fn metric(full: &str) -> Option<&'static Metric> {
    if let Some(m) = RUN_METRICS.iter().find(|m| m.matches(full)) {
        return Some(m);
    }
    let (eval, leaf) = full.split_once('.')?;
    let own = spec(eval)?.metrics.iter().find(|m| m.matches(leaf));
    own.or_else(|| COMMON_METRICS.iter().find(|m| m.matches(leaf)))
}

/// Whether a run of the evals `enabled` can record metric `full`: a run metric (`tokens`,
/// `cost`, `tokens.agent`, …) or a metric of one of those evals (its own or a common one).
pub fn recorded_by(full: &str, enabled: &[&str]) -> bool {
    metric_names(enabled)
        .iter()
        .any(|n| match n.strip_suffix('*') {
            Some(prefix) => full.len() > prefix.len() && full.starts_with(prefix),
            None => n == full,
        })
}

/// Every metric name a run of the evals `enabled` can record, in plan order: each eval's own
/// and common metrics (`needle.recall`, …, `needle.pass`), then the run metrics (`tokens`,
/// `cost`, `tokens.<role>`, `cost.<role>`). A family is named as declared (`probes.judge_*`).
pub fn metric_names(enabled: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for s in EVALS.iter().filter(|s| enabled.contains(&s.name)) {
        for m in s.metrics.iter().chain(COMMON_METRICS) {
            out.push(format!("{}.{}", s.name, m.name));
        }
    }
    out.extend(["tokens".to_string(), "cost".to_string()]);
    for what in ["tokens", "cost"] {
        for role in ROLES {
            out.push(format!("{what}.{role}"));
        }
    }
    out
}

/// The polarity of a metric (neutral for one nobody declares).
pub fn polarity(full: &str) -> Polarity {
    metric(full).map_or(Polarity::Neutral, |m| m.polarity)
}

/// Where a default headline metric goes in the headline (`None`: not a headline metric).
pub fn headline_rank(full: &str) -> Option<u8> {
    match full {
        "tokens" => return Some(0),
        "cost" => return Some(1),
        _ => {}
    }
    let m = metric(full).filter(|m| m.headline)?;
    let (eval, _) = full.split_once('.')?;
    spec(eval).map(|s| s.headline_rank).filter(|_| m.headline)
}

/// The largest `max_output_tokens` a section may set (GPT-5's output limit, the largest of the
/// APIs ctxbench speaks).
pub const MAX_OUTPUT_TOKENS_CAP: u32 = 128_000;

/// An eval call's output limit: the section's `max_output_tokens` when set, else the eval's own
/// default. Either way the provider's `max_tokens` wins when larger, and an OpenAI reasoning
/// model without one gets its reasoning allowance on top (`providers::http::WireTraits`).
pub fn output_limit(set: Option<u32>, default: u32) -> u32 {
    set.unwrap_or(default)
}

/// A typed params struct as a sample's params map (what the plan and the records carry).
pub fn to_params<P: Serialize>(p: &P) -> BTreeMap<String, Value> {
    match serde_json::to_value(p) {
        Ok(Value::Object(map)) => map.into_iter().collect(),
        _ => BTreeMap::new(),
    }
}

/// A sample's params map read back into its eval's typed params.
pub fn from_params<P: serde::de::DeserializeOwned>(
    p: &BTreeMap<String, Value>,
) -> Result<P, serde_json::Error> {
    let map: serde_json::Map<String, Value> = p.clone().into_iter().collect();
    serde_json::from_value(Value::Object(map))
}

#[cfg(test)]
mod tests;
