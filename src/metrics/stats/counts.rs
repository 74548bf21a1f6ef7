//! Tests on counts: McNemar's test for paired pass/fail outcomes, pass@k and pass^k over
//! repeats, and the complementary error function the normal approximations use.

use super::MCNEMAR_EXACT_BELOW;
use serde::Serialize;

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
