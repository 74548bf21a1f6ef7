//! [`Rows`]: the samples of a report as compact rows, so a report of a million samples fits in
//! bounded memory. Every short string (variant, trace, eval, sample key, parameter, score and
//! compaction names) is interned once; parameter values and the pricing part of the evidence
//! are stored once per distinct value; a row is a fixed-size record of ids, counts and spans
//! into shared vectors (about 200 bytes, plus its unit id, scores and parameters at 8 to 16
//! bytes each). Readers see each row as a
//! [`Row`], the same view a whole [`Sample`] gives.
//!
//! The heavy part of a sample (timeline, evidence, summaries) is kept only for the rows pushed
//! with it (`RowDetail::loaded`); the others carry where their line is in the journal.

use super::model::RowDetail;
use crate::record::{
    CostByRole, Entries, Interner, Row, Sample, SummaryRecord, TimelinePoint, TokenSplit,
    TokensByRole, UnitError,
};
use serde_json::Value;

const NONE: u32 = u32::MAX;

/// `start..start + len` of a shared vector.
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// One compact row.
#[derive(Clone, Debug)]
struct Rec {
    unit: u32,
    trace: u32,
    variant: u32,
    eval: u32,
    sample: u32,
    repeat: u32,
    params: Span,
    scores: Span,
    compactions: Span,
    passed: Option<bool>,
    error: u32,
    /// Value id of the pricing part of the evidence (`window`, `priced_as`).
    priced: u32,
    heavy: u32,
    timeline_points: u32,
    latency_ms: u64,
    offset: u64,
    tokens: Tokens,
    cost: [f64; 4],
}

/// Tokens of a row: 16 counts as `u32` (64 bytes instead of 128), or, when one does not fit,
/// an index into `Rows::big_tokens`.
#[derive(Clone, Debug)]
enum Tokens {
    Small([u32; 16]),
    Big(u32),
}

fn splits(t: &TokensByRole) -> [&TokenSplit; 4] {
    [&t.agent, &t.summarizer, &t.judge, &t.eval_agent]
}

fn small_tokens(t: &TokensByRole) -> Option<[u32; 16]> {
    let mut out = [0u32; 16];
    for (i, s) in splits(t).into_iter().enumerate() {
        for (j, n) in [s.input, s.cached, s.cache_write, s.output]
            .into_iter()
            .enumerate()
        {
            out[4 * i + j] = u32::try_from(n).ok()?;
        }
    }
    Some(out)
}

fn tokens_of(t: &[u32; 16]) -> TokensByRole {
    let split = |i: usize| TokenSplit {
        input: t[4 * i].into(),
        cached: t[4 * i + 1].into(),
        cache_write: t[4 * i + 2].into(),
        output: t[4 * i + 3].into(),
    };
    TokensByRole {
        agent: split(0),
        summarizer: split(1),
        judge: split(2),
        eval_agent: split(3),
    }
}

/// An unknown price (`None`) in a row's cost: a NaN no journal can hold (JSON has no NaN).
const NO_PRICE: f64 = f64::NAN;

fn cost_in(c: &CostByRole) -> [f64; 4] {
    [c.agent, c.summarizer, c.judge, c.eval_agent].map(|x| x.unwrap_or(NO_PRICE))
}

fn cost_of(c: &[f64; 4]) -> CostByRole {
    let known = |x: f64| (!x.is_nan()).then_some(x);
    CostByRole {
        agent: known(c[0]),
        summarizer: known(c[1]),
        judge: known(c[2]),
        eval_agent: known(c[3]),
    }
}

/// The heavy part of a loaded row.
#[derive(Clone, Debug)]
struct Heavy {
    evidence: Value,
    timeline: Vec<TimelinePoint>,
    summaries: Vec<SummaryRecord>,
}

/// Distinct JSON values, each stored once.
#[derive(Clone, Debug, Default)]
struct Values {
    ids: rustc_hash::FxHashMap<String, u32>,
    values: Vec<Value>,
}

/// Whether `a` and `b` serialize to the same JSON text (`Value`'s `==` would also equate
/// `0.0` and `-0.0`, and numbers of different kinds).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_u64(), y.as_u64(), x.as_i64(), y.as_i64()) {
                (Some(p), Some(q), _, _) => p == q,
                (None, None, Some(p), Some(q)) => p == q,
                (None, None, None, None) => {
                    x.is_f64()
                        && y.is_f64()
                        && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
                }
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, a), (kb, b))| ka == kb && same(a, b))
        }
        _ => false,
    }
}

impl Values {
    /// The id of `v`; `hint` is the id a value in the same place had last time (a big run
    /// repeats the same parameter values and pricing evidence row after row): when `v` is
    /// that value, its id comes without serializing `v`.
    fn intern_near(&mut self, hint: &mut u32, v: Value) -> u32 {
        if let Some(last) = self.values.get(*hint as usize) {
            if same(last, &v) {
                return *hint;
            }
        }
        *hint = self.intern(v);
        *hint
    }

