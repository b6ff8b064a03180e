//! Admission (DESIGN §14): work that cannot finish in time never starts,
//! and a server runs no more at once than it can serve.
//!
//! - [`DeadlineCheck`] (A1) compares a request's time left with its
//!   route's service time, from the route's `min_budget_ms` or the median
//!   of its recent successes ([`LatencyWindow`]), and refuses (or, in dark
//!   mode, counts) the ones that cannot make it, capped by [`FractionCap`].
//! - [`Limiter`] (A2) is the concurrency limit with its CoDel queue.
//!
//! The server applies both (see `timebox::server`); the client's hedging
//! (A3) reuses [`LatencyWindow`] for its delays and [`FractionCap`] for its
//! extra load.

#[cfg(any(feature = "server", feature = "grpc"))]
mod deadline_check;
mod fraction;
#[cfg(feature = "server")]
mod limit;
#[cfg(feature = "server")]
mod limiter;
#[cfg(feature = "grpc")]
mod route_checks;
mod window;

#[cfg(any(feature = "server", feature = "grpc"))]
pub(crate) use deadline_check::DeadlineCheck;
#[cfg(feature = "grpc")]
pub(crate) use deadline_check::TooShort;
#[cfg(feature = "client")]
pub(crate) use fraction::FractionCap;
#[cfg(feature = "server")]
pub(crate) use limiter::{Acquire, Limiter, Permit, Refusal};
#[cfg(feature = "grpc")]
pub(crate) use route_checks::RouteChecks;
#[cfg(feature = "client")]
pub(crate) use window::{Estimate, LatencyWindow};
