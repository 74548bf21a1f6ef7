//! Pure, seeded statistics: bootstrap CIs of a mean, paired bootstrap deltas with p-values,
//! McNemar's test for paired pass/fail outcomes, pass@k and pass^k.
//!
//! Everything here is deterministic for a given seed: the generator is SplitMix64, implemented
//! here so results never change with a dependency update.
//!
//! Large samples: resampling n values B times costs O(n·B). Above [`BOOTSTRAP_MAX_N`] values the
//! bootstrap distribution of a mean is normal to well within its own Monte-Carlo error, so the
//! CI is computed as mean ± 1.96·SE instead, and the result says so (`CiMethod::Normal`).

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

/// Derive a seed for one statistic from the run seed and a label, so adding a metric does not
/// change the CIs of the others.
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
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Sample standard deviation (n − 1); 0 for fewer than two values.
pub fn std_dev(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return 0.0;
    }
    let m = xs.iter().sum::<f64>() / n as f64;
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64).sqrt()
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

fn all_equal(xs: &[f64]) -> bool {
    xs.windows(2).all(|w| w[0] == w[1])
}

/// 95% CI of the mean of `xs`; `None` for fewer than two values (no interval exists).
pub fn mean_ci(xs: &[f64], seed: u64) -> Option<Ci> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    if all_equal(xs) {
        return Some(Ci {
            lo: m,
            hi: m,
            method: CiMethod::Degenerate,
        });
    }
    if xs.len() > BOOTSTRAP_MAX_N {
        let half = 1.959_963_984_540_054 * std_dev(xs) / (xs.len() as f64).sqrt();
        return Some(Ci {
            lo: m - half,
            hi: m + half,
            method: CiMethod::Normal,
        });
    }
    let mut means = bootstrap_means(xs, BOOTSTRAP_ITERS, seed);
    means.sort_by(f64::total_cmp);
    Some(Ci {
        lo: quantile(&means, ALPHA / 2.0),
        hi: quantile(&means, 1.0 - ALPHA / 2.0),
        method: CiMethod::Bootstrap,
    })
}

/// Result of a paired comparison of a numeric metric (deltas = candidate − baseline).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PairedDelta {
    pub n: usize,
    pub mean_delta: f64,
    pub ci: Option<Ci>,
    /// Two-sided p-value for "mean delta = 0"; `None` with fewer than two pairs.
    pub p_value: Option<f64>,
}

/// Every delta equals `m`: no variability, so the bootstrap would claim certainty from any n.
/// The exact sign test over `units` independent units (pairs, or traces when pairs cluster):
/// `units` deltas of one sign have two-sided p = 2·(1/2)^units.
fn constant_delta(n: usize, m: f64, units: usize) -> PairedDelta {
    PairedDelta {
        n,
        mean_delta: m,
        ci: Some(Ci {
            lo: m,
            hi: m,
            method: CiMethod::Degenerate,
        }),
        p_value: Some(if m == 0.0 {
            1.0
        } else {
            (2.0 * 0.5f64.powi(units.min(1100) as i32)).min(1.0)
        }),
    }
}

/// Paired bootstrap over per-pair deltas. The p-value is the two-sided bootstrap p:
/// `2·min(P*(mean ≤ 0), P*(mean ≥ 0))` with the +1 correction, capped at 1; for large n it
/// comes from the normal approximation of the mean delta.
pub fn paired_delta(deltas: &[f64], seed: u64) -> Option<PairedDelta> {
    let m = mean(deltas)?;
    let n = deltas.len();
    if n < 2 {
        return Some(PairedDelta {
            n,
            mean_delta: m,
            ci: None,
            p_value: None,
        });
    }
    if all_equal(deltas) {
        return Some(constant_delta(n, m, n));
    }
    if n > BOOTSTRAP_MAX_N {
        let se = std_dev(deltas) / (n as f64).sqrt();
        let half = 1.959_963_984_540_054 * se;
        let z = (m / se).abs();
        return Some(PairedDelta {
            n,
            mean_delta: m,
            ci: Some(Ci {
                lo: m - half,
                hi: m + half,
                method: CiMethod::Normal,
            }),
            p_value: Some(erfc(z / std::f64::consts::SQRT_2).min(1.0)),
        });
    }
    let mut means = bootstrap_means(deltas, BOOTSTRAP_ITERS, seed);
    means.sort_by(f64::total_cmp);
    let le = means.iter().filter(|&&x| x <= 0.0).count();
    let ge = means.iter().filter(|&&x| x >= 0.0).count();
    let b = means.len() as f64;
    let p = (2.0 * ((le.min(ge) as f64 + 1.0) / (b + 1.0))).min(1.0);
    Some(PairedDelta {
        n,
        mean_delta: m,
        ci: Some(Ci {
            lo: quantile(&means, ALPHA / 2.0),
            hi: quantile(&means, 1.0 - ALPHA / 2.0),
            method: CiMethod::Bootstrap,
        }),
        p_value: Some(p),
    })
}

