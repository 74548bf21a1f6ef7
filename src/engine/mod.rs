//! The compression engine: ordered layers applied before every replayed model call, the offload
//! store, the summarizer interface, presets, replay and invariants.
//!
//! Entry point for evals and the runner: [`replay`](fn@replay) with a [`ResolvedConfig`] (from
//! [`EngineConfig::resolve`]) and a [`ReplayEnv`] (summarizer, store location, system prompt,
//! tools, which views to keep). See `docs/engine.md` for the layer interface.
// No `unsafe` here, not even with a bench behind it (docs/architecture.md, "No `unsafe`").
#![forbid(unsafe_code)]

pub mod config;
pub mod cooldown;
pub mod event;
pub mod external;
pub mod fixture;
pub mod invariants;
pub mod layer;
pub(crate) mod layer_config;
pub mod layers;
pub mod outcome;
pub mod presets;
pub mod recorded;
pub mod replay;
pub mod resolve;
pub mod store;
pub mod summarizer;
pub mod view;

pub use config::EngineConfig;
pub use event::{Event, EventDetail, StoreWrite, Summary};
pub use invariants::{InvariantReport, Rule, Violation};
pub use layer::{CallCtx, Layer, MessageCtx};
pub use layer_config::LayerConfig;
pub use outcome::SummaryFailures;
pub use replay::{
    replay, replay_owned, replay_shared, CallRecord, Fork, KeepViews, KeptView, Prefix, Replay,
    ReplayEnv, StoreTarget,
};
pub use resolve::{AddedContext, ResolvedConfig, WindowSource};
pub use store::OffloadStore;
pub use summarizer::{
    FixedSummarizer, OfflineSummarizer, Summarizer, SummaryError, SummaryOutput, SummaryRequest,
};

/// A replay that could not run (bad configuration, store I/O, bad fixture input).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] crate::confcore::ConfigError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Input(#[from] crate::trace::ImportError),
    /// The external engine failed (died, hung, wrote an unexpected line).
    #[error(transparent)]
    External(#[from] external::ExternalError),
}
