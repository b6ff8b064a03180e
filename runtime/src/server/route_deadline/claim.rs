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

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

const PROBING: u8 = 0;
const TAKEN: u8 = 1;
const SETTLED: u8 = 2;

/// A request extension that [`TimeboxLayer`](crate::server::TimeboxLayer)
/// puts in while it probes the route.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteClaim(Arc<AtomicU8>);

impl RouteClaim {
    /// For a route rule that receives the request: takes the request over
    /// when the outer layer is still probing.
    pub(crate) fn take_over(&self) -> bool {
        self.0
            .compare_exchange(PROBING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// For the outer layer, after the first poll: whether a route rule took
    /// the request over. From then on no rule can.
    pub(crate) fn settle(&self) -> bool {
        self.0.swap(SETTLED, Ordering::AcqRel) == TAKEN
    }

    /// For the route rule's future: whether the outer layer has yet to let
    /// go (it polls again at once when it does).
    pub(crate) fn is_held(&self) -> bool {
        self.0.load(Ordering::Acquire) == TAKEN
    }
}

#[cfg(test)]
mod tests {
    use super::RouteClaim;

    #[test]
    fn a_claim_taken_over_is_held_until_settled() {
        let claim = RouteClaim::default();
        assert!(!claim.is_held());
        assert!(claim.take_over());
        assert!(claim.is_held());
        assert!(!claim.take_over());
        assert!(claim.settle());
        assert!(!claim.is_held());
    }

    #[test]
    fn a_claim_settled_untaken_cannot_be_taken_later() {
        let claim = RouteClaim::default();
        assert!(!claim.settle());
        assert!(!claim.take_over());
        assert!(!claim.is_held());
    }
}
