//! Hand-written ASCII pre-tokenizer for the o200k and cl100k split patterns; defers to the
//! Unicode pre-tokenizer (`unicode.rs`) wherever a non-ASCII character could change a decision.

use super::Encoding;

// ---------------------------------------------------------------------------------------------
// Fast pre-tokenization
//
// tiktoken splits text into pieces with a regex before BPE; bpe-openai runs that regex through
// `regex-automata`, one anchored search per piece, which is most of its time on ordinary text.
// `next_piece` decides the same pieces by hand for ASCII: it simulates each alternative of the
// pattern in priority order (leftmost-first, greedy, with the backtracking the pattern implies)
// and reads every character the regex's decision depends on. The moment one of those characters
// is non-ASCII (whose Unicode class could change the decision) it returns `NonAscii` and the
// caller asks the Unicode pre-tokenizer for that one piece, then carries on here. Equality with
// the regex is tested piece by piece on crafted and random text (`tests.rs`,
// `tests/it/tokens_exact.rs`).
// ---------------------------------------------------------------------------------------------

/// Character classes of ASCII bytes for the pre-tokenization patterns.
const UP: u8 = 1; // A-Z: \p{Lu}
const LO: u8 = 2; // a-z: \p{Ll}
const DIG: u8 = 3; // 0-9: \p{N}
const NL: u8 = 4; // \r \n
const WS: u8 = 5; // \t \x0B \x0C space: \s other than \r \n
const PUN: u8 = 6; // every other ASCII byte: not \s, \p{L} or \p{N}
const HI: u8 = 7; // >= 0x80: part of a non-ASCII character
const END: u8 = 0; // past the end of the text

static CLASS: [u8; 256] = {
    let mut t = [HI; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = match b as u8 {
            b'A'..=b'Z' => UP,
            b'a'..=b'z' => LO,
            b'0'..=b'9' => DIG,
            b'\r' | b'\n' => NL,
            b'\t' | 0x0B | 0x0C | b' ' => WS,
            _ => PUN,
        };
        b += 1;
    }
    t
};

#[inline(always)]
fn class(b: &[u8], i: usize) -> u8 {
    match b.get(i) {
        Some(&c) => CLASS[c as usize],
        None => END,
    }
}

#[inline(always)]
fn is_letter(c: u8) -> bool {
    c == UP || c == LO
}

/// Marker: the decision depends on a non-ASCII character; ask the regex.
pub(super) struct NonAscii;

type Step = Result<usize, NonAscii>;

/// End of the piece starting at `i` (< `b.len()`), or `NonAscii`.
#[inline]
pub(super) fn next_piece(enc: Encoding, b: &[u8], i: usize) -> Step {
    match enc {
        Encoding::O200k => next_piece_o200k(b, i),
        Encoding::Cl100k => next_piece_cl100k(b, i),
    }
}

/// o200k_base:
/// `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
/// `|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
/// `|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
fn next_piece_o200k(b: &[u8], i: usize) -> Step {
    let c = class(b, i);
    match c {
        UP | LO => contraction_suffix(b, cased_letters(b, i)?),
        DIG => digits(b, i),
        NL => whitespace(b, i),
        PUN | WS => {
            let n = class(b, i + 1);
            if n == HI {
                Err(NonAscii)
            } else if is_letter(n) {
                // One optional non-letter, non-digit, non-newline prefix, then the letters.
                contraction_suffix(b, cased_letters(b, i + 1)?)
            } else if c == PUN {
                punctuation(b, i, true)
            } else if b[i] == b' ' && n == PUN {
                punctuation(b, i + 1, true)
            } else {
                whitespace(b, i)
            }
        }
        _ => Err(NonAscii),
    }
}

