//! One unit's context, handed to an eval's run hook: the loaded trace, the variant's resolved
//! config, the unit's offload store and summarizer, and the shared steps every eval takes
//! (replay on the right pool → the replay's tokens, cost and summaries → ask → price the asking).

use super::shared::{Providers, Shared, Summaries};
use crate::engine::{self, OfflineSummarizer, ResolvedConfig, Summarizer};
use crate::evals::fs_tools::MemFiles;
use crate::evals::prefixes::Prefixes;
use crate::evals::{self, EvalError};
use crate::pricing::Calls;
use crate::pricing::PriceTable;
use crate::providers::summarizer::{ProviderSummarizer, SummaryCancel};
use crate::providers::Provider;
use crate::record::RunDir;
use crate::runner::{replay_pool, RunContext, Unit, UnitOutput};
use crate::trace::Trace;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// What a replay on the CPU (or blocking) pool gets: owned, so the closure can move it there.
pub struct Prep {
    pub trace: Arc<Trace>,
    pub config: Arc<ResolvedConfig>,
    /// The unit's offload store directory (under the run directory; starts empty).
    pub store: PathBuf,
    pub summarizer: Arc<dyn Summarizer>,
    pub prices: Arc<PriceTable>,
    /// The unit's seed (offload-store names, anything random in the replay).
    pub seed: u64,
    /// Where a store held in memory is left for the runner (`runner::stores::StorePolicy`).
    pub held: StoreSlot,
}

/// An eval's `prepare` (plant, replay, build views): the unit's setup and the eval's params in,
/// the prepared value (which holds the replay) out.
pub type PrepareFn<P, T> = fn(
    &Trace,
    &ResolvedConfig,
    &P,
    &dyn Summarizer,
    &PriceTable,
    PathBuf,
    u64,
) -> Result<T, EvalError>;

/// A prepared value's replay (what [`UnitCx::base`] reads).
pub trait HoldsReplay {
    fn replay(&self) -> &engine::Replay;
}

impl HoldsReplay for evals::needle::Prepared {
    fn replay(&self) -> &engine::Replay {
        &self.replay
    }
}

impl HoldsReplay for evals::rules::Prepared {
    fn replay(&self) -> &engine::Replay {
        &self.replay
    }
}

impl HoldsReplay for evals::probes::Prepared {
    fn replay(&self) -> &engine::Replay {
        &self.replay
    }
}

impl<V> HoldsReplay for (engine::Replay, V) {
    fn replay(&self) -> &engine::Replay {
        &self.0
    }
}

/// What [`UnitCx::prepare`] gives an eval: the prepared value and the replay's base output to
/// ask with, or the base output alone when a summary failed (returned as it is: no call is made
/// for numbers that will not count).
pub enum Ready<T> {
    Ask(T, UnitOutput),
    Done(UnitOutput),
}

/// A unit being run: what its eval's run hook reads and the steps it shares with every eval.
pub struct UnitCx<'a> {
    pub unit: &'a Unit,
    /// Keys the unit's provider calls in the response cache (`<unit id>/r<repeat>`).
    pub nonce: String,
    pub(super) shared: &'a Shared,
    ctx: &'a RunContext,
    trace: Arc<Trace>,
    pub(super) config: Arc<ResolvedConfig>,
    store: PathBuf,
    summarizer: Arc<dyn Summarizer>,
    /// The summarizer calls a model: the replay must run on a thread that may wait.
    waits_on_network: bool,
    /// Cancels the summary calls when the unit ends or is aborted (dropped with the context).
    _cancel: Option<SummaryCancel>,
    /// Records the replay's summaries: on the replay's thread for an asking eval
    /// ([`UnitCx::prepare_by`]), where it is called for the others ([`UnitCx::base`]).
    summaries: Arc<Summaries>,
    /// The unit's agent calls whose prompt the server reported truncated (see
    /// [`UnitCx::agent`]).
    truncated: Arc<AtomicU32>,
    /// The unit asked for its eval agent ([`UnitCx::agent`]): its sample counts the truncated
    /// prompts (0 included), so the metric's mean is over every unit that asked.
    asked_agent: std::sync::atomic::AtomicBool,
    /// What the unit's calls spent so far, role by role ([`UnitCx::spent_output`]).
    ledger: SharedLedger,
    /// The offload store the unit held in memory, handed to the runner with its output.
    held: StoreSlot,
}

/// Where a unit's replay leaves the offload store it held in memory: the executor hands it to
/// the runner with the unit's output ([`UnitOutput::store`]) — also when the unit fails after
/// the replay — and the runner writes it to the run's pack file if it may be kept.
#[derive(Clone, Default)]
pub struct StoreSlot(Arc<std::sync::Mutex<Option<Arc<MemFiles>>>>);

