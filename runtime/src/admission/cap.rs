//! [`RejectCap`]: at most a fraction of a route's requests in any 10 s are
//! refused by the deadline check (A1).
//!
//! The 10 s are ten buckets of one second, so "any 10 s" is the current
//! second and the nine before it: the cap holds to within one second's
//! worth of requests.

use std::time::Duration;

use tokio::time::Instant;

const BUCKETS: usize = 10;

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    requests: u64,
    refused: u64,
}

/// The requests and refusals of the last ten seconds.
#[derive(Debug)]
pub(crate) struct RejectCap {
    max_fraction: f64,
    buckets: [Bucket; BUCKETS],
    /// Start of the newest bucket.
    current: Option<Instant>,
    newest: usize,
}

impl RejectCap {
    pub(crate) fn new(max_fraction: f64) -> Self {
        Self {
            max_fraction,
            buckets: [Bucket::default(); BUCKETS],
            current: None,
            newest: 0,
        }
    }

    /// Counts one request at `now`; returns whether it may be refused
    /// without the refusals passing the cap, and counts it refused if so.
    pub(crate) fn try_refuse(&mut self, now: Instant) -> bool {
        self.count(now);
        let (requests, refused) = self
            .buckets
            .iter()
            .fold((0, 0), |(r, f), b| (r + b.requests, f + b.refused));
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        let allowed = (refused + 1) as f64 <= self.max_fraction * requests as f64;
        if allowed {
            self.buckets[self.newest].refused += 1;
        }
        allowed
    }

    /// Counts one request at `now` that is not a candidate for refusal.
    pub(crate) fn admit(&mut self, now: Instant) {
        self.count(now);
    }

    fn count(&mut self, now: Instant) {
        self.rotate(now);
        self.buckets[self.newest].requests += 1;
    }

    fn rotate(&mut self, now: Instant) {
        let Some(current) = self.current else {
            self.current = Some(now);
            return;
        };
        // Buckets are one second each.
        let whole = now.saturating_duration_since(current).as_secs();
        for _ in 0..whole.min(BUCKETS as u64) {
            self.newest = (self.newest + 1) % BUCKETS;
            self.buckets[self.newest] = Bucket::default();
        }
        self.current = Some(current + Duration::from_secs(whole));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::RejectCap;

    #[test]
    fn at_most_the_fraction_is_refused() {
        let now = Instant::now();
        let mut cap = RejectCap::new(0.2);
        let refused = (0..1000).filter(|_| cap.try_refuse(now)).count();
        assert_eq!(refused, 200);
    }

    #[test]
    fn admitted_requests_make_room_for_refusals() {
        let now = Instant::now();
        let mut cap = RejectCap::new(0.5);
        assert!(!cap.try_refuse(now));
        cap.admit(now);
        cap.admit(now);
        assert!(cap.try_refuse(now));
    }

    #[test]
    fn refusals_older_than_ten_seconds_stop_counting() {
        let start = Instant::now();
        let mut cap = RejectCap::new(0.2);
        for _ in 0..100 {
            cap.try_refuse(start);
        }
        // Ten seconds on, only the new second's requests count.
        let later = start + Duration::from_secs(10);
        let refused = (0..10).filter(|_| cap.try_refuse(later)).count();
        assert_eq!(refused, 2);
    }
}
