//! Word-level diff of two texts (two summaries of the same fold), rendered as page markup with
//! `<del>` (words only the first text has) and `<ins>` (words only the second has).
//!
//! Words are maximal runs of non-whitespace; the whitespace between them is kept as written
//! and never marked. The longest common subsequence of the words is computed after stripping
//! the common prefix and suffix; when what remains is too large for the quadratic table
//! ([`MAX_CELLS`]), the texts are shown without marks and the caller says so.

use super::{Esc, Fragment};
use maud::html;

/// Most cells of the LCS table (words left in A × words left in B after the common prefix and
/// suffix): 4M cells, kept as bits (0.5 MB; see `Lcs`).
pub const MAX_CELLS: usize = 4_000_000;

/// One step of a word diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Word `a` of the first text equals word `b` of the second.
    Same(usize, usize),
    /// Word of the first text only.
    Del(usize),
    /// Word of the second text only.
    Ins(usize),
}

/// Byte ranges of the words of `text`.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// The word diff of `a` and `b`, or `None` when it is too large to compute (see `MAX_CELLS`).
pub fn word_diff(a: &str, b: &str) -> Option<Vec<Op>> {
    diff_words(a, &words(a), b, &words(b))
}

/// [`word_diff`] of texts whose words ([`words`]) are `wa` and `wb`. Each distinct word becomes
/// a number first, so the quadratic table compares numbers, not strings.
fn diff_words<'t>(
    a: &'t str,
    wa: &[(usize, usize)],
    b: &'t str,
    wb: &[(usize, usize)],
) -> Option<Vec<Op>> {
    let mut ids: rustc_hash::FxHashMap<&'t str, u32> = rustc_hash::FxHashMap::default();
    let mut id = |w: &'t str| {
        let next = ids.len() as u32;
        *ids.entry(w).or_insert(next)
    };
    let ia: Vec<u32> = wa.iter().map(|&(s, e)| id(&a[s..e])).collect();
    let ib: Vec<u32> = wb.iter().map(|&(s, e)| id(&b[s..e])).collect();
    diff_seq(&ia, &ib)
}

fn diff_seq(a: &[u32], b: &[u32]) -> Option<Vec<Op>> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) > MAX_CELLS {
        return None;
    }
    let mut ops: Vec<Op> = (0..prefix).map(|i| Op::Same(i, i)).collect();
    let table = Lcs::new(ma, mb);
    let lcs = |i: usize, j: usize| table.get(i, j);
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && ma[i] == mb[j] {
            ops.push(Op::Same(prefix + i, prefix + j));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs(i, j + 1) >= lcs(i + 1, j)) {
            ops.push(Op::Ins(prefix + j));
            j += 1;
        } else {
            ops.push(Op::Del(prefix + i));
            i += 1;
        }
    }
    let (ea, eb) = (a.len() - suffix, b.len() - suffix);
    ops.extend((0..suffix).map(|k| Op::Same(ea + k, eb + k)));
    Some(ops)
}

/// The table of LCS lengths of the suffixes of two word sequences, `get(i, j)` = the LCS of
/// `a[i..]` and `b[j..]`, kept as bit rows (the bit-vector algorithm of Allison and Dix, as
/// Hyyrö writes it): reversed, the suffixes are prefixes, and after the first `r` words of
/// reversed `a` the zero bits of row `r` below bit `c` count the LCS with the first `c` words of
/// reversed `b`. 64 cells a machine word instead of one cell a step.
struct Lcs {
    /// `a.len() + 1` rows of `words` words each; row `r` is after `r` words of reversed `a`.
    rows: Vec<u64>,
    words: usize,
    n: usize,
    m: usize,
}

