//! Targeted evals: needle recall through the offload store, goal drift, probes and invariants.
//!
//! Each eval isolates one mechanism. The pure parts (planting, ground truth, scoring, the
//! sandboxed file tools) are separate modules; `needle`, `drift`, `probes`, `continuation` and
//! `rules` combine them with an engine replay and a provider, and `executors` plugs them into the
//! runner: one run hook per eval (`executors/<name>.rs`), registered by one line of its `evals!`.

pub mod actions;
pub mod agent;
pub(crate) mod answer_format;
pub mod continuation;
pub mod drift;
pub mod estimate;
pub mod executors;
pub mod fs_tools;
pub mod needle;
pub mod offline_agent;
pub mod plant;
pub mod prefixes;
pub mod probes;
pub mod rubric;
pub mod rules;
pub(crate) mod safe_fs;
pub mod summaries;
pub(crate) mod truth;

use crate::providers::ProviderError;

/// Why an eval sample could not be scored. Recorded in the sample (kind + message); the run
/// goes on. Every variant caused by a lower error keeps it as its `source()`, so the chain can
/// be walked (the message still names the cause, as recorded runs always did).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A unit the eval cannot run as planned (no lower error behind it).
    #[error("{0}")]
    Config(String),
    /// The variant's engine configuration does not resolve for this trace.
    #[error(transparent)]
    Resolve(#[from] crate::confcore::ConfigError),
    /// A unit's params do not decode into its eval's typed params.
    #[error("{eval} params: {source}")]
    Params {
        eval: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A provider role could not be built (shared by every unit of the run).
    #[error("provider `{role}`: {source}")]
    ProviderSetup {
        role: &'static str,
        #[source]
        source: std::sync::Arc<ProviderError>,
    },
    /// The replay failed.
    #[error("engine: {0}")]
    Engine(#[from] crate::engine::EngineError),
    /// The replay ran but left nothing to ask from.
    #[error("engine: {0}")]
    Replay(&'static str),
    #[error("{0}")]
    Provider(#[from] ProviderError),
    /// File I/O of the eval (`context` says what it was doing, or is empty).
    #[error("io: {context}{source}")]
    Io {
        context: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl From<std::io::Error> for EvalError {
    fn from(source: std::io::Error) -> Self {
        EvalError::Io {
            context: "",
            source,
        }
    }
}

impl EvalError {
    /// Stable kind for `UnitError::kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            EvalError::Config(_)
            | EvalError::Resolve(_)
            | EvalError::Params { .. }
            | EvalError::ProviderSetup { .. } => "eval_config",
            EvalError::Engine(_) | EvalError::Replay(_) => "engine",
            EvalError::Provider(p) => p.kind(),
            EvalError::Io { .. } => "io",
        }
    }
}

#[cfg(test)]
mod error_tests {
    use super::EvalError;
    use std::error::Error;

    /// The errors an eval wraps stay reachable as sources (what `--verbose`-style chains walk),
    /// and the recorded message and kind read as before.
    #[test]
    fn wrapped_errors_keep_their_source() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = EvalError::Io {
            context: "recording summaries: ",
            source: io,
        };
        assert_eq!(e.to_string(), "io: recording summaries: gone");
        assert_eq!(e.kind(), "io");
        assert_eq!(e.source().unwrap().to_string(), "gone");
        let bad = serde_json::from_str::<u32>("\"x\"").unwrap_err();
        let e = EvalError::Params {
            eval: "drift",
            source: bad,
        };
        assert_eq!(e.kind(), "eval_config");
        assert!(e.source().is_some());
        let e: EvalError = crate::engine::EngineError::Config(crate::confcore::ConfigError::new(
            "suite.toml",
            3,
            "bad window",
        ))
        .into();
        assert!(e.to_string().starts_with("engine: "), "{e}");
        assert!(e.source().is_some());
        assert!(EvalError::Config("plain".into()).source().is_none());
    }
}
