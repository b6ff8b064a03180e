//! [`DeadlineHandler`]: a route's deadline applied inside its handler, as
//! [`Routes::into_router`](crate::server::Routes::into_router) mounts it.
//!
//! It does what [`TimeboxLayer`](crate::server::TimeboxLayer) and
//! [`RouteDeadlineLayer`](super::RouteDeadlineLayer) do together, without
//! being a layer: axum boxes and clones a service per `MethodRouter::layer`
//! on every request, while a wrapped handler is boxed once, as any handler.

use std::task::{Context, Poll};
use std::time::Duration;
use std::{future::Future, pin::Pin};

use axum::extract::Request;
use axum::handler::Handler;
use axum::response::Response;
use pin_project::pin_project;

use crate::deadline::{header, Gated, Start};
use crate::entropy::Entropy;

use super::future::{Answer, Expiry, RouteName, State};

/// What one route's deadline needs, resolved from the config when the
/// router is built. `Copy`, so the per-request clone of a handler that axum
/// makes costs no reference count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouteSettings {
    /// The route's deadline: its override, else the global one.
    pub(crate) budget: Duration,
    /// `server.timeouts.accept_deadline_header`.
    pub(crate) accept_header: bool,
    /// The route's path, for the timeout log line.
    pub(crate) path: &'static str,
}

/// A handler under its route's deadline.
#[derive(Debug, Clone)]
pub(crate) struct DeadlineHandler<H> {
    pub(crate) inner: H,
    pub(crate) settings: RouteSettings,
}

impl<H, T, S> Handler<T, S> for DeadlineHandler<H>
where
    H: Handler<T, S>,
    S: Send + 'static,
{
    type Future = HandlerFuture<H::Future>;

    fn call(self, req: Request, state: S) -> Self::Future {
        let settings = self.settings;
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
            route: RouteName::Mounted(settings.path),
            budget,
            start: None,
        };
        if budget.is_zero() {
            return HandlerFuture {
                state: State::expired(expiry),
            };
        }
        // The handler's future does nothing until polled: axum extracts and
        // runs the handler inside it. So the deadline starts at its first
        // poll (S2: before extraction), from the same clock reading the gate
        // checks then.
        let future = self.inner.call(req, state);
        HandlerFuture {
            state: State::bounded(Gated::new(Start::FirstPoll(budget), future), expiry),
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
    state: State<F>,
}

impl<F: Future<Output = Response>> Future for HandlerFuture<F> {
    type Output = Response;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        self.project()
            .state
            .poll_answer(cx)
            .map(|answer| match answer {
                Answer::Inner(response) | Answer::Timeout(response) => response,
            })
    }
}
