//! [`ResponseFuture`]: the handler's future under its route deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::extract::MatchedPath;
use axum::response::Response;
use http::Method;
use pin_project::pin_project;
use tokio::time::Instant;

use crate::deadline::Gated;
use crate::entropy::Entropy;
use crate::problem;

/// Response future of [`RouteDeadline`](super::RouteDeadline).
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct ResponseFuture<F> {
    #[pin]
    state: State<F>,
}

#[pin_project(project = StateProj)]
#[derive(Debug)]
enum State<F> {
    /// No deadline: the inner future as it is.
    Passthrough(#[pin] F),
    /// The inner future, gated by the deadline.
    Bounded {
        #[pin]
        future: Gated<F>,
        expiry: Option<Expiry>,
    },
    /// The deadline passed before the inner service was called.
    Expired(Option<Expiry>),
    /// The inner future was dropped; the response is being built.
    Done,
}

/// What the timeout response and its log line need to know.
#[derive(Debug)]
pub(super) struct Expiry {
    pub(super) method: Method,
    pub(super) route: RouteName,
    pub(super) budget: Duration,
    /// When the deadline started counting; `None` when it starts at the
    /// first poll of the gated future, which then knows.
    pub(super) start: Option<Instant>,
    pub(super) entropy: Option<Entropy>,
}

/// The route a request was routed to, for the timeout log line.
#[derive(Debug)]
pub(super) enum RouteName {
    /// Mounted by `Routes::into_router`, which knows the path.
    Mounted(&'static str),
    /// Learnt from the request.
    Matched(Option<MatchedPath>),
}

impl RouteName {
    fn as_str(&self) -> &str {
        match self {
            Self::Mounted(path) => path,
            Self::Matched(Some(path)) => path.as_str(),
            Self::Matched(None) => "(unmatched)",
        }
    }
}

impl<F> ResponseFuture<F> {
    pub(super) fn passthrough(future: F) -> Self {
        Self {
            state: State::Passthrough(future),
        }
    }

    pub(super) fn bounded(future: Gated<F>, expiry: Expiry) -> Self {
        Self {
            state: State::Bounded {
                future,
                expiry: Some(expiry),
            },
        }
    }

    pub(super) fn expired(expiry: Expiry) -> Self {
        Self {
            state: State::Expired(Some(expiry)),
        }
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        let expiry = match state.as_mut().project() {
            StateProj::Passthrough(future) => return future.poll(cx),
            StateProj::Bounded { mut future, expiry } => match ready!(future.as_mut().poll(cx)) {
                Ok(output) => return Poll::Ready(output),
                Err(_) => expiry.take().map(|expiry| Expiry {
                    start: expiry.start.or(future.first_poll()),
                    ..expiry
                }),
            },
            StateProj::Expired(expiry) => expiry.take(),
            StateProj::Done => None,
        };
        // S4: drop the handler (its guards, its pool connections) before the
        // response leaves.
        state.set(State::Done);
        let expiry = expiry.expect("ResponseFuture polled after completion");
        Poll::Ready(Ok(timeout_response(&expiry)))
    }
}

fn timeout_response(expiry: &Expiry) -> Response {
    let route = expiry.route.as_str();
    tracing::warn!(
        method = %expiry.method,
        route,
        deadline_ms = expiry.budget.as_millis(),
        elapsed_ms = expiry.start.map_or(0, |start| start.elapsed().as_millis()),
        "request deadline exceeded",
    );
    let entropy = expiry
        .entropy
        .clone()
        .unwrap_or_else(problem::fallback_entropy);
    problem::deadline_timeout(expiry.budget, &entropy)
}
