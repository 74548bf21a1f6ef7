//! Unicode pre-tokenizer: the o200k and cl100k split patterns simulated over `char`s with a
//! compact two-level table of the character classes the patterns use (letters by case, marks,
//! numbers, white space), built once from the same Unicode tables the regex engine uses.
//!
//! [`next_piece`] gives the end of the piece starting at a position, for any text; the ASCII
//! pre-tokenizer (`ascii.rs`) calls it wherever a non-ASCII character could change a decision.
//! Each alternative of the pattern is simulated in priority order with the backtracking
//! leftmost-first matching implies (greedy runs that give characters back one at a time). Tested
//! piece by piece against the real regex on crafted and random text (`tests.rs`,
//! `tests/it/tokens_exact.rs`).

use super::Encoding;
use std::sync::OnceLock;

/// Class flags of one character. Unicode general categories are disjoint and no white-space
/// character is a letter, mark or number, so each character's flags come from one category.
pub(super) const L: u8 = 1; // \p{L}
/// o200k's "upper" set `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
pub(super) const UP: u8 = 2;
/// o200k's "lower" set `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
pub(super) const LOW: u8 = 4;
pub(super) const N: u8 = 8; // \p{N}
pub(super) const S: u8 = 16; // \s (Unicode White_Space)
pub(super) const NL: u8 = 32; // \r \n
/// Past the end of the text (no character).
const END: u8 = 64;

/// The categories read from the regex engine's Unicode tables, and the flags each one sets.
const CATEGORIES: [(&str, u8); 8] = [
    (r"\p{Lu}", L | UP),
    (r"\p{Lt}", L | UP),
    (r"\p{Ll}", L | LOW),
    (r"\p{Lm}", L | UP | LOW),
    (r"\p{Lo}", L | UP | LOW),
    (r"\p{M}", UP | LOW),
    (r"\p{N}", N),
    (r"\s", S),
];

/// Code points per block of the two-level table.
const BLOCK: usize = 128;
const BLOCKS: usize = 0x11_0000 / BLOCK;

/// Flags of every code point: `data[index[cp / BLOCK] * BLOCK + cp % BLOCK]`; identical blocks
/// are stored once (about 300 distinct blocks, ~40 KB in all).
pub(super) struct Table {
    index: Box<[u16]>,
    data: Box<[u8]>,
}

/// Code-point ranges (inclusive) of each category, as the `regex-syntax` crate (the parser
/// behind both `regex` and tiktoken-rs's `fancy-regex`) defines them.
pub(super) fn category_ranges(pattern: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::{Class, HirKind};
    let hir = regex_syntax::Parser::new()
        .parse(pattern)
        .expect("a valid Unicode class");
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        other => unreachable!("{pattern} parsed to {other:?}"),
    }
}

impl Table {
    fn build() -> Table {
        let mut ranges: Vec<(u32, u32, u8)> = Vec::new();
        for (pattern, flags) in CATEGORIES {
            ranges.extend(
                category_ranges(pattern)
                    .into_iter()
                    .map(|(a, b)| (a, b, flags)),
            );
        }
        ranges.sort_unstable_by_key(|r| r.0);
        let mut index = vec![0u16; BLOCKS].into_boxed_slice();
        let mut data: Vec<u8> = vec![0; BLOCK]; // block 0: all zero (unassigned, punctuation)
        let mut seen: rustc_hash::FxHashMap<[u8; BLOCK], u16> = Default::default();
        seen.insert([0; BLOCK], 0);
        let mut next = 0; // first range that may still overlap the current block
        for (b, slot) in index.iter_mut().enumerate() {
            let lo = (b * BLOCK) as u32;
            let hi = lo + BLOCK as u32 - 1;
            while next < ranges.len() && ranges[next].1 < lo {
                next += 1;
            }
            if next == ranges.len() || ranges[next].0 > hi {
                continue; // nothing here: block 0
            }
            let mut block = [0u8; BLOCK];
            for &(a, z, flags) in ranges[next..].iter().take_while(|r| r.0 <= hi) {
                for cp in a.max(lo)..=z.min(hi) {
                    block[(cp - lo) as usize] |= flags;
                }
            }
            if b == 0 {
                block[b'\r' as usize] |= NL;
                block[b'\n' as usize] |= NL;
            }
            *slot = *seen.entry(block).or_insert_with(|| {
                data.extend_from_slice(&block);
                (data.len() / BLOCK - 1) as u16
            });
        }
        Table {
            index,
            data: data.into_boxed_slice(),
        }
    }

