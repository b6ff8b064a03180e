//! [`RouteDeadlineFuture`]: the handler's future under its route deadline.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::MatchedPath;
use axum::response::Response;
use http::Method;
use pin_project::pin_project;
use tokio::time::Instant;

use crate::admission::DeadlineCheck;
use crate::deadline::Gated;
use crate::entropy::Entropy;
use crate::observe::{noting, owner_tells, DeadlineSource, Event, Label, Observers, Stage};
use crate::problem::{self, NoWork, UntoldDeadline};

use super::{admit, Learn, RouteClaim};

/// Response future of [`RouteDeadline`](super::RouteDeadline).
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct RouteDeadlineFuture<F> {
    #[pin]
    state: State<F>,
    claim: Option<RouteClaim>,
}

/// A future under a route deadline, whatever it answers with: the state of
/// [`RouteDeadlineFuture`] and of a deadline handler's future.
#[pin_project(project = StateProj)]
#[derive(Debug)]
pub(crate) enum State<F> {
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
    /// Refused before the inner future was polled (A1, A2): the answer.
    Refused(Option<Response>),
    /// The inner future was dropped; the response is being built.
    Done,
}

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
    fn tell_set(&mut self) {
        if std::mem::replace(&mut self.told, true) {
            return;
        }
        self.observers.emit(|| Event::DeadlineSet {
            source: self.source.clone(),
            budget: self.budget,
            route: self.route.label(),
        });
    }
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

/// How a [`State`] ends: with its future's output, or with the timeout
/// response after the future was dropped.
pub(crate) enum Answer<T> {
    Inner(T),
    Timeout(Response),
    Refused(Response),
}

/// Whether a route's answer is a success, whose latency the route learns
/// its service time from (A1): a 2xx or 3xx response.
pub(crate) trait Outcome {
    fn is_success(&self) -> bool;

    /// Takes the mark of a deadline that passed in the work and that
    /// nothing has told yet ([`UntoldDeadline`]): its stage.
    fn take_untold(&mut self) -> Option<Stage>;
}

impl Outcome for Response {
    fn is_success(&self) -> bool {
        self.status().is_success() || self.status().is_redirection()
    }

    fn take_untold(&mut self) -> Option<Stage> {
        if !self.status().is_server_error() {
            return None;
        }
        let UntoldDeadline(stage) = self.extensions_mut().remove::<UntoldDeadline>()?;
        Some(stage)
    }
}

impl<E> Outcome for Result<Response, E> {
    fn is_success(&self) -> bool {
        self.as_ref().is_ok_and(Outcome::is_success)
    }

    fn take_untold(&mut self) -> Option<Stage> {
        self.as_mut().ok().and_then(Outcome::take_untold)
    }
}

impl<F> State<F> {
    pub(crate) fn passthrough(future: F) -> Self {
        Self::Passthrough(future)
    }

    pub(crate) fn bounded(future: Gated<F>, expiry: Expiry) -> Self {
        Self::Bounded {
            future,
            expiry: Some(expiry),
        }
    }

    /// Out of time on arrival: answered without running the handler, so
    /// told at admission.
    pub(crate) fn expired(expiry: Expiry) -> Self {
        Self::Expired(Some(Expiry {
            stage: Stage::Admission,
            ..expiry
        }))
    }

    pub(crate) fn refused(response: Response) -> Self {
        Self::Refused(Some(response))
    }
}

impl<F> State<F> {
    /// Stops gating: a route's own rule took the request over (see
    /// [`RouteClaim`]).
    pub(crate) fn release(self: Pin<&mut Self>) {
        if let StateProj::Bounded { future, .. } = self.project() {
            future.release();
        }
    }
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

impl<F> State<F> {
    /// Tells the request's deadline now (a `TimeboxLayer` whose global
    /// deadline no route rule took over).
    pub(crate) fn tell_set(self: Pin<&mut Self>) {
        if let Some(expiry) = self.expiry() {
            expiry.tell_set();
        }
    }

    fn expiry(self: Pin<&mut Self>) -> Option<&mut Expiry> {
        match self.project() {
            StateProj::Bounded { expiry, .. } | StateProj::Expired(expiry) => expiry.as_mut(),
            StateProj::Passthrough(_) | StateProj::Refused(_) | StateProj::Done => None,
        }
    }
}

impl<F> State<F> {
    /// Tells a timeout from now on at `stage`.
    pub(crate) fn timed_out_at(self: Pin<&mut Self>, stage: Stage) {
        if let Some(expiry) = self.expiry() {
            expiry.stage = stage;
        }
    }

