//! [`ExactSum`]: a sum of floats that does not depend on the order they were added in.
//!
//! Units finish in an order that changes from run to run (threads, a server's latency), and a
//! float sum rounds at every step, so summing dollars as units finish gave the same run's total
//! as `68.38474300000003` in one run, `68.38474300000006` in another, and `68.384743` where the
//! roles were summed apart. Each value is held as an integer count of 2⁻⁶⁴ (exact for every
//! dollar amount a run shows: a value's bits below 2⁻⁶⁴ ≈ 5·10⁻²⁰ are dropped, the same for every
//! order), summed in an `i128`, and rounded to the nearest float once, when read: the sum of the
//! same values is the same float however they were added, and it is the float nearest their
//! exact sum.

/// Sum of `f64`s, exact and independent of the order of [`ExactSum::add`] (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExactSum(i128);

/// 2⁶⁴: the sum's unit is 2⁻⁶⁴.
const SCALE: f64 = 18_446_744_073_709_551_616.0;

impl ExactSum {
    /// Add `x`. Values of magnitude 2⁶² or more (or not finite) are clamped: a run's dollars
    /// stay far below (4.6·10¹⁸).
    pub fn add(&mut self, x: f64) {
        // `x * 2⁶⁴` is exact (a power of two); the cast truncates the bits below 2⁻⁶⁴ and
        // saturates what is too large (NaN becomes 0).
        const LIMIT: f64 = (1u128 << 126) as f64;
        let scaled = (x * SCALE).clamp(-LIMIT, LIMIT);
        self.0 = self.0.saturating_add(scaled as i128);
    }

    /// The float nearest the sum.
    pub fn value(self) -> f64 {
        // `i128 as f64` rounds to nearest; dividing by a power of two is exact.
        self.0 as f64 / SCALE
    }
}

impl std::ops::Add for ExactSum {
    type Output = ExactSum;
    fn add(self, other: ExactSum) -> ExactSum {
        ExactSum(self.0.saturating_add(other.0))
    }
}

impl std::iter::Sum<f64> for ExactSum {
    fn sum<I: Iterator<Item = f64>>(iter: I) -> ExactSum {
        let mut s = ExactSum::default();
        for x in iter {
            s.add(x);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The costs of many units in three orders: a float sum differs in its last digits, the
    /// exact sum does not (and stays within the float sum's rounding of it).
    #[test]
    fn the_sum_does_not_depend_on_the_order() {
        let xs: Vec<f64> = (0..10_000)
            .map(|i| 0.000_123_4 * ((i * 7919) % 1000) as f64 + 1e-7 * i as f64)
            .collect();
        let mut reversed = xs.clone();
        reversed.reverse();
        let mut shuffled = xs.clone();
        shuffled.sort_by_key(|a| a.to_bits() % 97);
        let naive = |v: &[f64]| v.iter().sum::<f64>();
        assert_ne!(
            naive(&xs).to_bits(),
            naive(&reversed).to_bits(),
            "the values must show the problem"
        );
        let exact = |v: &[f64]| v.iter().copied().sum::<ExactSum>().value();
        assert_eq!(exact(&xs).to_bits(), exact(&reversed).to_bits());
        assert_eq!(exact(&xs).to_bits(), exact(&shuffled).to_bits());
        let err = (exact(&xs) - naive(&xs)).abs();
        assert!(err < 1e-9, "{err}");
    }

    #[test]
    fn a_few_dollar_amounts_sum_to_what_they_read() {
        // A float sum of ten 0.1s reads 0.9999999999999999.
        assert_eq!([0.1; 10].iter().sum::<f64>(), 0.9999999999999999);
        let s: ExactSum = [0.1; 10].into_iter().sum();
        assert_eq!(s.value(), 1.0);
        let s: ExactSum = [17.907397, 21.6559354, 10.8488676, 17.972543]
            .into_iter()
            .sum();
        assert_eq!(s.value(), 68.384743);
        let mut a = ExactSum::default();
        a.add(1.5);
        let mut b = ExactSum::default();
        b.add(-0.25);
        assert_eq!((a + b).value(), 1.25);
        assert_eq!(ExactSum::default().value(), 0.0);
    }
}
