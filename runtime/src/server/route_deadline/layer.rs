//! [`RouteDeadlineLayer`]: a route's deadline, as a layer.

use std::sync::Once;
use std::time::Duration;

use tower_layer::Layer;

use crate::server::RouteTimeout;

use super::RouteDeadline;

/// Applies a route's deadline to any `tower::Service<http::Request<B>>`.
///
/// The deadline is the route's ([`RouteTimeout`]) counted from when the
/// request entered [`TimeboxLayer`](crate::server::TimeboxLayer), shortened by an
/// accepted inbound deadline header. The inner service's future runs
/// poll-gated under it with the deadline current, so extraction and the
/// handler see it and stop at it. When it passes, the inner future is dropped
/// (releasing whatever it held) and the answer is a 503
/// `application/problem+json` with a jittered `Retry-After` and the
/// [`DeadlineCancelled`](crate::server::DeadlineCancelled) extension. A deadline of
/// zero is answered without calling the inner service, and one that has
/// passed by the time the inner future would first run never polls it.
///
/// A route with no deadline passes straight through: no clock is read.
///
/// The inner service may answer with any body of `Bytes`, as after a
/// tower-http layer in one `tower::ServiceBuilder`; the answer is axum's
/// [`Response`](axum::response::Response), an axum body kept as it is.
///
/// A layer sees the inner service's response, not the error it was made
/// from: timebox's own deadline errors that are responses
/// (`ClientError::DeadlineExceeded`, `PgError::DeadlineExceeded`) answer
/// 504 by themselves, but an error type of your own that carries one in its
/// `source()` chain answers what its `IntoResponse` says. The route macros,
/// which see the handler's output, answer it 504 too (S6).
///
/// Under a `TimeboxLayer` this route's rule replaces the global deadline
/// (a longer override and [`RouteTimeout::Off`] included), counted from
/// when the request reached the `TimeboxLayer`. Used without one, the
/// deadline counts from this layer and [`RouteTimeout::Inherit`] means no
/// deadline (there is no global one). Its events go to the observers of
/// the `TimeboxLayer`'s config: without one, only the `tracing` sink hears
/// them, since this layer is built from no config. The deadline check
/// (`server.admission.deadline_check`) does not judge a route under this
/// layer, under a `TimeboxLayer` or not: mount it with the macros for one.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use axum::{routing::get, Router};
/// use timebox::server::{RouteDeadlineLayer, RouteTimeout};
///
/// let app: Router = Router::new().route(
///     "/report",
///     get(|| async { "done" })
///         .layer(RouteDeadlineLayer::new(RouteTimeout::Override(Duration::from_secs(2)))),
/// );
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RouteDeadlineLayer {
    timeout: RouteTimeout,
}

impl RouteDeadlineLayer {
    /// A layer that applies `timeout`.
    #[must_use]
    pub const fn new(timeout: RouteTimeout) -> Self {
        Self { timeout }
    }
}

impl<S> Layer<S> for RouteDeadlineLayer {
    type Service = RouteDeadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        if self.timeout == RouteTimeout::Override(Duration::ZERO) {
            // Once: axum calls `layer` for each method of the route, and,
            // on a router that was given no state, again per request.
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                tracing::warn!(
                    "a route deadline of 0 answers every request 503 without running it; \
                     RouteTimeout::Off is no deadline"
                );
            });
        }
        RouteDeadline {
            inner,
            timeout: self.timeout,
        }
    }
}
