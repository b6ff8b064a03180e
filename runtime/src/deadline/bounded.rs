//! [`bounded`]: the poll gate that stops work at the current deadline.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use pin_project::pin_project;
use tokio::task::{unconstrained, Unconstrained};
use tokio::time::{sleep_until, Instant, Sleep};

use super::{Deadline, DeadlineExceeded};

/// Runs `future` until it finishes or the current deadline passes.
///
/// The current deadline ([`Deadline::current`]) is read at the first poll.
/// With none, `future` runs to the end. With one, the returned future is
/// **poll-gated**: before *every* poll of `future` it reads the clock, and at
/// or past the deadline it returns [`DeadlineExceeded`] without polling
/// `future` again. So work that becomes ready only at (or after) the deadline
/// never runs, and an already expired deadline never polls `future` at all.
///
/// [`tokio::time::timeout`] polls the inner future first, so it lets work that
/// wakes exactly at the deadline run one more step; `bounded` does not. Like
/// `timeout`, its timer is exempt from tokio's cooperative budget: a busy
/// `future` that uses up the budget cannot keep the deadline from firing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::deadline::{bounded, Deadline};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let deadline = Deadline::after(Duration::from_millis(50));
///     let fast = deadline.scope(bounded(async { 7 })).await;
///     assert_eq!(fast, Ok(7));
///
///     // Work that would be ready exactly at the deadline never runs.
///     let at_the_deadline = deadline
///         .scope(bounded(async {
///             tokio::time::sleep(Duration::from_millis(50)).await;
///             7
///         }))
///         .await;
///     assert!(at_the_deadline.is_err());
///
///     // With no deadline, bounded work simply runs.
///     assert_eq!(bounded(async { 7 }).await, Ok(7));
/// }
/// ```
///
/// # Panics
///
/// When a deadline is current and `future` is pending outside a tokio
/// runtime with its time driver enabled: the deadline's timer needs one, as
/// [`tokio::time::sleep`] does.
///
/// # Cancellation safety
///
/// Dropping the returned future drops `future` and its timer; nothing is left
/// registered. When the deadline passes, `future` is dropped only when the
/// returned future is.
pub fn bounded<F: IntoFuture>(future: F) -> Bounded<F::IntoFuture> {
    Bounded {
        future: future.into_future(),
        gate: Gate::new(),
    }
}

/// Future for [`bounded`]: the inner future, gated by the current deadline.
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct Bounded<F> {
    #[pin]
    future: F,
    #[pin]
    gate: Gate,
}

impl<F> Bounded<F> {
    /// The deadline this future enforces: `None` before its first poll, and
    /// when there was no current deadline then.
    pub fn deadline(&self) -> Option<Deadline> {
        self.gate.deadline()
    }

    /// A reference to the inner future.
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// A mutable reference to the inner future.
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The inner future, without the gate.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Bounded<F> {
    type Output = Result<F::Output, DeadlineExceeded>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        this.gate.as_mut().check()?;
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        this.gate.poll_expired(cx).map(Err)
    }
}

/// A stream read under `deadline` (none: read to its end), poll-gated as
/// [`bounded`] gates a future, on one timer for the whole stream: each item
/// is one more poll under the same gate, not a new one. Once the deadline
/// passes, the next poll yields [`DeadlineExceeded`] without polling the
/// stream; the caller ends it there.
#[cfg(feature = "client")]
#[pin_project]
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct BoundedStream<S> {
    #[pin]
    stream: S,
    #[pin]
    gate: Gate,
}

#[cfg(feature = "client")]
impl<S> BoundedStream<S> {
    pub(crate) const fn new(stream: S, deadline: Option<Deadline>) -> Self {
        Self {
            stream,
            gate: Gate::armed(deadline),
        }
    }

    /// The deadline the stream is read under, if any.
    pub(crate) const fn deadline(&self) -> Option<Deadline> {
        self.gate.deadline()
    }
}