    /// [`Values::intern_near`] of a borrowed value (cloned only when it is new).
    fn intern_near_ref(&mut self, hint: &mut u32, v: &Value) -> u32 {
        if let Some(last) = self.values.get(*hint as usize) {
            if same(last, v) {
                return *hint;
            }
        }
        let key = v.to_string();
        *hint = match self.ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values");
                self.values.push(v.clone());
                self.ids.insert(key, id);
                id
            }
        };
        *hint
    }

    /// The id of a borrowed value (cloned only when it is new).
    fn intern_ref(&mut self, v: &Value) -> u32 {
        let key = v.to_string();
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values");
        self.values.push(v.clone());
        self.ids.insert(key, id);
        id
    }

    fn intern(&mut self, v: Value) -> u32 {
        let key = v.to_string();
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values");
        self.values.push(v);
        self.ids.insert(key, id);
        id
    }
}

/// Unit ids (each distinct, so stored end to end rather than interned).
#[derive(Clone, Debug, Default)]
struct Texts {
    text: String,
    ends: Vec<usize>,
}

impl Texts {
    fn push(&mut self, s: &str) -> u32 {
        self.text.push_str(s);
        self.ends.push(self.text.len());
        u32::try_from(self.ends.len() - 1).expect("fewer than 2^32 rows")
    }
    fn get(&self, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }
}

/// The pricing part of a sample's evidence (what `pricing_notes` reads): its `window` and
/// `priced_as` keys, or null.
pub fn price_evidence(evidence: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for k in ["window", "priced_as"] {
        if let Some(v) = evidence.get(k) {
            out.insert(k.to_string(), v.clone());
        }
    }
    if out.is_empty() {
        Value::Null
    } else {
        Value::Object(out)
    }
}

/// The raw `window` and `priced_as` texts of a pricing evidence, and its value id.
type RawPriced = (Option<Vec<u8>>, Option<Vec<u8>>, u32);

/// The scalar and string fields of a row being pushed.
struct Head<'s> {
    unit_id: &'s str,
    trace_id: &'s str,
    variant: &'s str,
    eval: &'s str,
    sample: &'s str,
    repeat: u32,
    passed: Option<bool>,
    latency_ms: u64,
    tokens: &'s TokensByRole,
    cost_usd: &'s CostByRole,
}

/// The compact rows of a report (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Rows {
    names: Interner,
    units: Texts,
    values: Values,
    entries: Vec<(u32, u32)>,
    floats: Vec<f64>,
    counts: Vec<u64>,
    errors: Vec<UnitError>,
    heavy: Vec<Heavy>,
    big_tokens: Vec<TokensByRole>,
    recs: Vec<Rec>,
    /// Value id of the last row's pricing evidence (see `Values::intern_near`).
    last_priced: u32,
    /// Value id of each parameter (by name id) in the last row that had it.
    last_param: Vec<u32>,
    /// The raw `window` and `priced_as` texts [`Rows::priced_raw`] saw last, and their id.
    last_priced_raw: Option<RawPriced>,
}

fn u32_of(n: usize) -> u32 {
    u32::try_from(n).expect("fewer than 2^32 entries")
}

impl Rows {
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Add a sample; its heavy part is kept when `detail.loaded`. The pricing part of its
    /// evidence is always kept.
    pub fn push(&mut self, s: Sample, detail: RowDetail) {
        let priced = match price_evidence(&s.evidence) {
            Value::Null => NONE,
            v => self.values.intern_near(&mut self.last_priced, v),
        };
        let heavy = if detail.loaded {
            self.heavy.push(Heavy {
                evidence: s.evidence,
                timeline: s.timeline,
                summaries: s.summaries,
            });
            u32_of(self.heavy.len() - 1)
        } else {
            NONE
        };
        let head = Head {
            unit_id: &s.unit_id,
            trace_id: &s.trace_id,
            variant: &s.variant,
            eval: &s.eval,
            sample: &s.sample,
            repeat: s.repeat,
            passed: s.passed,
            latency_ms: s.latency_ms,
            tokens: &s.tokens,
            cost_usd: &s.cost_usd,
        };
        self.push_parts(
            head,
            s.params.iter().map(|(k, v)| (k.as_str(), v)),
            s.scores.iter().map(|(k, v)| (k.as_str(), *v)),
            s.compactions.iter().map(|(k, v)| (k.as_str(), *v)),
            s.error.clone(),
            priced,
            heavy,
            &detail,
        );
    }

    /// Add the compact part of a sample read by `scan::light`, its heavy part not kept;
    /// `priced` is the id [`Rows::priced_raw`] gave its pricing evidence.
    pub(super) fn push_light(&mut self, s: super::scan::Light<'_>, priced: u32, detail: RowDetail) {
        let head = Head {
            unit_id: &s.unit_id,
            trace_id: &s.trace_id,
            variant: &s.variant,
            eval: &s.eval,
            sample: &s.sample,
            repeat: s.repeat,
            passed: s.passed,
            latency_ms: s.latency_ms,
            tokens: &s.tokens,
            cost_usd: &s.cost_usd,
        };
        self.push_parts(
            head,
            s.params.iter().map(|(k, v)| (*k, v)),
            s.scores.iter().copied(),
            s.compactions.iter().copied(),
            s.error,
            priced,
            NONE,
            &detail,
        );
    }

