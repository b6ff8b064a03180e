//! Time as a first-class part of async services.
//!
//! timebox gives a tokio service one consistent answer to "how long may this
//! work run, and what happens when time is up":
//!
//! - [`deadline`]: request deadlines that follow the work (task-local, on
//!   tokio's clock), gate every poll, shorten across nested scopes and travel
//!   to other services in a relative-milliseconds header.
//! - [`entropy`]: the one seedable random source behind every jittered choice.
//! - [`retry`]: retries that cannot become a storm: per-host retry budgets,
//!   jittered backoff, `Retry-After` hints and what may be retried.
//! - [`breaker`]: a circuit breaker per upstream host that stops calling a
//!   host that is down and lets a few trial calls find out when it is back.
//! - [`shutdown`]: graceful shutdown in two phases and the in-flight count.
//! - [`watchdog`]: streams that cannot hang: bounds on the first item, on
//!   silence between items and on the whole stream.
//! - [`registry`]: the requests in flight by id, to cancel one from
//!   anywhere and run its cleanup in a set order.
//! - [`observe`]: every decision as an event, for `tracing`, `metrics` and
//!   OpenTelemetry.
#![cfg_attr(
    feature = "client",
    doc = "- [`client`]: outbound HTTP with retries that fit the time left, the per-host budget and breaker, hedging; also as a reqwest middleware (feature `reqwest-middleware`) and a tower layer."
)]
#![cfg_attr(
    feature = "sqlx",
    doc = "- [`db`]: pool waits and Postgres statement timeouts (feature `postgres`) that follow the deadline."
)]
#![cfg_attr(
    feature = "server",
    doc = "- [`server`]: route deadlines for axum: macros, layers, timeout responses."
)]
#![cfg_attr(
    feature = "grpc",
    doc = "- [`grpc`]: gRPC deadlines for tonic, in both directions."
)]
//! - [`config`]: the settings, from `timebox.toml`, a profile and the
//!   environment.
#![cfg_attr(
    feature = "sim",
    doc = "- [`sim`]: deterministic tests in virtual time with `#[sim_test]`."
)]
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
//!     async fn lookup() -> &'static str {
//!         tokio::time::sleep(Duration::from_secs(3)).await;
//!         "found"
//!     }
//!
//!     let result = Deadline::after(Duration::from_secs(1))
//!         .scope(bounded(lookup()))
//!         .await;
//!     assert_eq!(result.unwrap_err().to_string(), "deadline exceeded");
//! }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "server", feature = "client", feature = "grpc"))]
mod admission;
mod attempt;
mod bounded_map;
pub mod breaker;
#[cfg(feature = "client")]
pub mod client;
pub mod config;
#[cfg(feature = "sqlx")]
pub mod db;
pub mod deadline;
pub mod entropy;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod observe;
#[cfg(feature = "server")]
mod problem;
pub mod registry;
pub mod retry;
#[cfg(feature = "server")]
pub mod server;
pub mod shutdown;
#[cfg(feature = "sim")]
pub mod sim;
mod thread_cell;
pub mod watchdog;

#[cfg(feature = "sim")]
pub use timebox_macros::sim_test;
#[cfg(all(feature = "macros", feature = "server"))]
pub use timebox_macros::{delete, get, head, options, patch, post, put};

#[doc(hidden)]
pub mod __private;

/// The README's examples, compiled and run as doctests with the features
/// they use (`cargo test --workspace --all-features` turns them all on).
#[cfg(all(
    doctest,
    feature = "macros",
    feature = "server",
    feature = "client",
    feature = "sim",
    feature = "grpc",
    feature = "postgres",
    feature = "reqwest-middleware"
))]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
