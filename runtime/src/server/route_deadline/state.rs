//! [`State`]: a future under a route deadline, whatever it answers with;
//! the state of [`RouteDeadlineFuture`](super::RouteDeadlineFuture) and of
//! a deadline handler's future. What does not depend on the future is
//! [`Expiry`]'s, so that it is compiled once, not once per handler.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::response::Response;
use pin_project::pin_project;
use tokio::time::Instant;

use crate::deadline::Gated;
use crate::observe::{noting, owner_tells, Stage};

use super::expiry::Judged;
use super::{Answer, Expiry, Outcome};

/// A future under a route deadline, whatever it answers with: the state of
/// [`RouteDeadlineFuture`](super::RouteDeadlineFuture) and of a deadline handler's future.
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
    /// [`RouteClaim`](super::RouteClaim)).
    pub(crate) fn release(self: Pin<&mut Self>) {
        if let StateProj::Bounded { future, .. } = self.project() {
            future.release();
        }
    }
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
                        // its own) is told once: not when an outbound call
                        // its gate cut told it as it was dropped in this
                        // poll.
                        let untold = output.take_untold().filter(|_| !noted.told);
                        if let Some(expiry) = expiry.as_mut() {
                            expiry.answered(untold, output.is_success(), future.first_poll());
                        }
                        return Poll::Ready(Answer::Inner(output));
                    }
                    Poll::Ready(Err(_)) => {
                        // A deadline that had passed at the first poll, so
                        // before the handler ran, was spent before the route
                        // was reached (in the concurrency limit's queue, or
                        // in a middleware): at admission.
                        let first_poll = future.first_poll();
                        let before_handler =
                            first && first_poll.is_some_and(|at| future.time_left(at).is_zero());
                        worked = !before_handler;
                        expiry
                            .take()
                            .map(|expiry| expiry.passed(first_poll, before_handler, waiting))
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
        let expiry = expiry.expect("route deadline future polled after completion");
        Poll::Ready(Answer::Timeout(expiry.into_timeout(worked)))
    }

    /// Judges the route's deadline check, if it is still to be judged.
    fn judge(self: Pin<&mut Self>) -> Judged {
        let StateProj::Bounded {
            future,
            expiry: Some(expiry),
        } = self.project()
        else {
            return Judged::Unchecked;
        };
        if expiry.check.is_none() {
            return Judged::Unchecked;
        }
        let now = Instant::now();
        expiry.judge(now, future.time_left(now))
    }
}
