//! Runner executors for the evals: `replay`, `invariants`, `needle`, `drift`, `probes`,
//! `continuation` and `rules` units
//! turned into samples. Replays run on the rayon pool through [`crate::runner::cpu`] when their
//! summarizer is offline (pure CPU), and on tokio's blocking pool through
//! [`crate::runner::blocking_io`] when it is a model (the replay waits on the network; see
//! `providers::summarizer`); other provider calls are awaited on the runner's tokio runtime.
//! A cancelled unit cancels its summary calls (they return `SummaryError::Cancelled`).
//!
//! Cost model of a sample: the replayed agent's calls (the views the engine built) are priced at
//! the trace's recorded model (`trace.meta.model`; unknown → "price unknown"); summarizer calls
//! at the summary provider's model. Probe and judge calls made by the eval itself are reported
//! in `scores` (`probe_*`) and in `tokens.judge` respectively, so a variant's cost is what its
//! compression costs, not what measuring it costs.

use super::offline_agent::build_provider;
use super::{continuation, drift, needle, probes, rules, EvalError};
use crate::config::suite::{OnSummaryError, ProviderRole};
use crate::config::LoadedSuite;
use crate::engine::{self, EngineConfig, OfflineSummarizer, ResolvedConfig, Summarizer};
use crate::pricing::PriceTable;
use crate::providers::summarizer::{ProviderSummarizer, SummaryCancel};
use crate::providers::{Provider, ProviderConfig};
use crate::record::{RunDir, TokenSplit, UnitError};
use crate::runner::{
    replay_pool, Plan, Router, RunContext, Unit, UnitExecutor, UnitFuture, UnitOutput,
};
use crate::trace::{Trace, Usage};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The eval names this module executes.
pub const EVALS: [&str; 7] = [
    "replay",
    "invariants",
    "needle",
    "drift",
    "probes",
    "continuation",
    "rules",
];

/// Register every eval executor on `router`.
pub fn register(router: Router, plan: &Arc<Plan>, suite: &LoadedSuite) -> anyhow::Result<Router> {
    let shared = Arc::new(Shared::new(plan.clone(), suite)?);
    let mut router = router;
    for eval in EVALS {
        router = router.with(eval, Arc::new(EvalExecutor(shared.clone())));
    }
    Ok(router)
}

/// Providers, built on first use (so `--no-cache` from the run context applies).
struct Providers {
    agent: Arc<dyn Provider>,
    summary: Arc<dyn Provider>,
    judge: Option<Arc<dyn Provider>>,
}

struct Shared {
    plan: Arc<Plan>,
    /// Per variant index.
    engines: Vec<EngineConfig>,
    provider_configs: BTreeMap<&'static str, ProviderConfig>,
    has_judge: bool,
    /// The run's prices (bundled + the suite's `[pricing]`): the reports' costs and the
    /// engine's cost ceiling both use them.
    prices: Arc<PriceTable>,
    /// `[engine] on_summary_error`: a failed summary fails its unit, or is only recorded.
    on_summary_error: OnSummaryError,
    providers: OnceLock<Result<Providers, String>>,
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
    fn new(plan: Arc<Plan>, suite: &LoadedSuite) -> anyhow::Result<Shared> {
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
        })
    }

    fn providers(&self, no_cache: bool) -> Result<&Providers, EvalError> {
        let built = self.providers.get_or_init(|| {
            let build = |role: &str| {
                let mut c = self.provider_configs[role].clone();
                if no_cache {
                    c.cache = false;
                }
                build_provider(&c).map_err(|e| format!("provider `{role}`: {e}"))
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
        built.as_ref().map_err(|e| EvalError::Config(e.clone()))
    }

    /// The model that prices the summarizer's calls. The offline provider is priced as the
    /// table's `offline` entry (a known $0), never as an unknown model with an empty name.
    fn summary_model(&self) -> &str {
        price_model(&self.provider_configs["summary"])
    }

    /// Tokens and cost of the evals' own agent calls (needle questions, probes), priced at the
    /// agent provider's model (the offline provider is a known $0).
    fn eval_agent(&self, out: &mut UnitOutput, usage: &Usage) {
        out.tokens.eval_agent = split(usage);
        out.cost_usd.eval_agent = if split(usage) == TokenSplit::default() {
            Some(0.0)
        } else {
            let model = price_model(&self.provider_configs["agent"]);
            self.prices.cost(model, usage).usd()
        };
    }
}

/// The price-table name of a provider's model: `offline` for the built-in offline provider
/// (known to cost $0), else the configured model id.
fn price_model(c: &ProviderConfig) -> &str {
    if c.kind == crate::providers::ProviderKind::Offline {
        "offline"
    } else {
        &c.model
    }
}

struct EvalExecutor(Arc<Shared>);

impl UnitExecutor for EvalExecutor {
    fn execute<'a>(&'a self, unit: &'a Unit, ctx: &'a RunContext) -> UnitFuture<'a> {
        Box::pin(async move {
            match run_unit(&self.0, unit, ctx).await {
                Ok(out) => out,
                Err(e) => UnitOutput {
                    error: Some(UnitError {
                        kind: e.kind().into(),
                        message: e.to_string(),
                    }),
                    ..UnitOutput::default()
                },
            }
        })
    }
}

