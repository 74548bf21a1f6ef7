//! Paired comparisons of a numeric metric: the paired bootstrap over per-pair deltas and the
//! cluster bootstrap that resamples whole traces, with their p-values.

use super::{
    all_equal_of, bootstrap_means, erfc, mean_of, quantile, std_dev_of, Ci, CiMethod, SplitMix64,
    ALPHA, BOOTSTRAP_ITERS, BOOTSTRAP_MAX_N,
};
use serde::Serialize;

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
    paired_delta_of(deltas.len(), || deltas.iter().copied(), seed)
}

/// [`paired_delta`] of `n` deltas that `deltas` gives again from the start on each call (the
/// same passes in the same order; the bootstrap, at most [`BOOTSTRAP_MAX_N`] deltas, collects
/// them).
pub fn paired_delta_of<I: Iterator<Item = f64>>(
    n: usize,
    deltas: impl Fn() -> I,
    seed: u64,
) -> Option<PairedDelta> {
    let m = mean_of(n, deltas())?;
    if n < 2 {
        return Some(PairedDelta {
            n,
            mean_delta: m,
            ci: None,
            p_value: None,
        });
    }
    if all_equal_of(deltas()) {
        return Some(constant_delta(n, m, n));
    }
    if n > BOOTSTRAP_MAX_N {
        let se = std_dev_of(n, &deltas) / (n as f64).sqrt();
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
    let deltas: Vec<f64> = deltas().collect();
    let mut means = bootstrap_means(&deltas, BOOTSTRAP_ITERS, seed);
    means.sort_by(f64::total_cmp);
    let le = means.iter().filter(|&&x| x <= 0.0).count();
    let ge = means.iter().filter(|&&x| x >= 0.0).count();
    let b = means.len() as f64;
    // No test on n independent pairs is more certain than a sign test with all n agreeing
    // (as for clusters, below): 7 pairs gave p = 0.001 from the bootstrap's resolution.
    let floor = 2.0 * 0.5f64.powi(n.min(1100) as i32);
    let p = (2.0 * ((le.min(ge) as f64 + 1.0) / (b + 1.0)))
        .max(floor)
        .min(1.0);
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
    let pairs = || deltas.iter().copied().zip(clusters.iter().copied());
    cluster_paired_delta_of(deltas.len(), pairs, seed)
}

/// [`cluster_paired_delta`] of `n` (delta, cluster) pairs that `pairs` gives again from the
/// start on each call (the same passes in the same order; what it holds is per cluster, and
/// at most [`BOOTSTRAP_MAX_N`] deltas without clusters).
pub fn cluster_paired_delta_of<I: Iterator<Item = (f64, usize)>>(
    n: usize,
    pairs: impl Fn() -> I,
    seed: u64,
) -> Option<PairedDelta> {
    let k = pairs().map(|p| p.1).max().map_or(0, |m| m + 1);
    let deltas = || pairs().map(|p| p.0);
    if k == n {
        return paired_delta_of(n, deltas, seed);
    }
    let m = mean_of(n, deltas())?;
    let mut sums = vec![0.0; k];
    let mut counts = vec![0usize; k];
    for (d, c) in pairs() {
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
    if all_equal_of(deltas()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_pairs_are_never_more_certain_than_a_sign_test() {
        // 7 pairs that all got worse, by different amounts: the bootstrap alone said 0.001.
        let deltas = [2.0, 5.0, 1.0, 3.0, 4.0, 1.0, 3.0];
        let p = paired_delta(&deltas, 3).unwrap().p_value.unwrap();
        assert_eq!(p, 2.0 * 0.5f64.powi(7));
        // Enough pairs: the bootstrap's own p, far above the floor.
        let many: Vec<f64> = (0..40).map(|i| f64::from(i % 5) - 1.0).collect();
        let q = paired_delta(&many, 3).unwrap().p_value.unwrap();
        assert!(q > 2.0 * 0.5f64.powi(40) && q < 1.0, "{q}");
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
}
