//! The plan: every unit of a suite (trace × variant × eval sample × repeat) with a stable id,
//! a stable order and a per-unit seed, plus the traces and variants the units refer to.
//!
//! A unit id is the first 16 hex digits of sha256 over the canonical JSON key
//! `[trace_id, variant, eval, sample, repeat]`; it does not depend on the order of the suite
//! file, the machine, or which other units exist, so journals, shards and merges can be joined on
//! it. (A changed suite is caught by the suite digest in `run.json`, not by the ids.)

use crate::config::suite::ProviderRole;
use crate::config::{LoadedSuite, Variant};
use crate::trace::Trace;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A trace the plan replays.
#[derive(Debug, Clone)]
pub struct TraceEntry {
    /// Stable trace id (from the importer).
    pub id: String,
    /// File it came from, relative to the suite file (`/`-separated).
    pub file: String,
    /// sha256 of that file.
    pub sha256: String,
    /// The imported trace, when the loader keeps it (executors replay it).
    pub trace: Option<Arc<Trace>>,
}

/// One eval sample before it is crossed with traces, variants and repeats (each eval's
/// section in `config::evals` expands into them).
pub use crate::config::evals::EvalSample;

/// One unit of work.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    pub id: String,
    /// Position in the full (unsharded) plan.
    pub index: usize,
    /// The names are shared by the units that have them (one allocation per trace, variant,
    /// eval and sample, not per unit).
    pub trace_id: Arc<str>,
    /// Index into [`Plan::traces`].
    pub trace: usize,
    pub variant: Arc<str>,
    /// Index into [`Plan::variants`].
    pub variant_index: usize,
    pub eval: Arc<str>,
    pub sample: Arc<str>,
    /// Shared by every unit of the same eval sample (one map per sample, not per unit).
    pub params: Arc<BTreeMap<String, Value>>,
    pub repeat: u32,
    /// Seed for anything random in this unit (derived from the suite seed and the unit id).
    pub seed: u64,
    /// Seed shared by the units that pair up across variants (same trace, eval, sample and
    /// repeat): what the needle eval plants, so every variant is asked the same questions.
    pub pair_seed: u64,
    pub providers: Vec<ProviderRole>,
}

#[cfg(test)]
impl Unit {
    /// A needle unit `id` of `variant` on trace `t`, sample `s`, repeat 0, seeds 0 (tests).
    pub(crate) fn for_test(id: &str, variant: &str) -> Unit {
        Unit {
            id: id.into(),
            index: 0,
            trace_id: "t".into(),
            trace: 0,
            variant: variant.into(),
            variant_index: 0,
            eval: "needle".into(),
            sample: "s".into(),
            params: Default::default(),
            repeat: 0,
            seed: 0,
            pair_seed: 0,
            providers: Vec::new(),
        }
    }
}

/// One eval sample of the grid, with its names shared by every unit that has it.
#[derive(Debug, Clone)]
pub struct GridSample {
    pub eval: Arc<str>,
    pub sample: Arc<str>,
    pub params: Arc<BTreeMap<String, Value>>,
    pub providers: Vec<ProviderRole>,
}

/// Everything a run executes: the grid (traces × variants × eval samples × repeats). Units are
/// not stored: [`Plan::unit`] builds the unit at a grid position on demand (its id and seeds
/// are pure functions of the position), so the plan's size does not grow with the units.
#[derive(Debug, Clone)]
pub struct Plan {
    pub traces: Vec<TraceEntry>,
    /// Baseline first, then the other variants in suite order.
    pub variants: Vec<Variant>,
    pub baseline: String,
    /// The eval samples, in [`eval_samples`] order.
    pub samples: Vec<GridSample>,
    pub repeats: u32,
    /// The suite seed the unit seeds derive from.
    pub seed: u64,
    trace_names: Vec<Arc<str>>,
    variant_names: Vec<Arc<str>>,
}

