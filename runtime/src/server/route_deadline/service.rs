//! [`RouteDeadline`]: the service of [`RouteDeadlineLayer`](super::RouteDeadlineLayer), which puts its inner
//! service's future under the route's deadline.

use std::task::{Context, Poll};

use axum::extract::MatchedPath;
use axum::response::Response;
use axum::BoxError;
use bytes::Bytes;
use http::Request;
use tokio::time::Instant;
use tower_service::Service;

use crate::deadline::{Deadline, Gated, Start};
use crate::observe::Stage;
use crate::server::context::RequestContext;
use crate::server::RouteTimeout;

use super::{Expiry, RouteDeadlineFuture, RouteName, State};

/// The service of [`RouteDeadlineLayer`](super::RouteDeadlineLayer).
#[derive(Debug, Clone)]
pub struct RouteDeadline<S> {
    pub(super) inner: S,
    pub(super) timeout: RouteTimeout,
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

impl<S, B, ResBody> Service<Request<B>> for RouteDeadline<S>
where
    S: Service<Request<B>, Response = http::Response<ResBody>>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
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