impl Lcs {
    fn new(a: &[u32], b: &[u32]) -> Lcs {
        let (n, m) = (a.len(), b.len());
        let words = m.div_ceil(64).max(1);
        // Where each word of `b` is, in reversed `b` (bit `m - 1 - j` for `b[j]`), by word id.
        let ids = a
            .iter()
            .chain(b)
            .copied()
            .max()
            .map_or(0, |x| x as usize + 1);
        let mut start = vec![0usize; ids + 1];
        for &x in b {
            start[x as usize + 1] += 1;
        }
        for k in 0..ids {
            start[k + 1] += start[k];
        }
        let mut at = start.clone();
        let mut bits = vec![0usize; m];
        for (j, &x) in b.iter().enumerate() {
            bits[at[x as usize]] = m - 1 - j;
            at[x as usize] += 1;
        }
        let mut rows = vec![u64::MAX; (n + 1) * words];
        let mut mask = vec![0u64; words];
        for r in 0..n {
            let x = a[n - 1 - r] as usize;
            let places = &bits[start[x]..start[x + 1]];
            for &p in places {
                mask[p / 64] |= 1 << (p % 64);
            }
            let (done, next) = rows.split_at_mut((r + 1) * words);
            let (v, out) = (&done[r * words..], &mut next[..words]);
            let mut carry = 0u64;
            for k in 0..words {
                let u = v[k] & mask[k];
                let (s1, c1) = v[k].overflowing_add(u);
                let (s2, c2) = s1.overflowing_add(carry);
                carry = u64::from(c1 || c2);
                out[k] = s2 | (v[k] & !u);
            }
            for &p in places {
                mask[p / 64] = 0;
            }
        }
        Lcs { rows, words, n, m }
    }

    /// LCS of `a[i..]` and `b[j..]` (`i ≤ n`, `j ≤ m`).
    fn get(&self, i: usize, j: usize) -> u32 {
        let row = &self.rows[(self.n - i) * self.words..][..self.words];
        let c = self.m - j;
        let (full, rest) = (c / 64, c % 64);
        let mut ones: u32 = row[..full].iter().map(|w| w.count_ones()).sum();
        if rest > 0 {
            ones += (row[full] & ((1u64 << rest) - 1)).count_ones();
        }
        c as u32 - ones
    }
}

/// How [`render`] marks words: `<del>` or `<ins>`.
#[derive(Clone, Copy)]
enum Mark {
    Del,
    Ins,
}

/// `text` with the words whose index `marked` says wrapped in `<del>` or `<ins>` (runs of marked
/// words share one element; the whitespace between them goes inside it, the whitespace around
/// a run stays outside).
fn render(text: &str, words: &[(usize, usize)], marked: &[bool], mark: Mark) -> Fragment {
    // Byte ranges of `text` in order, each plain or marked.
    let mut spans: Vec<(usize, usize, bool)> = Vec::new();
    let mut at = 0;
    for (&(s, e), &m) in words.iter().zip(marked) {
        match spans.last_mut() {
            // A marked word right after a marked run (only whitespace between): extend it.
            Some(last) if m && last.2 && last.1 == at => last.1 = e,
            _ if m => {
                spans.push((at, s, false));
                spans.push((s, e, true));
            }
            _ => spans.push((at, e, false)),
        }
        at = e;
    }
    spans.push((at, text.len(), false));
    html! {
        @for &(s, e, m) in &spans {
            @let t = &text[s..e];
            @if !m {
                (Esc(t))
            } @else {
                @match mark {
                    Mark::Del => del { (Esc(t)) },
                    Mark::Ins => ins { (Esc(t)) },
                }
            }
        }
    }
}

