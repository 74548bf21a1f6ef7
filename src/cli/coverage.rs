//! Units one run has and the other lacks, by pairing key (variant, trace, eval, sample, repeat)
//! in the variants both runs have: counted by one function, [`only_in`], for the notes of
//! `compare` (units not paired) and of `gate` (baseline units the candidate lacks, not gated),
//! which word them with [`OnlyIn::counted`] and [`OnlyIn::named`].

use super::UsageError;
use crate::metrics::aggregate;
use crate::record::{Interner, Row};
use crate::report::rows::Rows;
use crate::report::spill::SpilledRows;
use std::collections::BTreeSet;

/// A unit's pairing key: variant, trace, eval, sample, repeat.
type UnitKey<'a> = (&'a str, &'a str, &'a str, &'a str, u32);

fn key<'a>(s: &Row<'a>) -> UnitKey<'a> {
    (s.variant, s.trace_id, s.eval, s.sample, s.repeat)
}

/// The pairing keys of a run's units, kept when its rows are not (the gate drops a run's rows
/// once it has its observations): five numbers a unit, its names interned once.
#[derive(Debug, Default)]
pub struct UnitKeys {
    names: Interner,
    /// Variant, trace, eval and sample (name ids), and repeat; sorted, each unit once.
    keys: Vec<[u32; 5]>,
}

impl UnitKeys {
    pub fn of<'a>(rows: impl IntoIterator<Item = Row<'a>>) -> UnitKeys {
        let mut names = Interner::default();
        let mut keys: Vec<[u32; 5]> = rows
            .into_iter()
            .map(|s| {
                let (v, t, e, x, r) = key(&s);
                [
                    names.intern(v),
                    names.intern(t),
                    names.intern(e),
                    names.intern(x),
                    r,
                ]
            })
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.shrink_to_fit();
        UnitKeys { names, keys }
    }

    fn iter(&self) -> impl Iterator<Item = UnitKey<'_>> {
        self.keys.iter().map(|k| {
            let name = |i: u32| self.names.name(i);
            (name(k[0]), name(k[1]), name(k[2]), name(k[3]), k[4])
        })
    }
}

