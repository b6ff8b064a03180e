//! [`Shutdown`]: the coordinator of the two phases.

use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::observe::{Observers, ShutdownPhase};

use super::sequence::{phase_index, PHASES};
use super::{DrainToken, InFlight, ShutdownToken};

/// Coordinates a graceful shutdown.
///
/// After [`trigger`](Shutdown::trigger) (or SIGTERM / SIGINT, see
/// [`listen_for_signals`](Shutdown::listen_for_signals)),
/// [`wait_drained`](Shutdown::wait_drained) runs the sequence:
///
/// 1. readiness flips at once ([`is_ready`](Shutdown::is_ready) is false, the
///    readiness route answers 503), so load balancers stop sending traffic;
/// 2. `prestop_grace_secs` pass while they notice;
/// 3. phase 1: the [`ShutdownToken`] is cancelled and the server takes no new
///    requests: one that still arrives, on an open connection or a new one
///    (`serve` keeps its listener open until phase 2, so that it is told 503
///    with `Retry-After` rather than refused), gets 503;
/// 4. requests in flight finish, until [`InFlight`] reaches zero or
///    `shutdown_timeout_secs` pass, whichever is first;
/// 5. phase 2: the [`DrainToken`] is cancelled and remaining streams end;
/// 6. until in-flight reaches zero or `drain_force_secs` pass; then it returns.
///
/// A second trigger (a second signal) skips to the end at once. Nothing in
/// the sequence waits without a bound: an orchestrator's grace period should
/// be at least `prestop_grace_secs + shutdown_timeout_secs + drain_force_secs`,
/// plus whatever the process does after it returns (`timebox::server::serve`
/// returns within that sum too).
///
/// Clones share the same state.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::config::Config;
/// use timebox::shutdown::Shutdown;
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let shutdown = Shutdown::new(&Config::default()); // a pre-stop grace of 5 s
///     let guard = shutdown.in_flight().enter(); // a request being served
///     let start = tokio::time::Instant::now();
///     shutdown.trigger();
///     assert!(!shutdown.is_ready());
///     let drained = tokio::spawn({
///         let shutdown = shutdown.clone();
///         async move { shutdown.wait_drained().await }
///     });
///     shutdown.token().cancelled().await; // phase 1, after the pre-stop grace
///     assert_eq!(start.elapsed(), Duration::from_secs(5));
///     tokio::time::sleep(Duration::from_secs(2)).await;
///     drop(guard); // the last request finishes: phase 2 begins at once
///     drained.await.unwrap();
///     assert_eq!(start.elapsed(), Duration::from_secs(7));
///     assert!(shutdown.drain_token().is_cancelled());
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Shutdown {
    pub(super) shared: Arc<Shared>,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) token: ShutdownToken,
    pub(super) drain: DrainToken,
    pub(super) in_flight: InFlight,
    pub(super) triggered: CancellationToken,
    pub(super) forced: CancellationToken,
    /// Cancelled when a caller of [`Shutdown::wait_drained`] has run the
    /// sequence to its end: every caller returns then, together, and one
    /// that comes later returns at once; what is still in flight is ended
    /// (see `finished_token`).
    pub(super) finished: CancellationToken,
    pub(super) prestop: Duration,
    pub(super) grace: Duration,
    pub(super) drain_force: Duration,
    pub(super) observers: Observers,
    /// When each phase began (indexed by [`phase_index`]): the pre-stop
    /// grace at the trigger, the others when the first caller of
    /// [`Shutdown::wait_drained`] reached them. Every caller, and one that
    /// comes back after its first wait was dropped, waits for what is left
    /// of the same phase.
    pub(super) began: [OnceLock<Instant>; PHASES],
    /// What has been told so far, one bit each (a phase's end, and the end
    /// of the sequence): several callers may wait for the same shutdown (an
    /// HTTP and a gRPC server), each is told once.
    pub(super) told: AtomicU8,
    /// Whether [`Shutdown::listen_for_signals`] has a listener running: one
    /// per shutdown, so that one signal is one trigger.
    pub(super) listening: AtomicBool,
    #[cfg(feature = "server")]
    pub(super) connections: ConnectionBounds,
}

/// The bounds [`serve`](crate::server::serve) puts on every connection,
/// from `config.server`; they travel with the [`Shutdown`] so that
/// `serve` keeps its three arguments.
#[cfg(feature = "server")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionBounds {
    pub(crate) header_read: Option<Duration>,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) max_age: Option<Duration>,
}

