//! [`Sim`]: what a simulation test is handed.

use std::time::Duration;

use std::sync::Arc;

use crate::entropy::Entropy;
use crate::observe::{Event, Observers, Recording};

use super::{SimApp, SimNet};
use crate::client::Client;
use crate::config::Config;

/// The handle of one simulation run: its seed, its clock and its randomness.
///
/// `#[sim_test]` makes one per run and passes it to the test function.
#[derive(Debug, Clone)]
pub struct Sim {
    seed: u64,
    entropy: Entropy,
    net: SimNet,
    recording: Recording,
    /// The same recording, as the observer every observed config shares.
    observers: Observers,
}

impl Sim {
    /// A simulation with `seed`.
    ///
    /// `#[sim_test]` calls this for you; use it directly only on a runtime
    /// whose clock you paused yourself.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        let entropy = Entropy::seeded(seed);
        let recording = Recording::new();
        Self {
            seed,
            net: SimNet::new(entropy.clone()),
            entropy,
            observers: Observers::new().with(recording.clone()),
            recording,
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

    /// The simulated network of this run: add hosts to it, then reach them
    /// with [`Sim::client`].
    #[must_use]
    pub fn net(&self) -> SimNet {
        self.net.clone()
    }

    /// A client with the default configuration that reaches only the hosts
    /// of [`Sim::net`] (`http://<name>/...`).
    #[must_use]
    pub fn client(&self) -> Client {
        self.client_with(&Config::default())
    }

    /// A client configured by `config` that reaches only the hosts of
    /// [`Sim::net`], observed by the run's recording (see [`Sim::observed`]).
    #[must_use]
    pub fn client_with(&self, config: &Config) -> Client {
        let config = self.observe(config.clone());
        Client::builder()
            .config(&config)
            .transport(Arc::new(self.net()))
            .entropy(self.entropy())
            .build()
    }

    /// The default configuration, observed by the run's recording: build
    /// the app's parts (layers, shutdown, streams) from it, or from
    /// [`Sim::observe`] of your own, and [`Sim::observed`] lists their
    /// events.
    #[must_use]
    pub fn config(&self) -> Config {
        self.observe(Config::default())
    }

    /// `config`, observed by the run's recording as well.
    #[must_use]
    pub fn observe(&self, mut config: Config) -> Config {
        config.observers = config.observers.joined(&self.observers);
        config
    }

    /// Every event the parts observed by this run told so far, in order.
    /// The same seed gives the same sequence.
    #[must_use]
    pub fn observed(&self) -> Vec<Event> {
        self.recording.events()
    }

    /// The run's seeded random source. Clones share one stream, so the
    /// sequence of draws replays for the same seed.
    #[must_use]
    pub fn entropy(&self) -> Entropy {
        self.entropy.clone()
    }
}
