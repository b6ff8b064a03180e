//! The error of a call the breaker refused.

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// The circuit breaker refused the call; the host was not contacted.
///
/// Returned by [`CircuitBreaker::try_acquire`](super::CircuitBreaker::try_acquire)
/// while the breaker is open, and while it is half-open with every trial slot
/// taken. The client turns it into `ClientError::CircuitBreakerOpen`, which a
/// handler answers with `503 Service Unavailable`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::breaker::{BreakerConfig, CircuitBreaker};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let config = BreakerConfig { minimum_sample_count: 1, ..BreakerConfig::default() };
///     let breaker = CircuitBreaker::new(&config);
///     breaker.try_acquire().unwrap().failure();
///
///     let open = breaker.try_acquire().unwrap_err();
///     assert_eq!(open.to_string(), "circuit breaker open");
///     assert_eq!(open.retry_in(), Some(Duration::from_secs(60)));
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Open {
    retry_in: Option<Duration>,
}

impl Open {
    /// The refusal of a breaker that admits trial calls again in
    /// `retry_in` (see [`retry_in`](Self::retry_in)): what
    /// [`CircuitBreaker::try_acquire`](super::CircuitBreaker::try_acquire)
    /// returns, for tests of code that handles it.
    #[must_use]
    pub const fn new(retry_in: Option<Duration>) -> Self {
        Self { retry_in }
    }

    /// How long until the breaker admits trial calls again.
    ///
    /// `Some` while the breaker is open: the rest of its open period (never
    /// zero). `None` when it is half-open and every trial slot is taken: the
    /// next call may go through as soon as a trial ends without an outcome,
    /// or only after another open period if a trial fails, so there is no
    /// honest estimate.
    #[must_use]
    pub const fn retry_in(&self) -> Option<Duration> {
        self.retry_in
    }
}

impl fmt::Display for Open {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("circuit breaker open")
    }
}

impl Error for Open {}
