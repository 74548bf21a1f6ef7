//! From samples to statistics: the metric values of each sample, per-variant summaries with
//! CIs, paired comparisons (bootstrap + McNemar) and pass@k / pass^k.
//!
//! Metric names:
//! - `<eval>.<score>` for every score of a sample (`needle.recall`, `drift.score`, …);
//! - `<eval>.pass` (1 or 0) where the sample has a pass/fail verdict;
//! - `cost` — total dollars of the unit, only where every used role has a known price;
//! - `tokens` — total tokens of the unit (all roles, input + output).
//!
//! Failed units (with an `error`) carry no metric values: they are counted as errors instead.
//! Values are ordered by pair key (its 64-bit digest, `Sample::pair_hash`) before any
//! resampling, so results do not depend on the order
//! in which units finished.

use super::stats::{self, Ci, McNemar};
use crate::record::Row;
#[cfg(test)]
use crate::record::Sample;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// One metric value of one unit, with the key that pairs it across variants or runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Obs {
    /// `Sample::pair_hash` of the unit: trace, eval, sample and repeat.
    pub key: u64,
    /// The cluster the unit belongs to (a digest of its trace id): units of one trace are
    /// correlated, so comparisons resample whole clusters.
    pub cluster: u64,
    pub value: f64,
}

/// Digest of a trace id (the cluster of its units).
fn cluster_of(trace_id: &str) -> u64 {
    stats::sub_seed(0, trace_id)
}

/// Call `f(metric, value)` for every metric of a sample (nothing for a failed unit).
pub fn for_each_metric(s: &Row<'_>, mut f: impl FnMut(&str, f64)) {
    if s.error.is_some() {
        return;
    }
    let mut name = String::with_capacity(s.eval.len() + 16);
    for (k, v) in &s.scores {
        if v.is_finite() {
            name.clear();
            name.push_str(s.eval);
            name.push('.');
            name.push_str(k);
            f(&name, *v);
        }
    }
    if let Some(p) = s.passed {
        name.clear();
        name.push_str(s.eval);
        name.push_str(".pass");
        f(&name, if p { 1.0 } else { 0.0 });
    }
    if let Some(c) = s.cost_total() {
        f("cost", c);
    }
    f("tokens", s.tokens_total() as f64);
}

/// Call `f(metric, value)` for the per-role token and cost metrics of a sample:
/// `tokens.agent|summarizer|judge|eval_agent` (input + output) and `cost.<role>` (USD;
/// a role with no tokens costs a known 0, a role with tokens and no price gives no value).
/// The gate gates these (`cost.agent.delta_pct <= 5`) and `compare` compares them; the report
/// tables of one run do not list them.
pub fn for_each_role_metric(s: &Row<'_>, mut f: impl FnMut(&str, f64)) {
    if s.error.is_some() {
        return;
    }
    let roles = [
        (&s.tokens.agent, s.cost_usd.agent),
        (&s.tokens.summarizer, s.cost_usd.summarizer),
        (&s.tokens.judge, s.cost_usd.judge),
        (&s.tokens.eval_agent, s.cost_usd.eval_agent),
    ];
    for (role, (tokens, cost)) in ROLES.into_iter().zip(roles) {
        f(&format!("tokens.{role}"), tokens.total() as f64);
        match cost {
            Some(c) => f(&format!("cost.{role}"), c),
            None if tokens.total() == 0 => f(&format!("cost.{role}"), 0.0),
            None => {}
        }
    }
}

/// The roles whose tokens and cost are metrics of their own (`tokens.<role>`, `cost.<role>`),
/// in display order.
pub const ROLES: [&str; 4] = crate::evalspec::ROLES;

/// [`for_each_role_metric`] with each value's pairing key and cluster (as [`for_each_obs`]).
pub fn for_each_role_obs(s: &Row<'_>, mut f: impl FnMut(&str, Obs)) {
    let key = s.pair_hash();
    let cluster = cluster_of(s.trace_id);
    for_each_role_metric(s, |metric, value| {
        f(
            metric,
            Obs {
                key,
                cluster,
                value,
            },
        )
    });
}

/// The pairs of a paired comparison of two observation lists in key order, each without
/// duplicate keys (a merge join): (baseline value, candidate value, cluster) in the
/// candidate's key order, clusters numbered by first appearance: the pairs [`compare`] makes
/// of the same lists, for lists streamed off disk (`report::spill`, the gate of a big run).
pub fn join_sorted(
    cand: impl Iterator<Item = Obs>,
    base: impl Iterator<Item = Obs>,
) -> impl Iterator<Item = (f64, f64, usize)> {
    let mut c = cand;
    let mut b = base.peekable();
    let mut clusters: rustc_hash::FxHashMap<u64, usize> = rustc_hash::FxHashMap::default();
    std::iter::from_fn(move || loop {
        let o = c.next()?;
        while b.peek().is_some_and(|x| x.key < o.key) {
            b.next();
        }
        if let Some(x) = b.peek().filter(|x| x.key == o.key) {
            let next = clusters.len();
            let k = *clusters.entry(o.cluster).or_insert(next);
            return Some((x.value, o.value, k));
        }
    })
}

