//! [`DeadlineHandler`]: a route's deadline applied inside its handler, as
//! [`Routes::into_router`](crate::server::Routes::into_router) mounts it.
//!
//! It does what [`RouteDeadlineLayer`](super::RouteDeadlineLayer) does, with
//! the inbound header that [`TimeboxLayer`](crate::server::TimeboxLayer)
//! would read, without being a layer: axum boxes and clones a service per
//! `MethodRouter::layer` on every request, while a wrapped handler is boxed
//! once, as any handler. Under a `TimeboxLayer` it takes the request over
//! as `RouteDeadlineLayer` does (see [`RouteClaim`]).

use std::sync::{Arc, Once};
use std::task::{Context, Poll};
use std::time::Duration;
use std::{future::Future, pin::Pin};

use axum::extract::{MatchedPath, Request};
use axum::handler::Handler;
use axum::response::Response;
use pin_project::pin_project;

use crate::admission::DeadlineCheck;
use crate::deadline::{Deadline, Formats, Gated, Start};
use crate::observe::{DeadlineSource, Label, Observers, Stage};
use crate::server::context::RequestContext;

use super::future::held;
use super::RouteClaim;
use super::{Answer, Expiry, RouteName, State};

/// What one route's deadline needs, resolved from the config when the
/// router is built. Axum clones a handler for each request: with no
/// observers, that clone costs one reference count, the deadline check's.
#[derive(Debug, Clone)]
pub(crate) struct RouteSettings {
    /// The route's deadline: its override, else the global one; `None` for
    /// a route whose rule is `off` under a global deadline (it only keeps an
    /// outer `TimeboxLayer` from gating it).
    pub(crate) budget: Option<Duration>,
    /// The inbound deadline headers it trusts (none unless
    /// `server.timeouts.accept_deadline_header` is on).
    pub(crate) inbound: Formats,
    /// The route's path, for the timeout log line and as the events'
    /// `route` (a static label: cloning it per request costs no reference
    /// count).
    pub(crate) path: Label,
    /// Where `budget` comes from, for the events.
    pub(crate) source: DeadlineSource,
    /// The observers of the config the route was mounted with, when no
    /// `TimeboxLayer` above brings the app's.
    pub(crate) observers: Observers,
    /// The route's deadline check (A1); `None` when it is off.
    pub(crate) check: Option<Arc<DeadlineCheck>>,
    /// With a concurrency limit in the config: the warning that no
    /// `TimeboxLayer` applies it, shared by the routes of one router.
    pub(crate) unlimited: Option<Arc<UnappliedLimit>>,
}

/// Says once, at the first request a route of `into_router` serves with no
/// `TimeboxLayer` around it, that `server.admission.concurrency` limits
/// nothing: the limit is that layer's, and `into_router` cannot know at
/// startup whether one will be put around the router.
#[derive(Debug)]
pub(crate) struct UnappliedLimit(Once);

impl UnappliedLimit {
    pub(crate) const fn new() -> Self {
        Self(Once::new())
    }

    fn warn(&self, route: &str) {
        self.0.call_once(|| {
            tracing::warn!(
                route,
                "`server.admission.concurrency` is set, but this router's routes serve requests \
                 with no `TimeboxLayer` around them: no concurrency limit applies; wrap the \
                 router in `TimeboxLayer::new(&config)`",
            );
        });
    }
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
        // Under a `TimeboxLayer`, which read the inbound header and started
        // the clock, this route's rule replaces the global one.
        let context = req.extensions().get::<RequestContext>();
        if let (None, Some(unlimited)) = (context, &settings.unlimited) {
            unlimited.warn(&settings.path);
        }
        let claim = context.and_then(RequestContext::take_over);
        let Some(route_budget) = settings.budget else {
            return HandlerFuture {
                state: State::passthrough(self.inner.call(req, state)),
                claim,
            };
        };
        // S3: an accepted inbound header can only shorten the deadline.
        let inbound = match context {
            Some(context) => context.inbound,
            None => settings.inbound.earliest(req.headers()),
        };
        let (budget, source) = settings.source.shortened(route_budget, inbound);
        let observers = match context {
            Some(context) => context.observers.clone(),
            None => settings.observers,
        };
        // Events and the log name the matched template, which differs from
        // the route's own path inside a nested router
        // (`Router::nest("/v1", ..)`).
        let route = match req.extensions().get::<MatchedPath>() {
            Some(matched) if matched.as_str() != &*settings.path => {
                RouteName::Matched(Some(matched.clone()))
            }
            _ => RouteName::Mounted(settings.path),
        };
        let expiry = Expiry {
            method: req.method().clone(),
            entropy: RequestContext::entropy_of(context, req.extensions()),
            route,
            budget,
            source,
            start: context.map(|context| context.start),
            observers,
            tell_at_first_poll: true,
            told: false,
            // Judged at the first poll, before extraction; then the route
            // learns from it.
            check: settings.check,
            learn: None,
            stage: Stage::Handler,
            waiting: None,
            taken_over: false,
        };
        if budget.is_zero() {
            return HandlerFuture {
                state: State::expired(expiry),
                claim,
            };
        }
        // The handler's future does nothing until polled: axum extracts and
        // runs the handler inside it. So, unless a `TimeboxLayer` started the
        // clock already, the deadline starts at its first poll (before
        // extraction), from the same clock reading the gate checks then.
        let start = match context {
            Some(context) => Start::At(Deadline::after_start(context.start, budget)),
            None => Start::FirstPoll(budget),
        };
        let future = self.inner.call(req, state);
        HandlerFuture {
            state: State::bounded(Gated::new(start, future), expiry),
            claim,
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
    claim: Option<RouteClaim>,
}

impl<F: Future<Output = Response>> Future for HandlerFuture<F> {
    type Output = Response;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let this = self.project();
        if held(this.claim, cx) {
            return Poll::Pending;
        }
        this.state.poll_answer(cx).map(|answer| match answer {
            Answer::Inner(response) | Answer::Timeout(response) | Answer::Refused(response) => {
                response
            }
        })
    }
}
