//! [`SummaryRecord`]: one summary a sample's replay produced (fold, trace index, prompt digest,
//! tokens, text), kept in the sample so reports can show two prompts' summaries of the same
//! fold side by side without the offload stores.
//!
//! Short texts are inline (`text`); a text longer than [`INLINE_SUMMARY_CHARS`] is written once
//! to a content-addressed file under the run directory (`RunDir::summary_file`) and the record
//! names it (`file`, relative to the run directory). [`RunDir::summary_text`](super::RunDir::summary_text) reads either.

use serde::{Deserialize, Serialize};

/// Longest summary text kept inline in `samples.jsonl` (characters).
pub const INLINE_SUMMARY_CHARS: usize = 2000;

/// One summary produced during a replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SummaryRecord {
    /// 1-based index of this summary among the replay's summaries (the fold).
    pub fold: usize,
    /// Trace index of the model call during which the summary was made.
    pub trace_index: usize,
    /// `sha256:<hex>` of the summary prompt the summarizer was given.
    pub prompt_digest: String,
    /// Summarizer model (`offline` for the built-in one).
    #[serde(default)]
    pub model: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// `sha256:<hex>` of the text (content address).
    pub text_digest: String,
    /// Length of the text in characters.
    pub chars: usize,
    /// The text, when short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Path of the text file relative to the run directory, when long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// `sha256:<hex>` of some text.
pub fn text_digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{:x}", Sha256::digest(text.as_bytes()))
}
