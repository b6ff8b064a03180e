//! [`Shutdown`]: the coordinator of the two phases.

use std::time::Duration;

use crate::config::Config;

use super::{DrainToken, InFlight, ShutdownToken};

/// Coordinates a graceful shutdown: the [`ShutdownToken`] (stop accepting),
/// the [`DrainToken`] (end remaining streams) and the [`InFlight`] count.
///
/// Clones share the same tokens and count.
#[derive(Debug, Clone)]
pub struct Shutdown {
    token: ShutdownToken,
    drain: DrainToken,
    in_flight: InFlight,
    grace: Duration,
    drain_force: Duration,
}

impl Shutdown {
    /// A coordinator with the bounds of `config.server`.
    #[must_use]
    pub fn new(config: &Config) -> Self {
        Self {
            token: ShutdownToken::new(),
            drain: DrainToken::new(),
            in_flight: InFlight::new(),
            grace: Duration::from_secs(config.server.shutdown_timeout_secs),
            drain_force: Duration::from_secs(config.server.drain_force_secs),
        }
    }

    /// Begins phase 1: the server stops accepting new requests.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    /// Begins phase 2 at once: streams still running are told to end.
    pub fn drain(&self) {
        self.token.cancel();
        self.drain.cancel();
    }

    /// The phase 1 token.
    #[must_use]
    pub fn token(&self) -> ShutdownToken {
        self.token.clone()
    }

    /// The phase 2 token.
    #[must_use]
    pub fn drain_token(&self) -> DrainToken {
        self.drain.clone()
    }

    /// The count of requests in flight.
    #[must_use]
    pub fn in_flight(&self) -> InFlight {
        self.in_flight.clone()
    }

    /// How long phase 1 waits for requests in flight before phase 2
    /// (`server.shutdown_timeout_secs`).
    #[must_use]
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// How long phase 2 waits before giving up (`server.drain_force_secs`).
    #[must_use]
    pub fn drain_force(&self) -> Duration {
        self.drain_force
    }

    /// Runs both phases after the trigger: waits until the requests in flight
    /// finish or the grace passes, begins phase 2, then waits until they
    /// finish or `drain_force` passes. Never waits without a bound.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future stops waiting; the tokens keep their state.
    pub async fn wait_drained(&self) {
        self.token.cancelled().await;
        let _ = tokio::time::timeout(self.grace, self.in_flight.wait_zero()).await;
        self.drain.cancel();
        let _ = tokio::time::timeout(self.drain_force, self.in_flight.wait_zero()).await;
    }
}
