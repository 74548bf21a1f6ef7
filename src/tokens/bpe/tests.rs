//! Tests of the BPE counter: reference counts, framing, pre-tokenizer against the regex, caches.

use super::piece_cache::{piece_key, PieceCache, CACHED_PIECE_MAX, CACHE_CAPACITY, COUNT_SHIFT};
use super::*;
use crate::trace::{Message, ToolCall};

/// Reference counts fixed in the source, so a broken or swapped dependency is caught even if
/// tiktoken-rs broke the same way. Taken from tiktoken's published encodings (whose cl100k
/// ids for "tiktoken is great!", [83, 1609, 5963, 374, 2294, 0], match the OpenAI cookbook).
const KNOWN: &[(&str, u64, u64)] = &[
    // (text, o200k, cl100k)
    ("hello world", 2, 2),
    ("tiktoken is great!", 6, 6),
    ("110000", 2, 2),
    ("1234567", 3, 3),
    ("  \n\n  x", 3, 3),
    (
        "h\u{e9}llo w\u{f6}rld \u{4f60}\u{597d} \u{1f389}\u{1f44d}\u{1f3fd}",
        12,
        18,
    ),
    ("<|endoftext|>", 7, 7),
    ("def f(x):\n    return x**2\n", 10, 10),
    ("I'm they're WE'LL", 5, 7),
    ("\t\t  \r\n", 2, 2),
    ("", 0, 0),
];

#[test]
fn known_reference_counts() {
    for &(text, o200k, cl100k) in KNOWN {
        assert_eq!(BpeCounter::o200k().count(text), o200k, "o200k {text:?}");
        assert_eq!(BpeCounter::cl100k().count(text), cl100k, "cl100k {text:?}");
    }
}

#[test]
fn message_framing_follows_the_cookbook_recipe() {
    for c in [BpeCounter::o200k(), BpeCounter::cl100k()] {
        // Every role name is one token in both encodings.
        for role in ["system", "user", "assistant", "tool"] {
            assert_eq!(c.count(role), 1, "{role}");
        }
        let m = Message::user("hello world");
        assert_eq!(c.count_message(&m), 3 + 1 + 2);

        let mut named = Message::user("hello world");
        named.name = Some("alice".into());
        assert_eq!(c.count_message(&named), 3 + 1 + 2 + c.count("alice") + 1);

        let call = ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "/a.txt", "limit": 10}),
        };
        let a = Message::assistant("", vec![call.clone(), call]);
        let one_call = c.count("read_file") + c.count(r#"{"path":"/a.txt","limit":10}"#);
        assert_eq!(c.count_message(&a), 3 + 1 + 2 * one_call);

        let t = Message::tool("call_1", "read_file", "hello world");
        assert_eq!(
            c.count_message(&t),
            3 + 1 + 2 + c.count("read_file") + 1 + c.count("call_1")
        );
        // Reasoning is never re-sent, so it is not counted.
        let mut r = Message::assistant("hello world", vec![]);
        r.reasoning = Some("long hidden thoughts".into());
        assert_eq!(c.count_message(&r), 3 + 1 + 2);
    }
}

#[test]
fn counts_up_to_a_limit_are_exact_below_it_and_reach_it_otherwise() {
    let c = BpeCounter::o200k();
    let call = ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: serde_json::json!({"path": "/a.txt", "limit": 10, "note": "x ".repeat(300)}),
    };
    let long = "Some prose, numbers 12345 and \u{4f60}\u{597d} text.\n".repeat(40);
    let mut named = Message::user(long.clone());
    named.name = Some("alice".into());
    let messages = [
        Message::user(long.clone()),
        named,
        Message::assistant(long.clone(), vec![call.clone(), call]),
        Message::tool("call_1", "read_file", long.clone()),
        Message::system(""),
    ];
    for m in &messages {
        // `count_message` is `count_message_up_to` without a limit, pinned to the cookbook's
        // recipe by `message_framing_follows_the_cookbook_recipe`.
        let whole = c.count_message(m);
        for limit in [
            0,
            1,
            2,
            5,
            17,
            100,
            511,
            whole / 2,
            whole - 1,
            whole,
            whole + 1,
        ] {
            let n = c.count_message_up_to(m, limit);
            if whole < limit {
                assert_eq!(n, whole, "limit {limit}");
            } else {
                assert!(
                    (limit..=whole).contains(&n),
                    "limit {limit}: {n} of {whole}"
                );
            }
        }
    }
    let whole = c.count(&long);
    assert_eq!(c.count_up_to(&long, whole + 1), whole);
    let n = c.count_up_to(&long, 50);
    assert!((50..60).contains(&n), "{n}");
}

