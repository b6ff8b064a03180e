//! Where a request is waiting: what a future that waits on a shared
//! resource says while it is pending, so that a request's deadline that
//! passes then is told at that [`Stage`] (a pool wait) rather than as the
//! handler's.
//!
//! It is a thread-local, as the current deadline is: [`WaitingAt`] sets it
//! when its future returns `Pending`, and [`noting`] clears it around one
//! poll of a request's future and reads it after, so each poll says where
//! the request was left waiting, and nothing is shared between requests or
//! allocated. The same poll also says whether a part inside told a
//! deadline itself (an outbound call whose deadline passed, dropped in that
//! poll after a gate of the handler's own cut it), so that the request's
//! owner does not tell the error it answers with in that poll again.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project::pin_project;

use super::Stage;

/// What one poll of a request's future said (see [`noting`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Noted {
    /// The stage the request was left waiting at, if a part said.
    pub(crate) waiting: Option<Stage>,
    /// Whether a part told a deadline of the request's itself.
    pub(crate) told: bool,
}

thread_local! {
    /// What the future being polled on this thread said so far.
    static NOTED: Cell<Noted> = const { Cell::new(Noted { waiting: None, told: false }) };
    /// Set while a request's owner (a route, a gRPC method) drops its work
    /// because its deadline passed: the owner tells the deadline, at the
    /// stage the work was left waiting at, so what it drops need not.
    static OWNER_TELLS: Cell<bool> = const { Cell::new(false) };
}

/// Runs `drop_work`, the dropping of a request's work whose deadline
/// passed, by an owner that tells the deadline itself (O1: one event per
/// deadline): a client call dropped inside does not tell it again.
#[cfg_attr(not(any(feature = "server", feature = "grpc")), allow(dead_code))]
pub(crate) fn owner_tells<R>(drop_work: impl FnOnce() -> R) -> R {
    crate::thread_cell::with_set(&OWNER_TELLS, true, drop_work)
}

/// Whether the work being dropped now is dropped by an owner that tells
/// its deadline (see [`owner_tells`]).
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub(crate) fn an_owner_tells() -> bool {
    OWNER_TELLS.try_with(Cell::get).unwrap_or(false)
}

/// Tells that an outbound call's own deadline passed (at the `outbound`
/// stage, with no route: the call does not know its caller's), unless an
/// owner that tells its deadline itself is dropping the call.
#[cfg(feature = "client")]
pub(crate) fn tell_outbound_deadline(observers: &super::Observers) {
    if !an_owner_tells() {
        observers.emit(|| super::Event::DeadlineExceeded {
            stage: Stage::Outbound,
            route: None,
        });
        deadline_told();
    }
}

/// Says that a deadline of the request being polled was told by a part
/// inside it (an outbound call's): its owner does not tell the error it
/// answers with in this poll again (O1).
#[cfg_attr(not(any(feature = "client", feature = "grpc")), allow(dead_code))]
pub(crate) fn deadline_told() {
    let _ = NOTED.try_with(|noted| {
        noted.set(Noted {
            told: true,
            ..noted.get()
        });
    });
}

/// Runs one poll (`poll`) of a request's future; the poll's result and
/// what it said: the stage it was left waiting at, when a [`WaitingAt`]
/// inside said, and whether a part told a deadline. An outer `noting`
/// sees the same.
#[cfg_attr(not(any(feature = "server", feature = "grpc")), allow(dead_code))]
pub(crate) fn noting<R>(poll: impl FnOnce() -> R) -> (R, Noted) {
    let outer = NOTED
        .try_with(|noted| noted.replace(Noted::default()))
        .unwrap_or_default();
    let polled = poll();
    let seen = NOTED
        .try_with(|noted| {
            let seen = noted.get();
            noted.set(Noted {
                waiting: seen.waiting.or(outer.waiting),
                told: seen.told || outer.told,
            });
            seen
        })
        .unwrap_or_default();
    (polled, seen)
}

/// Future for [`waiting_at`]: says `stage` each time its future is pending.
#[cfg_attr(not(any(feature = "sqlx", feature = "client")), allow(dead_code))]
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub(crate) struct WaitingAt<F> {
    stage: Stage,
    #[pin]
    future: F,
}

/// Says that the future being polled was left waiting at `stage`, for a
/// named future that cannot be wrapped in [`waiting_at`].
#[cfg_attr(
    not(any(feature = "sqlx", feature = "client", feature = "grpc")),
    allow(dead_code)
)]
pub(crate) fn waiting_now(stage: Stage) {
    let _ = NOTED.try_with(|noted| {
        noted.set(Noted {
            waiting: Some(stage),
            ..noted.get()
        });
    });
}

/// `future`, which says that the request waits at `stage` while it is
/// pending.
#[cfg_attr(not(any(feature = "sqlx", feature = "client")), allow(dead_code))]
pub(crate) fn waiting_at<F: Future>(stage: Stage, future: F) -> WaitingAt<F> {
    WaitingAt { stage, future }
}

impl<F: Future> Future for WaitingAt<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let polled = this.future.poll(cx);
        if polled.is_pending() {
            waiting_now(*this.stage);
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
        let (polled, noted) = noting(|| future.poll(&mut cx));
        (polled, noted.waiting)
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
        assert_eq!(inner.1.waiting, Some(Stage::PoolWait));
        assert_eq!(outer.waiting, Some(Stage::PoolWait));
        let mut other = pin!(pending::<()>());
        assert_eq!(poll_once(other.as_mut()), (Poll::Pending, None));
    }

    #[test]
    fn a_nested_noting_that_sees_nothing_keeps_what_the_outer_poll_said() {
        let ((), outer) = noting(|| {
            super::waiting_now(Stage::Outbound);
            let ((), inner) = noting(|| ());
            assert_eq!(inner.waiting, None);
        });
        assert_eq!(outer.waiting, Some(Stage::Outbound));
    }

    #[test]
    fn a_deadline_told_inside_is_seen_by_this_poll_and_the_outer_one_only() {
        let ((), outer) = noting(|| {
            let ((), inner) = noting(super::deadline_told);
            assert!(inner.told);
        });
        assert!(outer.told);
        let ((), next) = noting(|| ());
        assert!(!next.told, "each poll says afresh");
    }

    #[test]
    fn an_owner_tells_only_while_it_drops_work_and_nested_calls_restore() {
        use super::{an_owner_tells, owner_tells};

        assert!(!an_owner_tells());
        owner_tells(|| {
            assert!(an_owner_tells());
            owner_tells(|| assert!(an_owner_tells()));
            assert!(an_owner_tells(), "the outer owner still tells");
        });
        assert!(!an_owner_tells());
    }
}
