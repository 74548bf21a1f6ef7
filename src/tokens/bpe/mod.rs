//! Exact BPE token counting for OpenAI's o200k_base and cl100k_base encodings (tables embedded in
//! the binary by `bpe-openai`; nothing is downloaded), plus the chat-format framing that turns a
//! canonical message into the tokens a chat model is charged for.
//!
//! Counts are identical to tiktoken's `encode_ordinary(text).len()`. Speed comes from a
//! hand-written ASCII pre-tokenizer (`ascii.rs`) that hands over to a Unicode one (`unicode.rs`,
//! table-driven character classes) wherever a non-ASCII character could change a decision (both
//! simulate the split regex instead of running it), per-thread caches of short pieces' counts
//! (`piece_cache.rs`), cuts inside long non-ASCII pieces where no token can span (`split.rs`), and
//! parallel chunks for texts of 1 MiB or more.
//!
//! ## Message framing (what [`BpeCounter::count_message`] adds)
//! OpenAI wraps each chat message in special tokens around its role and content, and its
//! published counting recipe (`num_tokens_from_messages` in the OpenAI cookbook, for the
//! GPT-3.5/GPT-4/GPT-4o families) is: **3 tokens per message**, plus the tokens of the role and of
//! the content, plus the tokens of `name` and **1 more** when a message carries a name. We follow
//! it exactly, and extend it to what the recipe leaves out:
//! - each tool call adds the tokens of its function name and of its arguments serialized as
//!   compact JSON in their recorded key order (what the API receives in `arguments`);
//! - a tool result adds the tokens of its `tool_call_id`; its tool `name` counts as a name (+1).
//!
//! The 3 tokens that prime every reply belong to a request, not a message: callers pricing a
//! whole request add [`REPLY_PRIMING_TOKENS`] once. Tool schemas are counted as their compact
//! JSON; OpenAI renders them in an undocumented form, so that figure is an estimate (unverified
//! against provider usage; `traces stats` calibration shows the overall error).

mod ascii;
mod piece_cache;
mod split;
mod unicode;

pub use piece_cache::clear_piece_cache;
use piece_cache::with_piece_cache;

use super::TokenCounter;
use crate::trace::Message;
use rayon::prelude::*;
use std::borrow::Cow;

/// Framing tokens around every message (`<|start|>`, `<|message|>`, `<|end|>`).
pub const TOKENS_PER_MESSAGE: u64 = 3;
/// Extra token when a message carries a `name`.
pub const TOKENS_PER_NAME: u64 = 1;
/// Tokens priming the assistant's reply, once per request.
pub const REPLY_PRIMING_TOKENS: u64 = 3;

/// Which of OpenAI's encodings a [`BpeCounter`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// o200k_base: GPT-4o, GPT-4.1, o1/o3/o4, GPT-5.
    O200k,
    /// cl100k_base: GPT-4, GPT-3.5-turbo, text-embedding-3.
    Cl100k,
}

impl Encoding {
    /// The registry name (`o200k` / `cl100k`).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200k => "o200k",
            Encoding::Cl100k => "cl100k",
        }
    }

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Encoding::O200k => bpe_openai::o200k_base(),
            Encoding::Cl100k => bpe_openai::cl100k_base(),
        }
    }
}

/// Exact token counter for one encoding. `Copy`: it is a tag; the tables are process-wide and
/// built once, on first use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpeCounter {
    encoding: Encoding,
}

impl BpeCounter {
    pub fn new(encoding: Encoding) -> Self {
        BpeCounter { encoding }
    }
    pub fn o200k() -> Self {
        Self::new(Encoding::O200k)
    }
    pub fn cl100k() -> Self {
        Self::new(Encoding::Cl100k)
    }
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Exact number of tokens of `text` (special-token strings such as `<|endoftext|>` count as
    /// ordinary text, as they do when sent in a message). Identical to tiktoken's
    /// `encode_ordinary(text).len()`. Texts of [`PARALLEL_MIN_BYTES`] or more are cut at
    /// boundaries no piece crosses and counted on all cores.
    pub fn count(&self, text: &str) -> u64 {
        if text.len() >= PARALLEL_MIN_BYTES {
            self.count_chunked(text, PARALLEL_CHUNK_BYTES)
        } else {
            self.count_serial(text)
        }
    }

    /// [`Self::count`] of `text` cut into chunks of about `chunk` bytes at [`safe_splits`],
    /// counted in parallel. Exact: the pieces are the same as without cutting.
    fn count_chunked(&self, text: &str, chunk: usize) -> u64 {
        let cuts = safe_splits(text.as_bytes(), chunk);
        cuts.par_iter()
            .map(|r| self.count_serial(&text[r.clone()]))
            .sum()
    }

    fn count_serial(&self, text: &str) -> u64 {
        self.count_serial_up_to(text, u64::MAX)
    }

    /// The pieces of `text` counted on this thread, in order, until the count reaches `limit`
    /// (`u64::MAX`: all of them).
    fn count_serial_up_to(&self, text: &str, limit: u64) -> u64 {
        let enc = self.encoding;
        let bpe = &enc.tokenizer().bpe;
        let b = text.as_bytes();
        let mut total = 0u64;
        with_piece_cache(enc, |cache| {
            let mut i = 0;
            while i < b.len() && total < limit {
                let end = piece_end(enc, b, i);
                total += cache.count(bpe, b, i, end);
                i = end;
            }
        });
        total
    }

    /// The pre-tokenization pieces of `text` (what BPE runs on, in order). Exposed for tests and
    /// diagnostics; [`Self::count`] does the same walk without collecting.
    pub fn pieces<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let end = piece_end(self.encoding, b, i);
            out.push(&text[i..end]);
            i = end;
        }
        out
    }
}

