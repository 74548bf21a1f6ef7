//! ctxbench: replay recorded agent traces through context-compression engines, run targeted
//! evals (needle recall, goal drift, probes, invariants) and report tokens, cost and quality.
//!
//! The binary in `main.rs` is a thin shell over this library; every subcommand lives in `cli/`.

pub mod cli;
pub mod confcore;
pub mod config;
pub mod engine;
pub mod evals;
pub mod gate;
pub mod metrics;
pub mod output;
pub mod providers;
pub mod record;
pub mod report;
pub mod runner;
pub mod tokens;
pub mod trace;
