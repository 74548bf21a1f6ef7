//! Retry policy: which failures are retried, exponential backoff with jitter, and the wait the
//! server asks for honoured as a lower bound: `retry-after-ms`, `Retry-After` (seconds or HTTP
//! date), and on a 429 the rate-limit reset headers (OpenAI's `x-ratelimit-reset-*` durations
//! such as `1m30s`, Anthropic's `anthropic-ratelimit-*-reset` RFC 3339 times); see
//! [`server_wait`].
//!
//! Written out rather than taken from `backon` because the delay depends on the error (a
//! `Retry-After` replaces the computed backoff) and on a cap that turns an over-long server wait
//! into an immediate failure; that is a few lines here and awkward there.

use std::future::Future;
use std::time::{Duration, SystemTime};

use super::ProviderError;

/// How failed calls are retried. `max_retries = 0` disables retries.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Attempts after the first one.
    pub max_retries: u32,
    /// Backoff before the first retry; doubles each retry.
    pub initial_delay: Duration,
    /// Cap on the computed backoff, and on the total time one call waits out rate limits. A
    /// server wait longer than this is not waited for: the call fails with the rate-limit/server
    /// error (which carries the server's wait).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Default::default()
        }
    }

    /// The wait before retry number `retry` (0-based) after `error`, or `None` to give up;
    /// `waited` is the time this call has already spent waiting out rate limits (429s).
    ///
    /// - not retryable → `None`;
    /// - retries exhausted → `None`, except for a 429: rate limits are waited out for as long as
    ///   the total wait stays within `max_delay` (a per-minute limit takes up to a minute to
    ///   clear, far longer than the retry count's backoff); `max_retries = 0` still disables
    ///   every retry;
    /// - the server asked for a wait → that wait plus up to 10% jitter, or `None` when it
    ///   exceeds `max_delay` (or, for a 429, what is left of it);
    /// - otherwise `initial_delay × 2^retry`, capped at `max_delay`, with "equal jitter": a
    ///   uniform draw in `[d/2, d]` so concurrent clients spread out but never retry at once.
    pub fn delay(&self, retry: u32, waited: Duration, error: &ProviderError) -> Option<Duration> {
        if self.max_retries == 0 || !error.is_retryable() {
            return None;
        }
        let rate_limited = matches!(error, ProviderError::RateLimited { .. });
        let budget = if rate_limited {
            self.max_delay.saturating_sub(waited)
        } else {
            self.max_delay
        };
        if retry >= self.max_retries && (!rate_limited || budget.is_zero()) {
            return None;
        }
        if let Some(wait) = error.retry_after() {
            if wait > budget {
                return None;
            }
            return Some(wait + wait.mul_f64(fastrand::f64() * 0.1));
        }
        let factor = 2u32.saturating_pow(retry.min(30));
        let d = self
            .initial_delay
            .saturating_mul(factor)
            .min(self.max_delay);
        let d = d / 2 + (d / 2).mul_f64(fastrand::f64());
        if rate_limited && retry >= self.max_retries && d > budget {
            return None;
        }
        Some(d)
    }

    /// Runs `attempt` until it succeeds or [`RetryPolicy::delay`] says stop; returns the value
    /// and the number of attempts made.
    pub async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<(T, u32), ProviderError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let mut n = 0u32;
        let mut waited = Duration::ZERO;
        loop {
            match attempt(n).await {
                Ok(v) => return Ok((v, n + 1)),
                Err(e) => match self.delay(n, waited, &e) {
                    Some(wait) => {
                        tokio::time::sleep(wait).await;
                        if matches!(e, ProviderError::RateLimited { .. }) {
                            waited += wait;
                        }
                        n += 1;
                    }
                    None => return Err(e),
                },
            }
        }
    }
}

/// Seconds a server asked for as a wait: `None` unless finite and ≥ 0; a wait too long for a
/// [`Duration`] (`Retry-After: 1e30`) is [`Duration::MAX`], which every cap refuses (the call
/// fails with the server's error rather than waiting).
fn server_secs(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0)
        .then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

/// Parses a `Retry-After` header value: delay-seconds (integer; a decimal is accepted too) or an
/// HTTP date, which becomes the time left from `now` (zero if already past). `None` if neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = v.parse::<f64>() {
        return server_secs(secs);
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses `retry-after-ms`: milliseconds, integer or decimal.
pub fn parse_retry_after_ms(value: &str) -> Option<Duration> {
    let ms: f64 = value.trim().parse().ok()?;
    server_secs(ms / 1000.0)
}

/// Parses a Go-style duration as OpenAI's `x-ratelimit-reset-requests`/`-tokens` send it:
/// `1s`, `6m0s`, `1m30s`, `250ms`, `1h2m3.5s`, `20us` (a bare number is seconds). `None` for
/// anything else.
pub fn parse_go_duration(value: &str) -> Option<Duration> {
    let v = value.trim();
    if v.is_empty() {
        return None;
    }
    if let Ok(secs) = v.parse::<f64>() {
        return server_secs(secs);
    }
    let mut total = 0.0f64;
    let mut rest = v;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    server_secs(total)
}

