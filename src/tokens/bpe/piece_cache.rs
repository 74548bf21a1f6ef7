//! Per-thread memo of short BPE pieces' token counts (keyed by the bytes packed into a u128).

use super::{split, Encoding};
use bpe_openai::byte_pair_encoding::BytePairEncoding;
use std::cell::RefCell;

// ---------------------------------------------------------------------------------------------
// Piece cache
//
// Most pieces are short and repeat (words, indentation, punctuation), so each thread memoizes the
// BPE count of pieces up to 15 bytes, keyed by the bytes packed into a u128 with the length in
// the top byte (no allocation per lookup). BPE is deterministic, so this cannot change a count.
// ---------------------------------------------------------------------------------------------

/// Longest piece memoized (bytes); the 16th byte of the key holds the length.
pub(super) const CACHED_PIECE_MAX: usize = 15;
/// Entries per thread and encoding before the cache is cleared (bounds memory to a few MB).
pub(super) const CACHE_CAPACITY: usize = 1 << 17;

pub(super) struct PieceCache {
    enc: Encoding,
    /// Small direct-mapped front (fits in L2): each slot holds a key with the count in its top
    /// 4 bits (a piece of at most 15 bytes has at most 15 tokens); 0 = empty.
    front: Box<[u128]>,
    map: rustc_hash::FxHashMap<u128, u8>,
    /// Pieces of 16..=[`MID_PIECE_MAX`] bytes (emoji runs, CJK words and short clauses): a map
    /// from the bytes' hash to where their copy sits in `arena` and their count. A lookup
    /// compares the bytes, so a hash collision only costs a recount, never a wrong count.
    mid: rustc_hash::FxHashMap<u64, MidEntry>,
    arena: Vec<u8>,
}

#[derive(Clone, Copy)]
struct MidEntry {
    offset: u32,
    len: u8,
    count: u8,
}

/// Longest piece of the second-level cache (bytes; at most as many tokens, so a `u8` count).
pub(super) const MID_PIECE_MAX: usize = 96;
/// Bytes of piece copies kept per thread and encoding before that level is cleared.
const MID_ARENA_CAPACITY: usize = 4 << 20;

/// Slots of the direct-mapped front cache (16 bytes each).
const FRONT_SLOTS: usize = 1 << 13;
pub(super) const COUNT_SHIFT: u32 = 124;

impl PieceCache {
    pub(super) fn new(enc: Encoding) -> Self {
        PieceCache {
            enc,
            front: vec![0u128; FRONT_SLOTS].into_boxed_slice(),
            map: rustc_hash::FxHashMap::default(),
            mid: rustc_hash::FxHashMap::default(),
            arena: Vec::new(),
        }
    }

    pub(super) fn clear(&mut self) {
        self.front.fill(0);
        self.map.clear();
        self.mid.clear();
        self.arena.clear();
    }

    /// Tokens of a piece of 16..=[`MID_PIECE_MAX`] bytes, memoized by its bytes; on a miss,
    /// `count` computes it.
    #[inline(never)]
    fn count_mid(&mut self, piece: &[u8], count: impl FnOnce(&mut Self) -> u64) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        h.write(piece);
        let h = h.finish();
        if let Some(e) = self.mid.get(&h) {
            let at = e.offset as usize;
            if self.arena.get(at..at + e.len as usize) == Some(piece) {
                return e.count as u64;
            }
            return count(self); // another piece with the same hash: keep it
        }
        let n = count(self);
        if self.arena.len() + piece.len() > MID_ARENA_CAPACITY {
            self.mid.clear();
            self.arena.clear();
        }
        self.mid.insert(
            h,
            MidEntry {
                offset: self.arena.len() as u32,
                len: piece.len() as u8,
                count: n as u8, // <= piece.len() <= MID_PIECE_MAX
            },
        );
        self.arena.extend_from_slice(piece);
        n
    }

    /// Tokens of a piece longer than [`CACHED_PIECE_MAX`]: cut where no token can span
    /// (`split.rs`) and each segment counted through the caches; pieces up to
    /// [`MID_PIECE_MAX`] bytes are also memoized whole.
    #[inline(never)]
    fn count_long(&mut self, bpe: &BytePairEncoding, piece: &[u8]) -> u64 {
        if piece.len() <= MID_PIECE_MAX {
            self.count_mid(piece, |cache| cache.count_split(bpe, piece))
        } else {
            self.count_split(bpe, piece)
        }
    }

    fn count_split(&mut self, bpe: &BytePairEncoding, piece: &[u8]) -> u64 {
        if piece.is_ascii() {
            return bpe.count(piece) as u64; // only non-ASCII positions are ever cut
        }
        let mut total = 0;
        split::table(self.enc).for_each_segment(piece, |seg| {
            total += if seg.len() == piece.len() {
                bpe.count(seg) as u64 // no cut: the whole piece, already missed in the caches
            } else {
                self.count_segment(bpe, seg)
            };
        });
        total
    }

    /// Tokens of a segment with no cut point inside (so it is not cut again).
    fn count_segment(&mut self, bpe: &BytePairEncoding, seg: &[u8]) -> u64 {
        let n = seg.len();
        if n <= CACHED_PIECE_MAX {
            self.count(bpe, seg, 0, n)
        } else if n <= MID_PIECE_MAX {
            self.count_mid(seg, |_| bpe.count(seg) as u64)
        } else {
            bpe.count(seg) as u64
        }
    }

    /// Tokens of the piece `b[start..end]`.
    #[inline]
    pub(super) fn count(
        &mut self,
        bpe: &BytePairEncoding,
        b: &[u8],
        start: usize,
        end: usize,
    ) -> u64 {
        let n = end - start;
        if n <= 1 {
            return n as u64; // every single byte is a token
        }
        if n > CACHED_PIECE_MAX {
            return self.count_long(bpe, &b[start..end]);
        }
        let key = piece_key(b, start, n);
        let h =
            (key as u64 ^ ((key >> 64) as u64).rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let slot = (h >> (64 - FRONT_SLOTS.trailing_zeros())) as usize;
        let entry = self.front[slot];
        if entry & !(0xF << COUNT_SHIFT) == key {
            return (entry >> COUNT_SHIFT) as u64;
        }
        let c = match self.map.get(&key) {
            Some(&c) => c,
            None => {
                let c = bpe.count(&b[start..end]) as u8; // <= n <= 15
                if self.map.len() >= CACHE_CAPACITY {
                    self.map.clear();
                }
                self.map.insert(key, c);
                c
            }
        };
        self.front[slot] = key | ((c as u128) << COUNT_SHIFT);
        c as u64
    }
}