impl Plan {
    /// Units in the full (unsharded) plan.
    pub fn len(&self) -> usize {
        self.traces.len() * self.variants.len() * self.samples.len() * self.repeats as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (trace, variant, sample, repeat) of position `index`. Panics if `index >= len()`.
    fn position(&self, index: usize) -> (usize, usize, usize, u32) {
        assert!(index < self.len(), "unit {index} of {}", self.len());
        let r = self.repeats as usize;
        let rest = index / r;
        let si = rest % self.samples.len();
        let rest = rest / self.samples.len();
        let vi = rest % self.variants.len();
        let ti = rest / self.variants.len();
        (ti, vi, si, (index % r) as u32)
    }

    /// The id of the unit at position `index` (cheaper than building the unit).
    pub fn id(&self, index: usize) -> String {
        let (ti, vi, si, repeat) = self.position(index);
        let s = &self.samples[si];
        unit_id(
            &self.traces[ti].id,
            &self.variants[vi].name,
            &s.eval,
            &s.sample,
            repeat,
        )
    }

    /// The unit at position `index` (order: trace, variant, eval sample, repeat).
    /// Panics if `index >= len()`.
    pub fn unit(&self, index: usize) -> Unit {
        let (ti, vi, si, repeat) = self.position(index);
        let (t, v, s) = (&self.traces[ti], &self.variants[vi], &self.samples[si]);
        let id = unit_id(&t.id, &v.name, &s.eval, &s.sample, repeat);
        let pair = unit_id(&t.id, "", &s.eval, &s.sample, repeat);
        Unit {
            seed: unit_seed(self.seed, &id),
            pair_seed: unit_seed(self.seed, &pair),
            id,
            index,
            trace_id: self.trace_names[ti].clone(),
            trace: ti,
            variant: self.variant_names[vi].clone(),
            variant_index: vi,
            eval: s.eval.clone(),
            sample: s.sample.clone(),
            params: s.params.clone(),
            repeat,
            providers: s.providers.clone(),
        }
    }

    /// Positions of every unit in the report's order (variant in plan order, then trace,
    /// eval and sample by name, then repeat: how `report::ReportModel` sorts its samples),
    /// computed from the grid without storing a unit.
    pub fn report_order(&self) -> impl Iterator<Item = usize> + '_ {
        // Traces are sorted by id already (`build`); eval samples by (eval, sample), stably.
        let mut by_name: Vec<usize> = (0..self.samples.len()).collect();
        by_name.sort_by(|&a, &b| {
            let (a, b) = (&self.samples[a], &self.samples[b]);
            (&a.eval, &a.sample).cmp(&(&b.eval, &b.sample))
        });
        let (t, v, r) = (
            self.traces.len(),
            self.variants.len(),
            self.repeats as usize,
        );
        let s = self.samples.len();
        (0..v).flat_map(move |vi| {
            let by_name = by_name.clone();
            (0..t).flat_map(move |ti| {
                let by_name = by_name.clone();
                by_name
                    .into_iter()
                    .flat_map(move |si| (0..r).map(move |rep| ((ti * v + vi) * s + si) * r + rep))
            })
        })
    }

    /// Trace id, variant, eval, sample and repeat of the unit at position `index` (borrowed
    /// from the grid, no unit built).
    pub fn names(&self, index: usize) -> (&str, &str, &str, &str, u32) {
        let (ti, vi, si, repeat) = self.position(index);
        let s = &self.samples[si];
        (
            &self.traces[ti].id,
            &self.variants[vi].name,
            &s.eval,
            &s.sample,
            repeat,
        )
    }

    /// Every unit in plan order, built as it is pulled.
    pub fn units(&self) -> impl Iterator<Item = Unit> + '_ {
        (0..self.len()).map(|i| self.unit(i))
    }
}

/// sha256 hex-16 of the canonical key.
pub fn unit_id(trace_id: &str, variant: &str, eval: &str, sample: &str, repeat: u32) -> String {
    // The key's compact JSON (`["t","v","e","s",0]`, as a JSON array of these values prints)
    // written straight into the hasher: no value tree, no string.
    let mut h = Sha256::new();
    serde_json::to_writer(&mut h, &(trace_id, variant, eval, sample, repeat))
        .expect("hashing cannot fail");
    hex::encode(&h.finalize()[..8])
}

