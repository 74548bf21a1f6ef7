//! Targeted evals: needle recall through the offload store, goal drift, probes and invariants.
//!
//! Each eval isolates one mechanism. The pure parts (planting, ground truth, scoring, the
//! sandboxed file tools) are separate modules; `needle`, `drift`, `probes`, `continuation` and
//! `rules` combine them with an engine replay and a provider, and `executors` plugs them into the
//! runner: one run hook per eval (`executors/<name>.rs`), registered by one line of its `evals!`.

pub mod actions;
pub mod agent;
pub mod answer_format;
pub mod continuation;
pub mod drift;
pub mod executors;
pub mod fs_tools;
pub mod needle;
pub mod offline_agent;
pub mod plant;
pub mod probes;
pub mod rubric;
pub mod rules;
pub mod safe_fs;
pub mod summaries;
pub mod truth;

use crate::providers::ProviderError;

/// Why an eval sample could not be scored. Recorded in the sample (kind + message); the run
/// goes on.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Config(String),
    #[error("engine: {0}")]
    Engine(String),
    #[error("{0}")]
    Provider(#[from] ProviderError),
    #[error("io: {0}")]
    Io(String),
}

impl EvalError {
    /// Stable kind for `UnitError::kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            EvalError::Config(_) => "eval_config",
            EvalError::Engine(_) => "engine",
            EvalError::Provider(p) => p.kind(),
            EvalError::Io(_) => "io",
        }
    }
}
