//! [`StreamTimeout`]: a watched stream ended by one of its timers.

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// Which timer ended a stream or a request.
///
/// A [`Watchdog`](super::Watchdog) has three distinct timers, so a caller can
/// tell a stream that never started from one that stalled and from one that
/// simply ran too long. A request can also run out of its
/// [`Deadline`](crate::deadline::Deadline): [`RequestDeadline`](Self::RequestDeadline)
/// names that, for a [`CancelReason`](crate::registry::CancelReason); a
/// watchdog never fires it.
///
/// `Display` gives the words ("first item"); [`as_str`](Self::as_str) the
/// stable `snake_case` name ("first_item") for logs, metrics and error
/// events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeoutKind {
    /// No item of any kind arrived within the first-item window.
    FirstItem,
    /// No item (or [`touch`](super::WatchdogHandle::touch)) arrived within
    /// the inactivity window after the last one.
    Inactivity,
    /// The stream ran longer than its total limit.
    Total,
    /// The request's deadline passed.
    RequestDeadline,
}

impl TimeoutKind {
    /// A stable `snake_case` name: `"first_item"`, `"inactivity"`,
    /// `"total"` or `"request_deadline"`, for logs, metrics and error events.
    ///
    /// # Examples
    ///
    /// ```
    /// use timebox::watchdog::TimeoutKind;
    ///
    /// assert_eq!(TimeoutKind::FirstItem.as_str(), "first_item");
    /// assert_eq!(TimeoutKind::FirstItem.to_string(), "first item");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::FirstItem => "first_item",
            Self::Inactivity => "inactivity",
            Self::Total => "total",
            Self::RequestDeadline => "request_deadline",
        }
    }
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::FirstItem => "first item",
            Self::Inactivity => "inactivity",
            Self::Total => "total",
            Self::RequestDeadline => "request deadline",
        })
    }
}

/// A watched stream was ended by one of its timers.
///
/// Yielded once, as the last item of a [`Watched`](super::Watched) stream.
/// [`kind`](Self::kind) says which timer fired and [`limit`](Self::limit) the
/// window it enforced; the `Display` text names both, e.g. "stream timed out:
/// no first item within 90s".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamTimeout {
    kind: TimeoutKind,
    limit: Duration,
}

impl StreamTimeout {
    /// The end of a stream whose timer `kind` fired after `limit`: what a
    /// [`Watched`](super::Watched) stream yields, for tests of code that
    /// handles it.
    #[must_use]
    pub const fn new(kind: TimeoutKind, limit: Duration) -> Self {
        Self { kind, limit }
    }

    /// Which timer fired.
    #[must_use]
    pub const fn kind(&self) -> TimeoutKind {
        self.kind
    }

    /// The window of the timer that fired: the first-item, inactivity or
    /// total limit that was exceeded.
    #[must_use]
    pub const fn limit(&self) -> Duration {
        self.limit
    }
}

impl fmt::Display for StreamTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limit = self.limit;
        match self.kind {
            TimeoutKind::FirstItem => write!(f, "stream timed out: no first item within {limit:?}"),
            TimeoutKind::Inactivity => {
                write!(f, "stream timed out: no activity for {limit:?}")
            }
            TimeoutKind::Total => write!(f, "stream timed out: still running after {limit:?}"),
            TimeoutKind::RequestDeadline => {
                write!(
                    f,
                    "stream timed out: its request deadline of {limit:?} passed"
                )
            }
        }
    }
}

impl Error for StreamTimeout {}
