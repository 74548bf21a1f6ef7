//! Errors and exit codes shared by every layer: the lowest module, imported by `runner` and `cli`.
//!
//! Exit codes (documented in docs/reliability.md, stable for CI use):
//! - 0  success
//! - 1  runtime failure (I/O, provider failure that the run was told to treat as fatal, …)
//! - 2  bad usage, bad configuration or bad input (file, line and what was expected are printed)
//! - 10 a gate rule failed (`ctxbench gate`)
//! - 130 interrupted (Ctrl-C); a partial report was written
//! - 143 terminated (SIGTERM); handled like Ctrl-C, a partial report was written
//!
//! Mapping an error chain to its code is `cli::exit_code_for`: it needs the error types of
//! higher modules (config, trace, providers), so it lives at the top.

pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILURE: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_GATE_FAILED: u8 = 10;
pub const EXIT_INTERRUPTED: u8 = 130;
pub const EXIT_TERMINATED: u8 = 143;

/// Errors that mean "the user gave us something wrong": exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
