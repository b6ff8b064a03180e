//! [`NoticeClock`]: when a session last carried a cancellation notice, and
//! so how long it stays open for the server to act on it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use timebox::registry::RemoteCleanup;
use tokio::time::Instant;

/// How long a session stays open after a cancellation notice was sent on
/// it: a server may take a notice (the HTTP SDKs answer its POST at once)
/// before it acts on it, and closing the session first would leave the
/// call running there. As long as the gateway gives a server to take a
/// notice.
pub(crate) const NOTICE_LINGER: Duration = RemoteCleanup::DEFAULT_PER_NOTICE;

/// When a cancellation notice was last sent on a session. Clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct NoticeClock {
    last: Arc<Mutex<Option<Instant>>>,
}

impl NoticeClock {
    /// Records that a notice was just sent.
    pub(crate) fn mark(&self) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// What is left of [`NOTICE_LINGER`] since the last notice.
    pub(crate) fn left(&self) -> Duration {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map_or(Duration::ZERO, |at| {
                NOTICE_LINGER.saturating_sub(at.elapsed())
            })
    }
}