/// Time from `now` until an RFC 3339 timestamp (Anthropic's `anthropic-ratelimit-*-reset`,
/// `Z` or a numeric offset); zero when it is past.
pub fn parse_rfc3339_wait(value: &str, now: SystemTime) -> Option<Duration> {
    let at = crate::engine::cooldown::rfc3339_secs(value)?;
    let now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_secs_f64();
    let left = at - now;
    if left > 0.0 {
        server_secs(left)
    } else {
        Some(Duration::ZERO)
    }
}

/// The wait a response asks for before the request is sent again, from its headers, first
/// match wins:
///
/// 1. `retry-after-ms` (OpenAI, Anthropic SDK convention);
/// 2. `Retry-After` (seconds or HTTP date);
/// 3. on a 429 only, the reset time of the exhausted limit: OpenAI's
///    `x-ratelimit-reset-{requests,tokens}` (Go durations) and Anthropic's
///    `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset` (RFC 3339). A
///    limit whose `…-remaining` is `0` is the one that was hit: the longest such reset is the
///    wait; when none says `0`, the shortest reset given (the soonest anything frees up).
///
/// `header` looks a header up by lower-case name.
pub fn server_wait<'h>(
    header: impl Fn(&str) -> Option<&'h str>,
    status: u16,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(d) = header("retry-after-ms").and_then(parse_retry_after_ms) {
        return Some(d);
    }
    if let Some(d) = header("retry-after").and_then(|v| parse_retry_after(v, now)) {
        return Some(d);
    }
    if status != 429 {
        return None;
    }
    let mut exhausted: Option<Duration> = None;
    let mut soonest: Option<Duration> = None;
    let openai = ["requests", "tokens"].map(|l| {
        (
            format!("x-ratelimit-remaining-{l}"),
            format!("x-ratelimit-reset-{l}"),
            false,
        )
    });
    let anthropic = ["requests", "tokens", "input-tokens", "output-tokens"].map(|l| {
        (
            format!("anthropic-ratelimit-{l}-remaining"),
            format!("anthropic-ratelimit-{l}-reset"),
            true,
        )
    });
    for (remaining, reset, rfc3339) in openai.iter().chain(anthropic.iter()) {
        let Some(v) = header(reset) else { continue };
        let wait = if *rfc3339 {
            parse_rfc3339_wait(v, now)
        } else {
            parse_go_duration(v)
        };
        let Some(wait) = wait else { continue };
        if header(remaining).is_some_and(|r| r.trim() == "0") {
            exhausted = Some(exhausted.map_or(wait, |e| e.max(wait)));
        }
        soonest = Some(soonest.map_or(wait, |s| s.min(wait)));
    }
    exhausted.or(soonest)
}

