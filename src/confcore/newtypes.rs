//! Constrained configuration values, checked when they are deserialized, so an out-of-range
//! value is a load error with its key path and line instead of a panic deep in a run.
//!
//! - [`Fraction`]: a share of the window in (0, 1] (rejects NaN, 0, negatives, > 1).
//! - [`TriggerTokens`]: a trigger's token count, ≥ 1 (0 is refused like a fraction of 0).
//! - [`Secs`]: a number of seconds that is finite, ≥ 0 and fits a [`std::time::Duration`].
//! - A timeout (a provider's `timeout_secs`, an external engine's `external.timeout_secs`):
//!   seconds > 0 and at most [`MAX_TIMEOUT_SECS`], one day ([`timeout_duration`]).
//! - A longest wait (a provider's `retry_max_secs`): seconds ≥ 0 and at most the same day
//!   ([`wait_duration`]).
//!
//! Public configuration structs keep plain `f64` fields (their users construct them in code);
//! the newtypes guard the deserialization boundary through `#[serde(try_from = …)]` or the
//! `deserialize_with` helpers below.

use serde::{Deserialize, Deserializer, Serialize};
use std::time::Duration;

/// A fraction of the window in (0, 1].
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Fraction(f64);

impl Fraction {
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Fraction {
    type Error = String;
    fn try_from(f: f64) -> Result<Self, String> {
        if f.is_finite() && f > 0.0 && f <= 1.0 {
            Ok(Fraction(f))
        } else {
            Err(format!("expected a fraction in (0, 1], got {f}"))
        }
    }
}

impl From<Fraction> for f64 {
    fn from(f: Fraction) -> f64 {
        f.0
    }
}

/// A trigger's token count: at least 1. A trigger of 0 tokens is refused as a fraction of 0
/// is (no threshold: a layer comparing with `>=` would fire on every call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "u64", into = "u64")]
pub struct TriggerTokens(u64);

impl TriggerTokens {
    pub fn get(self) -> u64 {
        self.0
    }
}

impl TryFrom<u64> for TriggerTokens {
    type Error = String;
    fn try_from(n: u64) -> Result<Self, String> {
        if n >= 1 {
            Ok(TriggerTokens(n))
        } else {
            Err(
                "expected a token count ≥ 1, got 0 (refused as a fraction of 0 is; to turn \
                 the layer off, leave it out of `layers`)"
                    .into(),
            )
        }
    }
}

impl From<TriggerTokens> for u64 {
    fn from(t: TriggerTokens) -> u64 {
        t.0
    }
}

/// Seconds, finite, ≥ 0, representable as a [`Duration`].
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Secs(f64);

impl Secs {
    pub fn get(self) -> f64 {
        self.0
    }
    pub fn duration(self) -> Duration {
        // Representable by construction (`TryFrom<f64>`).
        Duration::try_from_secs_f64(self.0).unwrap_or(Duration::MAX)
    }
}

impl TryFrom<f64> for Secs {
    type Error = String;
    fn try_from(s: f64) -> Result<Self, String> {
        match Duration::try_from_secs_f64(s) {
            Ok(_) => Ok(Secs(s)),
            Err(_) => Err(format!(
                "expected a duration in seconds (≥ 0, at most {} s), got {s}",
                Duration::MAX.as_secs()
            )),
        }
    }
}

impl From<Secs> for f64 {
    fn from(s: Secs) -> f64 {
        s.0
    }
}

/// The longest timeout accepted (`timeout_secs` of a provider, `external.timeout_secs` of an
/// engine): one day. A longer wait is no timeout, and a value such as `1e15` or `1e30` is a
/// typo, refused where the file is read (it panicked where it became a [`Duration`]).
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// A timeout in seconds as a wait, or what is wrong with it: seconds > 0 and at most
/// [`MAX_TIMEOUT_SECS`] (so 0, negatives, `inf`, `nan` and values no [`Duration`] holds are
/// refused). The one rule of every configured timeout.
pub fn timeout_duration(secs: f64) -> Result<Duration, String> {
    within_a_day(secs, false)
}

/// A configured longest wait in seconds (a provider's `retry_max_secs`) as a wait, or what is
/// wrong with it: seconds ≥ 0 (0: no wait) and at most [`MAX_TIMEOUT_SECS`], the bound of
/// [`timeout_duration`]. A wait of more than a day is no limit, and `1e15` is a typo.
pub fn wait_duration(secs: f64) -> Result<Duration, String> {
    within_a_day(secs, true)
}

/// `secs` as a [`Duration`] when it is at most [`MAX_TIMEOUT_SECS`] and more than 0 (or 0 too,
/// with `zero_ok`); else what is wrong with it.
fn within_a_day(secs: f64, zero_ok: bool) -> Result<Duration, String> {
    let low = if zero_ok { "≥ 0" } else { "> 0" };
    let refused = || {
        let shown = if secs.is_finite() && secs.abs() >= 1e9 {
            format!("{secs:e}")
        } else {
            secs.to_string()
        };
        format!("expected seconds {low} and at most {MAX_TIMEOUT_SECS} (one day), got {shown}")
    };
    // NaN fails every comparison.
    let above_low = secs > 0.0 || (zero_ok && secs == 0.0);
    if !(above_low && secs <= MAX_TIMEOUT_SECS) {
        return Err(refused());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| refused())
}

/// `deserialize_with` of a longest-wait field ([`wait_duration`]): checked where it is read,
/// so the error names the file, line and key.
pub fn wait_secs<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match Option::<f64>::deserialize(d)? {
        Some(secs) => wait_duration(secs)
            .map(|_| secs)
            .map_err(serde::de::Error::custom),
        None => Err(serde::de::Error::custom(format!(
            "expected seconds ≥ 0 and at most {MAX_TIMEOUT_SECS} (one day), got no finite \
             number (`inf` and `nan` are refused)"
        ))),
    }
}

