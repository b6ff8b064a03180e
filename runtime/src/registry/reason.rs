//! [`CancelReason`]: why a request was cancelled, and how it ends.

use std::fmt;

use super::EndStep;
use crate::watchdog::TimeoutKind;

/// Why a request was cancelled: recorded once, by the first
/// [`Registry::cancel`](super::Registry::cancel) or
/// [`RequestGuard::cancel`](super::RequestGuard::cancel) that reaches it.
///
/// The reason decides how the request ends ([`CancelReason::end_steps`]).
///
/// # Examples
///
/// ```
/// use timebox::registry::CancelReason;
/// use timebox::watchdog::TimeoutKind;
///
/// let reason = CancelReason::Timeout(TimeoutKind::Inactivity);
/// assert_eq!(reason.to_string(), "timeout (inactivity)");
/// assert_eq!(reason.timeout_kind(), Some(TimeoutKind::Inactivity));
/// assert_eq!(CancelReason::Disconnect.to_string(), "disconnect");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelReason {
    /// The client went away (a failed write counts).
    Disconnect,
    /// A timer fired: one of the stream's watchdog timers, or the request
    /// deadline.
    Timeout(TimeoutKind),
    /// The server is shutting down.
    Shutdown,
}

impl CancelReason {
    /// A stable `snake_case` name without the timer: `"disconnect"`,
    /// `"timeout"` or `"shutdown"`, for metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Disconnect => "disconnect",
            Self::Timeout(_) => "timeout",
            Self::Shutdown => "shutdown",
        }
    }

    /// Whether a timer caused the cancellation.
    #[must_use]
    pub const fn is_timeout(self) -> bool {
        matches!(self, Self::Timeout(_))
    }

    /// The timer that fired, for a [`CancelReason::Timeout`].
    #[must_use]
    pub const fn timeout_kind(self) -> Option<TimeoutKind> {
        match self {
            Self::Timeout(kind) => Some(kind),
            Self::Disconnect | Self::Shutdown => None,
        }
    }

    /// What follows the cancellation, in order: the one table of how a
    /// cancelled request ends, which the SSE stream's driver runs step by
    /// step.
    ///
    /// | reason | steps after cancelling |
    /// |---|---|
    /// | `Timeout` | remote cleanup, evict pooled connections, error event, `[DONE]` |
    /// | `Disconnect` | remote cleanup, evict pooled connections (nothing is written: no one reads) |
    /// | `Shutdown` | `[DONE]`, then remote cleanup (no eviction: the pool is going away) |
    ///
    /// A request that ends normally has no reason: it writes its final event
    /// and `[DONE]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use timebox::registry::{CancelReason, EndStep};
    /// use timebox::watchdog::TimeoutKind;
    ///
    /// assert_eq!(
    ///     CancelReason::Timeout(TimeoutKind::Total).end_steps(),
    ///     [EndStep::RemoteCleanup, EndStep::Evict, EndStep::ErrorEvent, EndStep::Done],
    /// );
    /// assert_eq!(
    ///     CancelReason::Shutdown.end_steps(),
    ///     [EndStep::Done, EndStep::RemoteCleanup],
    /// );
    /// ```
    #[must_use]
    pub const fn end_steps(self) -> &'static [EndStep] {
        match self {
            Self::Timeout(_) => &[
                EndStep::RemoteCleanup,
                EndStep::Evict,
                EndStep::ErrorEvent,
                EndStep::Done,
            ],
            Self::Disconnect => &[EndStep::RemoteCleanup, EndStep::Evict],
            Self::Shutdown => &[EndStep::Done, EndStep::RemoteCleanup],
        }
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Disconnect => f.write_str("disconnect"),
            Self::Timeout(kind) => write!(f, "timeout ({kind})"),
            Self::Shutdown => f.write_str("shutdown"),
        }
    }
}
