//! Python's `repr()` of JSON-like values and Python's `json.dumps()` with default settings:
//! the exact strings LangChain's approximate counter measures (tool-call lists, tool schemas).

pub use super::printable::py_is_printable;
use serde_json::Value;
use std::fmt::Write as _;

/// Python `repr(str)`: single quotes unless the text holds `'` and no `"`.
pub fn py_repr_str(s: &str, out: &mut String) {
    let quote = quote_for(s);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if py_is_printable(c) => out.push(c),
            c => {
                let cp = c as u32;
                if cp < 0x100 {
                    let _ = write!(out, "\\x{cp:02x}");
                } else if cp < 0x10000 {
                    let _ = write!(out, "\\u{cp:04x}");
                } else {
                    let _ = write!(out, "\\U{cp:08x}");
                }
            }
        }
    }
    out.push(quote);
}

/// Quote character Python's `repr(str)` uses.
fn quote_for(s: &str) -> char {
    if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    }
}

/// Length in code points of `repr(s)`, without building it.
pub fn py_repr_str_len(s: &str) -> usize {
    if s.is_ascii() {
        // One branch-free pass: escapes of `\\ \n \r \t` (+1), other control bytes (`\xhh`,
        // +3), and the quote counts that decide which quote repr uses. Byte-wide sums over
        // 64-byte blocks (at most 3 × 64 = 192 each) vectorize one byte per lane; sums as wide
        // as `usize` were six times slower.
        let (mut extra, mut singles, mut doubles) = (0usize, 0usize, 0usize);
        for chunk in s.as_bytes().chunks(64) {
            let (e, q1, q2) = chunk.iter().fold((0u8, 0u8, 0u8), |(e, q1, q2), &b| {
                let two = (b == b'\\') | (b == b'\n') | (b == b'\r') | (b == b'\t');
                let hex =
                    ((b < 0x20) & !((b == b'\n') | (b == b'\r') | (b == b'\t'))) | (b == 0x7f);
                (
                    e + two as u8 + 3 * hex as u8,
                    q1 + (b == b'\'') as u8,
                    q2 + (b == b'"') as u8,
                )
            });
            extra += e as usize;
            singles += q1 as usize;
            doubles += q2 as usize;
        }
        // Single quotes unless the text has `'` and no `"`; then every `'` is escaped.
        let single_quoted = !(singles > 0 && doubles == 0);
        return 2 + s.len() + extra + if single_quoted { singles } else { 0 };
    }
    let quote = quote_for(s);
    let mut n = 2;
    for c in s.chars() {
        n += match c {
            '\\' | '\n' | '\r' | '\t' => 2,
            c if c == quote => 2,
            c if py_is_printable(c) => 1,
            c if (c as u32) < 0x100 => 4,
            c if (c as u32) < 0x10000 => 6,
            _ => 10,
        };
    }
    n
}

/// Length in code points of `repr()` of a JSON value, without building it.
pub fn py_repr_value_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                decimal_len(i.unsigned_abs()) + (i < 0) as usize
            } else if let Some(u) = n.as_u64() {
                decimal_len(u)
            } else {
                let mut s = String::new();
                py_repr_float(n.as_f64().unwrap_or(f64::NAN), &mut s);
                s.len()
            }
        }
        Value::String(s) => py_repr_str_len(s),
        Value::Array(items) => {
            2 + items.iter().map(py_repr_value_len).sum::<usize>()
                + 2 * items.len().saturating_sub(1)
        }
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| py_repr_str_len(k) + 2 + py_repr_value_len(v))
                .sum::<usize>()
                + 2 * map.len().saturating_sub(1)
        }
    }
}

fn decimal_len(mut u: u64) -> usize {
    let mut n = 1;
    while u >= 10 {
        u /= 10;
        n += 1;
    }
    n
}

/// Python `repr(float)` (shortest round-trip digits; scientific outside `1e-4 <= |x| < 1e16`).
pub fn py_repr_float(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str("nan");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if f == 0.0 {
        out.push_str(if f.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde[-]x".
    let sci = format!("{:e}", f);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        if exp >= 0 {
            let int_len = exp + 1;
            if n <= int_len {
                out.push_str(&digits);
                for _ in 0..(int_len - n) {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len as usize]);
                out.push('.');
                out.push_str(&digits[int_len as usize..]);
            }
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.abs());
    }
}

/// Python `repr()` of the value `json.loads` would produce.
pub fn py_repr_value(v: &Value, out: &mut String) {
    write_value(v, Py::Repr, out);
}

/// Python `json.dumps(value)` with default settings: `", "` / `": "` separators, ASCII-escaped,
/// keys in insertion order.
pub fn py_json_dumps(v: &Value, out: &mut String) {
    write_value(v, Py::JsonDumps, out);
}

/// The two renderings of a JSON value: they differ in scalars and strings, and walk containers
/// alike (`", "` between items, `": "` after a key, keys in insertion order).
#[derive(Clone, Copy)]
enum Py {
    /// `repr()` of what `json.loads` gives.
    Repr,
    /// `json.dumps()` with default settings.
    JsonDumps,
}

