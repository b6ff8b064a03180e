//! [`Watchdog`]: the three timers of a watched stream.

use std::time::Duration;

use crate::config::StreamConfig;

/// The timers a [`Watched`](super::Watched) stream enforces: first item,
/// inactivity and total, each optional.
///
/// Built with [`Watchdog::new`] and the setters, or from the `[stream]`
/// section of the configuration with [`Watchdog::from_config`]. Every timer is
/// off until set, and setting it to `None` or [`Duration::ZERO`] turns it off
/// again: a zero window never fires, whatever the stream or its
/// [handle](super::WatchdogHandle) does.
///
/// The timers start when the watchdog is attached with
/// [`WatchdogExt::watchdog`](super::WatchdogExt::watchdog), like
/// [`tokio::time::timeout`] starts at its call, not at the first poll.
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
///     let watchdog = Watchdog::new()
///         .first_item(Duration::from_secs(90))
///         .inactivity(Duration::from_secs(30))
///         .total(Duration::from_secs(900));
///
///     // One chunk, then the upstream hangs.
///     let chunks = stream::iter(["hello"]).chain(stream::pending());
///     let mut watched = chunks.watchdog(watchdog);
///
///     let start = tokio::time::Instant::now();
///     assert_eq!(watched.next().await.unwrap(), Ok("hello"));
///     let err = watched.next().await.unwrap().unwrap_err();
///     assert_eq!(err.kind(), TimeoutKind::Inactivity);
///     assert_eq!(start.elapsed(), Duration::from_secs(30));
///     assert!(watched.next().await.is_none());
/// }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[must_use = "a watchdog does nothing until attached to a stream with `.watchdog(..)`"]
pub struct Watchdog {
    first_item: Option<Duration>,
    inactivity: Option<Duration>,
    total: Option<Duration>,
}

impl Watchdog {
    /// A watchdog with every timer off.
    pub const fn new() -> Self {
        Self {
            first_item: None,
            inactivity: None,
            total: None,
        }
    }

    /// The timers of the `[stream]` configuration section: first item from
    /// `first_chunk_timeout_secs`, inactivity from
    /// `stream_inactivity_timeout_secs`, total from `stream_timeout_secs`;
    /// `0` turns a timer off.
    ///
    /// With the defaults: first item 90 s, inactivity off, total 900 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use timebox::config::StreamConfig;
    /// use timebox::watchdog::Watchdog;
    ///
    /// let watchdog = Watchdog::from_config(&StreamConfig::default());
    /// assert_eq!(watchdog.first_item_timeout(), Some(Duration::from_secs(90)));
    /// assert_eq!(watchdog.inactivity_timeout(), None);
    /// assert_eq!(watchdog.total_timeout(), Some(Duration::from_secs(900)));
    /// ```
    pub fn from_config(config: &StreamConfig) -> Self {
        // The config's accessors are the one place where `0` means off.
        Self::new()
            .first_item(config.first_chunk_timeout())
            .inactivity(config.inactivity_timeout())
            .total(config.stream_timeout())
    }

    /// Ends the stream when its first item (of any kind, errors included)
    /// has not arrived within `window` of the start.
    ///
    /// A [`Suspension`](super::Suspension) taken before the first item holds
    /// this timer off, and a full window starts when the last one ends: a
    /// tool call made before any output does not count as waiting.
    ///
    /// `None` or zero turns the timer off.
    pub fn first_item(mut self, window: impl Into<Option<Duration>>) -> Self {
        self.first_item = on(window.into());
        self
    }

    /// Ends the stream when `window` passes with no item and no
    /// [`touch`](super::WatchdogHandle::touch) after the last one.
    ///
    /// The timer is armed by the first item and re-armed (a full window from
    /// then) by every item and touch; it cannot fire while a
    /// [`Suspension`](super::Suspension) is alive. `None` or zero turns it
    /// off.
    pub fn inactivity(mut self, window: impl Into<Option<Duration>>) -> Self {
        self.inactivity = on(window.into());
        self
    }

    /// Ends the stream when it is still running `limit` after the start,
    /// however active it is. Suspensions do not pause it.
    ///
    /// `None` or zero turns the timer off.
    pub fn total(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.total = on(limit.into());
        self
    }

    /// The first-item window, `None` when off.
    #[must_use]
    pub const fn first_item_timeout(&self) -> Option<Duration> {
        self.first_item
    }

    /// The inactivity window, `None` when off.
    #[must_use]
    pub const fn inactivity_timeout(&self) -> Option<Duration> {
        self.inactivity
    }

    /// The total limit, `None` when off.
    #[must_use]
    pub const fn total_timeout(&self) -> Option<Duration> {
        self.total
    }
}

/// A zero window would fire at once on every arm; it means "off" instead.
fn on(window: Option<Duration>) -> Option<Duration> {
    window.filter(|window| !window.is_zero())
}
