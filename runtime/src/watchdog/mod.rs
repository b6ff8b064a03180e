//! Stream watchdogs: end a long stream that never starts, stalls, or runs too
//! long.
//!
//! A [`Watchdog`] holds three optional timers, attached to any [`Stream`]
//! with [`WatchdogExt::watchdog`]; the resulting [`Watched`] stream yields
//! `Ok(item)` until one fires, then one `Err(`[`StreamTimeout`]`)` whose
//! [`kind`](StreamTimeout::kind) names the cause, and ends:
//!
//! - **first item** ([`TimeoutKind::FirstItem`]): the time from the start to
//!   the first item of *any* kind. An error item counts: items are whatever
//!   the stream yields, its own `Result`s included.
//! - **inactivity** ([`TimeoutKind::Inactivity`]): disarmed until the first
//!   item, then re-armed, a full window from now, by every item and every
//!   [`WatchdogHandle::touch`].
//! - **total** ([`TimeoutKind::Total`]): the whole life of the stream. Never
//!   suspended.
//!
//! The timers start when the watchdog is attached. A timer set to zero (or to
//! `0` in the `[stream]` configuration, read by [`Watchdog::from_config`]) is
//! off and never fires.
//!
//! # Progress the stream does not show
//!
//! Some streams go quiet for good reasons: a model waits for a tool call to
//! finish. A [`WatchdogHandle`] (from [`Watched::handle`]; cloneable,
//! `Send + Sync`) lets other tasks report that: [`touch`](WatchdogHandle::touch)
//! counts as activity, and [`suspend`](WatchdogHandle::suspend) returns a
//! [`Suspension`] guard that holds the inactivity timer off while it lives.
//! Suspensions are counted, so parallel tool calls each hold one and the
//! timer restarts, with a full window, only when the last one ends. Touches
//! during a suspension do nothing. The first-item and inactivity timers are
//! both *silence* timers, and a suspension holds whichever is running: a tool
//! call made before any output pauses the first-item wait, and a full
//! first-item window starts when it ends. A touch before the first item does
//! nothing: only the stream's own first item ends that wait.
//!
//! Heartbeats are not progress. An SSE keep-alive comment shows that the
//! connection is open, not that the stream moves; code that sends heartbeats
//! must never call `touch`, or a stalled stream would live forever.
//!
//! # Deterministic at the edges
//!
//! Every poll of a [`Watched`] stream reads the clock *before* polling the
//! inner stream, like [`bounded`](crate::deadline::bounded) does for futures:
//! at or past a deadline the timeout is yielded and the inner stream is not
//! polled. So when an item and a timer are due at the same instant, the timer
//! wins.
//!
//! # Slow consumers
//!
//! Expiry is a comparison with the clock, made at every poll, not something
//! counted on sends: a consumer that polls late still gets the timeout whose
//! instant has passed. The timers live in the stream's own state, so they
//! only act when someone polls it. A server therefore drives the `Watched`
//! stream from a producer task that forwards items into a bounded channel,
//! and races each blocked send against [`Watched::timed_out`]: when the
//! reader stops reading, the producer still sees the timeout at its instant
//! and can cancel the upstream work.
//!
//! Time is read only through [`tokio::time::Instant`], so a paused test clock
//! controls every timer.
//!
//! [`Stream`]: futures_core::Stream
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use futures_util::{stream, StreamExt};
//! use timebox::watchdog::{TimeoutKind, Watchdog, WatchdogExt};
//!
//! #[tokio::main]
//! # async fn _hidden() {}
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     // The doctest runs this on a paused clock (`start_paused`), where the
//!     // times below are exact.
//!     let start = tokio::time::Instant::now();
//!     let ticks = stream::iter(1..=3)
//!         .then(|n| async move {
//!             tokio::time::sleep(Duration::from_secs(20)).await;
//!             n
//!         })
//!         .chain(stream::pending());
//!     let watchdog = Watchdog::new()
//!         .first_item(Duration::from_secs(90))
//!         .inactivity(Duration::from_secs(30));
//!
//!     let items: Vec<_> = ticks.watchdog(watchdog).collect().await;
//!     assert_eq!(items[..3], [Ok(1), Ok(2), Ok(3)]);
//!     assert_eq!(items[3].unwrap_err().kind(), TimeoutKind::Inactivity);
//!     // The last item came at 60 s.
//!     assert_eq!(start.elapsed(), Duration::from_secs(90));
//! }
//! ```

mod builder;
mod error;
mod ext;
mod handle;
mod timers;
mod watched;

pub use builder::Watchdog;
pub use error::{StreamTimeout, TimeoutKind};
pub use ext::WatchdogExt;
pub use handle::{Suspension, WatchdogHandle};
pub use watched::{TimedOut, Watched};