#[cfg(feature = "client")]
impl<S: futures_core::Stream> futures_core::Stream for BoundedStream<S> {
    type Item = Result<S::Item, DeadlineExceeded>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        if let Err(expired) = this.gate.as_mut().check() {
            return Poll::Ready(Some(Err(expired)));
        }
        if let Poll::Ready(item) = this.stream.poll_next(cx) {
            return Poll::Ready(item.map(Ok));
        }
        this.gate.poll_expired(cx).map(|expired| Some(Err(expired)))
    }
}

/// The part of [`Bounded`] that does not depend on the inner future, kept
/// apart so it is compiled once rather than once per future type.
/// [`Gated`](super::gated::Gated) and [`BoundedStream`] use it too.
#[pin_project]
pub(super) struct Gate {
    state: State,
    /// The wake-up at the deadline, made at the first `Pending` of the inner
    /// future: work that finishes in its first poll never touches the timer.
    /// Boxed, because a `Sleep` is large and most gated work never needs it:
    /// a small `Bounded` is cheaper to move and to box.
    timer: Option<Pin<Box<Unconstrained<Sleep>>>>,
    /// The waker the timer was last polled with. While the task's waker stays
    /// the same the timer need not be polled again: the clock check before
    /// each poll already sees a passed deadline.
    registered: Option<Waker>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Not polled yet: the current deadline has not been read.
    Unread,
    /// There was no current deadline at the first poll.
    Unbounded,
    Armed(Deadline),
}

impl Gate {
    pub(super) const fn new() -> Self {
        Self {
            state: State::Unread,
            timer: None,
            registered: None,
        }
    }

    /// The deadline the gate enforces: `None` before it was read or given,
    /// and when there is none.
    const fn deadline(&self) -> Option<Deadline> {
        match self.state {
            State::Armed(deadline) => Some(deadline),
            State::Unread | State::Unbounded => None,
        }
    }

    /// A gate for `deadline`, given rather than read at the first poll
    /// (none: no gate at all).
    #[cfg(feature = "client")]
    const fn armed(deadline: Option<Deadline>) -> Self {
        Self {
            state: match deadline {
                Some(deadline) => State::Armed(deadline),
                None => State::Unbounded,
            },
            timer: None,
            registered: None,
        }
    }

    /// Whether the inner future may be polled now. The first call reads the
    /// current deadline, unless it was given ([`Gate::armed`],
    /// [`Gate::arm`]).
    pub(super) fn check(self: Pin<&mut Self>) -> Result<(), DeadlineExceeded> {
        let this = self.project();
        let deadline = match *this.state {
            State::Unbounded => return Ok(()),
            State::Armed(deadline) => deadline,
            State::Unread => {
                let Some(deadline) = Deadline::current() else {
                    *this.state = State::Unbounded;
                    return Ok(());
                };
                *this.state = State::Armed(deadline);
                deadline
            }
        };
        open_at(deadline, Instant::now())
    }

    /// Arms the gate with `deadline`, checking it against `now`, a clock
    /// reading the caller has just taken for this poll (what `Gated`, the
    /// route deadline's future, does).
    #[cfg(any(feature = "server", feature = "grpc"))]
    pub(super) fn arm(
        self: Pin<&mut Self>,
        deadline: Deadline,
        now: Instant,
    ) -> Result<(), DeadlineExceeded> {
        *self.project().state = State::Armed(deadline);
        open_at(deadline, now)
    }

    /// Arranges a wake-up at the deadline; ready once the timer has fired.
    pub(super) fn poll_expired(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<DeadlineExceeded> {
        let this = self.project();
        let State::Armed(deadline) = *this.state else {
            return Poll::Pending;
        };
        if this
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(unconstrained(sleep_until(deadline.instant()))));
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(DeadlineExceeded::new());
        }
        *this.registered = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Work may run only while the deadline is still ahead.
fn open_at(deadline: Deadline, now: Instant) -> Result<(), DeadlineExceeded> {
    if now >= deadline.instant() {
        Err(DeadlineExceeded::new())
    } else {
        Ok(())
    }
}
