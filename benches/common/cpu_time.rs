//! A criterion measurement on this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) instead of wall
//! time: on a shared, loaded machine wall times mostly measure waiting for a core, so ratios
//! between implementations measured at different moments drift with the load. CPU time is only
//! right for code that runs on the calling thread (the one-core cases).
//!
//! Shared by benches with `#[path = "common/cpu_time.rs"] mod cpu_time;`.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use std::time::Duration;

/// Thread CPU time, reported with criterion's duration formatting.
pub struct ThreadCpuTime;

fn now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        now()
    }
    fn end(&self, start: Duration) -> Duration {
        now().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        // Same unit (nanoseconds) as wall time, so the same formatting.
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}