/// A run's units as [`only_in`] reads them.
#[derive(Clone, Copy)]
pub enum Units<'a> {
    /// Its rows in memory.
    Rows(&'a Rows),
    /// Its units' keys, its rows dropped.
    Keys(&'a UnitKeys),
    /// Its rows sorted on disk (a big run: `report::spill`).
    Spilled(&'a SpilledRows),
}

impl<'a> Units<'a> {
    /// The exact keys of the units in the variants `shared` names, for a run in memory (`None`
    /// for a spilled one).
    fn in_memory(self, shared: &[String]) -> Option<BTreeSet<UnitKey<'a>>> {
        let keep = |k: &UnitKey| shared.iter().any(|v| v == k.0);
        match self {
            Units::Rows(rows) => Some(rows.iter().map(|s| key(&s)).filter(keep).collect()),
            Units::Keys(keys) => Some(keys.iter().filter(keep).collect()),
            Units::Spilled(_) => None,
        }
    }

    /// Each unit's key once (a unit journaled more than once by its first line), in one pass.
    fn for_each(self, mut each: impl FnMut(UnitKey<'_>)) -> Result<(), UsageError> {
        match self {
            Units::Rows(rows) => {
                let mut first = aggregate::FirstLines::default();
                for s in rows.iter() {
                    if first.is_first(&s) {
                        each(key(&s));
                    }
                }
                Ok(())
            }
            Units::Keys(keys) => {
                keys.iter().for_each(each);
                Ok(())
            }
            Units::Spilled(rows) => rows
                .for_each_unique(|_, s, _, _| each(key(&s)))
                .map(|_| ())
                .map_err(|e| UsageError(format!("{}: {e}", rows.dir().path().display()))),
        }
    }
}

/// The units of one run (a side) that the other lacks, in the other's variants: how many, the
/// traces and evals they are of (sorted), those of them with no unit at all on the other side,
/// and what the side has in the other's variants (units, traces, evals), of which they are.
#[derive(Debug, Default, PartialEq)]
pub struct OnlyIn {
    pub units: usize,
    pub traces: Vec<String>,
    pub evals: Vec<String>,
    pub whole_traces: Vec<String>,
    pub whole_evals: Vec<String>,
    pub of_units: usize,
    pub of_traces: usize,
    pub of_evals: usize,
}

impl OnlyIn {
    /// `256 unit(s) of 7 trace(s) and 4 eval(s) only in the baseline run` (`side` names the
    /// run: `baseline`, `candidate`).
    pub fn counted(&self, side: &str) -> String {
        format!(
            "{} unit(s) of {} trace(s) and {} eval(s) only in the {side} run",
            self.units,
            self.traces.len(),
            self.evals.len()
        )
    }

    /// The traces, then the evals, with no unit at all on the other side, a few named (an id
    /// longer than 48 characters shortened around a `…`, never two alike):
    /// `; 6 trace(s) only in the baseline run: a, b, c, d, e, …; 3 eval(s) only in the
    /// baseline run: drift, invariants, probes` (empty when there is none).
    pub fn named(&self, side: &str) -> String {
        let mut out = String::new();
        for (what, names) in [("trace", &self.whole_traces), ("eval", &self.whole_evals)] {
            if names.is_empty() {
                continue;
            }
            let shown: Vec<&str> = names.iter().map(String::as_str).take(5).collect();
            // A long trace id shortened around a `…` as `traces stats` shows it, never two
            // alike: a note is prose, read in 100 columns (a 400-character id was printed
            // whole).
            let shown = crate::output::short_ids(&shown, NAMED_WIDTH);
            out.push_str(&format!(
                "; {} {what}(s) only in the {side} run: {}{}",
                names.len(),
                shown.join(", "),
                if names.len() > shown.len() {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        out
    }
}

/// Characters a trace or eval id takes at most in [`OnlyIn::named`] (`traces stats`' widest id
/// column).
const NAMED_WIDTH: usize = 48;

/// [`OnlyIn`] of `mine` against `theirs` (each in the other's variants).
fn only_of(mine: &BTreeSet<UnitKey>, theirs: &BTreeSet<UnitKey>) -> OnlyIn {
    let only: Vec<&UnitKey> = mine.iter().filter(|k| !theirs.contains(*k)).collect();
    let their_traces: BTreeSet<&str> = theirs.iter().map(|k| k.1).collect();
    let their_evals: BTreeSet<&str> = theirs.iter().map(|k| k.2).collect();
    let traces: BTreeSet<&str> = only.iter().map(|k| k.1).collect();
    let evals: BTreeSet<&str> = only.iter().map(|k| k.2).collect();
    let owned = |names: &BTreeSet<&str>, not_in: Option<&BTreeSet<&str>>| -> Vec<String> {
        names
            .iter()
            .filter(|n| not_in.is_none_or(|s| !s.contains(*n)))
            .map(|n| n.to_string())
            .collect()
    };
    OnlyIn {
        units: only.len(),
        traces: owned(&traces, None),
        evals: owned(&evals, None),
        whole_traces: owned(&traces, Some(&their_traces)),
        whole_evals: owned(&evals, Some(&their_evals)),
        of_units: mine.len(),
        of_traces: mine.iter().map(|k| k.1).collect::<BTreeSet<_>>().len(),
        of_evals: mine.iter().map(|k| k.2).collect::<BTreeSet<_>>().len(),
    }
}

/// Unit keys a sorted run of a spilled comparison holds.
const RUN_KEYS: usize = 1 << 16;

/// [`OnlyIn`] of each run (`a`, then `b`) against the other, its units in the other's variants
/// (`va`: `a`'s variants, `vb`: `b`'s): from the exact keys of two runs in memory, or, when a
/// run is spilled, from each unit's key digest ([`by_digest`]).
pub fn only_in(
    a: Units,
    b: Units,
    va: &[String],
    vb: &[String],
) -> Result<[OnlyIn; 2], UsageError> {
    if let (Some(ka), Some(kb)) = (a.in_memory(vb), b.in_memory(va)) {
        return Ok([only_of(&ka, &kb), only_of(&kb, &ka)]);
    }
    by_digest(a, b, va, vb)
}

/// [`only_in`] from each unit's key digest (variant and `pair_hash`), sorted on disk and merged
/// with the other run's: what is held in memory is per trace and eval, not per unit.
fn by_digest(a: Units, b: Units, va: &[String], vb: &[String]) -> Result<[OnlyIn; 2], UsageError> {
    use crate::report::spill::{ObsSpill, TempDir};
    let io = |e: std::io::Error| UsageError(format!("cannot write temporary files: {e}"));
    let mut keys = ObsSpill::new(
        std::sync::Arc::new(TempDir::new(None).map_err(io)?),
        RUN_KEYS,
    );
    // Trace and eval ids, shared by both sides; a key's `cluster` holds both (eval id above).
    let (mut traces, mut evals) = (Interner::default(), Interner::default());
    let mut present: [(BTreeSet<u32>, BTreeSet<u32>); 2] = Default::default();
    let mut of_units = [0; 2];
    let mut failed = None;
    for (side, run, shared) in [(0, a, vb), (1, b, va)] {
        run.for_each(|(variant, trace, eval, sample, repeat)| {
            if !shared.iter().any(|v| v == variant) {
                return;
            }
            let (t, e) = (traces.intern(trace), evals.intern(eval));
            present[side].0.insert(t);
            present[side].1.insert(e);
            let hash = crate::record::pair_hash(trace, eval, sample, repeat);
            let o = aggregate::Obs {
                key: crate::metrics::stats::sub_seed(hash, variant),
                cluster: u64::from(e) << 32 | u64::from(t),
                value: 0.0,
            };
            if failed.is_none() {
                failed = keys.push(["a", "b"][side], "", of_units[side], o).err();
            }
            of_units[side] += 1;
        })?;
    }
    if let Some(e) = failed {
        return Err(io(e));
    }
    let file = keys.finish().map_err(io)?;
    let range = |side: &str| {
        file.index
            .get(side)
            .and_then(|m| m.get(""))
            .copied()
            .unwrap_or((0, 0))
    };
    let (mut ka, mut kb) = (
        file.read(range("a")).peekable(),
        file.read(range("b")).peekable(),
    );
    let mut only: [(usize, BTreeSet<u32>, BTreeSet<u32>); 2] = Default::default();
    loop {
        let side = match (ka.peek(), kb.peek()) {
            (None, None) => break,
            (Some(x), Some(y)) if x.key == y.key => {
                ka.next();
                kb.next();
                continue;
            }
            (Some(x), Some(y)) => usize::from(x.key > y.key),
            (Some(_), None) => 0,
            (None, Some(_)) => 1,
        };
        let o = if side == 0 { ka.next() } else { kb.next() };
        if let Some(o) = o {
            only[side].0 += 1;
            only[side].1.insert(o.cluster as u32);
            only[side].2.insert((o.cluster >> 32) as u32);
        }
    }
    if let Some(e) = file.error() {
        return Err(io(e));
    }
    let out = |side: usize| {
        let (units, trace_ids, eval_ids) = &only[side];
        let names = |ids: &BTreeSet<u32>, of: &Interner, not_in: Option<&BTreeSet<u32>>| {
            ids.iter()
                .filter(|i| not_in.is_none_or(|s| !s.contains(*i)))
                .map(|&i| of.name(i))
                .collect::<BTreeSet<&str>>()
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<String>>()
        };
        let (their_traces, their_evals) = &present[1 - side];
        OnlyIn {
            units: *units,
            traces: names(trace_ids, &traces, None),
            evals: names(eval_ids, &evals, None),
            whole_traces: names(trace_ids, &traces, Some(their_traces)),
            whole_evals: names(eval_ids, &evals, Some(their_evals)),
            of_units: of_units[side],
            of_traces: present[side].0.len(),
            of_evals: present[side].1.len(),
        }
    };
    Ok([out(0), out(1)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Sample;

    fn sample(variant: &str, trace: &str, eval: &str, n: usize) -> Sample {
        Sample::builder()
            .eval(eval)
            .variant(variant)
            .trace(trace)
            .sample(format!("s{n}"))
            .score("recall", 1.0)
            .build()
    }

    /// The exact keys in memory and the digests of the spilled path count the same units,
    /// traces and evals; variants of one run only are left out of both sides.
    #[test]
    fn only_in_counts_units_traces_and_evals_of_the_shared_variants() {
        let mut full = Vec::new();
        for v in ["a", "b"] {
            for t in ["t1", "t2", "t3"] {
                for e in ["needle", "drift"] {
                    for n in 0..2 {
                        full.push(sample(v, t, e, n));
                    }
                }
            }
        }
        full.push(sample("only-base", "t9", "needle", 0));
        // The narrowed run: trace t1's needle units, and a unit the baseline lacks; one of its
        // units journaled twice.
        let mut narrow: Vec<Sample> = full
            .iter()
            .filter(|s| s.trace_id == "t1" && s.eval == "needle" && s.variant != "only-base")
            .cloned()
            .collect();
        narrow.push(narrow[0].clone());
        narrow.push(sample("a", "t1", "probes", 0));
        let (vb, vn) = (
            vec!["a".to_string(), "b".into(), "only-base".into()],
            vec!["a".to_string(), "b".into()],
        );
        let keys = |s: &[Sample]| UnitKeys::of(s.iter().map(Sample::row));
        let (kb, kn) = (keys(&full), keys(&narrow));
        let [base, cand] = only_in(Units::Keys(&kb), Units::Keys(&kn), &vb, &vn).unwrap();
        assert_eq!(
            (base.units, base.of_units, base.of_traces, base.of_evals),
            (20, 24, 3, 2)
        );
        assert_eq!(base.traces, ["t1", "t2", "t3"]);
        assert_eq!(base.evals, ["drift", "needle"]);
        assert_eq!(base.whole_traces, ["t2", "t3"]);
        assert_eq!(base.whole_evals, ["drift"]);
        assert_eq!(
            base.counted("baseline"),
            "20 unit(s) of 3 trace(s) and 2 eval(s) only in the baseline run"
        );
        assert_eq!(
            base.named("baseline"),
            "; 2 trace(s) only in the baseline run: t2, t3; 1 eval(s) only in the baseline run: \
             drift"
        );
        assert_eq!((cand.units, cand.of_units), (1, 5));
        assert!(cand.whole_traces.is_empty());
        assert_eq!(cand.whole_evals, ["probes"]);
        // The digest path (a spilled run's) says the same, a unit journaled twice once.
        let digests = by_digest(Units::Keys(&kb), Units::Keys(&kn), &vb, &vn).unwrap();
        assert_eq!(digests, [base, cand]);
    }
}
