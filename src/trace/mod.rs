//! Traces: the canonical model, its JSONL wire format, and importers for recorded formats.

pub(crate) mod discover;
pub mod import;
pub mod io;
pub mod memo;
pub mod model;

pub use import::ImportError;
pub use model::*;
