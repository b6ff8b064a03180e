//! The shutdown sequence: its phases, each begun once and told once,
//! whoever of several callers of
//! [`wait_drained`](super::Shutdown::wait_drained) reaches it first.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use crate::observe::{Event, PhaseOutcome, ShutdownPhase};

use super::Shutdown;

impl Shutdown {
    /// Runs the phases, from the trigger to the end of the drain; see
    /// [`wait_drained`](Self::wait_drained).
    pub(super) async fn run_sequence(&self) {
        let shared = &self.shared;
        shared.triggered.cancelled().await;
        let phase = self.phase(ShutdownPhase::Prestop, || {});
        self.unless_forced(tokio::time::sleep(phase.left_of(shared.prestop)))
            .await;
        phase.end();
        // Each phase's line is written once what it says is true.
        let phase = self.phase(ShutdownPhase::Grace, || {
            shared.token.cancel();
            tracing::info!(
                in_flight = shared.in_flight.count(),
                "shutdown phase 1: new requests get 503; {}",
                self.wait_for(
                    shared.grace,
                    "server.shutdown_timeout_secs",
                    "the requests in flight"
                )
            );
        });
        self.unless_forced(tokio::time::timeout(
            phase.left_of(shared.grace),
            shared.in_flight.wait_zero(),
        ))
        .await;
        phase.end();
        let phase = self.phase(ShutdownPhase::Drain, || {
            shared.drain.cancel();
            tracing::info!(
                in_flight = shared.in_flight.count(),
                "shutdown phase 2: streams still running are told to end; {}",
                self.wait_for(shared.drain_force, "server.drain_force_secs", "them")
            );
        });
        self.unless_forced(tokio::time::timeout(
            phase.left_of(shared.drain_force),
            shared.in_flight.wait_zero(),
        ))
        .await;
        phase.end();
        if !self.first_to_tell(SEQUENCE_TOLD) {
            return;
        }
        match shared.in_flight.count() {
            0 => tracing::info!("shutdown complete: nothing in flight"),
            left => tracing::warn!(
                in_flight = left,
                "shutdown complete with requests still in flight; they are cut"
            ),
        }
    }

    /// `phase`, begun now by the first caller to reach it (which runs
    /// `begin` first), or when it was begun already.
    fn phase(&self, phase: ShutdownPhase, begin: impl FnOnce()) -> PhaseClock<'_> {
        let began = *self.shared.began[phase_index(phase)].get_or_init(|| {
            begin();
            Instant::now()
        });
        PhaseClock {
            shutdown: self,
            phase,
            began,
        }
    }

    /// What a phase's line says it waits for: up to `length` (set by `key`)
    /// for `what`, or nothing once the shutdown is forced, whose phases
    /// skip their waits.
    fn wait_for(&self, length: Duration, key: &str, what: &str) -> String {
        if self.shared.forced.is_cancelled() {
            format!("forced, so not waiting for {what}")
        } else {
            format!(
                "waiting up to {} s (`{key}`) for {what}",
                length.as_secs_f64()
            )
        }
    }

    /// Whether the caller is the first to tell what `bit` stands for.
    fn first_to_tell(&self, bit: u8) -> bool {
        self.shared.told.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }

    async fn unless_forced<F: std::future::Future>(&self, step: F) {
        tokio::select! {
            _ = step => {}
            () = self.shared.forced.cancelled() => {}
        }
    }
}

/// How many phases the sequence has.
pub(super) const PHASES: usize = 3;

/// Where `phase` is in the sequence, below [`PHASES`]: its slot in
/// [`Shared::began`](super::coordinator::Shared::began), and its bit in [`Shared::told`](super::coordinator::Shared::told).
pub(super) const fn phase_index(phase: ShutdownPhase) -> usize {
    match phase {
        ShutdownPhase::Prestop => 0,
        ShutdownPhase::Grace => 1,
        ShutdownPhase::Drain => 2,
    }
}

/// The bit of [`Shared::told`](super::coordinator::Shared::told) for the end of the sequence, above the
/// phases' bits.
pub(super) const SEQUENCE_TOLD: u8 = 1 << PHASES;

/// One phase of [`Shutdown::wait_drained`] under way, told when it ends.
struct PhaseClock<'a> {
    shutdown: &'a Shutdown,
    phase: ShutdownPhase,
    began: Instant,
}

impl PhaseClock<'_> {
    /// What is left of a phase `length` long: the whole of it for a phase
    /// that begins now, the rest for one a dropped wait left under way.
    fn left_of(&self, length: Duration) -> Duration {
        length.saturating_sub(self.began.elapsed())
    }

    /// Tells how long the phase lasted, and whether it drained: nothing in
    /// flight at its end (for the pre-stop grace, which waits for nothing:
    /// not skipped by a second trigger).
    fn end(self) {
        let shared = &self.shutdown.shared;
        if !self.shutdown.first_to_tell(1 << phase_index(self.phase)) {
            return;
        }
        let cut = match self.phase {
            ShutdownPhase::Prestop => shared.forced.is_cancelled(),
            ShutdownPhase::Grace | ShutdownPhase::Drain => shared.in_flight.count() > 0,
        };
        let outcome = if cut {
            PhaseOutcome::Forced
        } else {
            PhaseOutcome::Drained
        };
        shared.observers.emit(|| Event::ShutdownPhase {
            phase: self.phase,
            duration: self.began.elapsed(),
            outcome,
        });
    }
}
