//! A fast reader of the compact part of one samples.jsonl line, for the report's streaming pass
//! (`load::stream_samples`). Most of a line is its heavy part (summaries, timeline, evidence),
//! which the report skips: this reader walks the line's top-level object itself, skipping
//! values with a validating scanner that finds string ends with `memchr`, borrows the strings
//! it keeps, and hands only the small fields to `serde_json` (one slice each).
//!
//! It is an accelerator, never a second definition of the format: whenever it meets anything
//! it does not handle in the plain way (an escaped key, a duplicate field, a missing required
//! field, a value of an unexpected type, nesting deeper than serde_json's limit), [`light`]
//! returns `None` and the caller parses the line with the `serde_json` reader it had before,
//! which then gives the result or the error message. On the values it skips, it rejects what
//! `serde_json` rejects when ignoring a value (bad structure, literals, numbers, escapes,
//! control characters in strings) and, like it, does not check the UTF-8 of skipped strings.

use crate::record::{CostByRole, TokensByRole, UnitError};
use serde_json::Value;
use std::borrow::Cow;

/// The compact part of a sample line, strings borrowed from the line where they have no
/// escapes. Maps are `(key, value)` sorted by key (as the `BTreeMap`s of a `Sample`).
pub(super) struct Light<'a> {
    pub schema_version: u32,
    pub unit_id: Cow<'a, str>,
    pub trace_id: Cow<'a, str>,
    pub variant: Cow<'a, str>,
    pub eval: Cow<'a, str>,
    pub sample: Cow<'a, str>,
    pub params: Vec<(&'a str, Value)>,
    pub repeat: u32,
    pub scores: Vec<(&'a str, f64)>,
    pub passed: Option<bool>,
    pub tokens: TokensByRole,
    pub cost_usd: CostByRole,
    pub compactions: Vec<(&'a str, u64)>,
    pub latency_ms: u64,
    pub error: Option<UnitError>,
    /// Points of the timeline (the points themselves skipped).
    pub timeline: usize,
    /// The raw JSON of the evidence's `window` and `priced_as` values (the pricing part,
    /// `rows::price_evidence`), when present.
    pub window: Option<&'a [u8]>,
    pub priced_as: Option<&'a [u8]>,
}

/// serde_json's default recursion limit is 128; deeper values go to serde_json.
const MAX_DEPTH: u32 = 100;

/// The index of the first byte at or after `i` that a string cannot hold as it is: a quote,
/// a backslash or a control character (eight bytes at a time, as serde_json does).
fn special(b: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(chunk) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().ok()?);
        // Bytes equal to `"` or `\`, or below 0x20; the lowest flagged byte is exact.
        let m = zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH);
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|k| i + k)
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> P<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string at the cursor: its body between the quotes and whether it has escapes.
    fn string(&mut self) -> Option<(&'a [u8], bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            self.i = special(self.b, self.i)?;
            if self.b[self.i] < 0x20 {
                return None;
            }
            if self.b[self.i] == b'"' {
                let body = &self.b[start..self.i];
                self.i += 1;
                return Some((body, escaped));
            }
            escaped = true;
            match *self.b.get(self.i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                b'u' => {
                    let hex = self.b.get(self.i + 2..self.i + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i += 6;
                }
                _ => return None,
            }
        }
    }

    /// An object key without escapes (a key with escapes goes to serde_json).
    fn key(&mut self) -> Option<&'a str> {
        match self.string()? {
            (body, false) => std::str::from_utf8(body).ok(),
            (_, true) => None,
        }
    }

    fn digits(&mut self) -> Option<()> {
        let start = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        (self.i > start).then_some(())
    }

    /// A number, by JSON's grammar (as serde_json checks a number it ignores).
    fn number(&mut self) -> Option<()> {
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match *self.b.get(self.i)? {
            b'0' => {
                self.i += 1;
                if self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits()?,
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            self.digits()?;
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        (self.b.get(self.i..self.i + word.len())? == word).then(|| self.i += word.len())
    }

    /// Skip one value, checking it is well-formed JSON.
    fn skip(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.i += 1;
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.string()?;
                    self.eat(b':')?;
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => self.array(depth, |p| p.skip(depth + 1)).map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An array at the cursor, `each` called on every element; its length.
    fn array(
        &mut self,
        depth: u32,
        mut each: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<usize> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(0);
        }
        let mut n = 0;
        loop {
            each(self)?;
            n += 1;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(n);
                }
                _ => return None,
            }
        }
    }

    /// An object at the cursor, `each(key, parser)` called on every entry with the cursor on
    /// its value (which `each` must consume).
    fn object(&mut self, mut each: impl FnMut(&'a str, &mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let k = self.key()?;
            self.eat(b':')?;
            self.ws();
            each(k, self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The raw text of the value at the cursor (skipped and checked).
    fn raw(&mut self) -> Option<&'a [u8]> {
        self.ws();
        let start = self.i;
        self.skip(1)?;
        Some(&self.b[start..self.i])
    }

    /// The value at the cursor read by serde_json from its raw text.
    fn serde<T: serde::de::DeserializeOwned>(&mut self) -> Option<T> {
        serde_json::from_slice(self.raw()?).ok()
    }

    /// A string value: borrowed without escapes, unescaped by serde_json with them.
    fn text(&mut self) -> Option<Cow<'a, str>> {
        self.ws();
        let start = self.i;
        match self.string()? {
            (body, false) => std::str::from_utf8(body).ok().map(Cow::Borrowed),
            (_, true) => serde_json::from_slice(&self.b[start..self.i])
                .ok()
                .map(Cow::Owned),
        }
    }

    /// An object into `(key, value)` pairs sorted by key; a duplicate key goes to serde_json.
    fn map<V>(
        &mut self,
        mut value: impl FnMut(&mut Self) -> Option<V>,
    ) -> Option<Vec<(&'a str, V)>> {
        let mut out = Vec::new();
        self.object(|k, p| {
            out.push((k, value(p)?));
            Some(())
        })?;
        out.sort_by(|a, b| a.0.cmp(b.0));
        if out.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        Some(out)
    }
}

