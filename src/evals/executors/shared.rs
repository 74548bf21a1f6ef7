//! What every eval's units share: the run's providers (built on first use), engine configs and
//! prices, and the pricing of a unit's tokens (the replayed agent, the summarizer, the evals' own
//! agent and judge calls).

use super::super::offline_agent::build_provider;
use super::super::prefixes::Prefixes;
use super::super::EvalError;
use crate::config::suite::{OnSummaryError, ProviderRole};
use crate::config::LoadedSuite;
use crate::engine::{self, EngineConfig, ResolvedConfig};
use crate::pricing::{Calls, PriceTable};
use crate::providers::{Provider, ProviderConfig, ProviderError};
use crate::record::{RunDir, SummaryPack, TokenSplit, UnitError};
use crate::runner::{Plan, UnitOutput};
use crate::trace::{Trace, Usage};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// Providers, built on first use (so `--no-cache` from the run context applies).
pub struct Providers {
    pub agent: Arc<dyn Provider>,
    pub summary: Arc<dyn Provider>,
    pub judge: Option<Arc<dyn Provider>>,
}

/// A unit's resolved config and its summary prompt's digest ([`Shared::resolved`]).
#[derive(Clone)]
pub(super) struct Resolved {
    pub(super) config: Arc<ResolvedConfig>,
    pub(super) prompt_digest: Arc<str>,
}

pub(super) struct Shared {
    pub(super) plan: Arc<Plan>,
    /// Per variant index.
    pub(super) engines: Vec<EngineConfig>,
    pub(super) provider_configs: BTreeMap<&'static str, ProviderConfig>,
    has_judge: bool,
    /// The run's prices (bundled + the suite's `[pricing]`): the reports' costs and the
    /// engine's cost ceiling both use them.
    pub(super) prices: Arc<PriceTable>,
    /// `[engine] on_summary_error`: a failed summary fails its unit, or is only recorded.
    on_summary_error: OnSummaryError,
    providers: OnceLock<Result<Providers, (&'static str, Arc<ProviderError>)>>,
    /// The run's long summary texts (`RunDir::summaries_pack`), opened by the first unit.
    summaries: OnceLock<Arc<SummaryPack>>,
    /// Replay prefixes shared by the units of a trace × variant (needle sweeps).
    pub(super) prefixes: Arc<Prefixes>,
    /// Each (variant index, trace index)'s resolved config ([`Shared::resolved`]), shared by
    /// its units.
    resolved: std::sync::Mutex<std::collections::HashMap<(usize, usize), Resolved>>,
}

fn provider_config(suite: &LoadedSuite, role: ProviderRole) -> anyhow::Result<ProviderConfig> {
    // Typed at load; what is left to check needs the environment (API key variables).
    let config = suite.provider(role).config.clone();
    config
        .validate()
        .map_err(|e| suite.provider_error(role, &[], &e.to_string()))?;
    Ok(config)
}

impl Shared {
    pub(super) fn new(plan: Arc<Plan>, suite: &LoadedSuite) -> anyhow::Result<Shared> {
        // Typed and resolved once when the suite was loaded.
        let engines: Vec<EngineConfig> = plan.variants.iter().map(|v| v.config.clone()).collect();
        let mut provider_configs = BTreeMap::new();
        for role in ProviderRole::ALL {
            provider_configs.insert(role.as_str(), provider_config(suite, role)?);
        }
        let prices = Arc::new(PriceTable::bundled().with_overrides(&suite.suite.pricing)?);
        Ok(Shared {
            plan,
            engines,
            provider_configs,
            has_judge: suite.provider(ProviderRole::Judge).configured,
            prices,
            on_summary_error: suite.suite.engine.on_summary_error,
            providers: OnceLock::new(),
            summaries: OnceLock::new(),
            prefixes: Arc::new(Prefixes::from_env()),
            resolved: Default::default(),
        })
    }