/// What every unit needs before its eval-specific part.
struct UnitSetup {
    trace: Arc<Trace>,
    config: ResolvedConfig,
    store: PathBuf,
    summarizer: Arc<dyn Summarizer>,
    /// The summarizer calls a model: the replay must run on a thread that may wait.
    waits_on_network: bool,
    /// Cancels the summary calls when the unit ends or is aborted (dropped with the setup).
    _cancel: Option<SummaryCancel>,
    prices: Arc<PriceTable>,
}

fn setup(shared: &Shared, unit: &Unit, ctx: &RunContext) -> Result<UnitSetup, EvalError> {
    let entry = shared
        .plan
        .traces
        .get(unit.trace)
        .ok_or_else(|| EvalError::Config(format!("unit names trace #{}", unit.trace)))?;
    let trace = entry
        .trace
        .clone()
        .ok_or_else(|| EvalError::Config(format!("trace `{}` was not loaded", entry.id)))?;
    let config = shared.engines[unit.variant_index]
        .resolve_for(&trace.meta, &shared.prices)
        .map_err(|e| EvalError::Config(e.to_string()))?;
    let providers = shared.providers(ctx.no_cache)?;
    let (summarizer, cancel): (Arc<dyn Summarizer>, _) =
        if providers.summary.info().kind == "offline" {
            (Arc::new(OfflineSummarizer), None)
        } else {
            let handle = tokio::runtime::Handle::current();
            let (summ, cancel) = ProviderSummarizer::new(providers.summary.clone(), handle)
                .with_nonce(format!("{}/r{}", unit.id, unit.repeat))
                .cancellable();
            (Arc::new(summ), Some(cancel))
        };
    // Stores live under the run directory: stable paths, so evidence can point at them.
    let store = RunDir::new(&ctx.run_dir).unit_store(&unit.id);
    let _ = std::fs::remove_dir_all(&store); // a resumed unit starts clean
    Ok(UnitSetup {
        trace,
        config,
        store,
        summarizer,
        waits_on_network: cancel.is_some(),
        _cancel: cancel,
        prices: shared.prices.clone(),
    })
}

fn split(u: &Usage) -> TokenSplit {
    TokenSplit {
        input: u.input,
        cached: u.cache_read,
        cache_write: u.cache_write,
        output: u.output,
    }
}