impl Shutdown {
    /// A coordinator with the bounds of `config.server`: the three waits of
    /// the sequence, and the connection bounds that
    /// `timebox::server::serve` applies (`header_read_timeout_ms`,
    /// `keep_alive_timeout_secs`, `max_connection_age_secs`).
    #[must_use]
    pub fn new(config: &Config) -> Self {
        let server = &config.server;
        let in_flight = InFlight::new();
        Self {
            shared: Arc::new(Shared {
                token: ShutdownToken::default(),
                drain: DrainToken::counting(in_flight.clone()),
                in_flight,
                triggered: CancellationToken::new(),
                forced: CancellationToken::new(),
                finished: CancellationToken::new(),
                prestop: Duration::from_secs(server.prestop_grace_secs),
                grace: Duration::from_secs(server.shutdown_timeout_secs),
                drain_force: Duration::from_secs(server.drain_force_secs),
                observers: config.observers.clone(),
                began: [const { OnceLock::new() }; PHASES],
                told: AtomicU8::new(0),
                listening: AtomicBool::new(false),
                #[cfg(feature = "server")]
                connections: ConnectionBounds {
                    header_read: server.header_read_timeout(),
                    keep_alive: server.keep_alive_timeout(),
                    max_age: server.max_connection_age(),
                },
            }),
        }
    }

    /// Starts the sequence: readiness flips at once, and the phases follow
    /// while [`wait_drained`](Self::wait_drained) (or `serve`) is awaited.
    /// Called again (a second signal), skips to the end.
    pub fn trigger(&self) {
        let shared = &self.shared;
        if shared.triggered.is_cancelled() {
            self.force();
        } else {
            // What an orchestrator must wait before it kills the process
            // (Kubernetes: `terminationGracePeriodSeconds`, 30 s by default).
            let most_secs = shared
                .prestop
                .saturating_add(shared.grace)
                .saturating_add(shared.drain_force)
                .as_secs();
            if shared.prestop.is_zero() {
                tracing::info!(
                    most_secs,
                    "shutdown triggered: readiness answers 503; no pre-stop grace \
                     (`server.prestop_grace_secs` is 0), phase 1 begins at once; the \
                     phases take at most {most_secs} s"
                );
            } else {
                tracing::info!(
                    most_secs,
                    "shutdown triggered: readiness answers 503; still serving for the \
                     pre-stop grace of {} s (`server.prestop_grace_secs`) so load \
                     balancers stop sending traffic first; the phases take at most \
                     {most_secs} s",
                    shared.prestop.as_secs_f64()
                );
            }
            // The pre-stop grace counts from the trigger.
            shared.began[phase_index(ShutdownPhase::Prestop)].get_or_init(Instant::now);
            shared.triggered.cancel();
        }
    }

    /// Skips the rest of the sequence: both phases begin and
    /// [`wait_drained`](Shutdown::wait_drained) returns at once.
    pub fn force(&self) {
        let shared = &self.shared;
        tracing::warn!(in_flight = shared.in_flight.count(), "shutdown forced");
        shared.triggered.cancel();
        shared.forced.cancel();
        shared.token.cancel();
        shared.drain.cancel();
    }

