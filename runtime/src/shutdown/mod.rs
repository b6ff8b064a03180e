//! Graceful shutdown in two phases, and the count of requests in flight.
//!
//! A [`Shutdown`] coordinates two tokens. Once it is triggered, the
//! sequence that [`Shutdown::wait_drained`] runs (and `serve`, which
//! awaits it) cancels the [`ShutdownToken`] first (phase 1: no new
//! requests; one that still arrives is answered 503), and later the
//! [`DrainToken`] (phase 2: streams still running are told to end). Between
//! the two, requests already admitted finish; [`InFlight`] counts them so the
//! wait can end as soon as the last one does. The phases advance only while
//! something awaits `wait_drained`: a trigger alone flips readiness and
//! cancels neither token.
//!
//! ```
//! use std::time::Duration;
//! use timebox::config::Config;
//! use timebox::shutdown::Shutdown;
//!
//! #[tokio::main]
//! # async fn _hidden() {}
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     // The doctest runs this on a paused clock (`start_paused`), where the
//!     // times below are exact.
//!     let shutdown = Shutdown::new(&Config::default()); // a pre-stop grace of 5 s
//!     let token = shutdown.token();
//!     let start = tokio::time::Instant::now();
//!     shutdown.trigger();
//!     assert!(!token.is_cancelled()); // only readiness has flipped
//!     // Nothing in flight: both phases follow the pre-stop grace at once.
//!     shutdown.wait_drained().await;
//!     assert_eq!(start.elapsed(), Duration::from_secs(5));
//!     assert!(token.is_cancelled());
//!     assert!(shutdown.drain_token().is_cancelled());
//! }
//! ```

mod coordinator;
mod in_flight;
mod sequence;
mod signals;
mod token;
#[cfg(any(feature = "server", feature = "grpc"))]
mod unanswered;

pub use coordinator::Shutdown;
#[cfg(feature = "server")]
pub(crate) use coordinator::{require_timer, ConnectionBounds};
pub use in_flight::{InFlight, InFlightGuard};
pub use token::{DrainToken, ShutdownToken};
#[cfg(any(feature = "server", feature = "grpc"))]
pub(crate) use unanswered::Unanswered;
