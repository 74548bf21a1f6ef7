//! Exact counts on the generated non-ASCII corpora of the tokens bench (CJK prose, emoji-dense
//! chat, minified JS): ctxbench's BPE counter must agree with tiktoken-rs on every chunk, cold
//! and warm piece cache, for both encodings.

#[path = "../benches/common/corpora.rs"]
mod corpora;

use ctxbench::tokens::bpe::{clear_piece_cache, BpeCounter, Encoding};

#[test]
fn generated_corpora_count_exactly_like_tiktoken() {
    for (name, text) in corpora::all(48 * 1024) {
        assert!(!text.is_ascii() || name == "minified-js", "{name}");
        // Chunks cut at line ends, as the bench does, plus odd cuts inside lines.
        let mut pieces: Vec<&str> = text.split_inclusive('\n').collect();
        let mut cut = 0;
        while cut < text.len() {
            let mut end = (cut + 777).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            pieces.push(&text[cut..end]);
            cut = end;
        }
        pieces.push(&text);
        for (enc, tk) in [
            (Encoding::O200k, tiktoken_rs::o200k_base_singleton()),
            (Encoding::Cl100k, tiktoken_rs::cl100k_base_singleton()),
        ] {
            let ours = BpeCounter::new(enc);
            clear_piece_cache();
            for p in &pieces {
                let want = tk.count_ordinary(p) as u64;
                assert_eq!(ours.count(p), want, "{name} {}: {p:?}", enc.name());
            }
            // warm cache: the same again
            for p in pieces.iter().take(50) {
                assert_eq!(ours.count(p), tk.count_ordinary(p) as u64, "{name} warm");
            }
        }
    }
}
