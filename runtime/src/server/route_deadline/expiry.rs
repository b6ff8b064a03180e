//! [`Expiry`]: what a route deadline's timeout needs to know, and what is
//! done with it whatever the handler's future is: the deadline told, the
//! deadline check judged, a success learnt from, the timeout answered.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::MatchedPath;
use axum::response::Response;
use http::Method;
use tokio::time::Instant;

use crate::admission::DeadlineCheck;
use crate::entropy::Entropy;
use crate::observe::{DeadlineSource, Event, Label, Observers, Stage};
use crate::problem::{self, NoWork};

use super::{admit, Learn};

/// What the timeout response and its log line need to know.
#[derive(Debug)]
pub(crate) struct Expiry {
    pub(crate) method: Method,
    pub(crate) route: RouteName,
    pub(crate) budget: Duration,
    /// Where the budget came from.
    pub(crate) source: DeadlineSource,
    /// When the deadline started counting; `None` when it starts at the
    /// first poll of the gated future, which then knows.
    pub(crate) start: Option<Instant>,
    pub(crate) entropy: Option<Entropy>,
    pub(crate) observers: Observers,
    /// Whether the deadline is told at the first poll (a `TimeboxLayer`
    /// that a route rule may take over tells it after; a timeout always
    /// tells it first).
    pub(crate) tell_at_first_poll: bool,
    /// Whether `deadline_set` was told.
    pub(crate) told: bool,
    /// The route's deadline check (A1) when it is still to be judged: at
    /// the first poll, before the inner future runs (so before extraction),
    /// from the clock reading the gate takes then. Taken when judged, and
    /// kept as `learn` when the request is served and the check learns.
    pub(crate) check: Option<Arc<DeadlineCheck>>,
    /// Where a successful request's latency goes (A1's median).
    pub(crate) learn: Option<Learn>,
    /// The stage a timeout is told at: `admission` while the request waited
    /// for a slot of the concurrency limit, else `handler`.
    pub(crate) stage: Stage,
    /// Where the handler said it was left waiting at its last poll (a pool
    /// wait): a timeout then is told at that stage instead.
    pub(crate) waiting: Option<Stage>,
    /// Whether a route rule of its own took the request over: it tells
    /// what its handler answers, not this state.
    pub(crate) taken_over: bool,
}

impl Expiry {
    /// Tells the request's deadline, once.
    pub(super) fn tell_set(&mut self) {
        if std::mem::replace(&mut self.told, true) {
            return;
        }
        self.observers.emit(|| Event::DeadlineSet {
            source: self.source.clone(),
            budget: self.budget,
            route: self.route.label(),
        });
    }

    /// Judges the route's deadline check, if it is still to be judged, at
    /// `now` with `time_left`.
    pub(super) fn judge(&mut self, now: Instant, time_left: Duration) -> Judged {
        let Some(check) = self.check.take() else {
            return Judged::Unchecked;
        };
        // A deadline that has passed already (spent in a queue before the
        // route was reached) is answered as expired (S4), not judged too
        // short: the gate sees it at this same reading.
        if time_left.is_zero() {
            return Judged::Admitted(now);
        }
        // Its deadline was told at this first poll, before the verdict.
        if let Some(refusal) = admit(&check, time_left, now, &self.route, &self.observers, || {}) {
            return Judged::Refused(refusal);
        }
        self.learn = Learn::from_check(Some(check));
        Judged::Admitted(now)
    }

    /// The handler answered: tells a deadline the work stopped at by itself
    /// (`untold`), and learns from a success whose handler was first polled
    /// at `first_poll`.
    pub(super) fn answered(
        &mut self,
        untold: Option<Stage>,
        success: bool,
        first_poll: Option<Instant>,
    ) {
        // Unless a route rule took the request over from this layer.
        if let (false, Some(stage)) = (self.taken_over, untold) {
            self.tell_set();
            self.observers.emit(|| Event::DeadlineExceeded {
                stage,
                route: self.route.label(),
            });
        }
        if let (true, Some(learn), Some(first_poll)) = (success, &self.learn, first_poll) {
            learn.succeeded(first_poll);
        }
    }

    /// The deadline passed while the handler's future was gated: first
    /// polled at `first_poll`, before the handler ran when
    /// `before_handler`, waiting at `waiting` in its last poll.
    pub(super) fn passed(
        self,
        first_poll: Option<Instant>,
        before_handler: bool,
        waiting: Option<Stage>,
    ) -> Self {
        Self {
            start: self.start.or(first_poll),
            stage: if before_handler {
                Stage::Admission
            } else {
                waiting.or(self.waiting).unwrap_or(self.stage)
            },
            ..self
        }
    }

    /// The timeout answer, told: `worked` says whether the handler ran.
    pub(super) fn into_timeout(mut self, worked: bool) -> Response {
        // A deadline that passed is one that was set: told in that order.
        self.tell_set();
        let mut response = timeout_response(&self);
        if !worked {
            response.extensions_mut().insert(NoWork);
        }
        response
    }
}

/// What the deadline check said at the first poll.
pub(super) enum Judged {
    /// No check to judge: none on the route, or judged already.
    Unchecked,
    /// Served; judged at this clock reading, which the gate takes too.
    Admitted(Instant),
    /// Refused (A1): the answer.
    Refused(Response),
}

/// The route a request was routed to, for the timeout log line.
#[derive(Debug, Clone)]
pub(crate) enum RouteName {
    /// Mounted by `Routes::into_router`, which knows the path.
    Mounted(Label),
    /// Learnt from the request.
    Matched(Option<MatchedPath>),
}

impl RouteName {
    /// The `route` value of events: `None` for a request that matched none.
    pub(crate) fn label(&self) -> Option<Label> {
        match self {
            Self::Mounted(path) => Some(path.clone()),
            Self::Matched(Some(path)) => Some(path.as_str().into()),
            Self::Matched(None) => None,
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Mounted(path) => path,
            Self::Matched(Some(path)) => path.as_str(),
            Self::Matched(None) => "(unmatched)",
        }
    }
}

fn timeout_response(expiry: &Expiry) -> Response {
    expiry.observers.emit(|| Event::DeadlineExceeded {
        stage: expiry.stage,
        route: expiry.route.label(),
    });
    let route = expiry.route.as_str();
    tracing::warn!(
        method = %expiry.method,
        route,
        stage = expiry.stage.as_str(),
        deadline_ms = expiry.budget.as_millis(),
        elapsed_ms = expiry.start.map_or(0, |start| start.elapsed().as_millis()),
        source = expiry.source.as_str(),
        "request deadline exceeded",
    );
    let entropy = expiry
        .entropy
        .clone()
        .unwrap_or_else(problem::fallback_entropy);
    problem::deadline_timeout(expiry.budget, &entropy)
}
