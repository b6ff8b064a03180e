//! The outbound client: retries that fit the time left (feature `client`).
//!
//! A [`Client`] call reads the current deadline
//! ([`Deadline::current`](crate::deadline::Deadline::current)) and keeps every
//! part of the call inside it:
//!
//! - **Attempts.** At most `max_retries + 1` (3 + 1). Before each one, a
//!   passed deadline ends the call with [`ClientError::DeadlineExceeded`]; each
//!   attempt's timeout is `min(timeout_secs, time left)` (a request's own
//!   [`timeout`](RequestBuilder::timeout) replaces `timeout_secs`), and it covers the
//!   attempt's whole chain of redirect hops (as reqwest's timeout does). A
//!   timeout that
//!   happened because the deadline passed is `DeadlineExceeded`; one with time
//!   left is [`ClientError::Timeout`] and can be retried.
//! - **The header.** Every attempt and every redirect hop carries each
//!   header listed in `http.client.deadline_headers` (by default
//!   `x-timebox-deadline-ms`) with that attempt's time left, so the next
//!   service works within the same deadline. A header the caller set, in
//!   timebox's format or a listed one, becomes the call's deadline when it
//!   is shorter: the first attempt sends it exactly as set, retries and
//!   hops what is left of it, and the other listed formats say the same
//!   time. (A first attempt that starts a millisecond or more after the
//!   header was read, as a `ClientLayer` call behind a `tower::Buffer` may,
//!   sends what is left of it too.) A caller's `x-timebox-deadline-ms` that
//!   the list leaves out shortens the deadline but is not sent. One of those headers that does
//!   not parse, or is set more than once, grants nothing, as on a request a
//!   server receives: the call goes under the task's deadline alone (if it
//!   has one), and a `warn!` line names the header. A service that copies
//!   an inbound request's headers onto its outbound calls should leave the
//!   deadline headers out: the deadline reaches the call through the task,
//!   already.
//! - **What is retried.** `429` (throttling); `500`, `502`, `503`, `504`,
//!   connection errors and attempt timeouts (transient); only for idempotent
//!   methods unless the request opts in
//!   ([`RequestBuilder::retry_non_idempotent`]).
//! - **Waiting.** Full jitter backoff from the app's
//!   [`Entropy`](crate::entropy::Entropy), plus the server's `Retry-After`
//!   hint (capped) on 429 and 503. A retry whose wait does not fit the time
//!   left is not started at all: the call returns the last response (a 429
//!   reaches the caller as a normal response) at once.
//! - **The budget.** Each host has a token bucket
//!   ([`RetryBudget`](crate::retry::RetryBudget)) that first attempts fill and
//!   retries drain, so retries stay near 10 % of traffic when a host keeps
//!   failing, however many layers retry. A request fills each host's bucket
//!   once, however often its redirects visit the host.
//! - **The breaker.** Each host has a
//!   [`CircuitBreaker`](crate::breaker::CircuitBreaker); an open one fails
//!   calls fast with [`ClientError::CircuitBreakerOpen`]. A call stopped by
//!   *our* deadline does not count against the host. `breaker.enabled =
//!   false` turns breakers off (the budget and the deadline still bound
//!   retries).
//! - **Logs.** Each retry, and each retry not made because the deadline, the
//!   budget or an open breaker refused it, is a `debug!` line with the host,
//!   the attempt and the reason; the breaker's changes of state are `warn!`
//!   (opened) and `info!` (closed), and a host's budget refusing retries is
//!   a `warn!` at the first refusal of a spell and an `info!` at the first
//!   call once none has been refused for 10 s: once each per spell.
//! - **Redirects** are followed by the client itself (never inside the HTTP
//!   stack): up to 10 hops, `303` (and `301`/`302` after a POST) becomes a
//!   GET, credentials are dropped across origins, and each hop is budgeted to
//!   its own host. (Through a reqwest client of the caller's, the reqwest
//!   middleware or [`ClientLayer`], whatever sends the request may add
//!   credentials timebox cannot take off: there a redirect to another
//!   origin is the answer.)
//!
//! # Timers and paused clocks
//!
//! Every attempt has a timer (`http.client.timeout_secs`, at least a
//! second), so a call through any door ([`Client`], [`ClientLayer`], the
//! reqwest middleware) polled on a runtime without tokio's timer
//! (`enable_time`) panics with tokio's message, as `tokio::time::timeout`
//! does. Under a paused clock (`#[tokio::test(start_paused = true)]`,
//! `tokio::time::pause`), tokio moves the clock to the next timer whenever
//! the runtime finds nothing ready: a server on another thread or in
//! another process answers after that jump, so each attempt times out at
//! once in virtual time (and counts against its host's breaker) and the
//! call fails with a timeout. Test such calls on the real clock, or keep
//! both sides in the simulation (`SimNet` hosts, feature `sim`).
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use timebox::client::Client;
//! use timebox::config::Config;
//! use timebox::deadline::Deadline;
//!
//! # async fn run() -> Result<(), timebox::client::ClientError> {
//! let client = Client::new(&Config::default());
//! let body = Deadline::after(Duration::from_secs(2))
//!     .scope(async {
//!         client.get("http://127.0.0.1:8080/users").send().await?.text().await
//!     })
//!     .await?;
//! # let _ = body;
//! # Ok(())
//! # }
//! ```

mod call;
#[allow(clippy::module_inception)]
mod client;
mod engine;
mod error;
mod hedge;
mod layer;
#[cfg(feature = "reqwest-middleware")]
pub mod middleware;
mod options;
mod redirect;
mod request;
mod response;
mod rules;
mod span;
mod transport;

pub use crate::attempt::{Attempt, AttemptKind};
pub use client::{Client, ClientBuilder};
pub use error::{BoxError, ClientError};
pub use layer::{ClientLayer, ClientService, ResponseFuture};
pub use options::CallOptions;
pub use request::{Pending, RequestBuilder};
pub use response::Response;
#[cfg(feature = "sim")]
pub(crate) use transport::BodyLength;
pub use transport::{RedirectsOn, ResponseBody, Transport, TransportError, TransportFuture};
/// The URL type [`Response::url`] gives, as reqwest re-exports it.
pub use url::Url;