    /// The value id of a pricing evidence given as the raw JSON of its `window` and
    /// `priced_as` values (`NONE` when both are absent), as [`price_evidence`] would build it;
    /// `None` when a text is not a value serde_json reads (nothing is stored then). A text
    /// equal to the previous one's gets the previous id without being parsed.
    pub(super) fn priced_raw(
        &mut self,
        window: Option<&[u8]>,
        priced_as: Option<&[u8]>,
    ) -> Option<u32> {
        if window.is_none() && priced_as.is_none() {
            return Some(NONE);
        }
        if let Some((w, p, id)) = &self.last_priced_raw {
            if w.as_deref() == window && p.as_deref() == priced_as {
                return Some(*id);
            }
        }
        let mut out = serde_json::Map::new();
        for (k, raw) in [("window", window), ("priced_as", priced_as)] {
            if let Some(raw) = raw {
                out.insert(k.to_string(), serde_json::from_slice(raw).ok()?);
            }
        }
        let id = self
            .values
            .intern_near(&mut self.last_priced, Value::Object(out));
        self.last_priced_raw = Some((
            window.map(<[u8]>::to_vec),
            priced_as.map(<[u8]>::to_vec),
            id,
        ));
        Some(id)
    }

    #[allow(clippy::too_many_arguments)]
    fn push_parts<'k>(
        &mut self,
        h: Head<'_>,
        params: impl Iterator<Item = (&'k str, &'k Value)>,
        scores: impl Iterator<Item = (&'k str, f64)>,
        compactions: impl Iterator<Item = (&'k str, u64)>,
        error: Option<UnitError>,
        priced: u32,
        heavy: u32,
        detail: &RowDetail,
    ) {
        let start = u32_of(self.entries.len());
        for (k, v) in params {
            let k = self.names.intern(k);
            // The id of this parameter's value in the previous row that had it.
            if self.last_param.len() <= k as usize {
                self.last_param.resize(k as usize + 1, NONE);
            }
            let v = self
                .values
                .intern_near_ref(&mut self.last_param[k as usize], v);
            self.entries.push((k, v));
        }
        let params = Span {
            start,
            len: u32_of(self.entries.len()) - start,
        };
        let start = u32_of(self.entries.len());
        for (k, v) in scores {
            let k = self.names.intern(k);
            self.entries.push((k, u32_of(self.floats.len())));
            self.floats.push(v);
        }
        let scores = Span {
            start,
            len: u32_of(self.entries.len()) - start,
        };
        let start = u32_of(self.entries.len());
        for (k, v) in compactions {
            let k = self.names.intern(k);
            self.entries.push((k, u32_of(self.counts.len())));
            self.counts.push(v);
        }
        let compactions = Span {
            start,
            len: u32_of(self.entries.len()) - start,
        };
        let error = match error {
            Some(e) => {
                self.errors.push(e);
                u32_of(self.errors.len() - 1)
            }
            None => NONE,
        };
        let tokens = match small_tokens(h.tokens) {
            Some(t) => Tokens::Small(t),
            None => {
                self.big_tokens.push(*h.tokens);
                Tokens::Big(u32_of(self.big_tokens.len() - 1))
            }
        };
        let rec = Rec {
            unit: self.units.push(h.unit_id),
            trace: self.names.intern(h.trace_id),
            variant: self.names.intern(h.variant),
            eval: self.names.intern(h.eval),
            sample: self.names.intern(h.sample),
            repeat: h.repeat,
            params,
            scores,
            compactions,
            passed: h.passed,
            error,
            priced,
            heavy,
            timeline_points: u32::try_from(detail.timeline_points).unwrap_or(u32::MAX),
            latency_ms: h.latency_ms,
            offset: detail.offset.unwrap_or(u64::MAX),
            tokens,
            cost: cost_in(h.cost_usd),
        };
        self.recs.push(rec);
    }

    /// Give back the spare capacity of the shared vectors (grown by doubling while a journal
    /// is streamed, they hold up to twice what they need): called once the last row is in,
    /// before the statistics allocate their own tables.
    pub fn shrink_to_fit(&mut self) {
        self.units.text.shrink_to_fit();
        self.units.ends.shrink_to_fit();
        self.entries.shrink_to_fit();
        self.floats.shrink_to_fit();
        self.counts.shrink_to_fit();
        self.errors.shrink_to_fit();
        self.recs.shrink_to_fit();
    }

    /// Append the rows of `other` (read from a later part of the same journal) after these,
    /// as if they had been pushed here: names and values are re-interned, every id and span
    /// moved. Rows whose heavy part `keep_heavy` refuses lose it (`forget_detail`).
    pub fn append(&mut self, other: Rows, mut keep_heavy: impl FnMut(Row<'_>) -> bool) {
        let names: Vec<u32> = (0..u32_of(other.names.len()))
            .map(|id| self.names.intern(other.names.name(id)))
            .collect();
        let values: Vec<u32> = other
            .values
            .values
            .iter()
            .map(|v| self.values.intern_ref(v))
            .collect();
        // Exact sizes: the two halves and the merged vectors are live together here, the
        // peak of a big report's load.
        self.units.text.reserve_exact(other.units.text.len());
        self.units.ends.reserve_exact(other.units.ends.len());
        self.entries.reserve_exact(other.entries.len());
        self.floats.reserve_exact(other.floats.len());
        self.counts.reserve_exact(other.counts.len());
        self.recs.reserve_exact(other.recs.len());
        let units = u32_of(self.units.ends.len());
        let text = self.units.text.len();
        self.units.text.push_str(&other.units.text);
        self.units
            .ends
            .extend(other.units.ends.iter().map(|e| e + text));
        let entries = u32_of(self.entries.len());
        let floats = u32_of(self.floats.len());
        let counts = u32_of(self.counts.len());
        let errors = u32_of(self.errors.len());
        let big = u32_of(self.big_tokens.len());
        let kept: Vec<bool> = other
            .recs
            .iter()
            .map(|r| r.heavy != NONE && keep_heavy(other.row_of(r)))
            .collect();
        let mut wanted = vec![false; other.heavy.len()];
        for (r, &keep) in other.recs.iter().zip(&kept) {
            if keep {
                wanted[r.heavy as usize] = true;
            }
        }
        let mut heavy_ids = vec![NONE; other.heavy.len()];
        for ((h, want), id) in other
            .heavy
            .into_iter()
            .zip(wanted)
            .zip(heavy_ids.iter_mut())
        {
            if want {
                self.heavy.push(h);
                *id = u32_of(self.heavy.len() - 1);
            }
        }
        let mut entry_kind = vec![0u8; other.entries.len()];
        for r in &other.recs {
            for (span, kind) in [(r.params, 0), (r.scores, 1), (r.compactions, 2)] {
                entry_kind[span.range()].fill(kind);
            }
        }
        self.entries.extend(
            other
                .entries
                .iter()
                .zip(&entry_kind)
                .map(|(&(k, v), kind)| {
                    let v = match kind {
                        0 => values[v as usize],
                        1 => v + floats,
                        _ => v + counts,
                    };
                    (names[k as usize], v)
                }),
        );
        self.floats.extend_from_slice(&other.floats);
        self.counts.extend_from_slice(&other.counts);
        self.errors.extend(other.errors);
        self.big_tokens.extend_from_slice(&other.big_tokens);
        let moved = |span: Span| Span {
            start: span.start + entries,
            len: span.len,
        };
        let some = |id: u32, f: &dyn Fn(u32) -> u32| if id == NONE { NONE } else { f(id) };
        for (r, keep) in other.recs.into_iter().zip(kept) {
            self.recs.push(Rec {
                unit: r.unit + units,
                trace: names[r.trace as usize],
                variant: names[r.variant as usize],
                eval: names[r.eval as usize],
                sample: names[r.sample as usize],
                params: moved(r.params),
                scores: moved(r.scores),
                compactions: moved(r.compactions),
                error: some(r.error, &|e| e + errors),
                priced: some(r.priced, &|p| values[p as usize]),
                heavy: if keep {
                    heavy_ids[r.heavy as usize]
                } else {
                    NONE
                },
                tokens: match r.tokens {
                    Tokens::Big(i) => Tokens::Big(i + big),
                    small => small,
                },
                ..r
            });
        }
    }

    fn entries<'a, V>(&'a self, span: Span, values: &'a [V]) -> Entries<'a, V> {
        Entries::Ids {
            ids: &self.entries[span.range()],
            names: &self.names,
            values,
        }
    }

    fn row_of<'a>(&'a self, r: &'a Rec) -> Row<'a> {
        let heavy = (r.heavy != NONE).then(|| &self.heavy[r.heavy as usize]);
        let evidence = match (heavy, r.priced) {
            (Some(h), _) => &h.evidence,
            (None, NONE) => &crate::record::row::NO_EVIDENCE,
            (None, id) => &self.values.values[id as usize],
        };
        Row {
            unit_id: self.units.get(r.unit),
            trace_id: self.names.name(r.trace),
            variant: self.names.name(r.variant),
            eval: self.names.name(r.eval),
            sample: self.names.name(r.sample),
            params: self.entries(r.params, &self.values.values),
            repeat: r.repeat,
            scores: self.entries(r.scores, &self.floats),
            passed: r.passed,
            tokens: match &r.tokens {
                Tokens::Small(t) => tokens_of(t),
                Tokens::Big(i) => self.big_tokens[*i as usize],
            },
            cost_usd: cost_of(&r.cost),
            compactions: self.entries(r.compactions, &self.counts),
            latency_ms: r.latency_ms,
            error: (r.error != NONE).then(|| &self.errors[r.error as usize]),
            evidence,
            timeline: heavy.map_or(&[], |h| &h.timeline),
            summaries: heavy.map_or(&[], |h| &h.summaries),
        }
    }

    /// Row `i` (panics past the end, like indexing).
    pub fn get(&self, i: usize) -> Row<'_> {
        self.row_of(&self.recs[i])
    }

    pub fn iter(&self) -> RowsIter<'_> {
        RowsIter {
            rows: self,
            recs: self.recs.iter(),
        }
    }

