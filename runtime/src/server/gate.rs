//! [`ShutdownGate`]: admission during a shutdown, and the in-flight count.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::body::Body;
use axum::response::Response;
use axum::BoxError;
use bytes::Bytes;
use http::{Method, Request};
use pin_project::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::entropy::Entropy;
use crate::observe::{Event, ShedReason};
use crate::problem;
use crate::shutdown::{InFlightGuard, Shutdown, Unanswered};

use super::any_body::into_axum;
use super::guarded_body::GuardedBody;

/// Puts a [`ShutdownGate`] around a whole service: what [`serve`](super::serve())
/// does with the router it is given.
#[derive(Debug, Clone)]
pub struct ShutdownGateLayer {
    shutdown: Shutdown,
}

impl ShutdownGateLayer {
    /// A gate for `shutdown`.
    #[must_use]
    pub fn new(shutdown: &Shutdown) -> Self {
        Self {
            shutdown: shutdown.clone(),
        }
    }
}

impl<S> Layer<S> for ShutdownGateLayer {
    type Service = ShutdownGate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ShutdownGate {
            inner,
            shutdown: self.shutdown.clone(),
        }
    }
}

/// The gate of a server during a shutdown.
///
/// - Once phase 1 has begun, a new request is answered `503`
///   (problem+json, jittered `Retry-After`) without reaching the router.
/// - An admitted request is counted in [`InFlight`](crate::shutdown::InFlight)
///   until its response body has been sent or dropped, so streams count
///   until they end.
/// - Every request carries the [`ShutdownToken`](crate::shutdown::ShutdownToken)
///   and [`DrainToken`](crate::shutdown::DrainToken), for the extractors.
/// - An admitted request whose future is dropped before its response head
///   is told to the shutdown's observers as
///   [`RequestCancelled`](crate::observe::Event::RequestCancelled): for the
///   shutdown once its sequence has ended or been forced (what
///   [`serve`](super::serve()) ends then), for a disconnect otherwise. hyper
///   drops the future of a request whose client closed its connection or
///   reset its stream while its handler ran (one that leaves while its
///   body is read gets a body error instead, which its handler answers);
///   so does a middleware outside the gate that gives up on it, and a
///   `serve` future dropped without a shutdown. One whose response has
///   begun is the response body's: an
///   [`SseStream`](crate::server::sse::SseStream) given `observed` tells
///   its own ending; a plain body cut short tells nothing.
#[derive(Debug, Clone)]
pub struct ShutdownGate<S> {
    inner: S,
    shutdown: Shutdown,
}

impl<S> ShutdownGate<S> {
    /// `inner` behind a gate for `shutdown`.
    pub fn new(inner: S, shutdown: &Shutdown) -> Self {
        Self {
            inner,
            shutdown: shutdown.clone(),
        }
    }

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

impl<S, B, ResBody> Service<Request<B>> for ShutdownGate<S>
where
    S: Service<Request<B>, Response = http::Response<ResBody>>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ShutdownGateFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        // Counted before the token is read: a shutdown that starts in
        // between sees this request in flight and waits for it, or the
        // request sees the shutdown (the token is read under its lock, which
        // the shutdown takes to cancel it before it reads the count).
        let guard = self.shutdown.in_flight().enter();
        let token = self.shutdown.token();
        if token.is_cancelled() {
            drop(guard);
            self.shutdown.observers().emit(|| Event::RequestShed {
                reason: ShedReason::ShuttingDown,
                route: None,
            });
            let entropy = req
                .extensions()
                .get::<Entropy>()
                .cloned()
                .unwrap_or_else(problem::fallback_entropy);
            let mut refused = problem::shutting_down(&entropy);
            // The gate sits outside the router (`serve` puts it there).
            if req.method() == Method::HEAD {
                refused = problem::for_head(refused);
            }
            return ShutdownGateFuture {
                state: State::Refused(Some(refused)),
            };
        }
        let extensions = req.extensions_mut();
        extensions.insert(token);
        extensions.insert(self.shutdown.drain_token());
        ShutdownGateFuture {
            state: State::Admitted {
                future: self.inner.call(req),
                unanswered: Some(Unanswered::new(&self.shutdown, self.shutdown.observers())),
                guard: Some(guard),
            },
        }
    }
}

/// Response future of [`ShutdownGate`].
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct ShutdownGateFuture<F> {
    #[pin]
    state: State<F>,
}

#[pin_project(project = StateProj)]
#[derive(Debug)]
enum State<F> {
    Admitted {
        #[pin]
        future: F,
        /// Until the head is ready; before `guard`, so that a request
        /// dropped unanswered is told while it still counts (a sequence
        /// the count's end lets finish cannot make it a shutdown's).
        unanswered: Option<Unanswered>,
        /// Moves into the response body once the head is ready.
        guard: Option<InFlightGuard>,
    },
    Refused(Option<Response>),
}

impl<F, ResBody, E> Future for ShutdownGateFuture<F>
where
    F: Future<Output = Result<http::Response<ResBody>, E>>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Admitted {
                future,
                unanswered,
                guard,
            } => {
                let output = ready!(future.poll(cx));
                if let Some(unanswered) = unanswered.take() {
                    unanswered.answered();
                }
                let response = output?;
                Poll::Ready(Ok(match guard.take() {
                    Some(guard) => response.map(|body| Body::new(GuardedBody::new(body, guard))),
                    None => into_axum(response),
                }))
            }
            StateProj::Refused(response) => Poll::Ready(Ok(response
                .take()
                .expect("ShutdownGateFuture polled after completion"))),
        }
    }
}
