//! Which characters Python's `str.isprintable()` accepts, i.e. what `repr()` keeps as is and
//! what it escapes. ASCII is decided inline; above it, two generated tables of non-printable
//! ranges, one per part of Unicode (`bmp`: U+0080..=U+FFFF, `astral`: U+10000 and up), exactly
//! as Python 3.11 (Unicode 14.0) has them.

mod astral;
mod bmp;

use std::cmp::Ordering;

/// Whether Python's `str.isprintable()` accepts this character (what `repr` keeps as is).
pub fn py_is_printable(c: char) -> bool {
    let cp = c as u32;
    if cp < 0x80 {
        return (0x20..0x7f).contains(&cp);
    }
    let table = if cp < 0x10000 {
        bmp::NON_PRINTABLE_BMP
    } else {
        astral::NON_PRINTABLE_ASTRAL
    };
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                Ordering::Less
            } else if lo > cp {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each table is sorted, its ranges disjoint, non-adjacent (the generator merges runs) and
    /// inside its part of Unicode, so the lookup above picks the one table that can hold `c`.
    #[test]
    fn tables_are_sorted_disjoint_and_in_their_planes() {
        for (table, lo, hi) in [
            (bmp::NON_PRINTABLE_BMP, 0x80, 0xFFFF),
            (astral::NON_PRINTABLE_ASTRAL, 0x10000, 0x10FFFF),
        ] {
            assert!(table.iter().all(|&(a, b)| lo <= a && a <= b && b <= hi));
            assert!(table.windows(2).all(|w| w[0].1 + 1 < w[1].0));
        }
    }

    #[test]
    fn agrees_with_python_on_known_characters() {
        // Printable: letters, CJK, emoji, the last printable BMP and astral characters.
        for c in ['a', ' ', '~', 'é', '中', '😀', '\u{FFFD}', '\u{E0100}'] {
            assert!(py_is_printable(c), "{c:?}");
        }
        // Not printable: controls, NBSP, soft hyphen, surrogate-adjacent private use, a BMP
        // non-character, unassigned astral code points, the last code point.
        for c in [
            '\n',
            '\u{7f}',
            '\u{80}',
            '\u{a0}',
            '\u{ad}',
            '\u{e000}',
            '\u{ffff}',
            '\u{1000c}',
            '\u{10ffff}',
        ] {
            assert!(!py_is_printable(c), "{c:?}");
        }
    }
}