/// cl100k_base:
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*`
/// `|\s*[\r\n]+|\s+(?!\S)|\s+`
fn next_piece_cl100k(b: &[u8], i: usize) -> Step {
    let c = class(b, i);
    match c {
        UP | LO => any_letters(b, i),
        DIG => digits(b, i),
        NL => whitespace(b, i),
        PUN | WS => {
            if b[i] == b'\'' {
                let end = contraction_suffix(b, i)?;
                if end > i {
                    return Ok(end);
                }
            }
            let n = class(b, i + 1);
            if n == HI {
                Err(NonAscii)
            } else if is_letter(n) {
                any_letters(b, i + 1)
            } else if c == PUN {
                punctuation(b, i, false)
            } else if b[i] == b' ' && n == PUN {
                punctuation(b, i + 1, false)
            } else {
                whitespace(b, i)
            }
        }
        _ => Err(NonAscii),
    }
}

/// o200k's letter run from `j` (a letter): uppercase* then lowercase*, at least one letter.
/// (The first alternative needs a lowercase letter, the second an uppercase one; both end at the
/// same place, and backtracking cannot do better because the classes are disjoint in ASCII.)
#[inline]
fn cased_letters(b: &[u8], j: usize) -> Step {
    let mut e = j;
    while class(b, e) == UP {
        e += 1;
    }
    while class(b, e) == LO {
        e += 1;
    }
    // A non-ASCII letter or mark would continue the run.
    if class(b, e) == HI {
        return Err(NonAscii);
    }
    Ok(e)
}

/// cl100k's `\p{L}+` from `j` (a letter).
#[inline]
fn any_letters(b: &[u8], j: usize) -> Step {
    let mut e = j;
    while is_letter(class(b, e)) {
        e += 1;
    }
    if class(b, e) == HI {
        return Err(NonAscii);
    }
    Ok(e)
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `e`: the end after the optional contraction. Case-insensitive
/// matching is Unicode-aware in the regex (`ſ` matches `s`), so a non-ASCII character in reach
/// defers to it.
#[inline]
fn contraction_suffix(b: &[u8], e: usize) -> Step {
    if b.get(e) != Some(&b'\'') {
        return Ok(e);
    }
    let Some(&c1) = b.get(e + 1) else {
        return Ok(e);
    };
    if c1 >= 0x80 {
        return Err(NonAscii);
    }
    match c1.to_ascii_lowercase() {
        b's' | b't' | b'm' | b'd' => Ok(e + 2),
        c1 @ (b'r' | b'v' | b'l') => {
            let Some(&c2) = b.get(e + 2) else {
                return Ok(e);
            };
            if c2 >= 0x80 {
                return Err(NonAscii);
            }
            let want = if c1 == b'l' { b'l' } else { b'e' };
            Ok(if c2.to_ascii_lowercase() == want {
                e + 3
            } else {
                e
            })
        }
        _ => Ok(e),
    }
}

/// `\p{N}{1,3}` from `i` (a digit).
#[inline]
fn digits(b: &[u8], i: usize) -> Step {
    let mut e = i + 1;
    while e < i + 3 && class(b, e) == DIG {
        e += 1;
    }
    if e < i + 3 && class(b, e) == HI {
        return Err(NonAscii); // could be a non-ASCII digit such as `²` or `٣`
    }
    Ok(e)
}

/// `[^\s\p{L}\p{N}]+[\r\n/]*` (o200k) or `[^\s\p{L}\p{N}]+[\r\n]*` (cl100k) from `j` (a
/// punctuation byte).
#[inline]
fn punctuation(b: &[u8], j: usize, slash: bool) -> Step {
    let mut e = j + 1;
    while class(b, e) == PUN {
        e += 1;
    }
    if class(b, e) == HI {
        return Err(NonAscii); // could be non-ASCII punctuation, continuing the run
    }
    while let Some(&c) = b.get(e) {
        if c == b'\r' || c == b'\n' || (slash && c == b'/') {
            e += 1;
        } else {
            break;
        }
    }
    Ok(e)
}

/// The whitespace alternatives from `i` (a whitespace byte), once the letter and punctuation
/// alternatives have failed: `\s*[\r\n]+` takes the run up to its last newline; otherwise
/// `\s+(?!\S)` takes the run but its last character when a non-space follows (all of it at the
/// end of the text), and `\s+` takes a single space before a non-space.
#[inline]
fn whitespace(b: &[u8], i: usize) -> Step {
    let mut e = i;
    let mut last_newline = None;
    loop {
        match class(b, e) {
            WS => e += 1,
            NL => {
                last_newline = Some(e);
                e += 1;
            }
            HI => return Err(NonAscii), // could be Unicode whitespace such as U+00A0
            _ => break,
        }
    }
    Ok(match last_newline {
        Some(k) => k + 1,
        None if e == b.len() => e,
        None if e - i >= 2 => e - 1,
        None => e,
    })
}