impl StoreSlot {
    /// Leave `files` for the runner (replacing any earlier store of the unit).
    pub fn hold(&self, files: Arc<MemFiles>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(files);
    }

    /// The store left, if any.
    pub fn take(&self) -> Option<Arc<MemFiles>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The role a unit's provider call is spent for ([`Ledger`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// The eval's own agent (needle questions, drift probes, probes, restating).
    EvalAgent,
    Judge,
    Summarizer,
}

/// What a unit's model calls spent, role by role, one entry per call as each response
/// arrives: a unit that fails after some calls (a cut-off answer, a refusal, a timeout of a
/// later call, a failed judge) still records and prices every call it made, the failing
/// one included when it returned a response ([`UnitCx::spent_output`]).
#[derive(Clone, Debug, Default)]
pub(super) struct Ledger {
    pub(super) eval_agent: Calls,
    pub(super) judge: Calls,
    pub(super) summarizer: Calls,
    /// The replay's tokens, cost and compactions once its base output was made (the modelled
    /// agent's, and the summarizer's as the replay counted them).
    base: Option<(
        crate::record::TokensByRole,
        crate::record::CostByRole,
        Compactions,
    )>,
}

type Compactions = std::collections::BTreeMap<String, u64>;

impl Ledger {
    fn calls(&mut self, role: Role) -> &mut Calls {
        match role {
            Role::EvalAgent => &mut self.eval_agent,
            Role::Judge => &mut self.judge,
            Role::Summarizer => &mut self.summarizer,
        }
    }
}

type SharedLedger = Arc<std::sync::Mutex<Ledger>>;

fn lock(ledger: &SharedLedger) -> std::sync::MutexGuard<'_, Ledger> {
    ledger.lock().unwrap_or_else(|e| e.into_inner())
}

/// A provider as one unit sees it: each response's usage is entered in the unit's [`Ledger`]
/// under `role` (each model call of a text-protocol reply on its own), and for the agent the
/// calls whose server reported far fewer prompt tokens than were sent are counted
/// (`ChatResponse::prompt_truncated`), so the sample is flagged.
struct Metered {
    inner: Arc<dyn Provider>,
    role: Role,
    ledger: SharedLedger,
    truncated: Option<Arc<AtomicU32>>,
}

impl Metered {
    /// `r`, entered in the ledger (and counted when its server reported the prompt truncated).
    fn counted(
        &self,
        r: crate::providers::ChatResponse,
    ) -> Result<crate::providers::ChatResponse, crate::providers::ProviderError> {
        if let (Some(t), true) = (&self.truncated, r.prompt_truncated) {
            t.fetch_add(1, Ordering::Relaxed);
        }
        let mut ledger = lock(&self.ledger);
        let calls = ledger.calls(self.role);
        match r.text_tools.as_ref().map(|t| t.call_usages.as_slice()) {
            Some(each) if !each.is_empty() => each.iter().for_each(|u| calls.add(u)),
            _ => calls.add(&r.usage),
        }
        Ok(r)
    }
}

impl Provider for Metered {
    fn info(&self) -> &crate::providers::ProviderInfo {
        self.inner.info()
    }

    fn chat<'a>(
        &'a self,
        request: &'a crate::providers::ChatRequest,
    ) -> crate::providers::BoxFuture<
        'a,
        Result<crate::providers::ChatResponse, crate::providers::ProviderError>,
    > {
        Box::pin(async move { self.counted(self.inner.chat(request).await?) })
    }

    fn chat_after<'a>(
        &'a self,
        history: &'a [Arc<crate::trace::Message>],
        request: &'a crate::providers::ChatRequest,
    ) -> crate::providers::BoxFuture<
        'a,
        Result<crate::providers::ChatResponse, crate::providers::ProviderError>,
    > {
        Box::pin(async move { self.counted(self.inner.chat_after(history, request).await?) })
    }

    fn cache_stats(&self) -> Option<crate::providers::cache::CacheStats> {
        self.inner.cache_stats()
    }
}

