//! [`WatchdogExt`]: `.watchdog(..)` on every stream.

use futures_core::Stream;

use super::{Watchdog, Watched};

/// Adds [`watchdog`](Self::watchdog) to every [`Stream`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use futures_util::{stream, StreamExt};
/// use timebox::watchdog::{TimeoutKind, Watchdog, WatchdogExt};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let start = tokio::time::Instant::now();
///     let silent = stream::pending::<&str>();
///     let mut watched = silent.watchdog(Watchdog::new().first_item(Duration::from_secs(90)));
///
///     let err = watched.next().await.unwrap().unwrap_err();
///     assert_eq!(err.kind(), TimeoutKind::FirstItem);
///     assert_eq!(err.to_string(), "stream timed out: no first item within 90s");
///     assert_eq!(start.elapsed(), Duration::from_secs(90));
/// }
/// ```
pub trait WatchdogExt: Stream {
    /// Watches this stream with `watchdog`'s timers, which start now.
    ///
    /// The returned [`Watched`] yields `Ok(item)` for each item, and ends
    /// either with this stream or after one `Err(StreamTimeout)` naming the
    /// timer that fired.
    fn watchdog(self, watchdog: Watchdog) -> Watched<Self>
    where
        Self: Sized,
    {
        Watched::new(self, watchdog)
    }
}

impl<S: Stream + ?Sized> WatchdogExt for S {}