/// Tokens, cost, compactions and timeline of a replay, as every sample reports them.
fn replay_output(
    shared: &Shared,
    trace: &Trace,
    config: &ResolvedConfig,
    replay: &engine::Replay,
) -> UnitOutput {
    let mut agent = Usage::default();
    for c in &replay.calls {
        agent.input += c.input_tokens;
        agent.cache_read += c.cached_tokens;
        agent.output += c.output_tokens.unwrap_or(0);
    }
    let mut out = UnitOutput {
        compactions: replay.event_counts(),
        timeline: replay.timeline(),
        ..UnitOutput::default()
    };
    let failures = replay.summary_failures();
    if failures.count > 0 {
        match shared.on_summary_error {
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
        // In both modes the count is in the sample (an error unit's scores stay out of the
        // statistics, but the count is there for `--retry-failed` and for readers).
        out.scores
            .insert("summary_failures".into(), failures.count as f64);
    }
    out.tokens.agent = split(&agent);
    out.tokens.summarizer = split(&replay.summarizer_usage);
    out.cost_usd.agent = config
        .agent_model(trace.meta.model.as_deref())
        .and_then(|m| shared.prices.cost(m, &agent).usd());
    out.cost_usd.summarizer = if replay.summarizer_calls == 0 {
        Some(0.0)
    } else {
        shared
            .prices
            .cost(shared.summary_model(), &replay.summarizer_usage)
            .usd()
    };
    // No judge call yet: a known $0 (an eval that calls a judge replaces it with the price).
    out.cost_usd.judge = Some(0.0);
    out
}

/// What `Sample::summaries` needs: the variant's config (prompt digest) and the run directory
/// (long texts are written there).
struct Summaries {
    config: ResolvedConfig,
    run_dir: RunDir,
}

impl Summaries {
    fn of(&self, replay: &engine::Replay) -> Result<Vec<crate::record::SummaryRecord>, EvalError> {
        super::summaries::recorded(replay, &self.config, &self.run_dir)
            .map_err(|e| EvalError::Io(format!("recording summaries: {e}")))
    }
}

/// The replay's own scores (only for `replay` and `invariants` units: other evals report what
/// they measure, and their tokens and cost are in the sample's token and cost fields).
fn replay_scores(replay: &engine::Replay, scores: &mut BTreeMap<String, f64>) {
    let input: u64 = replay.calls.iter().map(|c| c.input_tokens).sum();
    let reference: u64 = replay.calls.iter().map(|c| c.reference_tokens).sum();
    scores.insert("input_tokens".into(), input as f64);
    scores.insert("reference_tokens".into(), reference as f64);
    if reference > 0 {
        scores.insert(
            "token_savings".into(),
            1.0 - input as f64 / reference as f64,
        );
    }
    scores.insert("calls".into(), replay.calls.len() as f64);
    scores.insert(
        "compactions".into(),
        replay.events.iter().filter(|e| e.persistent).count() as f64,
    );
    scores.insert(
        "futile_compactions".into(),
        replay.futile_compactions() as f64,
    );
    scores.insert(
        "invariant_violations".into(),
        replay.invariants.violations.len() as f64,
    );
}

/// The judge provider when an eval asks for one (`judge = true`), else `None`.
fn judge_provider<'a>(
    providers: &'a Providers,
    wanted: bool,
    eval: &str,
) -> Result<Option<&'a dyn Provider>, EvalError> {
    if !wanted {
        return Ok(None);
    }
    providers.judge.as_deref().map(Some).ok_or_else(|| {
        EvalError::Config(format!(
            "{eval} asks for a judge but [providers.judge] is not set"
        ))
    })
}

/// The judge's tokens and cost in the sample (separate from the agent's).
fn judge_cost(shared: &Shared, judge: &dyn Provider, usage: &Usage, out: &mut UnitOutput) {
    out.tokens.judge = split(usage);
    let model = match price_model(&shared.provider_configs["judge"]) {
        "offline" => "offline",
        _ => judge.info().model.as_str(),
    };
    out.cost_usd.judge = shared.prices.cost(model, usage).usd();
}

async fn run_unit(shared: &Shared, unit: &Unit, ctx: &RunContext) -> Result<UnitOutput, EvalError> {
    let s = setup(shared, unit, ctx)?;
    let resolved = s.config.clone();
    let trace_model = s.trace.meta.model.clone();
    let mut out = run_eval(shared, unit, ctx, s).await?;
    // Which window the views were built against and where it came from (suite, trace, the
    // agent model's entry in the price table, or the preset), and which model priced them.
    if let Some(obj) = out.evidence.as_object_mut() {
        obj.insert(
            "window".into(),
            json!({ "tokens": resolved.window, "source": resolved.window_source }),
        );
        // The model each role's tokens were priced at (`null`: none known).
        let agent_from = if resolved.agent_model.is_some() {
            "agent_model"
        } else {
            "trace"
        };
        let judge = shared
            .provider_configs
            .get("judge")
            .map(|c| price_model(c).to_string());
        obj.insert(
            "priced_as".into(),
            json!({
                "agent": resolved.agent_model(trace_model.as_deref()),
                "agent_from": agent_from,
                "summarizer": shared.summary_model(),
                "judge": judge,
                "eval_agent": price_model(&shared.provider_configs["agent"]),
            }),
        );
    }
    Ok(out)
}