    /// Whether the service should still receive traffic: false from the
    /// trigger on.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        !self.shared.triggered.is_cancelled()
    }

    /// Resolves once the sequence is triggered (readiness answers 503 from
    /// then on), at once if it was: for a process still starting, which
    /// has nothing in flight to drain and can stop where it is instead of
    /// serving first.
    ///
    /// # Cancellation safety
    ///
    /// Cancellation safe: dropping the future loses nothing, and the
    /// trigger stays told for the next call.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn connect_to_upstreams() {}
    /// # async fn start(shutdown: timebox::shutdown::Shutdown) {
    /// tokio::select! {
    ///     biased;
    ///     () = shutdown.triggered() => return, // asked to stop while starting
    ///     () = connect_to_upstreams() => {}
    /// }
    /// // bind, then `timebox::server::serve(..)`
    /// # }
    /// ```
    pub async fn triggered(&self) {
        self.shared.triggered.cancelled().await;
    }

    /// The phase 1 token.
    #[must_use]
    pub fn token(&self) -> ShutdownToken {
        self.shared.token.clone()
    }

    /// The phase 2 token.
    #[must_use]
    pub fn drain_token(&self) -> DrainToken {
        self.shared.drain.clone()
    }

    /// Cancelled when the sequence has run to its end (see
    /// [`wait_drained`](Self::wait_drained)): what is still in flight then
    /// is ended, as `serve` closes its connections.
    #[cfg(feature = "grpc")]
    pub(crate) fn finished_token(&self) -> CancellationToken {
        self.shared.finished.clone()
    }

    /// Whether the sequence has run to its end (see `finished_token`).
    #[cfg(any(feature = "server", feature = "grpc"))]
    pub(crate) fn is_finished(&self) -> bool {
        self.shared.finished.is_cancelled()
    }

    /// The count of requests in flight.
    #[must_use]
    pub fn in_flight(&self) -> InFlight {
        self.shared.in_flight.clone()
    }

    /// How long phase 1 waits for requests in flight before phase 2
    /// (`server.shutdown_timeout_secs`).
    #[must_use]
    pub fn grace(&self) -> Duration {
        self.shared.grace
    }

    /// Whether a second trigger (a second signal) skipped the sequence to
    /// its end.
    #[must_use]
    pub fn is_forced(&self) -> bool {
        self.shared.forced.is_cancelled()
    }

    /// Resolves once a second trigger skipped the sequence to its end, so
    /// that what a process does after [`wait_drained`](Self::wait_drained)
    /// or `serve` returns (a flush, the goodbyes to its peers) can stop
    /// waiting when the operator asks twice. Resolves at once if one did.
    ///
    /// # Cancellation safety
    ///
    /// Cancellation safe: dropping the future loses nothing, and a second
    /// trigger stays told for the next call.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn flush() {}
    /// # async fn after_serve(shutdown: timebox::shutdown::Shutdown) {
    /// tokio::select! {
    ///     () = flush() => {}
    ///     () = shutdown.forced() => {} // a second Ctrl-C: no more waiting
    /// }
    /// # }
    /// ```
    pub async fn forced(&self) {
        self.shared.forced.cancelled().await;
    }

    /// The app's observers, for the parts that refuse requests for us.
    #[cfg(feature = "server")]
    pub(crate) fn observers(&self) -> &Observers {
        &self.shared.observers
    }

    #[cfg(feature = "server")]
    pub(crate) fn connection_bounds(&self) -> ConnectionBounds {
        self.shared.connections
    }

    /// When the sequence's bound passes: G4's sum (`prestop_grace_secs +
    /// shutdown_timeout_secs + drain_force_secs`) after the trigger, or
    /// `drain_force_secs` after phase 2 began when the phases began later
    /// than the sum allows for (a caller that came late to
    /// [`wait_drained`](Self::wait_drained)). Time the phases did not use
    /// is left in it. `None` before phase 2, and for bounds too large for
    /// the clock (which [`Config::validate`](crate::config::Config::validate)
    /// refuses).
    #[cfg(feature = "server")]
    pub(crate) fn sequence_bound(&self) -> Option<Instant> {
        let shared = &self.shared;
        let drained = shared.began[phase_index(ShutdownPhase::Drain)].get()?;
        let triggered = shared.began[phase_index(ShutdownPhase::Prestop)].get()?;
        let sum = shared
            .prestop
            .checked_add(shared.grace)?
            .checked_add(shared.drain_force)?;
        let by_the_sum = triggered.checked_add(sum)?;
        let by_the_drain = drained.checked_add(shared.drain_force)?;
        Some(by_the_sum.max(by_the_drain))
    }

    /// Runs the sequence once triggered (see [`Shutdown`]) and returns when it
    /// is over. Never waits without a bound after the trigger.
    ///
    /// Several callers (an HTTP and a gRPC server sharing the shutdown) wait
    /// for the same sequence and return together, when the first of them
    /// reaches its end; a caller that comes after the sequence ended
    /// returns at once.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future stops waiting; the tokens keep their state, and
    /// the sequence keeps its times: another caller still waiting carries
    /// it on, and a later call takes it up where it is. A phase already
    /// begun ends when it would have (the pre-stop grace counts from the
    /// trigger, each phase from when it began), not running its wait
    /// again; one not begun yet begins when a caller reaches it.
    ///
    /// # Panics
    ///
    /// At its first poll, outside a tokio runtime with its timer enabled
    /// (`enable_time`, or `enable_all`), with tokio's message: the phases
    /// wait on it.
    pub async fn wait_drained(&self) {
        require_timer();
        tokio::select! {
            biased;
            () = self.shared.finished.cancelled() => {}
            () = self.run_sequence() => self.shared.finished.cancel(),
        }
    }
}

/// Panics here, with tokio's own message, when the current runtime has no
/// timer: what follows waits on it, and would otherwise panic later and
/// somewhere less telling (in each connection's task, or at a phase after
/// the trigger).
#[track_caller]
pub(crate) fn require_timer() {
    drop(tokio::time::sleep(Duration::ZERO));
}
