//! Suite configuration (`suite.toml`): types, defaults, validation with file:line errors.
//!
//! - [`suite`]: the `suite.toml` types (and the JSON Schema generated from them).
//! - [`load`]: [`LoadedSuite`], a parsed suite with typed engine variants and provider roles.
//! - [`evals`]: the `[evals]` sections, one file per eval, registered once (the eval names).
//! - [`validate`]: checks the types cannot express; prompt files.
//! - [`overrides`]: `--set` and the `--variant`/`--trace`/`--eval`/`--limit` selection.
//! - [`variants`]: `[engine.base]` + variants / grid, merged by [`crate::confcore::merge`].
//! - `discover`: `traces.paths` expanded into trace files.
//! - [`source`]: a map from TOML key paths to line numbers, built from `toml`'s spans, so any
//!   later validation (engine, providers) can point at the line it rejects.
//! - [`keys`]: unknown-key detection against the JSON Schema generated from the types, with
//!   "did you mean" suggestions (Levenshtein).

pub(crate) mod discover;
pub mod evals;
pub mod keys;
pub mod load;
pub mod overrides;
pub mod source;
pub mod suite;
#[cfg(test)]
mod suite_tests;
pub mod typed;
pub mod validate;
pub mod variants;

pub use load::LoadedSuite;
pub use overrides::Overrides;
pub use source::SourceMap;
pub use suite::{Suite, Variant};

pub use crate::confcore::{did_you_mean, suggest, ConfigError};
