//! The 95% CI of a relative change (percent) of paired means: resampled as a ratio (so it stays
//! above −100% for non-negative metrics), with the delta-method normal interval for large n.

use super::{
    all_equal_of, mean_of, quantile, std_dev_of, Ci, CiMethod, SplitMix64, ALPHA, BOOTSTRAP_ITERS,
    BOOTSTRAP_MAX_N,
};

/// 95% CI of the relative change `100·(mean(cand) − mean(base)) / |mean(base)|` of paired
/// values, in percent: the percentile interval of that ratio recomputed on every resample, not
/// the delta's CI scaled by the observed baseline mean (which ignores the baseline's own
/// variability and, for a non-negative metric, can fall below −100%). `clusters[i]` is the
/// cluster of pair `i` (numbered `0..k`); the resamples are the draws of
/// [`cluster_paired_delta`](super::cluster_paired_delta) with the same seed (with one pair per cluster, those of
/// [`paired_delta`](super::paired_delta)), so the two intervals agree on the sign of every resample. For a
/// non-negative metric the interval is within [−100%, ∞). Above [`BOOTSTRAP_MAX_N`] unclustered
/// pairs it is the delta-method normal interval of log(ratio) when both means are positive
/// (so it stays above −100%), of the ratio itself otherwise. `None` with fewer than two
/// clusters, or when a bound is infinite (resamples whose baseline mean is 0: with few
/// clusters and some zero baselines the relative change has no finite interval).
pub fn relative_change_ci(base: &[f64], cand: &[f64], clusters: &[usize], seed: u64) -> Option<Ci> {
    let n = base.len();
    if n != cand.len() || n != clusters.len() {
        return None;
    }
    let triples = || {
        base.iter()
            .zip(cand)
            .zip(clusters)
            .map(|((&b, &c), &k)| (b, c, k))
    };
    relative_change_ci_of(n, triples, seed)
}

/// [`relative_change_ci`] of `n` (baseline, candidate, cluster) triples that `triples` gives
/// again from the start on each call (the same passes in the same order; what it holds is per
/// cluster).
pub fn relative_change_ci_of<I: Iterator<Item = (f64, f64, usize)>>(
    n: usize,
    triples: impl Fn() -> I,
    seed: u64,
) -> Option<Ci> {
    if n < 2 {
        return None;
    }
    let k_all = triples().map(|t| t.2).max().map_or(0, |m| m + 1);
    let mut sb = vec![0.0; k_all];
    let mut sc = vec![0.0; k_all];
    let mut cnt = vec![0usize; k_all];
    for (b, c, k) in triples() {
        sb[k] += b;
        sc[k] += c;
        cnt[k] += 1;
    }
    let present: Vec<usize> = (0..k_all).filter(|&c| cnt[c] > 0).collect();
    let k = present.len();
    if k < 2 {
        return None;
    }
    let base = || triples().map(|t| t.0);
    let cand = || triples().map(|t| t.1);
    let (mb, mc) = (mean_of(n, base())?, mean_of(n, cand())?);
    if mb == 0.0 {
        return None;
    }
    let pct = |sum_b: f64, sum_c: f64| 100.0 * (sum_c - sum_b) / sum_b.abs();
    if all_equal_of(base()) && all_equal_of(cand()) {
        let p = pct(mb, mc);
        return Some(Ci {
            lo: p,
            hi: p,
            method: CiMethod::Degenerate,
        });
    }
    if k == n && n > BOOTSTRAP_MAX_N {
        return Some(ratio_normal_ci(n, &triples, mb, mc));
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
fn ratio_normal_ci<I: Iterator<Item = (f64, f64, usize)>>(
    n: usize,
    triples: impl Fn() -> I,
    mb: f64,
    mc: f64,
) -> Ci {
    let r = mc / mb;
    // Var(mean(c) − r·mean(b)) / mb² is the variance of the ratio estimate.
    let resid = || triples().map(|(b, c, _)| c - r * b);
    let se_r = std_dev_of(n, resid) / (n as f64).sqrt() / mb.abs();
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

#[cfg(test)]
mod tests {
    use super::super::{mean, paired_delta};
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
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
}