    /// Variant `variant`'s config resolved for trace `trace` (index in the plan, whose meta is
    /// `meta`) and its summary prompt's digest ([`prompt_digest`](super::super::summaries::prompt_digest),
    /// empty when none): made by the first of their units, then shared (a sweep's units of one
    /// trace × variant resolve the same config; an error is not kept).
    pub(super) fn resolved(
        &self,
        variant: usize,
        trace: usize,
        meta: &crate::trace::TraceMeta,
    ) -> Result<Resolved, EvalError> {
        let lock = || self.resolved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = lock().get(&(variant, trace)) {
            return Ok(c.clone());
        }
        let config = self.engines[variant].resolve_for(meta, &self.prices)?;
        let digest = super::super::summaries::prompt_digest(&config).unwrap_or_default();
        let made = Resolved {
            config: Arc::new(config),
            prompt_digest: digest.into(),
        };
        Ok(lock().entry((variant, trace)).or_insert(made).clone())
    }

    pub(super) fn providers(&self, no_cache: bool) -> Result<&Providers, EvalError> {
        let built = self.providers.get_or_init(|| {
            let build = |role: &'static str| {
                let mut c = self.provider_configs[role].clone();
                if no_cache {
                    c.cache = false;
                }
                build_provider(&c).map_err(|e| (role, Arc::new(e)))
            };
            Ok(Providers {
                agent: build("agent")?,
                summary: build("summary")?,
                judge: if self.has_judge {
                    Some(build("judge")?)
                } else {
                    None
                },
            })
        });
        built
            .as_ref()
            .map_err(|(role, source)| EvalError::ProviderSetup {
                role,
                source: source.clone(),
            })
    }

    /// The run's summaries pack (one writer per run directory, shared by its units).
    /// Every provider a unit may call is offline (agent, summarizer, judge if any): units wait
    /// on nothing outside the process.
    pub(super) fn offline(&self) -> bool {
        let offline = |role: &str| {
            self.provider_configs[role].kind == crate::providers::ProviderKind::Offline
        };
        offline("agent") && offline("summary") && (!self.has_judge || offline("judge"))
    }

    /// Write the long summary texts the run's pack holds in memory ([`SummaryPack::flush`]).
    pub(super) fn flush_summaries(&self) -> std::io::Result<()> {
        self.summaries.get().map_or(Ok(()), |pack| pack.flush())
    }

    pub(super) fn summary_pack(&self, run_dir: &std::path::Path) -> Arc<SummaryPack> {
        self.summaries
            .get_or_init(|| Arc::new(RunDir::new(run_dir).summary_pack()))
            .clone()
    }

    /// The model that prices the summarizer's calls. The offline provider is priced as the
    /// table's `offline` entry (a known $0), never as an unknown model with an empty name.
    pub(super) fn summary_model(&self) -> &str {
        price_model(&self.provider_configs["summary"])
    }

    /// Tokens and cost of the evals' own agent calls (needle questions, probes), priced at the
    /// agent provider's model (the offline provider is a known $0).
    pub(super) fn eval_agent(&self, out: &mut UnitOutput, calls: &Calls) {
        out.tokens.eval_agent = split(&calls.total());
        out.cost_usd.eval_agent = if out.tokens.eval_agent == TokenSplit::default() {
            Some(0.0)
        } else {
            let model = price_model(&self.provider_configs["agent"]);
            self.prices.cost_of_calls(model, calls.as_slice()).usd()
        };
    }

    /// The summarizer's tokens and cost of `calls` (a unit whose replay did not finish: the
    /// summary calls it made), priced call by call.
    pub(super) fn summarizer_cost(&self, out: &mut UnitOutput, calls: &Calls) {
        out.tokens.summarizer = split(&calls.total());
        out.cost_usd.summarizer = if calls.as_slice().is_empty() {
            Some(0.0)
        } else {
            self.prices
                .cost_of_calls(self.summary_model(), calls.as_slice())
                .usd()
        };
    }

    /// The judge's tokens and cost in the sample (separate from the agent's).
    pub(super) fn judge_cost(&self, judge: &dyn Provider, calls: &Calls, out: &mut UnitOutput) {
        out.tokens.judge = split(&calls.total());
        let model = match price_model(&self.provider_configs["judge"]) {
            "offline" => "offline",
            _ => judge.info().model.as_str(),
        };
        out.cost_usd.judge = self.prices.cost_of_calls(model, calls.as_slice()).usd();
    }