    /// Leaves the request to a route rule of its own, which took it over:
    /// this state neither learns from it nor tells the deadline its
    /// handler answers with (the rule tells its own; a route whose rule is
    /// `off` has no deadline of ours).
    pub(crate) fn taken_over(self: Pin<&mut Self>) {
        if let Some(expiry) = self.expiry() {
            expiry.learn = None;
            expiry.taken_over = true;
        }
    }
}

impl<F> State<F>
where
    F: Future,
    F::Output: Outcome,
{
    pub(crate) fn poll_answer(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Answer<F::Output>> {
        // Told before the check's verdict: a refused request's deadline
        // was set too (O1).
        if let Some(expiry) = self
            .as_mut()
            .expiry()
            .filter(|expiry| expiry.tell_at_first_poll)
        {
            expiry.tell_set();
        }
        let reading = match self.as_mut().judge() {
            Judged::Unchecked => None,
            Judged::Admitted(now) => Some(now),
            Judged::Refused(response) => {
                self.set(Self::Done);
                return Poll::Ready(Answer::Refused(response));
            }
        };
        // Whether the inner future ran: not when the deadline had passed
        // before the inner service was called (S4), nor when it had passed
        // by its first poll (spent in a queue before the route).
        let mut worked = true;
        let expiry = match self.as_mut().project() {
            StateProj::Passthrough(future) => return future.poll(cx).map(Answer::Inner),
            StateProj::Bounded { mut future, expiry } => {
                let first = future.first_poll().is_none();
                let (polled, noted) = noting(|| future.as_mut().poll_at(cx, reading));
                let waiting = noted.waiting;
                match polled {
                    Poll::Pending => {
                        if let Some(expiry) = expiry.as_mut() {
                            expiry.waiting = waiting;
                        }
                        return Poll::Pending;
                    }
                    Poll::Ready(Ok(mut output)) => {
                        // A deadline the work stopped at by itself (a
                        // statement Postgres stopped, a shorter scope of
                        // its own) is told here, once: unless a route rule
                        // took the request over from this layer, or an
                        // outbound call its gate cut told it as it was
                        // dropped in this poll.
                        let untold = output.take_untold().filter(|_| !noted.told);
                        if let (Some(expiry), Some(stage)) =
                            (expiry.as_mut().filter(|expiry| !expiry.taken_over), untold)
                        {
                            expiry.tell_set();
                            expiry.observers.emit(|| Event::DeadlineExceeded {
                                stage,
                                route: expiry.route.label(),
                            });
                        }
                        if let Some(expiry) = expiry.as_ref().filter(|_| output.is_success()) {
                            if let (Some(learn), Some(first_poll)) =
                                (&expiry.learn, future.first_poll())
                            {
                                learn.succeeded(first_poll);
                            }
                        }
                        return Poll::Ready(Answer::Inner(output));
                    }
                    Poll::Ready(Err(_)) => {
                        // A deadline that had passed at the first poll, so
                        // before the handler ran, was spent before the route
                        // was reached (in the concurrency limit's queue, or
                        // in a middleware): at admission.
                        let before_handler = first
                            && future
                                .first_poll()
                                .is_some_and(|at| future.time_left(at).is_zero());
                        worked = !before_handler;
                        expiry.take().map(|expiry| Expiry {
                            start: expiry.start.or(future.first_poll()),
                            stage: if before_handler {
                                Stage::Admission
                            } else {
                                waiting.or(expiry.waiting).unwrap_or(expiry.stage)
                            },
                            ..expiry
                        })
                    }
                }
            }
            StateProj::Expired(expiry) => {
                worked = false;
                expiry.take()
            }
            StateProj::Refused(response) => {
                let response = response
                    .take()
                    .expect("route deadline future polled after completion");
                self.set(Self::Done);
                return Poll::Ready(Answer::Refused(response));
            }
            StateProj::Done => None,
        };
        // S4: drop the handler (its guards, its pool connections) before the
        // response leaves. The route tells the deadline below, so an
        // outbound call dropped with the handler does not tell it again.
        owner_tells(|| self.set(Self::Done));
        let mut expiry = expiry.expect("route deadline future polled after completion");
        // A deadline that passed is one that was set: told in that order.
        expiry.tell_set();
        let mut response = timeout_response(&expiry);
        if !worked {
            response.extensions_mut().insert(NoWork);
        }
        Poll::Ready(Answer::Timeout(response))
    }
}

/// What the deadline check said at the first poll.
enum Judged {
    /// No check to judge: none on the route, or judged already.
    Unchecked,
    /// Served; judged at this clock reading, which the gate takes too.
    Admitted(Instant),
    /// Refused (A1): the answer.
    Refused(Response),
}

impl<F> State<F> {
    /// Judges the route's deadline check, if it is still to be judged.
    fn judge(self: Pin<&mut Self>) -> Judged {
        let StateProj::Bounded {
            future,
            expiry: Some(expiry),
        } = self.project()
        else {
            return Judged::Unchecked;
        };
        let Some(check) = expiry.check.take() else {
            return Judged::Unchecked;
        };
        let now = Instant::now();
        let time_left = future.time_left(now);
        // A deadline that has passed already (spent in a queue before the
        // route was reached) is answered as expired (S4), not judged too
        // short: the gate sees it at this same reading.
        if time_left.is_zero() {
            return Judged::Admitted(now);
        }
        // Its deadline was told at this first poll, before the verdict.
        let refused = admit(
            &check,
            time_left,
            now,
            &expiry.route,
            &expiry.observers,
            || {},
        );
        if let Some(refusal) = refused {
            return Judged::Refused(refusal);
        }
        expiry.learn = Learn::from_check(Some(check));
        Judged::Admitted(now)
    }
}

impl<F> RouteDeadlineFuture<F> {
    pub(super) fn new(state: State<F>, claim: Option<RouteClaim>) -> Self {
        Self { state, claim }
    }
}

impl<F, E> Future for RouteDeadlineFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if held(this.claim, cx) {
            return Poll::Pending;
        }
        this.state.poll_answer(cx).map(|answer| match answer {
            Answer::Inner(output) => output,
            Answer::Timeout(response) | Answer::Refused(response) => Ok(response),
        })
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
