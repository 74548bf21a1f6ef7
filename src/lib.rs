//! ctxbench: replay recorded agent traces through context-compression engines, run targeted
//! evals (needle recall, goal drift, probes, invariants) and report tokens, cost and quality.
//!
//! The binary in `main.rs` is a thin shell over this library; every subcommand lives in `cli/`.
//!
//! # Layout and layering
//!
//! Each top-level module has a rank; a module imports (`crate::…`) only modules of a lower rank,
//! so dependencies run one way and the module graph has no cycles. `tests/it/layering.rs` scans
//! `src/` and fails on an import against this table (keep the two in step).
//!
//! | rank | module | owns |
//! |---|---|---|
//! | 0 | [`error`] | `UsageError` and the documented exit codes |
//! | 0 | [`output`] | how things are shown to a person: tables, progress, colour |
//! | 0 | [`confcore`] | `ConfigError` (file, line, key path), the one deep-merge rule, constrained-value newtypes |
//! | 1 | [`trace`] | the canonical trace model, its JSONL format, discovery, the importers |
//! | 1 | [`record`] | on-disk records: per-sample results, run info; `RunDir` owns the run directory |
//! | 1 | [`evalspec`] | each eval declared once: its typed params and its metrics (polarity, kind, headline) |
//! | 2 | [`tokens`] | token counters (BPE, approximate), count caches, trace statistics |
//! | 2 | [`pricing`] | model prices: bundled table, suite overrides, cost of a call |
//! | 2 | [`metrics`] | statistics over results (CIs, paired deltas, McNemar, pass@k), number formats |
//! | 3 | [`gate`] | CI gate rules over a candidate and a baseline run (verdicts as data) |
//! | 4 | [`engine`] | compression layers and their configs, offload store, summarizer interface, replay |
//! | 4 | [`report`] | one table model and its writers (markdown, HTML, terminal, CSV, JSON, JUnit, plots) |
//! | 5 | [`providers`] | model providers (HTTP clients, cache, retries, limits, key redaction), the summarizer over a provider |
//! | 6 | [`config`] | the suite file, typed once at load (engine variants, provider roles, gate rules) |
//! | 7 | [`runner`] | plan, dispatch (`UnitExecutor`), resume, shard, merge |
//! | 8 | [`evals`] | the evals and their executors (implement `runner::UnitExecutor`), the offline agent |
//! | 9 | [`cli`] | subcommands; `cli::run::default_router` is the composition root |
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
//! - [`evalspec`] sits low (rank 1) so that `metrics`, `report` and `config` can read what
//!   each eval declares (params, metric polarity, headlines) without importing `evals`.
//!
//! - `config` sits above `engine`, `providers` and `gate` because it types their sections at
//!   load (nothing past `config/` reads raw TOML); what they need of configuration errors and
//!   merging lives below them in [`confcore`];
//! - `gate` computes verdicts; `report` renders them (JUnit, step summary, terminal lines).
//!
//! A compression layer is one file in `engine/layers/` plus one line in the registry of
//! `engine/layers/mod.rs`. An eval is its spec in `evalspec/` (typed params and declared
//! metrics, one line in `eval_specs!`), its suite section in `config/evals/` (one line in
//! `eval_sections!`, where eval names come from) and its run hook in `evals/executors/` (one
//! line in `evals!`). The data flow, and how to add a layer, an eval, a provider, an
//! importer or a report section: `docs/architecture.md` (with `docs/engine.md` for layers and
//! `docs/report.md` for reports).
// An exception needs `#[allow(unsafe_code)]` with `// SAFETY:` and `// PAYS:` lines (a criterion
// bench of a user workload); `cli`, `engine`, `report` and `runner` forbid it
// (docs/architecture.md, "No `unsafe`").
#![deny(unsafe_code)]
// `println!`/`eprintln!` panic when the stream is closed (`| head`, `2>&1 | true`): output goes
// through `cli::emit` (`out!`, `outln!`) and `output::emit_err` (`err!`, `errln!`) instead.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod confcore;
pub mod config;
pub mod engine;
pub mod error;
pub mod evals;
pub mod evalspec;
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