/// Both texts as page markup, words only `a` has in `<del>`, words only `b` has in `<ins>`;
/// `None` when the diff is too large (show them as plain text and say so).
pub fn side_by_side(a: &str, b: &str) -> Option<(Fragment, Fragment)> {
    let (wa, wb) = (words(a), words(b));
    let ops = diff_words(a, &wa, b, &wb)?;
    let mut del = vec![false; wa.len()];
    let mut ins = vec![false; wb.len()];
    for op in ops {
        match op {
            Op::Del(i) => del[i] = true,
            Op::Ins(j) => ins[j] = true,
            Op::Same(..) => {}
        }
    }
    Some((
        render(a, &wa, &del, Mark::Del),
        render(b, &wb, &ins, Mark::Ins),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_diff_finds_the_changed_words_only() {
        let ops = word_diff("the goal is to fix the parser", "the goal: fix the lexer").unwrap();
        // words: a = the goal is to fix the parser; b = the goal: fix the lexer
        assert_eq!(
            ops,
            [
                Op::Same(0, 0),
                Op::Ins(1),
                Op::Del(1),
                Op::Del(2),
                Op::Del(3),
                Op::Same(4, 2),
                Op::Same(5, 3),
                Op::Ins(4),
                Op::Del(6),
            ]
        );
        assert_eq!(word_diff("", "").unwrap(), []);
        assert_eq!(word_diff("a", "").unwrap(), [Op::Del(0)]);
        assert_eq!(word_diff("", "  b ").unwrap(), [Op::Ins(0)]);
    }

    #[test]
    fn side_by_side_marks_runs_keeps_whitespace_and_escapes() {
        let (a, b) = side_by_side(
            "## GOAL\nfix <b> now & then",
            "## GOAL\nship <script>x</script> now",
        )
        .unwrap();
        let (a, b) = (a.into_string(), b.into_string());
        assert_eq!(
            a,
            "## GOAL\n<del>fix &lt;b&gt;</del> now <del>&amp; then</del>"
        );
        assert_eq!(
            b,
            "## GOAL\n<ins>ship &lt;script&gt;x&lt;/script&gt;</ins> now"
        );
        let (x, y) = side_by_side("a  b\n", "a  b\n").unwrap();
        assert_eq!(
            (x.into_string(), y.into_string()),
            ("a  b\n".into(), "a  b\n".into())
        );
        // Runs separated by an unmarked word are two elements; leading/trailing marks too.
        let (x, y) = side_by_side("x a y b z", "a b").unwrap();
        assert_eq!(
            x.into_string(),
            "<del>x</del> a <del>y</del> b <del>z</del>"
        );
        assert_eq!(y.into_string(), "a b");
    }

    /// The table over the words themselves (as before the words became numbers): the same ops
    /// on texts with repeated, shared and unshared words.
    #[test]
    fn numbered_words_give_the_ops_of_the_words_themselves() {
        // The function as it was, on the words themselves.
        fn reference(a: &[&str], b: &[&str]) -> Vec<Op> {
            let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            let suffix = a[prefix..]
                .iter()
                .rev()
                .zip(b[prefix..].iter().rev())
                .take_while(|(x, y)| x == y)
                .count();
            let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
            let (n, m) = (ma.len(), mb.len());
            let mut ops: Vec<Op> = (0..prefix).map(|i| Op::Same(i, i)).collect();
            let w = m + 1;
            let mut lcs = vec![0u16; (n + 1) * w];
            for i in (0..n).rev() {
                for j in (0..m).rev() {
                    lcs[i * w + j] = if ma[i] == mb[j] {
                        lcs[(i + 1) * w + j + 1] + 1
                    } else {
                        lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                    };
                }
            }
            let (mut i, mut j) = (0, 0);
            while i < n || j < m {
                if i < n && j < m && ma[i] == mb[j] {
                    ops.push(Op::Same(prefix + i, prefix + j));
                    (i, j) = (i + 1, j + 1);
                } else if j < m && (i == n || lcs[i * w + j + 1] >= lcs[(i + 1) * w + j]) {
                    ops.push(Op::Ins(prefix + j));
                    j += 1;
                } else {
                    ops.push(Op::Del(prefix + i));
                    i += 1;
                }
            }
            let (ea, eb) = (a.len() - suffix, b.len() - suffix);
            ops.extend((0..suffix).map(|k| Op::Same(ea + k, eb + k)));
            ops
        }
        let vocab = [
            "the", "goal", "fix", "parser", "lexer", "a", "b", "## GOAL", "x",
        ];
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for round in 0..600 {
            // Short texts (one word of bits), then long ones (carries across words).
            let most = if round < 300 { 30 } else { 300 };
            let (la, lb) = (next() % most, next() % most);
            // Few words, often repeated; or many, rarely shared.
            let mut word = || match round % 2 {
                0 => vocab[next() % vocab.len()].to_string(),
                _ => format!("w{}", next() % 400),
            };
            let a: Vec<String> = (0..la).map(|_| word()).collect();
            let b: Vec<String> = (0..lb).map(|_| word()).collect();
            let (ta, tb) = (a.join(" "), b.join("\n "));
            let (wa, wb): (Vec<&str>, Vec<&str>) = (
                ta.split_whitespace().collect(),
                tb.split_whitespace().collect(),
            );
            assert_eq!(
                word_diff(&ta, &tb).unwrap(),
                reference(&wa, &wb),
                "{ta:?} / {tb:?}"
            );
        }
    }

    #[test]
    fn too_large_a_diff_is_refused_not_truncated() {
        let a: String = (0..2100).map(|i| format!("a{i} ")).collect();
        let b: String = (0..2100).map(|i| format!("b{i} ")).collect();
        assert!(word_diff(&a, &b).is_none());
        // A long text with a small change still diffs (common prefix and suffix are free).
        let c = a.replacen("a7 ", "z7 ", 1);
        let ops = word_diff(&a, &c).unwrap();
        assert_eq!(ops.iter().filter(|o| !matches!(o, Op::Same(..))).count(), 2);
    }
}
