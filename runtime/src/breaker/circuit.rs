//! [`CircuitBreaker`]: the shared handle callers acquire permits from.

use std::sync::Arc;

use tokio::time::Instant;

use super::error::Open;
use super::permit::Permit;
use super::shared::Shared;
use super::state::{BreakerState, Machine};
use super::window::CallCounts;
use crate::config::BreakerConfig;
use crate::observe::{BreakerCallOutcome, Label, Observers};

/// A circuit breaker for one upstream host.
///
/// Clones share one breaker (it is an `Arc` inside), so a client keeps one per
/// host and hands clones to every request. Before each call,
/// [`try_acquire`](Self::try_acquire) either refuses at once with [`Open`]
/// (the host is not contacted) or returns a [`Permit`] that reports the
/// call's outcome. The rules are in the [module docs](super).
///
/// Time is read from [`tokio::time::Instant`], so a paused test clock drives
/// the window and the open period.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::breaker::{BreakerConfig, BreakerState, CircuitBreaker};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let breaker = CircuitBreaker::new(&BreakerConfig {
///         minimum_sample_count: 3,
///         open_secs: 30,
///         ..BreakerConfig::default()
///     });
///
///     // Three failed calls in a row: the host looks down.
///     for _ in 0..3 {
///         let permit = breaker.try_acquire().expect("closed");
///         permit.failure();
///     }
///     assert_eq!(breaker.state(), BreakerState::Open);
///     assert!(breaker.try_acquire().is_err());
///
///     // After the open period, trial calls find out whether it is back.
///     tokio::time::sleep(Duration::from_secs(30)).await;
///     assert_eq!(breaker.state(), BreakerState::HalfOpen);
///     let trials: Vec<_> = (0..3).map(|_| breaker.try_acquire().unwrap()).collect();
///     for permit in trials {
///         permit.success();
///     }
///     assert_eq!(breaker.state(), BreakerState::Closed);
/// }
/// ```
#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    shared: Arc<Shared>,
}

impl CircuitBreaker {
    /// A closed breaker with an empty window.
    ///
    /// The configuration is not validated here ([`Config::validate`] does
    /// that); values it refuses are made harmless instead: no buckets means
    /// one and more than 1000 mean 1000, no trials means one, and a
    /// threshold of 0 or below (or NaN) means 1.0 (every call of the window
    /// failed, or was slow).
    ///
    /// [`Config::validate`]: crate::config::Config::validate
    #[must_use]
    pub fn new(config: &BreakerConfig) -> Self {
        Self::for_host("-", config)
    }

    /// A breaker for `host`, the name its log lines give (the client uses
    /// the `host:port` key).
    #[must_use]
    pub fn for_host(host: &str, config: &BreakerConfig) -> Self {
        Self::observed(host, host.into(), config, Observers::new())
    }

    /// A breaker for `host` that tells `observers` its transitions and how
    /// it counted each call, naming the host `label` there.
    pub(crate) fn observed(
        host: &str,
        label: Label,
        config: &BreakerConfig,
        observers: Observers,
    ) -> Self {
        let machine = Machine::new(config, Instant::now());
        Self {
            shared: Arc::new(Shared::new(machine, host, label, observers)),
        }
    }

    /// Asks to make one call.
    ///
    /// Closed: always admitted. Open: refused until the open period ends.
    /// Half-open: admitted while fewer than `half_open_trials` trials are in
    /// flight or have succeeded in this round, refused otherwise.
    ///
    /// # Errors
    ///
    /// [`Open`] when the call must not be made; the host was not contacted.
    pub fn try_acquire(&self) -> Result<Permit, Open> {
        self.try_acquire_at(Instant::now())
    }

    /// [`try_acquire`](Self::try_acquire) at `now`, a clock reading its
    /// caller took for more than this.
    pub(crate) fn try_acquire_at(&self, now: Instant) -> Result<Permit, Open> {
        let shared = &self.shared;
        // The permit is made with the slot, before the step tells what it
        // changed: an observer that panics at the half-opening then drops
        // a permit, which frees its trial slot, instead of leaving a slot
        // taken that nothing will ever free.
        shared.step(|machine| match machine.acquire(now) {
            Ok(generation) => (Ok(Permit::new(Arc::clone(shared), generation, now)), None),
            Err(open) => (Err(open), Some(BreakerCallOutcome::Rejected)),
        })
    }

    /// Where the breaker stands now (an open breaker whose period has ended
    /// is half-open).
    #[must_use]
    pub fn state(&self) -> BreakerState {
        self.shared.run(|machine| machine.state(Instant::now()))
    }

    /// The calls counted in the rolling window now.
    ///
    /// Only calls admitted while closed are counted here, and the window
    /// starts empty each time a half-open breaker closes. While the breaker is
    /// open or half-open, the calls that opened it stay until they age out.
    #[must_use]
    pub fn counts(&self) -> CallCounts {
        self.shared.run(|machine| machine.counts(Instant::now()))
    }
}

impl Default for CircuitBreaker {
    /// A breaker with [`BreakerConfig::default`].
    fn default() -> Self {
        Self::new(&BreakerConfig::default())
    }
}
