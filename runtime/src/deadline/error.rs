//! The error of work stopped by its deadline, and the check that finds it.

use std::error::Error;
use std::fmt;
use std::io;

/// The deadline passed before the work finished.
///
/// Returned by [`bounded`](super::bounded()) and carried as the `source()` of
/// every other timebox error that a deadline caused, so
/// [`is_deadline_exceeded`] needs to know only this type.
///
/// All values are equal: the error says only that a deadline passed.
#[derive(Clone, Copy, Default)]
pub struct DeadlineExceeded {
    /// Whether the part that returned it told it as an event already (an
    /// outbound call), so that a route answering with it does not tell it
    /// again (O1); or decided it is not ours to tell (a peer's).
    told: bool,
}

impl DeadlineExceeded {
    /// The error, for work that checks its deadline itself (a loop that
    /// never waits between steps) and for tests of code that handles it.
    ///
    /// A route that answers with it tells the deadline as passed in the
    /// handler (O1), as for one that [`bounded`](super::bounded()) returned.
    ///
    /// ```
    /// use timebox::deadline::{Deadline, DeadlineExceeded};
    ///
    /// fn step(rows: &[u64]) -> Result<u64, DeadlineExceeded> {
    ///     let mut sum = 0;
    ///     for chunk in rows.chunks(1024) {
    ///         if Deadline::current().is_some_and(Deadline::is_expired) {
    ///             return Err(DeadlineExceeded::new());
    ///         }
    ///         sum += chunk.iter().sum::<u64>();
    ///     }
    ///     Ok(sum)
    /// }
    /// # assert_eq!(step(&[1, 2, 3]), Ok(6));
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self { told: false }
    }

    /// One that was told as an event where it was made, or is not ours to
    /// tell.
    #[cfg(any(feature = "client", feature = "grpc"))]
    pub(crate) const fn told() -> Self {
        Self { told: true }
    }

    /// Whether it was told where it was made (see [`DeadlineExceeded::told`]).
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // a route asks
    pub(crate) const fn was_told(self) -> bool {
        self.told
    }
}

impl fmt::Debug for DeadlineExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeadlineExceeded")
    }
}

impl PartialEq for DeadlineExceeded {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for DeadlineExceeded {}

impl std::hash::Hash for DeadlineExceeded {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline exceeded")
    }
}

impl Error for DeadlineExceeded {}

impl From<DeadlineExceeded> for io::Error {
    /// An [`io::Error`] of kind [`TimedOut`](io::ErrorKind::TimedOut) that
    /// [`is_deadline_exceeded`] still recognises.
    fn from(err: DeadlineExceeded) -> Self {
        io::Error::new(io::ErrorKind::TimedOut, err)
    }
}

/// Whether `err`, or any error in its `source()` chain, is a [`DeadlineExceeded`].
///
/// This is how a server tells "the handler ran out of time" apart from other
/// failures, however deeply the user's own error types wrap it. An
/// [`io::Error`] made from a `DeadlineExceeded` counts too, although `io::Error`
/// does not list its payload as a `source()`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::deadline::{bounded, is_deadline_exceeded, Deadline};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     let err = Deadline::after(Duration::ZERO)
///         .scope(bounded(async {}))
///         .await
///         .unwrap_err();
///     let io_err = std::io::Error::from(err);
///     assert!(is_deadline_exceeded(&io_err));
///
///     let other = std::io::Error::other("disk full");
///     assert!(!is_deadline_exceeded(&other));
/// }
/// ```
#[must_use]
pub fn is_deadline_exceeded(err: &(dyn Error + 'static)) -> bool {
    find(err).is_some()
}

/// The first [`DeadlineExceeded`] in `err`'s `source()` chain, `err`
/// included, looking inside an [`io::Error`]'s payload too (its `source()`
/// skips it).
pub(crate) fn find(err: &(dyn Error + 'static)) -> Option<DeadlineExceeded> {
    let mut link = Some(err);
    while let Some(err) = link {
        if let Some(found) = err.downcast_ref::<DeadlineExceeded>() {
            return Some(*found);
        }
        let inside = err
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
            .and_then(|payload| find(payload));
        if inside.is_some() {
            return inside;
        }
        link = err.source();
    }
    None
}
