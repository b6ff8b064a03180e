//! [`Unanswered`]: a request counted in flight whose answer has not begun.

use crate::observe::{Event, Observers};
use crate::registry::CancelReason;

use super::Shutdown;

/// A request counted in flight whose answer has not begun: told as
/// cancelled (O1) if it is dropped so, for the shutdown once its sequence
/// has ended or been forced (a server ends what is left then), for a
/// disconnect otherwise (hyper drops the future of a request whose client
/// closed its connection or reset its stream).
///
/// Put it after the request's future, so that it is told once the handler
/// is dropped.
#[derive(Debug)]
pub(crate) struct Unanswered {
    shutdown: Shutdown,
    observers: Observers,
    /// False once the request is answered.
    armed: bool,
}

impl Unanswered {
    pub(crate) fn new(shutdown: &Shutdown, observers: &Observers) -> Self {
        Self {
            shutdown: shutdown.clone(),
            observers: observers.clone(),
            armed: true,
        }
    }

    /// The request's answer began (or its service failed): nothing to tell.
    pub(crate) fn answered(mut self) {
        self.armed = false;
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        // A panic unwinding through the handler is no cancellation: hyper
        // sees the panic, and so does whoever reads the logs.
        if !self.armed || std::thread::panicking() {
            return;
        }
        let shutdown = &self.shutdown;
        let reason = if shutdown.is_finished() || shutdown.is_forced() {
            CancelReason::Shutdown
        } else {
            CancelReason::Disconnect
        };
        self.observers.emit(|| Event::RequestCancelled { reason });
    }
}
