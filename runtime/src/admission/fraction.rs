//! [`FractionCap`]: at most a fraction of some requests in any 10 s take
//! a special path: the refusals of the deadline check (A1, at most
//! `max_reject_fraction` of a route's requests) and the hedges of the
//! client (A3, at most `max_extra_load` of a host's requests).
//!
//! The 10 s are ten buckets of one second, so "any 10 s" is the current
//! second and the nine before it: the cap holds to within one second's
//! worth of requests.

use std::time::Duration;

use tokio::time::Instant;

const BUCKETS: usize = 10;
const SECOND: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    requests: u64,
    taken: u64,
}

/// The requests of the last ten seconds, and how many of them took the
/// special path.
#[derive(Debug)]
pub(crate) struct FractionCap {
    max_fraction: f64,
    buckets: [Bucket; BUCKETS],
    /// Start of the newest bucket.
    current: Option<Instant>,
    /// Start of the bucket after the newest: until then, a request counts
    /// in the newest without the clock arithmetic of a rotation.
    next: Option<Instant>,
    newest: usize,
}

impl FractionCap {
    pub(crate) fn new(max_fraction: f64) -> Self {
        Self {
            max_fraction,
            buckets: [Bucket::default(); BUCKETS],
            current: None,
            next: None,
            newest: 0,
        }
    }

    /// Counts one request at `now`.
    pub(crate) fn count(&mut self, now: Instant) {
        self.rotate(now);
        self.buckets[self.newest].requests += 1;
    }

    /// Whether one more of the counted requests may take the path without
    /// passing the cap: if so, it is counted as taken, in the second that
    /// starts at the instant returned (for [`give_back`]).
    ///
    /// [`give_back`]: Self::give_back
    pub(crate) fn try_take(&mut self, now: Instant) -> Option<Instant> {
        self.rotate(now);
        let (requests, taken) = self
            .buckets
            .iter()
            .fold((0, 0), |(r, t), b| (r + b.requests, t + b.taken));
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        let fits = (taken + 1) as f64 <= self.max_fraction * requests as f64;
        if !fits {
            return None;
        }
        self.buckets[self.newest].taken += 1;
        self.current
    }

    /// Gives back a place taken in the second that starts at `taken_in`
    /// (what [`try_take`] returned) by a request that did not use it after
    /// all, if that second is still among the ten.
    ///
    /// [`try_take`]: Self::try_take
    #[cfg(feature = "client")]
    pub(crate) fn give_back(&mut self, taken_in: Instant, now: Instant) {
        self.rotate(now);
        let Some(current) = self.current else { return };
        // Whole seconds back from the newest, which starts at `current`.
        let back = current.saturating_duration_since(taken_in).as_secs();
        let Some(back) = usize::try_from(back).ok().filter(|&back| back < BUCKETS) else {
            return; // its second is no longer counted
        };
        let bucket = &mut self.buckets[(self.newest + BUCKETS - back) % BUCKETS];
        bucket.taken = bucket.taken.saturating_sub(1);
    }

    fn rotate(&mut self, now: Instant) {
        if self.next.is_some_and(|next| now < next) {
            return;
        }
        let Some(current) = self.current else {
            self.start_newest_at(now);
            return;
        };
        // Buckets are one second each.
        let whole = now.saturating_duration_since(current).as_secs();
        for _ in 0..whole.min(BUCKETS as u64) {
            self.newest = (self.newest + 1) % BUCKETS;
            self.buckets[self.newest] = Bucket::default();
        }
        self.start_newest_at(current + Duration::from_secs(whole));
    }

    fn start_newest_at(&mut self, start: Instant) {
        self.current = Some(start);
        self.next = start.checked_add(SECOND);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::FractionCap;

    fn refused(cap: &mut FractionCap, now: Instant, requests: usize) -> usize {
        (0..requests)
            .filter(|_| {
                cap.count(now);
                cap.try_take(now).is_some()
            })
            .count()
    }

    #[test]
    fn at_most_the_fraction_is_taken() {
        let now = Instant::now();
        let mut cap = FractionCap::new(0.2);
        assert_eq!(refused(&mut cap, now, 1000), 200);
    }

    #[test]
    fn requests_that_take_nothing_make_room() {
        let now = Instant::now();
        let mut cap = FractionCap::new(0.5);
        cap.count(now);
        assert!(cap.try_take(now).is_none());
        cap.count(now);
        assert!(cap.try_take(now).is_some());
    }

    #[test]
    fn requests_older_than_ten_seconds_stop_counting() {
        let start = Instant::now();
        let counted = || {
            let mut cap = FractionCap::new(0.2);
            for _ in 0..100 {
                cap.count(start);
            }
            cap
        };
        // Nine seconds on, the hundred still count: all ten may take it.
        let nine = start + Duration::from_secs(9);
        assert_eq!(refused(&mut counted(), nine, 10), 10);
        // Ten seconds on, only the new second's requests count.
        let ten = start + Duration::from_secs(10);
        assert_eq!(refused(&mut counted(), ten, 10), 2);
    }

    #[test]
    fn a_request_at_the_start_of_a_second_counts_in_that_second() {
        let start = Instant::now();
        let mut cap = FractionCap::new(0.5);
        cap.count(start);
        cap.count(start);
        let one = start + Duration::from_secs(1);
        cap.count(one);
        cap.count(one);
        // Ten seconds on, the first second's two have left; the two of the
        // second one still count: one place in two.
        let ten = start + Duration::from_secs(10);
        assert!(cap.try_take(ten).is_some());
        assert!(cap.try_take(ten).is_none(), "one of two requests");
    }

    #[cfg(feature = "client")]
    #[test]
    fn a_place_given_back_later_leaves_the_second_it_was_taken_in() {
        let start = Instant::now();
        let mut cap = FractionCap::new(0.5);
        cap.count(start);
        cap.count(start);
        let taken = start + Duration::from_millis(300);
        let taken_in = cap.try_take(taken).expect("one of two requests");
        assert_eq!(taken_in, start, "the second the first count began");
        assert!(cap.try_take(taken).is_none(), "one of two requests");
        // Given back in the next second, the place leaves the first one.
        let later = start + Duration::from_millis(1500);
        cap.give_back(taken_in, later);
        assert!(cap.try_take(later).is_some());
    }

    #[cfg(feature = "client")]
    #[test]
    fn a_place_whose_second_is_gone_gives_back_nothing() {
        let start = Instant::now();
        let nine = start + Duration::from_secs(9);
        let ten = start + Duration::from_millis(10_500);
        let mut cap = FractionCap::new(0.5);
        let mut taken_in = Vec::new();
        for at in [start, nine, ten] {
            for _ in 0..4 {
                cap.count(at);
            }
            taken_in.push(cap.try_take(at).expect("one of four requests"));
        }
        // The first second has left the ten, and its place with it: giving
        // it back takes none of the ninth's or the tenth's. Eight requests
        // counted, two places taken: two more fit, not three.
        cap.give_back(taken_in[0], ten);
        assert!(cap.try_take(ten).is_some());
        assert!(cap.try_take(ten).is_some());
        assert!(cap.try_take(ten).is_none(), "four of eight requests");
    }
}
