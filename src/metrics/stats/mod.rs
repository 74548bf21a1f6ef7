//! Pure, seeded statistics: bootstrap CIs of a mean, paired bootstrap deltas with p-values,
//! McNemar's test for paired pass/fail outcomes, pass@k and pass^k.
//!
//! Everything here is deterministic for a given seed: the generator is SplitMix64, implemented
//! here so results never change with a dependency update.
//!
//! Large samples: resampling n values B times costs O(n·B). Above [`BOOTSTRAP_MAX_N`] values the
//! bootstrap distribution of a mean is normal to well within its own Monte-Carlo error, so the
//! CI is computed as mean ± 1.96·SE instead, and the result says so (`CiMethod::Normal`).

mod counts;
mod paired;
mod relative;

pub use counts::{erfc, mcnemar, pass_at_k, pass_hat_k, McNemar};
pub use paired::{
    cluster_paired_delta, cluster_paired_delta_of, paired_delta, paired_delta_of, PairedDelta,
};
pub use relative::{relative_change_ci, relative_change_ci_of};
use serde::Serialize;

/// Resamples per bootstrap.
pub const BOOTSTRAP_ITERS: usize = 2000;
/// Largest sample bootstrapped by resampling (at most 4 million draws per statistic); above
/// it the normal approximation is used.
pub const BOOTSTRAP_MAX_N: usize = 2000;
/// Two-sided significance level of every CI and test here (95% intervals).
pub const ALPHA: f64 = 0.05;
/// McNemar uses the exact binomial test when there are fewer discordant pairs than this.
pub const MCNEMAR_EXACT_BELOW: u64 = 25;
/// Fewest independent clusters (traces) a comparison needs before it may be called
/// significant. Units of one trace are correlated, so the evidence is the number of traces,
/// not of units: with k traces that all move the same way, a sign test over traces gives
/// p = 2·0.5^k, which is below 0.05 only from k = 6 (k = 5 gives 0.0625). Below that, a cluster
/// bootstrap has too few distinct resamples to mean anything, and the report says "too few
/// traces to tell" instead of a verdict.
pub const MIN_CLUSTERS: usize = 6;

/// Deterministic SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform index in `0..n` (n > 0), by Lemire's multiply-shift (bias < n/2^64).
    pub fn index(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Derive a seed for one statistic from the run seed and a label (a variant, a pair of
/// variants: `metrics::aggregate`), so adding a metric or a variant does not change the CIs of
/// the others.
pub fn sub_seed(seed: u64, label: &str) -> u64 {
    // FNV-1a over the label, mixed with the seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in label.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    SplitMix64::new(h).next_u64()
}

/// How a confidence interval was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Percentile bootstrap.
    Bootstrap,
    /// mean ± 1.96·SE (large n, see module docs).
    Normal,
    /// All values equal: the interval is the point.
    Degenerate,
    /// Percentile bootstrap resampling whole clusters (traces), see [`cluster_paired_delta`].
    ClusterBootstrap,
}

/// A 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Ci {
    pub lo: f64,
    pub hi: f64,
    pub method: CiMethod,
}

impl Ci {
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

pub fn mean(xs: &[f64]) -> Option<f64> {
    mean_of(xs.len(), xs.iter().copied())
}

/// [`mean`] of `n` values given one by one (summed in the same order, so the same bits).
pub fn mean_of(n: usize, xs: impl Iterator<Item = f64>) -> Option<f64> {
    if n == 0 {
        None
    } else {
        Some(xs.sum::<f64>() / n as f64)
    }
}

/// Sample standard deviation (n − 1); 0 for fewer than two values.
pub fn std_dev(xs: &[f64]) -> f64 {
    std_dev_of(xs.len(), || xs.iter().copied())
}

/// [`std_dev`] of `n` values that `xs` gives again from the start on each call (two passes:
/// the mean, then the squared deviations, in the same order as on a slice).
pub fn std_dev_of<I: Iterator<Item = f64>>(n: usize, xs: impl Fn() -> I) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let m = xs().sum::<f64>() / n as f64;
    (xs().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64).sqrt()
}

/// Means of `iters` bootstrap resamples of `xs` (xs non-empty).
fn bootstrap_means(xs: &[f64], iters: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    let n = xs.len();
    (0..iters)
        .map(|_| {
            let mut s = 0.0;
            for _ in 0..n {
                s += xs[rng.index(n)];
            }
            s / n as f64
        })
        .collect()
}

