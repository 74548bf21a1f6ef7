//! Which samples a report shows in full (timeline, summaries, evidence) — and therefore which
//! units keep their offload store after a run: one rule, used by the HTML report and by the
//! runner's store pruning, so a sample shown in full can always be inspected on disk.
//!
//! The rule: every sample that needs attention (a failed unit, or one whose eval verdict is
//! `passed = false`), plus the first [`FULL_SAMPLES_PER_VARIANT`] samples of each variant in
//! report order (trace, eval, sample key, repeat, unit id — not the order units finished in,
//! so the choice is the same on every run and after `--resume`).

use crate::record::Sample;
use std::collections::{BTreeMap, BTreeSet};

/// Samples of each variant shown in full besides the ones that need attention.
pub const FULL_SAMPLES_PER_VARIANT: usize = 3;

/// A failed unit, or a flagged one (its eval's verdict is `passed = false`).
pub fn needs_attention(s: &Sample) -> bool {
    s.error.is_some() || s.passed == Some(false)
}

/// Trace, eval, sample key, repeat, unit id: the report order of samples within a variant.
type OrderKey<'a> = (&'a str, &'a str, &'a str, u32, &'a str);

fn order_key(s: &Sample) -> OrderKey<'_> {
    (&s.trace_id, &s.eval, &s.sample, s.repeat, &s.unit_id)
}

/// Unit ids of the samples shown in full (see the module docs). Memory is bounded by the
/// samples that need attention plus `FULL_SAMPLES_PER_VARIANT` per variant.
pub fn shown_in_full<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> BTreeSet<String> {
    let mut keep = BTreeSet::new();
    // Per variant, the smallest keys seen so far (at most K of them).
    let mut first: BTreeMap<&str, BTreeSet<OrderKey>> = BTreeMap::new();
    for s in samples {
        if needs_attention(s) {
            keep.insert(s.unit_id.clone());
        }
        let set = first.entry(&s.variant).or_default();
        set.insert(order_key(s));
        if set.len() > FULL_SAMPLES_PER_VARIANT {
            set.pop_last();
        }
    }
    for set in first.values() {
        keep.extend(set.iter().map(|k| k.4.to_string()));
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::UnitError;

    fn sample(id: &str, variant: &str, trace: &str) -> Sample {
        Sample::builder()
            .unit_id(id)
            .variant(variant)
            .trace(trace)
            .build()
    }

    #[test]
    fn failed_and_flagged_samples_plus_the_first_per_variant_in_report_order() {
        let mut samples = Vec::new();
        for v in ["a", "b"] {
            // Finished in reverse order: the choice must not depend on it.
            for t in (0..6).rev() {
                samples.push(sample(&format!("{v}{t}"), v, &format!("t{t}")));
            }
        }
        samples[1].passed = Some(false); // a4
        samples[2].error = Some(UnitError {
            kind: "eval".into(),
            message: "x".into(),
        }); // a3
        samples[7].passed = Some(true); // b4: passing is not flagged
        let kept = shown_in_full(&samples);
        let want: BTreeSet<String> = ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2"]
            .map(String::from)
            .into();
        assert_eq!(kept, want);
        // The same set whatever the order the samples come in.
        samples.reverse();
        assert_eq!(shown_in_full(&samples), want);
    }
}