/// The compact part of one journal line, or `None` when the line is to be read by
/// serde_json (see the module doc).
pub(super) fn light(line: &[u8]) -> Option<Light<'_>> {
    let mut p = P { b: line, i: 0 };
    let mut seen = 0u32;
    let mut schema_version = None;
    let (mut unit_id, mut trace_id, mut variant, mut eval, mut sample) =
        (None, None, None, None, None);
    let mut repeat = None;
    let mut params = Vec::new();
    let mut scores = Vec::new();
    let mut passed = None;
    let mut tokens = TokensByRole::default();
    let mut cost_usd = CostByRole::default();
    let mut compactions = Vec::new();
    let mut latency_ms = 0;
    let mut error = None;
    let mut timeline = 0;
    let (mut window, mut priced_as) = (None, None);
    p.object(|key, p| {
        let bit = match key {
            "schema_version" => 0,
            "unit_id" => 1,
            "trace_id" => 2,
            "variant" => 3,
            "eval" => 4,
            "sample" => 5,
            "params" => 6,
            "repeat" => 7,
            "scores" => 8,
            "passed" => 9,
            "tokens" => 10,
            "cost_usd" => 11,
            "compactions" => 12,
            "latency_ms" => 13,
            "error" => 14,
            "timeline" => 15,
            "evidence" => 16,
            _ => return p.skip(1),
        };
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => schema_version = Some(p.serde()?),
            1 => unit_id = Some(p.text()?),
            2 => trace_id = Some(p.text()?),
            3 => variant = Some(p.text()?),
            4 => eval = Some(p.text()?),
            5 => sample = Some(p.text()?),
            6 => params = p.map(|p| p.serde())?,
            7 => repeat = Some(p.serde()?),
            8 => scores = p.map(|p| p.serde())?,
            9 => passed = p.serde()?,
            10 => tokens = p.serde()?,
            11 => cost_usd = p.serde()?,
            12 => compactions = p.map(|p| p.serde())?,
            13 => latency_ms = p.serde()?,
            14 => error = p.serde()?,
            15 => timeline = p.array(1, |p| p.skip(2))?,
            _ => {
                if p.peek()? != b'{' {
                    // Not an object: no pricing part (as `load::price_part`).
                    return p.skip(1);
                }
                p.object(|k, p| {
                    let slot = match k {
                        "window" => &mut window,
                        "priced_as" => &mut priced_as,
                        _ => return p.skip(2),
                    };
                    if slot.is_some() {
                        return None;
                    }
                    *slot = Some(p.raw()?);
                    Some(())
                })?;
            }
        }
        Some(())
    })?;
    p.ws();
    if p.i != line.len() {
        return None;
    }
    Some(Light {
        schema_version: schema_version?,
        unit_id: unit_id?,
        trace_id: trace_id?,
        variant: variant?,
        eval: eval?,
        sample: sample?,
        params,
        repeat: repeat?,
        scores,
        passed,
        tokens,
        cost_usd,
        compactions,
        latency_ms,
        error,
        timeline,
        window,
        priced_as,
    })
}