/// [`observations`] plus the per-role metrics of [`for_each_role_metric`] (what the gate reads).
pub fn observations_with_roles<'a>(samples: impl IntoIterator<Item = Row<'a>> + Clone) -> ObsTable {
    let mut table = observations(samples.clone());
    // The keys of each list so far (a unit journaled twice counts once; a role metric named as
    // an eval's score keeps the score's values): a set, not a scan of the list per value.
    let mut seen: BTreeMap<String, BTreeMap<String, rustc_hash::FxHashSet<u64>>> = BTreeMap::new();
    let mut first = FirstLines::default();
    for s in samples.into_iter().filter(|s| first.is_first(s)) {
        let key = s.pair_hash();
        let cluster = cluster_of(s.trace_id);
        let per_metric = table.entry(s.variant.to_string()).or_default();
        let seen = seen.entry(s.variant.to_string()).or_default();
        for_each_role_metric(&s, |metric, value| {
            let list = per_metric.entry(metric.to_string()).or_default();
            let keys = match seen.get_mut(metric) {
                Some(k) => k,
                None => seen
                    .entry(metric.to_string())
                    .or_insert_with(|| list.iter().map(|o| o.key).collect()),
            };
            if keys.insert(key) {
                list.push(Obs {
                    key,
                    cluster,
                    value,
                });
            }
        });
    }
    for per_metric in table.values_mut() {
        for list in per_metric.values_mut() {
            list.sort_by_key(|o| o.key);
        }
    }
    table
}

/// variant → metric → observations (sorted by key).
pub type ObsTable = BTreeMap<String, BTreeMap<String, Vec<Obs>>>;

/// Call `f(metric, observation)` for every metric of a sample ([`for_each_metric`]), with its
/// pairing key and cluster.
pub fn for_each_obs(s: &Row<'_>, mut f: impl FnMut(&str, Obs)) {
    let key = s.pair_hash();
    let cluster = cluster_of(s.trace_id);
    for_each_metric(s, |metric, value| {
        f(
            metric,
            Obs {
                key,
                cluster,
                value,
            },
        )
    });
}

/// Collect the observations of every variant and metric.
pub fn observations<'a>(samples: impl IntoIterator<Item = Row<'a>>) -> ObsTable {
    let mut table: ObsTable = BTreeMap::new();
    let mut first = FirstLines::default();
    for s in samples.into_iter().filter(|s| first.is_first(s)) {
        let per_metric = match table.get_mut(s.variant) {
            Some(m) => m,
            None => table.entry(s.variant.to_string()).or_default(),
        };
        for_each_obs(&s, |metric, o| {
            let list = match per_metric.get_mut(metric) {
                Some(l) => l,
                None => per_metric.entry(metric.to_string()).or_default(),
            };
            list.push(o);
        });
    }
    // One row a unit (the first of its lines), so one observation a key in each list.
    for per_metric in table.values_mut() {
        for list in per_metric.values_mut() {
            list.sort_by_key(|o| o.key);
        }
    }
    table
}

/// The first line of each unit (variant and pair key) among rows in any order: a unit
/// journaled twice counts by its first line, also when that line failed (it has no values,
/// and the later line's must not stand in for them). What every reader of rows in journal
/// order (compare, gate) counts units and observations by.
#[derive(Default)]
pub struct FirstLines<'a> {
    seen: rustc_hash::FxHashSet<(&'a str, u64)>,
}

impl<'a> FirstLines<'a> {
    /// Whether `s` is the first line of its unit seen so far.
    pub fn is_first(&mut self, s: &Row<'a>) -> bool {
        self.seen.insert((s.variant, s.pair_hash()))
    }
}

/// Number of units that appear more than once (same variant and pair key).
pub fn duplicate_units<'a>(samples: impl IntoIterator<Item = Row<'a>>) -> usize {
    let mut seen = rustc_hash::FxHashSet::default();
    samples
        .into_iter()
        .filter(|s| !seen.insert((s.variant, s.pair_hash())))
        .count()
}

