//! [`TimeboxFuture`]: a request's wait for a slot, then its route's
//! future under the global deadline until a route rule takes over.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::response::Response;
use axum::BoxError;
use bytes::Bytes;
use pin_project::pin_project;

use crate::admission::{Acquire, Permit, Refusal};
use crate::entropy::Entropy;
use crate::observe::{Event, Observers, ShedReason, Stage};
use crate::problem::{self, DeadlineCancelled, NoWork};
use crate::server::any_body::into_axum;
use crate::server::route_deadline::{Answer, Probe, Probed, RouteName, State};

use super::route_kinds::PlainRoute;

/// A request's wait for a slot of the concurrency limit (A2).
#[derive(Debug)]
pub(super) struct Queue {
    pub(super) acquire: Acquire,
    /// Named in the shed event; its label is made only if one is told.
    pub(super) route: RouteName,
    pub(super) entropy: Entropy,
    pub(super) observers: Observers,
}

/// Response future of [`TimeboxService`](super::TimeboxService): the route's future under the
/// global deadline, or under the route's own rule once it took over.
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct TimeboxFuture<F> {
    #[pin]
    state: State<F>,
    /// Until a route rule takes over, or the route's future ends: the
    /// probe that learns whether one does.
    probe: Option<Probe>,
    /// Until a slot of the concurrency limit is free: the wait for it. The
    /// route is not polled before.
    queue: Option<Queue>,
    /// The slot, held until the response head.
    permit: Option<Permit>,
    /// The route's deadline check, until the claim says whose it is.
    plain: Option<Arc<PlainRoute>>,
    /// The request's random source: an answer the route made without its
    /// request (a cut pool wait's 503) draws its `Retry-After` from it
    /// again, so it comes from the app's source as the layer's own do.
    entropy: Entropy,
}

impl<F> TimeboxFuture<F> {
    pub(super) fn new(
        state: State<F>,
        probe: Option<Probe>,
        queue: Option<Queue>,
        plain: Option<Arc<PlainRoute>>,
        entropy: Entropy,
    ) -> Self {
        Self {
            state,
            probe,
            queue,
            permit: None,
            plain,
            entropy,
        }
    }
}

impl<F, ResBody, E> Future for TimeboxFuture<F>
where
    F: Future<Output = Result<http::Response<ResBody>, E>>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Some(queue) = this.queue {
            let slot = ready!(queue.poll_slot(cx));
            *this.queue = None;
            match slot {
                Slot::Granted(permit) => *this.permit = Some(permit),
                Slot::Shed(response) => {
                    // The route's future is dropped unpolled (and with it
                    // the request's body): this future is done.
                    this.state.set(State::Done);
                    return Poll::Ready(Ok(response));
                }
                // The deadline passed in the queue: the gate answers the
                // timeout without polling the route.
                Slot::DeadlinePassed => this.state.as_mut().timed_out_at(Stage::Admission),
            }
        }
        // A route rule that took the request over on a task of its own
        // while this future waited is let go before the gate checks the
        // clock: its rule alone applies from then on.
        if this.probe.as_ref().is_some_and(Probe::is_taken) {
            this.probe.take();
            step_aside(this.state.as_mut(), this.plain);
        }
        let mut answer = this.state.as_mut().poll_answer(cx);
        let probed = this
            .probe
            .as_ref()
            .map(|probe| probe.after_poll(cx, answer.is_pending()));
        match probed {
            // The route has a rule of its own and waits for us to let go:
            // from now on only its rule applies, and it tells its deadline
            // and learns its service time. (Unless something between us and
            // the route answered already, or the global deadline passed
            // before it was reached: that answer stands.)
            Some(Probed::Taken) => {
                *this.probe = None;
                if answer.is_pending() {
                    step_aside(this.state.as_mut(), this.plain);
                    answer = this.state.poll_answer(cx);
                } else if let Some(plain) = this.plain.take() {
                    plain.ruled();
                }
            }
            // The global deadline gates the request until a route rule
            // takes it over. It is told now when the route is known to be a
            // plain one (or is no route of a table); a route that may have a
            // rule of its own (behind a middleware that waits) tells its
            // own once it takes over, or the global one is told when the
            // request ends without that.
            Some(Probed::Open) if this.plain.as_ref().is_none_or(|plain| plain.is_plain()) => {
                this.state.as_mut().tell_set();
            }
            // The request ended under the global deadline. Its route is a
            // plain one if it answered; a timeout, or a middleware's own
            // answer before the route, shows nothing of the route.
            Some(Probed::Untaken) => {
                *this.probe = None;
                if let Some(plain) = this.plain.take() {
                    if matches!(answer, Poll::Ready(Answer::Inner(_))) {
                        plain.plain();
                    }
                }
                this.state.as_mut().tell_set();
            }
            Some(Probed::Open) | None => {}
        }
        let answer = ready!(answer);
        if let Some(permit) = this.permit.take() {
            settle(
                permit,
                match &answer {
                    Answer::Inner(output) => output.as_ref().ok().map(http::Response::extensions),
                    Answer::Timeout(response) | Answer::Refused(response) => {
                        Some(response.extensions())
                    }
                },
            );
        }
        Poll::Ready(match answer {
            Answer::Inner(output) => output.map(|response| {
                let mut response = into_axum(response);
                problem::redraw_retry_after(&mut response, this.entropy);
                response
            }),
            Answer::Timeout(response) | Answer::Refused(response) => Ok(response),
        })
    }
}

/// How a request's wait for a slot ended.
enum Slot {
    /// A slot is the request's.
    Granted(Permit),
    /// CoDel shed it: the answer, told.
    Shed(Response),
    /// Its deadline passed in the queue.
    DeadlinePassed,
}

impl Queue {
    /// Polls the wait for a slot.
    fn poll_slot(&mut self, cx: &mut Context<'_>) -> Poll<Slot> {
        Poll::Ready(match ready!(Pin::new(&mut self.acquire).poll(cx)) {
            Ok(permit) => Slot::Granted(permit),
            Err(Refusal::Overloaded) => {
                self.observers.emit(|| Event::RequestShed {
                    reason: ShedReason::Overloaded,
                    route: self.route.label(),
                });
                Slot::Shed(problem::overloaded(&self.entropy))
            }
            Err(Refusal::Deadline) => Slot::DeadlinePassed,
        })
    }
}

/// Gives back the slot a request held, once it is answered (`None`: the
/// route failed), with what the answer (its extensions) teaches the limit. A request whose
/// future is dropped before it answers gives its slot back unsettled, with
/// no sample (see [`Permit`]).
fn settle(permit: Permit, answer: Option<&http::Extensions>) {
    match answer {
        // A refusal (A1), or an answer to a deadline that passed before
        // the handler ran (on arrival, or in the queue), did no work, the
        // route's or the layer's: no sample.
        Some(extensions) if extensions.get::<NoWork>().is_some() => permit.release_unsampled(),
        // A timeout answer, the route's own or the layer's, is timed-out
        // work, which the adaptive limits read as overload.
        Some(extensions) if extensions.get::<DeadlineCancelled>().is_some() => permit.timed_out(),
        _ => permit.answered(),
    }
}

/// A route rule took the request over: the layer stops gating it and
/// learning from it, and its route checks for itself from now on.
fn step_aside<F>(mut state: Pin<&mut State<F>>, plain: &mut Option<Arc<PlainRoute>>) {
    if let Some(plain) = plain.take() {
        plain.ruled();
    }
    state.as_mut().taken_over();
    state.release();
}