#[cfg(test)]
mod tests {
    use super::super::model::RowDetail;
    use super::super::rows::Rows;
    use super::*;
    use crate::record::{Sample, TimelinePoint};
    use serde_json::json;

    /// The row `line` gives through `light` and `Rows::push_light`, or `None` when `light`
    /// leaves it to serde_json.
    fn via_light(line: &[u8]) -> Option<(Sample, usize, u32)> {
        let l = light(line)?;
        let mut rows = Rows::default();
        let priced = rows.priced_raw(l.window, l.priced_as)?;
        let (points, version) = (l.timeline, l.schema_version);
        let d = RowDetail {
            offset: Some(0),
            timeline_points: points,
            loaded: false,
        };
        rows.push_light(l, priced, d);
        Some((rows.get(0).to_sample(), points, version))
    }

    /// The row serde_json's reader (`load::parse_light` and `Rows::push`) gives, or its error.
    fn via_serde(line: &[u8]) -> Result<(Sample, usize, u32), String> {
        #[derive(serde::Deserialize)]
        struct Points {
            #[serde(default)]
            timeline: Vec<serde::de::IgnoredAny>,
        }
        let (s, version) = super::super::load::parse_light(line)?;
        let points = serde_json::from_slice::<Points>(line)
            .map_err(|e| e.to_string())?
            .timeline
            .len();
        let mut rows = Rows::default();
        let d = RowDetail {
            offset: Some(0),
            timeline_points: points,
            loaded: false,
        };
        rows.push(s, d);
        Ok((rows.get(0).to_sample(), points, version))
    }

    fn samples() -> Vec<Sample> {
        let point = |i: usize| TimelinePoint {
            trace_index: i,
            tokens: 100 * i as u64,
            reference_tokens: Some(7),
            events: vec!["summarized".into()],
            details: vec!["a \"quoted\"\n detail \u{1f600}".into()],
        };
        let mut a = Sample::builder()
            .unit_id("u\"1\\é")
            .variant("aggr essive")
            .trace("t/1\n")
            .eval("needle")
            .sample("depth=0.5")
            .param("depth", 0.5)
            .param("pos", "to\"ol")
            .param("list", json!([1, {"x": null}, -0.0, 1e-7]))
            .score("recall", 1.0)
            .score("steps", 0.1 + 0.2)
            .score("big", 1.234_567_890_123_456_7e300)
            .passed(true)
            .compaction("evicted", 3)
            .compaction("summarized", 1)
            .evidence(json!({
                "answer": "x\ny \\ \u{7f} \u{2028}",
                "nested": {"a": [true, false, null, {"b": "c"}]},
                "priced_as": {"agent": "m", "agent_from": "trace"},
                "window": {"tokens": 20000, "source": {"from": "config"}},
            }))
            .timeline((0..4).map(point).collect())
            .build();
        a.tokens.agent.input = 5;
        a.tokens.judge.output = u64::from(u32::MAX) + 9;
        a.cost_usd.agent = Some(0.239_983_600_000_000_02);
        a.latency_ms = 16;
        a.repeat = 3;
        let mut b = Sample::builder()
            .unit_id("u2")
            .variant("base")
            .trace("t")
            .error("timeout", "slow \u{1}")
            .evidence(json!(["not", "an", "object"]))
            .build();
        b.schema_version = 1;
        let c = Sample::builder()
            .unit_id("u3")
            .variant("base")
            .trace("t")
            .evidence(json!({"window": null}))
            .build();
        vec![a, b, c]
    }