/// Mean and CI of one metric of one variant.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MetricSummary {
    pub metric: String,
    /// Which direction is better, as the metric's eval declares it (`crate::evalspec`).
    pub polarity: crate::evalspec::Polarity,
    pub n: usize,
    pub mean: f64,
    pub ci: Option<Ci>,
}

/// Mean and bootstrap CI of `obs`. The bootstrap's seed comes from the run's `seed` and
/// `variant` only, not the metric: two metrics with the same values (`cost` and `cost.agent`
/// when every dollar is the agent's) get the same CI, and adding a metric moves no other's.
pub fn summarize(metric: &str, obs: &[Obs], seed: u64, variant: &str) -> Option<MetricSummary> {
    summarize_of(
        metric,
        obs.len(),
        || obs.iter().map(|o| o.value),
        seed,
        variant,
    )
}

/// [`summarize`] of `n` values (in key order) that `values` gives again from the start on
/// each call: a stream off disk (`report::spill`) gives the same summary as the slice.
pub fn summarize_of<I: Iterator<Item = f64>>(
    metric: &str,
    n: usize,
    values: impl Fn() -> I,
    seed: u64,
    variant: &str,
) -> Option<MetricSummary> {
    let mean = stats::mean_of(n, values())?;
    Some(MetricSummary {
        metric: metric.to_string(),
        polarity: crate::evalspec::polarity(metric),
        n,
        mean,
        ci: stats::mean_ci_of(n, values, stats::sub_seed(seed, variant)),
    })
}

/// Paired comparison of one metric: candidate vs baseline on the units both have.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    pub metric: String,
    /// Candidate variant (and run, for cross-run comparisons: `run/variant`).
    pub candidate: String,
    pub baseline: String,
    pub n_pairs: usize,
    /// Distinct traces among the pairs: the independent units of evidence.
    pub n_traces: usize,
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// Mean of candidate − baseline over the pairs.
    pub delta: f64,
    /// 100·delta / |baseline mean|; `None` when the baseline mean is 0.
    pub delta_pct: Option<f64>,
    /// Paired-bootstrap 95% CI of the delta.
    pub ci: Option<Ci>,
    /// 95% CI of `delta_pct` (percent): the relative change recomputed on each resample of
    /// `ci` ([`stats::relative_change_ci`]), so for a non-negative metric it never goes below
    /// −100%. `None` when `delta_pct` is, or when a resample's baseline mean is 0.
    pub pct_ci: Option<Ci>,
    /// p-value of the test that decides significance (McNemar for pass/fail metrics,
    /// paired bootstrap otherwise).
    pub p_value: Option<f64>,
    /// Set when the metric is pass/fail (every paired value is 0 or 1).
    pub mcnemar: Option<McNemar>,
    /// Resampled by trace (some trace contributes several pairs): the p-value and CI come from
    /// a cluster bootstrap, also for pass/fail metrics (McNemar assumes independent pairs; its
    /// counts are still shown).
    pub clustered: bool,
    /// Fewer than [`stats::MIN_CLUSTERS`] traces: no verdict ("too few traces to tell").
    pub too_few_traces: bool,
    /// p < 0.05 with at least [`stats::MIN_CLUSTERS`] traces.
    pub significant: bool,
}

#[cfg(test)]
impl Comparison {
    /// A comparison for writer tests: `base` → `base + delta` of candidate `aggr` against `base`
    /// over 10 pairs of 10 traces, delta CI `[lo, hi]` (and its percent form), p-value `p`.
    pub fn for_test(metric: &str, base: f64, delta: f64, (lo, hi): (f64, f64), p: f64) -> Self {
        let pct = |x: f64| 100.0 * x / base.abs();
        Comparison {
            metric: metric.into(),
            candidate: "aggr".into(),
            baseline: "base".into(),
            n_pairs: 10,
            n_traces: 10,
            clustered: false,
            too_few_traces: false,
            baseline_mean: base,
            candidate_mean: base + delta,
            delta,
            delta_pct: (base != 0.0).then(|| pct(delta)),
            ci: Some(Ci {
                lo,
                hi,
                method: stats::CiMethod::Bootstrap,
            }),
            pct_ci: (base != 0.0).then(|| Ci {
                lo: pct(lo),
                hi: pct(hi),
                method: stats::CiMethod::Bootstrap,
            }),
            p_value: Some(p),
            mcnemar: None,
            significant: p < 0.05,
        }
    }
}

