//! Cut points inside one pre-tokenizer piece where BPE provably cannot merge across, so the two
//! sides count independently (a long CJK clause or emoji run becomes short, repeating words).
//!
//! tiktoken's BPE merges the adjacent pair of parts whose concatenation is the lowest-ranked
//! vocabulary token, leftmost first, until no adjacent pair is a token. A merge across position
//! `p` creates a part that *is a token* spanning `p`. So if no vocabulary token equals
//! `piece[s..e]` for any `s < p < e`, no merge ever crosses `p`, and the merges on each side are
//! exactly those BPE makes on that side alone (each side's candidate pairs never change with the
//! other side's merges; the global leftmost-lowest choice restricted to one side is that side's
//! own leftmost-lowest choice). Hence `count(piece) = count(piece[..p]) + count(piece[p..])`, and
//! the same holds for any set of such cut points at once.
//!
//! [`SplitTable::is_cut`] decides "no token spans `p`" conservatively (it may say no where the
//! truth is yes, never the reverse), only where a byte next to `p` is not ASCII (so any token
//! spanning `p` holds a non-ASCII byte, and ASCII-only tokens, most of the vocabulary, need not
//! be indexed), from three tables built once per encoding from the tokens that hold a non-ASCII
//! byte: for every such token `t` and every inner position `k` of it,
//! - `pairs` holds the byte pair `(t[k-1], t[k])`;
//! - `short_pairs` holds that pair when `k < 3` or `t.len() - k < 3` (a token that would span
//!   `p` with fewer than 3 bytes on one side);
//! - `windows` (a Bloom filter: false positives only forbid a cut) holds the 6 bytes
//!   `t[k-3..k+3]` otherwise.
//!
//! A token spanning `p` inside the piece either has fewer than 3 bytes on a side (then the text's
//! pair at `p` is in `short_pairs`) or 3 or more on both (then the 6 text bytes around `p` lie in
//! the piece and are in `windows`). `tests.rs` checks the tables against a brute-force search of
//! the vocabulary and the resulting counts against tiktoken-rs.

use super::Encoding;
use std::sync::OnceLock;

/// Bits of the Bloom filter of 6-byte windows (256 KiB; o200k has ~155k windows, so about 2% of
/// window lookups are false positives that only cost a missed cut).
const WINDOW_BITS: usize = 1 << 21;

/// Which positions of a piece can be cut (see the module docs). Built from the vocabulary on
/// first use (a few milliseconds, only once a long non-ASCII piece is counted), then shared.
pub(super) struct SplitTable {
    pairs: Box<[u64]>,
    short_pairs: Box<[u64]>,
    windows: Box<[u64]>,
}

/// The table of `enc`, built on first use.
pub(super) fn table(enc: Encoding) -> &'static SplitTable {
    static O200K: OnceLock<SplitTable> = OnceLock::new();
    static CL100K: OnceLock<SplitTable> = OnceLock::new();
    let slot = match enc {
        Encoding::O200k => &O200K,
        Encoding::Cl100k => &CL100K,
    };
    slot.get_or_init(|| SplitTable::build(&enc.tokenizer().bpe))
}

#[inline(always)]
fn pair_index(a: u8, b: u8) -> usize {
    (a as usize) << 8 | b as usize
}

#[inline(always)]
fn test_bit(bits: &[u64], i: usize) -> bool {
    bits[i >> 6] >> (i & 63) & 1 == 1
}

#[inline(always)]
fn set_bit(bits: &mut [u64], i: usize) {
    bits[i >> 6] |= 1 << (i & 63);
}