/// The piece `b[start..start + n]` (2 <= n <= 15) packed into a u128: bytes little-endian, the
/// length in bits 120..124 (bits 124..128 stay free for the front cache's count).
#[inline(always)]
pub(super) fn piece_key(b: &[u8], start: usize, n: usize) -> u128 {
    let raw = match b.get(start..start + 16) {
        Some(w) => u128::from_le_bytes(w.try_into().expect("16 bytes")),
        None => {
            let mut k = [0u8; 16];
            k[..n].copy_from_slice(&b[start..start + n]);
            u128::from_le_bytes(k)
        }
    };
    (raw & ((1u128 << (8 * n)) - 1)) | ((n as u128) << 120)
}

thread_local! {
    static O200K_PIECES: RefCell<PieceCache> = RefCell::new(PieceCache::new(Encoding::O200k));
    static CL100K_PIECES: RefCell<PieceCache> = RefCell::new(PieceCache::new(Encoding::Cl100k));
}

/// Empty this thread's piece caches (for cold-cache benchmarks; counts never depend on them).
pub fn clear_piece_cache() {
    O200K_PIECES.with(|c| c.borrow_mut().clear());
    CL100K_PIECES.with(|c| c.borrow_mut().clear());
}

pub(super) fn with_piece_cache<R>(enc: Encoding, f: impl FnOnce(&mut PieceCache) -> R) -> R {
    let slot = match enc {
        Encoding::O200k => &O200K_PIECES,
        Encoding::Cl100k => &CL100K_PIECES,
    };
    slot.with(|cell| match cell.try_borrow_mut() {
        Ok(mut cache) => f(&mut cache),
        // Only reachable if `f` re-entered counting on this thread; use a fresh cache then.
        Err(_) => f(&mut PieceCache::new(enc)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mid_pieces_count_exactly_through_hits_collisions_and_clears() {
        let bpe = &Encoding::O200k.tokenizer().bpe;
        let text = "上下文压缩工具调用结果 👍🏽👍🏽🎉 les cafés très bien 👨‍👩‍👧‍👦👨‍👩‍👧‍👦 ".repeat(4);
        let b = text.as_bytes();
        let mut cache = PieceCache::new(Encoding::O200k);
        let mut checked = 0;
        for round in 0..3 {
            for start in (0..b.len()).filter(|&i| text.is_char_boundary(i)) {
                for end in (start + CACHED_PIECE_MAX + 1..=(start + MID_PIECE_MAX).min(b.len()))
                    .filter(|&e| text.is_char_boundary(e))
                    .step_by(3)
                {
                    let want = bpe.count(&b[start..end]) as u64;
                    assert_eq!(cache.count(bpe, b, start, end), want, "round {round}");
                    checked += 1;
                }
            }
            if round == 1 {
                // A different piece registered under every hash: lookups must recount.
                let fake = MidEntry {
                    offset: 0,
                    len: 20,
                    count: 99,
                };
                cache.arena = b"zzzzzzzzzzzzzzzzzzzz".to_vec();
                for e in cache.mid.values_mut() {
                    *e = fake;
                }
            }
        }
        assert!(checked > 1000);
        // Overflowing the arena clears that level and stays exact.
        let big: String = (0..MID_ARENA_CAPACITY / 20 + 10)
            .map(|i| format!("{i:020}"))
            .collect();
        for k in 0..MID_ARENA_CAPACITY / 20 + 10 {
            let (s, e) = (k * 20, k * 20 + 20);
            let piece = &big.as_bytes()[s..e];
            assert_eq!(cache.count(bpe, piece, 0, 20), bpe.count(piece) as u64);
        }
        assert!(cache.arena.len() <= MID_ARENA_CAPACITY);
    }
}