/// Linear-interpolated quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let i = pos.floor() as usize;
    let frac = pos - i as f64;
    if i + 1 < sorted.len() {
        sorted[i] + (sorted[i + 1] - sorted[i]) * frac
    } else {
        sorted[i]
    }
}

/// Whether the values given one by one are all equal (none or one: true).
fn all_equal_of(mut xs: impl Iterator<Item = f64>) -> bool {
    let Some(first) = xs.next() else {
        return true;
    };
    let mut last = first;
    xs.all(|x| std::mem::replace(&mut last, x) == x)
}

/// 95% CI of the mean of `xs`; `None` for fewer than two values (no interval exists).
pub fn mean_ci(xs: &[f64], seed: u64) -> Option<Ci> {
    mean_ci_of(xs.len(), || xs.iter().copied(), seed)
}

/// [`mean_ci`] of `n` values that `xs` gives again from the start on each call (a stream off
/// disk): the same passes in the same order, so the same bits; the bootstrap, below
/// [`BOOTSTRAP_MAX_N`] values, collects them (at most that many held).
pub fn mean_ci_of<I: Iterator<Item = f64>>(n: usize, xs: impl Fn() -> I, seed: u64) -> Option<Ci> {
    if n < 2 {
        return None;
    }
    let m = mean_of(n, xs())?;
    if all_equal_of(xs()) {
        return Some(Ci {
            lo: m,
            hi: m,
            method: CiMethod::Degenerate,
        });
    }
    if n > BOOTSTRAP_MAX_N {
        let half = 1.959_963_984_540_054 * std_dev_of(n, &xs) / (n as f64).sqrt();
        return Some(Ci {
            lo: m - half,
            hi: m + half,
            method: CiMethod::Normal,
        });
    }
    let values: Vec<f64> = xs().collect();
    let mut means = bootstrap_means(&values, BOOTSTRAP_ITERS, seed);
    means.sort_by(f64::total_cmp);
    Some(Ci {
        lo: quantile(&means, ALPHA / 2.0),
        hi: quantile(&means, 1.0 - ALPHA / 2.0),
        method: CiMethod::Bootstrap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn splitmix_is_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 1234567 (reference implementation by Vigna).
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn mean_ci_contains_the_mean_and_shrinks_with_n() {
        let small: Vec<f64> = (0..20).map(|i| f64::from(i % 5)).collect();
        let large: Vec<f64> = (0..1500).map(|i| f64::from(i % 5)).collect();
        let m = mean(&small).unwrap();
        let a = mean_ci(&small, 7).unwrap();
        let b = mean_ci(&large, 7).unwrap();
        assert!(a.contains(m) && b.contains(m));
        assert_eq!(a.method, CiMethod::Bootstrap);
        let (wa, wb) = (a.hi - a.lo, b.hi - b.lo);
        assert!(wb < wa / 5.0, "width {wb} vs {wa}");
        assert_eq!(b.method, CiMethod::Bootstrap);
        // Roughly ±1.96·sd/√n: sd of 0..4 uniform ≈ 1.414, n = 1500 → half-width ≈ 0.0716.
        assert!(close(wb / 2.0, 0.0716, 0.01), "{wb}");
    }

    #[test]
    fn mean_ci_is_deterministic_per_seed() {
        let xs: Vec<f64> = (0..50).map(|i| f64::from(i * 7 % 11)).collect();
        assert_eq!(mean_ci(&xs, 1), mean_ci(&xs, 1));
        assert_ne!(mean_ci(&xs, 1), mean_ci(&xs, 2));
    }

    #[test]
    fn mean_ci_edge_cases() {
        assert_eq!(mean_ci(&[], 0), None);
        assert_eq!(mean_ci(&[1.0], 0), None);
        let d = mean_ci(&[2.0, 2.0, 2.0], 0).unwrap();
        assert_eq!((d.lo, d.hi, d.method), (2.0, 2.0, CiMethod::Degenerate));
    }

    #[test]
    fn normal_ci_for_large_n_matches_the_formula() {
        let xs: Vec<f64> = (0..10_000).map(|i| f64::from(i % 2)).collect();
        let ci = mean_ci(&xs, 0).unwrap();
        assert_eq!(ci.method, CiMethod::Normal);
        let se = std_dev(&xs) / 100.0;
        assert!(close(ci.hi - 0.5, 1.96 * se, 1e-4));
    }
}
