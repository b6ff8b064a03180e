//! [`Transition`]: a change of a breaker's state, said in the logs.

use std::time::Duration;

use super::window::CallCounts;
use super::BreakerState;

/// A change of state, recorded under the breaker's lock and logged once the
/// lock is released.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Transition {
    /// The window's ratios crossed a threshold: the host is not called for
    /// `open`.
    Opened { counts: CallCounts, open: Duration },
    /// A half-open trial failed or was slow: open again for `open`.
    Reopened { open: Duration },
    /// The open period ended: trial calls are admitted.
    HalfOpened { trials: u32 },
    /// Enough trials succeeded.
    Closed,
}

impl Transition {
    /// The state left and the state entered.
    pub(super) const fn states(self) -> (BreakerState, BreakerState) {
        match self {
            Self::Opened { .. } => (BreakerState::Closed, BreakerState::Open),
            Self::Reopened { .. } => (BreakerState::HalfOpen, BreakerState::Open),
            Self::HalfOpened { .. } => (BreakerState::Open, BreakerState::HalfOpen),
            Self::Closed => (BreakerState::HalfOpen, BreakerState::Closed),
        }
    }

    /// Says what happened: `warn!` when calls start being refused, `info!`
    /// when they stop, `debug!` for the trials in between.
    pub(super) fn log(self, host: &str) {
        match self {
            Self::Opened { counts, open } => {
                let calls = counts.calls.max(1) as f64;
                tracing::warn!(
                    host,
                    failure_ratio = counts.failures as f64 / calls,
                    slow_ratio = counts.slow as f64 / calls,
                    samples = counts.calls,
                    open_secs = open.as_secs(),
                    "circuit breaker opened: {} of {} calls in the window failed and {} \
                     were slow; calls to {host} are refused for {} s",
                    counts.failures,
                    counts.calls,
                    counts.slow,
                    open.as_secs(),
                );
            }
            Self::Reopened { open } => tracing::warn!(
                host,
                open_secs = open.as_secs(),
                "circuit breaker opened again: a half-open trial call to {host} failed \
                 or was slow; calls are refused for {} s",
                open.as_secs(),
            ),
            Self::HalfOpened { trials } => tracing::debug!(
                host,
                trials,
                "circuit breaker half-open: admitting {trials} trial calls to {host}"
            ),
            Self::Closed => tracing::info!(
                host,
                "circuit breaker closed: trial calls to {host} succeeded"
            ),
        }
    }
}