/// Paired comparison that respects clusters (a cluster bootstrap): `clusters[i]` is the
/// cluster (trace) of pair `i`, numbered `0..k`. Each resample draws k clusters with
/// replacement and takes the mean delta over all the pairs of the drawn clusters, so pairs of
/// one trace move together. With one pair per cluster this is [`paired_delta`] exactly; with
/// constant deltas the sign test runs over clusters, not pairs.
pub fn cluster_paired_delta(deltas: &[f64], clusters: &[usize], seed: u64) -> Option<PairedDelta> {
    let k = clusters.iter().max().map_or(0, |m| m + 1);
    if k == deltas.len() {
        return paired_delta(deltas, seed);
    }
    let m = mean(deltas)?;
    let n = deltas.len();
    let mut sums = vec![0.0; k];
    let mut counts = vec![0usize; k];
    for (&d, &c) in deltas.iter().zip(clusters) {
        sums[c] += d;
        counts[c] += 1;
    }
    let present: Vec<usize> = (0..k).filter(|&c| counts[c] > 0).collect();
    let k = present.len();
    if k < 2 {
        return Some(PairedDelta {
            n,
            mean_delta: m,
            ci: None,
            p_value: None,
        });
    }
    if all_equal(deltas) {
        return Some(constant_delta(n, m, k));
    }
    let mut rng = SplitMix64::new(seed);
    let mut means: Vec<f64> = (0..BOOTSTRAP_ITERS)
        .map(|_| {
            let (mut s, mut c) = (0.0, 0usize);
            for _ in 0..k {
                let j = present[rng.index(k)];
                s += sums[j];
                c += counts[j];
            }
            s / c as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let le = means.iter().filter(|&&x| x <= 0.0).count();
    let ge = means.iter().filter(|&&x| x >= 0.0).count();
    let b = means.len() as f64;
    // A bootstrap over few clusters can look certain (two traces with the same mean give a
    // point distribution); no test on k clusters is more certain than a sign test with all k
    // agreeing, so that is the floor of p.
    let floor = 2.0 * 0.5f64.powi(k.min(1100) as i32);
    let p = (2.0 * ((le.min(ge) as f64 + 1.0) / (b + 1.0)))
        .max(floor)
        .min(1.0);
    Some(PairedDelta {
        n,
        mean_delta: m,
        ci: Some(Ci {
            lo: quantile(&means, ALPHA / 2.0),
            hi: quantile(&means, 1.0 - ALPHA / 2.0),
            method: CiMethod::ClusterBootstrap,
        }),
        p_value: Some(p),
    })
}

/// 95% CI of the relative change `100·(mean(cand) − mean(base)) / |mean(base)|` of paired
/// values, in percent: the percentile interval of that ratio recomputed on every resample, not
/// the delta's CI scaled by the observed baseline mean (which ignores the baseline's own
/// variability and, for a non-negative metric, can fall below −100%). `clusters[i]` is the
/// cluster of pair `i` (numbered `0..k`); the resamples are the draws of
/// [`cluster_paired_delta`] with the same seed (with one pair per cluster, those of
/// [`paired_delta`]), so the two intervals agree on the sign of every resample. For a
/// non-negative metric the interval is within [−100%, ∞). Above [`BOOTSTRAP_MAX_N`] unclustered
/// pairs it is the delta-method normal interval of log(ratio) when both means are positive
/// (so it stays above −100%), of the ratio itself otherwise. `None` with fewer than two
/// clusters, or when a bound is infinite (resamples whose baseline mean is 0: with few
/// clusters and some zero baselines the relative change has no finite interval).
pub fn relative_change_ci(base: &[f64], cand: &[f64], clusters: &[usize], seed: u64) -> Option<Ci> {
    let n = base.len();
    if n != cand.len() || n != clusters.len() || n < 2 {
        return None;
    }
    let k_all = clusters.iter().max().map_or(0, |m| m + 1);
    let mut sb = vec![0.0; k_all];
    let mut sc = vec![0.0; k_all];
    let mut cnt = vec![0usize; k_all];
    for ((&b, &c), &k) in base.iter().zip(cand).zip(clusters) {
        sb[k] += b;
        sc[k] += c;
        cnt[k] += 1;
    }
    let present: Vec<usize> = (0..k_all).filter(|&c| cnt[c] > 0).collect();
    let k = present.len();
    if k < 2 {
        return None;
    }
    let (mb, mc) = (mean(base)?, mean(cand)?);
    if mb == 0.0 {
        return None;
    }
    let pct = |sum_b: f64, sum_c: f64| 100.0 * (sum_c - sum_b) / sum_b.abs();
    if all_equal(base) && all_equal(cand) {
        let p = pct(mb, mc);
        return Some(Ci {
            lo: p,
            hi: p,
            method: CiMethod::Degenerate,
        });
    }
    if k == n && n > BOOTSTRAP_MAX_N {
        return Some(ratio_normal_ci(base, cand, mb, mc));
    }
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(BOOTSTRAP_ITERS);
    for _ in 0..BOOTSTRAP_ITERS {
        let (mut b, mut c) = (0.0, 0.0);
        for _ in 0..k {
            let j = present[rng.index(k)];
            b += sb[j];
            c += sc[j];
        }
        // A resample whose baseline mean is 0 has an infinite relative change (of the
        // delta's sign), or none at all when both are 0.
        out.push(if b != 0.0 {
            pct(b, c)
        } else if c == b {
            0.0
        } else {
            f64::INFINITY.copysign(c - b)
        });
    }
    out.sort_by(f64::total_cmp);
    let (lo, hi) = (
        quantile(&out, ALPHA / 2.0),
        quantile(&out, 1.0 - ALPHA / 2.0),
    );
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    Some(Ci {
        lo,
        hi,
        method: if k == n {
            CiMethod::Bootstrap
        } else {
            CiMethod::ClusterBootstrap
        },
    })
}

/// Delta-method normal CI (percent) of the relative change of paired means (large n).
fn ratio_normal_ci(base: &[f64], cand: &[f64], mb: f64, mc: f64) -> Ci {
    let n = base.len() as f64;
    let r = mc / mb;
    // Var(mean(c) − r·mean(b)) / mb² is the variance of the ratio estimate.
    let resid: Vec<f64> = base.iter().zip(cand).map(|(b, c)| c - r * b).collect();
    let se_r = std_dev(&resid) / n.sqrt() / mb.abs();
    let z = 1.959_963_984_540_054;
    let sign = mb.signum();
    let (lo, hi) = if mb > 0.0 && mc > 0.0 {
        // log(ratio) is closer to normal and keeps the interval above −100%.
        let se_log = se_r / r;
        ((r.ln() - z * se_log).exp(), (r.ln() + z * se_log).exp())
    } else {
        (r - z * se_r, r + z * se_r)
    };
    // 100·(r − 1)·sign(mb) = 100·(mc − mb)/|mb|.
    let (a, b) = (100.0 * (lo - 1.0) * sign, 100.0 * (hi - 1.0) * sign);
    Ci {
        lo: a.min(b),
        hi: a.max(b),
        method: CiMethod::Normal,
    }
}

/// McNemar's test on paired pass/fail outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct McNemar {
    /// Pairs where the baseline passed and the candidate failed.
    pub b: u64,
    /// Pairs where the baseline failed and the candidate passed.
    pub c: u64,
    pub p_value: f64,
    /// Exact binomial test (few discordant pairs) or chi-square with continuity correction.
    pub exact: bool,
}

/// McNemar's test from the discordant counts `b` (baseline pass, candidate fail) and `c`
/// (baseline fail, candidate pass).
pub fn mcnemar(b: u64, c: u64) -> McNemar {
    let n = b + c;
    if n == 0 {
        return McNemar {
            b,
            c,
            p_value: 1.0,
            exact: true,
        };
    }
    if n < MCNEMAR_EXACT_BELOW {
        // Two-sided exact binomial test with p = 1/2.
        let k = b.min(c);
        let mut tail = 0.0;
        for i in 0..=k {
            tail += binom_pmf_half(n, i);
        }
        return McNemar {
            b,
            c,
            p_value: (2.0 * tail).min(1.0),
            exact: true,
        };
    }
    let diff = (b as f64 - c as f64).abs() - 1.0;
    let chi2 = diff.max(0.0).powi(2) / n as f64;
    McNemar {
        b,
        c,
        // Survival function of chi-square with 1 degree of freedom.
        p_value: erfc((chi2 / 2.0).sqrt()).min(1.0),
        exact: false,
    }
}

/// C(n, i) / 2^n, computed in log space so large n does not overflow.
fn binom_pmf_half(n: u64, i: u64) -> f64 {
    (ln_choose(n, i) - n as f64 * std::f64::consts::LN_2).exp()
}

fn ln_choose(n: u64, k: u64) -> f64 {
    let k = k.min(n - k);
    (0..k)
        .map(|j| ((n - j) as f64).ln() - ((j + 1) as f64).ln())
        .sum()
}

/// C(n, k) as f64 (exact for the small n of repeats).
fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    let mut r = 1.0;
    for j in 0..k {
        r = r * (n - j) as f64 / (j + 1) as f64;
    }
    r
}

