//! Per-provider throughput limits: a concurrency cap (semaphore) and requests-per-minute and
//! tokens-per-minute token buckets, awaited before every HTTP attempt.
//!
//! Buckets start full (a burst of one minute's allowance) and refill continuously. A request's
//! tokens are charged up front from an estimate ([`super::ChatRequest::estimated_tokens`]) and
//! corrected with the real usage afterwards, so the bucket may go negative and later requests
//! wait for the overdraft. (Hand-written instead of `governor`: weighted, after-the-fact
//! corrections are not something governor's GCRA cells support.)

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// A continuously refilling allowance of `per_minute` units.
#[derive(Debug)]
pub struct TokenBucket {
    per_minute: f64,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    available: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn per_minute(per_minute: u64) -> Self {
        let per_minute = per_minute.max(1) as f64;
        TokenBucket {
            per_minute,
            state: Mutex::new(BucketState {
                available: per_minute,
                last: Instant::now(),
            }),
        }
    }

    fn refill(&self, s: &mut BucketState) {
        let now = Instant::now();
        let elapsed = now.duration_since(s.last).as_secs_f64();
        s.available = (s.available + elapsed * self.per_minute / 60.0).min(self.per_minute);
        s.last = now;
    }

    /// Waits until `n` units can be taken (a request larger than the whole allowance waits for
    /// a full bucket and then overdraws it), then takes them.
    pub async fn take(&self, n: u64) {
        let n = n as f64;
        let need = n.min(self.per_minute);
        loop {
            let wait = {
                let mut s = self.state.lock().await;
                self.refill(&mut s);
                if s.available >= need {
                    s.available -= n;
                    return;
                }
                (need - s.available) * 60.0 / self.per_minute
            };
            let wait = Duration::try_from_secs_f64(wait.max(0.001)).unwrap_or(Duration::MAX);
            tokio::time::sleep(wait).await;
        }
    }

    /// Corrects an earlier charge: positive `delta` takes more units, negative gives back.
    pub async fn adjust(&self, delta: i64) {
        let mut s = self.state.lock().await;
        self.refill(&mut s);
        s.available = (s.available - delta as f64).min(self.per_minute);
    }
}

/// Concurrency, requests-per-minute and tokens-per-minute limits of one provider.
#[derive(Debug, Clone)]
pub struct Limits {
    concurrency: Arc<Semaphore>,
    rpm: Option<Arc<TokenBucket>>,
    tpm: Option<Arc<TokenBucket>>,
}

/// Held while a request is in flight; dropping it frees the concurrency slot.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
}

impl Limits {
    /// `concurrency` ≥ 1 simultaneous requests; `rpm`/`tpm` `None` = unlimited.
    pub fn new(concurrency: usize, rpm: Option<u64>, tpm: Option<u64>) -> Self {
        Limits {
            concurrency: Arc::new(Semaphore::new(concurrency.max(1))),
            rpm: rpm.map(|r| Arc::new(TokenBucket::per_minute(r))),
            tpm: tpm.map(|t| Arc::new(TokenBucket::per_minute(t))),
        }
    }

    pub fn unlimited() -> Self {
        Self::new(Semaphore::MAX_PERMITS, None, None)
    }

    /// Waits for the rate limits (one request, `estimated_tokens` tokens) and a concurrency slot.
    pub async fn acquire(&self, estimated_tokens: u64) -> Slot {
        if let Some(b) = &self.rpm {
            b.take(1).await;
        }
        if let Some(b) = &self.tpm {
            b.take(estimated_tokens).await;
        }
        let permit = Arc::clone(&self.concurrency)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        Slot { _permit: permit }
    }

    /// Charges the difference between the real tokens of a call and its estimate.
    pub async fn settle(&self, estimated_tokens: u64, actual_tokens: u64) {
        if let Some(b) = &self.tpm {
            b.adjust(actual_tokens as i64 - estimated_tokens as i64)
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rpm_allows_a_burst_then_paces() {
        let limits = Limits::new(10, Some(600), None); // 10 requests/second after the burst
        let start = Instant::now();
        for _ in 0..600 {
            drop(limits.acquire(0).await);
        }
        assert!(
            start.elapsed() < Duration::from_millis(500),
            "the burst is immediate"
        );
        let t = Instant::now();
        drop(limits.acquire(0).await);
        drop(limits.acquire(0).await);
        let e = t.elapsed();
        assert!(
            e >= Duration::from_millis(150),
            "two more requests wait ~200 ms: {e:?}"
        );
        assert!(e < Duration::from_secs(2), "{e:?}");
    }

    #[tokio::test]
    async fn tpm_charges_estimates_and_the_overdraft() {
        let limits = Limits::new(10, None, Some(6000)); // 100 tokens/second
        drop(limits.acquire(5000).await);
        // The call really used 6000: the bucket is now empty.
        limits.settle(5000, 6000).await;
        let t = Instant::now();
        drop(limits.acquire(30).await); // 30 tokens at 100/s
        let e = t.elapsed();
        assert!(e >= Duration::from_millis(280), "{e:?}");
        assert!(e < Duration::from_secs(2), "{e:?}");
        // An estimate that was too high is given back: no wait.
        drop(limits.acquire(0).await);
        limits.settle(3000, 0).await;
        let t = Instant::now();
        drop(limits.acquire(2000).await);
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
    }

    #[tokio::test]
    async fn concurrency_slots_are_exclusive() {
        let limits = Limits::new(2, None, None);
        let a = limits.acquire(0).await;
        let _b = limits.acquire(0).await;
        let third = tokio::time::timeout(Duration::from_millis(50), limits.acquire(0)).await;
        assert!(third.is_err(), "a third slot must wait");
        drop(a);
        let third = tokio::time::timeout(Duration::from_millis(50), limits.acquire(0)).await;
        assert!(third.is_ok());
    }
}
