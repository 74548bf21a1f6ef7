//! A compaction cooldown from trace timestamps: digitorn's auto-compact hook will not fire
//! again within `cooldown` seconds of its previous compaction. The replay's clock is the
//! latest timestamp of the messages that arrived before a call; with no timestamps the guard
//! is off (a replay has no other clock), which `docs/engine.md` says.

/// Seconds since the Unix epoch of an RFC 3339 timestamp (`2026-01-21T06:19:38.048Z`,
/// `…+02:00`, a space instead of `T`); `None` when it is not one.
pub fn rfc3339_secs(s: &str) -> Option<f64> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        frac = format!("0.{}", &r[..n]).parse().ok()?;
        rest = &r[n..];
    }
    let offset = match rest {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hm = &rest[1..];
            if hm.len() != 5 || hm.as_bytes()[2] != b':' {
                return None;
            }
            let oh: i64 = hm[..2].parse().ok()?;
            let om: i64 = hm[3..].parse().ok()?;
            sign * (oh * 3600 + om * 60)
        }
    };
    let days = days_from_civil(y, mo, d);
    Some((days * 86_400 + h * 3600 + mi * 60 + sec - offset) as f64 + frac)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The guard's state for one replay.
#[derive(Clone, Debug, Default)]
pub struct Cooldown {
    /// Latest timestamp seen so far (seconds).
    now: Option<f64>,
    /// When the previous compaction happened.
    last: Option<f64>,
}

impl Cooldown {
    /// A message arrived: move the clock to its timestamp when it has a later one.
    pub fn saw(&mut self, timestamp: Option<&str>) {
        if let Some(t) = timestamp.and_then(rfc3339_secs) {
            self.now = Some(self.now.map_or(t, |n| n.max(t)));
        }
    }

    /// Seconds since the previous compaction when that is less than `cooldown` (the guard
    /// holds); `None` when compaction may run (no previous one, or no clock).
    pub fn holds(&self, cooldown: f64) -> Option<f64> {
        let since = self.now? - self.last?;
        (since < cooldown).then_some(since)
    }

    /// A compaction happened now.
    pub fn compacted(&mut self) {
        self.last = self.now;
    }

    /// For a layer whose compaction is due: when `cooldown_secs` is set and the guard holds,
    /// emit a `cooldown` event (`tokens` = the request's size) and return true (skip it).
    pub fn hold(
        &self,
        cooldown_secs: Option<f64>,
        ctx: &mut super::layer::CallCtx<'_>,
        layer: &str,
        tokens: u64,
    ) -> bool {
        let Some(cooldown_secs) = cooldown_secs else {
            return false;
        };
        let Some(since_secs) = self.holds(cooldown_secs) else {
            return false;
        };
        let detail = super::event::EventDetail::Cooldown {
            since_secs,
            cooldown_secs,
        };
        ctx.emit(layer, detail).tokens_before = Some(tokens);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_epoch_seconds() {
        assert_eq!(rfc3339_secs("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(rfc3339_secs("2000-03-01T00:00:00Z"), Some(951_868_800.0));
        let t = rfc3339_secs("2026-01-21T06:19:38.048Z").unwrap();
        assert!((t - 1_768_976_378.048).abs() < 1e-6, "{t}");
        assert_eq!(
            rfc3339_secs("2026-01-21T08:19:38+02:00"),
            rfc3339_secs("2026-01-21T06:19:38Z")
        );
        assert_eq!(
            rfc3339_secs("2026-01-21 06:19:38"),
            rfc3339_secs("2026-01-21T06:19:38Z")
        );
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-01-21T06:19",
            "2026-01-21T06:19:38.Z",
            "2026-01-21T06:19:38+0200",
        ] {
            assert_eq!(rfc3339_secs(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_guard_holds_within_the_cooldown_and_not_without_a_clock() {
        let mut c = Cooldown::default();
        assert_eq!(c.holds(30.0), None, "no compaction yet");
        c.saw(Some("2026-01-21T06:00:00Z"));
        c.compacted();
        c.saw(Some("2026-01-21T06:00:10Z"));
        assert_eq!(c.holds(30.0), Some(10.0));
        c.saw(Some("2026-01-21T06:00:05Z")); // an earlier stamp does not move the clock back
        c.saw(None);
        assert_eq!(c.holds(30.0), Some(10.0));
        c.saw(Some("2026-01-21T06:00:30Z"));
        assert_eq!(c.holds(30.0), None, "30 s later it may compact again");
        let mut no_clock = Cooldown::default();
        no_clock.compacted();
        no_clock.saw(None);
        assert_eq!(no_clock.holds(30.0), None);
    }
}
