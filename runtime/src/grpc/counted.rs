//! [`Counted`]: a server call's place in its shutdown.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::observe::{Event, Observers};
use crate::registry::CancelReason;
use crate::shutdown::{DrainToken, InFlightGuard};

/// A server call's place in its shutdown: counted in flight until its body
/// is done, its stream ended at phase 2, and the call ended when the
/// sequence does.
#[derive(Debug)]
pub(crate) struct Counted {
    _guard: InFlightGuard,
    drain: DrainToken,
    /// The wait for phase 2, made when the body first waits for its next
    /// frame: a body that is ready at once (a unary answer) never boxes it.
    drained: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    /// Cancelled when the shutdown's sequence has run to its end.
    finished: CancellationToken,
    /// The wait for that end, made when the call first waits for its
    /// answer.
    ended: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    /// Frames the body sent since phase 2 began.
    pub(super) sent_since_drain: u8,
    /// Who hears of the call ended by the shutdown.
    observers: Observers,
}

/// Frames a body still sends after phase 2 began, while they are ready: a
/// unary answer's message and its trailers.
const FRAMES_AFTER_DRAIN: u8 = 2;

impl Counted {
    pub(crate) fn new(
        guard: InFlightGuard,
        drain: DrainToken,
        finished: CancellationToken,
        observers: Observers,
    ) -> Self {
        Self {
            _guard: guard,
            drain,
            drained: None,
            finished,
            ended: None,
            sent_since_drain: 0,
            observers,
        }
    }

    /// Tells that the shutdown ended the call (O1).
    pub(crate) fn tell_cancelled(&self) {
        self.observers.emit(|| Event::RequestCancelled {
            reason: CancelReason::Shutdown,
        });
    }

    /// Whether phase 2 has begun.
    pub(super) fn is_drained(&self) -> bool {
        self.drain.is_cancelled()
    }

    /// Whether the drain ends the body now, `drained` saying whether phase
    /// 2 has begun: it has, and the body has sent since what a unary answer
    /// needs.
    pub(super) fn drain_due(&self, drained: bool) -> bool {
        drained && self.sent_since_drain >= FRAMES_AFTER_DRAIN
    }

    /// Whether the shutdown's sequence has ended; when it has not, the task
    /// is woken when it does.
    pub(crate) fn poll_ended(&mut self, cx: &mut Context<'_>) -> bool {
        let finished = &self.finished;
        poll_cancelled(
            finished.is_cancelled(),
            &mut self.ended,
            || finished.clone().cancelled_owned(),
            cx,
        )
    }

    /// Whether phase 2 has begun; when it has not, the task is woken when
    /// it does.
    pub(super) fn poll_drained(&mut self, cx: &mut Context<'_>) -> bool {
        let drain = &self.drain;
        poll_cancelled(
            drain.is_cancelled(),
            &mut self.drained,
            || drain.clone().cancelled_owned(),
            cx,
        )
    }
}

/// Whether a token is `cancelled`; when it is not, whether the wait for it
/// in `wait` (made by `make` the first time it is needed) is over, the task
/// woken when it is.
fn poll_cancelled(
    cancelled: bool,
    wait: &mut Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    make: impl FnOnce() -> WaitForCancellationFutureOwned,
    cx: &mut Context<'_>,
) -> bool {
    cancelled
        || wait
            .get_or_insert_with(|| Box::pin(make()))
            .as_mut()
            .poll(cx)
            .is_ready()
}
