//! [`SampleBuilder`]: build a [`Sample`] field by field from neutral defaults, for tests,
//! benches and tools that need samples without running units.
//!
//! Public (not `cfg(test)`) so that unit tests, integration tests and benches share one way to
//! write a sample by hand; the runner itself makes samples from `runner::UnitOutput`.

use super::{CostByRole, Sample, TimelinePoint, TokensByRole, UnitError, SCHEMA_VERSION};
use std::collections::BTreeMap;

/// Builder of a [`Sample`]. Defaults: unit `u`, trace `t`, variant `v`, eval `needle`, sample
/// `s`, repeat 0, current schema version; no params, scores, verdict, tokens, cost, compactions,
/// latency, error, evidence (`null`) or timeline.
#[derive(Clone, Debug)]
pub struct SampleBuilder(Sample);

impl Sample {
    /// Start building a sample from neutral defaults (see [`SampleBuilder`]).
    pub fn builder() -> SampleBuilder {
        SampleBuilder(Sample {
            schema_version: SCHEMA_VERSION,
            unit_id: "u".into(),
            trace_id: "t".into(),
            variant: "v".into(),
            eval: "needle".into(),
            sample: "s".into(),
            params: BTreeMap::new(),
            repeat: 0,
            scores: BTreeMap::new(),
            passed: None,
            tokens: TokensByRole::default(),
            cost_usd: CostByRole::default(),
            compactions: BTreeMap::new(),
            latency_ms: 0,
            error: None,
            evidence: serde_json::Value::Null,
            timeline: vec![],
            summaries: vec![],
        })
    }
}

impl SampleBuilder {
    pub fn unit_id(mut self, id: impl Into<String>) -> Self {
        self.0.unit_id = id.into();
        self
    }

    pub fn trace(mut self, trace_id: impl Into<String>) -> Self {
        self.0.trace_id = trace_id.into();
        self
    }

    pub fn variant(mut self, variant: impl Into<String>) -> Self {
        self.0.variant = variant.into();
        self
    }

    pub fn eval(mut self, eval: impl Into<String>) -> Self {
        self.0.eval = eval.into();
        self
    }

    /// The sample key within the eval (e.g. `depth=0.25/pos=tool`).
    pub fn sample(mut self, key: impl Into<String>) -> Self {
        self.0.sample = key.into();
        self
    }

    pub fn repeat(mut self, repeat: u32) -> Self {
        self.0.repeat = repeat;
        self
    }

    /// Add one sweep parameter.
    pub fn param(mut self, name: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.0.params.insert(name.into(), value.into());
        self
    }

    /// Add one metric.
    pub fn score(mut self, name: impl Into<String>, value: f64) -> Self {
        self.0.scores.insert(name.into(), value);
        self
    }

    pub fn passed(mut self, passed: bool) -> Self {
        self.0.passed = Some(passed);
        self
    }

    pub fn tokens(mut self, tokens: TokensByRole) -> Self {
        self.0.tokens = tokens;
        self
    }

    pub fn cost(mut self, cost: CostByRole) -> Self {
        self.0.cost_usd = cost;
        self
    }

    /// Add one compaction count.
    pub fn compaction(mut self, event: impl Into<String>, count: u64) -> Self {
        self.0.compactions.insert(event.into(), count);
        self
    }

    pub fn latency_ms(mut self, ms: u64) -> Self {
        self.0.latency_ms = ms;
        self
    }

    /// Mark the unit failed.
    pub fn error(mut self, kind: impl Into<String>, message: impl Into<String>) -> Self {
        self.0.error = Some(UnitError {
            kind: kind.into(),
            message: message.into(),
        });
        self
    }

    pub fn evidence(mut self, evidence: serde_json::Value) -> Self {
        self.0.evidence = evidence;
        self
    }

    pub fn timeline(mut self, timeline: Vec<TimelinePoint>) -> Self {
        self.0.timeline = timeline;
        self
    }

    pub fn summaries(mut self, summaries: Vec<super::SummaryRecord>) -> Self {
        self.0.summaries = summaries;
        self
    }

    pub fn build(self) -> Sample {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sets_what_it_is_told_and_defaults_the_rest() {
        let s = Sample::builder()
            .unit_id("x")
            .variant("aggr")
            .repeat(2)
            .param("depth", 0.25)
            .score("recall", 1.0)
            .passed(true)
            .error("timeout", "slow")
            .build();
        assert_eq!(s.unit_id, "x");
        assert_eq!(s.variant, "aggr");
        assert_eq!(s.trace_id, "t");
        assert_eq!(s.repeat, 2);
        assert_eq!(s.params["depth"], serde_json::json!(0.25));
        assert_eq!(s.scores["recall"], 1.0);
        assert_eq!(s.passed, Some(true));
        assert_eq!(s.error.as_ref().map(|e| e.kind.as_str()), Some("timeout"));
        assert_eq!(s.schema_version, SCHEMA_VERSION);
        // The defaults are what a sample with only its identity deserializes to.
        let parsed: Sample = serde_json::from_value(serde_json::json!({
            "schema_version": SCHEMA_VERSION, "unit_id": "u", "trace_id": "t", "variant": "v",
            "eval": "needle", "sample": "s", "repeat": 0, "evidence": null
        }))
        .unwrap();
        assert_eq!(Sample::builder().build(), parsed);
    }
}
