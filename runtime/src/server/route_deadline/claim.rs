//! [`RouteClaim`]: how a route's own deadline rule takes over from an outer
//! [`TimeboxLayer`](crate::server::TimeboxLayer).
//!
//! `TimeboxLayer` gives every route the global deadline, but a route with a
//! rule of its own (an override, longer or shorter, or `off`, from the route
//! macros or a [`RouteDeadlineLayer`](super::RouteDeadlineLayer)) keeps it.
//! Deadline scopes only shorten, so the outer layer must learn of the rule
//! before the handler runs, and axum calls a route's inner service only
//! when the route's future is first polled. So the outer layer probes:
//!
//! 1. it puts a claim in the request and polls the route, with the global
//!    deadline current and checked, as for any route;
//! 2. a route rule that receives the claim while the outer layer probes
//!    takes it over, and its future waits (`Pending`, nothing of the
//!    handler run) until the outer layer lets go;
//! 3. after each poll the outer layer looks at the claim: taken over, it
//!    lets go, stops gating and polls again at once, and the route's rule
//!    alone applies from the same start; not taken, it keeps probing under
//!    the global deadline until the route's future ends. The route is
//!    usually reached in the first poll; a middleware between the two that
//!    waits before it calls the route (an authentication look-up) reaches
//!    it in a later one, and a route rule taking over then wakes the outer
//!    layer.
//!
//! A route whose future runs on a task of its own (a middleware between
//! the two spawned it) is not polled again by the outer layer: letting go
//! wakes it. So does dropping the outer layer's future (its client went
//! away), so such a route never waits for good.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Waker};

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
    /// The outer layer's task, once a poll left the claim untaken.
    outer: AtomicWaker,
}

/// What the outer layer learned from a poll of the route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probed {
    /// A route rule took the request over; the outer layer let go.
    Taken,
    /// The route's future ended with no route rule taking it over.
    Untaken,
    /// Still untaken, and the route's future is still running: a route
    /// rule may yet take over, and then wakes the outer layer's task.
    Open,
}