/// The seed of unit `id` under the suite seed `suite_seed` (what `ctxbench replay --seed`
/// takes to rebuild a unit's offload-store names exactly).
pub fn unit_seed(suite_seed: u64, id: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(suite_seed.to_le_bytes());
    h.update(id.as_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
}

/// The eval samples a suite asks for, in stable order: the evals in their registry order
/// (`config::evals`: replay, invariants, needle (trigger × fold × depth × position), drift,
/// probes (per kind), continuation (per fold), rules (per fold)), each in its own order.
pub fn eval_samples(suite: &LoadedSuite) -> Vec<EvalSample> {
    suite.suite.evals.samples()
}

/// A plan problem that is the input's fault (e.g. two files yield the same trace id).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// Build the full plan. `traces` may come in any order; they are sorted by id, duplicates are
/// an error, `--trace` globs filter them, and `traces.limit` keeps the first N.
pub fn build(suite: &LoadedSuite, mut traces: Vec<TraceEntry>) -> Result<Plan, PlanError> {
    traces.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.file.cmp(&b.file)));
    for w in traces.windows(2) {
        if w[0].id == w[1].id {
            return Err(PlanError(format!(
                "trace id `{}` comes from two inputs ({} and {}); each trace must have a unique id",
                w[0].id, w[0].file, w[1].file
            )));
        }
    }
    if let Some(filter) = &suite.trace_filter {
        let before = traces.len();
        traces.retain(|t| filter.is_match(&t.id));
        if traces.is_empty() {
            return Err(PlanError(format!(
                "--trace {}: matches none of the suite's {before} trace id(s) (`ctxbench traces stats` lists them)",
                suite.overrides.traces.join(" --trace ")
            )));
        }
    }
    if let Some(limit) = suite.suite.traces.limit {
        traces.truncate(limit);
    }
    let variants: Vec<Variant> = suite.ordered_variants().into_iter().cloned().collect();
    let samples = eval_samples(suite)
        .into_iter()
        .map(|s| GridSample {
            eval: Arc::from(s.eval.as_str()),
            sample: Arc::from(s.sample.as_str()),
            params: Arc::new(s.params),
            providers: s.providers,
        })
        .collect();
    Ok(Plan {
        trace_names: traces.iter().map(|t| Arc::from(t.id.as_str())).collect(),
        variant_names: variants
            .iter()
            .map(|v| Arc::from(v.name.as_str()))
            .collect(),
        traces,
        variants,
        baseline: suite.baseline.clone(),
        samples,
        repeats: suite.suite.suite.repeats,
        seed: suite.suite.suite.seed,
    })
}

#[cfg(test)]
mod tests_support {
    use super::*;
    use std::path::Path;

    pub(super) fn suite(extra: &str) -> LoadedSuite {
        LoadedSuite::from_str(
            &format!("[suite]\nname = \"t\"\nrepeats = 2\n[traces]\npaths = [\"x\"]\n{extra}"),
            Path::new("s.toml"),
        )
        .unwrap()
    }

