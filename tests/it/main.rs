//! The integration tests: one binary (each file below was its own, each linking the whole
//! library; one link instead of ~50 on a 2-core CI). Tests that install a global allocator
//! stay in binaries of their own (tests/replay_memory.rs, tests/run_memory.rs).

mod support;

mod bench_synth;
mod ci_workflow;
mod clean;
mod cli_errors;
mod cost_model;
mod engine_cli;
mod engine_exposure;
mod engine_layers;
mod engine_presets_datasets;
mod engine_props;
mod engine_random;
mod engine_registry;
mod engine_replay;
mod evals_continuation;
mod evals_determinism;
mod evals_probes;
mod evals_rules;
mod evals_summaries;
mod evals_validity;
mod fault_suite;
mod fs_tools_hostile;
mod gate_exit;
mod golden_fixtures;
mod html_chromium;
mod import_bad_input;
mod import_cli;
mod import_datasets;
mod import_formats;
mod import_real;
mod import_roundtrip;
mod layering;
mod local_llm;
mod providers_cache;
mod providers_http;
mod providers_summarizer;
mod report_cli;
mod report_writers;
mod run_overrides;
mod run_signals;
mod runner_cli;
mod runner_dispatch;
mod runner_replay;
mod runner_summary_io;
mod schemas;
mod secrets_redaction;
mod suite_config;
mod summary_failures;
mod token_corpora;
mod tokens_cache;
mod tokens_exact;
mod trace_discovery;
mod traces_stats;
