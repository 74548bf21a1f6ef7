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

/// How a run ended, as `run.json` records it (`status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started, not finished (or killed).
    Running,
    /// Every planned unit of this shard has a sample.
    Complete,
    /// Stopped by Ctrl-C.
    Interrupted,
    /// Stopped before exceeding `max_cost_usd`.
    BudgetExhausted,
    /// A merge that does not cover every planned unit.
    Incomplete,
    /// A status this version does not know (a run.json written by a newer one): read, so the
    /// run can still be reported, and taken as not complete.
    #[serde(other)]
    Unknown,
}

impl RunStatus {
    /// The name `run.json` spells it with.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::BudgetExhausted => "budget_exhausted",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Unknown => "unknown",
        }
    }
}

/// A file of the suite's trace paths that gave no trace, and why (`run.json`'s
/// `skipped_traces` and `ignored_files`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedTrace {
    pub file: String,
    pub error: String,
}

/// How [`RunProgress::left_out`]'s notes start.
pub const LEFT_OUT: &str = "left out:";

/// `run.json`'s `units`: how many units were planned and recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitCounts {
    /// Units of the whole (unsharded) plan.
    pub planned_total: u64,
    /// Units of this shard (= `planned_total` when not sharded).
    pub planned: u64,
    /// Units with a sample in `samples.jsonl` (ok + failed; a unit journaled more than once
    /// counts once). `ctxbench repair` lowers it when it moves lines aside.
    pub recorded: u64,
    pub failed: u64,
    pub not_run_budget: u64,
    pub not_run_interrupted: u64,
}

/// How far a run got: `run.json`'s `status` and `units`, which the runner and `merge` write
/// (`runner::manifest::RunManifest`). Read apart from [`RunInfo`] by the readers that must not
/// take a partial run for a complete one (`report`, `compare`, `gate`):
/// `RunDir::read_run_json::<RunProgress>()`. Both are absent from a `run.json` written by
/// other means (a hand-made or test run); then nothing is known and nothing is said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RunProgress {
    #[serde(default)]
    pub status: Option<RunStatus>,
    #[serde(default)]
    pub units: Option<UnitCounts>,
    /// Trace files that did not load (`traces.skip_invalid`).
    #[serde(default)]
    pub skipped_traces: Vec<SkippedTrace>,
    /// Files the suite's directories or globs matched that hold no trace.
    #[serde(default)]
    pub ignored_files: Vec<SkippedTrace>,
    /// The import warnings of the run's traces (`import_warnings`), grouped by kind.
    #[serde(default)]
    pub import_warnings: crate::record::ImportWarnings,
    /// Lines of `samples.rejected.jsonl` (unreadable journal lines `ctxbench repair` moved
    /// aside), as the reader counted them: not in `run.json`.
    #[serde(skip)]
    pub rejected: usize,
}

impl RunProgress {
    /// One sentence each for the trace files that did not load and the files that hold no
    /// trace, naming the first few and why: a run over fewer traces than its paths matched says
    /// so wherever its numbers are shown.
    pub fn left_out(&self) -> Vec<String> {
        const NAMED: usize = 5;
        let list = |files: &[SkippedTrace]| {
            let mut s: Vec<String> = files
                .iter()
                .take(NAMED)
                .map(|f| format!("{} ({})", f.file, f.error))
                .collect();
            if files.len() > NAMED {
                s.push(format!("and {} more", files.len() - NAMED));
            }
            s.join("; ")
        };
        let mut notes = Vec::new();
        if !self.skipped_traces.is_empty() {
            notes.push(format!(
                "{LEFT_OUT} {} trace file(s) that did not load (`[traces] skip_invalid`; \
                 run.json `skipped_traces`): {}",
                self.skipped_traces.len(),
                list(&self.skipped_traces)
            ));
        }
        if !self.ignored_files.is_empty() {
            notes.push(format!(
                "{LEFT_OUT} {} file(s) the suite's trace paths matched that hold no trace \
                 (run.json `ignored_files`): {}",
                self.ignored_files.len(),
                list(&self.ignored_files)
            ));
        }
        notes
    }

    /// Why the run is partial, in one sentence, or `None` when it is complete (or records no
    /// status). Partial: its status is not `complete` (interrupted, killed while `running`,
    /// stopped by the budget, a merge missing units), or it is one shard of a sharded plan.
    /// `journaled`: the samples the reader found in `samples.jsonl` — what was recorded, also
    /// for a killed run, whose `run.json` still has the counts of its start.
    pub fn partial(&self, journaled: usize) -> Option<String> {
        let status = self.status?;
        let units = self.units.clone().unwrap_or_default();
        let whole = units.planned_total.max(units.planned);
        // A resumed run's journal holds earlier attempts too: never say more than all.
        let recorded = (journaled as u64).min(whole);
        // Every unit of the whole plan is recorded: a process that ended before it wrote its
        // final status (or a resume opened and left) lost nothing the statistics need.
        if whole > 0 && recorded >= whole {
            return None;
        }
        let why = match status {
            // Units of a complete plan have no sample: lines moved aside by `ctxbench repair`
            // (a run.json it did not update), or removed by hand.
            RunStatus::Complete if units.planned >= whole && recorded >= whole => return None,
            RunStatus::Complete if units.planned >= whole => {
                "status `complete`, but units of the plan have no sample".to_string()
            }
            RunStatus::Complete => "one shard of a sharded run".to_string(),
            RunStatus::Running => {
                "status `running`: it was killed, or is still being written".to_string()
            }
            RunStatus::Interrupted => "status `interrupted`: it was stopped early".to_string(),
            RunStatus::BudgetExhausted => {
                "status `budget_exhausted`: stopped by max_cost_usd".to_string()
            }
            RunStatus::Incomplete => {
                "status `incomplete`: units of the plan are missing".to_string()
            }
            RunStatus::Unknown => "a status this version of ctxbench does not know".to_string(),
        };
        let rejected = match self.rejected {
            0 => String::new(),
            n => format!(
                "; {n} unreadable line(s) were moved to samples.rejected.jsonl by `ctxbench \
                 repair`, and `run --resume` runs their units again"
            ),
        };
        Some(format!(
            "partial run: {recorded} of {whole} planned unit(s) recorded ({why}){rejected}; its \
             statistics cover the recorded units only"
        ))
    }
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

