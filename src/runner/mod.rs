//! The suite runner: plan units, dispatch them, journal results, resume, shard and merge.
//!
//! - [`plan`]: units (trace × variant × eval sample × repeat) with stable ids and order.
//! - [`shard`]: `--shard i/n` by stable hash of the unit id.
//! - [`execute`]: the [`UnitExecutor`] trait evals plug into, and the async dispatcher.
//! - [`resume`], [`budget`], [`progress`], [`manifest`] (`run.json`'s runner fields), [`merge`].
//!   The run directory itself (paths, `run.json`, the `samples.jsonl` journal) is
//!   `record::RunDir`'s.
//! - [`stores`]: offload stores pruned after a run (kept for the samples shown in full).
//! - [`session`]: one `ctxbench run` from suite to finished run directory.
//! - [`synthetic`]: a deterministic executor for harness tests.
// No `unsafe` here, not even with a bench behind it (docs/architecture.md, "No `unsafe`").
#![forbid(unsafe_code)]

pub mod budget;
pub mod execute;
pub mod manifest;
pub mod merge;
pub mod plan;
pub mod progress;
pub mod resume;
pub mod session;
pub mod shard;
pub mod stores;
pub mod synthetic;
pub mod todo;

pub use execute::{
    blocking_io, cpu, on_one_thread_each, replay_pool, Router, RunContext, UnitExecutor,
    UnitFuture, UnitOutput,
};
pub use plan::{Plan, Unit};
pub use shard::Shard;

use crate::config::LoadedSuite;

/// Evals the suite asks for that `router` cannot run (checked before a run directory is made).
pub fn unsupported_evals(suite: &LoadedSuite, router: &Router) -> Vec<String> {
    let mut evals: Vec<String> = plan::eval_samples(suite)
        .into_iter()
        .map(|s| s.eval)
        .filter(|e| !router.handles(e))
        .collect();
    evals.dedup();
    evals
}
