//! [`Gated`]: a scope and its gate in one future, for the deadline of a
//! request.
//!
//! `Gated::new(start, future)` behaves as `deadline.scope(bounded(future))`:
//! the deadline current, and checked before every poll. Fused, the two
//! share the clock reading of the first poll: a deadline that starts at the
//! first poll is computed from the same reading the gate checks, so a
//! request pays for one clock read before its handler first runs rather
//! than two (and a route's deadline check, judged at that poll, takes the
//! same reading: [`Gated::poll_at`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project::pin_project;
use tokio::time::Instant;

use super::bounded::Gate;
use super::{scope, Deadline, DeadlineExceeded};

/// Where a [`Gated`] future's deadline comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Start {
    /// A deadline already known.
    At(Deadline),
    /// This long after the first poll.
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // used by route deadlines only
    FirstPoll(Duration),
}

/// Future of a request's deadline: runs the inner future with the deadline
/// current and polls it only while the deadline is ahead.
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub(crate) struct Gated<F> {
    start: Start,
    /// The deadline this future sets, before shortening to an enclosing one,
    /// and when it first ran; `None` until the first poll.
    started: Option<(Deadline, Instant)>,
    /// Set by [`Gated::release`]: the inner future runs as it is.
    released: bool,
    #[pin]
    gate: Gate,
    #[pin]
    future: F,
}

impl<F> Gated<F> {
    pub(crate) const fn new(start: Start, future: F) -> Self {
        Self {
            start,
            started: None,
            released: false,
            gate: Gate::new(),
            future,
        }
    }

    /// Stops gating: from the next poll on, the inner future runs without
    /// this deadline (another takes over, see `RouteClaim`).
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn release(self: Pin<&mut Self>) {
        let mut this = self.project();
        *this.released = true;
        // Its timer goes with it: the task is not to be woken at a
        // deadline that no longer applies.
        this.gate.set(Gate::new());
    }

    /// The inner value.
    #[cfg(feature = "grpc")]
    pub(crate) fn get_ref(&self) -> &F {
        &self.future
    }

    /// Gates `next` by the same deadline, from the same start, with the
    /// same gate: what comes after this future (a response body after its
    /// head) goes on with the timer this one already set, instead of a
    /// second one. This future is left ungated; it is done.
    #[cfg(feature = "grpc")]
    pub(crate) fn hand_over<G>(self: Pin<&mut Self>, next: G) -> Gated<G> {
        let this = self.project();
        Gated {
            start: *this.start,
            started: *this.started,
            released: *this.released,
            gate: std::mem::replace(this.gate.get_mut(), Gate::new()),
            future: next,
        }
    }

    /// When the inner future was first due to run: the clock reading of the
    /// first poll.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn first_poll(&self) -> Option<Instant> {
        self.started.map(|(_, at)| at)
    }
}

impl<F> Gated<F> {
    /// Polls the inner value with `poll`, gated and with the deadline
    /// current: the one gate behind the future and behind a gRPC body,
    /// whose frames are polled one after another under the same deadline.
    /// Ready with an error once the deadline has passed, without calling
    /// `poll` again.
    pub(crate) fn poll_with<T>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut F>, &mut Context<'_>) -> Poll<T>,
    ) -> Poll<Result<T, DeadlineExceeded>> {
        self.poll_read(cx, None, poll)
    }

    /// Polls the inner future as [`Future::poll`] does; at the first poll,
    /// with `reading`, a clock reading the caller has just taken, instead
    /// of reading the clock again (a route's door judges the time left
    /// from it, see [`Gated::time_left`]).
    #[cfg(feature = "server")]
    pub(crate) fn poll_at(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        reading: Option<Instant>,
    ) -> Poll<Result<F::Output, DeadlineExceeded>>
    where
        F: Future,
    {
        self.poll_read(cx, reading, F::poll)
    }

    /// The time left at `now` before this future's first poll: all of a
    /// deadline that starts then.
    #[cfg(feature = "server")]
    pub(crate) fn time_left(&self, now: Instant) -> Duration {
        match self.start {
            Start::At(deadline) => deadline.instant().saturating_duration_since(now),
            Start::FirstPoll(budget) => budget,
        }
    }

    fn poll_read<T>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        reading: Option<Instant>,
        poll: impl FnOnce(Pin<&mut F>, &mut Context<'_>) -> Poll<T>,
    ) -> Poll<Result<T, DeadlineExceeded>> {
        let mut this = self.project();
        if *this.released {
            return poll(this.future, cx).map(Ok);
        }
        let current = enter(*this.start, this.started, this.gate.as_mut(), reading)?;
        let future = this.future;
        if let Poll::Ready(output) = scope::with_current(Some(current), || poll(future, cx)) {
            return Poll::Ready(Ok(output));
        }
        this.gate.poll_expired(cx).map(Err)
    }
}

