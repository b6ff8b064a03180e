//! [`CancelReason`] and [`TimeoutCause`]: why a request was cancelled.

use std::fmt;

use super::EndStep;

/// Why a request was cancelled: recorded once, by the first
/// [`Registry::cancel`](super::Registry::cancel) or
/// [`RequestGuard::cancel`](super::RequestGuard::cancel) that reaches it.
///
/// The reason decides how the request ends ([`CancelReason::end_steps`]).
///
/// # Examples
///
/// ```
/// use timebox::registry::{CancelReason, TimeoutCause};
///
/// let reason = CancelReason::Timeout(TimeoutCause::Inactivity);
/// assert_eq!(reason.to_string(), "timeout (inactivity)");
/// assert_eq!(reason.timeout_cause(), Some(TimeoutCause::Inactivity));
/// assert_eq!(CancelReason::Disconnect.to_string(), "disconnect");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CancelReason {
    /// The client went away (a failed write counts).
    Disconnect,
    /// A timer fired; the cause says which one.
    Timeout(TimeoutCause),
    /// The server is shutting down.
    Shutdown,
}

/// Which timer ended a request: the three stream watchdog timers, or the
/// request deadline.
///
/// Named apart from `watchdog::TimeoutKind` on purpose: the watchdog knows
/// only its own three timers, while a request can also run out of its
/// [`Deadline`](crate::deadline::Deadline). The stream layer maps one onto
/// the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeoutCause {
    /// Nothing came before the first item was due.
    FirstItem,
    /// Nothing came for a whole inactivity window.
    Inactivity,
    /// The stream ran for its whole total allowance.
    Total,
    /// The request deadline passed.
    RequestDeadline,
}

impl CancelReason {
    /// Whether a timer caused the cancellation.
    #[must_use]
    pub const fn is_timeout(self) -> bool {
        matches!(self, Self::Timeout(_))
    }

    /// The timer that fired, for a [`CancelReason::Timeout`].
    #[must_use]
    pub const fn timeout_cause(self) -> Option<TimeoutCause> {
        match self {
            Self::Timeout(cause) => Some(cause),
            Self::Disconnect | Self::Shutdown => None,
        }
    }

    /// What follows the cancellation, in order (DESIGN R3).
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
    /// use timebox::registry::{CancelReason, EndStep, TimeoutCause};
    ///
    /// assert_eq!(
    ///     CancelReason::Timeout(TimeoutCause::Total).end_steps(),
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
            Self::Timeout(cause) => write!(f, "timeout ({cause})"),
            Self::Shutdown => f.write_str("shutdown"),
        }
    }
}

impl fmt::Display for TimeoutCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::FirstItem => "first item",
            Self::Inactivity => "inactivity",
            Self::Total => "total",
            Self::RequestDeadline => "request deadline",
        })
    }
}