    /// The rows of one variant.
    pub fn of_variant<'a>(&'a self, variant: &str) -> impl Iterator<Item = Row<'a>> + Clone {
        let id = self.names.get(variant).unwrap_or(NONE);
        self.recs
            .iter()
            .filter(move |r| r.variant == id)
            .map(|r| self.row_of(r))
    }

    /// Whether row `i` carries its timeline, evidence and summaries.
    pub fn has_detail(&self, i: usize) -> bool {
        self.recs.get(i).is_some_and(|r| r.heavy != NONE)
    }

    /// Where row `i`'s heavy part is.
    pub fn detail(&self, i: usize) -> RowDetail {
        let r = &self.recs[i];
        RowDetail {
            offset: (r.offset != u64::MAX).then_some(r.offset),
            timeline_points: r.timeline_points as usize,
            loaded: r.heavy != NONE,
        }
    }

    /// Give row `i` the heavy part of `full` (the same sample read in full).
    pub fn set_detail(&mut self, i: usize, full: Sample) {
        let h = Heavy {
            evidence: full.evidence,
            timeline: full.timeline,
            summaries: full.summaries,
        };
        match self.recs[i].heavy {
            NONE => {
                self.heavy.push(h);
                self.recs[i].heavy = u32_of(self.heavy.len() - 1);
            }
            at => self.heavy[at as usize] = h,
        }
    }

    /// Drop row `i`'s heavy part (kept in the store, no longer shown).
    pub fn forget_detail(&mut self, i: usize) {
        self.recs[i].heavy = NONE;
    }

    /// Sort the rows by (variant rank, trace, eval, sample, repeat), stably (rows with equal
    /// keys keep their order). `rank` gives a variant's rank; strings compare as strings.
    pub fn sort(&mut self, rank: impl Fn(&str) -> usize) {
        // Order of every name id, so the sort compares integers.
        let mut ids: Vec<u32> = (0..u32_of(self.names.len())).collect();
        ids.sort_unstable_by(|a, b| self.names.name(*a).cmp(self.names.name(*b)));
        let mut order = vec![0u32; ids.len()];
        for (pos, id) in ids.into_iter().enumerate() {
            order[id as usize] = u32_of(pos);
        }
        let ranks: Vec<usize> = (0..u32_of(self.names.len()))
            .map(|id| rank(self.names.name(id)))
            .collect();
        // In place (no copy of the rows); equal keys keep push order through `unit`, which
        // numbers the rows in the order they were pushed.
        self.recs.sort_unstable_by_key(|r| {
            (
                ranks[r.variant as usize],
                order[r.trace as usize],
                order[r.eval as usize],
                order[r.sample as usize],
                r.repeat,
                r.unit,
            )
        });
    }

    /// After [`Rows::sort`]: drop every row whose unit (variant, trace, eval, sample, repeat)
    /// is that of the row before it, so a unit journaled more than once keeps its first line
    /// only (the sort keeps push order among equal keys). Returns how many rows were dropped.
    /// The stores keep the dropped rows' data (unreferenced) until the rows are dropped.
    pub fn dedup_sorted(&mut self) -> usize {
        let before = self.recs.len();
        self.recs.dedup_by(|later, first| {
            (
                later.variant,
                later.trace,
                later.eval,
                later.sample,
                later.repeat,
            ) == (
                first.variant,
                first.trace,
                first.eval,
                first.sample,
                first.repeat,
            )
        });
        before - self.recs.len()
    }
}