/// Unbiased pass@k for one task with `n` attempts of which `c` passed: the probability that at
/// least one of k attempts drawn without replacement passes, `1 − C(n−c, k)/C(n, k)`.
/// `None` when k > n.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    Some(1.0 - choose(n - c, k) / choose(n, k))
}

/// pass^k (τ-bench) for one task: the probability that all of k attempts drawn without
/// replacement pass, `C(c, k)/C(n, k)`. `None` when k > n.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    Some(choose(c, k) / choose(n, k))
}

/// Complementary error function (Numerical Recipes `erfcc`, relative error < 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
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

    #[test]
    fn paired_delta_detects_a_shift_and_not_noise() {
        // Clear shift: every delta around −0.5.
        let shift: Vec<f64> = (0..40).map(|i| -0.5 + f64::from(i % 3) * 0.01).collect();
        let p = paired_delta(&shift, 3).unwrap();
        assert!(p.p_value.unwrap() < 0.01);
        assert!(p.ci.unwrap().hi < 0.0);
        // Symmetric noise around 0.
        let noise: Vec<f64> = (0..40)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let q = paired_delta(&noise, 3).unwrap();
        assert!(q.p_value.unwrap() > 0.5);
        assert!(q.ci.unwrap().contains(0.0));
        assert_eq!(q.mean_delta, 0.0);
    }

    #[test]
    fn paired_delta_small_and_constant() {
        let one = paired_delta(&[0.3], 0).unwrap();
        assert_eq!((one.n, one.ci, one.p_value), (1, None, None));
        let same = paired_delta(&[0.0, 0.0], 0).unwrap();
        assert_eq!(same.p_value, Some(1.0));
        // A constant shift: exact sign test, 2·(1/2)^n.
        assert_eq!(paired_delta(&[-1.0; 2], 0).unwrap().p_value, Some(0.5));
        assert_eq!(
            paired_delta(&[0.5; 6], 0).unwrap().p_value,
            Some(1.0 / 32.0)
        );
        assert_eq!(paired_delta(&[], 0), None);
    }

    #[test]
    fn cluster_bootstrap_with_singleton_clusters_is_the_paired_bootstrap() {
        let d = [0.3, -0.1, 0.5, 0.2, 0.0, 0.4];
        let ids: Vec<usize> = (0..d.len()).collect();
        assert_eq!(cluster_paired_delta(&d, &ids, 5), paired_delta(&d, 5));
        // Constant deltas in 3 clusters of 4: the sign test counts clusters (2·0.5^3).
        let c = cluster_paired_delta(&[1.0; 12], &[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], 5);
        assert!((c.unwrap().p_value.unwrap() - 0.25).abs() < 1e-12);
    }

    /// Token counts that shrink by ~60% with a wide spread: the scaled delta CI of old went
    /// below −100%; the ratio's own CI cannot, contains the point and is tighter on the low side.
    #[test]
    fn relative_change_ci_stays_above_minus_100_percent() {
        let base: Vec<f64> = (0..9)
            .map(|i| {
                if i == 0 {
                    250_000.0
                } else {
                    2_000.0 + 300.0 * f64::from(i)
                }
            })
            .collect();
        let cand: Vec<f64> = base.iter().map(|b| b * 0.4).collect();
        let ids: Vec<usize> = (0..base.len()).collect();
        let ci = relative_change_ci(&base, &cand, &ids, 11).unwrap();
        let deltas: Vec<f64> = cand.iter().zip(&base).map(|(c, b)| c - b).collect();
        let mb = mean(&base).unwrap();
        let scaled = paired_delta(&deltas, 11).unwrap().ci.unwrap();
        assert!(
            100.0 * scaled.lo / mb < -100.0,
            "the old scaled CI: {scaled:?}"
        );
        // Every resample shrinks by exactly 60%.
        assert!(
            close(ci.lo, -60.0, 1e-9) && close(ci.hi, -60.0, 1e-9),
            "{ci:?}"
        );
        // Mixed effects: the CI is wider but never below −100%, and holds the point.
        let cand: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, b)| if i % 3 == 0 { b * 0.05 } else { b * 0.9 })
            .collect();
        let ci = relative_change_ci(&base, &cand, &ids, 11).unwrap();
        let point = 100.0 * (mean(&cand).unwrap() - mb) / mb;
        assert!(ci.lo >= -100.0 && ci.contains(point), "{ci:?} vs {point}");
        assert!(ci.hi - ci.lo > 1.0);
        // Clustered: 3 traces of 3 pairs resample as 3 clusters.
        let cl = [0, 0, 0, 1, 1, 1, 2, 2, 2];
        let c = relative_change_ci(&base, &cand, &cl, 11).unwrap();
        assert_eq!(c.method, CiMethod::ClusterBootstrap);
        assert!(c.lo >= -100.0 && c.contains(point), "{c:?}");
        // A zero baseline has no relative change; nor, with 3 pairs, one baseline of 0 (1 in 27
        // resamples draws it thrice: an infinite bound).
        assert_eq!(
            relative_change_ci(&[0.0, 0.0], &[1.0, 2.0], &[0, 1], 1),
            None
        );
        let three = relative_change_ci(&[0.0, 1.0, 2.0], &[1.0, 1.0, 1.0], &[0, 1, 2], 1);
        assert_eq!(three, None);
    }

    #[test]
    fn relative_change_ci_for_large_n_is_the_log_normal_interval() {
        let base: Vec<f64> = (0..5000).map(|i| 100.0 + f64::from(i % 50)).collect();
        let cand: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, b)| b * if i % 2 == 0 { 0.02 } else { 0.1 })
            .collect();
        let ids: Vec<usize> = (0..base.len()).collect();
        let ci = relative_change_ci(&base, &cand, &ids, 3).unwrap();
        assert_eq!(ci.method, CiMethod::Normal);
        let point = 100.0 * (mean(&cand).unwrap() / mean(&base).unwrap() - 1.0);
        assert!(ci.lo > -100.0 && ci.contains(point), "{ci:?} {point}");
        assert!(ci.hi - ci.lo < 1.0, "{ci:?}");
    }

    #[test]
    fn mcnemar_exact_on_known_tables() {
        // b = 1, c = 9: p = 2·(C(10,0)+C(10,1))/1024 = 22/1024.
        let m = mcnemar(1, 9);
        assert!(m.exact);
        assert!(close(m.p_value, 22.0 / 1024.0, 1e-12));
        // Balanced discordance: p = 1.
        assert!(close(mcnemar(5, 5).p_value, 1.0, 1e-12));
        // b = 0, c = 5: 2/32.
        assert!(close(mcnemar(0, 5).p_value, 2.0 / 32.0, 1e-12));
        assert_eq!(mcnemar(0, 0).p_value, 1.0);
    }

    #[test]
    fn mcnemar_chi_square_on_a_known_table() {
        // b = 10, c = 30: chi2 = (20 − 1)^2 / 40 = 9.025 → p ≈ 0.002663.
        let m = mcnemar(10, 30);
        assert!(!m.exact);
        assert!(close(m.p_value, 0.002_663, 2e-5), "{}", m.p_value);
    }

    #[test]
    fn pass_at_k_known_cases() {
        // n = 5, c = 2, k = 2: 1 − C(3,2)/C(5,2) = 1 − 3/10.
        assert!(close(pass_at_k(5, 2, 2).unwrap(), 0.7, 1e-12));
        assert_eq!(pass_at_k(5, 0, 3), Some(0.0));
        assert_eq!(pass_at_k(5, 4, 2), Some(1.0));
        assert!(close(pass_at_k(4, 1, 1).unwrap(), 0.25, 1e-12));
        assert_eq!(pass_at_k(2, 1, 3), None);
        // pass^k: n = 5, c = 3, k = 2: C(3,2)/C(5,2) = 0.3.
        assert!(close(pass_hat_k(5, 3, 2).unwrap(), 0.3, 1e-12));
        assert_eq!(pass_hat_k(5, 5, 5), Some(1.0));
        assert_eq!(pass_hat_k(5, 1, 2), Some(0.0));
    }

    #[test]
    fn erfc_known_values() {
        assert!(close(erfc(0.0), 1.0, 1e-7));
        assert!(close(erfc(1.0), 0.157_299_207, 1e-7));
        assert!(close(erfc(-1.0), 1.842_700_793, 1e-7));
    }
}
