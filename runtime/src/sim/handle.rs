//! [`Sim`]: what a simulation test is handed.

use std::time::Duration;

use crate::entropy::Entropy;

use super::SimApp;

/// The handle of one simulation run: its seed, its clock and its randomness.
///
/// `#[sim_test]` makes one per run and passes it to the test function.
#[derive(Debug, Clone)]
pub struct Sim {
    seed: u64,
    entropy: Entropy,
}

impl Sim {
    /// A simulation with `seed`.
    ///
    /// `#[sim_test]` calls this for you; use it directly only on a runtime
    /// whose clock you paused yourself.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            entropy: Entropy::seeded(seed),
        }
    }

    /// The seed of this run.
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Moves virtual time forward by `duration`, firing every timer due on
    /// the way, then lets woken tasks run.
    ///
    /// # Cancellation safety
    ///
    /// The clock moves at the first poll; dropping the future afterwards only
    /// skips the final yield.
    pub async fn advance(&self, duration: Duration) {
        tokio::time::advance(duration).await;
    }

    /// `router` served in-process on the simulation's clock, with the
    /// simulation's seeded random source (see [`SimApp`]).
    #[must_use]
    pub fn app(&self, router: axum::Router) -> SimApp {
        SimApp::new(router, self.entropy())
    }

    /// The run's seeded random source. Clones share one stream, so the
    /// sequence of draws replays for the same seed.
    #[must_use]
    pub fn entropy(&self) -> Entropy {
        self.entropy.clone()
    }
}