/// How ids of one [`Rows`] map to another's (see [`Rows::absorb_names`]).
#[derive(Clone, Debug, Default)]
pub(super) struct IdMap {
    names: Vec<u32>,
    values: Vec<u32>,
}

impl IdMap {
    /// The id of name `id` of the other store.
    pub(super) fn name(&self, id: u32) -> u32 {
        self.names[id as usize]
    }
}

/// Reads the spill encoding of [`Rows::encode`].
struct Reader<'b> {
    bytes: &'b [u8],
}

impl<'b> Reader<'b> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.bytes.split_at(N);
        self.bytes = rest;
        head.try_into().expect("N bytes")
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_bits(self.u64())
    }
    fn str(&mut self) -> &'b str {
        let n = self.u32() as usize;
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        // Written from a `&str` by `Rows::encode`.
        std::str::from_utf8(head).unwrap_or_default()
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&u32_of(s.len()).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The sort key at the start of an encoded row: ([variant, trace, eval, sample] ids, repeat,
/// offset).
pub(super) fn encoded_key(bytes: &[u8]) -> ([u32; 4], u32, u64) {
    let mut r = Reader { bytes };
    let ids = [r.u32(), r.u32(), r.u32(), r.u32()];
    (ids, r.u32(), r.u64())
}

/// The spill encoding of rows (`report::spill`): rows leave memory as bytes in sorted runs and
/// come back one at a time, with the names and values they refer to kept here (bounded by the
/// run's distinct names and values, not its rows).
impl Rows {
    /// Take every row out (names, values and the hints of the next push stay).
    pub(super) fn clear_rows(&mut self) {
        self.units.text.clear();
        self.units.ends.clear();
        self.entries.clear();
        self.floats.clear();
        self.counts.clear();
        self.errors.clear();
        self.heavy.clear();
        self.big_tokens.clear();
        self.recs.clear();
    }

    /// Append row `i` to `out` in the spill encoding: its sort key (name ids, repeat, the
    /// line's offset), then the rest of its compact part and `plotted` (its heavy part is not
    /// written: it is loaded again by offset).
    pub(super) fn encode(&self, i: usize, plotted: bool, out: &mut Vec<u8>) {
        let r = &self.recs[i];
        for id in [r.variant, r.trace, r.eval, r.sample, r.repeat] {
            out.extend_from_slice(&id.to_le_bytes());
        }
        out.extend_from_slice(&r.offset.to_le_bytes());
        put_str(out, self.units.get(r.unit));
        for (span, kind) in [(r.params, 0), (r.scores, 1), (r.compactions, 2)] {
            out.extend_from_slice(&span.len.to_le_bytes());
            for &(k, v) in &self.entries[span.range()] {
                out.extend_from_slice(&k.to_le_bytes());
                match kind {
                    0 => out.extend_from_slice(&v.to_le_bytes()),
                    1 => out.extend_from_slice(&self.floats[v as usize].to_bits().to_le_bytes()),
                    _ => out.extend_from_slice(&self.counts[v as usize].to_le_bytes()),
                }
            }
        }
        out.push(match r.passed {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        });
        match r.error {
            NONE => out.push(0),
            e => {
                out.push(1);
                let e = &self.errors[e as usize];
                put_str(out, &e.kind);
                put_str(out, &e.message);
            }
        }
        for x in [r.priced, r.timeline_points] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out.push(u8::from(plotted));
        out.extend_from_slice(&r.latency_ms.to_le_bytes());
        let tokens = match &r.tokens {
            Tokens::Small(t) => tokens_of(t),
            Tokens::Big(b) => self.big_tokens[*b as usize],
        };
        for s in splits(&tokens) {
            for n in [s.input, s.cached, s.cache_write, s.output] {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        for c in r.cost {
            out.extend_from_slice(&c.to_bits().to_le_bytes());
        }
    }

    /// Push a row [`Rows::encode`] wrote (its name and value ids mapped by `map`, or this
    /// store's own); returns whether its heavy part had been kept.
    pub(super) fn push_encoded(&mut self, bytes: &[u8], map: Option<&IdMap>) -> bool {
        let name = |id: u32| map.map_or(id, |m| m.names[id as usize]);
        let value = |id: u32| match (map, id) {
            (_, NONE) => NONE,
            (None, id) => id,
            (Some(m), id) => m.values[id as usize],
        };
        let mut r = Reader { bytes };
        let [variant, trace, eval, sample] = [r.u32(), r.u32(), r.u32(), r.u32()].map(name);
        let repeat = r.u32();
        let offset = r.u64();
        let unit = self.units.push(r.str());
        let start = u32_of(self.entries.len());
        for _ in 0..r.u32() {
            let k = name(r.u32());
            let v = value(r.u32());
            self.entries.push((k, v));
        }
        let params = Span {
            start,
            len: u32_of(self.entries.len()) - start,
        };
        let start = u32_of(self.entries.len());
        for _ in 0..r.u32() {
            let k = name(r.u32());
            self.entries.push((k, u32_of(self.floats.len())));
            self.floats.push(r.f64());
        }
        let scores = Span {
            start,
            len: u32_of(self.entries.len()) - start,
        };
        let start = u32_of(self.entries.len());
        for _ in 0..r.u32() {
            let k = name(r.u32());
            self.entries.push((k, u32_of(self.counts.len())));
            self.counts.push(r.u64());
        }
        let compactions = Span {
            start,
            len: u32_of(self.entries.len()) - start,
        };
        let passed = match r.u8() {
            0 => None,
            1 => Some(false),
            _ => Some(true),
        };
        let error = match r.u8() {
            0 => NONE,
            _ => {
                let kind = r.str().to_string();
                let message = r.str().to_string();
                self.errors.push(UnitError { kind, message });
                u32_of(self.errors.len() - 1)
            }
        };
        let priced = value(r.u32());
        let timeline_points = r.u32();
        let plotted = r.u8() == 1;
        let latency_ms = r.u64();
        let mut t = [0u64; 16];
        for n in &mut t {
            *n = r.u64();
        }
        let split = |i: usize| TokenSplit {
            input: t[4 * i],
            cached: t[4 * i + 1],
            cache_write: t[4 * i + 2],
            output: t[4 * i + 3],
        };
        let tokens = TokensByRole {
            agent: split(0),
            summarizer: split(1),
            judge: split(2),
            eval_agent: split(3),
        };
        let tokens = match small_tokens(&tokens) {
            Some(t) => Tokens::Small(t),
            None => {
                self.big_tokens.push(tokens);
                Tokens::Big(u32_of(self.big_tokens.len() - 1))
            }
        };
        let cost = [r.f64(), r.f64(), r.f64(), r.f64()];
        self.recs.push(Rec {
            unit,
            trace,
            variant,
            eval,
            sample,
            repeat,
            params,
            scores,
            compactions,
            passed,
            error,
            priced,
            heavy: NONE,
            timeline_points,
            latency_ms,
            offset,
            tokens,
            cost,
        });
        plotted
    }

    /// Intern the names and values of `other` here: the map from its ids to these.
    pub(super) fn absorb_names(&mut self, other: &Rows) -> IdMap {
        IdMap {
            names: (0..u32_of(other.names.len()))
                .map(|id| self.names.intern(other.names.name(id)))
                .collect(),
            values: other
                .values
                .values
                .iter()
                .map(|v| self.values.intern_ref(v))
                .collect(),
        }
    }

    /// Sort key of every name id as the rows sort (see [`Rows::sort`]): its variant rank (by
    /// `rank`), then its place among the names by string order.
    pub(super) fn name_ranks(&self, rank: impl Fn(&str) -> usize) -> Vec<(usize, u32)> {
        let mut ids: Vec<u32> = (0..u32_of(self.names.len())).collect();
        ids.sort_unstable_by(|a, b| self.names.name(*a).cmp(self.names.name(*b)));
        let mut out = vec![(0, 0); ids.len()];
        for (pos, id) in ids.into_iter().enumerate() {
            out[id as usize] = (rank(self.names.name(id)), u32_of(pos));
        }
        out
    }

    /// The id of an interned name.
    pub(super) fn name_id(&self, name: &str) -> Option<u32> {
        self.names.get(name)
    }

    /// The variant name id of row `i`.
    pub(super) fn variant_id(&self, i: usize) -> u32 {
        self.recs[i].variant
    }

    /// The trace name id of row `i`.
    pub(super) fn trace_id(&self, i: usize) -> u32 {
        self.recs[i].trace
    }
}

/// Iterator of [`Rows::iter`].
#[derive(Clone)]
pub struct RowsIter<'a> {
    rows: &'a Rows,
    recs: std::slice::Iter<'a, Rec>,
}

impl<'a> Iterator for RowsIter<'a> {
    type Item = Row<'a>;
    fn next(&mut self) -> Option<Row<'a>> {
        self.recs.next().map(|r| self.rows.row_of(r))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.recs.size_hint()
    }
}

impl ExactSizeIterator for RowsIter<'_> {}

impl<'a> DoubleEndedIterator for RowsIter<'a> {
    fn next_back(&mut self) -> Option<Row<'a>> {
        self.recs.next_back().map(|r| self.rows.row_of(r))
    }
}