/// Pair observations by key and compare. `None` when no key is shared.
pub fn compare(
    metric: &str,
    candidate: &str,
    baseline: &str,
    cand: &[Obs],
    base: &[Obs],
    seed: u64,
) -> Option<Comparison> {
    let base_by_key: HashMap<u64, f64> = base.iter().map(|o| (o.key, o.value)).collect();
    let mut pairs = Vec::new();
    let mut cluster_ids: HashMap<u64, usize> = HashMap::new();
    for o in cand {
        if let Some(&bv) = base_by_key.get(&o.key) {
            let next = cluster_ids.len();
            pairs.push((bv, o.value, *cluster_ids.entry(o.cluster).or_insert(next)));
        }
    }
    let n_traces = cluster_ids.len();
    let triples = || pairs.iter().copied();
    compare_pairs(
        metric,
        candidate,
        baseline,
        pairs.len(),
        n_traces,
        triples,
        seed,
    )
}

/// [`compare`] of `n` pairs (baseline value, candidate value, cluster), in the candidate's
/// key order, that `pairs` gives again from the start on each call; clusters are numbered
/// `0..n_traces` by first appearance. A merge join of two streams off disk
/// (`report::spill`) gives the same comparison as the slices.
pub fn compare_pairs<I: Iterator<Item = (f64, f64, usize)>>(
    metric: &str,
    candidate: &str,
    baseline: &str,
    n: usize,
    n_traces: usize,
    pairs: impl Fn() -> I,
    seed: u64,
) -> Option<Comparison> {
    if n == 0 {
        return None;
    }
    let clustered = n_traces < n;
    // One seed for the pair of variants, not per metric: metrics with the same pairs (`cost`
    // and `cost.agent` when every dollar is the agent's) get the same CI and p.
    let label = format!("{candidate}\u{1f}{baseline}");
    let bootstrap_seed = stats::sub_seed(seed, &label);
    let deltas = || pairs().map(|(b, c, k)| (c - b, k));
    let paired = stats::cluster_paired_delta_of(n, deltas, bootstrap_seed)?;
    let pct_ci = stats::relative_change_ci_of(n, &pairs, bootstrap_seed);
    let baseline_mean = stats::mean_of(n, pairs().map(|p| p.0))?;
    let candidate_mean = stats::mean_of(n, pairs().map(|p| p.1))?;
    // Pass/fail data: a fraction's (or an undeclared metric's) values all 0 or 1. A count, a
    // number of tokens, dollars or a graded score is never a 0/1 outcome, even when every
    // value of a run happens to be 0 or 1 (no futile compaction anywhere).
    let may_be_binary = crate::evalspec::metric(metric)
        .is_none_or(|m| m.kind == crate::evalspec::MetricKind::Fraction);
    let binary =
        may_be_binary && pairs().all(|(b, c, _)| (b == 0.0 || b == 1.0) && (c == 0.0 || c == 1.0));
    let mcnemar = binary.then(|| {
        let (mut lost, mut gained) = (0u64, 0u64);
        for (b, c, _) in pairs() {
            lost += u64::from(b == 1.0 && c == 0.0);
            gained += u64::from(b == 0.0 && c == 1.0);
        }
        stats::mcnemar(lost, gained)
    });
    let p_value = match &mcnemar {
        Some(m) if !clustered => Some(m.p_value),
        _ => paired.p_value,
    };
    let too_few_traces = n_traces < stats::MIN_CLUSTERS;
    Some(Comparison {
        metric: metric.to_string(),
        candidate: candidate.to_string(),
        baseline: baseline.to_string(),
        n_pairs: n,
        n_traces,
        baseline_mean,
        candidate_mean,
        delta: paired.mean_delta,
        delta_pct: (baseline_mean != 0.0).then(|| 100.0 * paired.mean_delta / baseline_mean.abs()),
        ci: paired.ci,
        pct_ci,
        p_value,
        mcnemar,
        clustered,
        too_few_traces,
        significant: !too_few_traces && p_value.is_some_and(|p| p < stats::ALPHA),
    })
}

/// Metric display order: eval metrics by name, then `cost`, then `tokens`, then the per-role
/// costs and tokens, each in [`ROLES`] order.
pub fn metric_rank(m: &str) -> (u8, usize, &str) {
    let (head, rest) = m.split_once('.').unwrap_or((m, ""));
    match (head, rest, ROLES.iter().position(|r| *r == rest)) {
        ("cost", "", _) => (1, 0, m),
        ("tokens", "", _) => (2, 0, m),
        ("cost", _, Some(i)) => (3, i, m),
        ("tokens", _, Some(i)) => (4, i, m),
        _ => (0, 0, m),
    }
}

