//! Constrained configuration values, checked when they are deserialized, so an out-of-range
//! value is a load error with its key path and line instead of a panic deep in a run.
//!
//! - [`Fraction`]: a share of the window in (0, 1] (rejects NaN, 0, negatives, > 1).
//! - [`TriggerTokens`]: a trigger's token count, ≥ 1 (0 is refused like a fraction of 0).
//! - [`Secs`]: a number of seconds that is finite, ≥ 0 and fits a [`std::time::Duration`];
//!   [`PositiveSecs`] also rejects 0.
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

/// Seconds, > 0, representable as a [`Duration`].
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct PositiveSecs(Secs);

impl PositiveSecs {
    pub fn get(self) -> f64 {
        self.0 .0
    }
    pub fn duration(self) -> Duration {
        self.0.duration()
    }
}

impl TryFrom<f64> for PositiveSecs {
    type Error = String;
    fn try_from(s: f64) -> Result<Self, String> {
        let secs = Secs::try_from(s)
            .map_err(|e| e.replace("≥ 0", "> 0"))
            .and_then(|v| {
                if v.0 > 0.0 {
                    Ok(v)
                } else {
                    Err(format!("expected a duration in seconds > 0, got {s}"))
                }
            })?;
        Ok(PositiveSecs(secs))
    }
}

impl From<PositiveSecs> for f64 {
    fn from(s: PositiveSecs) -> f64 {
        s.0 .0
    }
}

/// `deserialize_with` for an `f64` field that must be a [`Secs`].
pub fn secs<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Secs::deserialize(d).map(Secs::get)
}

/// `deserialize_with` for an `f64` field that must be a [`PositiveSecs`].
pub fn positive_secs<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    PositiveSecs::deserialize(d).map(PositiveSecs::get)
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
        assert!(PositiveSecs::try_from(1e20).is_err());
        assert!(PositiveSecs::try_from(0.0).is_err());
        assert_eq!(
            PositiveSecs::try_from(1.5).unwrap().duration(),
            Duration::from_millis(1500)
        );
        let e = serde_json::from_str::<PositiveSecs>("1e20").unwrap_err();
        assert!(e.to_string().contains("duration in seconds"), "{e}");
    }
}