impl<'a> UnitCx<'a> {
    pub(super) fn new(
        shared: &'a Shared,
        unit: &'a Unit,
        ctx: &'a RunContext,
        held: StoreSlot,
    ) -> Result<UnitCx<'a>, EvalError> {
        let entry = shared
            .plan
            .traces
            .get(unit.trace)
            .ok_or_else(|| EvalError::Config(format!("unit names trace #{}", unit.trace)))?;
        let trace = entry
            .trace
            .clone()
            .ok_or_else(|| EvalError::Config(format!("trace `{}` was not loaded", entry.id)))?;
        let resolved = shared.resolved(unit.variant_index, unit.trace, &trace.meta)?;
        let config = resolved.config;
        let providers = shared.providers(ctx.no_cache)?;
        let nonce = format!("{}/r{}", unit.id, unit.repeat);
        let ledger = SharedLedger::default();
        let (summarizer, cancel): (Arc<dyn Summarizer>, _) =
            if providers.summary.info().kind == "offline" {
                (Arc::new(OfflineSummarizer), None)
            } else {
                let handle = tokio::runtime::Handle::current();
                let metered = Arc::new(Metered {
                    inner: providers.summary.clone(),
                    role: Role::Summarizer,
                    ledger: ledger.clone(),
                    truncated: None,
                });
                let (summ, cancel) = ProviderSummarizer::new(metered, handle)
                    .with_nonce(nonce.clone())
                    .cancellable();
                (Arc::new(summ), Some(cancel))
            };
        // Stores live under the run directory: stable paths, so evidence can point at them.
        let store = RunDir::new(&ctx.run_dir).unit_store(&unit.id);
        if !ctx.no_stale_stores {
            let _ = std::fs::remove_dir_all(&store); // a resumed unit starts clean
        }
        Ok(UnitCx {
            truncated: Arc::default(),
            asked_agent: Default::default(),
            ledger,
            held,
            unit,
            nonce,
            shared,
            ctx,
            trace,
            summaries: Arc::new(Summaries {
                prompt_digest: resolved.prompt_digest,
                pack: shared.summary_pack(&ctx.run_dir),
            }),
            config,
            store,
            summarizer,
            waits_on_network: cancel.is_some(),
            _cancel: cancel,
        })
    }

    /// The unit's trace (as loaded, before any planting).
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Run `prepare` (plant, replay, build views) on the pool the replay belongs on: rayon when
    /// the summarizer is offline, tokio's blocking pool when it calls a model.
    pub async fn replay<T, F>(&self, prepare: F) -> Result<T, EvalError>
    where
        T: Send + 'static,
        F: FnOnce(Prep) -> Result<T, EvalError> + Send + 'static,
    {
        let prep = Prep {
            trace: self.trace.clone(),
            config: self.config.clone(),
            store: self.store.clone(),
            summarizer: self.summarizer.clone(),
            prices: self.shared.prices.clone(),
            seed: self.unit.seed,
            held: self.held.clone(),
        };
        replay_pool(self.waits_on_network, move || prepare(prep)).await
    }

    /// The opening every asking eval shares: run its `prepare` with a copy of `params` on the
    /// replay's pool ([`UnitCx::replay`]), its summaries recorded there too, then take the
    /// replay's base output (as [`UnitCx::base`] makes it).
    pub async fn prepare<P, T>(
        &self,
        params: &P,
        prepare: PrepareFn<P, T>,
    ) -> Result<Ready<T>, EvalError>
    where
        P: Clone + Send + 'static,
        T: HoldsReplay + Send + 'static,
    {
        let p = params.clone();
        self.prepare_by(move |r| {
            let summ = r.summarizer.as_ref();
            prepare(&r.trace, &r.config, &p, summ, &r.prices, r.store, r.seed)
        })
        .await
    }

    /// [`UnitCx::prepare`] with a `prepare` closure that gets the whole [`Prep`].
    pub async fn prepare_by<T, F>(&self, prepare: F) -> Result<Ready<T>, EvalError>
    where
        T: HoldsReplay + Send + 'static,
        F: FnOnce(Prep) -> Result<T, EvalError> + Send + 'static,
    {
        // The replay's summaries are recorded on the replay's thread, after it: their long
        // texts are written to the run's pack there, not on a worker of the runtime that sends
        // and reads the other units' calls.
        let summaries = self.summaries.clone();
        let (prepared, recorded) = self
            .replay(move |r| {
                let prepared = prepare(r)?;
                let recorded = summaries.of(prepared.replay());
                Ok((prepared, recorded))
            })
            .await?;
        let out = self.base_with(prepared.replay(), recorded)?;
        Ok(if out.error.is_some() {
            Ready::Done(out)
        } else {
            Ready::Ask(prepared, out)
        })
    }

    /// The replay prefixes the run's units share, when this unit's replay may fork from one:
    /// its summarizer is offline (a model's summaries are asked per unit).
    pub fn prefixes(&self) -> Option<Arc<Prefixes>> {
        (!self.waits_on_network && self.shared.prefixes.enabled())
            .then(|| self.shared.prefixes.clone())
    }

    /// Tokens, cost, compactions, timeline and summaries of the unit's replay: what every
    /// sample reports. When a summary failed (`summary_failed` in `error`), an eval that asks
    /// a model returns this output as it is: no call is made for numbers that will not count.
    pub fn base(&self, replay: &engine::Replay) -> Result<UnitOutput, EvalError> {
        self.base_with(replay, self.summaries.of(replay))
    }

    /// [`UnitCx::base`] with the replay's summaries recorded already (`recorded`).
    fn base_with(
        &self,
        replay: &engine::Replay,
        recorded: Result<Vec<crate::record::SummaryRecord>, EvalError>,
    ) -> Result<UnitOutput, EvalError> {
        let mut out = self.shared.replay_output(&self.trace, &self.config, replay);
        lock(&self.ledger).base = Some((out.tokens, out.cost_usd, out.compactions.clone()));
        out.summaries = recorded?;
        Ok(out)
    }

    /// The eval agent for this unit: the run's agent provider, its truncated prompts counted
    /// for the sample ([`UnitCx::truncated_prompts`]).
    pub fn agent(&self) -> Result<Arc<dyn Provider>, EvalError> {
        self.asked_agent.store(true, Ordering::Relaxed);
        Ok(Arc::new(Metered {
            inner: self.providers()?.agent.clone(),
            role: Role::EvalAgent,
            ledger: self.ledger.clone(),
            truncated: Some(self.truncated.clone()),
        }))
    }

    /// Agent calls of this unit whose server reported far fewer prompt tokens than were sent,
    /// or `None` when the unit asked for no eval agent (nothing to count).
    pub fn truncated_prompts(&self) -> Option<u32> {
        self.asked_agent
            .load(Ordering::Relaxed)
            .then(|| self.truncated.load(Ordering::Relaxed))
    }

    /// The run's providers (built on the first unit that needs them).
    pub fn providers(&self) -> Result<&'a Providers, EvalError> {
        self.shared.providers(self.ctx.no_cache)
    }

    /// The judge provider when the eval asks for one (`judge = true`), else `None`; its calls
    /// are entered in the unit's ledger.
    pub fn judge(&self, wanted: bool) -> Result<Option<Arc<dyn Provider>>, EvalError> {
        if !wanted {
            return Ok(None);
        }
        let eval = &self.unit.eval;
        let judge = self.providers()?.judge.clone().ok_or_else(|| {
            EvalError::Config(format!(
                "{eval} asks for a judge but [providers.judge] is not set"
            ))
        })?;
        Ok(Some(Arc::new(Metered {
            inner: judge,
            role: Role::Judge,
            ledger: self.ledger.clone(),
            truncated: None,
        })))
    }

    /// Whether the unit made a model call whose response arrived (its ledger holds a call).
    pub(super) fn made_calls(&self) -> bool {
        let l = lock(&self.ledger);
        [&l.eval_agent, &l.judge, &l.summarizer]
            .iter()
            .any(|c| !c.as_slice().is_empty())
    }

    /// The output of this unit failed with `error`: no scores, but the tokens and cost of
    /// every call it made before the failure (and of the failing call, when it returned a
    /// response: a cut-off or refused answer is billed), each role priced call by call as a
    /// finished unit's are. The replay's numbers (its modelled agent views, its summaries'
    /// tokens and compactions) are kept when the replay finished; else the summarizer's are
    /// the calls it made.
    pub(super) fn spent_output(&self, error: crate::record::UnitError) -> UnitOutput {
        let ledger = lock(&self.ledger).clone();
        let mut out = UnitOutput {
            error: Some(error),
            ..UnitOutput::default()
        };
        match ledger.base {
            Some((tokens, cost, compactions)) => {
                out.tokens = tokens;
                out.cost_usd = cost;
                out.compactions = compactions;
            }
            None => {
                // Nothing of the replay to model: the agent's views are $0, not unknown.
                out.cost_usd.agent = Some(0.0);
                self.shared.summarizer_cost(&mut out, &ledger.summarizer);
            }
        }
        self.shared.eval_agent(&mut out, &ledger.eval_agent);
        let judge = self.providers().ok().and_then(|p| p.judge.as_deref());
        match judge.filter(|_| !ledger.judge.as_slice().is_empty()) {
            Some(judge) => self.shared.judge_cost(judge, &ledger.judge, &mut out),
            None => out.cost_usd.judge = out.cost_usd.judge.or(Some(0.0)),
        }
        out
    }

    /// The eval agent's and the judge's tokens and cost in a finished unit's output, from the
    /// unit's ledger: every call whose response arrived, priced call by call (the one record
    /// of what those roles spent; a failed unit's come from it too, [`UnitCx::spent_output`]).
    /// A role the unit made no call of is left as the eval left it (unused: `None`).
    pub(super) fn account_calls(&self, out: &mut UnitOutput) {
        let ledger = lock(&self.ledger);
        if !ledger.eval_agent.as_slice().is_empty() {
            self.shared.eval_agent(out, &ledger.eval_agent);
        }
        if !ledger.judge.as_slice().is_empty() {
            if let Some(judge) = self.providers().ok().and_then(|p| p.judge.as_deref()) {
                self.shared.judge_cost(judge, &ledger.judge, out);
            }
        }
    }
}
