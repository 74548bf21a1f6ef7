//! Runner executors for the evals, one run hook per eval (`executors/<name>.rs`, an [`Eval`])
//! registered once in `evals!`. Replays run on the rayon pool through [`crate::runner::cpu`]
//! when their summarizer is offline (pure CPU), and on tokio's blocking pool through
//! [`crate::runner::blocking_io`] when it is a model (the replay waits on the network; see
//! `providers::summarizer`); other provider calls are awaited on the runner's tokio runtime.
//! A cancelled unit cancels its summary calls (they return `SummaryError::Cancelled`).
//!
//! Cost model of a sample: the replayed agent's calls (the views the engine built) are priced at
//! the trace's recorded model (`trace.meta.model`; unknown → "price unknown"); summarizer calls
//! at the summary provider's model. Probe and judge calls made by the eval itself are reported
//! in `scores` (`probe_*`) and in `tokens.judge` respectively, so a variant's cost is what its
//! compression costs, not what measuring it costs.
//!
//! [`runner::cpu`]: crate::runner::cpu
//! [`runner::blocking_io`]: crate::runner::blocking_io

mod shared;
mod unit;

use super::EvalError;
use crate::config::LoadedSuite;
use crate::record::UnitError;
use crate::runner::{Plan, Router, RunContext, Unit, UnitExecutor, UnitFuture, UnitOutput};
use serde_json::json;
pub use shared::Providers;
use shared::{price_model, Shared};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
pub use unit::{HoldsReplay, Prep, PrepareFn, Ready, UnitCx};

/// One eval's run hook. The unit's setup (trace, resolved config, store, summarizer) comes
/// ready in the [`UnitCx`]; the hook replays (`cx.replay(…)`), takes the replay's tokens and
/// cost (`cx.base(…)`), asks, scores and prices what it asked. The window and the models the
/// tokens were priced at are added to the evidence afterwards, for every eval alike.
pub trait Eval {
    /// The eval's name: its suite table (`[evals.<name>]`, registered in `config::evals`) and
    /// the `eval` of its units and samples.
    const NAME: &'static str;

    /// Run one unit. An error is recorded in the sample (kind + message); the run goes on.
    fn run(cx: &UnitCx<'_>) -> impl Future<Output = Result<UnitOutput, EvalError>> + Send;
}

macro_rules! evals {
    ($($module:ident :: $eval:ident,)+) => {
        $(mod $module;)+

        /// The eval names this module executes, in registry order.
        pub const EVALS: &[&str] = &[$(<$module::$eval as Eval>::NAME,)+];

        fn with_every_eval(router: Router, shared: &Arc<Shared>) -> Router {
            router
                $(.with(
                    <$module::$eval as Eval>::NAME,
                    Arc::new(EvalExecutor::<$module::$eval>(shared.clone(), PhantomData)),
                ))+
        }
    };
}

// Adding an eval: its spec in `evalspec` (typed params, metrics), its section in
// `config::evals` (table, checks, samples), then a new `<name>.rs` here with a type
// implementing `Eval` and one line below. Tests check that the three lists name the same evals.
evals! {
    replay::Replay,
    invariants::Invariants,
    needle::Needle,
    drift::Drift,
    probes::Probes,
    continuation::Continuation,
    rules::Rules,
}

/// Register every eval executor on `router`.
pub fn register(router: Router, plan: &Arc<Plan>, suite: &LoadedSuite) -> anyhow::Result<Router> {
    let shared = Arc::new(Shared::new(plan.clone(), suite)?);
    Ok(with_every_eval(router, &shared))
}

/// Runs the units of eval `E`.
struct EvalExecutor<E>(Arc<Shared>, PhantomData<fn() -> E>);

impl<E: Eval> UnitExecutor for EvalExecutor<E> {
    fn is_offline(&self, _unit: &Unit) -> bool {
        self.0.offline()
    }

    fn flush(&self) -> std::io::Result<()> {
        self.0.flush_summaries()
    }

    fn execute<'a>(&'a self, unit: &'a Unit, ctx: &'a RunContext) -> UnitFuture<'a> {
        Box::pin(async move {
            let held = unit::StoreSlot::default();
            let error = |e: &EvalError| UnitError {
                kind: e.kind().into(),
                message: e.to_string(),
            };
            let mut out = match UnitCx::new(&self.0, unit, ctx, held.clone()) {
                Ok(cx) => {
                    // Dropped unfinished (the unit cancelled): what its calls spent is left
                    // for the run to record.
                    let mut on_cancel = OnCancel {
                        cx: &cx,
                        unit,
                        ctx,
                        armed: true,
                    };
                    let result = run_unit::<E>(&self.0, &cx).await;
                    on_cancel.armed = false;
                    match result {
                        Ok(out) => out,
                        // What the unit spent before it failed still counts (run totals,
                        // budget).
                        Err(e) => UnitOutput {
                            causes: causes(&e),
                            ..cx.spent_output(error(&e))
                        },
                    }
                }
                Err(e) => UnitOutput {
                    error: Some(error(&e)),
                    causes: causes(&e),
                    ..UnitOutput::default()
                },
            };
            out.store = held.take();
            out
        })
    }
}

