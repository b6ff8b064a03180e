//! Admission (DESIGN §14): work that cannot finish in time never starts,
//! and a server runs no more at once than it can serve.
//!
//! - [`DeadlineCheck`] (A1) compares a request's time left with its
//!   route's service time, from the route's `min_budget_ms` or the median
//!   of its recent successes ([`LatencyWindow`]), and refuses (or, in dark
//!   mode, counts) the ones that cannot make it, capped by [`RejectCap`].
//! - [`Limiter`] (A2) is the concurrency limit with its CoDel queue.
//!
//! The server applies both (see `timebox::server`); the client reuses
//! [`LatencyWindow`] for its hedging delays (A3).

mod cap;
mod deadline_check;
mod limit;
mod limiter;
mod window;

pub(crate) use deadline_check::{DeadlineCheck, EstimateSource, Verdict};
pub(crate) use limiter::{Acquire, Limiter, Permit, Refusal};
