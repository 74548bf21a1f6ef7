//! The leaf of configuration handling, used by every module that reads configuration
//! (`config`, `engine`, `providers`): the [`ConfigError`] type (file, line, key, message),
//! "did you mean" suggestions, the one deep-merge rule ([`merge`]) and the constrained value
//! types (`newtypes`). It depends on nothing else in the crate, so `config` (which loads a
//! suite into the engine's and providers' typed configurations) can depend on `engine` and
//! `providers` without a cycle.

pub mod merge;
pub(crate) mod newtypes;

use std::fmt;

/// A configuration file that cannot be used; names the file, line and key.
///
/// `line` is 1-based; 0 means the problem concerns the file as a whole (missing, unreadable).
/// When several problems are found at once (e.g. three misspelled keys), the first is in
/// `line`/`message` and the others follow in `message`, one `file:line: message` per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub message: String,
    /// Key path the error is about, when known (e.g. `["summarize", "trigger", "fraction"]`),
    /// so a caller holding a source map can find its line. Not part of the display.
    pub key: Vec<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl ConfigError {
    pub fn new(file: impl Into<String>, line: usize, message: impl Into<String>) -> Self {
        ConfigError {
            file: file.into(),
            line,
            message: message.into(),
            key: Vec::new(),
        }
    }

    /// The same error, about `key`.
    pub fn with_key(mut self, key: Vec<String>) -> Self {
        self.key = key;
        self
    }

    /// The segments of a `serde_path_to_error` path (`a.b[2]` → `a`, `b`, `2`), with `prefix`.
    pub fn key_of(prefix: &[&str], path: &serde_path_to_error::Path) -> Vec<String> {
        use serde_path_to_error::Segment;
        let mut key: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        for seg in path.iter() {
            match seg {
                Segment::Seq { index } => key.push(index.to_string()),
                Segment::Map { key: k } | Segment::Enum { variant: k } => key.push(k.clone()),
                Segment::Unknown => {}
            }
        }
        key
    }

    /// Fold several errors into one: the first keeps its place, the rest are appended in full.
    /// Returns `None` for an empty list.
    pub fn combine(mut errors: Vec<ConfigError>) -> Option<ConfigError> {
        if errors.is_empty() {
            return None;
        }
        errors.sort_by_key(|e| e.line);
        let mut first = errors.remove(0);
        for e in errors {
            first.message.push('\n');
            first.message.push_str(&e.to_string());
        }
        Some(first)
    }
}

/// The candidate closest to `word` by edit distance, if close enough to be a plausible typo
/// (distance ≤ max(2, len/3), or a prefix of it); case and `_` vs `-` are ignored.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let w = norm(word);
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let nc = norm(c);
        let d = strsim::levenshtein(&w, &nc);
        // A truncated key (`max_cost` for `max_cost_usd`) is a typo too.
        let plausible = d <= (w.chars().count().max(nc.chars().count()) / 3).max(2)
            || (w.len() >= 3 && nc.starts_with(&w));
        if plausible && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `" (did you mean `x`?)"` or `""`.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match suggest(word, candidates) {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    }
}

/// What a serde "unknown variant" message is about: serde's word for an enum choice, which
/// reads like an engine variant in this tool's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The choice is a table's key (`trigger = { fractoin = 0.5 }`): "unknown field".
    Key,
    /// The choice is a string (`history = "nonee"`): "unknown value".
    Value,
}

/// A serde message in the words of a configuration file: a Rust type name at its end becomes
/// what the file holds ("expected u64" → "expected a non-negative integer"), and "unknown
/// variant" is said as `choice` has it.
pub fn plain_serde_message(message: &str, choice: Choice) -> String {
    let mut message = plain_type_names(message);
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let word = match choice {
            Choice::Key => "field",
            Choice::Value => "value",
        };
        message = format!("unknown {word} `{rest}");
    }
    message
}