/// Armed while a unit runs: dropped armed (the unit's future was dropped: cancelled by a second
/// Ctrl-C or the end of the grace), it leaves what the unit's calls had spent, as an
/// `interrupted` error output, in the run's [`crate::runner::execute::CancelledSpend`].
struct OnCancel<'c, 'a> {
    cx: &'c UnitCx<'a>,
    unit: &'c Unit,
    ctx: &'c RunContext,
    armed: bool,
}

impl Drop for OnCancel<'_, '_> {
    fn drop(&mut self) {
        if self.armed && self.cx.made_calls() {
            let out = self.cx.spent_output(UnitError {
                kind: "interrupted".into(),
                message: "cancelled while running (a second Ctrl-C, or the grace after the \
                          first one was over): the tokens and cost are those of the calls it \
                          had made"
                    .into(),
            });
            self.ctx.cancelled.push(self.unit, out);
        }
    }
}

/// The errors behind `e`, outermost first; a cause whose text its parent's message already
/// ends with (`io: {source}`, `needle params: {source}`) is not repeated.
fn causes(e: &EvalError) -> Vec<String> {
    let mut out = Vec::new();
    let mut shown = e.to_string();
    let mut next = std::error::Error::source(e);
    while let Some(c) = next {
        let text = c.to_string();
        if !shown.ends_with(&text) {
            out.push(text.clone());
        }
        shown = text;
        next = c.source();
    }
    out
}

async fn run_unit<E: Eval>(shared: &Shared, cx: &UnitCx<'_>) -> Result<UnitOutput, EvalError> {
    let resolved = cx.config.clone();
    let trace_model = cx.trace().meta.model.clone();
    let mut out = E::run(cx).await?;
    cx.account_calls(&mut out);
    // A server that cut prompts to its context without an error makes the answers meaningless:
    // the sample is flagged with the count (the report and the run's end say so). Every unit
    // that asked an agent carries it, 0 included: the metric's mean (and a gate rule on it) is
    // over all of them, not over the flagged ones only.
    if let Some(truncated) = cx.truncated_prompts() {
        out.scores
            .insert("prompt_truncated".into(), f64::from(truncated));
    }
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

#[cfg(test)]
mod tests {
    use super::{causes, EvalError, EVALS};
    use crate::config::evals::EVAL_NAMES;

    /// Every eval a suite can enable has a run hook, in the same order (a section registered
    /// in `config::evals` without a line in `evals!`, or the reverse, fails here).
    #[test]
    fn every_suite_eval_has_an_executor() {
        assert_eq!(EVALS, EVAL_NAMES);
    }

    #[test]
    fn causes_list_the_chain_without_repeating_a_message() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot write the store")]
        struct Outer(#[source] std::io::Error);
        let root = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full");
        let e = EvalError::Io {
            context: "offload: ",
            source: std::io::Error::other(Outer(root)),
        };
        // `io: offload: cannot write the store` already shows the io error's text; below it
        // comes what `Outer` wraps.
        assert_eq!(e.to_string(), "io: offload: cannot write the store");
        assert_eq!(causes(&e), ["disk full"]);
        assert!(causes(&EvalError::Config("x".into())).is_empty());
    }

    /// Every eval has its spec (typed params, declared metrics) in `evalspec`, in the same
    /// order, and the spec list names no eval without a suite section and a run hook.
    #[test]
    fn every_eval_has_a_spec() {
        let specs: Vec<&str> = crate::evalspec::EVALS.iter().map(|s| s.name).collect();
        assert_eq!(specs, EVALS);
    }

    /// The three files of an eval (docs/architecture.md, "an eval") are each registered: a
    /// file declaring an eval's spec, suite section or run hook whose registration line was
    /// forgotten is not even compiled, so the lists above cannot see it; it fails here. Each
    /// directory holds exactly one such file per registered eval, named after it.
    #[test]
    fn every_eval_file_is_registered() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut names = EVALS.to_vec();
        names.sort_unstable();
        for (dir, marker, list) in [
            ("evalspec", "pub const SPEC: EvalSpec", "eval_specs!"),
            ("config/evals", "impl EvalSection for ", "eval_sections!"),
            ("evals/executors", "impl Eval for ", "evals!"),
        ] {
            let mut files = Vec::new();
            for f in std::fs::read_dir(src.join(dir)).unwrap() {
                let path = f.unwrap().path();
                // mod.rs holds the registry (and this test's markers), never an eval.
                if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("mod.rs")
                    && std::fs::read_to_string(&path).unwrap().contains(marker)
                {
                    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                    files.push(stem);
                }
            }
            files.sort_unstable();
            assert_eq!(
                files, names,
                "src/{dir}: the files with `{marker}` are not the evals registered in {list}"
            );
        }
    }
}