/// End of the piece of `b` (valid UTF-8) starting at `i`: decided by the ASCII pre-tokenizer
/// when every character it reads is ASCII, else by the Unicode one.
#[inline]
fn piece_end(enc: Encoding, b: &[u8], i: usize) -> usize {
    match ascii::next_piece(enc, b, i) {
        Ok(end) => end,
        Err(ascii::NonAscii) => unicode::next_piece(enc, b, i),
    }
}

/// Texts at least this long are counted in parallel chunks.
pub const PARALLEL_MIN_BYTES: usize = 1 << 20;
const PARALLEL_CHUNK_BYTES: usize = 256 << 10;

/// Cut `b` into consecutive ranges of about `chunk` bytes (or more: each cut waits for the next
/// safe point; without one the rest is a single range). A safe point is a position `p` with
/// `b[p - 1] == b'\n'` and `b[p]` an ASCII letter: in both encodings no piece contains a newline
/// and then a letter (letter pieces exclude `\r\n` even as their prefix; punctuation pieces end
/// with `[\r\n/]*`; whitespace pieces hold no letter), so a piece ends at `p`, and its end does
/// not depend on what follows (a letter and the end of the text both stop every alternative).
/// Pieces are found by anchored matches without look-behind, so the pieces from `p` on are those
/// of the text starting at `p`.
pub fn safe_splits(b: &[u8], chunk: usize) -> Vec<std::ops::Range<usize>> {
    let chunk = chunk.max(1);
    let mut out = Vec::with_capacity(b.len() / chunk + 1);
    let mut start = 0;
    while start < b.len() {
        let mut p = start + chunk;
        while p < b.len() && !(b[p - 1] == b'\n' && b[p].is_ascii_alphabetic()) {
            p += 1;
        }
        let end = p.min(b.len());
        out.push(start..end);
        start = end;
    }
    out
}

/// Counts that may stop early, for a caller that only compares a count with a limit (the
/// provider's check that a server did not cut a prompt).
impl BpeCounter {
    /// [`Self::count`] of `text` if it is below `limit`; else a count at least `limit` and at
    /// most the whole count (the walk stops at the first piece that reaches `limit`).
    pub fn count_up_to(&self, text: &str, limit: u64) -> u64 {
        if text.len() >= PARALLEL_MIN_BYTES {
            return self.count(text);
        }
        self.count_serial_up_to(text, limit)
    }

    /// [`TokenCounter::count_message`] of `message` if it is below `limit`; else a count at
    /// least `limit` and at most the whole count.
    pub fn count_message_up_to(&self, message: &Message, limit: u64) -> u64 {
        let left = |n: u64| limit.saturating_sub(n);
        let mut n = TOKENS_PER_MESSAGE + self.count(message.role.as_str());
        n += self.count_up_to(&message.content, left(n));
        if n >= limit {
            return n;
        }
        if let Some(name) = &message.name {
            n += self.count_up_to(name, left(n)) + TOKENS_PER_NAME;
        }
        if let Some(id) = &message.tool_call_id {
            n += self.count_up_to(id, left(n));
        }
        for call in &message.tool_calls {
            if n >= limit {
                break;
            }
            n += self.count_up_to(&call.name, left(n));
            n += self.count_up_to(&json_text(&call.arguments), left(n));
        }
        n
    }
}

impl TokenCounter for BpeCounter {
    fn name(&self) -> &str {
        self.encoding.name()
    }

    fn count_text(&self, text: &str) -> u64 {
        self.count(text)
    }

    fn count_message(&self, message: &Message) -> u64 {
        // With no limit, every part is counted whole (`count_up_to` is `count` then).
        self.count_message_up_to(message, u64::MAX)
    }

    fn count_tools(&self, tools: &[serde_json::Value]) -> u64 {
        tools.iter().map(|t| self.count(&json_text(t))).sum()
    }
}

/// The text a model sees for a JSON value: compact JSON in recorded key order, except that a
/// bare string (arguments an importer could not parse as JSON) is the raw string itself.
pub(crate) fn json_text(value: &serde_json::Value) -> Cow<'_, str> {
    match value {
        serde_json::Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

#[cfg(test)]
mod tests;