/// `message` (trimmed) with a Rust type name at its end said as what a file holds.
pub fn plain_type_names(message: &str) -> String {
    let mut message = message.trim().to_string();
    if let Some(said) = out_of_range(&message) {
        return said;
    }
    for (rust, plain) in [
        ("expected u8", "expected a non-negative integer"),
        ("expected u16", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected usize", "expected a non-negative integer"),
        ("expected i32", "expected an integer"),
        ("expected i64", "expected an integer"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected a table"),
        ("expected string or map", "expected a string or a table"),
    ] {
        if let Some(stripped) = message.strip_suffix(rust) {
            message = format!("{stripped}{plain}");
        }
    }
    // serde names a struct by its Rust type (`expected struct SuiteSection`): to the file it is
    // a table.
    if let Some((head, name)) = message.rsplit_once("expected struct ") {
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            message = format!("{head}expected a table");
        }
    }
    message
}

/// serde's message of an integer its Rust type cannot hold (`invalid value: integer
/// `99999999999999`, expected u32`), said as the range the key takes: "too large (the largest
/// allowed is 4294967295)". `None` for any other message (a negative value for an unsigned key
/// stays "expected a non-negative integer").
fn out_of_range(message: &str) -> Option<String> {
    // After a key's name (`` `max_retries`: invalid value: … ``) too.
    let (head, rest) = message.rsplit_once("invalid value: integer `")?;
    let (number, ty) = rest.split_once("`, expected ")?;
    let value: i128 = number.parse().ok()?;
    let (min, max): (i128, i128) = match ty {
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" => (0, u64::MAX.into()),
        "usize" => (0, usize::MAX as i128),
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        "i64" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    };
    if value > max {
        Some(format!(
            "{head}invalid value: integer `{number}` is too large (the largest allowed is {max})"
        ))
    } else if value < min && min < 0 {
        Some(format!(
            "{head}invalid value: integer `{number}` is too small (the smallest allowed is {min})"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_out_of_range_are_said_as_too_large_with_the_largest_allowed() {
        for (serde, plain) in [
            (
                "invalid value: integer `99999999999999`, expected u32",
                "invalid value: integer `99999999999999` is too large (the largest allowed is 4294967295)",
            ),
            (
                "invalid value: integer `70000`, expected u16",
                "invalid value: integer `70000` is too large (the largest allowed is 65535)",
            ),
            (
                "invalid value: integer `-3000000000`, expected i32",
                "invalid value: integer `-3000000000` is too small (the smallest allowed is -2147483648)",
            ),
            (
                "`max_retries`: invalid value: integer `99999999999999`, expected u32",
                "`max_retries`: invalid value: integer `99999999999999` is too large (the largest allowed is 4294967295)",
            ),
            // Negative for an unsigned key: no size, the kind of number.
            (
                "invalid value: integer `-5`, expected u32",
                "invalid value: integer `-5`, expected a non-negative integer",
            ),
        ] {
            assert_eq!(plain_type_names(serde), plain);
            assert_eq!(plain_serde_message(serde, Choice::Value), plain);
        }
    }

    #[test]
    fn serde_messages_say_what_the_file_holds() {
        for (serde, choice, plain) in [
            (
                "invalid value: integer `-5`, expected u64",
                Choice::Value,
                "invalid value: integer `-5`, expected a non-negative integer",
            ),
            (
                "invalid type: string \"x\", expected f64",
                Choice::Value,
                "invalid type: string \"x\", expected a number",
            ),
            (
                "unknown variant `fractoin`, expected `fraction` or `tokens`",
                Choice::Key,
                "unknown field `fractoin`, expected `fraction` or `tokens`",
            ),
            (
                "unknown variant `x`, expected `a` or `b`",
                Choice::Value,
                "unknown value `x`, expected `a` or `b`",
            ),
            ("missing field `x`", Choice::Key, "missing field `x`"),
            // A Rust type name is no word of the file (`suite = 3`, `[evals] needle = 3`).
            (
                "invalid type: integer `3`, expected struct SuiteSection",
                Choice::Value,
                "invalid type: integer `3`, expected a table",
            ),
            (
                "invalid type: integer `3`, expected a map",
                Choice::Value,
                "invalid type: integer `3`, expected a table",
            ),
            (
                "invalid type: integer `3`, expected string or map",
                Choice::Value,
                "invalid type: integer `3`, expected a string or a table",
            ),
        ] {
            assert_eq!(plain_serde_message(serde, choice), plain, "{serde}");
        }
    }

    #[test]
    fn suggests_close_keys_only() {
        let keys = ["max_cost_usd", "concurrency", "repeats", "seed"];
        assert_eq!(suggest("max_cost", keys), Some("max_cost_usd"));
        assert_eq!(suggest("concurency", keys), Some("concurrency"));
        assert_eq!(suggest("Repeats", keys), Some("repeats"));
        assert_eq!(suggest("max-cost-usd", keys), Some("max_cost_usd"));
        assert_eq!(suggest("output", keys), None);
        assert_eq!(suggest("x", Vec::<&str>::new()), None);
    }

    #[test]
    fn combine_orders_by_line_and_keeps_all() {
        let e = ConfigError::combine(vec![
            ConfigError::new("s.toml", 9, "b"),
            ConfigError::new("s.toml", 3, "a"),
        ])
        .unwrap();
        assert_eq!(e.to_string(), "s.toml:3: a\ns.toml:9: b");
        assert!(ConfigError::combine(vec![]).is_none());
        assert_eq!(ConfigError::new("f", 0, "gone").to_string(), "f: gone");
    }
}