/// The deadline a gated poll runs under, checked first: at the first poll
/// (`started` is `None`), the deadline `start` gives, counted from
/// `reading` or a fresh clock reading, arms the gate; at every later one,
/// the gate checks the clock. The part of a gated poll that does not depend
/// on what is polled.
fn enter(
    start: Start,
    started: &mut Option<(Deadline, Instant)>,
    gate: Pin<&mut Gate>,
    reading: Option<Instant>,
) -> Result<Deadline, DeadlineExceeded> {
    if let Some((deadline, _)) = *started {
        gate.check()?;
        return Ok(deadline.min_with_current());
    }
    let now = reading.unwrap_or_else(Instant::now);
    let deadline = match start {
        Start::At(deadline) => deadline,
        Start::FirstPoll(budget) => Deadline::after_start(now, budget),
    };
    *started = Some((deadline, now));
    let current = deadline.min_with_current();
    gate.arm(current, now)?;
    Ok(current)
}

impl<F: Future> Future for Gated<F> {
    type Output = Result<F::Output, DeadlineExceeded>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_with(cx, F::poll)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::Poll;
    use std::time::Duration;

    use tokio::time::{sleep, sleep_until, Instant};

    use super::{Gated, Start};
    use crate::deadline::Deadline;

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn a_deadline_of_the_first_poll_counts_from_that_poll_not_from_construction() {
        let gated = Gated::new(Start::FirstPoll(5 * SECOND), async {
            Deadline::current().map(Deadline::remaining)
        });
        sleep(2 * SECOND).await;
        assert_eq!(gated.await, Ok(Some(5 * SECOND)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_poll_records_when_it_started() {
        let mut gated = pin!(Gated::new(Start::FirstPoll(SECOND), sleep(10 * SECOND)));
        assert_eq!(gated.first_poll(), None);
        sleep(3 * SECOND).await;
        let polled_at = Instant::now();
        assert!(gated.as_mut().await.is_err());
        assert_eq!(gated.first_poll(), Some(polled_at));
        assert_eq!(Instant::now(), polled_at + SECOND);
    }

    #[tokio::test(start_paused = true)]
    async fn an_enclosing_scope_read_at_each_poll_shortens_the_deadline() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let mut inner = pin!(Gated::new(Start::FirstPoll(5 * SECOND), async {
            let _ = rx.await;
            Deadline::current().map(Deadline::remaining)
        }));
        // First polled outside any scope...
        let first = std::future::poll_fn(|cx| Poll::Ready(inner.as_mut().poll(cx))).await;
        assert!(first.is_pending());
        tx.send(()).unwrap();
        // ...then inside one that ends sooner.
        let seen = Deadline::after(SECOND).scope(inner).await;
        assert_eq!(seen, Ok(Some(SECOND)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_deadline_never_polls_the_inner_future() {
        let polled = AtomicBool::new(false);
        let deadline = Deadline::after(SECOND);
        sleep(SECOND).await;
        let result = Gated::new(Start::At(deadline), async {
            polled.store(true, Ordering::SeqCst)
        })
        .await;
        assert!(result.is_err());
        assert!(!polled.load(Ordering::SeqCst));
    }

    #[tokio::test(start_paused = true)]
    async fn work_that_wakes_exactly_at_the_deadline_never_runs() {
        let ran = AtomicBool::new(false);
        let deadline = Deadline::after(SECOND);
        let result = Gated::new(Start::At(deadline), async {
            sleep_until(deadline.instant()).await;
            ran.store(true, Ordering::SeqCst);
        })
        .await;
        assert!(result.is_err());
        assert!(!ran.load(Ordering::SeqCst));
        assert_eq!(Instant::now(), deadline.instant());
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_budget_at_the_first_poll_never_polls_the_inner_future() {
        let polled = AtomicBool::new(false);
        let result = Gated::new(Start::FirstPoll(Duration::ZERO), async {
            polled.store(true, Ordering::SeqCst);
        })
        .await;
        assert!(result.is_err());
        assert!(!polled.load(Ordering::SeqCst));
    }
}

#[cfg(test)]
mod release_tests {
    use std::future::Future;
    use std::pin::pin;
    use std::time::Duration;

    use tokio::time::sleep;

    use super::{Gated, Start};
    use crate::deadline::Deadline;

    #[tokio::test(start_paused = true)]
    async fn a_released_gate_lets_the_future_run_past_its_deadline_without_it() {
        let mut gated = pin!(Gated::new(
            Start::FirstPoll(Duration::from_secs(1)),
            async {
                sleep(Duration::from_secs(5)).await;
                Deadline::current()
            }
        ));
        let first =
            std::future::poll_fn(|cx| std::task::Poll::Ready(gated.as_mut().poll(cx).is_pending()));
        assert!(first.await);
        gated.as_mut().release();
        assert_eq!(gated.await, Ok(None));
    }
}