impl Py {
    fn string(self, s: &str, out: &mut String) {
        match self {
            Py::Repr => py_repr_str(s, out),
            Py::JsonDumps => json_str(s, out),
        }
    }
}

fn write_value(v: &Value, py: Py, out: &mut String) {
    match (v, py) {
        (Value::Null, Py::Repr) => out.push_str("None"),
        (Value::Null, Py::JsonDumps) => out.push_str("null"),
        (Value::Bool(true), Py::Repr) => out.push_str("True"),
        (Value::Bool(false), Py::Repr) => out.push_str("False"),
        (Value::Bool(true), Py::JsonDumps) => out.push_str("true"),
        (Value::Bool(false), Py::JsonDumps) => out.push_str("false"),
        (Value::Number(n), Py::Repr) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                py_repr_float(n.as_f64().unwrap_or(f64::NAN), out);
            }
        }
        (Value::Number(n), Py::JsonDumps) => {
            if n.is_f64() {
                py_repr_float(n.as_f64().unwrap_or(f64::NAN), out);
                // json.dumps writes inf/nan as Infinity/NaN; JSON input never holds them.
            } else {
                let _ = write!(out, "{n}");
            }
        }
        (Value::String(s), _) => py.string(s, out),
        (Value::Array(items), _) => {
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write_value(item, py, out);
            }
            out.push(']');
        }
        (Value::Object(map), _) => {
            out.push('{');
            for (k, (key, val)) in map.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                py.string(key, out);
                out.push_str(": ");
                write_value(val, py, out);
            }
            out.push('}');
        }
    }
}

fn json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{:04x}", unit);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repr(v: &Value) -> String {
        let mut s = String::new();
        py_repr_value(v, &mut s);
        s
    }

    #[test]
    fn strings_choose_quotes_and_escape_like_python() {
        assert_eq!(repr(&json!("it's")), "\"it's\"");
        assert_eq!(repr(&json!("say \"hi\" it's")), "'say \"hi\" it\\'s'");
        assert_eq!(repr(&json!("a\\b\n\t\r")), "'a\\\\b\\n\\t\\r'");
        assert_eq!(repr(&json!("\u{1}\u{7f}")), "'\\x01\\x7f'");
        assert_eq!(repr(&json!("é→ü")), "'é→ü'");
        assert_eq!(
            repr(&json!("\u{a0}\u{200b}\u{2028}")),
            "'\\xa0\\u200b\\u2028'"
        );
        assert_eq!(repr(&json!("\u{e0001}")), "'\\U000e0001'");
    }

    #[test]
    fn floats_match_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (123456789012345.6, "123456789012345.6"),
            (-2.5, "-2.5"),
            (1.5e300, "1.5e+300"),
            (100.0, "100.0"),
        ];
        for (f, want) in cases {
            let mut s = String::new();
            py_repr_float(f, &mut s);
            assert_eq!(s, want, "{f}");
        }
    }

    #[test]
    fn lengths_match_the_built_repr() {
        let values = [
            json!("plain ascii"),
            json!("it's \"both\" \\ \n\t\r \u{1}\u{7f}"),
            json!("only it's"),
            json!("é→ü \u{a0}\u{200b}\u{e0001} 😀"),
            json!({"k": [1, -22, 3.5, 1e-7, null, true, false, {"x": "y'"}], "": []}),
            json!(u64::MAX),
            json!(i64::MIN),
        ];
        for v in values {
            assert_eq!(py_repr_value_len(&v), repr(&v).chars().count(), "{v}");
        }
        // Long ASCII strings, sums per 64-byte block at their largest (every byte `\xhh`) and
        // blocks cut at every offset.
        for n in [63, 64, 65, 200, 1000] {
            for unit in ["\u{1}", "\\", "'", "'\"", "\n\u{7f}a", "x"] {
                let v = json!(unit.repeat(n));
                assert_eq!(
                    py_repr_value_len(&v),
                    repr(&v).chars().count(),
                    "{n} × {unit:?}"
                );
            }
        }
    }

    #[test]
    fn containers_and_scalars() {
        let v = json!({"b": [1, true, null, 2.0], "a": {"x": "y"}});
        assert_eq!(repr(&v), "{'b': [1, True, None, 2.0], 'a': {'x': 'y'}}");
        let mut s = String::new();
        py_json_dumps(&json!({"k": ["é", 1, "\u{1F600}"]}), &mut s);
        assert_eq!(s, "{\"k\": [\"\\u00e9\", 1, \"\\ud83d\\ude00\"]}");
        // The same value both ways: scalars and strings differ, the container walk does not.
        let v = json!({"b": [1, -2, true, false, null, 2.5, "it's"], "a": {}, "c": []});
        assert_eq!(
            repr(&v),
            "{'b': [1, -2, True, False, None, 2.5, \"it's\"], 'a': {}, 'c': []}"
        );
        let mut s = String::new();
        py_json_dumps(&v, &mut s);
        assert_eq!(
            s,
            "{\"b\": [1, -2, true, false, null, 2.5, \"it's\"], \"a\": {}, \"c\": []}"
        );
    }
}
