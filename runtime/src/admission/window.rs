//! [`LatencyWindow`]: the recent latencies of one route or host, and their
//! median and p95 once there are enough of them.
//!
//! One mechanism for both estimates of DESIGN §14: the route's median
//! service time that the deadline check compares with the time left (A1),
//! and the host's median and p95 that decide a hedge (A3).

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// How far back samples count.
pub(crate) const WINDOW: Duration = Duration::from_secs(30);

/// Samples needed in the window before it gives an estimate: fewer say
/// too little about the tail.
pub(crate) const MIN_SAMPLES: usize = 100;

/// Most samples kept: at a higher rate the window holds the newest
/// `MAX_SAMPLES` of the last 30 s, which still estimates a median and a p95
/// well, and keeps the work of an estimate bounded.
const MAX_SAMPLES: usize = 512;

/// The estimate is computed again after this many new samples, but no
/// more often than every [`REESTIMATE_AFTER`]: between two computations it
/// is read from the cache, so a request pays for no selection (one costs a
/// few microseconds over 512 samples). Only after a whole window's worth of
/// new samples is it computed before its time is due: a clock that stands
/// still (a paused one, a burst in one instant) still sees the estimate
/// follow, and at a high rate there is one selection per 512 requests at
/// most.
const REESTIMATE_EVERY: usize = 16;
const REESTIMATE_AFTER: Duration = Duration::from_millis(10);

/// The median and p95 of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Estimate {
    pub(crate) median: Duration,
    pub(crate) p95: Duration,
}

/// Latency samples of the last 30 s, oldest first.
#[derive(Debug)]
pub(crate) struct LatencyWindow {
    samples: VecDeque<(Instant, Duration)>,
    estimate: Option<Estimate>,
    /// Samples added or expired since `estimate` was computed.
    changed: usize,
    /// When `estimate` was computed.
    computed_at: Option<Instant>,
    /// The latencies in whole nanoseconds, for the selections: a `u64`
    /// compares and moves at half the cost of a `Duration`.
    scratch: Vec<u64>,
}

impl LatencyWindow {
    pub(crate) fn new() -> Self {
        Self {
            samples: VecDeque::with_capacity(MAX_SAMPLES),
            estimate: None,
            changed: 0,
            computed_at: None,
            scratch: Vec::new(),
        }
    }

    /// Adds the latency of one call that ended at `now`.
    pub(crate) fn record(&mut self, now: Instant, latency: Duration) {
        if self.samples.len() == MAX_SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back((now, latency));
        self.changed += 1;
    }

    /// The median and p95 of the samples of the last 30 s; `None` while
    /// there are fewer than [`MIN_SAMPLES`].
    pub(crate) fn estimate(&mut self, now: Instant) -> Option<Estimate> {
        self.expire(now);
        if self.samples.len() < MIN_SAMPLES {
            self.estimate = None;
            return None;
        }
        // The clock arithmetic only once enough samples changed.
        let due = || {
            self.computed_at
                .is_none_or(|at| now.saturating_duration_since(at) >= REESTIMATE_AFTER)
        };
        let stale = (self.changed >= REESTIMATE_EVERY && due()) || self.changed >= MAX_SAMPLES;
        if self.estimate.is_none() || stale {
            self.estimate = Some(self.compute());
            self.changed = 0;
            self.computed_at = Some(now);
        }
        self.estimate
    }

    fn expire(&mut self, now: Instant) {
        let Some(oldest) = now.checked_sub(WINDOW) else {
            return;
        };
        while self.samples.front().is_some_and(|&(at, _)| at <= oldest) {
            self.samples.pop_front();
            self.changed += 1;
        }
    }

    fn compute(&mut self) -> Estimate {
        self.scratch.clear();
        self.scratch.extend(
            self.samples
                .iter()
                .map(|&(_, latency)| u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX)),
        );
        let len = self.scratch.len();
        let (_, &mut median, above) = self.scratch.select_nth_unstable(len / 2);
        // The p95 is among the samples above the median: select it there.
        let p95 = match (len * 95 / 100).checked_sub(len / 2 + 1) {
            Some(index) => *above.select_nth_unstable(index).1,
            None => median,
        };
        Estimate {
            median: Duration::from_nanos(median),
            p95: Duration::from_nanos(p95),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{LatencyWindow, MAX_SAMPLES, MIN_SAMPLES, WINDOW};

    const MS: Duration = Duration::from_millis(1);

    fn record_many(window: &mut LatencyWindow, at: Instant, count: usize, latency: Duration) {
        for _ in 0..count {
            window.record(at, latency);
        }
    }

    #[test]
    fn there_is_no_estimate_before_a_hundred_samples() {
        let now = Instant::now();
        let mut window = LatencyWindow::new();
        record_many(&mut window, now, MIN_SAMPLES - 1, 40 * MS);
        assert_eq!(window.estimate(now), None);
        window.record(now, 40 * MS);
        assert_eq!(window.estimate(now).map(|e| e.median), Some(40 * MS));
    }

    #[test]
    fn the_median_and_p95_split_the_samples() {
        let now = Instant::now();
        let mut window = LatencyWindow::new();
        for ms in 1..=200 {
            window.record(now, ms * MS);
        }
        let estimate = window.estimate(now).unwrap();
        assert_eq!(estimate.median, 101 * MS);
        assert_eq!(estimate.p95, 191 * MS);
    }

    #[test]
    fn samples_older_than_the_window_stop_counting() {
        let start = Instant::now();
        let mut window = LatencyWindow::new();
        record_many(&mut window, start, MIN_SAMPLES, 40 * MS);
        assert!(window.estimate(start + WINDOW - MS).is_some());
        assert_eq!(window.estimate(start + WINDOW), None);
    }

    #[test]
    fn the_estimate_follows_new_samples() {
        let now = Instant::now();
        let mut window = LatencyWindow::new();
        record_many(&mut window, now, MIN_SAMPLES, 10 * MS);
        assert_eq!(window.estimate(now).map(|e| e.median), Some(10 * MS));
        record_many(&mut window, now, MAX_SAMPLES, 50 * MS);
        assert_eq!(window.estimate(now).map(|e| e.median), Some(50 * MS));
    }

    #[test]
    fn a_standing_clock_sees_the_estimate_once_the_window_is_new() {
        let now = Instant::now();
        let mut window = LatencyWindow::new();
        record_many(&mut window, now, MAX_SAMPLES, 10 * MS);
        assert_eq!(window.estimate(now).map(|e| e.median), Some(10 * MS));
        record_many(&mut window, now, MAX_SAMPLES - 1, 50 * MS);
        // Not due yet, and not a window's worth of new samples: the cached
        // estimate.
        assert_eq!(window.estimate(now).map(|e| e.median), Some(10 * MS));
        window.record(now, 50 * MS);
        assert_eq!(window.estimate(now).map(|e| e.median), Some(50 * MS));
    }

    #[test]
    fn a_due_estimate_follows_new_samples_short_of_a_window() {
        let start = Instant::now();
        let mut window = LatencyWindow::new();
        record_many(&mut window, start, MAX_SAMPLES, 10 * MS);
        assert!(window.estimate(start).is_some());
        record_many(&mut window, start, MAX_SAMPLES / 2 + 1, 50 * MS);
        assert_eq!(
            window.estimate(start).map(|e| e.median),
            Some(10 * MS),
            "not due before 10 ms"
        );
        let later = start + Duration::from_millis(10);
        assert_eq!(window.estimate(later).map(|e| e.median), Some(50 * MS));
    }
}
