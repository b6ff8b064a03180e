//! [`RouteClaim`]: how a route's own deadline rule takes over from an outer
//! [`TimeboxLayer`](crate::server::TimeboxLayer).
//!
//! `TimeboxLayer` gives every route the global deadline, but a route with a
//! rule of its own (an override, longer or shorter, or `off`, from the route
//! macros or a [`RouteDeadlineLayer`](super::RouteDeadlineLayer)) keeps it.
//! Deadline scopes only shorten, so the outer layer must learn of the rule
//! before it gates anything, and axum calls a route's inner service only
//! when the route's future is first polled. So the outer layer probes:
//!
//! 1. it puts a claim in the request and polls the route once, with the
//!    global deadline current and checked, as for any route;
//! 2. a route rule that receives a claim takes it over, and its future
//!    waits (`Pending`, nothing of the handler run) until the outer layer
//!    lets go;
//! 3. after that first poll the outer layer settles the claim: taken over,
//!    it stops gating and polls again at once, and the route's rule alone
//!    applies from the same start; not taken, the route is a plain one and
//!    the global deadline keeps gating it.
//!
//! A route whose future runs on a task of its own (a middleware between
//! the two spawned it) is not polled again by the outer layer: settling the
//! claim wakes it.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::Context;

use futures_util::task::AtomicWaker;

const PROBING: u8 = 0;
const TAKEN: u8 = 1;
const SETTLED: u8 = 2;

/// A request extension that [`TimeboxLayer`](crate::server::TimeboxLayer)
/// puts in while it probes the route.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteClaim(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    state: AtomicU8,
    /// The route's task, while its future waits for the outer layer.
    route: AtomicWaker,
}

impl RouteClaim {
    /// For a route rule that receives the request: takes the request over
    /// when the outer layer is still probing.
    pub(crate) fn take_over(&self) -> bool {
        self.0
            .state
            .compare_exchange(PROBING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// For the outer layer, after the first poll (of the task of `cx`):
    /// whether a route rule took the request over. From then on no rule
    /// can. A route that waits on a task of its own is woken; one on this
    /// task is not, since the outer layer polls it again at once.
    pub(crate) fn settle(&self, cx: &Context<'_>) -> bool {
        let taken = self.0.state.swap(SETTLED, Ordering::AcqRel) == TAKEN;
        if taken {
            if let Some(route) = self.0.route.take() {
                if !route.will_wake(cx.waker()) {
                    route.wake();
                }
            }
        }
        taken
    }

    /// For the route rule's future: whether the outer layer has yet to let
    /// go; if so, the task of `cx` is woken when it does.
    pub(crate) fn is_held(&self, cx: &Context<'_>) -> bool {
        if self.0.state.load(Ordering::Acquire) != TAKEN {
            return false;
        }
        self.0.route.register(cx.waker());
        // Settled in between: the wake may have gone to an older waker.
        self.0.state.load(Ordering::Acquire) == TAKEN
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::{Context, Wake, Waker};

    use super::RouteClaim;

    #[derive(Default)]
    struct Woken(std::sync::atomic::AtomicBool);

    impl Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn noop() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    #[test]
    fn a_claim_taken_over_is_held_until_settled() {
        let claim = RouteClaim::default();
        assert!(!claim.is_held(&noop()));
        assert!(claim.take_over());
        assert!(claim.is_held(&noop()));
        assert!(!claim.take_over());
        assert!(claim.settle(&noop()));
        assert!(!claim.is_held(&noop()));
    }

    #[test]
    fn a_claim_settled_untaken_cannot_be_taken_later() {
        let claim = RouteClaim::default();
        assert!(!claim.settle(&noop()));
        assert!(!claim.take_over());
        assert!(!claim.is_held(&noop()));
    }

    #[test]
    fn settling_a_taken_claim_wakes_the_route_that_waits() {
        let claim = RouteClaim::default();
        assert!(claim.take_over());
        let woken = Arc::new(Woken::default());
        let waker = Waker::from(Arc::clone(&woken));
        assert!(claim.is_held(&Context::from_waker(&waker)));
        assert!(claim.settle(&noop()));
        assert!(woken.0.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn settling_from_the_routes_own_task_wakes_nothing() {
        let claim = RouteClaim::default();
        assert!(claim.take_over());
        let woken = Arc::new(Woken::default());
        let waker = Waker::from(Arc::clone(&woken));
        let cx = Context::from_waker(&waker);
        assert!(claim.is_held(&cx));
        // The outer layer polls the route again at once: no wake-up.
        assert!(claim.settle(&cx));
        assert!(!woken.0.load(std::sync::atomic::Ordering::SeqCst));
    }
}
