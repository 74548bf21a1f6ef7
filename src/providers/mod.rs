//! Model providers: the Provider interface, OpenAI-compatible and Anthropic HTTP clients,
//! retries, cache and pricing (the offline baseline agent lives in `evals::offline_agent`).
//!
//! Everything that talks to a model goes through [`Provider::chat`]: summarizers, eval agents,
//! drift probes and judges. A provider is built from a [`ProviderConfig`] by [`build_provider`],
//! which stacks the pieces in this order (outermost first):
//!
//! ```text
//! CachedProvider (only when `cache = true`)  → a hit never touches the network or the limits
//!   └ HttpProvider (openai | anthropic)       → per attempt: concurrency + rpm/tpm limits,
//!                                                per-call timeout; retries with backoff
//! ```
//!
//! Requests use the canonical trace types ([`Message`], [`ToolCall`]) so an engine's view goes
//! straight in; responses carry normalized [`Usage`] (input **includes** cache reads and writes).

pub mod cache;
pub mod config;
pub mod cost;
pub mod http;
pub mod limits;
pub mod retry;
pub(crate) mod secrets;
pub mod summarizer;
#[cfg(test)]
pub(crate) mod testing;
pub mod text_tools;

mod error;
mod request;
mod wire_rules;

pub use error::{classify_overflow, ProviderError, OVERFLOW_PATTERNS};
pub(crate) use error::{clip, redact};
pub use request::{
    ChatRequest, ChatResponse, NoAnswer, Outgoing, ProviderInfo, Sampling, ToolDef,
    PROMPT_TRUNCATION_MIN_TOKENS, PROMPT_TRUNCATION_RATIO,
};

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

pub use crate::pricing::{Price, PriceTable};
pub use crate::trace::{Message, Role, ThinkingBlock, ToolCall, Usage};
pub use cache::CachedProvider;
pub use config::{build_provider, ProviderConfig, ToolProtocol};
pub use cost::cost_of_response;
pub use summarizer::{ProviderSummarizer, SummaryCancel};
pub use text_tools::{TextToolOptions, TextToolProvider, TextToolTelemetry};

/// Declares the HTTP wire protocols and [`ProviderKind`]: one line per protocol,
/// `Variant => "kind", module::Wire` (the module implements [`http::Wire`] and exports
/// `DEFAULT_BASE_URL`). `offline` is built in.
macro_rules! wire_protocols {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $module:ident::$wire:ident,)+) => {
        $(pub mod $module;)+

        /// Each registered wire protocol's `kind` and module (for the registry test).
        #[cfg(test)]
        const WIRE_MODULES: &[(&str, &str)] = &[$(($name, stringify!($module)),)+];

        /// `kind` of a provider table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum ProviderKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)+
            /// The built-in deterministic baseline (no network).
            #[serde(rename = "offline")]
            Offline,
        }

        impl ProviderKind {
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ProviderKind::$variant => $name,)+
                    ProviderKind::Offline => "offline",
                }
            }

            /// The vendor's public API root (`None` for the offline provider).
            pub fn default_base_url(self) -> Option<&'static str> {
                match self {
                    $(ProviderKind::$variant => Some($module::DEFAULT_BASE_URL),)+
                    ProviderKind::Offline => None,
                }
            }

            /// An HTTP provider speaking this kind's wire protocol (`None` for offline).
            pub(crate) fn http_provider(
                self,
                settings: http::HttpSettings,
            ) -> Option<Result<std::sync::Arc<dyn Provider>, ProviderError>> {
                match self {
                    $(ProviderKind::$variant => Some(
                        http::HttpProvider::new($module::$wire, settings)
                            .map(|p| std::sync::Arc::new(p) as std::sync::Arc<dyn Provider>),
                    ),)+
                    ProviderKind::Offline => None,
                }
            }
        }
    };
}

wire_protocols! {
    /// OpenAI chat completions and every compatible server.
    Openai => "openai", openai::OpenAiWire,
    /// Anthropic Messages API.
    Anthropic => "anthropic", anthropic::AnthropicWire,
}

/// A boxed, sendable future: the return type of [`Provider::chat`] (keeps the trait usable as
/// `dyn Provider` without an extra crate).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A chat model behind some API.
///
/// Implementations must be cheap to share (`Arc<dyn Provider>`) and safe to call concurrently;
/// they enforce their own concurrency and rate limits.
pub trait Provider: Send + Sync {
    /// What this provider is (kind, model, default sampling, endpoint without credentials).
    fn info(&self) -> &ProviderInfo;

    /// Send one chat request. Fields of `request` left unset (`model`, sampling parameters) take
    /// the provider's defaults; see [`ProviderInfo::resolve`].
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;

    /// [`chat`](Provider::chat) on `history` followed by `request`'s messages: the request
    /// [`ChatRequest::after`] builds, so a caller holding a long shared history (a needle
    /// sample's planted trace) does not copy it for a provider that can read it in place (the
    /// offline agent). The default copies it into one request; a wrapper forwards it.
    fn chat_after<'a>(
        &'a self,
        history: &'a [std::sync::Arc<Message>],
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        if history.is_empty() {
            return self.chat(request);
        }
        Box::pin(async move { self.chat(&request.after(history)).await })
    }

    /// Hit/miss counters when this provider is a [`CachedProvider`].
    fn cache_stats(&self) -> Option<cache::CacheStats> {
        None
    }
}

impl std::fmt::Debug for dyn Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("info", self.info())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{ProviderKind, WIRE_MODULES};

    /// Every site of a provider (docs/architecture.md, "a provider"): a file of this directory
    /// implementing `http::Wire` is registered in `wire_protocols!` (a file whose line was
    /// forgotten is not even compiled: it fails here), its `kind` parses back to its variant,
    /// and docs/providers.md's provider table lists it.
    #[test]
    fn every_wire_protocol_is_registered_at_every_site() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/providers");
        let mut files = Vec::new();
        for f in std::fs::read_dir(&dir).unwrap() {
            let path = f.unwrap().path();
            if path.ends_with("mod.rs") {
                continue; // the registry itself (and this test's markers)
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue; // a directory: a registered module's submodules
            };
            if text.contains("impl Wire for ") || text.contains("impl http::Wire for ") {
                files.push(path.file_stem().unwrap().to_string_lossy().into_owned());
            }
        }
        files.sort_unstable();
        let mut modules: Vec<&str> = WIRE_MODULES.iter().map(|(_, m)| *m).collect();
        modules.sort_unstable();
        assert_eq!(
            files, modules,
            "src/providers: the files implementing `Wire` are not those in wire_protocols!"
        );

        let docs = include_str!("../../docs/providers.md");
        let listed: Vec<&str> = docs
            .lines()
            .find_map(|l| l.strip_prefix("kind = \"openai\""))
            .and_then(|l| l.split('#').nth(1))
            .expect("docs/providers.md: the provider table's `kind = \"openai\"  # …` line")
            .split('|')
            .map(str::trim)
            .collect();
        for (name, _) in WIRE_MODULES.iter().chain(&[("offline", "")]) {
            let kind: ProviderKind = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(kind.as_str(), *name);
            assert!(
                listed.contains(name),
                "{name}: not in docs/providers.md's list of kinds ({listed:?})"
            );
        }
        assert_eq!(listed.len(), WIRE_MODULES.len() + 1, "{listed:?}");
    }
}
