//! Number formatting shared by every text output (report writers, terminal tables, gate
//! messages): significant decimals, CIs, p-values, signed deltas. A leaf: it only knows the
//! statistics types.

use super::stats::{Ci, CiMethod};

/// Number formatting shared by the text writers: up to 4 significant decimals, no `-0`, never
/// e-notation. Magnitudes below 0.001 keep 3 significant digits as a plain decimal
/// (`-0.000931`); below [`TINY`] they are `≈0` (`-≈0` when negative): the exact value is in the
/// JSON and CSV outputs.
pub fn fmt_num(x: f64) -> String {
    fmt_num_at(x, x.abs())
}

/// [`fmt_num`] of `x` with the decimals [`fmt_num`] gives a number of magnitude `scale`: the
/// two bounds of an interval printed alike (`[89, 1623]`, not `[89.000, 1623]`).
fn fmt_num_at(x: f64, scale: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_string();
    }
    if x != 0.0 && x.abs() < TINY && scale < 0.001 {
        return if x < 0.0 { "-≈0" } else { "≈0" }.to_string();
    }
    let decimals = if scale < TINY {
        3
    } else if scale < 0.001 {
        significant(scale, 3)
    } else if scale >= 1000.0 {
        0
    } else if scale >= 100.0 {
        1
    } else {
        3
    };
    let s = format!("{x:.decimals$}");
    if zero_digits(&s) {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

/// Whether a formatted number shows only zeros (`-0.000`, `+0.0`).
fn zero_digits(s: &str) -> bool {
    s.chars().all(|c| matches!(c, '0' | '.' | '-' | '+'))
}

/// One bound of an interval: `shared` (printed with the interval's decimals), unless that
/// shows a nonzero `x` as zero, which would hide which side of zero the bound is on
/// (`[0.000237, 0.002]` printed `[0.000, 0.002]`): then `own`, `x` with its own digits.
fn bound(x: f64, shared: String, own: impl FnOnce() -> String) -> String {
    if x != 0.0 && zero_digits(&shared) {
        own()
    } else {
        shared
    }
}

/// Nonzero magnitudes below this print as `≈0` in [`fmt_num`].
pub const TINY: f64 = 1e-6;

/// Decimals that show `digits` significant digits of `a` (0 < `a` < 1).
fn significant(a: f64, digits: i32) -> usize {
    (digits - 1 - a.log10().floor() as i32).max(0) as usize
}

/// A signed relative change in percent, without the `%` sign: `+12.5`, `-0.4`; below 0.1 in
/// magnitude two significant digits (`+0.050`, `-0.0012`), below 0.001 `+<0.001` / `-<0.001`,
/// and `0.0` for no change. Never e-notation.
pub fn fmt_pct_value(p: f64) -> String {
    let a = p.abs();
    if !p.is_finite() {
        "n/a".to_string()
    } else if a == 0.0 {
        "0.0".to_string()
    } else if a < 0.001 {
        format!("{}<0.001", if p < 0.0 { '-' } else { '+' })
    } else if a < 0.1 {
        format!("{p:+.*}", significant(a, 2))
    } else {
        format!("{p:+.1}")
    }
}

/// [`fmt_pct_value`] with its `%`: how every text output shows a relative change (`Δ%`).
pub fn fmt_pct(p: f64) -> String {
    if p.is_finite() {
        format!("{}%", fmt_pct_value(p))
    } else {
        "n/a".to_string()
    }
}

/// The magnitude whose decimals both bounds of `c` are printed with: the larger finite one.
fn scale_of(c: &Ci) -> f64 {
    [c.lo, c.hi]
        .into_iter()
        .filter(|x| x.is_finite())
        .fold(0.0, |m, x| m.max(x.abs()))
}

/// The magnitude a figure `x` and its interval are printed at: the largest finite of the three
/// (`x` alone when there is no interval).
fn scale_with(x: f64, ci: Option<&Ci>) -> f64 {
    let s = ci.map_or(0.0, scale_of);
    if x.is_finite() {
        s.max(x.abs())
    } else {
        s
    }
}

/// `shown`, the printed `x`, with a `+` when `x` is a positive number: a change's sign.
fn plus(x: f64, shown: String) -> String {
    if x > 0.0 && x.is_finite() {
        format!("+{shown}")
    } else {
        shown
    }
}

/// How every human-facing output (terminal, report.md, report.html, compare, gate) shows the
/// 95% CI of a figure whose values are all the same ([`CiMethod::Degenerate`]: a mean of equal
/// values, a constant change): `23.000 (constant)`, not `23.000 [23.000, 23.000]`, which reads
/// as a measured interval of zero width and hides that there was no spread to resample. The
/// bounds stay in summary.json, compare.json and the gate's JSON (`"method": "degenerate"`).
pub const CONSTANT_CI: &str = "(constant)";

/// `c` as [`CONSTANT_CI`] when it is degenerate, else as `interval` prints it.
fn ci_or_constant(c: &Ci, interval: impl FnOnce(&Ci) -> String) -> String {
    if c.method == CiMethod::Degenerate {
        CONSTANT_CI.to_string()
    } else {
        interval(c)
    }
}

/// `[lo, hi]` with the decimals [`fmt_num`] gives a number of magnitude `scale`; `signed`
/// (the interval of a change) gives a positive bound its `+`, as the change has.
fn fmt_ci_at(c: &Ci, scale: f64, signed: bool) -> String {
    let at = |x: f64| {
        let shown = bound(x, fmt_num_at(x, scale), || fmt_num(x));
        if signed {
            plus(x, shown)
        } else {
            shown
        }
    };
    format!("[{}, {}]", at(c.lo), at(c.hi))
}

/// A mean (or any figure that is no change) and its 95% CI, as every text output prints the
/// pair: all three with the decimals [`fmt_num`] gives the largest of their magnitudes, as
/// [`fmt_change`] prints a change (`950 [900, 1010]`, where each alone printed
/// `950.3 [900, 1010]`), and unsigned: a mean is no change. A nonzero figure those decimals
/// would show as zero keeps its own digits; with no CI the mean has its own decimals and the
/// interval is `–`; of values all equal, [`CONSTANT_CI`].
pub fn fmt_mean_ci(mean: f64, ci: Option<&Ci>) -> (String, String) {
    let scale = scale_with(mean, ci);
    (
        bound(mean, fmt_num_at(mean, scale), || fmt_num(mean)),
        ci.map_or_else(
            || "–".to_string(),
            |c| ci_or_constant(c, |c| fmt_ci_at(c, scale, false)),
        ),
    )
}

/// `[lo, hi]` of relative changes in percent (no `%`) with the decimals
/// [`fmt_pct_value`] gives a change of magnitude `scale`.
fn fmt_pct_ci_at(c: &Ci, scale: f64) -> String {
    let at = |x: f64| bound(x, fmt_pct_value_at(x, scale), || fmt_pct_value(x));
    format!("[{}, {}]", at(c.lo), at(c.hi))
}

/// A change and its 95% CI, as every text output prints the pair: the change and both bounds
/// signed (a bound is a change too: `+` above zero, as [`fmt_pct_change`] signs its bounds),
/// all three with the decimals [`fmt_num`] gives the largest of their magnitudes
/// (`+908 [-8, +1931]`, where each alone printed `+908.0 [-8, 1931]`), so a row reads at one
/// precision. As in [`fmt_mean_ci`], a nonzero figure those decimals would show as zero keeps its own
/// digits (`+0.000237 [+0.000100, +0.002]`), and with no CI the change has its own decimals and
/// the interval is `–`; of a constant change, [`CONSTANT_CI`].
pub fn fmt_change(delta: f64, ci: Option<&Ci>) -> (String, String) {
    let scale = scale_with(delta, ci);
    (
        plus(
            delta,
            bound(delta, fmt_num_at(delta, scale), || fmt_num(delta)),
        ),
        ci.map_or_else(
            || "–".to_string(),
            |c| ci_or_constant(c, |c| fmt_ci_at(c, scale, true)),
        ),
    )
}

/// [`fmt_change`] of a relative change in percent and its CI: `("+0.1%", "[-0.1, +0.5]")`, where
/// each alone printed `+0.050% [-0.1, +0.5]`; a nonzero change those decimals would show as
/// zero keeps its own digits (`+0.020% [-0.1, +0.5]`); a constant change's interval is
/// [`CONSTANT_CI`].
pub fn fmt_pct_change(p: f64, ci: Option<&Ci>) -> (String, String) {
    let scale = scale_with(p, ci);
    let shown = if p.is_finite() {
        format!(
            "{}%",
            bound(p, fmt_pct_value_at(p, scale), || fmt_pct_value(p))
        )
    } else {
        "n/a".to_string()
    };
    (
        shown,
        ci.map_or_else(
            || "–".to_string(),
            |c| ci_or_constant(c, |c| fmt_pct_ci_at(c, scale)),
        ),
    )
}

/// [`fmt_pct_value`] of `p` with the decimals it gives a change of magnitude `scale`.
fn fmt_pct_value_at(p: f64, scale: f64) -> String {
    if !p.is_finite() || scale < 0.001 {
        return fmt_pct_value(p);
    }
    if p == 0.0 {
        return "0.0".to_string();
    }
    let decimals = if scale >= 0.1 {
        1
    } else {
        significant(scale, 2)
    };
    format!("{p:+.decimals$}")
}

/// p-value as `0.012` or `<0.001`.
pub fn fmt_p(p: Option<f64>) -> String {
    match p {
        None => "–".to_string(),
        Some(p) if p < 0.001 => "<0.001".to_string(),
        Some(p) => format!("{p:.3}"),
    }
}

/// Signed delta with its percentage, e.g. `-0.250 (-25.0%)`: the delta with the decimals it
/// shares with its CI `ci`, the percentage with those it shares with its CI `pct_ci`
/// ([`fmt_change`], [`fmt_pct_change`]), so each reads as it does beside its interval (a
/// table's CI column, the verdict line, the gate). The intervals themselves are not printed.
pub fn fmt_delta(delta: f64, ci: Option<&Ci>, pct: Option<f64>, pct_ci: Option<&Ci>) -> String {
    let (d, _) = fmt_change(delta, ci);
    match pct {
        Some(p) if p.is_finite() => format!("{d} ({})", fmt_pct_change(p, pct_ci).0),
        _ => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_carry_a_sign_and_a_percentage() {
        assert_eq!(fmt_delta(0.25, None, Some(50.0), None), "+0.250 (+50.0%)");
        assert_eq!(fmt_delta(0.0, None, Some(0.0), None), "0.000 (0.0%)");
        assert_eq!(fmt_delta(-0.5, None, None, None), "-0.500");
        assert_eq!(fmt_mean_ci(0.5, None).1, "–");
        assert_eq!(fmt_p(None), "–");
    }

    /// Values all equal have a degenerate interval (the point): said as `(constant)` in every
    /// human output, not `[23.000, 23.000]`; a measured interval that merely prints alike
    /// keeps its bounds.
    #[test]
    fn a_constant_figure_says_so_instead_of_a_point_interval() {
        let point = |x, method| Ci {
            lo: x,
            hi: x,
            method,
        };
        let constant = point(23.0, CiMethod::Degenerate);
        assert_eq!(
            fmt_mean_ci(23.0, Some(&constant)),
            ("23.000".to_string(), "(constant)".to_string())
        );
        assert_eq!(
            fmt_change(-2.0, Some(&point(-2.0, CiMethod::Degenerate))),
            ("-2.000".to_string(), "(constant)".to_string())
        );
        assert_eq!(
            fmt_pct_change(-12.5, Some(&point(-12.5, CiMethod::Degenerate))),
            ("-12.5%".to_string(), "(constant)".to_string())
        );
        // A bootstrap interval that prints as a point is a measurement: kept.
        assert_eq!(
            fmt_mean_ci(0.033, Some(&point(0.033, CiMethod::Bootstrap))).1,
            "[0.033, 0.033]"
        );
    }

    #[test]
    fn tiny_values_are_plain_decimals_never_e_notation() {
        // A cost delta of under a thousandth of a dollar, and the CI bound beside it.
        assert_eq!(fmt_num(-0.0009306571428571346), "-0.000931");
        assert_eq!(fmt_num(0.00023701385059195421), "0.000237");
        assert_eq!(fmt_num(1.2e-5), "0.0000120");
        assert_eq!(fmt_num(TINY), "0.00000100");
        assert_eq!(fmt_num(4e-9), "≈0");
        assert_eq!(fmt_num(-4e-9), "-≈0");
        assert_eq!(fmt_delta(4e-9, None, None, None), "+≈0");
        assert_eq!(
            fmt_delta(-0.0009306571428571346, None, Some(-0.36), None),
            "-0.000931 (-0.4%)"
        );
        for x in [1e-4, -3.3e-5, 7.77e-7, 123.456, 0.5, -2e-12] {
            let s = fmt_num(x);
            assert!(!s.contains('e'), "{x} → {s}");
        }
    }

    #[test]
    fn both_bounds_of_an_interval_have_the_larger_ones_decimals() {
        let at = |lo, hi| Ci {
            lo,
            hi,
            method: crate::metrics::stats::CiMethod::Bootstrap,
        };
        // An interval alone: its figure 0 does not set the decimals.
        let ci = |lo, hi| fmt_mean_ci(0.0, Some(&at(lo, hi))).1;
        // Each bound alone printed `[89.000, 1623]` and `[85.714, 992.0]` (compare's table).
        assert_eq!(ci(89.0, 1623.4), "[89, 1623]");
        assert_eq!(ci(85.714, 992.0), "[85.7, 992.0]");
        assert_eq!(ci(-16.2857, -3.5714), "[-16.286, -3.571]");
        // The gate printed `[-0.003, 0.000587]` for one interval.
        assert_eq!(ci(-0.0031, 0.000587), "[-0.003, 0.001]");
        assert_eq!(ci(-0.00031, 0.0000587), "[-0.000310, 0.000059]");
        assert_eq!(ci(0.0, 0.0), "[0.000, 0.000]");
        assert_eq!(ci(-4e-9, 0.25), "[-≈0, 0.250]");
        assert_eq!(ci(-0.0, 0.0), "[0.000, 0.000]");
        assert_eq!(ci(-4e-9, 4e-9), "[-≈0, ≈0]");
        // A nonzero bound the shared decimals would show as zero keeps its own digits: which
        // side of zero it is on is the point of an interval (`[0.000237, 0.002]` read
        // `[0.000, 0.002]` on a significant change).
        assert_eq!(ci(-0.4, 1500.0), "[-0.400, 1500]");
        assert_eq!(ci(0.000237, 0.002), "[0.000237, 0.002]");
        assert_eq!(ci(f64::NEG_INFINITY, 0.25), "[n/a, 0.250]");
        let pct_ci = |c: &Ci| fmt_pct_change(0.0, Some(c)).1;
        // Δ% bounds alike (the quickstart's `tokens +0.1% [-0.096, +0.5]`).
        assert_eq!(pct_ci(&at(-0.096, 0.52)), "[-0.1, +0.5]");
        assert_eq!(pct_ci(&at(-0.0031, 1e-5)), "[-0.0031, +<0.001]");
        assert_eq!(pct_ci(&at(-62.1, -49.2)), "[-62.1, -49.2]");
        assert_eq!(pct_ci(&at(-0.04, 12.0)), "[-0.040, +12.0]");
        assert_eq!(pct_ci(&at(0.0, 0.0)), "[0.0, 0.0]");
        assert_eq!(pct_ci(&at(-2e-4, 3e-4)), "[-<0.001, +<0.001]");
        assert_eq!(fmt_pct_change(0.0, None).1, "–");
    }

    #[test]
    fn a_change_and_its_interval_have_the_same_decimals() {
        let at = |lo, hi| Ci {
            lo,
            hi,
            method: crate::metrics::stats::CiMethod::Bootstrap,
        };
        let change = |d, lo, hi| {
            let (d, ci) = fmt_change(d, Some(&at(lo, hi)));
            format!("{d} {ci}")
        };
        // The report printed `+908.0 (+28.0%) [-8, 1931]`: each number at its own magnitude,
        // and a positive bound unsigned beside a signed change and a Δ%'s `[-0.1, +0.5]`.
        assert_eq!(change(908.0, -8.0, 1931.0), "+908 [-8, +1931]");
        assert_eq!(change(-0.375, -0.5, -0.25), "-0.375 [-0.500, -0.250]");
        assert_eq!(change(1.125, 1.125, 1.125), "+1.125 [+1.125, +1.125]");
        // The change sets the decimals when it is the largest (a CI that misses it).
        assert_eq!(change(1500.0, 99.4, 120.0), "+1500 [+99, +120]");
        assert_eq!(change(0.0, -8.0, 1931.0), "0 [-8, +1931]");
        // A bound of no change has no sign, as `0.0%` has none.
        assert_eq!(change(0.5, 0.0, 1.0), "+0.500 [0.000, +1.000]");
        // A nonzero figure the shared decimals show as zero keeps its own digits, whether the
        // change or a bound: which side of zero it is on is the point.
        assert_eq!(
            change(0.000237, 0.0001, 0.002),
            "+0.000237 [+0.000100, +0.002]"
        );
        assert_eq!(change(0.4, -0.4, 1500.0), "+0.400 [-0.400, +1500]");
        assert_eq!(change(4e-9, -0.4, 1500.0), "+≈0 [-0.400, +1500]");
        assert_eq!(change(-4e-9, -4e-9, 4e-9), "-≈0 [-≈0, +≈0]");
        assert_eq!(
            fmt_change(1.0, Some(&at(f64::NEG_INFINITY, f64::INFINITY))).1,
            "[n/a, n/a]"
        );
        // No interval: the change's own decimals.
        assert_eq!(fmt_change(908.0, None), ("+908.0".into(), "–".into()));
        assert_eq!(fmt_change(f64::NAN, None), ("n/a".into(), "–".into()));
        assert_eq!(fmt_change(f64::INFINITY, None), ("n/a".into(), "–".into()));

        let pct = |p, lo, hi| {
            let (p, ci) = fmt_pct_change(p, Some(&at(lo, hi)));
            format!("{p} {ci}")
        };
        // Each alone: `+0.070% [-0.1, +0.5]`.
        assert_eq!(pct(0.07, -0.096, 0.52), "+0.1% [-0.1, +0.5]");
        assert_eq!(pct(0.02, -0.096, 0.52), "+0.020% [-0.1, +0.5]");
        assert_eq!(pct(28.04, -0.25, 59.6), "+28.0% [-0.2, +59.6]");
        assert_eq!(pct(-0.04, -0.06, -0.02), "-0.040% [-0.060, -0.020]");
        assert_eq!(pct(0.0, 0.0, 0.0), "0.0% [0.0, 0.0]");
        assert_eq!(pct(1e-5, -2e-4, 3e-4), "+<0.001% [-<0.001, +<0.001]");
        assert_eq!(fmt_pct_change(-12.06, None), ("-12.1%".into(), "–".into()));
        // The delta cell prints each figure as its pair does.
        assert_eq!(
            fmt_delta(
                908.0,
                Some(&at(-8.0, 1931.0)),
                Some(0.07),
                Some(&at(-0.096, 0.52))
            ),
            "+908 (+0.1%)"
        );
    }

    #[test]
    fn a_mean_and_its_interval_have_the_same_decimals() {
        let at = |lo, hi| Ci {
            lo,
            hi,
            method: crate::metrics::stats::CiMethod::Bootstrap,
        };
        let mean = |m, lo, hi| {
            let (m, ci) = fmt_mean_ci(m, Some(&at(lo, hi)));
            format!("{m} {ci}")
        };
        // Each alone printed `950.3 [900, 1010]`: the mean at its own magnitude.
        assert_eq!(mean(950.3, 900.0, 1010.0), "950 [900, 1010]");
        assert_eq!(mean(1003.4, 990.1, 1010.0), "1003 [990, 1010]");
        // The mean sets the decimals when it is the largest, and it is never signed.
        assert_eq!(mean(0.5, 0.25, 0.75), "0.500 [0.250, 0.750]");
        assert_eq!(mean(99.5, 98.25, 100.5), "99.5 [98.2, 100.5]");
        assert_eq!(mean(-3.25, -4.0, -2.5), "-3.250 [-4.000, -2.500]");
        // A nonzero figure the shared decimals show as zero keeps its own digits.
        assert_eq!(mean(0.0004, 0.0001, 1500.0), "0.000400 [0.000100, 1500]");
        assert_eq!(mean(f64::NAN, 1.0, 2.0), "n/a [1.000, 2.000]");
        // No interval: the mean's own decimals.
        assert_eq!(fmt_mean_ci(950.3, None), ("950.3".into(), "–".into()));
    }

    #[test]
    fn tiny_relative_changes_are_readable_and_keep_their_sign() {
        assert_eq!(fmt_pct(0.0), "0.0%");
        assert_eq!(fmt_pct(12.345), "+12.3%");
        assert_eq!(fmt_pct(-0.36), "-0.4%");
        // Below 0.1%: two significant digits, where `{:+.1}` printed +0.0% / -0.0%.
        assert_eq!(fmt_pct(0.05), "+0.050%");
        assert_eq!(fmt_pct(-0.0012), "-0.0012%");
        // Below 0.001%: a bound, with the sign of the change.
        assert_eq!(fmt_pct(1.2e-5), "+<0.001%");
        assert_eq!(fmt_pct(-1.2e-5), "-<0.001%");
        assert_eq!(
            fmt_delta(1.2e-5, None, Some(1.2e-5), None),
            "+0.0000120 (+<0.001%)"
        );
        assert_eq!(fmt_pct(f64::NAN), "n/a");
    }
}
