//! Generated non-ASCII (and non-prose) token-counting corpora: CJK prose, emoji-dense chat and
//! minified JavaScript. Deterministic (a fixed xorshift seed), so every run, bench and test sees
//! the same text; generated rather than copied so no licence question arises.
//!
//! Shared by `benches/tokens.rs` and `tests/it/token_corpora.rs` (included with `#[path]`).

/// Small deterministic PRNG (xorshift64*); no dependency, stable across crate versions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// The corpora by name: (`cjk-prose`, …), each about `bytes` long.
pub fn all(bytes: usize) -> Vec<(&'static str, String)> {
    vec![
        ("cjk-prose", cjk_prose(bytes)),
        ("emoji-chat", emoji_chat(bytes)),
        ("minified-js", minified_js(bytes)),
    ]
}

/// Chinese, Japanese and Korean paragraphs: CJK words with full-width punctuation, the odd
/// Latin word or number as real text has, paragraphs separated by blank lines.
pub fn cjk_prose(bytes: usize) -> String {
    const ZH: &[&str] = &[
        "我们",
        "今天",
        "模型",
        "上下文",
        "压缩",
        "工具",
        "调用",
        "结果",
        "用户",
        "问题",
        "数据",
        "系统",
        "测试",
        "文件",
        "代码",
        "分析",
        "重要",
        "因为",
        "所以",
        "但是",
        "已经",
        "可以",
        "需要",
        "没有",
        "时间",
        "方法",
        "内存",
        "缓存",
        "服务器",
        "请求",
        "错误",
        "日志",
        "配置",
        "历史",
        "摘要",
        "窗口",
        "令牌",
        "计算",
        "性能",
        "优化",
        "的",
        "了",
        "是",
        "在",
        "和",
        "也",
    ];
    const JA: &[&str] = &[
        "私たちは",
        "今日",
        "モデル",
        "コンテキスト",
        "圧縮",
        "ツール",
        "結果",
        "ユーザー",
        "問題",
        "データ",
        "システム",
        "テスト",
        "ファイル",
        "コード",
        "東京",
        "会議",
        "です",
        "ます",
        "した",
        "について",
        "から",
        "まで",
        "として",
        "の",
        "を",
        "に",
        "が",
        "は",
        "ありがとうございます",
        "確認",
        "お願いします",
        "要約",
        "履歴",
        "性能",
    ];
    const KO: &[&str] = &[
        "우리는",
        "오늘",
        "모델",
        "컨텍스트",
        "압축",
        "도구",
        "결과",
        "사용자",
        "문제",
        "데이터",
        "시스템",
        "테스트",
        "파일",
        "코드",
        "확인했습니다",
        "감사합니다",
        "요약",
    ];
    const LATIN: &[&str] = &["GPT-4o", "API", "JSON", "Rust", "v2.1", "OK", "CPU", "128k"];
    const END_CJK: &[&str] = &["。", "！", "？", "…", "。"];
    const MID_CJK: &[&str] = &["、", "，", "「", "」", "：", "（", "）", "・"];
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = String::with_capacity(bytes + 256);
    while out.len() < bytes {
        let lang = r.below(3);
        for _ in 0..2 + r.below(5) {
            for w in 0..4 + r.below(14) {
                let word = match lang {
                    0 => r.pick(ZH),
                    1 => r.pick(JA),
                    _ => r.pick(KO),
                };
                if lang == 2 && w > 0 {
                    out.push(' ');
                }
                out.push_str(word);
                match r.below(12) {
                    0 => out.push_str(r.pick(MID_CJK)),
                    1 => {
                        out.push_str(r.pick(LATIN));
                        if r.below(2) == 0 {
                            out.push(' ');
                        }
                    }
                    2 => out.push_str(&(r.below(20_000)).to_string()),
                    _ => {}
                }
            }
            out.push_str(if lang == 2 { ". " } else { r.pick(END_CJK) });
        }
        out.push_str("\n\n");
    }
    out
}

/// Chat lines dense with emoji: single code points, skin-tone modifiers, ZWJ sequences, flags,
/// variation selectors, repeated runs, with short English (and some accented) words.
pub fn emoji_chat(bytes: usize) -> String {
    const NAMES: &[&str] = &["alice", "bob", "chloé", "dmitri", "eun-ji", "farah", "gus"];
    const WORDS: &[&str] = &[
        "lol", "omg", "this", "is", "so", "good", "see", "you", "tmrw", "haha", "yes", "no",
        "wait", "what", "deploy", "failed", "again", "fixed", "it", "ship", "party", "café",
        "très", "bien", "ok", "thanks", "brb", "gg", "nice", "!!", "??", "...", "❤",
    ];
    const EMOJI: &[&str] = &[
        "😂",
        "🔥",
        "👍",
        "👍🏽",
        "👍🏿",
        "🎉",
        "😭",
        "🙏",
        "🙏🏻",
        "❤️",
        "💀",
        "✨",
        "🚀",
        "🤔",
        "😅",
        "👀",
        "💯",
        "🥲",
        "🫠",
        "👨‍👩‍👧‍👦",
        "🧑‍💻",
        "👩🏾‍🚀",
        "🏳️‍🌈",
        "🇯🇵",
        "🇫🇷",
        "🇧🇷",
        "☕",
        "✅",
        "❌",
        "⚠️",
        "🤷‍♀️",
        "🙌",
        "🍕",
        "🐛",
        "🎂",
        "😴",
        "🤯",
        "🫶🏼",
    ];
    let mut r = Rng(0xD1B5_4A32_D192_ED03);
    let mut out = String::with_capacity(bytes + 256);
    while out.len() < bytes {
        out.push_str(r.pick(NAMES));
        out.push_str(": ");
        for k in 0..1 + r.below(12) {
            if k > 0 && r.below(3) != 0 {
                out.push(' ');
            }
            if r.below(2) == 0 {
                let e = r.pick(EMOJI);
                for _ in 0..1 + r.below(4) * r.below(2) {
                    out.push_str(e);
                }
            } else {
                out.push_str(r.pick(WORDS));
            }
        }
        out.push('\n');
    }
    out
}

