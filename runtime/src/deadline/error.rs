//! The error of work stopped by its deadline, and the check that finds it.

use std::error::Error;
use std::fmt;
use std::io;

/// The deadline passed before the work finished.
///
/// Returned by [`bounded`](super::bounded()) and carried as the `source()` of
/// every other timebox error that a deadline caused, so
/// [`is_deadline_exceeded`] needs to know only this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeadlineExceeded(());

impl DeadlineExceeded {
    pub(crate) const fn new() -> Self {
        Self(())
    }
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
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let err = Deadline::after(Duration::ZERO)
///     .scope(bounded(async {}))
///     .await
///     .unwrap_err();
/// let io_err = std::io::Error::from(err);
/// assert!(is_deadline_exceeded(&io_err));
///
/// let other = std::io::Error::other("disk full");
/// assert!(!is_deadline_exceeded(&other));
/// # }
/// ```
#[must_use]
pub fn is_deadline_exceeded(err: &(dyn Error + 'static)) -> bool {
    let mut link = Some(err);
    while let Some(err) = link {
        if is_this_link(err) {
            return true;
        }
        link = err.source();
    }
    false
}

fn is_this_link(err: &(dyn Error + 'static)) -> bool {
    if err.is::<DeadlineExceeded>() {
        return true;
    }
    // `io::Error::source()` skips its own payload, so look inside it here.
    err.downcast_ref::<io::Error>()
        .and_then(io::Error::get_ref)
        .is_some_and(|inner| is_deadline_exceeded(inner))
}
