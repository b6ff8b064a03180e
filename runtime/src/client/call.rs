//! [`drive`]: runs a [`Call`] to its end over a [`Sender`], the one loop
//! every door of the client shares.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project::pin_project;
use tokio::time::{Instant, Timeout};
use tracing::{Instrument, Span};
use url::Url;

use crate::deadline::{bounded, Bounded, Deadline, Scope};
use crate::observe::{waiting_at, Stage};

use super::engine::{Answer, Body, Call, Next, Outcome, Pending};
use super::transport::TransportError;
use super::{Attempt, ClientError};

/// Sends one request of a call: the network under `Client`, the rest of the
/// middleware chain, or the inner tower service.
pub(crate) trait Sender<B> {
    /// What a request gets back.
    type Response: Answer;

    /// A second sender, to send a hedge (A3) beside a request this one is
    /// sending; `None` when the door cannot send two at once.
    fn fork(&mut self) -> Option<Self>
    where
        Self: Sized;

    /// Waits until the next request can be sent (a tower service's
    /// readiness): before the attempt takes the host's breaker permit and
    /// starts its timeout, so waiting on our own side never counts against
    /// the host.
    fn ready(&mut self) -> impl Future<Output = Result<(), TransportError>> + Send {
        std::future::ready(Ok(()))
    }

    /// Sends `request`, one attempt, no retries, marked with `attempt`;
    /// `url` is its URI as a `Url`, when the engine has one.
    fn send(
        &mut self,
        request: http::Request<B>,
        attempt: Attempt,
        url: Option<&Url>,
    ) -> impl Future<Output = Result<Self::Response, TransportError>> + Send;
}

/// Drives `call` to its end: each attempt through `sender`, bounded by its
/// timeout and the deadline, and each wait before a retry within the
/// deadline. A deadline current at the first poll that is earlier than the
/// call's becomes the call's (D3: a scope shortens what is polled in it),
/// also when the call was made where none was (a `ClientLayer` called by a
/// `tower::Buffer`'s worker task, whose caller polls the future).
///
/// A block rather than an `async fn`, whose state would keep `call` and
/// `sender` twice (as arguments, and as the locals they are moved to).
#[allow(clippy::manual_async_fn)] // see above
pub(crate) fn drive<B, S>(
    mut call: Call<B>,
    mut sender: S,
) -> impl Future<Output = Result<S::Response, ClientError>>
where
    B: Body,
    S: Sender<B>,
{
    // Said while pending: a request deadline that passes while its handler
    // waits on the call is told at the `outbound` stage.
    waiting_at(Stage::Outbound, async move {
        if let Some(current) = Deadline::current() {
            call.shorten_to(current);
        }
        let result = run(&mut call, &mut sender).await;
        call.end(&result);
        result
    })
}

async fn run<B, S>(call: &mut Call<B>, sender: &mut S) -> Result<S::Response, ClientError>
where
    B: Body,
    S: Sender<B>,
{
    let deadline = call.deadline();
    loop {
        let (pending, outcome) = match ready(sender, deadline).await {
            Ok(waited) => {
                call.waited_for_ready(waited);
                attempt(call, sender, deadline).await?
            }
            Err(Unready::Deadline) => return Err(call.deadline_passed()),
            // Nothing was sent, and the host is not to blame: a service
            // whose readiness failed stays failed (a `tower::Buffer` whose
            // worker saw the error), so a retry through it would fail the
            // same way. The call ends with the error.
            Err(Unready::Failed(err)) => return Err(err.into_client()),
        };
        match call.decide(pending, outcome) {
            Next::Follow => {}
            Next::Retry(wait) => {
                if within_deadline(deadline, tokio::time::sleep(wait))
                    .await
                    .is_none()
                {
                    return Err(call.deadline_passed());
                }
            }
            Next::Return(result) => return result,
        }
    }
}