impl RouteClaim {
    /// For a route rule that receives the request: takes the request over
    /// when the outer layer is still probing.
    pub(crate) fn take_over(&self) -> bool {
        let taken = self
            .0
            .state
            .compare_exchange(PROBING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if taken {
            // Only an outer layer that already left a poll untaken waits
            // for this; in the first poll nothing is registered yet.
            self.0.outer.wake();
        }
        taken
    }

    /// For the outer layer, after a poll (of the task of `cx`) that left the
    /// route's future `running` or not: whether a route rule took the
    /// request over. A taken claim is let go, and a route that waits on a
    /// task of its own is woken; one on this task is not, since the outer
    /// layer polls it again at once.
    pub(crate) fn probe(&self, cx: &Context<'_>, running: bool) -> Probed {
        if running && self.0.state.load(Ordering::Acquire) == PROBING {
            self.0.outer.register(cx.waker());
            // Taken in between: the wake may have gone to an older waker.
            if self.0.state.load(Ordering::Acquire) == PROBING {
                return Probed::Open;
            }
        }
        if self.settle(Some(cx.waker())) {
            Probed::Taken
        } else {
            Probed::Untaken
        }
    }

    /// Whether a route rule took the claim over and waits to be let go.
    pub(crate) fn is_taken(&self) -> bool {
        self.0.state.load(Ordering::Acquire) == TAKEN
    }

    /// For the outer layer's future when it is dropped, or when it finds
    /// the claim taken before it polls: no route rule can take over from
    /// now on, and one that did is let go.
    pub(crate) fn let_go(&self) {
        if self.0.state.load(Ordering::Acquire) != SETTLED {
            self.settle(None);
        }
    }

    /// Settles the claim: whether a route rule had taken it over. One that
    /// did is woken, unless its task is the one `polling` it next (the
    /// outer layer's, which polls it again at once).
    fn settle(&self, polling: Option<&Waker>) -> bool {
        if self.0.state.swap(SETTLED, Ordering::AcqRel) != TAKEN {
            return false;
        }
        if let Some(route) = self.0.route.take() {
            if !polling.is_some_and(|polling| route.will_wake(polling)) {
                route.wake();
            }
        }
        true
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

/// The outer layer's hold on a claim while it probes: dropped, it lets go
/// (see [`RouteClaim::let_go`]).
#[derive(Debug)]
pub(crate) struct Probe(RouteClaim);

impl Probe {
    /// A probe of a new claim, and the claim for the request.
    pub(crate) fn new() -> (Self, RouteClaim) {
        let claim = RouteClaim::default();
        (Self(claim.clone()), claim)
    }

    /// See [`RouteClaim::probe`].
    pub(crate) fn after_poll(&self, cx: &Context<'_>, running: bool) -> Probed {
        self.0.probe(cx, running)
    }

    /// See [`RouteClaim::is_taken`].
    pub(crate) fn is_taken(&self) -> bool {
        self.0.is_taken()
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.0.let_go();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Wake, Waker};

    use super::{Probe, Probed, RouteClaim};

    #[derive(Default)]
    struct Woken(AtomicBool);

    impl Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    impl Woken {
        fn waker(self: &Arc<Self>) -> Waker {
            Waker::from(Arc::clone(self))
        }

        fn was_woken(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn noop() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    #[test]
    fn a_claim_taken_over_is_held_until_let_go() {
        let claim = RouteClaim::default();
        assert!(!claim.is_held(&noop()));
        assert!(claim.take_over());
        assert!(claim.is_held(&noop()));
        assert!(!claim.take_over());
        assert_eq!(claim.probe(&noop(), true), Probed::Taken);
        assert!(!claim.is_held(&noop()));
    }

    #[test]
    fn a_claim_whose_route_ended_untaken_cannot_be_taken_later() {
        let claim = RouteClaim::default();
        assert_eq!(claim.probe(&noop(), false), Probed::Untaken);
        assert!(!claim.take_over());
        assert!(!claim.is_held(&noop()));
    }

    #[test]
    fn a_claim_left_open_is_taken_later_and_wakes_the_outer_layer() {
        let claim = RouteClaim::default();
        let outer = Arc::new(Woken::default());
        let waker = outer.waker();
        let cx = Context::from_waker(&waker);
        assert_eq!(claim.probe(&cx, true), Probed::Open);
        assert!(!outer.was_woken());
        assert!(claim.take_over());
        assert!(
            outer.was_woken(),
            "the take-over did not wake the outer layer"
        );
        assert_eq!(claim.probe(&cx, true), Probed::Taken);
    }

    #[test]
    fn letting_go_wakes_the_route_that_waits_on_its_own_task() {
        let claim = RouteClaim::default();
        assert!(claim.take_over());
        let route = Arc::new(Woken::default());
        let waker = route.waker();
        assert!(claim.is_held(&Context::from_waker(&waker)));
        assert_eq!(claim.probe(&noop(), true), Probed::Taken);
        assert!(route.was_woken());
    }

    #[test]
    fn letting_go_from_the_routes_own_task_wakes_nothing() {
        let claim = RouteClaim::default();
        assert!(claim.take_over());
        let route = Arc::new(Woken::default());
        let waker = route.waker();
        let cx = Context::from_waker(&waker);
        assert!(claim.is_held(&cx));
        // The outer layer polls the route again at once: no wake-up.
        assert_eq!(claim.probe(&cx, true), Probed::Taken);
        assert!(!route.was_woken());
    }

    #[test]
    fn a_dropped_probe_lets_a_waiting_route_go() {
        let (probe, claim) = Probe::new();
        assert!(claim.take_over());
        let route = Arc::new(Woken::default());
        let waker = route.waker();
        assert!(claim.is_held(&Context::from_waker(&waker)));
        drop(probe);
        assert!(route.was_woken());
        assert!(!claim.is_held(&noop()));
        assert!(!claim.take_over());
    }
}
