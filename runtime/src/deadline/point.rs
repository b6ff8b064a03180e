//! [`Deadline`]: a point on tokio's clock.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::scope::{self, Scope};

/// How far away a deadline that cannot be represented is placed: about 30
/// years, the same horizon tokio uses for a timer that never fires.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A point on tokio's clock by which work must be done.
///
/// `Deadline` is `Copy` and ordered: the earlier deadline is the smaller one,
/// so `a.min(b)` is the tighter of two.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::deadline::Deadline;
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let deadline = Deadline::after(Duration::from_secs(5));
///     tokio::time::sleep(Duration::from_secs(2)).await;
///     assert_eq!(deadline.remaining(), Duration::from_secs(3));
///     assert_eq!(deadline.clamp(Duration::from_secs(30)), Duration::from_secs(3));
///     assert!(!deadline.is_expired());
/// }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline {
    instant: Instant,
}

impl Deadline {
    /// The deadline `timeout` from now.
    ///
    /// A timeout longer than about 30 years (`Duration::MAX`, say) saturates
    /// to a deadline 30 years away instead of panicking, so a longer timeout
    /// never gives an earlier deadline.
    #[must_use]
    pub fn after(timeout: Duration) -> Self {
        Self::after_start(Instant::now(), timeout)
    }

    /// The deadline `timeout` after `start`, saturating like [`Deadline::after`].
    pub(crate) fn after_start(start: Instant, timeout: Duration) -> Self {
        // 30 years fit after any reading of a running clock.
        let instant = start + timeout.min(FAR_FUTURE);
        Self { instant }
    }

    /// The deadline at `instant`.
    #[must_use]
    pub const fn at(instant: Instant) -> Self {
        Self { instant }
    }

    /// The deadline of the current scope, or `None` outside any scope.
    ///
    /// Never panics, also outside a tokio runtime. See [`Deadline::scope`].
    #[must_use]
    pub fn current() -> Option<Self> {
        scope::current()
    }

    /// The point on tokio's clock this deadline stands for.
    #[must_use]
    pub const fn instant(self) -> Instant {
        self.instant
    }

    /// The time left until the deadline; zero once it has passed.
    #[must_use]
    pub fn remaining(self) -> Duration {
        self.instant.saturating_duration_since(Instant::now())
    }

    /// Whether no time is left: a deadline *at* this instant has expired.
    #[must_use]
    pub fn is_expired(self) -> bool {
        self.remaining().is_zero()
    }

    /// `limit`, shortened to the time left: `min(limit, remaining)`.
    ///
    /// This is the timeout for one step of bounded work, such as one attempt
    /// of an outbound call with its own per-attempt limit.
    #[must_use]
    pub fn clamp(self, limit: Duration) -> Duration {
        limit.min(self.remaining())
    }

    /// Runs `future` with this deadline current, shortened to the enclosing
    /// one if that is earlier.
    ///
    /// A scope can only shorten: inside it, [`Deadline::current`] is the
    /// earlier of this deadline and the one current where the scope is
    /// *polled*, read afresh at every poll. The scope itself stops nothing;
    /// wrap the work in [`bounded`](super::bounded()) for that.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use timebox::deadline::Deadline;
    ///
    /// #[tokio::main]
    /// # async fn _hidden() {}
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     // The doctest runs this on a paused clock (`start_paused`), where the
    ///     // times below are exact.
    ///     let outer = Deadline::after(Duration::from_secs(1));
    ///     let inner = Deadline::after(Duration::from_secs(5));
    ///     let seen = outer.scope(inner.scope(async { Deadline::current() })).await;
    ///     assert_eq!(seen, Some(outer));
    /// }
    /// ```
    ///
    /// # Cancellation safety
    ///
    /// Dropping the returned future drops `future`; the deadline is not left
    /// behind as current anywhere.
    pub fn scope<F: Future>(self, future: F) -> Scope<F> {
        Scope::new(self, future)
    }

    /// Runs the closure `f` with this deadline current, shortened to the
    /// enclosing one if that is earlier (the closure form of [`Deadline::scope`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use timebox::deadline::Deadline;
    ///
    /// let deadline = Deadline::after(Duration::from_secs(1));
    /// assert_eq!(deadline.sync_scope(Deadline::current), Some(deadline));
    /// assert_eq!(Deadline::current(), None);
    /// ```
    pub fn sync_scope<R>(self, f: impl FnOnce() -> R) -> R {
        scope::with_current(Some(self.min_with_current()), f)
    }

    /// This deadline, or the current one if that is earlier.
    pub(super) fn min_with_current(self) -> Self {
        Self::current().map_or(self, |enclosing| enclosing.min(self))
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline")
            .field("remaining", &self.remaining())
            .finish()
    }
}
