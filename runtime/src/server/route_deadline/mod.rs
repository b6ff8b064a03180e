//! [`RouteDeadlineLayer`]: one route's deadline around its handler.

mod admit;
mod claim;
mod expiry;
mod future;
mod handler;
mod outcome;
mod state;

use std::sync::Once;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::MatchedPath;
use axum::response::Response;
use http::Request;
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use crate::deadline::{Deadline, Gated, Start};
use crate::observe::Stage;

use super::context::RequestContext;
use super::RouteTimeout;

pub(crate) use admit::{admit, Learn};
pub(crate) use claim::{Probe, Probed, RouteClaim};
pub(crate) use expiry::{Expiry, RouteName};
pub use future::RouteDeadlineFuture;
pub(crate) use handler::{DeadlineHandler, RouteSettings, UnappliedLimit};
pub(crate) use outcome::{Answer, Outcome};
pub(crate) use state::State;

/// Applies a route's deadline to any `tower::Service<http::Request<B>>`.
///
/// The deadline is the route's ([`RouteTimeout`]) counted from when the
/// request entered [`TimeboxLayer`](super::TimeboxLayer), shortened by an
/// accepted inbound deadline header. The inner service's future runs
/// poll-gated under it with the deadline current, so extraction and the
/// handler see it and stop at it. When it passes, the inner future is dropped
/// (releasing whatever it held) and the answer is a 503
/// `application/problem+json` with a jittered `Retry-After` and the
/// [`DeadlineCancelled`](super::DeadlineCancelled) extension. A deadline of
/// zero is answered without calling the inner service, and one that has
/// passed by the time the inner future would first run never polls it.
///
/// A route with no deadline passes straight through: no clock is read.
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

/// The service of [`RouteDeadlineLayer`].
#[derive(Debug, Clone)]
pub struct RouteDeadline<S> {
    inner: S,
    timeout: RouteTimeout,
}

impl<S> RouteDeadline<S> {
    /// A reference to the inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// A mutable reference to the inner service.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B> Service<Request<B>> for RouteDeadline<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = RouteDeadlineFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let context = req.extensions().get::<RequestContext>();
        // Under a `TimeboxLayer`, this route's rule replaces the global one.
        let claim = context.and_then(RequestContext::take_over);
        let Some(timeout) = self.timeout.resolve(context.and_then(|c| c.global)) else {
            return RouteDeadlineFuture::new(State::passthrough(self.inner.call(req)), claim);
        };
        // S3: an inbound header can only shorten a route that has a deadline.
        let (budget, source) = self
            .timeout
            .source()
            .shortened(timeout, context.and_then(|c| c.inbound));
        let start = context.map_or_else(Instant::now, |c| c.start);
        let deadline = Deadline::after_start(start, budget);
        let expiry = Expiry {
            method: req.method().clone(),
            route: RouteName::Matched(req.extensions().get::<MatchedPath>().cloned()),
            budget,
            source,
            start: Some(start),
            entropy: RequestContext::entropy_of(context, req.extensions()),
            observers: context.map(|c| c.observers.clone()).unwrap_or_default(),
            tell_at_first_poll: true,
            told: false,
            // A route under this layer learns nothing: it has no check of
            // its own (the macros' routes do, and a `TimeboxLayer` learns
            // for plain routes).
            check: None,
            learn: None,
            stage: Stage::Handler,
            waiting: None,
            taken_over: false,
        };
        // A zero budget (an inbound header of 0) is answered without calling
        // the inner service and without reading the clock; any other passed
        // deadline is caught by the gate before the first poll.
        if budget.is_zero() {
            return RouteDeadlineFuture::new(State::expired(expiry), claim);
        }
        let future = deadline.sync_scope(|| self.inner.call(req));
        RouteDeadlineFuture::new(
            State::bounded(Gated::new(Start::At(deadline), future), expiry),
            claim,
        )
    }
}