/// Starts the call's next attempt through `sender`, which is ready, hedges
/// it when the call may, and says what came of it.
async fn attempt<B, S>(
    call: &mut Call<B>,
    sender: &mut S,
    deadline: Option<Deadline>,
) -> Result<(Pending, Outcome<S::Response>), ClientError>
where
    B: Body,
    S: Sender<B>,
{
    let (request, pending) = call.start()?;
    let hedge = call.hedge_delay(&pending);
    // Forked before the send borrows `sender`, whether or not the hedge is
    // sent in the end; boxed, as the race is, so a call that never hedges
    // carries a pointer for it.
    let fork = hedge.and_then(|_| sender.fork()).map(Box::new);
    let url = call.url().cloned();
    let sent = attempt_once(
        made_as_polled(&pending.span, deadline, || {
            sender.send(request, pending.attempt, url.as_ref())
        }),
        pending.ends,
        deadline,
    )
    .instrument(pending.span.clone());
    Ok(match (hedge, fork) {
        // Boxed: a race holds two attempts, and the future of a call that
        // never hedges need not have room for them.
        (Some(delay), Some(fork)) => Box::pin(race(call, fork, sent, pending, delay)).await,
        _ => {
            let outcome = sent.await;
            (pending, outcome)
        }
    })
}

/// Why the sender is not ready for the next request.
enum Unready {
    /// The call's deadline passed while it waited.
    Deadline,
    /// Readying it failed.
    Failed(TransportError),
}

/// Awaits the attempt `first` (`pending`); if it has not ended after
/// `delay`, sends its hedge through `fork` when the call allows one, and
/// the first of the two to answer wins (A3). The other is dropped (told as
/// cancelled), with whatever it held on the host. One that fails (its
/// transport, its own timeout), or that a timebox server shed without
/// running it (`x-timebox-shed`: shutting down, overloaded, deadline too
/// short), while the other still runs does not win: it is told as it
/// ended, and the other's outcome is the race's.
///
/// `fork` goes as soon as no hedge will be sent: a readied service may hold
/// a slot of the one beneath it (tower's `ConcurrencyLimit` holds a permit,
/// `Buffer` a place), which a refused hedge must not keep while the first
/// attempt runs.
async fn race<B, S, F>(
    call: &mut Call<B>,
    mut fork: Box<S>,
    first: F,
    pending: Pending,
    delay: Duration,
) -> (Pending, Outcome<S::Response>)
where
    B: Body,
    S: Sender<B>,
    F: Future<Output = Outcome<S::Response>>,
{
    let deadline = call.deadline();
    let mut first = pin!(first);
    tokio::select! {
        biased;
        outcome = &mut first => return (pending, outcome),
        () = tokio::time::sleep(delay) => {}
    }
    let ready = tokio::select! {
        biased;
        outcome = &mut first => return (pending, outcome),
        ready = within_deadline(deadline, fork.ready()) => matches!(ready, Some(Ok(()))),
    };
    let Some((request, hedge)) = ready.then(|| call.start_hedge()).flatten() else {
        drop(fork);
        let outcome = first.await;
        return (pending, outcome);
    };
    let url = call.url().cloned();
    let second = attempt_once(
        made_as_polled(&hedge.span, deadline, || {
            fork.send(request, hedge.attempt, url.as_ref())
        }),
        hedge.ends,
        deadline,
    )
    .instrument(hedge.span.clone());
    let mut second = pin!(second);
    // The loser is gone before the winner is settled: `second` is dropped
    // when this function returns, `first` too.
    // Each outcome is read as `decide` will read it: an answer to the time
    // sent is the deadline's, which ends the race for both, and a redirect
    // that came as its attempt's time ran out is its timeout.
    tokio::select! {
        biased;
        outcome = &mut first => {
            let outcome = call.read(outcome, &pending);
            if outcome.leaves_the_race() {
                call.lose(pending, &outcome);
                return (hedge, second.await);
            }
            call.beaten(hedge, &outcome, false);
            (pending, outcome)
        }
        outcome = &mut second => {
            let outcome = call.read(outcome, &hedge);
            if outcome.leaves_the_race() {
                call.lose(hedge, &outcome);
                return (pending, first.await);
            }
            call.beaten(pending, &outcome, true);
            (hedge, outcome)
        }
    }
}

/// Makes an attempt's future with what its polls will have: its span
/// entered and the call's deadline current, so a door that calls its inner
/// service when the attempt is made (the tower layer does) calls it as it
/// would be polled.
fn made_as_polled<F>(span: &Span, deadline: Option<Deadline>, make: impl FnOnce() -> F) -> F {
    span.in_scope(|| match deadline {
        Some(deadline) => deadline.sync_scope(make),
        None => make(),
    })
}