/// What [`compare_runs`] compares, in its order, of two runs' tables of anything by variant
/// and metric (observations in memory, ranges of a spilled file): every variant of `cand`
/// that `base` also has (`order`'s first, the others by name), every metric both have, in
/// display order.
pub fn run_pairs<'m, T, U>(
    order: &[String],
    cand: &'m BTreeMap<String, BTreeMap<String, T>>,
    base: &'m BTreeMap<String, BTreeMap<String, U>>,
) -> Vec<(&'m str, &'m str)> {
    let mut variants: Vec<&String> = order
        .iter()
        .filter_map(|v| cand.get_key_value(v).map(|(k, _)| k))
        .collect();
    variants.extend(cand.keys().filter(|v| !order.contains(v)));
    let mut out = Vec::new();
    for v in variants {
        let (Some(c), Some(b)) = (cand.get(v), base.get(v)) else {
            continue;
        };
        let mut metrics: Vec<&String> = c.keys().filter(|m| b.contains_key(*m)).collect();
        metrics.sort_by_key(|m| metric_rank(m));
        out.extend(metrics.into_iter().map(|m| (v.as_str(), m.as_str())));
    }
    out
}

/// What a run's comparisons with its `baseline` compare, in the report's order, of its table
/// of anything by variant and metric: every variant of `order` but the baseline that has a
/// table, every metric of it the baseline has too, in display order; `None` when the baseline
/// has no table (no successful unit).
pub fn baseline_pairs<'m, T>(
    table: &'m BTreeMap<String, BTreeMap<String, T>>,
    baseline: &str,
    order: &'m [String],
) -> Option<Vec<(&'m str, &'m str)>> {
    let base = table.get(baseline)?;
    let mut out = Vec::new();
    for v in order.iter().filter(|v| *v != baseline) {
        let Some(cand) = table.get(v) else {
            continue;
        };
        let mut names: Vec<&String> = cand.keys().filter(|m| base.contains_key(*m)).collect();
        names.sort_by_key(|m| metric_rank(m));
        out.extend(names.into_iter().map(|m| (v.as_str(), m.as_str())));
    }
    Some(out)
}

/// Compare two runs variant by variant: for every variant of `candidate` that `baseline` also
/// has, every metric both have (the per-role ones too: [`observations_with_roles`]), paired by trace/eval/sample/repeat. `order` lists the variants
/// in display order (others follow by name).
pub fn compare_runs<'a, 'b>(
    baseline: impl IntoIterator<Item = Row<'a>> + Clone,
    candidate: impl IntoIterator<Item = Row<'b>> + Clone,
    order: &[String],
    seed: u64,
) -> Vec<Comparison> {
    let base = observations_with_roles(baseline);
    let cand = observations_with_roles(candidate);
    run_pairs(order, &cand, &base)
        .into_iter()
        .flat_map(|(v, m)| compare(m, v, v, &cand[v][m], &base[v][m], seed))
        .collect()
}

/// pass@k and pass^k of one variant and eval.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PassK {
    pub variant: String,
    pub eval: String,
    /// Tasks (trace × eval sample) with at least k graded attempts.
    pub tasks: usize,
    pub k: u64,
    pub pass_at_k: f64,
    pub pass_hat_k: f64,
}

/// Nested by its parts, so a lookup borrows the row's strings: (a, b) → value, in (a, b) order.
type ByPair<V> = BTreeMap<String, BTreeMap<String, V>>;

fn pair_entry<'m, V: Default>(map: &'m mut ByPair<V>, a: &str, b: &str) -> &'m mut V {
    if !map.contains_key(a) {
        map.insert(a.to_string(), BTreeMap::new());
    }
    let inner = map.get_mut(a).expect("inserted");
    if !inner.contains_key(b) {
        inner.insert(b.to_string(), V::default());
    }
    inner.get_mut(b).expect("inserted")
}

/// Largest k reported.
pub const MAX_K: u64 = 10;

/// pass@k and pass^k for every variant × eval with a repeated task (k = 1..=max attempts, at
/// most [`MAX_K`]; each k over the tasks with at least k attempts). Failed units count as
/// failed attempts.
pub fn pass_k<'a>(samples: impl IntoIterator<Item = Row<'a>>) -> Vec<PassK> {
    let mut sum = PassKSum::default();
    for s in samples {
        sum.add(&s);
    }
    sum.finish()
}

/// [`pass_k`] one sample at a time: what it holds is per task (variant, eval, trace, sample),
/// not per sample.
#[derive(Debug, Default)]
pub struct PassKSum {
    /// (variant, eval) → (trace, eval sample) → (attempts, passes)
    tasks: ByPair<ByPair<(u64, u64)>>,
}