    /// Tokens, cost, compactions and timeline of a replay, as every sample reports them.
    pub(super) fn replay_output(
        &self,
        trace: &Trace,
        config: &ResolvedConfig,
        replay: &engine::Replay,
    ) -> UnitOutput {
        // Priced call by call: a price's long-context tier is a call's, not the replay's sum.
        let agent_calls = replay.agent_calls();
        let agent = agent_calls.total();
        let mut out = UnitOutput {
            compactions: replay.event_counts(),
            timeline: replay.timeline(),
            ..UnitOutput::default()
        };
        let failures = replay.summary_failures();
        if failures.count > 0 {
            match self.on_summary_error {
                OnSummaryError::Error => {
                    out.error = Some(UnitError {
                        kind: "summary_failed".into(),
                        message: format!(
                            "{} summar{} failed ({}); first: {}. The unit's tokens, cost and \
                             compactions are not those of a working summarizer (set `[engine] \
                             on_summary_error = \"record\"` to keep such units, flagged)",
                            failures.count,
                            if failures.count == 1 { "y" } else { "ies" },
                            failures.classes_text(),
                            failures.first.as_deref().unwrap_or("")
                        ),
                    });
                }
                OnSummaryError::Record => {}
            }
        }
        // In both modes the count is in the sample (an error unit's scores stay out of the
        // statistics, but the count is there for `--retry-failed` and for readers), 0 included:
        // the metric's mean (and a gate rule on it) is over every unit, not the flagged ones.
        out.scores
            .insert("summary_failures".into(), failures.count as f64);
        // Calls whose request was larger than the same call without compression (a flag of
        // the invariant checks, not a violation): the unit's tokens and cost are those of a
        // compactor that added to the request, so the unit is flagged. Every unit, 0 included.
        out.scores.insert(
            "flagged_calls".into(),
            replay.invariants.flagged_calls as f64,
        );
        out.tokens.agent = split(&agent);
        out.tokens.summarizer = split(&replay.summarizer_usage);
        out.cost_usd.agent = config
            .agent_model(trace.meta.model.as_deref())
            .and_then(|m| self.prices.cost_of_calls(m, agent_calls.as_slice()).usd());
        out.cost_usd.summarizer = if replay.summarizer_calls == 0 {
            Some(0.0)
        } else {
            self.prices
                .cost_of_calls(
                    self.summary_model(),
                    replay.summarizer_call_usages().as_slice(),
                )
                .usd()
        };
        // No judge call yet: a known $0 (an eval that calls a judge replaces it with the price).
        out.cost_usd.judge = Some(0.0);
        out
    }
}

/// The price-table name of a provider's model: `offline` for the built-in offline provider
/// (known to cost $0), else the configured model id.
pub(super) fn price_model(c: &ProviderConfig) -> &str {
    if c.kind == crate::providers::ProviderKind::Offline {
        "offline"
    } else {
        &c.model
    }
}

fn split(u: &Usage) -> TokenSplit {
    TokenSplit {
        input: u.input,
        cached: u.cache_read,
        cache_write: u.cache_write,
        output: u.output,
    }
}

/// What `Sample::summaries` needs: the variant's prompt digest
/// ([`prompt_digest`](super::super::summaries::prompt_digest), empty when none) and the run's
/// summaries pack (long texts are appended there).
pub(super) struct Summaries {
    pub(super) prompt_digest: Arc<str>,
    pub(super) pack: Arc<SummaryPack>,
}

impl Summaries {
    pub(super) fn of(
        &self,
        replay: &engine::Replay,
    ) -> Result<Vec<crate::record::SummaryRecord>, EvalError> {
        super::super::summaries::recorded(replay, &self.prompt_digest, &self.pack).map_err(
            |source| EvalError::Io {
                context: "recording summaries: ",
                source,
            },
        )
    }
}