/// Awaits one attempt, until it answers, its timeout at `ends`, or the
/// deadline.
///
/// Poll-gated as [`bounded`] is, with the deadline current, but with no
/// timer of its own: `ends` is never after the deadline, so the attempt's
/// timeout wakes it by then, and one timer per attempt is enough.
fn attempt_once<F, R>(sent: F, ends: Deadline, deadline: Option<Deadline>) -> AttemptOnce<F>
where
    F: Future<Output = Result<R, TransportError>>,
{
    debug_assert!(deadline.is_none_or(|deadline| ends <= deadline));
    let timed = tokio::time::timeout_at(ends.instant(), sent);
    AttemptOnce {
        inner: match deadline {
            Some(deadline) => Scoped::Within(deadline.scope(timed)),
            None => Scoped::Free(timed),
        },
        deadline,
    }
}

/// Waits, within `deadline`, until `sender` can send the next request, and
/// says how long that took: zero, and no clock read, when it could at once.
async fn ready<B, S: Sender<B>>(
    sender: &mut S,
    deadline: Option<Deadline>,
) -> Result<Duration, Unready> {
    let mut ready = pin!(within_deadline(deadline, sender.ready()));
    let mut pended = None;
    let readied = poll_fn(|cx| {
        let poll = ready.as_mut().poll(cx);
        if poll.is_pending() {
            pended.get_or_insert_with(Instant::now);
        }
        poll
    })
    .await;
    match readied {
        None => Err(Unready::Deadline),
        Some(Err(err)) => Err(Unready::Failed(err)),
        Some(Ok(())) => Ok(pended.map_or(Duration::ZERO, |since| since.elapsed())),
    }
}

/// `future` gated by `deadline` (poll-gated, see `bounded`): `None` when the
/// deadline passed first.
fn within_deadline<F: Future>(deadline: Option<Deadline>, future: F) -> WithinDeadline<F> {
    match deadline {
        Some(deadline) => WithinDeadline::Bounded(deadline.scope(bounded(future))),
        None => WithinDeadline::Free(future),
    }
}

// These two are named futures rather than `async fn`s: the state of an
// `async fn` keeps its argument beside the future it makes of it, so each
// level would hold the attempt (its request, its service) twice, and the
// call's future, copied into its box whole, grew to kilobytes.

/// Future of [`attempt_once`].
#[must_use = "futures do nothing unless you .await or poll them"]
#[pin_project]
struct AttemptOnce<F> {
    #[pin]
    inner: Scoped<Timeout<F>>,
    deadline: Option<Deadline>,
}

impl<F, R> Future for AttemptOnce<F>
where
    F: Future<Output = Result<R, TransportError>>,
{
    type Output = Outcome<R>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome<R>> {
        let this = self.project();
        // The gate: once the deadline has passed, the attempt is not polled.
        if this.deadline.is_some_and(Deadline::is_expired) {
            return Poll::Ready(Outcome::DeadlineExceeded);
        }
        Poll::Ready(match ready!(this.inner.poll(cx)) {
            Err(_elapsed) if this.deadline.is_some_and(Deadline::is_expired) => {
                Outcome::DeadlineExceeded
            }
            Err(_elapsed) => Outcome::TimedOut,
            Ok(Err(err)) => Outcome::Failed(err),
            Ok(Ok(response)) => Outcome::Response(response),
        })
    }
}

/// A future run with the call's deadline current, when it has one.
#[must_use = "futures do nothing unless you .await or poll them"]
#[pin_project(project = ScopedProj)]
enum Scoped<F> {
    Within(#[pin] Scope<F>),
    Free(#[pin] F),
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        match self.project() {
            ScopedProj::Within(future) => future.poll(cx),
            ScopedProj::Free(future) => future.poll(cx),
        }
    }
}

/// Future of [`within_deadline`].
#[must_use = "futures do nothing unless you .await or poll them"]
#[pin_project(project = WithinDeadlineProj)]
enum WithinDeadline<F> {
    Bounded(#[pin] Scope<Bounded<F>>),
    Free(#[pin] F),
}

impl<F: Future> Future for WithinDeadline<F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            WithinDeadlineProj::Bounded(future) => future.poll(cx).map(Result::ok),
            WithinDeadlineProj::Free(future) => future.poll(cx).map(Some),
        }
    }
}
