//! [`DeadlineHandler`]: a route's deadline applied inside its handler, as
//! [`Routes::into_router`](crate::server::Routes::into_router) mounts it.
//!
//! It does what [`TimeboxLayer`](crate::server::TimeboxLayer) and
//! [`RouteDeadlineLayer`](super::RouteDeadlineLayer) do together, without
//! being a layer: axum boxes and clones a service per `MethodRouter::layer`
//! on every request, while a wrapped handler is boxed once, as any handler.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use std::{future::Future, pin::Pin};

use axum::extract::Request;
use axum::handler::Handler;
use axum::response::Response;
use futures_util::future::{FutureExt, Map};
use pin_project::pin_project;
use tokio::time::Instant;

use crate::deadline::{bounded, header, Deadline};
use crate::entropy::Entropy;

use super::future::{Expiry, ResponseFuture, RouteName};

/// What one route's deadline needs, resolved from the config when the
/// router is built.
#[derive(Debug)]
pub(crate) struct RouteSettings {
    /// The route's deadline: its override, else the global one.
    pub(crate) budget: Duration,
    /// `server.timeouts.accept_deadline_header`.
    pub(crate) accept_header: bool,
    /// The app's random source, unless the request carries its own.
    pub(crate) entropy: Entropy,
    /// The route's path, for the timeout log line.
    pub(crate) path: &'static str,
}

/// A handler under its route's deadline.
#[derive(Debug)]
pub(crate) struct DeadlineHandler<H> {
    pub(crate) inner: H,
    pub(crate) settings: Arc<RouteSettings>,
}

impl<H: Clone> Clone for DeadlineHandler<H> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            settings: Arc::clone(&self.settings),
        }
    }
}

type Infallibly<F> = Map<F, fn(Response) -> Result<Response, Infallible>>;

impl<H, T, S> Handler<T, S> for DeadlineHandler<H>
where
    H: Handler<T, S>,
    S: Send + 'static,
{
    type Future = HandlerFuture<H::Future>;

    fn call(self, req: Request, state: S) -> Self::Future {
        // S2: the deadline counts from here, before extraction.
        let start = Instant::now();
        let settings = &self.settings;
        // S3: an accepted inbound header can only shorten the deadline.
        let budget = match settings
            .accept_header
            .then(|| header::from_headers(req.headers()))
            .flatten()
        {
            Some(inbound) => settings.budget.min(inbound),
            None => settings.budget,
        };
        let expiry = Expiry {
            method: req.method().clone(),
            // A request may bring its own random source (`Sim::app` does).
            entropy: req.extensions().get::<Entropy>().cloned(),
            route: RouteName::Mounted(self.settings),
            budget,
            start,
        };
        if budget.is_zero() {
            return HandlerFuture {
                inner: ResponseFuture::expired(expiry),
            };
        }
        let deadline = Deadline::after_start(start, budget);
        let future = deadline.sync_scope(|| self.inner.call(req, state));
        let future: Infallibly<H::Future> = future.map(Ok);
        HandlerFuture {
            inner: ResponseFuture::bounded(deadline.scope(bounded(future)), expiry),
        }
    }
}

/// The future of [`DeadlineHandler`]: the handler's, or the timeout
/// response.
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub(crate) struct HandlerFuture<F> {
    #[pin]
    inner: ResponseFuture<Infallibly<F>>,
}

impl<F: Future<Output = Response>> Future for HandlerFuture<F> {
    type Output = Response;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        match ready!(self.project().inner.poll(cx)) {
            Ok(response) => Poll::Ready(response),
            Err(never) => match never {},
        }
    }
}