/// The two Bloom-filter bit indices of a 6-byte window.
#[inline(always)]
fn window_bits(w: &[u8]) -> (usize, usize) {
    let mut k = [0u8; 8];
    k[..6].copy_from_slice(w);
    let h = u64::from_le_bytes(k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let h = h ^ (h >> 29);
    let mask = WINDOW_BITS - 1;
    ((h >> 43) as usize & mask, (h as usize) & mask)
}

impl SplitTable {
    fn build(bpe: &bpe_openai::byte_pair_encoding::BytePairEncoding) -> Self {
        let mut pairs = vec![0u64; 1 << 10].into_boxed_slice();
        let mut short_pairs = vec![0u64; 1 << 10].into_boxed_slice();
        let mut windows = vec![0u64; WINDOW_BITS / 64].into_boxed_slice();
        for id in 0..bpe.num_tokens() as u32 {
            let t = bpe.token_bytes(id);
            if t.is_ascii() {
                continue; // cannot span a position next to a non-ASCII byte
            }
            for k in 1..t.len() {
                let pair = pair_index(t[k - 1], t[k]);
                set_bit(&mut pairs, pair);
                if k < 3 || t.len() - k < 3 {
                    set_bit(&mut short_pairs, pair);
                } else {
                    let (x, y) = window_bits(&t[k - 3..k + 3]);
                    set_bit(&mut windows, x);
                    set_bit(&mut windows, y);
                }
            }
        }
        SplitTable {
            pairs,
            short_pairs,
            windows,
        }
    }

    /// True when no vocabulary token equals `piece[s..e]` with `s < p < e` (conservative: false
    /// also for some positions no token spans, and always between two ASCII bytes).
    /// `0 < p < piece.len()`.
    #[inline]
    pub(super) fn is_cut(&self, piece: &[u8], p: usize) -> bool {
        if (piece[p - 1] | piece[p]) < 0x80 {
            return false; // ASCII-only tokens are not in the tables
        }
        let pair = pair_index(piece[p - 1], piece[p]);
        if !test_bit(&self.pairs, pair) {
            return true;
        }
        if test_bit(&self.short_pairs, pair) {
            return false;
        }
        // Only tokens with 3 or more bytes on both sides remain; they need room in the piece.
        if p < 3 || p + 3 > piece.len() {
            return true;
        }
        let (x, y) = window_bits(&piece[p - 3..p + 3]);
        !(test_bit(&self.windows, x) && test_bit(&self.windows, y))
    }

    /// Calls `f` on the consecutive segments of `piece` between its cut points (character
    /// boundaries where [`Self::is_cut`] holds), in order; one call with all of `piece` when there
    /// are none. `piece` is valid UTF-8.
    #[inline]
    pub(super) fn for_each_segment(&self, piece: &[u8], mut f: impl FnMut(&[u8])) {
        let mut start = 0;
        for p in 1..piece.len() {
            // A character boundary: not a UTF-8 continuation byte.
            if piece[p] & 0xC0 != 0x80 && self.is_cut(piece, p) {
                f(&piece[start..p]);
                start = p;
            }
        }
        f(&piece[start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every token's bytes (as a set) and the longest token's length, built once per encoding.
    fn vocabulary(enc: Encoding) -> &'static (HashSet<&'static [u8]>, usize) {
        static O200K: OnceLock<(HashSet<&[u8]>, usize)> = OnceLock::new();
        static CL100K: OnceLock<(HashSet<&[u8]>, usize)> = OnceLock::new();
        let slot = match enc {
            Encoding::O200k => &O200K,
            Encoding::Cl100k => &CL100K,
        };
        slot.get_or_init(|| {
            let bpe = &enc.tokenizer().bpe;
            let set: HashSet<&[u8]> = (0..bpe.num_tokens() as u32)
                .map(|id| bpe.token_bytes(id))
                .collect();
            let longest = set.iter().map(|t| t.len()).max().unwrap_or(0);
            (set, longest)
        })
    }

    /// The tokens holding a non-ASCII byte (the ones the tables index), for building
    /// adversarial texts out of real token boundaries and fragments.
    fn non_ascii_tokens(enc: Encoding) -> Vec<u32> {
        let bpe = &enc.tokenizer().bpe;
        (0..bpe.num_tokens() as u32)
            .filter(|&id| !bpe.token_bytes(id).is_ascii())
            .collect()
    }

    /// Some vocabulary token spans `p` inside `piece` (the brute-force truth).
    fn spanned(vocab: &HashSet<&[u8]>, longest: usize, piece: &[u8], p: usize) -> bool {
        (p.saturating_sub(longest)..p)
            .any(|s| (p + 1..=(s + longest).min(piece.len())).any(|e| vocab.contains(&piece[s..e])))
    }

    const TEXTS: &[&str] = &[
        "我们今天讨论上下文压缩的结果因为模型需要更多的时间来处理用户的请求所以服务器的日志很重要",
        "これはテストですが上下文の圧縮についての説明をしていますので注意してください",
        "데이터베이스연결시간초과오류가발생했습니다다시시도하세요",
        "👍🏽👍🏽🎉🎉🎉👨‍👩‍👧‍👦🇯🇵🇺🇸!!!✨✨🔥🔥🔥😂😂😂",
        "ÀÉÎÕÜàéîõüßẞĳŒœ",
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "=================================",
    ];

    #[test]
    fn cuts_are_never_spanned_by_a_token_and_most_true_cuts_in_cjk_and_emoji_are_found() {
        for enc in [Encoding::O200k, Encoding::Cl100k] {
            let (vocab, longest) = vocabulary(enc);
            let table = table(enc);
            let longest = *longest;
            // (cuts found, true cuts) in the CJK and emoji texts (the first four).
            let (mut found, mut truths) = (0, 0);
            for (i, text) in TEXTS.iter().enumerate() {
                let b = text.as_bytes();
                for p in (1..b.len()).filter(|&p| text.is_char_boundary(p)) {
                    let truth = !spanned(vocab, longest, b, p);
                    let cut = table.is_cut(b, p);
                    assert!(
                        !cut || truth,
                        "{enc:?}: cut inside a token at {p} of {text:?}"
                    );
                    if i < 4 {
                        found += cut as usize;
                        truths += truth as usize;
                    }
                }
            }
            // Conservative, but not uselessly so (2-byte scripts such as Cyrillic get few cuts:
            // their pieces are words, short anyway).
            assert!(found * 10 >= truths * 8, "{enc:?}: {found} of {truths}");
        }
    }

    #[test]
    fn segments_cover_the_piece_and_their_counts_add_up() {
        for enc in [Encoding::O200k, Encoding::Cl100k] {
            let bpe = &enc.tokenizer().bpe;
            let table = table(enc);
            for text in TEXTS {
                let b = text.as_bytes();
                let mut joined = Vec::new();
                let mut sum = 0;
                let mut segments = 0;
                table.for_each_segment(b, |s| {
                    assert!(!s.is_empty());
                    assert!(std::str::from_utf8(s).is_ok(), "cut inside a character");
                    joined.extend_from_slice(s);
                    sum += bpe.count(s);
                    segments += 1;
                });
                assert_eq!(joined, b);
                assert_eq!(sum, bpe.count(b), "{enc:?} {text:?} in {segments} segments");
            }
        }
    }

    #[test]
    fn cutting_at_every_character_boundary_would_change_counts() {
        // The check matters: "我们" is one token in both encodings, so cutting between its
        // characters miscounts, and the table must refuse that cut.
        for enc in [Encoding::O200k, Encoding::Cl100k] {
            let bpe = &enc.tokenizer().bpe;
            let piece = "我们今天".as_bytes();
            assert_eq!(bpe.count(&piece[..6]), 1, "{enc:?}");
            assert!(bpe.count(&piece[..3]) + bpe.count(&piece[3..]) > bpe.count(piece));
            assert!(!table(enc).is_cut(piece, 3));
        }
    }

    mod random {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            /// Texts glued from random non-ASCII tokens (whole characters, byte fragments, mixed
            /// with ASCII), so that many positions are spanned by some token: at every position
            /// a cut is claimed, brute force finds no spanning token, and the segments' counts
            /// add up to the whole text's count.
            #[test]
            fn claimed_cuts_hold_on_glued_tokens(
                picks in prop::collection::vec(any::<prop::sample::Index>(), 1..24),
                o200k in any::<bool>(),
            ) {
                let enc = if o200k { Encoding::O200k } else { Encoding::Cl100k };
                let bpe = &enc.tokenizer().bpe;
                let ids = non_ascii_tokens(enc);
                let text: Vec<u8> = picks
                    .iter()
                    .flat_map(|i| bpe.token_bytes(ids[i.index(ids.len())]).iter().copied())
                    .collect();
                let (vocab, longest) = vocabulary(enc);
                let table = table(enc);
                for p in 1..text.len() {
                    if table.is_cut(&text, p) {
                        prop_assert!(!spanned(vocab, *longest, &text, p), "{:?} at {}", text, p);
                    }
                }
                let mut sum = 0;
                table.for_each_segment(&text, |s| sum += bpe.count(s));
                prop_assert_eq!(sum, bpe.count(&text));
            }
        }
    }
}
