//! [`RemoteCleanup`]: telling remote parties that the work is cancelled,
//! within a bound.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project::pin_project;

use tokio::time::{timeout_at, Instant};

use super::{CleanupReport, NoticeOutcome, NoticeReport};
use crate::deadline::{unscoped, Deadline};

type Notice = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A list of async notices — "this request is cancelled", sent to tools and
/// upstreams — run one after the other, each bounded, all bounded together.
///
/// A cancelled request must not hang on its own cleanup: a tool that does
/// not answer its cancellation notice would otherwise hold the stream (and
/// the client) open. So each notice may take at most
/// [`per_notice`](Self::per_notice) (default 2 s), and the whole run at most
/// [`total`](Self::total) (default 5 s). Notices run in the order they were
/// added; each gets the smaller of its own bound and what is left of the
/// total. A notice that runs out of time is dropped and reported as timed
/// out; one that never started because the total was used up is reported as
/// skipped; one that panics is dropped there and reported as panicked, and
/// the next one runs. The run never fails: read the [`CleanupReport`].
///
/// Each notice runs with its bound as the current [`Deadline`], in place of
/// the request's own: the request often ended *because* its deadline passed,
/// and the notice's outbound calls must still be allowed to go out.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::registry::RemoteCleanup;
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let report = RemoteCleanup::new()
///         .notice("search tool", async { /* answers at once */ })
///         .notice("code tool", std::future::pending()) // never answers
///         .notice("audit", async {})
///         .run()
///         .await;
///
///     assert_eq!(report.completed(), ["search tool", "audit"]);
///     assert_eq!(report.timed_out(), ["code tool"]);
///     assert_eq!(report.elapsed(), Duration::from_secs(2));
/// }
/// ```
#[must_use = "notices are sent only when the cleanup is run"]
pub struct RemoteCleanup {
    per_notice: Duration,
    total: Duration,
    notices: Vec<(String, Notice)>,
}

impl RemoteCleanup {
    /// The default bound of one notice: 2 s.
    pub const DEFAULT_PER_NOTICE: Duration = Duration::from_secs(2);

    /// The default bound of the whole run: 5 s.
    pub const DEFAULT_TOTAL: Duration = Duration::from_secs(5);

    /// An empty list with the default bounds.
    pub const fn new() -> Self {
        Self {
            per_notice: Self::DEFAULT_PER_NOTICE,
            total: Self::DEFAULT_TOTAL,
            notices: Vec::new(),
        }
    }

    /// Sets the bound of each notice.
    pub const fn per_notice(mut self, bound: Duration) -> Self {
        self.per_notice = bound;
        self
    }

    /// Sets the bound of the whole run.
    pub const fn total(mut self, bound: Duration) -> Self {
        self.total = bound;
        self
    }

    /// Adds a notice, run after the ones added before it. `name` is how the
    /// report refers to it.
    pub fn notice<F>(mut self, name: impl Into<String>, notice: F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.notices.push((name.into(), Box::pin(notice)));
        self
    }

    /// The bound of each notice.
    #[must_use]
    pub const fn per_notice_bound(&self) -> Duration {
        self.per_notice
    }

    /// The bound of the whole run.
    #[must_use]
    pub const fn total_bound(&self) -> Duration {
        self.total
    }

    /// The number of notices.
    #[must_use]
    pub fn len(&self) -> usize {
        self.notices.len()
    }

    /// Whether there are no notices.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.notices.is_empty()
    }

    /// Runs the notices in order, within the bounds, and reports what became
    /// of each. Finishes at most [`total`](Self::total) after it starts.
    ///
    /// # Panics
    ///
    /// Polled outside a tokio runtime with its timer enabled, with tokio's
    /// message.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future drops the notice being run and the ones after it
    /// unsent; notices that finished stay sent.
    pub async fn run(self) -> CleanupReport {
        let start = Instant::now();
        let end = Deadline::after_start(start, self.total);
        let mut reports = Vec::with_capacity(self.notices.len());
        for (name, notice) in self.notices {
            let began = Instant::now();
            let outcome = if began >= end.instant() {
                NoticeOutcome::Skipped
            } else {
                let bound = Deadline::after_start(began, self.per_notice).min(end);
                let notice = Unwinding(unscoped(bound.scope(notice)));
                match timeout_at(bound.instant(), notice).await {
                    Ok(Ok(())) => NoticeOutcome::Completed,
                    Ok(Err(())) => NoticeOutcome::Panicked,
                    Err(_) => NoticeOutcome::TimedOut,
                }
            };
            if outcome != NoticeOutcome::Completed {
                tracing::debug!(notice = %name, %outcome, "remote cleanup notice not sent");
            }
            reports.push(NoticeReport::new(name, outcome, began.elapsed()));
        }
        CleanupReport::new(reports, start.elapsed())
    }
}

/// Future for one notice: its panic is its outcome, `Err(())`, not the
/// run's. A notice is someone else's code (an RPC client's), and the steps
/// of an ending after the cleanup must still run.
#[must_use = "futures do nothing unless you .await or poll them"]
#[pin_project]
struct Unwinding<F>(#[pin] F);

impl<F: Future<Output = ()>> Future for Unwinding<F> {
    type Output = Result<(), ()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let notice = self.project().0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| notice.poll(cx))) {
            Ok(polled) => polled.map(Ok),
            Err(_) => Poll::Ready(Err(())),
        }
    }
}

impl Default for RemoteCleanup {
    /// The same as [`RemoteCleanup::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RemoteCleanup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.notices.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("RemoteCleanup")
            .field("per_notice", &self.per_notice)
            .field("total", &self.total)
            .field("notices", &names)
            .finish()
    }
}
