//! The rolling window of recent calls: a ring of time buckets.

use std::time::Duration;

use tokio::time::Instant;

use crate::config::MOST_WINDOW_BUCKETS;

/// The calls a [`CircuitBreaker`](super::CircuitBreaker) counts in its
/// rolling window right now.
///
/// A call is counted once in `calls` and, independently, in `failures` and
/// `slow`: a slow success is in `calls` and `slow`, a slow failure in all
/// three. Cancelled calls that finished before the slow-call threshold are in
/// none of them.
///
/// # Examples
///
/// ```
/// use timebox::breaker::{BreakerConfig, CircuitBreaker};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     let breaker = CircuitBreaker::new(&BreakerConfig::default());
///     breaker.try_acquire().unwrap().success();
///     breaker.try_acquire().unwrap().failure();
///     let counts = breaker.counts();
///     assert_eq!((counts.calls, counts.failures, counts.slow), (2, 1, 0));
/// }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CallCounts {
    /// Calls with an outcome in the window.
    pub calls: u64,
    /// Of those, the ones that failed.
    pub failures: u64,
    /// Of those, the ones that ran past the slow-call threshold.
    pub slow: u64,
}

impl CallCounts {
    fn add(&mut self, other: Self) {
        self.calls = self.calls.saturating_add(other.calls);
        self.failures = self.failures.saturating_add(other.failures);
        self.slow = self.slow.saturating_add(other.slow);
    }
}

/// One counted call: whether it failed and whether it was slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Call {
    pub(super) failure: bool,
    pub(super) slow: bool,
}

/// `window_buckets` buckets of `window / window_buckets` each, on tokio's
/// clock.
///
/// Time since `origin` is cut into numbered periods of one bucket length; the
/// bucket for period `p` is slot `p % len`. A slot still holding an older
/// period is cleared when it is reused, and only the last `len` periods
/// (the current one included) are summed, so an outcome leaves the window
/// between `window - bucket` and `window` after it was recorded, and at the
/// latest exactly `window` after.
#[derive(Debug)]
pub(super) struct Window {
    origin: Instant,
    bucket_len: Duration,
    buckets: Box<[Bucket]>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    period: u64,
    counts: CallCounts,
}

impl Window {
    /// A window of `window` split into `buckets` (at least one bucket, of at
    /// least one nanosecond, whatever the arguments).
    pub(super) fn new(window: Duration, buckets: u32, now: Instant) -> Self {
        // More than `Config::validate` allows would only cost memory, per
        // host: cut to the most it allows.
        let buckets = buckets.clamp(1, MOST_WINDOW_BUCKETS);
        let bucket_len = (window / buckets).max(Duration::from_nanos(1));
        Self {
            origin: now,
            bucket_len,
            buckets: vec![Bucket::default(); buckets as usize].into_boxed_slice(),
        }
    }

    /// Forgets every call.
    pub(super) fn clear(&mut self) {
        self.buckets.fill(Bucket::default());
    }

    /// Counts `call` at `now`.
    pub(super) fn record(&mut self, now: Instant, call: Call) {
        let period = self.period(now);
        let slot = self.slot(period);
        let bucket = &mut self.buckets[slot];
        if bucket.period != period {
            *bucket = Bucket {
                period,
                counts: CallCounts::default(),
            };
        }
        bucket.counts.add(CallCounts {
            calls: 1,
            failures: u64::from(call.failure),
            slow: u64::from(call.slow),
        });
    }

    /// The calls in the window that ends at `now`.
    pub(super) fn counts(&self, now: Instant) -> CallCounts {
        let period = self.period(now);
        let len = self.buckets.len() as u64;
        let mut total = CallCounts::default();
        for bucket in &self.buckets {
            if period.saturating_sub(bucket.period) < len {
                total.add(bucket.counts);
            }
        }
        total
    }

    fn period(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.origin);
        let period = since.as_nanos() / self.bucket_len.as_nanos();
        u64::try_from(period).unwrap_or(u64::MAX)
    }

    fn slot(&self, period: u64) -> usize {
        // The remainder is below `buckets.len()`, which is a `usize`.
        (period % self.buckets.len() as u64) as usize
    }
}
