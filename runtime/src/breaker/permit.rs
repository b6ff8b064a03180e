//! [`Permit`]: one admitted call, and the outcome it reports.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use tokio::time::Instant;

use super::shared::Shared;
use super::state::Outcome;

/// Permission for one call through a [`CircuitBreaker`](super::CircuitBreaker),
/// held while the call runs.
///
/// Report how the call went with [`success`](Self::success),
/// [`failure`](Self::failure) or [`record_status`](Self::record_status); each
/// consumes the permit. Dropping it without an outcome (the caller gave up:
/// its deadline passed, its future was dropped, it panicked) is a *cancelled*
/// call: our own impatience must not blame the host, so nothing is counted
/// and a half-open trial slot is freed for another call. The exception is a
/// cancelled call that had already run longer than
/// `slow_call_duration_threshold`: the host *was* slow, so it counts as a slow
/// call (or as a failure, with `cancelled_call_outcome = "failure"`).
///
/// Every permit settles exactly once, whichever way it ends, so half-open
/// slots never leak.
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
///     let permit = breaker.try_acquire().expect("a new breaker is closed");
///     let status = http::StatusCode::BAD_GATEWAY; // what the host answered
///     permit.record_status(status);
///     assert_eq!(breaker.counts().failures, 1);
/// }
/// ```
#[derive(Debug)]
#[must_use = "a permit counts only through `success()` or `failure()`; dropping it is a cancelled call"]
pub struct Permit {
    shared: Arc<Shared>,
    generation: u64,
    started: Instant,
    /// Whether the call's time counts: `false` for a call whose answer
    /// comes only once its work is done (see [`Permit::untimed`]).
    timed: bool,
    settled: bool,
}

impl Permit {
    pub(super) fn new(shared: Arc<Shared>, generation: u64, started: Instant) -> Self {
        Self {
            shared,
            generation,
            started,
            timed: true,
            settled: false,
        }
    }

    /// The permit of a call whose answer comes only once its work is done,
    /// so that its time says nothing of the host's health: it never counts
    /// as slow, however long it runs. Its outcome counts as any other's (a
    /// failure is a failure); cancelled, it counts for nothing.
    #[cfg(feature = "client")]
    pub(crate) fn untimed(mut self) -> Self {
        self.timed = false;
        self
    }

    /// The call succeeded.
    ///
    /// A success that took longer than `slow_call_duration_threshold` is
    /// still a success (it never counts towards the failure ratio) and is
    /// also counted as slow; a slow trial call reopens a half-open breaker.
    pub fn success(mut self) {
        self.settle(Outcome::Success);
    }

    /// The call failed (a 5xx answer, a refused connection, a timeout the
    /// host caused).
    ///
    /// A failure that took longer than `slow_call_duration_threshold` is also
    /// counted as slow.
    pub fn failure(mut self) {
        self.settle(Outcome::Failure);
    }

    /// Records the host's answer: a status below 500 is a
    /// [`success`](Self::success) (the host works, even when it says no), 500
    /// and above a [`failure`](Self::failure).
    pub fn record_status(self, status: StatusCode) {
        if status.as_u16() < 500 {
            self.success();
        } else {
            self.failure();
        }
    }

    fn settle(&mut self, outcome: Outcome) {
        if self.settled {
            return;
        }
        self.settled = true;
        let now = Instant::now();
        let elapsed = if self.timed {
            now.saturating_duration_since(self.started)
        } else {
            Duration::ZERO
        };
        let generation = self.generation;
        // The call is told before the change of state it caused.
        self.shared
            .step(|machine| ((), machine.finish(generation, outcome, elapsed, now)));
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.settle(Outcome::Cancelled);
    }
}
