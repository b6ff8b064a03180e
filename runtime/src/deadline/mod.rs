//! Request deadlines: a point on tokio's clock that travels with the work.
//!
//! A [`Deadline`] is set once, where a request enters (a route's timeout, an
//! inbound [`header`]), and read everywhere below it without being passed by
//! hand: [`Deadline::scope`] makes it the *current* deadline of a future, and
//! [`Deadline::current`] reads it back. Scopes nest and can only shorten:
//! inside a 5 s scope, a 1 s scope sees 1 s, and a 10 s scope still sees 5 s.
//!
//! Setting a deadline does not stop anything by itself. [`bounded()`] is the
//! gate: it wraps a future and checks the clock before *every* poll, so work
//! that becomes ready at or after the deadline never runs. Outbound calls,
//! pool waits and route handlers are bounded this way.
//!
//! The current deadline is task-local: [`tokio::spawn`] does not carry it,
//! because a spawned task may outlive the request. Wrap the task in
//! `deadline.scope(..)` to carry it on purpose, and use [`unscoped`] for work
//! that must run with no deadline at all. Neither does
//! [`tokio::task::spawn_blocking`] or a thread of your own: read
//! `Deadline::current()` before, and run the closure in
//! [`Deadline::sync_scope`] (a `Handle::block_on` inside it then sees it).
//!
//! A future reads the current deadline where it is polled, each time it
//! reads it: a timebox outbound call takes it when it starts. A future that
//! several requests await together (a `futures::future::Shared` that
//! deduplicates one lookup) is polled from whichever of them polls it, so
//! its call runs under the deadline of the request that polled it first,
//! and when that one passes the call fails for all of them, with
//! `DeadlineExceeded`, whatever time they had left. Give such a future a
//! deadline of its own, outside every request's:
//! `unscoped(Deadline::after(limit).scope(lookup))` (a scope inside a
//! request's would only shorten it, see above).
//!
//! Time is read only through [`tokio::time::Instant`], so a paused test clock
//! (or `#[sim_test]`) controls every deadline.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use timebox::deadline::{bounded, Deadline};
//!
//! #[tokio::main]
//! # async fn _hidden() {}
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     // The doctest runs this on a paused clock (`start_paused`), where the
//!     // times below are exact.
//!     let deadline = Deadline::after(Duration::from_secs(1));
//!     let result = deadline
//!         .scope(async {
//!             // Anything below can ask how much time is left...
//!             assert!(Deadline::current().is_some());
//!             // ...and be stopped when it runs out.
//!             bounded(tokio::time::sleep(Duration::from_secs(10))).await
//!         })
//!         .await;
//!     assert!(result.is_err());
//! }
//! ```

mod bounded;
mod error;
mod formats;
#[cfg(any(feature = "server", feature = "grpc"))]
mod gated;
// Public as `grpc::timeout`; the HTTP side reads it as a mesh header.
#[cfg_attr(not(feature = "grpc"), allow(dead_code, unreachable_pub))]
pub(crate) mod grpc_timeout;
pub mod header;
mod point;
mod scope;

#[cfg(feature = "client")]
pub(crate) use bounded::BoundedStream;
pub use bounded::{bounded, Bounded};
#[cfg(feature = "server")]
pub(crate) use error::find;
pub use error::{is_deadline_exceeded, DeadlineExceeded};
#[cfg(feature = "grpc")]
pub(crate) use formats::trusted_value;
pub use formats::Format;
#[cfg_attr(
    not(any(feature = "server", feature = "client", feature = "grpc")),
    allow(unused_imports)
)]
pub(crate) use formats::Formats;
#[cfg(any(feature = "server", feature = "grpc"))]
pub(crate) use gated::{Gated, Start};
pub use point::Deadline;
pub use scope::{unscoped, Scope, Unscoped};

/// How early a peer may answer the time left it was sent and still be
/// answering that time running out, not a deadline of its own: what was
/// sent is whole milliseconds, a timebox server counts a `grpc-timeout`
/// from a millisecond before it reads its clock (so that its answer comes
/// before tonic's own), and timers keep whole milliseconds.
#[cfg(any(feature = "client", feature = "grpc"))]
pub(crate) const PEER_LEAD: std::time::Duration = std::time::Duration::from_millis(2);
