//! ctxbench: replay recorded agent traces through context-compression engines, run targeted
//! evals (needle recall, goal drift, probes, invariants) and report tokens, cost and quality.
//!
//! The binary in `main.rs` is a thin shell over this library; every subcommand lives in `cli/`.
//!
//! # Layout and layering
//!
//! Each top-level module has a rank; a module imports (`crate::…`) only modules of a lower rank,
//! so dependencies run one way and the module graph has no cycles. `tests/layering.rs` scans
//! `src/` and fails on an import against this table (keep the two in step).
//!
//! | rank | module | owns |
//! |---|---|---|
//! | 0 | [`error`] | `UsageError` and the documented exit codes |
//! | 0 | [`output`] | how things are shown to a person: tables, progress, colour |
//! | 1 | [`trace`] | the canonical trace model, its JSONL format, the importers |
//! | 1 | [`record`] | on-disk records: per-sample results, run info |
//! | 2 | [`tokens`] | token counters (BPE, approximate), count caches, trace statistics |
//! | 2 | [`pricing`] | model prices: bundled table, suite overrides, cost of a call |
//! | 2 | [`metrics`] | statistics over results (CIs, paired deltas, McNemar, pass@k) |
//! | 3 | [`config`] | the suite file: loading, validation, source lines for errors |
//! | 3 | [`gate`] | CI gate rules over a candidate and a baseline run |
//! | 4 | [`engine`] | compression layers, offload store, summarizer interface, replay |
//! | 4 | [`report`] | report writers (markdown, HTML, CSV, JSON, JUnit, plots) |
//! | 5 | [`providers`] | model providers (HTTP clients, cache, retries, limits), the summarizer over a provider |
//! | 5 | [`runner`] | plan, dispatch (`UnitExecutor`), journal, resume, shard, merge |
//! | 6 | [`evals`] | the evals and their executors (implement `runner::UnitExecutor`), the offline agent |
//! | 7 | [`cli`] | subcommands; `cli::run::default_router` is the composition root |
//!
//! Directions worth knowing:
//! - errors shared by runner and CLI live in [`error`]; `cli::exit_code_for` stays at the top
//!   because it recognises the error types of lower modules;
//! - the runner knows only its executor trait; the evals implement it, and the CLI's run
//!   command wires them together (`cli::run::default_router`);
//! - [`pricing`] is a leaf: a run builds one `PriceTable` (bundled + the suite's `[pricing]`)
//!   and hands it to the engine (`engine::ReplayEnv::prices`, read by the `cost_ceiling` layer)
//!   and to the costs the reports show, so both use the same prices;
//! - the offline agent answers the evals' questions, so it lives in `evals::offline_agent`
//!   (which also builds it: `providers::build_provider` builds the HTTP providers only);
//! - `tokens` counts trace messages (tokens → trace); `trace` never imports `tokens`.
//!
//! One exception remains, listed in `tests/layering.rs`: `gate` borrows `report`'s markdown
//! escaping for its summary (to move into the report writers).

pub mod cli;
pub mod config;
pub mod engine;
pub mod error;
pub mod evals;
pub mod gate;
pub mod metrics;
pub mod output;
pub mod pricing;
pub mod providers;
pub mod record;
pub mod report;
pub mod runner;
pub mod tokens;
pub mod trace;
