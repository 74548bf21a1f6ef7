//! Number formatting shared by every text output (report writers, terminal tables, gate
//! messages): significant decimals, CIs, p-values, signed deltas. A leaf: it only knows the
//! statistics types.

use super::stats::Ci;

/// Number formatting shared by the text writers: up to 4 significant decimals, no `-0`.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_string();
    }
    let a = x.abs();
    let s = if a != 0.0 && a < 0.001 {
        format!("{x:.2e}")
    } else if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    };
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// `[lo, hi]` or `–` when there is no interval.
pub fn fmt_ci(ci: Option<&Ci>) -> String {
    match ci {
        Some(c) => format!("[{}, {}]", fmt_num(c.lo), fmt_num(c.hi)),
        None => "–".to_string(),
    }
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
        Some(p) if p.is_finite() => format!("{d} ({p:+.1}%)"),
        _ => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_carry_a_sign_and_a_percentage() {
        assert_eq!(fmt_delta(0.25, Some(50.0)), "+0.250 (+50.0%)");
        assert_eq!(fmt_delta(-0.5, None), "-0.500");
        assert_eq!(fmt_ci(None), "–");
        assert_eq!(fmt_p(None), "–");
    }
}
