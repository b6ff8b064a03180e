//! axum and tower integration: route deadlines, timeout responses, shutdown.
//!
//! Handlers are ordinary axum handlers. An attribute gives each its method,
//! path and deadline rule, and [`routes!`](crate::routes) collects them:
//!
//! ```
//! use std::time::Duration;
//! use timebox::config::Config;
//! use timebox::{get, post, routes};
//!
//! #[get("/report", timeout_ms = 120000)]
//! async fn report() -> &'static str {
//!     "a long report"
//! }
//!
//! #[post("/upload", timeout_ms = 60000)]
//! async fn upload(body: String) -> String {
//!     format!("{} bytes", body.len())
//! }
//!
//! #[get("/events", timeout = "off")]
//! async fn events() -> &'static str {
//!     "a stream that ends when its client goes"
//! }
//!
//! #[get("/health")]
//! async fn health() -> &'static str {
//!     "ok"
//! }
//!
//! let mut config = Config::default();
//! config.server.timeouts.request_timeout_ms = Some(5_000);
//! let app: axum::Router = routes![report, upload, events, health].into_router(&config);
//! ```
//!
//! # What a request goes through
//!
//! 1. [`ShutdownGate`], which [`serve()`] puts around the whole service: 503
//!    once the server stops taking new requests (phase 1), and the
//!    in-flight count.
//! 2. Routing, then the route's deadline, when it has one: the route's
//!    override, else the global `request_timeout_ms`, else none. It counts
//!    from the first poll of the handler's future, before extraction, or,
//!    under a [`TimeboxLayer`], from when the request reached that layer
//!    (so a wait in its concurrency queue counts); an inbound deadline
//!    header, accepted when
//!    `server.timeouts.accept_deadline_header` is on (in the formats of
//!    `server.timeouts.deadline_headers`, the earliest winning), can only
//!    shorten it.
//! 3. The handler, extractors included, runs poll-gated under the deadline
//!    (see [`bounded`](crate::deadline::bounded)) with the deadline current,
//!    so outbound calls and pool waits below it see it too.
//! 4. When the deadline passes, the handler's future is dropped and the answer
//!    is `503 Service Unavailable`, `application/problem+json`, with
//!    `Cache-Control: no-store` (as every problem+json answer timebox
//!    writes: it is about one request), `Retry-After` of 1, 2 or 3 seconds
//!    drawn from
//!    [`Entropy`](crate::entropy::Entropy) (the simulation's under
//!    `Sim::app`, else the `TimeboxLayer`'s around the router, else one
//!    OS-seeded source), and the [`DeadlineCancelled`]
//!    extension. A `warn!` names the method, route, deadline, elapsed time
//!    and where the deadline came from (`source`: the route, the global
//!    deadline or the header).
//! 5. A handler that returns an error whose `source()` chain holds a
//!    [`DeadlineExceeded`](crate::deadline::DeadlineExceeded) (it called
//!    something that ran out of time) answers `504 Gateway Timeout` with
//!    `DeadlineCancelled`, whatever the error's own `IntoResponse` says; a
//!    pool wait the deadline cut short (`timebox::db`) answers 503 with
//!    `Retry-After` instead (the wait ran out, not the work). Other
//!    errors are left alone.
//!
//! Only the time to the response head is bounded: a streaming body keeps
//! going after the handler returned. A route with no deadline, mounted
//! without a `TimeboxLayer`, reads no clock.
//!
//! # Admission
//!
//! Before step 3, two rules of `[server.admission]` may keep
//! the handler from running at all, so a refused request reads no body:
//!
//! - The deadline check (`deadline_check`, default `"dark"`): a request
//!   whose time left is below its route's service time (the route's
//!   `min_budget_ms`, else the median of its successful requests of the
//!   last 30 s, at most the newest 512, once there are 100) is refused
//!   with `504`, problem+json type `urn:timebox:deadline-too-short`
//!   naming both numbers, no `Retry-After`, and `x-timebox-shed:
//!   deadline_too_short`; in dark mode
//!   it is only counted (`request_shed`, reason `deadline_too_short_dark`).
//!   At most `max_reject_fraction` of a route's requests in any 10 s are
//!   refused. Routes mounted by the macros check for themselves; plain
//!   routes are checked by a `TimeboxLayer` with a global deadline, each
//!   method of a path on its own (`HEAD` with `GET`), from its second
//!   request on (the first tells it whether the route has a rule of its
//!   own for that method). A route under a `RouteDeadlineLayer` has no
//!   check, under a `TimeboxLayer` too: the layer leaves a route with a
//!   rule of its own to that rule, and the `RouteDeadlineLayer` has no
//!   window of its own to judge by. Mount it with the macros for one.
//! - The concurrency limit (`concurrency`, default `"off"`), applied by
//!   [`TimeboxLayer`] to every route under it: a request over the limit
//!   waits, at most until the deadline known there (the global one,
//!   shortened by an accepted header), and CoDel sheds it once it waited
//!   `queue.target_ms` while the queue has not been empty for
//!   `queue.interval_ms` (`503`, jittered `Retry-After`, `x-timebox-shed:
//!   overloaded`); while congested the newest waiter is served first. The
//!   first shed of a spell is a `warn!`, and its end an `info!` saying how
//!   many were, at the first request (or answer) once none has been shed
//!   for 10 s: not a line per shed. A
//!   request holds its slot until its response head, its handler's
//!   extractors included, so also while they read its body: as with
//!   tower's `ConcurrencyLimit`, a client that sends bodies slowly holds
//!   slots for as long as it sends, bounded only by the route's deadline
//!   (and its long time there, or its being cut by that deadline, lowers
//!   an adaptive limit as slow server work would). Give the routes that take
//!   bodies a deadline where the limit is on. Without a
//!   `TimeboxLayer` no limit applies, and the routes of
//!   [`Routes::into_router`] say so in a `warn!` at their first request.
//!
//! Below all of this, [`serve()`] bounds each connection: a request head
//! must arrive within `server.header_read_timeout_ms`, an idle
//! keep-alive connection closes after `server.keep_alive_timeout_secs`,
//! and, with `server.max_connection_age_secs`, one past its age is told to
//! go (`Connection: close`, GOAWAY). A
//! request *body* that trickles in is bounded by the route's deadline, since
//! extractors run under it, and by nothing on a route without one.
//!
//! [`Routes::into_router`] applies steps 2–4 inside each handler rather than
//! as tower layers, because axum boxes and clones a service for every
//! `MethodRouter::layer` on every request. A router built without the
//! macros gets the same from layers: [`TimeboxLayer`] around it gives every
//! route the global deadline, and [`RouteDeadlineLayer`] gives one route its
//! own rule, which it keeps under a `TimeboxLayer`:
//!
//! ```
//! use std::time::Duration;
//! use axum::{routing::get, Router};
//! use timebox::config::Config;
//! use timebox::server::{RouteDeadlineLayer, RouteTimeout, TimeboxLayer};
//!
//! let mut config = Config::default();
//! config.server.timeouts.request_timeout_ms = Some(2_000);
//! let app: Router = Router::new()
//!     .route("/users", get(|| async { "[]" })) // 2 s
//!     .route(
//!         "/export",
//!         get(|| async { "a long export" })
//!             .layer(RouteDeadlineLayer::new(RouteTimeout::Override(Duration::from_secs(120)))),
//!     )
//!     .layer(TimeboxLayer::new(&config));
//! ```
//!
//! All three doors run one mechanism (the same gated future and timeout
//! answer), and a deadline counts from the first timebox code that sees the
//! request after routing: the `TimeboxLayer`, else the route's own rule at
//! the first poll of its future; either way before extraction.

mod any_body;
mod context;
mod extract;
pub mod future;
mod gate;
mod guarded_body;
mod readiness;
pub(crate) mod respond;
mod route_deadline;
mod routes;
mod serve;
mod session;
pub mod sse;
mod timebox_layer;
mod timeout;

pub use crate::problem::DeadlineCancelled;
pub use crate::shutdown::ShutdownToken;
pub use gate::{ShutdownGate, ShutdownGateLayer};
pub use readiness::readiness;
use route_deadline::{DeadlineHandler, RouteSettings};
pub use route_deadline::{RouteDeadline, RouteDeadlineLayer};
pub use routes::{Route, Routes};
pub use serve::serve;
pub use session::{MapStatus, SaveSessionUnlessCancelledLayer};
pub use timebox_layer::{TimeboxLayer, TimeboxService};
pub use timeout::RouteTimeout;