impl PassKSum {
    pub fn add(&mut self, s: &Row<'_>) {
        let verdict = match (&s.error, s.passed) {
            (Some(_), _) => false,
            (None, Some(p)) => p,
            (None, None) => return,
        };
        let per_task = pair_entry(&mut self.tasks, s.variant, s.eval);
        let e = pair_entry(per_task, s.trace_id, s.sample);
        e.0 += 1;
        e.1 += u64::from(verdict);
    }

    pub fn finish(self) -> Vec<PassK> {
        let mut out = Vec::new();
        let flat = self
            .tasks
            .into_iter()
            .flat_map(|(v, m)| m.into_iter().map(move |(e, t)| (v.clone(), e, t)));
        for (variant, eval, per_task) in flat {
            let per_task: Vec<(u64, u64)> = per_task
                .into_values()
                .flat_map(BTreeMap::into_values)
                .collect();
            let max_n = per_task.iter().map(|t| t.0).max().unwrap_or(0);
            if max_n < 2 {
                continue;
            }
            for k in 1..=max_n.min(MAX_K) {
                // Tasks with fewer than k attempts cannot be scored at k and are left out.
                let at: Vec<f64> = per_task
                    .iter()
                    .filter_map(|&(n, c)| stats::pass_at_k(n, c, k))
                    .collect();
                let hat: Vec<f64> = per_task
                    .iter()
                    .filter_map(|&(n, c)| stats::pass_hat_k(n, c, k))
                    .collect();
                out.push(PassK {
                    variant: variant.clone(),
                    eval: eval.clone(),
                    tasks: at.len(),
                    k,
                    pass_at_k: stats::mean(&at).unwrap_or(f64::NAN),
                    pass_hat_k: stats::mean(&hat).unwrap_or(f64::NAN),
                });
            }
        }
        out
    }
}

/// [`duplicate_units`] of rows in report order (sorted by variant, trace, eval, sample,
/// repeat): a unit journaled twice is next to its first, so only the last key is held.
#[derive(Debug, Default)]
pub struct DuplicatesSum {
    last: Option<(String, u64)>,
    count: usize,
}

impl DuplicatesSum {
    /// Whether `s` is a later line of the unit before it (counted).
    pub fn add(&mut self, s: &Row<'_>) -> bool {
        let key = s.pair_hash();
        match &mut self.last {
            Some((v, k)) if v == s.variant && *k == key => {
                self.count += 1;
                return true;
            }
            Some((v, k)) => {
                v.clear();
                v.push_str(s.variant);
                *k = key;
            }
            None => self.last = Some((s.variant.to_string(), key)),
        }
        false
    }

