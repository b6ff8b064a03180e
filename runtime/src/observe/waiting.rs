//! Where a request is waiting: what a future that waits on a shared
//! resource says while it is pending, so that a request's deadline that
//! passes then is told at that [`Stage`] (a pool wait) rather than as the
//! handler's.
//!
//! It is a thread-local, as the current deadline is: [`WaitingAt`] sets it
//! when its future returns `Pending`, and [`noting`] clears it around one
//! poll of a request's future and reads it after, so each poll says where
//! the request was left waiting, and nothing is shared between requests or
//! allocated.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project::pin_project;

use super::Stage;

thread_local! {
    /// The stage the future being polled on this thread was left waiting
    /// at, if it said.
    static WAITING: Cell<Option<Stage>> = const { Cell::new(None) };
}

/// Runs one poll (`poll`) of a request's future; the poll's result and the
/// stage it was left waiting at, when a [`WaitingAt`] inside said. An outer
/// `noting` sees the same stage.
pub(crate) fn noting<R>(poll: impl FnOnce() -> R) -> (R, Option<Stage>) {
    let outer = WAITING
        .try_with(|waiting| waiting.replace(None))
        .ok()
        .flatten();
    let polled = poll();
    let seen = WAITING
        .try_with(|waiting| {
            let seen = waiting.get();
            waiting.set(seen.or(outer));
            seen
        })
        .ok()
        .flatten();
    (polled, seen)
}

/// Future for [`waiting_at`]: says `stage` each time its future is pending.
#[cfg_attr(not(feature = "sqlx"), allow(dead_code))]
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub(crate) struct WaitingAt<F> {
    stage: Stage,
    #[pin]
    future: F,
}

/// `future`, which says that the request waits at `stage` while it is
/// pending.
#[cfg_attr(not(feature = "sqlx"), allow(dead_code))]
pub(crate) fn waiting_at<F: Future>(stage: Stage, future: F) -> WaitingAt<F> {
    WaitingAt { stage, future }
}

impl<F: Future> Future for WaitingAt<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let polled = this.future.poll(cx);
        if polled.is_pending() {
            let _ = WAITING.try_with(|waiting| waiting.set(Some(*this.stage)));
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use std::future::{pending, ready, Future};
    use std::pin::pin;
    use std::task::{Context, Poll};

    use super::{noting, waiting_at, Stage};

    fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> (Poll<F::Output>, Option<Stage>) {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        noting(|| future.poll(&mut cx))
    }

    #[test]
    fn a_pending_wait_says_its_stage_and_a_finished_one_does_not() {
        let mut waiting = pin!(waiting_at(Stage::PoolWait, pending::<()>()));
        assert_eq!(
            poll_once(waiting.as_mut()),
            (Poll::Pending, Some(Stage::PoolWait))
        );
        let mut done = pin!(waiting_at(Stage::PoolWait, ready(7)));
        assert_eq!(poll_once(done.as_mut()), (Poll::Ready(7), None));
    }

    #[test]
    fn each_poll_says_afresh_and_an_outer_noting_sees_the_inner_stage() {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut waiting = pin!(waiting_at(Stage::PoolWait, pending::<()>()));
        let (inner, outer) = noting(|| noting(|| waiting.as_mut().poll(&mut cx)));
        assert_eq!(inner.1, Some(Stage::PoolWait));
        assert_eq!(outer, Some(Stage::PoolWait));
        let mut other = pin!(pending::<()>());
        assert_eq!(poll_once(other.as_mut()), (Poll::Pending, None));
    }
}
