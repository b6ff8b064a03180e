//! [`CleanupReport`]: what became of each notice of a [`RemoteCleanup`].
//!
//! [`RemoteCleanup`]: super::RemoteCleanup

use std::fmt;
use std::time::Duration;

/// What a [`RemoteCleanup::run`](super::RemoteCleanup::run) did: each
/// notice's outcome, in the order the notices were added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupReport {
    notices: Vec<NoticeReport>,
    elapsed: Duration,
}

/// The outcome of one notice of a [`RemoteCleanup`](super::RemoteCleanup).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeReport {
    name: String,
    outcome: NoticeOutcome,
    elapsed: Duration,
}

/// What became of one notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NoticeOutcome {
    /// The notice finished within its bound.
    Completed,
    /// The notice ran out of time (its own bound, or what was left of the
    /// total) and was dropped.
    TimedOut,
    /// The notice never started: the total bound was used up before its turn.
    Skipped,
    /// The notice panicked: it was dropped there, and the run went on with
    /// the next one.
    Panicked,
}

impl CleanupReport {
    pub(super) const fn new(notices: Vec<NoticeReport>, elapsed: Duration) -> Self {
        Self { notices, elapsed }
    }

    /// Every notice, in the order they were added.
    #[must_use]
    pub fn notices(&self) -> &[NoticeReport] {
        &self.notices
    }

    /// The names of the notices that completed, in order.
    #[must_use]
    pub fn completed(&self) -> Vec<&str> {
        self.names(NoticeOutcome::Completed)
    }

    /// The names of the notices that timed out, in order.
    #[must_use]
    pub fn timed_out(&self) -> Vec<&str> {
        self.names(NoticeOutcome::TimedOut)
    }

    /// The names of the notices that were skipped, in order.
    #[must_use]
    pub fn skipped(&self) -> Vec<&str> {
        self.names(NoticeOutcome::Skipped)
    }

    /// The names of the notices that panicked, in order.
    #[must_use]
    pub fn panicked(&self) -> Vec<&str> {
        self.names(NoticeOutcome::Panicked)
    }

    /// Whether every notice completed.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.notices
            .iter()
            .all(|notice| notice.outcome == NoticeOutcome::Completed)
    }

    /// How long the whole run took, on tokio's clock.
    #[must_use]
    pub const fn elapsed(&self) -> Duration {
        self.elapsed
    }

    fn names(&self, outcome: NoticeOutcome) -> Vec<&str> {
        self.notices
            .iter()
            .filter(|notice| notice.outcome == outcome)
            .map(NoticeReport::name)
            .collect()
    }
}

impl NoticeReport {
    pub(super) const fn new(name: String, outcome: NoticeOutcome, elapsed: Duration) -> Self {
        Self {
            name,
            outcome,
            elapsed,
        }
    }

    /// The name the notice was added with.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What became of the notice.
    #[must_use]
    pub const fn outcome(&self) -> NoticeOutcome {
        self.outcome
    }

    /// How long the notice ran, on tokio's clock (zero when skipped).
    #[must_use]
    pub const fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

impl fmt::Display for NoticeOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Completed => "completed",
            Self::TimedOut => "timed out",
            Self::Skipped => "skipped",
            Self::Panicked => "panicked",
        })
    }
}