    fn lines() -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = samples()
            .iter()
            .map(|s| serde_json::to_vec(s).unwrap())
            .collect();
        // Pretty-printed (whitespace everywhere) and with an unknown field.
        out.push(serde_json::to_vec_pretty(&samples()[0]).unwrap());
        let mut v = serde_json::to_value(&samples()[0]).unwrap();
        v["future_field"] = json!({"deep": [[[]]], "s": "\\u00e9"});
        out.push(serde_json::to_vec(&v).unwrap());
        out
    }

    #[test]
    fn special_finds_the_first_quote_backslash_or_control_byte() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..40 {
            for _ in 0..200 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Mostly plain bytes, some specials, some high ones.
                        [
                            b'a', b'"', b'\\', 0x1f, 0x20, 0x7f, 0x80, 0xff, b'x', b'!', 0x21, 0x5b,
                        ][(x % 12) as usize]
                    })
                    .collect();
                for from in 0..=len {
                    let naive = bytes[from..]
                        .iter()
                        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                        .map(|k| from + k);
                    assert_eq!(special(&bytes, from), naive, "{bytes:?} from {from}");
                }
            }
        }
    }

    #[test]
    fn light_reads_what_serde_json_reads() {
        for line in lines() {
            let text = String::from_utf8_lossy(&line).into_owned();
            let l = via_light(&line).unwrap_or_else(|| panic!("left to serde_json: {text}"));
            assert_eq!(Ok(l), via_serde(&line), "{text}");
        }
    }

    #[test]
    fn lines_serde_json_rejects_are_never_read_by_light() {
        // Every prefix (a torn line) and every byte replaced by a character that breaks or
        // changes JSON: where serde_json fails, `light` must give up; where both read the
        // line, they agree.
        let bytes: &[u8] = b",:{}[]\"\\ 0-.eE\x01tx";
        let mut checked = 0;
        for line in lines().into_iter().take(3) {
            for end in 0..line.len() {
                let cut = &line[..end];
                if via_serde(cut).is_err() {
                    assert!(light(cut).is_none(), "{}", String::from_utf8_lossy(cut));
                }
            }
            for at in 0..line.len() {
                for &b in bytes {
                    let mut bad = line.clone();
                    bad[at] = b;
                    match (via_serde(&bad), via_light(&bad)) {
                        (Err(_), Some(_)) => {
                            panic!("light read a bad line: {}", String::from_utf8_lossy(&bad))
                        }
                        (Ok(s), Some(l)) => assert_eq!(s, l, "{}", String::from_utf8_lossy(&bad)),
                        _ => checked += 1,
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn duplicate_and_escaped_keys_and_missing_fields_go_to_serde_json() {
        let line = serde_json::to_string(&samples()[2]).unwrap();
        assert!(light(line.as_bytes()).is_some());
        for bad in [
            line.replacen("\"unit_id\"", "\"unit\\u005fid\"", 1),
            line.replacen("{", "{\"variant\":\"x\",", 1),
            line.replacen("\"unit_id\"", "\"unit_idx\"", 1),
            line.replacen("\"evidence\":{", "\"evidence\":{\"window\":1,", 1),
            line.replacen("\"scores\":{}", "\"scores\":{\"a\":1,\"a\":2}", 1),
            line.replacen("\"scores\":{}", "\"scores\":null", 1),
            line.replacen("\"scores\":{}", "\"scores\":{\"a\":1e400}", 1),
            format!("{line} x"),
        ] {
            assert!(light(bad.as_bytes()).is_none(), "{bad}");
        }
    }
}