impl<'a> IntoIterator for &'a Rows {
    type Item = Row<'a>;
    type IntoIter = RowsIter<'a>;
    fn into_iter(self) -> RowsIter<'a> {
        self.iter()
    }
}

impl FromIterator<Sample> for Rows {
    /// Rows of whole samples, every heavy part kept.
    fn from_iter<I: IntoIterator<Item = Sample>>(samples: I) -> Rows {
        let mut rows = Rows::default();
        for s in samples {
            let d = RowDetail {
                offset: None,
                timeline_points: s.timeline.len(),
                loaded: true,
            };
            rows.push(s, d);
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u32) -> Sample {
        let mut s = Sample::builder()
            .unit_id(format!("u{i}"))
            .variant(if i.is_multiple_of(2) { "b" } else { "a" })
            .trace(format!("t{}", i % 3))
            .eval(if i.is_multiple_of(4) {
                "drift"
            } else {
                "needle"
            })
            .sample(format!("depth={}", i % 2))
            .param("depth", f64::from(i % 2))
            .param("pos", "tool")
            .score("recall", f64::from(i % 2))
            .score("steps", f64::from(i))
            .passed(i % 2 == 1)
            .evidence(serde_json::json!({
                "answer": "long text",
                "window": {"tokens": 20000, "source": {"from": "config"}},
            }))
            .build();
        s.tokens.agent.input = 100 + u64::from(i);
        s.cost_usd.agent = Some(0.001 * f64::from(i));
        s.compactions.insert("evicted".into(), u64::from(i));
        if i == 5 {
            s.error = Some(UnitError {
                kind: "timeout".into(),
                message: "slow".into(),
            });
        }
        s
    }

    #[test]
    fn compact_rows_read_back_as_the_samples_they_were_built_from() {
        let samples: Vec<Sample> = (0..10).map(sample).collect();
        let rows: Rows = samples.iter().cloned().collect();
        assert_eq!(rows.len(), 10);
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(rows.get(i).to_sample(), *s, "row {i}");
            assert!(rows.has_detail(i));
        }
        // Names are stored once: 2 variants, 3 traces, 2 evals, 2 sample keys, 2 params, 2
        // scores, 1 compaction key.
        assert_eq!(rows.names.len(), 14);
        assert_eq!(
            rows.values.values.len(),
            4,
            "depth 0, depth 1, tool, one window"
        );
        let b: Vec<&str> = rows.of_variant("b").map(|r| r.unit_id).collect();
        assert_eq!(b, ["u0", "u2", "u4", "u6", "u8"]);
        assert_eq!(rows.of_variant("nope").count(), 0);
    }