/// Minified JavaScript: long lines of short identifiers, operators, literals, regexes and
/// property chains, a newline only between "modules" (every few KiB).
pub fn minified_js(bytes: usize) -> String {
    const IDENT: &[&str] = &[
        "e",
        "t",
        "n",
        "r",
        "o",
        "i",
        "a",
        "s",
        "u",
        "c",
        "l",
        "f",
        "d",
        "p",
        "h",
        "_",
        "$",
        "Ee",
        "Nt",
        "xe",
        "jQuery",
        "window",
        "document",
        "this",
        "module",
        "exports",
        "__esModule",
    ];
    const PROP: &[&str] = &[
        "length",
        "prototype",
        "call",
        "apply",
        "push",
        "default",
        "createElement",
        "then",
        "map",
        "forEach",
        "indexOf",
        "toString",
        "hasOwnProperty",
        "defineProperty",
        "value",
    ];
    const OP: &[&str] = &[
        "+", "-", "*", "/", "===", "!==", "==", "&&", "||", "?", ":", "=", "+=", "<", ">=", "<<",
        ">>>", "&", "|", "^", "!", "%", "??", "?.",
    ];
    let mut r = Rng(0xA076_1D64_78BD_642F);
    let mut out = String::with_capacity(bytes + 256);
    let mut module_end = 0;
    while out.len() < bytes {
        if out.len() >= module_end {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str("!function(e,t){\"use strict\";");
            module_end = out.len() + 2048 + r.below(8192);
        }
        let expr = |r: &mut Rng, out: &mut String| match r.below(7) {
            0 => {
                out.push_str(r.pick(IDENT));
                out.push('.');
                out.push_str(r.pick(PROP));
            }
            1 => out.push_str(&r.below(100_000).to_string()),
            2 => {
                out.push('"');
                out.push_str(r.pick(PROP));
                out.push_str(r.pick(&["-", "_", " ", ":", "/"]));
                out.push_str(r.pick(IDENT));
                out.push('"');
            }
            3 => out.push_str(r.pick(&["!0", "!1", "void 0", "null", "[]", "{}", "0x1f"])),
            4 => out.push_str(r.pick(&["/^\\s+|\\s+$/g", "/[A-Z]/g", "/\\d{2,}/", "/\\\\/"])),
            _ => out.push_str(r.pick(IDENT)),
        };
        match r.below(6) {
            0 => {
                out.push_str("var ");
                out.push_str(r.pick(IDENT));
                out.push('=');
                expr(&mut r, &mut out);
                out.push(';');
            }
            1 => {
                out.push_str("function ");
                out.push_str(r.pick(IDENT));
                out.push('(');
                out.push_str(r.pick(&["e", "e,t", "e,t,n", ""]));
                out.push_str("){return ");
                expr(&mut r, &mut out);
                out.push_str(r.pick(OP));
                expr(&mut r, &mut out);
                out.push('}');
            }
            2 => {
                out.push_str("if(");
                expr(&mut r, &mut out);
                out.push_str(r.pick(OP));
                expr(&mut r, &mut out);
                out.push_str("){");
                out.push_str(r.pick(IDENT));
                out.push_str(r.pick(&["++", "--", "=0", "=[]"]));
                out.push_str("}else ");
            }
            3 => {
                out.push_str(r.pick(IDENT));
                out.push('[');
                expr(&mut r, &mut out);
                out.push_str("]=(");
                out.push_str(r.pick(&["e", "(e,t)", "()"]));
                out.push_str("=>");
                expr(&mut r, &mut out);
                out.push_str("),");
            }
            4 => {
                out.push_str(r.pick(IDENT));
                out.push('.');
                out.push_str(r.pick(PROP));
                out.push('(');
                expr(&mut r, &mut out);
                out.push(',');
                expr(&mut r, &mut out);
                out.push_str(");");
            }
            _ => {
                out.push_str("return{");
                out.push_str(r.pick(PROP));
                out.push(':');
                expr(&mut r, &mut out);
                out.push_str("};");
            }
        }
        if out.len() >= module_end {
            out.push_str("}(this,this.exports);");
        }
    }
    out
}
