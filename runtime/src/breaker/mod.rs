//! Circuit breaker: stop calling a host that is down, and find out when it is
//! back.
//!
//! Retries and a retry budget limit how much *extra* load a failing host gets;
//! a breaker stops the first attempts too. The client keeps one
//! [`CircuitBreaker`] per upstream host (clones share it) and asks it before
//! every call: [`CircuitBreaker::try_acquire`] answers at once, either with a
//! [`Permit`] for the call or with [`Open`], in which case the host is not
//! contacted at all.
//!
//! A host is a name and a port (B1's host key): a name behind a load
//! balancer (a Kubernetes Service) is one breaker for all the instances
//! behind it. Half of them failing fails about half the calls, enough to
//! open it (at 0.5) for all; and since the first failed trial opens it
//! again, it closes only once `half_open_trials` trials in a row reach good
//! instances (one round in eight with half of them down, and three
//! trials). Envoy's outlier detection and Finagle's failure accrual judge
//! each instance apart; a client that knows the instances can call each by
//! its own address, which gives each its breaker.
//!
//! # States
//!
//! - **Closed.** Every call is admitted. Outcomes are counted in a rolling
//!   window of `window_secs` (10) split into `window_buckets` (10) buckets on
//!   tokio's clock, so an outcome leaves the window at most `window_secs`
//!   after it was recorded. After every counted outcome, once the window
//!   holds at least `minimum_sample_count` (10) calls, the breaker opens when
//!   `failures / calls ≥ failure_ratio_threshold` (0.5) or
//!   `slow / calls ≥ slow_call_rate_threshold` (1.0).
//! - **Open** for `open_secs` (60): every call is refused with [`Open`].
//! - **Half-open** after that: up to `half_open_trials` (3) trial calls are
//!   admitted at once, and no more until they end. When that many trials
//!   have succeeded (and none was slow) the breaker closes with an empty
//!   window; the first failed or slow trial opens it again for a full
//!   `open_secs`. A trial that ends without an outcome frees its slot for
//!   another call. No timer runs for the move from open: the breaker makes
//!   it, logs it and tells it when it is next asked (a call, or
//!   [`CircuitBreaker::state`]), as resilience4j does by default, so the
//!   `timebox.breaker.state` gauge of a host nobody calls stays at open.
//!
//! # What a call counts as
//!
//! A [`Permit`] reports one outcome:
//!
//! | the holder | counted as |
//! |---|---|
//! | [`success`](Permit::success), or [`record_status`](Permit::record_status) below 500 | a call |
//! | [`failure`](Permit::failure), or [`record_status`](Permit::record_status) 500 and above | a call and a failure |
//! | drops it (cancelled) within the slow-call threshold | nothing |
//! | drops it after the slow-call threshold, `cancelled_call_outcome = "slow"` | a call and a slow call |
//! | drops it after the slow-call threshold, `cancelled_call_outcome = "failure"` | a call and a failure (not slow) |
//!
//! The client's long-running calls (`RequestBuilder::long_running`, feature
//! `client`) count no time: never slow, and nothing when cancelled or cut
//! by their attempt timeout.
//!
//! A success or failure that took longer than
//! `slow_call_duration_threshold_secs` (60; 0 turns slow calls off) is *also*
//! a slow call: slow calls are counted apart, for the slow-call rate, so a
//! slow success never counts towards the failure ratio. "Longer" is strict: a
//! call of exactly the threshold is not slow.
//!
//! Cancelled calls are the reason dropping a permit is not a failure: when our
//! own deadline ends a call (`DeadlineExceeded`), the host is not to blame,
//! and a service under a tight deadline must not open breakers to healthy
//! hosts. Only a cancelled call that had already run past the slow-call
//! threshold says something about the host.
//!
//! The other side of that rule: a host that takes connections and never
//! answers is, to each caller, a call its own deadline ended, so it opens
//! no breaker while the deadlines are shorter than both the attempt timeout
//! (`http.client.timeout_secs`, 30) and the slow-call threshold (60). An
//! attempt that its timeout ends with time still left *is* the host's
//! failure (C2: an ordinary timeout), and a cancelled call past the
//! threshold is slow. To have such a host fail fast, set the attempt
//! timeout below the deadlines the calls run under (a few times the host's
//! usual latency, say): a host that hangs on some calls only is found that
//! way alone, since slow calls open the breaker only when all of the
//! window's are (`slow_call_rate_threshold`, 1.0).
//!
//! An outcome counts only in the state its permit was issued in: a call
//! admitted while closed that ends after the breaker opened is ignored, and
//! so is a trial that ends after another trial reopened the breaker.
//!
//! Every change of state is logged with the host: `warn!` when the breaker
//! opens (with the window's failure and slow ratios, its sample count and
//! how long it stays open), `debug!` when it admits trials and `info!` when
//! it closes. One thread tells a breaker's events at a time, so that every
//! observer hears them in the order they were made; an event made while
//! another thread tells is told by that thread, inside the span of the
//! call that made it, so its lines belong to that call's request.
//!
//! Every permit settles exactly once, whether it reports an outcome, is
//! dropped, or is dropped by a panic, so half-open slots never leak. The
//! state sits behind one short-held lock, never held across an `.await`.
//!
//! # Examples
//!
//! ```
//! use timebox::breaker::{BreakerConfig, CircuitBreaker, Open};
//!
//! #[tokio::main]
//! # async fn _hidden() {}
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     async fn call_host(breaker: &CircuitBreaker) -> Result<http::StatusCode, Open> {
//!         let permit = breaker.try_acquire()?;
//!         let status = http::StatusCode::OK; // send the request here
//!         permit.record_status(status);
//!         Ok(status)
//!     }
//!
//!     let breaker = CircuitBreaker::new(&BreakerConfig::default());
//!     assert_eq!(call_host(&breaker).await, Ok(http::StatusCode::OK));
//! }
//! ```

mod circuit;
mod error;
mod permit;
mod shared;
mod state;
mod transition;
mod window;

pub use crate::config::{BreakerConfig, CancelledCallOutcome};
pub use circuit::CircuitBreaker;
pub use error::Open;
pub use permit::Permit;
pub use state::BreakerState;
pub use window::CallCounts;