    #[test]
    fn values_reused_by_hint_are_those_with_the_same_json_text() {
        use serde_json::json;
        let mut v = Values::default();
        let mut hint = 0;
        let a = v.intern_near(&mut hint, json!(0.0));
        // Equal as `Value`s, different texts: never merged.
        let b = v.intern_near(&mut hint, json!(-0.0));
        let c = v.intern_near(&mut hint, json!(0));
        assert_eq!(v.values.len(), 3, "{a} {b} {c}");
        assert_eq!(v.intern_near(&mut hint, json!(0)), c);
        assert_eq!(v.intern_near(&mut hint, json!(0.0)), a, "found by text");
        let o = json!({"window": {"tokens": 20000}, "priced_as": {"agent": "m"}});
        let id = v.intern_near(&mut hint, o.clone());
        assert_eq!(v.intern_near(&mut hint, o), id);
        let reordered = json!({"priced_as": {"agent": "m"}, "window": {"tokens": 20000}});
        assert_ne!(
            v.intern_near(&mut hint, reordered),
            id,
            "key order is part of the text"
        );
        for (x, y) in [
            (json!(1), json!(-1)),
            (json!(1), json!(1.0)),
            (json!([1]), json!([1, 2])),
        ] {
            assert!(!same(&x, &y) && same(&x, &x.clone()), "{x} {y}");
        }
    }