#[test]
fn unparsed_string_arguments_count_as_raw_text() {
    let c = BpeCounter::o200k();
    let raw = ToolCall {
        id: "x".into(),
        name: "bash".into(),
        arguments: serde_json::Value::String("ls -la".into()),
    };
    let m = Message::assistant("", vec![raw]);
    assert_eq!(
        c.count_message(&m),
        3 + 1 + c.count("bash") + c.count("ls -la")
    );
}

#[test]
fn tool_schemas_count_as_compact_json() {
    let c = BpeCounter::cl100k();
    let tools = vec![
        serde_json::json!({"name": "bash", "description": "Run a command"}),
        serde_json::json!({"name": "ls"}),
    ];
    assert_eq!(
        c.count_tools(&tools),
        c.count(r#"{"name":"bash","description":"Run a command"}"#) + c.count(r#"{"name":"ls"}"#)
    );
    assert_eq!(c.count_tools(&[]), 0);
}

/// Strings that exercise every branch of the hand-written pre-tokenizer, and the places
/// where a non-ASCII character must hand the decision to the regex.
const EDGE: &[&str] = &[
    "hello world",
    "Hello World",
    "HTTPServer",
    "camelCaseWord",
    "ALLCAPS",
    "aB",
    "Ab",
    "don't",
    "DON'T",
    "they're",
    "We'LL",
    "it's",
    "I'm",
    "you'd",
    "'s",
    "'sup",
    "x'",
    "x'r",
    "x'rx",
    "'",
    "''",
    "it'\u{17f}",
    "it\u{2019}s",
    "o'e",
    "a'Ll",
    "110000",
    "1234567",
    "12a",
    "a12",
    " 123",
    "1\u{b2}",
    "12\u{663}",
    "\u{663}12",
    "  \n\n  x",
    "\t\t  \r\n",
    "x\n  ",
    "   ",
    " ",
    "\n",
    "\r\n\r\n",
    " \nhello",
    "  a",
    " (foo",
    "(foo",
    "..hello",
    "!!",
    " !!",
    "\t!",
    " \t!",
    "a  b",
    "a \t b",
    "a\u{a0}b",
    " \u{a0}x",
    "\u{a0} x",
    "x \u{a0}",
    "\u{85}x",
    "\x0bx",
    "\x0c\n",
    ".\n\n/",
    "a/b//c\n/",
    "://",
    "path/to/file.rs",
    "#!/usr/bin/env bash\n",
    "caf\u{e9}",
    "\u{e9}t\u{e9}",
    "na\u{ef}ve",
    "x\u{301}y",
    "A\u{301}",
    ".\u{301}",
    "\u{2014}x",
    "x\u{2014}",
    "a\u{2014}\u{2014}b",
    " \u{2014}",
    "\u{4f60}\u{597d}",
    "\u{1f389}\u{1f44d}\u{1f3fd}",
    "\u{1f468}\u{200d}\u{1f469}",
    "\u{1d400}\u{1d401}",
    "\0\x01\x7f",
    "<|endoftext|>",
    "{\"a\": [1, 2.5e-3, null]}",
    "def f(x):\n    return x**2\n",
    "\u{2028}x",
    "x\u{3000}y",
    "\u{1c4}\u{1c5}\u{1c6}",
    "\u{2160}\u{2161}",
];

fn regex_pieces(enc: Encoding, text: &str) -> Vec<&str> {
    enc.tokenizer().split(text).collect()
}

#[test]
fn hand_pretokenizer_matches_the_regex_on_edge_cases() {
    for enc in [Encoding::O200k, Encoding::Cl100k] {
        let c = BpeCounter::new(enc);
        for &text in EDGE {
            // Alone, and glued to neighbours (context changes the decisions).
            for t in [
                text.to_string(),
                format!("a{text}b"),
                format!(" {text} "),
                format!("{text}{text}"),
                format!("\n{text}\n"),
                format!("1{text}'s"),
            ] {
                assert_eq!(c.pieces(&t), regex_pieces(enc, &t), "{enc:?} {t:?}");
            }
        }
    }
}

#[test]
fn counts_match_tiktoken_on_edge_cases() {
    let o = tiktoken_rs::o200k_base_singleton();
    let cl = tiktoken_rs::cl100k_base_singleton();
    for &text in EDGE {
        let t = format!("{text} {text}\n{text}");
        assert_eq!(
            BpeCounter::o200k().count(&t),
            o.encode_ordinary(&t).len() as u64,
            "{t:?}"
        );
        assert_eq!(
            BpeCounter::cl100k().count(&t),
            cl.encode_ordinary(&t).len() as u64,
            "{t:?}"
        );
    }
}

#[test]
fn long_unbroken_runs_are_exact() {
    let o = tiktoken_rs::o200k_base_singleton();
    for t in [
        "a".repeat(10_000),
        " ".repeat(5_000),
        "9".repeat(3_001),
        "=-".repeat(2_000),
    ] {
        assert_eq!(
            BpeCounter::o200k().count(&t),
            o.encode_ordinary(&t).len() as u64
        );
    }
}

#[test]
fn piece_cache_survives_being_cleared() {
    // More distinct short pieces than the cache holds: counts must stay exact.
    let text: String = (0..(CACHE_CAPACITY + 1000))
        .map(|i| format!(" w{i:x}q"))
        .collect();
    let c = BpeCounter::cl100k();
    let direct: u64 = c
        .pieces(&text)
        .iter()
        .map(|p| c.encoding.tokenizer().bpe.count(p.as_bytes()) as u64)
        .sum();
    assert_eq!(c.count(&text), direct);
    assert_eq!(c.count(&text), direct);
}

#[test]
fn piece_keys_are_distinct_for_distinct_pieces() {
    // Same bytes, different lengths; a piece near the end of the text (short read path);
    // zero bytes inside a piece.
    let text = b"ab\0\0abcabcabcabcabcab";
    let mut seen = std::collections::HashMap::new();
    for start in 0..text.len() {
        for n in 2..=CACHED_PIECE_MAX.min(text.len() - start) {
            let key = piece_key(text, start, n);
            assert_eq!(key >> COUNT_SHIFT, 0, "count bits must stay free");
            let piece = &text[start..start + n];
            if let Some(prev) = seen.insert(key, piece) {
                assert_eq!(prev, piece, "two pieces share a key");
            }
        }
    }
}

#[test]
fn front_cache_collisions_and_clears_keep_counts_exact() {
    let mut cache = PieceCache::new(Encoding::O200k);
    let bpe = &Encoding::O200k.tokenizer().bpe;
    let text = "the quick brown fox jumps over the lazy dog 0123456789 !? ".repeat(3);
    let b = text.as_bytes();
    for round in 0..3 {
        for start in 0..b.len() {
            for n in 2..=CACHED_PIECE_MAX.min(b.len() - start) {
                let want = bpe.count(&b[start..start + n]) as u64;
                assert_eq!(cache.count(bpe, b, start, start + n), want, "round {round}");
            }
        }
        cache.clear();
    }
}

#[test]
fn safe_splits_cover_the_text_and_cut_only_before_a_letter_after_a_newline() {
    let text = "ab\ncd\n\nEf 12\n3x\n\u{e9}g\n".repeat(50);
    let b = text.as_bytes();
    for chunk in [1, 2, 7, 64, 10_000] {
        let cuts = safe_splits(b, chunk);
        assert_eq!(cuts.first().map(|r| r.start), Some(0));
        assert_eq!(cuts.last().map(|r| r.end), Some(b.len()));
        for w in cuts.windows(2) {
            assert_eq!(w[0].end, w[1].start);
            let p = w[0].end;
            assert!(
                b[p - 1] == b'\n' && b[p].is_ascii_alphabetic(),
                "cut at {p}"
            );
            assert!(w[0].len() >= chunk);
        }
    }
    assert!(safe_splits(b"", 4).is_empty());
    assert_eq!(safe_splits(b"no newline here", 2), vec![0..15]);
}

#[test]
fn chunked_counts_equal_whole_counts() {
    // Newline-then-letter boundaries inside every construct: punctuation with [\r\n/]*
    // suffixes, whitespace runs ending in newlines, contractions, digits, non-ASCII.
    let text = "fn main() {\n    let x = 110000;\n}\n//\nAb'sé\r\nz .\n/\nq  \n\nT\n\u{4f60}\nw"
        .repeat(40);
    let o = tiktoken_rs::o200k_base_singleton();
    let cl = tiktoken_rs::cl100k_base_singleton();
    for (c, reference) in [(BpeCounter::o200k(), o), (BpeCounter::cl100k(), cl)] {
        let want = reference.encode_ordinary(&text).len() as u64;
        assert_eq!(c.count_serial(&text), want);
        for chunk in [1, 3, 16, 200, 4096] {
            assert_eq!(
                c.count_chunked(&text, chunk),
                want,
                "{:?} chunk {chunk}",
                c.encoding
            );
        }
    }
}

#[test]
fn texts_past_the_parallel_threshold_are_exact() {
    let line = "The quick brown fox -- jumps over 12345 lazy dogs; it's fine.\n";
    let text = line.repeat(PARALLEL_MIN_BYTES / line.len() + 10);
    assert!(text.len() >= PARALLEL_MIN_BYTES);
    let c = BpeCounter::o200k();
    let per_line = c.count_serial(line);
    // Every line starts with a letter after a newline, so lines are independent.
    assert_eq!(c.count(&text), per_line * (text.len() / line.len()) as u64);
}

mod random {
    use super::*;
    use proptest::prelude::*;

    /// Characters chosen to collide with the pattern's classes: ASCII of every class,
    /// contraction letters, Unicode whitespace, letters of every case, marks, digits, emoji.
    fn tricky_char() -> impl Strategy<Value = char> {
        prop::sample::select(vec![
            'a',
            'b',
            's',
            't',
            'r',
            'e',
            'v',
            'l',
            'm',
            'd',
            'A',
            'S',
            'T',
            'R',
            'E',
            'L',
            'Z',
            '0',
            '1',
            '9',
            ' ',
            ' ',
            ' ',
            '\t',
            '\n',
            '\r',
            '\x0b',
            '\x0c',
            '\'',
            '/',
            '.',
            '!',
            '(',
            '"',
            '{',
            '\0',
            '\u{7f}',
            '\u{a0}',
            '\u{85}',
            '\u{2028}',
            '\u{3000}',
            '\u{e9}',
            '\u{c9}',
            '\u{17f}',
            '\u{301}',
            '\u{1c5}',
            '\u{2b0}',
            '\u{4f60}',
            '\u{b2}',
            '\u{663}',
            '\u{2160}',
            '\u{2014}',
            '\u{2019}',
            '\u{1f389}',
            '\u{200d}',
            // Other scripts and classes: Hangul, kana and the Lm prolonged sound mark, a
            // spacing mark (Mc), an enclosing mark (Me), the emoji variation selector (Mn), a
            // skin tone (Sk), a regional indicator, Devanagari and full-width digits, full-width
            // letters, CJK punctuation, the Kelvin sign (folds to k, not a contraction letter).
            '\u{d55c}',
            '\u{30ab}',
            '\u{30fc}',
            '\u{903}',
            '\u{20dd}',
            '\u{fe0f}',
            '\u{1f3fd}',
            '\u{1f1fa}',
            '\u{967}',
            '\u{ff11}',
            '\u{ff21}',
            '\u{3001}',
            '\u{3002}',
            '\u{212a}',
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn pieces_match_the_regex(chars in prop::collection::vec(tricky_char(), 0..40)) {
            let text: String = chars.into_iter().collect();
            for enc in [Encoding::O200k, Encoding::Cl100k] {
                prop_assert_eq!(BpeCounter::new(enc).pieces(&text), regex_pieces(enc, &text));
            }
        }

        #[test]
        fn chunking_never_changes_a_count(
            chars in prop::collection::vec(tricky_char(), 0..60),
            chunk in 1usize..9,
        ) {
            let text: String = chars.into_iter().collect();
            for enc in [Encoding::O200k, Encoding::Cl100k] {
                let c = BpeCounter::new(enc);
                prop_assert_eq!(c.count_chunked(&text, chunk), c.count_serial(&text));
            }
        }

        #[test]
        fn ascii_pieces_match_the_regex(text in "[ -~\t\n\r]{0,60}") {
            for enc in [Encoding::O200k, Encoding::Cl100k] {
                prop_assert_eq!(BpeCounter::new(enc).pieces(&text), regex_pieces(enc, &text));
            }
        }

        #[test]
        fn counts_match_tiktoken(chars in prop::collection::vec(tricky_char(), 0..40)) {
            let text: String = chars.into_iter().collect();
            let o = tiktoken_rs::o200k_base_singleton();
            let cl = tiktoken_rs::cl100k_base_singleton();
            prop_assert_eq!(BpeCounter::o200k().count(&text), o.encode_ordinary(&text).len() as u64);
            prop_assert_eq!(BpeCounter::cl100k().count(&text), cl.encode_ordinary(&text).len() as u64);
        }

            #[test]
            fn unicode_pretokenizer_alone_matches_the_regex(
                chars in prop::collection::vec(prop_oneof![tricky_char(), any::<char>()], 0..40),
            ) {
                let text: String = chars.into_iter().collect();
                for enc in [Encoding::O200k, Encoding::Cl100k] {
                    prop_assert_eq!(unicode_pieces(enc, &text), regex_pieces(enc, &text));
                }
            }

            #[test]
            fn counts_match_tiktoken_on_any_unicode(
                chars in prop::collection::vec(prop_oneof![tricky_char(), any::<char>()], 0..40),
            ) {
                let text: String = chars.into_iter().collect();
                let o = tiktoken_rs::o200k_base_singleton();
                let cl = tiktoken_rs::cl100k_base_singleton();
                prop_assert_eq!(BpeCounter::o200k().count(&text), o.encode_ordinary(&text).len() as u64);
                prop_assert_eq!(BpeCounter::cl100k().count(&text), cl.encode_ordinary(&text).len() as u64);
            }
    }
}

/// Pieces found by the Unicode pre-tokenizer alone (no ASCII fast path).
fn unicode_pieces(enc: Encoding, text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let end = unicode::next_piece(enc, b, i);
        assert!(end > i && text.is_char_boundary(end), "{text:?} at {i}");
        out.push(&text[i..end]);
        i = end;
    }
    out
}

#[test]
fn unicode_pretokenizer_alone_matches_the_regex_on_edge_cases() {
    for enc in [Encoding::O200k, Encoding::Cl100k] {
        for &text in EDGE {
            for t in [
                text.to_string(),
                format!("a{text}b"),
                format!(" {text} "),
                format!("{text}{text}"),
                format!("\n{text}\n"),
                format!("\u{301}{text}'S\u{4f60}"),
            ] {
                assert_eq!(
                    unicode_pieces(enc, &t),
                    regex_pieces(enc, &t),
                    "{enc:?} {t:?}"
                );
            }
        }
    }
}

#[test]
fn class_table_equals_the_regex_categories_on_every_code_point() {
    use super::unicode::{category_ranges, table, L, LOW, N, NL, S, UP};
    let cats: Vec<(Vec<(u32, u32)>, u8)> = [
        (r"\p{Lu}", L | UP),
        (r"\p{Lt}", L | UP),
        (r"\p{Ll}", L | LOW),
        (r"\p{Lm}", L | UP | LOW),
        (r"\p{Lo}", L | UP | LOW),
        (r"\p{M}", UP | LOW),
        (r"\p{N}", N),
        (r"\s", S),
    ]
    .into_iter()
    .map(|(p, f)| (category_ranges(p), f))
    .collect();
    let t = table();
    for cp in (0..0x11_0000u32).filter(|cp| char::from_u32(*cp).is_some()) {
        let mut want = 0u8;
        let mut hits = 0;
        for (ranges, f) in &cats {
            let i = ranges.partition_point(|r| r.1 < cp);
            if ranges.get(i).is_some_and(|r| r.0 <= cp) {
                want |= f;
                hits += 1;
            }
        }
        assert!(hits <= 1, "U+{cp:04X} is in {hits} categories");
        if cp == 0x0D || cp == 0x0A {
            want |= NL;
        }
        assert_eq!(t.flags(cp), want, "U+{cp:04X}");
    }
}

#[test]
fn contraction_folding_equals_the_regex_case_insensitive_classes() {
    use super::unicode::{category_ranges, fold};
    for letter in "strevmld".chars() {
        let ranges = category_ranges(&format!("(?i:{letter})"));
        for cp in 0..0x11_0000u32 {
            let in_class = ranges.iter().any(|r| r.0 <= cp && cp <= r.1);
            assert_eq!(
                fold(cp) == Some(letter as u8),
                in_class,
                "U+{cp:04X} vs {letter}"
            );
        }
    }
}