/// `x-should-retry: true|false`, the server's own verdict on retrying (OpenAI, Anthropic).
pub fn should_retry<'h>(header: impl Fn(&str) -> Option<&'h str>) -> Option<bool> {
    match header("x-should-retry")?.trim() {
        v if v.eq_ignore_ascii_case("true") => Some(true),
        v if v.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn server() -> ProviderError {
        ProviderError::Server {
            status: 503,
            retry_after: None,
            message: String::new(),
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after(" 0.5 ", now),
            Some(Duration::from_millis(500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(3));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(3)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        let p = RetryPolicy {
            max_retries: 10,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        for retry in 0..10 {
            let full = Duration::from_millis(100 * 2u64.pow(retry)).min(Duration::from_secs(1));
            let d = p.delay(retry, Duration::ZERO, &server()).unwrap();
            assert!(
                d >= full / 2 && d <= full,
                "retry {retry}: {d:?} not in [{full:?}/2, {full:?}]"
            );
        }
        assert_eq!(
            p.delay(10, Duration::ZERO, &server()),
            None,
            "retries exhausted"
        );
    }

    #[test]
    fn retry_after_is_a_lower_bound_and_capped() {
        let p = RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        };
        let e = ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(2)),
            message: String::new(),
        };
        let d = p.delay(0, Duration::ZERO, &e).unwrap();
        assert!(
            d >= Duration::from_secs(2) && d <= Duration::from_millis(2200),
            "{d:?}"
        );
        let too_long = ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(6)),
            message: String::new(),
        };
        assert_eq!(p.delay(0, Duration::ZERO, &too_long), None);
    }

    #[test]
    fn non_retryable_and_disabled() {
        let auth = ProviderError::Auth {
            status: 401,
            message: String::new(),
        };
        assert_eq!(RetryPolicy::default().delay(0, Duration::ZERO, &auth), None);
        assert_eq!(
            RetryPolicy::none().delay(0, Duration::ZERO, &server()),
            None
        );
    }

    #[tokio::test]
    async fn run_counts_attempts_and_stops() {
        let p = RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        };
        let calls = AtomicU32::new(0);
        let (v, attempts) = p
            .run(|n| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n < 2 {
                        Err(server())
                    } else {
                        Ok(n)
                    }
                }
            })
            .await
            .unwrap();
        assert_eq!((v, attempts), (2, 3));
        calls.store(0, Ordering::SeqCst);
        let r: Result<(u32, u32), _> = p
            .run(|_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err(server()) }
            })
            .await;
        assert!(matches!(r, Err(ProviderError::Server { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), 4, "1 try + 3 retries");
    }

    #[test]
    fn rate_limit_headers_as_the_apis_send_them() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let h = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
        };
        assert_eq!(
            server_wait(h(&[("retry-after-ms", "3000")]), 429, now),
            Some(Duration::from_secs(3))
        );
        // retry-after-ms wins over Retry-After.
        assert_eq!(
            server_wait(
                h(&[("retry-after", "9"), ("retry-after-ms", "250.5")]),
                503,
                now
            ),
            Some(Duration::from_micros(250_500))
        );
        // OpenAI: the exhausted limit's reset, not the other one.
        let openai = h(&[
            ("x-ratelimit-remaining-requests", "499"),
            ("x-ratelimit-reset-requests", "120ms"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "1m30s"),
        ]);
        assert_eq!(server_wait(openai, 429, now), Some(Duration::from_secs(90)));
        assert_eq!(
            server_wait(openai, 500, now),
            None,
            "reset headers only on 429"
        );
        // None exhausted: the soonest reset.
        let soon = h(&[
            ("x-ratelimit-reset-requests", "2s"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(server_wait(soon, 429, now), Some(Duration::from_secs(2)));
        // Anthropic: RFC 3339, with Z or an offset.
        let anthropic = h(&[
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2023-11-14T22:13:40Z"),
            ("anthropic-ratelimit-tokens-remaining", "10"),
            ("anthropic-ratelimit-tokens-reset", "2023-11-14T22:13:21Z"),
        ]);
        assert_eq!(
            server_wait(anthropic, 429, now),
            Some(Duration::from_secs(20))
        );
        let offset = h(&[(
            "anthropic-ratelimit-input-tokens-reset",
            "2023-11-14T23:13:25+01:00",
        )]);
        assert_eq!(server_wait(offset, 429, now), Some(Duration::from_secs(5)));
        assert_eq!(server_wait(h(&[]), 429, now), None);
        assert_eq!(should_retry(h(&[("x-should-retry", "false")])), Some(false));
        assert_eq!(should_retry(h(&[("x-should-retry", "True")])), Some(true));
        assert_eq!(should_retry(h(&[])), None);
    }

    /// A server's wait too long for a `Duration` (`Retry-After: 1e30`) panicked where it became
    /// one; it is the longest wait, which every cap refuses, so the call fails instead.
    #[test]
    fn server_waits_too_long_for_a_duration_are_refused_by_the_cap() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("1e30", now), Some(Duration::MAX));
        assert_eq!(parse_retry_after_ms("1e30"), Some(Duration::MAX));
        assert_eq!(parse_go_duration("1e30"), Some(Duration::MAX));
        assert_eq!(
            parse_go_duration("99999999999999999999h"),
            Some(Duration::MAX)
        );
        assert_eq!(parse_retry_after("inf", now), None);
        assert_eq!(parse_retry_after_ms("NaN"), None);
        let h = |n: &str| (n == "retry-after").then_some("1e30");
        let wait = server_wait(h, 503, now);
        assert_eq!(wait, Some(Duration::MAX));
        let e = ProviderError::Server {
            status: 503,
            retry_after: wait,
            message: String::new(),
        };
        assert_eq!(RetryPolicy::default().delay(0, Duration::ZERO, &e), None);
    }

    #[test]
    fn go_durations() {
        for (v, ms) in [
            ("1s", 1000),
            ("6m0s", 360_000),
            ("1m30s", 90_000),
            ("250ms", 250),
            ("1h2m3.5s", 3_723_500),
            ("0s", 0),
            ("0.5", 500),
        ] {
            assert_eq!(parse_go_duration(v), Some(Duration::from_millis(ms)), "{v}");
        }
        for bad in ["", "m", "5 minutes", "1x", "-1s"] {
            assert_eq!(parse_go_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn rate_limits_are_waited_out_within_the_cap_beyond_the_retry_count() {
        let p = RetryPolicy {
            max_retries: 2,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        };
        let limited = |s| ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(s)),
            message: String::new(),
        };
        // Retry 5 of 2, 40 s already waited: a 15 s ask still fits in 60 s …
        assert!(p.delay(5, Duration::from_secs(40), &limited(15)).is_some());
        // … a 25 s one does not.
        assert_eq!(p.delay(5, Duration::from_secs(40), &limited(25)), None);
        // Server errors stop at the retry count.
        assert_eq!(p.delay(2, Duration::ZERO, &server()), None);
        // max_retries = 0 disables every retry, 429s included.
        assert_eq!(
            RetryPolicy::none().delay(0, Duration::ZERO, &limited(1)),
            None
        );
        // 408/409 are retried.
        let t = ProviderError::Transient {
            status: 409,
            retry_after: None,
            message: String::new(),
        };
        assert!(p.delay(0, Duration::ZERO, &t).is_some());
    }
}