async fn run_eval(
    shared: &Shared,
    unit: &Unit,
    ctx: &RunContext,
    s: UnitSetup,
) -> Result<UnitOutput, EvalError> {
    let resolved = s.config.clone();
    let nonce = format!("{}/r{}", unit.id, unit.repeat);
    let io = s.waits_on_network;
    let summaries = Summaries {
        config: s.config.clone(),
        run_dir: RunDir::new(&ctx.run_dir),
    };
    // Tokens, cost, compactions, timeline and summaries of the unit's replay: built once per
    // unit. When a summary failed (`summary_failed`), the unit ends there: no model call is
    // made for numbers that will not count.
    let base = |replay: &engine::Replay| -> Result<UnitOutput, EvalError> {
        let mut out = replay_output(shared, &s.trace, &resolved, replay);
        out.summaries = summaries.of(replay)?;
        Ok(out)
    };
    match unit.eval.as_str() {
        "replay" | "invariants" => {
            let (trace, config, store, summ) = (s.trace.clone(), s.config, s.store, s.summarizer);
            let (seed, prices) = (unit.seed, s.prices);
            let replay = replay_pool(io, move || {
                let mut env = engine::ReplayEnv::new(summ.as_ref());
                env.prices = &prices;
                env.store = engine::StoreTarget::Dir(store);
                env.seed = seed;
                engine::replay(&trace, &config, &env).map_err(|e| EvalError::Engine(e.to_string()))
            })
            .await?;
            let mut out = base(&replay)?;
            let inv = &replay.invariants;
            if unit.eval == "invariants" {
                out.passed = Some(inv.violations.is_empty());
                out.scores
                    .insert("violations".into(), inv.violations.len() as f64);
            } else {
                replay_scores(&replay, &mut out.scores);
            }
            out.evidence = json!({
                "violations": inv.violations.iter().take(20).collect::<Vec<_>>(),
                "violations_total": inv.violations.len(),
                "trace_defects": inv.trace_defects.len(),
                "calls_checked": inv.calls_checked,
                "stopped": replay.stopped,
            });
            Ok(out)
        }
        "needle" => {
            let mut params = needle::NeedleParams::from_params(&unit.params)?;
            params.plant_seed = Some(unit.pair_seed);
            let (trace, config, store, summ, p) = (
                s.trace.clone(),
                s.config,
                s.store,
                s.summarizer,
                params.clone(),
            );
            let (seed, prices) = (unit.seed, s.prices);
            let prepared = replay_pool(io, move || {
                needle::prepare(&trace, &config, &p, summ.as_ref(), &prices, store, seed)
            })
            .await?;
            let mut out = base(&prepared.replay)?;
            if out.error.is_some() {
                return Ok(out);
            }
            let agent = shared.providers(ctx.no_cache)?.agent.clone();
            let answers = needle::ask(
                &prepared,
                agent.as_ref(),
                params.max_steps,
                params.search,
                &nonce,
            )
            .await?;
            let (scores, evidence, usage) = needle::score(&prepared, &answers);
            shared.eval_agent(&mut out, &usage);
            // A fold the replay never reached has no recall and no verdict.
            out.passed = scores.get("recall").map(|r| *r >= 1.0);
            out.scores.extend(scores);
            out.evidence = evidence;
            Ok(out)
        }
        "drift" => {
            let params = drift::DriftParams::from_params(&unit.params);
            let (trace, config, store, summ, p) = (
                s.trace.clone(),
                s.config,
                s.store,
                s.summarizer,
                params.clone(),
            );
            let (seed, prices) = (unit.seed, s.prices);
            let (replay, views) = replay_pool(io, move || {
                drift::prepare(&trace, &config, &p, summ.as_ref(), &prices, store, seed)
            })
            .await?;
            let mut out = base(&replay)?;
            if out.error.is_some() {
                return Ok(out);
            }
            let providers = shared.providers(ctx.no_cache)?;
            let judge = judge_provider(providers, params.judge, "drift")?;
            let (probes, agent_usage, judge_usage) =
                drift::ask(&s.trace, &views, providers.agent.as_ref(), judge, &nonce).await?;
            shared.eval_agent(&mut out, &agent_usage);
            let (scores, evidence) = match params.fold {
                Some(k) => drift::aggregate_fold(k, &probes),
                None => drift::aggregate(&probes),
            };
            out.scores.extend(scores);
            out.evidence = evidence;
            if let Some(j) = judge {
                judge_cost(shared, j, &judge_usage, &mut out);
            }
            Ok(out)
        }
        "probes" => {
            let params = probes::ProbeParams::from_params(&unit.params)?;
            let (trace, config, store, summ) = (s.trace.clone(), s.config, s.store, s.summarizer);
            let (seed, prices) = (unit.seed, s.prices);
            let prepared = replay_pool(io, move || {
                probes::prepare(&trace, &config, summ.as_ref(), &prices, store, seed)
            })
            .await?;
            let mut out = base(&prepared.replay)?;
            if out.error.is_some() {
                return Ok(out);
            }
            let providers = shared.providers(ctx.no_cache)?;
            let judge = judge_provider(providers, params.judge, "probes")?;
            let result = probes::ask(
                &s.trace,
                &prepared,
                params,
                providers.agent.as_ref(),
                judge,
                unit.seed,
                &nonce,
            )
            .await?;
            out.scores.extend(result.scores);
            out.passed = result.passed;
            out.evidence = result.evidence;
            shared.eval_agent(&mut out, &result.agent_usage);
            if let Some(j) = judge {
                judge_cost(shared, j, &result.judge_usage, &mut out);
            }
            Ok(out)
        }
        "continuation" => {
            let params = continuation::ContinuationParams::from_params(&unit.params);
            let (trace, config, store, summ, p) = (
                s.trace.clone(),
                s.config,
                s.store,
                s.summarizer,
                params.clone(),
            );
            let (seed, prices) = (unit.seed, s.prices);
            let (replay, view) = replay_pool(io, move || {
                continuation::prepare(&trace, &config, &p, summ.as_ref(), &prices, store, seed)
            })
            .await?;
            let mut out = base(&replay)?;
            if out.error.is_some() {
                return Ok(out);
            }
            let steps = match &view {
                Some(v) => {
                    let agent = shared.providers(ctx.no_cache)?.agent.clone();
                    let (steps, usage) =
                        continuation::ask(&s.trace, v, params.steps, agent.as_ref(), &nonce)
                            .await?;
                    shared.eval_agent(&mut out, &usage);
                    steps
                }
                None => Vec::new(),
            };
            let (scores, evidence) =
                continuation::score(&params, view.as_ref().map(|v| v.trace_index), &steps);
            out.scores.extend(scores);
            out.evidence = evidence;
            Ok(out)
        }
        "rules" => {
            let params = rules::RulesParams::from_params(&unit.params)?;
            let (trace, config, store, summ, p) = (
                s.trace.clone(),
                s.config,
                s.store,
                s.summarizer,
                params.clone(),
            );
            let (seed, prices) = (unit.seed, s.prices);
            let prepared = replay_pool(io, move || {
                rules::prepare(&trace, &config, &p, summ.as_ref(), &prices, store, seed)
            })
            .await?;
            let mut out = base(&prepared.replay)?;
            if out.error.is_some() {
                return Ok(out);
            }
            let providers = shared.providers(ctx.no_cache)?;
            let judge = judge_provider(providers, params.judge, "rules")?;
            let answer =
                rules::ask(&prepared.probe, providers.agent.as_ref(), judge, &nonce).await?;
            let (scores, evidence) = rules::score(&params, &prepared.probe, answer.as_ref());
            out.scores.extend(scores);
            out.evidence = evidence;
            if let (Some(j), Some(a)) = (judge, &answer) {
                judge_cost(shared, j, &a.judge_usage, &mut out);
            }
            Ok(out)
        }
        other => Err(EvalError::Config(format!("unknown eval `{other}`"))),
    }
}
