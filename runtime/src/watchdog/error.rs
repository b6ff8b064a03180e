//! [`StreamTimeout`]: a watched stream ended by one of its timers.

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// Which of a [`Watchdog`](super::Watchdog)'s timers ended a stream.
///
/// Three distinct causes, so a caller can tell a stream that never started
/// from one that stalled and from one that simply ran too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeoutKind {
    /// No item of any kind arrived within the first-item window.
    FirstItem,
    /// No item (or [`touch`](super::WatchdogHandle::touch)) arrived within
    /// the inactivity window after the last one.
    Inactivity,
    /// The stream ran longer than its total limit.
    Total,
}

impl TimeoutKind {
    /// A stable `snake_case` name: `"first_item"`, `"inactivity"` or
    /// `"total"`, for logs, metrics and error events.
    ///
    /// # Examples
    ///
    /// ```
    /// use timebox::watchdog::TimeoutKind;
    ///
    /// assert_eq!(TimeoutKind::FirstItem.as_str(), "first_item");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::FirstItem => "first_item",
            Self::Inactivity => "inactivity",
            Self::Total => "total",
        }
    }
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
    pub(super) const fn new(kind: TimeoutKind, limit: Duration) -> Self {
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
        }
    }
}

impl Error for StreamTimeout {}
