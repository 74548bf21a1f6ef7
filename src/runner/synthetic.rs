//! A deterministic stand-in executor and trace loader, for exercising the runner end to end
//! (journal, resume after SIGKILL, shard + merge, budget, Ctrl-C) before the engine and evals
//! exist, and afterwards for harness tests that must not depend on them.
//!
//! Selected with the hidden
//! `ctxbench run --executor synthetic[:delay_ms=N,fail_every=K,flag_every=K,store=1,offline=1]`.
//! Every number is a pure function of the unit id, so two runs produce identical samples
//! (apart from latency). It makes no model call and reads no trace content: the loader only
//! names traces after their files.

use super::execute::{RunContext, UnitExecutor, UnitFuture, UnitOutput};
use super::plan::Unit;
use super::session::{FileTraces, TraceLoader};
use crate::record::{CostByRole, TokenSplit, TokensByRole};
use crate::trace::discover::TraceFile;
use crate::trace::{ImportError, SourceFormat};
use std::time::Duration;

/// Dollars per token of the synthetic price ($2.50 / $10 per million).
const INPUT_PRICE: f64 = 2.5e-6;
const OUTPUT_PRICE: f64 = 10e-6;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyntheticExecutor {
    /// Simulated work per unit.
    pub delay: Duration,
    /// Units whose hash is divisible by this fail (kind `synthetic`).
    pub fail_every: Option<u64>,
    /// Units whose hash shifted by 8 is divisible by this are flagged (a futile compaction).
    pub flag_every: Option<u64>,
    /// Every unit hands the runner an offload store held in memory (one small file), as a
    /// needle unit does.
    pub stores: bool,
    /// Units wait on nothing outside the process (`UnitExecutor::is_offline`): the dispatcher
    /// runs each whole on one rayon thread, as it runs offline needle units.
    pub offline: bool,
}

impl SyntheticExecutor {
    /// Parse `delay_ms=N,fail_every=K,flag_every=K,store=1,offline=1` (all optional).
    pub fn parse(spec: &str) -> Result<SyntheticExecutor, String> {
        let mut e = SyntheticExecutor::default();
        for part in spec.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("synthetic executor option `{part}`: expected key=value"))?;
            let n: u64 = v
                .parse()
                .map_err(|_| format!("synthetic executor option `{k}`: `{v}` is not a number"))?;
            match k {
                "delay_ms" => e.delay = Duration::from_millis(n),
                "fail_every" if n > 0 => e.fail_every = Some(n),
                "flag_every" if n > 0 => e.flag_every = Some(n),
                "store" => e.stores = n > 0,
                "offline" => e.offline = n > 0,
                _ => {
                    return Err(format!(
                        "unknown synthetic executor option `{k}` (delay_ms, fail_every ≥ 1, \
                         flag_every ≥ 1, store, offline)"
                    ))
                }
            }
        }
        Ok(e)
    }

    /// The store a unit hands the runner (with `store=1`): one small file.
    fn store_of(&self, unit: &Unit) -> Option<std::sync::Arc<crate::engine::store::StoreFiles>> {
        self.stores.then(|| {
            let mut files = crate::engine::store::StoreFiles::new();
            files.insert(
                format!("notes/{}.md", unit.id),
                format!("store of unit {}\n", unit.id).into_bytes().into(),
            );
            std::sync::Arc::new(files)
        })
    }

    /// The output for a unit: a pure function of its id and eval.
    pub fn output_for(&self, unit: &Unit) -> UnitOutput {
        let h = u64::from_str_radix(unit.id.get(..16).unwrap_or("0"), 16).unwrap_or(0);
        if self.fail_every.is_some_and(|k| h % k == 0) {
            // (With stores, a failed unit hands its store too, as a needle unit whose agent
            // ran before its eval failed.)
            return UnitOutput {
                store: self.store_of(unit),
                ..UnitOutput::failed(
                    "synthetic",
                    format!("synthetic failure of unit {}", unit.id),
                )
            };
        }
        let input = 1_000 + h % 5_000;
        let output = 100 + (h >> 16) % 300;
        let agent = TokenSplit {
            input,
            cached: input / 2,
            cache_write: 0,
            output,
        };
        let cost = input as f64 * INPUT_PRICE + output as f64 * OUTPUT_PRICE;
        let mut out = UnitOutput {
            tokens: TokensByRole {
                agent,
                ..Default::default()
            },
            cost_usd: CostByRole {
                agent: Some(cost),
                summarizer: Some(cost / 10.0),
                judge: Some(0.0),
                eval_agent: Some(0.0),
            },
            evidence: serde_json::json!({ "synthetic": true }),
            ..Default::default()
        };
        if self.flag_every.is_some_and(|k| (h >> 8) % k == 0) {
            out.compactions.insert("futile".into(), 1);
        }
        out.store = self.store_of(unit);
        let pass = (h >> 32) % 100 < 80;
        match &*unit.eval {
            "needle" => {
                out.scores
                    .insert("recall".into(), f64::from(u8::from(pass)));
                out.passed = Some(pass);
            }
            "replay" => {
                out.scores
                    .insert("compactions".into(), ((h >> 40) % 4) as f64);
            }
            _ => {
                out.scores.insert("score".into(), ((h >> 24) % 6) as f64);
                out.passed = Some(pass);
            }
        }
        out
    }
}

impl UnitExecutor for SyntheticExecutor {
    fn execute<'a>(&'a self, unit: &'a Unit, _ctx: &'a RunContext) -> UnitFuture<'a> {
        Box::pin(async move {
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.output_for(unit)
        })
    }

    fn is_offline(&self, _unit: &Unit) -> bool {
        self.offline
    }
}

/// Names each file's single trace after the file (up to its first `.`), without parsing it.
pub struct SyntheticLoader;

impl TraceLoader for SyntheticLoader {
    fn load(
        &self,
        file: &TraceFile,
        _from: Option<SourceFormat>,
    ) -> Result<FileTraces, ImportError> {
        let path = &file.path;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = name.split('.').next().unwrap_or_default().to_string();
        if id.is_empty() {
            return Err(ImportError {
                file: path.display().to_string(),
                location: "file name".into(),
                message: "cannot derive a trace id from this file name".into(),
            });
        }
        Ok(FileTraces::Traces(vec![(id, None)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        let e = SyntheticExecutor::parse("delay_ms=5,fail_every=3").unwrap();
        assert_eq!(e.delay, Duration::from_millis(5));
        assert_eq!(e.fail_every, Some(3));
        let e = SyntheticExecutor::parse("flag_every=2,store=1,offline=1").unwrap();
        assert_eq!((e.flag_every, e.stores, e.offline), (Some(2), true, true));
        assert!(SyntheticExecutor::parse("flag_every=0").is_err());
        assert!(SyntheticExecutor::parse("speed=1").is_err());
        assert!(SyntheticExecutor::parse("fail_every=0").is_err());
        assert_eq!(
            SyntheticExecutor::parse("").unwrap(),
            SyntheticExecutor::default()
        );
    }
}