    #[inline(always)]
    pub(super) fn flags(&self, cp: u32) -> u8 {
        let block = self.index[cp as usize / BLOCK] as usize;
        self.data[block * BLOCK + (cp as usize % BLOCK)]
    }
}

/// The process-wide table, built on first use (well under a millisecond).
pub(super) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(Table::build)
}

/// A cursor over valid UTF-8 that reads characters' flags.
struct Text<'a> {
    b: &'a [u8],
    t: &'static Table,
}

impl Text<'_> {
    /// The character at `p` (a char boundary): its code point and the position after it.
    #[inline(always)]
    fn decode(&self, p: usize) -> (u32, usize) {
        let b = self.b;
        let c0 = b[p] as u32;
        if c0 < 0x80 {
            (c0, p + 1)
        } else if c0 < 0xE0 {
            (((c0 & 0x1F) << 6) | (b[p + 1] as u32 & 0x3F), p + 2)
        } else if c0 < 0xF0 {
            (
                ((c0 & 0x0F) << 12) | ((b[p + 1] as u32 & 0x3F) << 6) | (b[p + 2] as u32 & 0x3F),
                p + 3,
            )
        } else {
            (
                ((c0 & 0x07) << 18)
                    | ((b[p + 1] as u32 & 0x3F) << 12)
                    | ((b[p + 2] as u32 & 0x3F) << 6)
                    | (b[p + 3] as u32 & 0x3F),
                p + 4,
            )
        }
    }

    /// Flags of the character at `p` and the position after it; `END` at the end of the text.
    #[inline(always)]
    fn at(&self, p: usize) -> (u8, usize) {
        if p >= self.b.len() {
            return (END, p);
        }
        let (cp, next) = self.decode(p);
        (self.t.flags(cp), next)
    }

    /// Start of the character before `p` (> 0).
    #[inline(always)]
    fn prev(&self, mut p: usize) -> usize {
        p -= 1;
        while self.b[p] & 0xC0 == 0x80 {
            p -= 1;
        }
        p
    }

    /// End of the longest run from `p` of characters with any of `want`'s flags.
    #[inline(always)]
    fn run(&self, mut p: usize, want: u8) -> usize {
        loop {
            let (f, next) = self.at(p);
            if f & want == 0 || f & END != 0 {
                return p;
            }
            p = next;
        }
    }

    /// `[^\r\n\p{L}\p{N}]`: the optional prefix of a letter piece.
    #[inline(always)]
    fn is_prefix(f: u8) -> bool {
        f & (NL | L | N | END) == 0
    }

    /// `[^\s\p{L}\p{N}]`: punctuation and symbols (marks included).
    #[inline(always)]
    fn is_punct(f: u8) -> bool {
        f & (S | L | N | END) == 0
    }

    /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` from `s`: the greedy upper
    /// run gives characters back until a lower-set character can start the lower run.
    fn upper_star_lower_plus(&self, s: usize) -> Option<usize> {
        let k = self.run(s, UP);
        let mut p = k;
        loop {
            if self.at(p).0 & (LOW | END) == LOW {
                return Some(self.run(p, LOW));
            }
            if p == s {
                return None;
            }
            p = self.prev(p);
        }
    }

    /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` from `s`.
    fn upper_plus_lower_star(&self, s: usize) -> Option<usize> {
        let k = self.run(s, UP);
        (k > s).then(|| self.run(k, LOW))
    }

    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `e`: the end after the optional contraction (case
    /// folding is Unicode's: `ſ` matches `s`).
    fn contraction(&self, e: usize) -> usize {
        if self.b.get(e) != Some(&b'\'') || e + 1 >= self.b.len() {
            return e;
        }
        let (c1, after1) = self.decode(e + 1);
        match fold(c1) {
            Some(b's' | b't' | b'm' | b'd') => after1,
            Some(c1 @ (b'r' | b'v' | b'l')) => {
                if after1 >= self.b.len() {
                    return e;
                }
                let (c2, after2) = self.decode(after1);
                let want = if c1 == b'l' { b'l' } else { b'e' };
                if fold(c2) == Some(want) {
                    after2
                } else {
                    e
                }
            }
            _ => e,
        }
    }

    /// `\p{N}{1,3}` from `i` (a number).
    fn numbers(&self, i: usize) -> usize {
        let mut p = i;
        for _ in 0..3 {
            let (f, next) = self.at(p);
            if f & N == 0 || f & END != 0 {
                break;
            }
            p = next;
        }
        p
    }

    /// ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with `/` in the tail for o200k) from `i`, if it matches.
    fn punctuation(&self, i: usize, f0: u8, next0: usize, slash: bool) -> Option<usize> {
        let start = if self.b[i] == b' ' && Self::is_punct(self.at(next0).0) {
            next0
        } else if Self::is_punct(f0) {
            i
        } else {
            return None;
        };
        let mut e = start;
        loop {
            let (f, next) = self.at(e);
            if !Self::is_punct(f) {
                break;
            }
            e = next;
        }
        while let Some(&c) = self.b.get(e) {
            if c == b'\r' || c == b'\n' || (slash && c == b'/') {
                e += 1;
            } else {
                break;
            }
        }
        Some(e)
    }

    /// `\s*[\r\n]+|\s+(?!\S)|\s+` from `i` (white space).
    fn whitespace(&self, i: usize) -> usize {
        let mut e = i;
        let mut last_newline = None;
        loop {
            let (f, next) = self.at(e);
            if f & S == 0 || f & END != 0 {
                break;
            }
            if f & NL != 0 {
                last_newline = Some(e);
            }
            e = next;
        }
        match last_newline {
            Some(k) => k + 1, // \r and \n are one byte
            None if e == self.b.len() => e,
            None => {
                let last = self.prev(e);
                if last > i {
                    last
                } else {
                    e
                }
            }
        }
    }
}