    pub(super) fn trace(id: &str) -> TraceEntry {
        TraceEntry {
            id: id.into(),
            file: format!("{id}.jsonl"),
            sha256: String::new(),
            trace: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;
    use std::path::Path;

    #[test]
    fn unit_ids_are_stable_and_distinct() {
        // A fixed value: changing the id scheme invalidates every journal, so it must be
        // a deliberate change.
        // sha256('["t1","base","replay","replay",0]')[..8] in hex.
        assert_eq!(
            unit_id("t1", "base", "replay", "replay", 0),
            "ee23031a986be38b"
        );
        assert_ne!(
            unit_id("t1", "base", "replay", "replay", 0),
            unit_id("t1", "base", "replay", "replay", 1)
        );
        // No ambiguity from concatenation.
        assert_ne!(
            unit_id("a", "bc", "e", "s", 0),
            unit_id("ab", "c", "e", "s", 0)
        );
        // The key is hashed as a JSON array value prints, escapes included.
        for (t, v, e, s, r) in [
            ("t\"1\\", "b\u{1}\n", "needle", "depth=0.5/pos=tool", 3),
            ("é/\u{1f600}", "", "e", "s\t", u32::MAX),
        ] {
            let key = serde_json::json!([t, v, e, s, r]).to_string();
            assert_eq!(
                unit_id(t, v, e, s, r),
                hex::encode(&Sha256::digest(key.as_bytes())[..8])
            );
        }
    }

    #[test]
    fn plan_is_the_full_cross_product_in_stable_order() {
        let s = suite(
            "[engine]\nbaseline = \"z\"\n[engine.variants.a]\n[engine.variants.z]\n[evals.needle]\ndepths = [0.1, 0.9]\npositions = [\"user\", \"tool\"]\ntriggers = [0.15]\n[evals.drift]\n",
        );
        let p = build(&s, vec![trace("t2"), trace("t1")]).unwrap();
        let p_units: Vec<Unit> = p.units().collect();
        // 2 traces × 2 variants × (replay + 4 needle + 3 drift folds) × 2 repeats
        assert_eq!(p_units.len(), 2 * 2 * 8 * 2);
        assert_eq!(p.traces[0].id, "t1");
        assert_eq!(p.variants[0].name, "z", "baseline first");
        let u = &p_units[2];
        assert_eq!((&*u.trace_id, &*u.variant, &*u.eval), ("t1", "z", "needle"));
        assert_eq!(&*u.sample, "depth=0.1/pos=user/trigger=0.15");
        assert_eq!(u.params["trigger"], serde_json::json!(0.15));
        let ids: std::collections::HashSet<_> = p_units.iter().map(|u| &u.id).collect();
        assert_eq!(ids.len(), p_units.len());
        assert!(p_units
            .iter()
            .enumerate()
            .all(|(i, u)| u.index == i && p.id(i) == u.id));
        // Same input in another order → same plan.
        let q = build(&s, vec![trace("t1"), trace("t2")]).unwrap();
        assert_eq!(p_units, q.units().collect::<Vec<_>>());
    }

    #[test]
    fn needle_folds_make_one_sample_each_and_corrections_are_a_param() {
        let s = suite(
            "[engine]\nbaseline = \"z\"\n[engine.variants.z]\n[evals.replay]\nenabled = false\n[evals.needle]\ndepths = [0.2]\nfolds = [1, 3]\ncorrected = true\n",
        );
        let samples = eval_samples(&s);
        let keys: Vec<&str> = samples.iter().map(|e| e.sample.as_str()).collect();
        assert_eq!(
            keys,
            ["depth=0.2/pos=tool/fold=1", "depth=0.2/pos=tool/fold=3"]
        );
        assert_eq!(samples[1].params["fold"], serde_json::json!(3));
        assert!(samples
            .iter()
            .all(|e| e.params["corrected"] == serde_json::json!(true)));
        // Without folds or corrections the params are what they were.
        let plain = suite("[engine]\nbaseline = \"z\"\n[engine.variants.z]\n[evals.needle]\n");
        let needle = eval_samples(&plain)
            .into_iter()
            .find(|e| e.eval == "needle")
            .unwrap();
        assert!(!needle.params.contains_key("fold") && !needle.params.contains_key("corrected"));
    }

    #[test]
    fn duplicate_trace_ids_and_limit() {
        let s = suite("");
        let e = build(&s, vec![trace("a"), trace("a")]).unwrap_err();
        assert!(e.0.contains("`a`"));
        let s = suite("limit = 1\n");
        let p = build(&s, vec![trace("b"), trace("a")]).unwrap();
        assert_eq!(p.traces.len(), 1);
        assert_eq!(p.traces[0].id, "a");
    }

    #[test]
    fn seeds_differ_per_repeat_and_follow_the_suite_seed() {
        let s = suite("");
        let p = build(&s, vec![trace("a")]).unwrap();
        assert_ne!(p.unit(0).seed, p.unit(1).seed);
        let s2 = LoadedSuite::from_str(
            "[suite]\nname = \"t\"\nrepeats = 2\nseed = 7\n[traces]\npaths = [\"x\"]\n",
            Path::new("s.toml"),
        )
        .unwrap();
        let p2 = build(&s2, vec![trace("a")]).unwrap();
        assert_eq!(p.unit(0).id, p2.unit(0).id);
        assert_ne!(p.unit(0).seed, p2.unit(0).seed);
        // Units that pair across variants share a pair seed, and only those.
        let s3 = suite("[engine]\nbaseline = \"z\"\n[engine.variants.a]\n[engine.variants.z]\n[evals.needle]\ndepths = [0.1, 0.9]\n");
        let p3 = build(&s3, vec![trace("a")]).unwrap();
        let p3_units: Vec<Unit> = p3.units().collect();
        for u in &p3_units {
            for v in &p3_units {
                let pairs = (&u.eval, &u.sample, u.repeat) == (&v.eval, &v.sample, v.repeat);
                assert_eq!(u.pair_seed == v.pair_seed, pairs, "{} vs {}", u.id, v.id);
            }
        }
    }
}

#[cfg(test)]
mod report_order_tests {
    use super::tests_support::*;
    use super::*;

    /// `report_order` walks the units as the report sorts its samples, and the store policy
    /// built from it picks the units `report::shown` picks from a model of every planned unit.
    #[test]
    fn report_order_and_the_store_policy_match_the_report_of_every_unit() {
        let s = suite(
            "[engine]\nbaseline = \"z\"\n[engine.variants.b]\n[engine.variants.a]\n\
             [engine.variants.z]\n[evals.replay]\n[evals.needle]\ndepths = [0.9, 0.1, 0.5]\n",
        );
        let traces = [
            "t3", "t1", "t10", "t2", "a", "b", "c", "d", "e", "f", "g", "h", "i",
        ];
        let p = build(&s, traces.iter().map(|t| trace(t)).collect()).unwrap();
        let model = passing_model(&p);
        let sorted: Vec<String> = (0..model.samples.len())
            .map(|i| model.samples.get(i).unit_id.to_string())
            .collect();
        let walked: Vec<String> = p.report_order().map(|i| p.id(i)).collect();
        assert_eq!(walked, sorted);
        let want = crate::report::shown::shown_in_full(&model).unwrap();
        let crate::runner::stores::StorePolicy::Kept { shown, .. } =
            crate::runner::stores::StorePolicy::for_plan(&p)
        else {
            panic!("a kept policy");
        };
        let got: std::collections::BTreeSet<String> = shown.into_iter().collect();
        assert!(!got.is_empty() && got.len() < p.len());
        assert_eq!(got, want);
    }

    /// The report model of `p` had every planned unit passed.
    fn passing_model(p: &Plan) -> crate::report::ReportModel {
        let samples: Vec<crate::record::Sample> = p
            .units()
            .map(|u| {
                crate::record::Sample::builder()
                    .unit_id(u.id)
                    .trace(&*u.trace_id)
                    .variant(&*u.variant)
                    .eval(&*u.eval)
                    .sample(&*u.sample)
                    .repeat(u.repeat)
                    .passed(true)
                    .build()
            })
            .collect();
        let mut info = crate::record::RunInfo::new("plan");
        info.variants = p.variants.iter().map(|v| v.name.clone()).collect();
        info.baseline = Some(p.baseline.clone());
        crate::report::ReportModel::build(&info, samples)
    }

    /// A sweep of many variants: the page's caps per variant shrink (`report::html::Caps`), and
    /// the store policy built from the plan follows them — the units of fewer pairing keys, the
    /// same `report::shown` picks from a model of every planned unit, and windows of flagged
    /// units and failed verdicts past which a store is not written at the shrunk caps.
    #[test]
    fn the_store_policy_of_many_variants_follows_the_pages_smaller_caps() {
        use crate::runner::stores::{Route, StorePolicy};
        let s = suite(
            "[engine]\nbaseline = \"summarize.keep.fraction=0.1,summarize.trigger.fraction=0.85\"\n\
             [engine.grid]\n\"summarize.trigger.fraction\" = [0.85, 0.7, 0.5, 0.3]\n\
             \"summarize.keep.fraction\" = [0.1, 0.2, 0.3]\n\
             [evals.replay]\n[evals.needle]\ndepths = [0.9, 0.1, 0.5]\n",
        );
        let traces = ["t3", "t1", "t10", "t2", "a", "b", "c", "d"];
        let p = build(&s, traces.iter().map(|t| trace(t)).collect()).unwrap();
        assert_eq!(p.variants.len(), 12);
        let caps = crate::report::html::Caps::for_variants(12);
        assert!(caps.shrunk() && caps.keys < crate::report::html::SHOWN_PAIR_KEYS);
        let model = passing_model(&p);
        let want = crate::report::shown::shown_in_full(&model).unwrap();
        let StorePolicy::Kept { shown, .. } = StorePolicy::for_plan(&p) else {
            panic!("a kept policy");
        };
        let got: std::collections::BTreeSet<String> = shown.iter().cloned().collect();
        assert_eq!(
            got.len(),
            caps.keys * 12,
            "the units of the shrunk number of keys"
        );
        assert_eq!(got, want);
        // Units of a variant other than the baseline, in the report's order.
        let of_variant = p
            .report_order()
            .map(|i| p.unit(i))
            .filter(|u| u.variant_index == 1)
            .collect::<Vec<_>>();
        assert!(of_variant.len() > caps.flagged + 12);
        // Every one flagged: the first `caps.flagged` may be shown (they wait), the others are
        // not written unless the page shows their key.
        let policy = StorePolicy::for_plan(&p);
        let mut flagged = crate::runner::UnitOutput {
            passed: Some(true),
            ..Default::default()
        };
        flagged.compactions.insert("futile".into(), 1);
        for (k, u) in of_variant.iter().enumerate() {
            let route = policy.route_output(u, &flagged);
            let expected = if shown.contains(&u.id) {
                Route::Dir
            } else if k < caps.flagged {
                Route::Wait
            } else {
                Route::Skip
            };
            assert_eq!(route, expected, "flagged unit {k}");
        }
        // Every one a failed verdict: the first `caps.failed` outside the shown keys may be
        // shown (the pack), the others are not written.
        let policy = StorePolicy::for_plan(&p);
        let failed = crate::runner::UnitOutput {
            passed: Some(false),
            ..Default::default()
        };
        let mut outside = 0;
        for u in &of_variant {
            let route = policy.route_output(u, &failed);
            if shown.contains(&u.id) {
                assert_eq!(route, Route::Dir);
                continue;
            }
            let expected = if outside < caps.failed {
                Route::Pack
            } else {
                Route::Skip
            };
            assert_eq!(route, expected, "failed verdict {outside} outside the keys");
            outside += 1;
        }
    }
}
