//! Exact counts on the generated non-ASCII corpora of the tokens bench (CJK prose, emoji-dense
//! chat, minified JS): ctxbench's BPE counter must agree with tiktoken-rs on every chunk, cold
//! and warm piece cache, for both encodings. Plus random texts glued from units of many scripts
//! (CJK, Hangul, kana, Cyrillic, Arabic, Devanagari, Thai, combining marks, ZWJ emoji sequences,
//! numbers in other scripts), long enough to reach every piece-cache level.

#[path = "../../benches/common/corpora.rs"]
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

/// Pieces far past the caches' reach (the splitter's cut points decide these counts): unbroken
/// runs of CJK words and of emoji, at every length from 1 to 200 characters, cold and warm.
#[test]
fn long_unbroken_cjk_and_emoji_runs_count_exactly_like_tiktoken() {
    let runs = [
        "上下文压缩工具调用结果我们今天需要東京都ひらがなカタカナ한국어문장입니다的的的",
        "👨‍👩‍👧‍👦🧑🏽‍💻👍🏿🏳️‍🌈🇯🇵🇫🇷❤️✨✨✨🫠🎉🎉👍🏽",
    ];
    for (enc, tk) in [
        (Encoding::O200k, tiktoken_rs::o200k_base_singleton()),
        (Encoding::Cl100k, tiktoken_rs::cl100k_base_singleton()),
    ] {
        let ours = BpeCounter::new(enc);
        for run in runs {
            let long: String = run.repeat(8);
            for n in 1..=200 {
                let text: String = long.chars().cycle().skip(n * 7).take(n).collect();
                let want = tk.count_ordinary(&text) as u64;
                clear_piece_cache();
                assert_eq!(ours.count(&text), want, "{} cold {text:?}", enc.name());
                assert_eq!(ours.count(&text), want, "{} warm {text:?}", enc.name());
            }
        }
    }
}

mod random_unicode {
    use super::*;
    use proptest::prelude::*;

    /// Units real multilingual chat is made of; each chosen to stress a class of the split
    /// pattern (letters by case and script, marks, numbers of other scripts, emoji sequences).
    const UNITS: &[&str] = &[
        "上下文压缩",
        "的",
        "。",
        "，",
        "「引用」",
        "我们今天需要",
        "東京都",
        "ひらがな",
        "カタカナー",
        "한국어",
        " 문장입니다",
        "Привет",
        " мир",
        "ΣΊΣΥΦΟΣ",
        "مرحبا",
        "١٢٣٤",
        "नमस्ते",
        "१२३",
        "ภาษาไทย",
        "๑๒",
        "１２３",
        "ＡＢＣ",
        "²³",
        "Ⅻ",
        "ǅungla",
        "e\u{301}",
        "a\u{300}\u{316}",
        "\u{20dd}",
        "ſt",
        "'S",
        "'ll",
        "'ſ",
        " ",
        "  ",
        "\n",
        "\r\n",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "👨‍👩‍👧‍👦",
        "🧑🏽‍💻",
        "👍🏿",
        "🏳️‍🌈",
        "🇯🇵🇫🇷",
        "❤️",
        "✨✨✨",
        "🫠",
        "\u{200d}",
        "\u{fe0f}",
        "x",
        "Word",
        "HTTP",
        "42",
        "3.14",
        "…",
        "—",
        "«»",
        "/",
        "\t",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn glued_multilingual_units_count_like_tiktoken(
            picks in prop::collection::vec(0..UNITS.len(), 0..60),
        ) {
            let text: String = picks.iter().map(|&i| UNITS[i]).collect();
            for (enc, tk) in [
                (Encoding::O200k, tiktoken_rs::o200k_base_singleton()),
                (Encoding::Cl100k, tiktoken_rs::cl100k_base_singleton()),
            ] {
                let want = tk.count_ordinary(&text) as u64;
                let ours = BpeCounter::new(enc);
                clear_piece_cache();
                prop_assert_eq!(ours.count(&text), want, "{} cold {:?}", enc.name(), text);
                prop_assert_eq!(ours.count(&text), want, "{} warm {:?}", enc.name(), text);
            }
        }
    }
}