    #[test]
    fn token_counts_past_u32_and_unknown_prices_survive_the_compact_form() {
        let mut s = sample(2);
        s.tokens.summarizer.cached = u64::from(u32::MAX) + 1;
        s.cost_usd = CostByRole {
            agent: Some(0.0),
            summarizer: None,
            judge: Some(1.5),
            eval_agent: None,
        };
        let rows: Rows = [sample(1), s.clone()].into_iter().collect();
        assert_eq!(rows.big_tokens.len(), 1, "only the row that needs it");
        assert_eq!(rows.get(1).to_sample(), s);
        assert_eq!(rows.get(0).to_sample(), sample(1));
    }

    #[test]
    fn rows_without_their_heavy_part_keep_the_pricing_evidence() {
        let mut rows = Rows::default();
        let s = sample(1);
        let d = RowDetail {
            offset: Some(42),
            timeline_points: 7,
            loaded: false,
        };
        rows.push(s.clone(), d.clone());
        assert_eq!(rows.detail(0), d);
        let r = rows.get(0);
        assert_eq!(r.evidence["window"]["tokens"], 20000);
        assert!(r.evidence.get("answer").is_none());
        assert_eq!(r.scores.get("steps"), Some(&1.0));
        rows.set_detail(0, s.clone());
        assert_eq!(rows.get(0).to_sample(), s);
        rows.forget_detail(0);
        assert!(!rows.has_detail(0));
    }

    #[test]
    fn sort_orders_by_variant_rank_then_keys_and_is_stable() {
        let mut samples: Vec<Sample> = (0..10).map(sample).collect();
        // A duplicate of u3 journaled later keeps its place after u3.
        let mut dup = sample(3);
        dup.unit_id = "u3-again".into();
        samples.push(dup);
        let mut rows: Rows = samples.iter().cloned().collect();
        rows.sort(|v| if v == "b" { 0 } else { 1 });
        let mut want = samples.clone();
        want.sort_by(|x, y| {
            (x.variant != "b", &x.trace_id, &x.eval, &x.sample, x.repeat).cmp(&(
                y.variant != "b",
                &y.trace_id,
                &y.eval,
                &y.sample,
                y.repeat,
            ))
        });
        let got: Vec<String> = rows.iter().map(|r| r.unit_id.to_string()).collect();
        let ids: Vec<String> = want.iter().map(|s| s.unit_id.clone()).collect();
        assert_eq!(got, ids);
        // Deduplicated, each unit keeps its first line only (the fixture's units share keys,
        // besides u3's copy).
        let mut unique = want.clone();
        unique.dedup_by(|later, first| {
            (
                &later.variant,
                &later.trace_id,
                &later.eval,
                &later.sample,
                later.repeat,
            ) == (
                &first.variant,
                &first.trace_id,
                &first.eval,
                &first.sample,
                first.repeat,
            )
        });
        assert!(!unique.iter().any(|s| s.unit_id == "u3-again"));
        assert_eq!(rows.dedup_sorted(), want.len() - unique.len());
        let got: Vec<String> = rows.iter().map(|r| r.unit_id.to_string()).collect();
        let ids: Vec<String> = unique.into_iter().map(|s| s.unit_id).collect();
        assert_eq!(got, ids);
        assert_eq!(rows.dedup_sorted(), 0);
    }
}