/// `deserialize_with` of a timeout field ([`timeout_duration`]): checked where it is read, so
/// the error names the file, line and key.
pub fn timeout_secs<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match opt_timeout_secs(d)? {
        Some(secs) => Ok(secs),
        None => Err(serde::de::Error::custom(no_finite_timeout())),
    }
}

/// [`timeout_secs`] of an optional field. A `null` is refused too: it is what a TOML `inf` or
/// `nan` becomes in a JSON value (a `--set`, a suite variant's merged table).
pub fn opt_timeout_secs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        Some(secs) => timeout_duration(secs)
            .map(|_| Some(secs))
            .map_err(serde::de::Error::custom),
        None => Err(serde::de::Error::custom(no_finite_timeout())),
    }
}

fn no_finite_timeout() -> String {
    format!(
        "expected seconds > 0 and at most {MAX_TIMEOUT_SECS} (one day), got no finite number \
         (`inf` and `nan` are refused)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_reject_nan_zero_and_over_one() {
        assert!(Fraction::try_from(0.5).is_ok());
        assert!(Fraction::try_from(1.0).is_ok());
        for bad in [0.0, -0.1, 1.01, f64::NAN, f64::INFINITY] {
            assert!(Fraction::try_from(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn seconds_must_fit_a_duration() {
        assert_eq!(Secs::try_from(0.0).unwrap().duration(), Duration::ZERO);
        assert!(Secs::try_from(1e300).is_err());
        assert!(Secs::try_from(-1.0).is_err());
        let e = serde_json::from_str::<Secs>("1e20").unwrap_err();
        assert!(e.to_string().contains("duration in seconds"), "{e}");
    }

    /// A longest wait: 0 allowed (no wait), bounded by the timeouts' day (it took any value a
    /// `Duration` holds).
    #[test]
    fn waits_are_at_most_a_day() {
        assert_eq!(wait_duration(0.0), Ok(Duration::ZERO));
        assert_eq!(
            wait_duration(MAX_TIMEOUT_SECS),
            Ok(Duration::from_secs(86_400))
        );
        for bad in [-1.0, 86_400.5, 1e15, f64::INFINITY, f64::NAN] {
            let e = wait_duration(bad).unwrap_err();
            assert!(e.contains("at most 86400 (one day)"), "{bad}: {e}");
        }
    }

    /// Every configured timeout: > 0 and at most a day (a provider's `timeout_secs` took any
    /// value a `Duration` holds, `1e15` seconds too).
    #[test]
    fn timeouts_are_positive_and_at_most_a_day() {
        assert_eq!(timeout_duration(1.5), Ok(Duration::from_millis(1500)));
        assert_eq!(
            timeout_duration(MAX_TIMEOUT_SECS),
            Ok(Duration::from_secs(86_400))
        );
        for bad in [0.0, -1.0, 86_400.5, 1e15, 1e20, f64::INFINITY, f64::NAN] {
            let e = timeout_duration(bad).unwrap_err();
            assert!(e.contains("at most 86400 (one day)"), "{bad}: {e}");
        }
        assert!(timeout_duration(1e15).unwrap_err().ends_with("got 1e15"));
        #[derive(serde::Deserialize, Debug)]
        struct T {
            #[serde(deserialize_with = "timeout_secs")]
            _t: f64,
        }
        let e = serde_json::from_str::<T>(r#"{"_t": 1e15}"#).unwrap_err();
        assert!(e.to_string().contains("at most 86400"), "{e}");
        let e = serde_json::from_str::<T>(r#"{"_t": null}"#).unwrap_err();
        assert!(e.to_string().contains("no finite number"), "{e}");
        assert!(serde_json::from_str::<T>(r#"{"_t": 120}"#).is_ok());
    }
}
