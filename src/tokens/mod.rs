//! Token counting: exact BPE (o200k_base, cl100k_base), the peers' approximate counters, the
//! registry that hands them out by name, and per-message count caches so a replay tokenizes each
//! message once; trace statistics (`stats`) over those counts.

pub mod approx;
pub mod bpe;
pub mod cache;
pub mod overhead;
pub mod stats;

use crate::trace::Message;
use std::sync::{Arc, OnceLock};

pub use bpe::BpeCounter;
pub use cache::{count_trace, count_traces, MessageTokens};

/// Counts tokens the way one model family (or one peer system) does.
pub trait TokenCounter: Send + Sync {
    /// Stable name used in configs and reports (`o200k`, `cl100k`, `approx`, `approx-anthropic`).
    fn name(&self) -> &str;
    /// Tokens of a bare string.
    fn count_text(&self, text: &str) -> u64;
    /// Tokens of one message as sent to a model, including per-message overhead.
    fn count_message(&self, message: &Message) -> u64;
    /// [`count_message`](Self::count_message) of a message behind a shared `Arc` (a trace's
    /// message, counted again by every replay forked from a shared prefix and by every question
    /// asked on it): a counter may remember the count while the message lives.
    fn count_shared(&self, message: &Arc<Message>) -> u64 {
        self.count_message(message)
    }
    /// [`count_text`](Self::count_text) of a shared message's content (remembered as
    /// [`count_shared`](Self::count_shared) may be).
    fn count_shared_content(&self, message: &Arc<Message>) -> u64 {
        self.count_text(&message.content)
    }
    /// Tokens of the tool schemas sent with every request.
    fn count_tools(&self, tools: &[serde_json::Value]) -> u64;
    /// A text's count depends only on how many characters it has (so a random name replaced
    /// by another of the same length counts the same); false unless the counter says so.
    fn counts_characters_only(&self) -> bool {
        false
    }
}

/// Every name [`counter`] accepts, in the order they are listed to users.
pub const COUNTER_NAMES: [&str; 4] = ["o200k", "cl100k", "approx", "approx-anthropic"];

/// The counter used when a command or config names none: exact o200k_base (GPT-4o and later).
pub const DEFAULT_COUNTER: &str = "o200k";

/// A counter name that [`counter`] does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown token counter `{name}`; valid names: o200k, cl100k, approx, approx-anthropic")]
pub struct UnknownCounter {
    pub name: String,
}

/// The counter registered under `name` (see [`COUNTER_NAMES`]):
/// - `o200k`: exact o200k_base BPE (GPT-4o, GPT-4.1, o-series, GPT-5) with OpenAI's chat framing;
/// - `cl100k`: exact cl100k_base BPE (GPT-4, GPT-3.5) with the same framing;
/// - `approx`: LangChain's `count_tokens_approximately`, ceil(chars / 4) + 3 per message;
/// - `approx-anthropic`: the same at 3.3 chars per token (deepagents' setting for Claude).
///
/// Each counter is built once per process and shared: calling this again returns the same `Arc`.
/// BPE tables are loaded lazily on first use (embedded in the binary; nothing is downloaded).
pub fn counter(name: &str) -> Result<Arc<dyn TokenCounter>, UnknownCounter> {
    static O200K: OnceLock<Arc<dyn TokenCounter>> = OnceLock::new();
    static CL100K: OnceLock<Arc<dyn TokenCounter>> = OnceLock::new();
    static APPROX: OnceLock<Arc<dyn TokenCounter>> = OnceLock::new();
    static APPROX_ANTHROPIC: OnceLock<Arc<dyn TokenCounter>> = OnceLock::new();
    let slot = match name {
        "o200k" => O200K.get_or_init(|| Arc::new(BpeCounter::o200k())),
        "cl100k" => CL100K.get_or_init(|| Arc::new(BpeCounter::cl100k())),
        "approx" => APPROX.get_or_init(|| Arc::new(approx::ApproxCounter::langchain())),
        "approx-anthropic" => {
            APPROX_ANTHROPIC.get_or_init(|| Arc::new(approx::ApproxCounter::anthropic()))
        }
        _ => {
            return Err(UnknownCounter {
                name: name.to_string(),
            })
        }
    };
    Ok(Arc::clone(slot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_resolves_to_a_counter_of_that_name() {
        for name in COUNTER_NAMES {
            let c = counter(name).expect(name);
            assert_eq!(c.name(), name);
        }
        assert!(COUNTER_NAMES.contains(&DEFAULT_COUNTER));
    }

    #[test]
    fn unknown_name_is_an_error_that_lists_every_valid_name() {
        let err = counter("o200k_base").err().expect("must be an error");
        assert_eq!(err.name, "o200k_base");
        let msg = err.to_string();
        assert!(msg.contains("`o200k_base`"), "{msg}");
        for name in COUNTER_NAMES {
            assert!(msg.contains(name), "{msg} should list {name}");
        }
        assert!(counter("").is_err());
        assert!(counter("O200K").is_err(), "names are case-sensitive");
    }

    #[test]
    fn counters_are_built_once_and_shared() {
        let a = counter("o200k").unwrap();
        let b = counter("o200k").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let c = counter("cl100k").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
    }

    #[test]
    fn approx_counters_use_their_chars_per_token() {
        let text = "x".repeat(34);
        assert_eq!(counter("approx").unwrap().count_text(&text), 9); // ceil(34/4)
        assert_eq!(counter("approx-anthropic").unwrap().count_text(&text), 11); // ceil(34/3.3)
    }
}
