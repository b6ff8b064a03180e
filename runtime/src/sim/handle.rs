//! [`Sim`]: what a simulation test is handed.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::entropy::Entropy;
use crate::observe::{Event, Observers, Recording};

use super::net::SimLink;
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
    /// the way at its own time (to within the last 2 ms, whose timers fire
    /// at the end) and letting the tasks it wakes run before the next, then
    /// lets the tasks woken at the end run.
    ///
    /// `tokio::time::advance` instead jumps at once: a timer that a task
    /// re-arms on the way (a heartbeat, a retry's backoff) fires once, and
    /// the tasks are woken at the end of the jump.
    ///
    /// The clock steps from timer to timer when every task waits, as a
    /// paused clock does in a `sleep`: a task that never waits (a loop of
    /// `yield_now`) keeps it from moving, and while a `spawn_blocking` task
    /// runs the runtime waits in real time.
    ///
    /// # Panics
    ///
    /// When the clock is not paused (`#[sim_test]` pauses it), and when
    /// `duration` takes the clock past what an `Instant` can hold (as
    /// `tokio::time::advance` does).
    ///
    /// # Cancellation safety
    ///
    /// Dropped on the way, the clock stays where it had got to.
    pub async fn advance(&self, duration: Duration) {
        // Says at once, not after a sleep in real time, when the clock is
        // not paused.
        tokio::time::advance(Duration::ZERO).await;
        let until = Instant::now() + duration;
        // The paused clock moves in whole milliseconds from the one it is
        // in, keeping its fraction of one, and a timer fires at the
        // millisecond after its deadline: a sleep to `until` could end past
        // it, and one to 2 ms short of it ends before it. The rest of the
        // way is one step.
        if let Some(short) = until.checked_sub(Duration::from_millis(2)) {
            if short > Instant::now() {
                tokio::time::sleep_until(short).await;
            }
        }
        // This yields once, for the timers due now to fire; the second yield
        // lets the tasks they woke run.
        tokio::time::advance(until.saturating_duration_since(Instant::now())).await;
        tokio::task::yield_now().await;
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
            .transport(Arc::new(SimLink::to(&self.net)))
            .entropy(self.entropy())
            .build()
    }

    /// The default configuration, observed by the run's recording: build
    /// the app's parts (layers, shutdown, streams) from it, or from
    /// [`Sim::observe`] of your own, and [`Sim::observed`] lists their
    /// events. A part that draws random numbers (a `ClientLayer`, a
    /// `TimeboxLayer`) also takes [`Sim::entropy`] by its `entropy(..)`, or
    /// its draws do not replay with the seed.
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
