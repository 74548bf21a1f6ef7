//! Number formatting shared by every text output (report writers, terminal tables, gate
//! messages): significant decimals, CIs, p-values, signed deltas. A leaf: it only knows the
//! statistics types.

use super::stats::Ci;

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

/// `[lo, hi]` or `–` when there is no interval.
pub fn fmt_ci(ci: Option<&Ci>) -> String {
    match ci {
        Some(c) => {
            let scale = scale_of(c);
            let at = |x: f64| bound(x, fmt_num_at(x, scale), || fmt_num(x));
            format!("[{}, {}]", at(c.lo), at(c.hi))
        }
        None => "–".to_string(),
    }
}

/// `[lo, hi]` of an interval of relative changes in percent (no `%`), both bounds with the
/// decimals [`fmt_pct_value`] gives the larger one (`[-0.1, +0.5]`, not `[-0.096, +0.5]`), or
/// `–` when there is none.
pub fn fmt_pct_ci(ci: Option<&Ci>) -> String {
    match ci {
        Some(c) => {
            let scale = scale_of(c);
            let at = |x: f64| bound(x, fmt_pct_value_at(x, scale), || fmt_pct_value(x));
            format!("[{}, {}]", at(c.lo), at(c.hi))
        }
        None => "–".to_string(),
    }
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

/// Signed delta with its percentage, e.g. `-0.250 (-25.0%)`.
pub fn fmt_delta(delta: f64, pct: Option<f64>) -> String {
    let d = fmt_num(delta);
    let d = if delta > 0.0 { format!("+{d}") } else { d };
    match pct {
        Some(p) if p.is_finite() => format!("{d} ({})", fmt_pct(p)),
        _ => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_carry_a_sign_and_a_percentage() {
        assert_eq!(fmt_delta(0.25, Some(50.0)), "+0.250 (+50.0%)");
        assert_eq!(fmt_delta(0.0, Some(0.0)), "0.000 (0.0%)");
        assert_eq!(fmt_delta(-0.5, None), "-0.500");
        assert_eq!(fmt_ci(None), "–");
        assert_eq!(fmt_p(None), "–");
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
        assert_eq!(fmt_delta(4e-9, None), "+≈0");
        assert_eq!(
            fmt_delta(-0.0009306571428571346, Some(-0.36)),
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
        let ci = |lo, hi| fmt_ci(Some(&at(lo, hi)));
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
        // Δ% bounds alike (the quickstart's `tokens +0.1% [-0.096, +0.5]`).
        assert_eq!(fmt_pct_ci(Some(&at(-0.096, 0.52))), "[-0.1, +0.5]");
        assert_eq!(fmt_pct_ci(Some(&at(-0.0031, 1e-5))), "[-0.0031, +<0.001]");
        assert_eq!(fmt_pct_ci(Some(&at(-62.1, -49.2))), "[-62.1, -49.2]");
        assert_eq!(fmt_pct_ci(Some(&at(-0.04, 12.0))), "[-0.040, +12.0]");
        assert_eq!(fmt_pct_ci(Some(&at(0.0, 0.0))), "[0.0, 0.0]");
        assert_eq!(fmt_pct_ci(Some(&at(-2e-4, 3e-4))), "[-<0.001, +<0.001]");
        assert_eq!(fmt_pct_ci(None), "–");
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
        assert_eq!(fmt_delta(1.2e-5, Some(1.2e-5)), "+0.0000120 (+<0.001%)");
        assert_eq!(fmt_pct(f64::NAN), "n/a");
    }
}
