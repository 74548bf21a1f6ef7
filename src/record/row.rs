//! [`Row`]: a borrowed view of one sample that statistics and writers read, whether the sample
//! is a whole [`Sample`] in memory ([`Sample::row`]) or a compact row of a big run whose strings
//! are interned once ([`Interner`], [`Entries::Ids`]; the store is `report::rows`). Code that
//! reads samples through `Row` works on both, so a report of a million samples never holds a
//! million maps of owned strings.

use super::{CostByRole, Sample, SummaryRecord, TimelinePoint, TokensByRole, UnitError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Strings stored once, each named by a dense `u32` id (variants, traces, evals, sample keys,
/// parameter, score and compaction names).
#[derive(Clone, Debug, Default)]
pub struct Interner {
    ids: rustc_hash::FxHashMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
}

impl Interner {
    /// The id of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names");
        let name: Arc<str> = Arc::from(s);
        self.names.push(name.clone());
        self.ids.insert(name, id);
        id
    }

    /// The id of `s` if it was interned.
    pub fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    /// The string of `id` (an id this interner gave).
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// A sample's map of name → value (params, scores or compactions), sorted by name like the
/// `BTreeMap` it was read from.
#[derive(Debug)]
pub enum Entries<'a, V> {
    /// The map of a whole sample.
    Map(&'a BTreeMap<String, V>),
    /// Compact: `(name id, value index)` pairs sorted by name, names in `names`, values in
    /// `values`.
    Ids {
        ids: &'a [(u32, u32)],
        names: &'a Interner,
        values: &'a [V],
    },
}

impl<V> Clone for Entries<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Entries<'_, V> {}

impl<'a, V> Entries<'a, V> {
    pub fn get(&self, key: &str) -> Option<&'a V> {
        match *self {
            Entries::Map(m) => m.get(key),
            Entries::Ids { ids, names, values } => {
                // One hash of `key` instead of a string comparison per entry.
                let id = names.get(key)?;
                ids.iter()
                    .find(|(n, _)| *n == id)
                    .map(|&(_, v)| &values[v as usize])
            }
        }
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn len(&self) -> usize {
        match self {
            Entries::Map(m) => m.len(),
            Entries::Ids { ids, .. } => ids.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (name, value) in name order.
    pub fn iter(&self) -> EntriesIter<'a, V> {
        match *self {
            Entries::Map(m) => EntriesIter::Map(m.iter()),
            Entries::Ids { ids, names, values } => EntriesIter::Ids {
                ids: ids.iter(),
                names,
                values,
            },
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = &'a str> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &'a V> {
        self.iter().map(|(_, v)| v)
    }

    /// An owned map (what a [`Sample`] holds).
    pub fn to_map(&self) -> BTreeMap<String, V>
    where
        V: Clone,
    {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }
}

impl<'a, V> IntoIterator for Entries<'a, V> {
    type Item = (&'a str, &'a V);
    type IntoIter = EntriesIter<'a, V>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, V> IntoIterator for &Entries<'a, V> {
    type Item = (&'a str, &'a V);
    type IntoIter = EntriesIter<'a, V>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator of [`Entries::iter`].
pub enum EntriesIter<'a, V> {
    Map(std::collections::btree_map::Iter<'a, String, V>),
    Ids {
        ids: std::slice::Iter<'a, (u32, u32)>,
        names: &'a Interner,
        values: &'a [V],
    },
}

impl<'a, V> Iterator for EntriesIter<'a, V> {
    type Item = (&'a str, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            EntriesIter::Map(it) => it.next().map(|(k, v)| (k.as_str(), v)),
            EntriesIter::Ids { ids, names, values } => ids
                .next()
                .map(|&(n, v)| (names.name(n), &values[v as usize])),
        }
    }
}

/// Null evidence of a row whose heavy part is not loaded.
pub static NO_EVIDENCE: Value = Value::Null;

/// A borrowed view of one sample: the fields of [`Sample`], strings and maps borrowed. The heavy
/// part (`evidence`, `timeline`, `summaries`) is empty when the row's store did not load it.
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    pub unit_id: &'a str,
    pub trace_id: &'a str,
    pub variant: &'a str,
    pub eval: &'a str,
    pub sample: &'a str,
    pub params: Entries<'a, Value>,
    pub repeat: u32,
    pub scores: Entries<'a, f64>,
    pub passed: Option<bool>,
    pub tokens: TokensByRole,
    pub cost_usd: CostByRole,
    pub compactions: Entries<'a, u64>,
    pub latency_ms: u64,
    pub error: Option<&'a UnitError>,
    pub evidence: &'a Value,
    pub timeline: &'a [TimelinePoint],
    pub summaries: &'a [SummaryRecord],
}

impl<'a> Row<'a> {
    /// See [`Sample::tokens_total`].
    pub fn tokens_total(&self) -> u64 {
        tokens_total(&self.tokens)
    }

    /// See [`Sample::cost_total`].
    pub fn cost_total(&self) -> Option<f64> {
        cost_total(&self.tokens, &self.cost_usd)
    }

    /// See [`Sample::pair_hash`].
    pub fn pair_hash(&self) -> u64 {
        pair_hash(self.trace_id, self.eval, self.sample, self.repeat)
    }

    /// The whole sample (owned copies of every field; the heavy part as far as loaded).
    pub fn to_sample(&self) -> Sample {
        Sample {
            schema_version: super::SCHEMA_VERSION,
            unit_id: self.unit_id.to_string(),
            trace_id: self.trace_id.to_string(),
            variant: self.variant.to_string(),
            eval: self.eval.to_string(),
            sample: self.sample.to_string(),
            params: self.params.to_map(),
            repeat: self.repeat,
            scores: self.scores.to_map(),
            passed: self.passed,
            tokens: self.tokens,
            cost_usd: self.cost_usd,
            compactions: self.compactions.to_map(),
            latency_ms: self.latency_ms,
            error: self.error.cloned(),
            evidence: self.evidence.clone(),
            timeline: self.timeline.to_vec(),
            summaries: self.summaries.to_vec(),
        }
    }
}

impl Sample {
    /// This sample as a [`Row`].
    pub fn row(&self) -> Row<'_> {
        Row {
            unit_id: &self.unit_id,
            trace_id: &self.trace_id,
            variant: &self.variant,
            eval: &self.eval,
            sample: &self.sample,
            params: Entries::Map(&self.params),
            repeat: self.repeat,
            scores: Entries::Map(&self.scores),
            passed: self.passed,
            tokens: self.tokens,
            cost_usd: self.cost_usd,
            compactions: Entries::Map(&self.compactions),
            latency_ms: self.latency_ms,
            error: self.error.as_ref(),
            evidence: &self.evidence,
            timeline: &self.timeline,
            summaries: &self.summaries,
        }
    }
}

/// Tokens of every role and kind summed (input + output; cached is part of input).
pub(super) fn tokens_total(t: &TokensByRole) -> u64 {
    t.total()
}

/// Total dollar cost, or `None` when a role that used tokens has an unknown price.
pub(super) fn cost_total(t: &TokensByRole, c: &CostByRole) -> Option<f64> {
    let roles = [
        (&t.agent, c.agent),
        (&t.summarizer, c.summarizer),
        (&t.judge, c.judge),
        (&t.eval_agent, c.eval_agent),
    ];
    let mut sum = 0.0;
    for (tokens, cost) in roles {
        match cost {
            Some(c) => sum += c,
            None if tokens.total() > 0 => return None,
            None => {}
        }
    }
    Some(sum)
}

/// FNV-1a over the pairing key's parts, then the SplitMix64 finalizer (see
/// [`Sample::pair_hash`]).
pub fn pair_hash(trace_id: &str, eval: &str, sample: &str, repeat: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // Separator, so ("ab", "c") and ("a", "bc") differ.
        h ^= 0x1f;
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    eat(trace_id.as_bytes());
    eat(eval.as_bytes());
    eat(sample.as_bytes());
    eat(&repeat.to_le_bytes());
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interner_gives_one_id_per_distinct_string() {
        let mut i = Interner::default();
        let a = i.intern("needle");
        let b = i.intern("drift");
        assert_eq!(i.intern("needle"), a);
        assert_ne!(a, b);
        assert_eq!((i.name(a), i.name(b)), ("needle", "drift"));
        assert_eq!(i.get("drift"), Some(b));
        assert_eq!(i.get("none"), None);
        assert_eq!(i.len(), 2);
    }

    #[test]
    fn compact_entries_read_like_the_map() {
        let map = BTreeMap::from([("recall".to_string(), 1.0), ("steps".to_string(), 3.0)]);
        let mut names = Interner::default();
        let ids: Vec<(u32, u32)> = map
            .keys()
            .enumerate()
            .map(|(k, name)| (names.intern(name), k as u32))
            .collect();
        let values: Vec<f64> = map.values().copied().collect();
        let compact = Entries::Ids {
            ids: &ids,
            names: &names,
            values: &values,
        };
        let whole = Entries::Map(&map);
        for e in [whole, compact] {
            assert_eq!(e.get("steps"), Some(&3.0));
            assert_eq!(e.get("nope"), None);
            assert_eq!(e.len(), 2);
            assert_eq!(e.keys().collect::<Vec<_>>(), ["recall", "steps"]);
            assert_eq!(e.to_map(), map);
        }
    }

    #[test]
    fn a_samples_row_is_the_sample() {
        let mut s = Sample::builder()
            .unit_id("u")
            .trace("t")
            .variant("v")
            .eval("needle")
            .sample("depth=0.5")
            .param("depth", 0.5)
            .score("recall", 1.0)
            .passed(true)
            .evidence(serde_json::json!({"answer": "a"}))
            .build();
        s.tokens.agent.input = 10;
        s.cost_usd.agent = Some(0.25);
        s.compactions.insert("evicted".into(), 2);
        let r = s.row();
        assert_eq!(r.to_sample(), s);
        assert_eq!(r.pair_hash(), s.pair_hash());
        assert_eq!(r.tokens_total(), 10);
        assert_eq!(r.cost_total(), Some(0.25));
    }
}