    pub fn finish(self) -> usize {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::UnitError;

    fn s(variant: &str, sample: &str, repeat: u32, recall: f64) -> Sample {
        Sample::builder()
            .unit_id(format!("{variant}/{sample}/{repeat}"))
            .variant(variant)
            .trace(format!("trace-{sample}")) // one trace per sample: independent units
            .sample(sample)
            .repeat(repeat)
            .score("recall", recall)
            .passed(recall >= 1.0)
            .build()
    }

    /// The per-role lists keep the first value of a unit journaled twice, and the value of an
    /// eval's score of the same name (`tokens.agent` of eval `tokens`) over the role's.
    #[test]
    fn role_observations_keep_the_first_value_of_a_key() {
        let mut first = s("a", "1", 0, 1.0);
        first.tokens.agent.input = 10;
        let mut again = first.clone();
        again.tokens.agent.input = 99;
        let mut other = s("a", "2", 0, 1.0);
        other.tokens.agent.input = 7;
        let mut named = Sample::builder()
            .unit_id("n")
            .variant("a")
            .trace("trace-n")
            .eval("tokens")
            .score("agent", 0.5)
            .build();
        named.tokens.agent.input = 5;
        let rows = [first.row(), again.row(), other.row(), named.row()];
        let table = observations_with_roles(rows.iter().cloned());
        let agent: Vec<(u64, f64)> = table["a"]["tokens.agent"]
            .iter()
            .map(|o| (o.key, o.value))
            .collect();
        let mut want = vec![
            (first.row().pair_hash(), 10.0),
            (other.row().pair_hash(), 7.0),
            (named.row().pair_hash(), 0.5),
        ];
        want.sort_by_key(|w| w.0);
        assert_eq!(agent, want);
    }

    #[test]
    fn metrics_of_a_sample() {
        let mut x = s("a", "1", 0, 1.0);
        x.tokens.agent.input = 10;
        x.tokens.agent.output = 2;
        let mut seen = vec![];
        for_each_metric(&x.row(), |m, v| seen.push((m.to_string(), v)));
        // Agent used tokens with an unknown price: no cost metric.
        assert_eq!(
            seen,
            vec![
                ("needle.recall".to_string(), 1.0),
                ("needle.pass".to_string(), 1.0),
                ("tokens".to_string(), 12.0)
            ]
        );
        x.error = Some(UnitError {
            kind: "timeout".into(),
            message: "m".into(),
        });
        let mut n = 0;
        for_each_metric(&x.row(), |_, _| n += 1);
        assert_eq!(n, 0);
    }

    #[test]
    fn comparison_pairs_by_key_and_uses_mcnemar_for_binary_metrics() {
        let mut samples = vec![];
        for i in 0..12 {
            samples.push(s("base", &i.to_string(), 0, 1.0));
            // candidate loses the needle on 10 of 12 samples
            samples.push(s("cand", &i.to_string(), 0, if i < 10 { 0.0 } else { 1.0 }));
        }
        // an unpaired candidate sample is ignored
        samples.push(s("cand", "extra", 0, 0.0));
        // a unit journaled twice counts once
        samples.push(s("cand", "0", 0, 1.0));
        assert_eq!(duplicate_units(samples.iter().map(Sample::row)), 1);
        let t = observations(samples.iter().map(Sample::row));
        let c = compare(
            "needle.recall",
            "cand",
            "base",
            &t["cand"]["needle.recall"],
            &t["base"]["needle.recall"],
            1,
        )
        .unwrap();
        assert_eq!(c.n_pairs, 12);
        assert!((c.delta + 10.0 / 12.0).abs() < 1e-12);
        let m = c.mcnemar.unwrap();
        assert_eq!((m.b, m.c), (10, 0));
        assert!((c.p_value.unwrap() - 2.0 / 1024.0).abs() < 1e-12);
        assert!(c.significant);
        assert!((c.delta_pct.unwrap() + 100.0 * 10.0 / 12.0).abs() < 1e-9);
    }

    /// A count whose values are all 0 or 1 (a futile compaction here and there) is no pass/fail
    /// outcome: bootstrapped, not McNemar's (it was labelled "McNemar (exact)"); a fraction
    /// with the same values is.
    #[test]
    fn a_count_of_zeros_and_ones_is_not_a_pass_fail_metric() {
        let obs = |v: &[f64]| -> Vec<Obs> {
            v.iter()
                .enumerate()
                .map(|(i, &value)| Obs {
                    key: i as u64,
                    cluster: i as u64,
                    value,
                })
                .collect()
        };
        let base = obs(&[0.0; 12]);
        let cand = obs(&[1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let count = compare("replay.futile_compactions", "c", "b", &cand, &base, 1).unwrap();
        assert!(count.mcnemar.is_none(), "{count:?}");
        let tokens = compare("tokens.judge", "c", "b", &cand, &base, 1).unwrap();
        assert!(tokens.mcnemar.is_none());
        let fraction = compare("needle.recall", "c", "b", &cand, &base, 1).unwrap();
        assert!(fraction.mcnemar.is_some());
        let undeclared = compare("custom.outcome", "c", "b", &cand, &base, 1).unwrap();
        assert!(undeclared.mcnemar.is_some());
    }

    /// Two metrics with the same values (`cost` and `cost.agent` when every dollar is the
    /// agent's) get the same CI and p, in a comparison and in a variant's summary: the
    /// bootstrap's seed was per metric name ([-0.059, -0.011] against [-0.061, -0.011]).
    #[test]
    fn the_same_values_under_two_metric_names_give_the_same_interval() {
        let obs = |v: &[f64]| -> Vec<Obs> {
            v.iter()
                .enumerate()
                .map(|(i, &value)| Obs {
                    key: i as u64,
                    cluster: (i / 3) as u64,
                    value,
                })
                .collect()
        };
        let base: Vec<f64> = (0..24).map(|i| 1.0 + f64::from(i % 5) * 0.3).collect();
        let cand: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, b)| b * (0.8 + (i % 7) as f64 * 0.05))
            .collect();
        let (base, cand) = (obs(&base), obs(&cand));
        let cost = compare("cost", "c", "b", &cand, &base, 3).unwrap();
        let agent = compare("cost.agent", "c", "b", &cand, &base, 3).unwrap();
        assert!(cost.ci.is_some() && cost.p_value.is_some(), "{cost:?}");
        assert_eq!(
            (cost.ci, cost.pct_ci, cost.p_value),
            (agent.ci, agent.pct_ci, agent.p_value)
        );
        let other = compare("cost", "d", "b", &cand, &base, 3).unwrap();
        assert_ne!(
            cost.ci, other.ci,
            "another pair of variants draws its own resamples"
        );
        let mean = |m: &str| summarize(m, &cand, 3, "c").unwrap().ci;
        assert_eq!(mean("cost"), mean("cost.agent"));
    }

    /// 8 traces × 10 units: each trace has its own effect (mean +0.55, spread ~1.1), units of a
    /// trace differ only by a little noise. Counted as 80 independent units the shift is
    /// "significant"; resampled by trace (8 clusters) it is not; with 3 traces there is no
    /// verdict at all.
    #[test]
    fn clustered_units_are_resampled_by_trace() {
        let effects = [2.0, -1.0, 1.5, -0.5, 1.0, 0.3, -0.8, 0.9];
        let mk = |traces: &[f64], own_clusters: bool| -> (Vec<Obs>, Vec<Obs>) {
            let (mut base, mut cand) = (vec![], vec![]);
            for (t, e) in traces.iter().enumerate() {
                for u in 0..10u64 {
                    let key = (t as u64) * 100 + u;
                    let cluster = if own_clusters { key } else { t as u64 };
                    let noise = (u as f64 - 4.5) * 0.01;
                    base.push(Obs {
                        key,
                        cluster,
                        value: 1.0,
                    });
                    cand.push(Obs {
                        key,
                        cluster,
                        value: 1.0 + e + noise,
                    });
                }
            }
            (base, cand)
        };
        let (b, c) = mk(&effects, true);
        let units = compare("m", "cand", "base", &c, &b, 3).unwrap();
        assert_eq!((units.n_pairs, units.n_traces), (80, 80));
        assert!(!units.clustered);
        assert!(
            units.significant,
            "as independent units: p = {:?}",
            units.p_value
        );

        let (b, c) = mk(&effects, false);
        let traces = compare("m", "cand", "base", &c, &b, 3).unwrap();
        assert_eq!((traces.n_pairs, traces.n_traces), (80, 8));
        assert!(traces.clustered && !traces.too_few_traces);
        assert!(
            traces.p_value.unwrap() > 0.05,
            "by trace: p = {:?}",
            traces.p_value
        );
        assert!(!traces.significant);
        let ci = traces.ci.unwrap();
        let unit_ci = units.ci.unwrap();
        assert!(
            ci.hi - ci.lo > 2.0 * (unit_ci.hi - unit_ci.lo),
            "{ci:?} vs {unit_ci:?}"
        );

        // Three traces that all move the same way: no verdict, however many units.
        let (b, c) = mk(&[1.0, 1.2, 0.9], false);
        let few = compare("m", "cand", "base", &c, &b, 3).unwrap();
        assert!(few.too_few_traces && !few.significant);
    }

    #[test]
    fn comparison_is_independent_of_sample_order() {
        let mut samples = vec![];
        for i in 0..30 {
            samples.push(s("base", &i.to_string(), 0, f64::from(i % 4) / 3.0));
            samples.push(s("cand", &i.to_string(), 0, f64::from(i % 3) / 2.0));
        }
        let run = |v: &[Sample]| {
            let t = observations(v.iter().map(Sample::row));
            compare(
                "needle.recall",
                "cand",
                "base",
                &t["cand"]["needle.recall"],
                &t["base"]["needle.recall"],
                9,
            )
        };
        let a = run(&samples);
        samples.reverse();
        assert_eq!(a, run(&samples));
        assert!(a.unwrap().mcnemar.is_none());
    }

    #[test]
    fn pass_k_from_repeats() {
        let mut samples = vec![];
        // task 1: 2 of 3 pass; task 2: 0 of 3 pass.
        for r in 0..3 {
            samples.push(s("v", "1", r, if r < 2 { 1.0 } else { 0.0 }));
            samples.push(s("v", "2", r, 0.0));
        }
        let pk = pass_k(samples.iter().map(Sample::row));
        assert_eq!(pk.len(), 3);
        assert_eq!(pk[0].k, 1);
        assert!((pk[0].pass_at_k - (2.0 / 3.0) / 2.0).abs() < 1e-12);
        // k = 2: task 1 pass@2 = 1 − C(1,2)/C(3,2) = 1; pass^2 = C(2,2)/C(3,2) = 1/3.
        assert!((pk[1].pass_at_k - 0.5).abs() < 1e-12);
        assert!((pk[1].pass_hat_k - 1.0 / 6.0).abs() < 1e-12);
        // No repeats → nothing reported.
        assert!(pass_k([s("v", "1", 0, 1.0)].iter().map(Sample::row)).is_empty());
        // A task with a single attempt is left out at k = 2 but counted at k = 1.
        samples.push(s("v", "3", 0, 1.0));
        let pk = pass_k(samples.iter().map(Sample::row));
        assert_eq!((pk[0].tasks, pk[1].tasks), (3, 2));
    }
}
