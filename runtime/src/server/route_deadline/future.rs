//! [`RouteDeadlineFuture`]: the handler's future under its route deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::response::Response;
use axum::BoxError;
use bytes::Bytes;
use pin_project::pin_project;

use super::{Answer, RouteClaim, State};
use crate::server::any_body::into_axum;

/// Response future of [`RouteDeadline`](super::RouteDeadline).
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct RouteDeadlineFuture<F> {
    #[pin]
    state: State<F>,
    claim: Option<RouteClaim>,
}

/// For a route rule that took a request over from an outer `TimeboxLayer`:
/// `Pending` while the outer layer still holds it (it polls again at once,
/// or wakes the task of `cx`), so nothing of the handler runs under the
/// outer deadline.
pub(super) fn held(claim: &mut Option<RouteClaim>, cx: &Context<'_>) -> bool {
    if claim.as_ref().is_some_and(|claim| claim.is_held(cx)) {
        return true;
    }
    *claim = None;
    false
}

impl<F> RouteDeadlineFuture<F> {
    pub(super) fn new(state: State<F>, claim: Option<RouteClaim>) -> Self {
        Self { state, claim }
    }
}

impl<F, ResBody, E> Future for RouteDeadlineFuture<F>
where
    F: Future<Output = Result<http::Response<ResBody>, E>>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if held(this.claim, cx) {
            return Poll::Pending;
        }
        this.state.poll_answer(cx).map(|answer| match answer {
            Answer::Inner(output) => output.map(into_axum),
            Answer::Timeout(response) | Answer::Refused(response) => Ok(response),
        })
    }
}