    /// Files that gave no trace are named (the first five, then how many more), skipped and
    /// ignored ones apart; a run.json without them says nothing.
    #[test]
    fn files_left_out_are_named_five_at_most() {
        assert!(RunProgress::default().left_out().is_empty());
        let files = |n: usize, why: &str| -> Vec<SkippedTrace> {
            (0..n)
                .map(|i| SkippedTrace {
                    file: format!("t{i}.jsonl"),
                    error: why.into(),
                })
                .collect()
        };
        let p = RunProgress {
            skipped_traces: files(7, "line 3: cut"),
            ignored_files: files(1, "a JSON object with keys a"),
            ..RunProgress::default()
        };
        let notes = p.left_out();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("left out: 7 trace file(s) that did not load"));
        assert!(
            notes[0].contains("t4.jsonl (line 3: cut); and 2 more"),
            "{}",
            notes[0]
        );
        assert!(!notes[0].contains("t5.jsonl"));
        assert!(
            notes[1].ends_with("t0.jsonl (a JSON object with keys a)"),
            "{}",
            notes[1]
        );
    }

    /// Only a complete, unsharded run is whole; a run.json without a status says nothing.
    #[test]
    fn a_run_is_partial_unless_complete_and_whole() {
        // The journal holds as many samples as run.json says, here.
        let p = |json: serde_json::Value| -> Option<String> {
            let progress = serde_json::from_value::<RunProgress>(json).unwrap();
            let journaled = progress.units.as_ref().map_or(0, |u| u.recorded) as usize;
            progress.partial(journaled)
        };
        let units = |planned_total: u64, planned: u64, recorded: u64| {
            serde_json::json!({"planned_total": planned_total, "planned": planned,
                "recorded": recorded, "failed": 0, "not_run_budget": 0, "not_run_interrupted": 0})
        };
        assert_eq!(p(serde_json::json!({"run_id": "x"})), None);
        assert_eq!(
            p(serde_json::json!({"status": "complete", "units": units(10, 10, 10)})),
            None
        );
        // A resumed run's journal holds earlier attempts too: never "12 of 10".
        assert_eq!(
            p(serde_json::json!({"status": "complete", "units": units(10, 10, 12)})),
            None
        );
        for (status, why) in [
            ("paused-by-a-newer-ctxbench", "a status this version"),
            ("interrupted", "status `interrupted`"),
            ("running", "status `running`"),
            ("budget_exhausted", "status `budget_exhausted`"),
            ("incomplete", "status `incomplete`"),
        ] {
            let note = p(serde_json::json!({"status": status, "units": units(10, 10, 4)}))
                .unwrap_or_default();
            assert!(
                note.starts_with(&format!(
                    "partial run: 4 of 10 planned unit(s) recorded ({why}"
                )),
                "{note}"
            );
        }
        // A killed run's run.json has the counts of its start: the journal's samples count.
        let killed: RunProgress = serde_json::from_value(
            serde_json::json!({"status": "running", "units": units(10, 10, 0)}),
        )
        .unwrap();
        assert!(
            killed
                .partial(7)
                .is_some_and(|n| n.starts_with("partial run: 7 of 10 planned")),
            "{:?}",
            killed.partial(7)
        );
        // Every planned unit recorded: whatever status the process left (it ended before
        // writing its last one, or a resume was opened and left), nothing is missing.
        for status in ["running", "interrupted", "incomplete"] {
            assert_eq!(
                p(serde_json::json!({"status": status, "units": units(10, 10, 10)})),
                None,
                "{status}"
            );
        }
        // Units of a complete plan without a sample (an older `repair` left run.json as it
        // was): partial, and the lines `repair` moved aside are counted.
        let mut complete: RunProgress = serde_json::from_value(
            serde_json::json!({"status": "complete", "units": units(10, 10, 10)}),
        )
        .unwrap();
        assert_eq!(complete.partial(10), None);
        complete.rejected = 1;
        assert_eq!(
            complete.partial(10),
            None,
            "resumed: rejected lines are history"
        );
        assert_eq!(
            complete.partial(9).as_deref(),
            Some(
                "partial run: 9 of 10 planned unit(s) recorded (status `complete`, but units of \
                 the plan have no sample); 1 unreadable line(s) were moved to \
                 samples.rejected.jsonl by `ctxbench repair`, and `run --resume` runs their \
                 units again; its statistics cover the recorded units only"
            )
        );
        let shard = p(serde_json::json!({"status": "complete", "units": units(10, 5, 5)}));
        assert_eq!(
            shard.as_deref(),
            Some(
                "partial run: 5 of 10 planned unit(s) recorded (one shard of a sharded run); \
                 its statistics cover the recorded units only"
            )
        );
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
