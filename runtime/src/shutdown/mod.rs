//! Graceful shutdown in two phases, and the count of requests in flight.
//!
//! A [`Shutdown`] coordinates two tokens. When it is triggered, the
//! [`ShutdownToken`] is cancelled first (phase 1: no new requests; one that
//! still arrives is answered 503), and later the
//! [`DrainToken`] (phase 2: streams still running are told to end). Between
//! the two, requests already admitted finish; [`InFlight`] counts them so the
//! wait can end as soon as the last one does.
//!
//! ```
//! use timebox::config::Config;
//! use timebox::shutdown::Shutdown;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let shutdown = Shutdown::new(&Config::default());
//! let token = shutdown.token();
//! assert!(!token.is_cancelled());
//! shutdown.trigger();
//! // Nothing in flight: both phases follow the pre-stop grace at once.
//! shutdown.wait_drained().await;
//! assert!(token.is_cancelled());
//! assert!(shutdown.drain_token().is_cancelled());
//! # }
//! ```

mod coordinator;
mod in_flight;
mod sequence;
mod signals;
mod token;

#[cfg(feature = "server")]
pub(crate) use coordinator::ConnectionBounds;
pub use coordinator::Shutdown;
pub use in_flight::{InFlight, InFlightGuard};
pub use token::{DrainToken, ShutdownToken};