/// The contraction letter `c` case-folds to (`s t r e v m l d`), if any.
#[inline]
pub(super) fn fold(c: u32) -> Option<u8> {
    match c {
        0x17F => Some(b's'), // ſ LATIN SMALL LETTER LONG S
        0..=0x7F => {
            let l = (c as u8).to_ascii_lowercase();
            matches!(l, b's' | b't' | b'r' | b'e' | b'v' | b'm' | b'l' | b'd').then_some(l)
        }
        _ => None,
    }
}

/// End of the piece of `b` (valid UTF-8) starting at the char boundary `i` (< `b.len()`).
pub(super) fn next_piece(enc: Encoding, b: &[u8], i: usize) -> usize {
    let t = Text { b, t: table() };
    match enc {
        Encoding::O200k => o200k(&t, i),
        Encoding::Cl100k => cl100k(&t, i),
    }
}

/// o200k_base, alternatives in order:
/// 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|…)?`
/// 2. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|…)?`
/// 3. `\p{N}{1,3}` 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*` 5. `\s*[\r\n]+` 6. `\s+(?!\S)` 7. `\s+`
fn o200k(t: &Text, i: usize) -> usize {
    let (f0, next0) = t.at(i);
    let prefix = Text::is_prefix(f0);
    // Each alternative tries with the optional prefix first, then without.
    for alt in [Text::upper_star_lower_plus, Text::upper_plus_lower_star] {
        if prefix {
            if let Some(e) = alt(t, next0) {
                return t.contraction(e);
            }
        }
        if f0 & (UP | LOW) != 0 {
            if let Some(e) = alt(t, i) {
                return t.contraction(e);
            }
        }
    }
    if f0 & N != 0 {
        return t.numbers(i);
    }
    if let Some(e) = t.punctuation(i, f0, next0, true) {
        return e;
    }
    if f0 & S != 0 {
        return t.whitespace(i);
    }
    next0 // unreachable: every character is a letter, mark, number, space or punctuation
}

/// cl100k_base, alternatives in order: 1. `(?i:'s|'t|'re|'ve|'m|'ll|'d)`
/// 2. `[^\r\n\p{L}\p{N}]?\p{L}+` 3. `\p{N}{1,3}` 4. ` ?[^\s\p{L}\p{N}]+[\r\n]*`
/// 5. `\s*[\r\n]+` 6. `\s+(?!\S)` 7. `\s+`
fn cl100k(t: &Text, i: usize) -> usize {
    let e = t.contraction(i);
    if e > i {
        return e;
    }
    let (f0, next0) = t.at(i);
    if Text::is_prefix(f0) && t.at(next0).0 & (L | END) == L {
        return t.run(next0, L);
    }
    if f0 & L != 0 {
        return t.run(i, L);
    }
    if f0 & N != 0 {
        return t.numbers(i);
    }
    if let Some(e) = t.punctuation(i, f0, next0, false) {
        return e;
    }
    if f0 & S != 0 {
        return t.whitespace(i);
    }
    next0 // unreachable, as in o200k
}
