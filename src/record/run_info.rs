//! `run.json`: what a run was (resolved suite, versions, provenance, digests, variants, baseline).
//!
//! Written by the runner when a run starts (and rewritten when it ends); read by `report`,
//! `compare` and `gate`, which never need anything else besides `samples.jsonl`. Reading and
//! writing the file is [`super::RunDir`]'s.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which provider and model served one role of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProviderProvenance {
    /// `agent`, `summarizer` or `judge`.
    pub role: String,
    /// `openai`, `anthropic`, `offline`, …
    pub provider: String,
    pub model: String,
    /// Endpoint for OpenAI-compatible servers; never contains credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// Contents of `run.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub schema_version: u32,
    pub run_id: String,
    /// RFC 3339 UTC time the run started, e.g. `2026-11-21T23:30:00Z`.
    pub created: String,
    pub ctxbench_version: String,
    /// The suite as resolved (defaults filled in). Gate rules live at `suite.gates.rules`.
    #[serde(default)]
    pub suite: serde_json::Value,
    #[serde(default)]
    pub providers: Vec<ProviderProvenance>,
    /// Trace path (as given in the suite) → `sha256:<hex>` of its bytes.
    #[serde(default)]
    pub trace_digests: BTreeMap<String, String>,
    /// Prompt file path → `sha256:<hex>` of its bytes.
    #[serde(default)]
    pub prompt_digests: BTreeMap<String, String>,
    /// Variant names in suite order; the report lists them in this order.
    #[serde(default)]
    pub variants: Vec<String>,
    /// Variant the others are compared with (paired deltas). Defaults to the first variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Seed of every random choice of the run and of the bootstrap in its reports.
    #[serde(default)]
    pub seed: u64,
}

impl RunInfo {
    /// A run started now, by this build of ctxbench.
    pub fn new(run_id: impl Into<String>) -> Self {
        RunInfo {
            schema_version: super::SCHEMA_VERSION,
            run_id: run_id.into(),
            created: rfc3339_utc(std::time::SystemTime::now()),
            ctxbench_version: env!("CARGO_PKG_VERSION").to_string(),
            suite: serde_json::Value::Null,
            providers: vec![],
            trace_digests: BTreeMap::new(),
            prompt_digests: BTreeMap::new(),
            variants: vec![],
            baseline: None,
            seed: 0,
        }
    }

    /// The baseline variant: the declared one, else the first listed variant.
    pub fn baseline_variant(&self) -> Option<&str> {
        self.baseline
            .as_deref()
            .or_else(|| self.variants.first().map(|s| s.as_str()))
    }

    /// Gate rules stored in the resolved suite under `gates.rules` (strings).
    pub fn gate_rules(&self) -> Vec<String> {
        self.suite
            .pointer("/gates/rules")
            .and_then(|v| v.as_array())
            .map(|rules| {
                rules
                    .iter()
                    .filter_map(|r| r.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Format a time as RFC 3339 UTC with second precision (no date crate needed).
pub fn rfc3339_utc(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29T12:34:56Z (leap day) = 951827696
        let t = UNIX_EPOCH + Duration::from_secs(951_827_696);
        assert_eq!(rfc3339_utc(t), "2000-02-29T12:34:56Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_305_600);
        assert_eq!(rfc3339_utc(t), "2026-11-22T00:00:00Z");
    }

    #[test]
    fn gate_rules_and_baseline_come_from_the_suite() {
        let mut info = RunInfo::new("r1");
        assert!(info.gate_rules().is_empty());
        assert_eq!(info.baseline_variant(), None);
        info.variants = vec!["base".into(), "aggr".into()];
        assert_eq!(info.baseline_variant(), Some("base"));
        info.baseline = Some("aggr".into());
        assert_eq!(info.baseline_variant(), Some("aggr"));
        info.suite = serde_json::json!({"gates": {"rules": ["needle.recall >= 0.9", 3]}});
        assert_eq!(info.gate_rules(), vec!["needle.recall >= 0.9".to_string()]);
    }
}
