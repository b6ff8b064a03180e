//! [`TimeboxService`]: where a request meets the global deadline, the
//! concurrency limit and the plain routes' deadline check.

use std::cell::Cell;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::MatchedPath;
use axum::response::Response;
use axum::BoxError;
use bytes::Bytes;
use http::Request;
use tokio::time::Instant;
use tower_service::Service;

use crate::deadline::{Deadline, Gated, Start};
use crate::entropy::Entropy;
use crate::observe::{DeadlineSource, Event, Stage};
use crate::server::context::RequestContext;
use crate::server::route_deadline::{admit, Expiry, Learn, Probe, RouteName, State};

use super::future::TimeboxFuture;
use super::layer::Settings;

/// The service of [`TimeboxLayer`](super::TimeboxLayer).
#[derive(Debug, Clone)]
pub struct TimeboxService<S> {
    pub(super) inner: S,
    pub(super) settings: Arc<Settings>,
}

impl<S> TimeboxService<S> {
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

impl<S, B, ResBody, E> Service<Request<B>> for TimeboxService<S>
where
    S: Service<Request<B>, Response = http::Response<ResBody>, Error = E>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = E;
    type Future = TimeboxFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let settings = &*self.settings;
        let start = Instant::now();
        let inbound = settings.inbound.earliest(req.headers());
        let entropy = req
            .extensions()
            .get::<Entropy>()
            .unwrap_or(&settings.entropy)
            .clone();
        let (probe, claim) = settings.global.map(|_| Probe::new()).unzip();
        req.extensions_mut().insert(RequestContext {
            start,
            global: settings.global,
            inbound,
            entropy: entropy.clone(),
            claim,
            observers: settings.observers.clone(),
        });
        let route = RouteName::Matched(req.extensions().get::<MatchedPath>().cloned());
        let Some(global) = settings.global else {
            let queue = settings.queue(None, &route, &entropy);
            return TimeboxFuture::new(
                State::passthrough(self.inner.call(req)),
                None,
                queue,
                None,
                entropy,
            );
        };
        // An inbound header can only shorten the deadline.
        let (budget, source) = DeadlineSource::Global.shortened(global, inbound);
        // A request that matched no route has no check.
        let plain = match (&settings.routes, &route) {
            (Some(routes), RouteName::Matched(Some(path))) => {
                routes.get(req.method(), path.as_str())
            }
            _ => None,
        };
        // A deadline already passed (an inbound header of 0) is answered as
        // expired below (S4), not judged too short.
        let judged = plain
            .as_ref()
            .filter(|plain| !budget.is_zero() && plain.is_plain())
            .and_then(|plain| plain.check.as_ref());
        // Whether the request's deadline was told already.
        let told = Cell::new(false);
        if let Some(check) = judged {
            // A plain route's deadline is the global one: a request the
            // check has a verdict on (a refusal, or dark mode's count) is
            // told it was set (O1), before the verdict, as gRPC and the
            // route rules tell it. Any other is told once its route has
            // shown whose deadline it has (below).
            let tell_set = || {
                told.set(true);
                settings.observers.emit(|| Event::DeadlineSet {
                    source: source.clone(),
                    budget,
                    route: route.label(),
                });
            };
            let refused = admit(check, budget, start, &route, &settings.observers, tell_set);
            if let Some(refusal) = refused {
                return TimeboxFuture::new(State::refused(refusal), None, None, None, entropy);
            }
        }
        let deadline = Deadline::after_start(start, budget);
        // A deadline already passed is answered at once (S4): it waits for
        // no slot, and holds none.
        let queue = (!budget.is_zero())
            .then(|| settings.queue(Some(deadline.instant()), &route, &entropy))
            .flatten();
        let expiry = Expiry {
            method: req.method().clone(),
            route,
            budget,
            source,
            start: Some(start),
            entropy: Some(entropy.clone()),
            observers: settings.observers.clone(),
            // Told at the first poll, unless a route rule takes over.
            tell_at_first_poll: probe.is_none(),
            told: told.get(),
            check: None,
            // Judged at arrival, above: learnt from there too.
            learn: Learn::from_check(plain.as_ref().and_then(|plain| plain.check.clone()))
                .map(|learn| learn.judged_at(start)),
            stage: Stage::Handler,
            waiting: None,
            taken_over: false,
        };
        if budget.is_zero() {
            return TimeboxFuture::new(State::expired(expiry), None, None, None, entropy);
        }
        let future = deadline.sync_scope(|| self.inner.call(req));
        TimeboxFuture::new(
            State::bounded(Gated::new(Start::At(deadline), future), expiry),
            probe,
            queue,
            plain,
            entropy,
        )
    }
}
