//! A1 at a route's door: the deadline check, told and, when enforced,
//! answered, before the handler's future is polled (so before extraction).

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use tokio::time::Instant;

use crate::admission::DeadlineCheck;
use crate::observe::Observers;
use crate::problem;

use super::RouteName;

/// Judges a request with `time_left` at `now` on its route: `Some` with the
/// 504 to answer when the check refuses it (see [`DeadlineCheck::judge`];
/// `before_verdict` runs before a verdict is told, for a caller with more
/// to tell).
pub(crate) fn admit(
    check: &DeadlineCheck,
    time_left: Duration,
    now: Instant,
    route: &RouteName,
    observers: &Observers,
    before_verdict: impl FnOnce(),
) -> Option<Response> {
    let refused = check.judge(
        time_left,
        now,
        route.as_str(),
        || route.label(),
        observers,
        before_verdict,
    )?;
    Some(problem::deadline_too_short(
        refused.time_left,
        refused.estimate,
        refused.from,
    ))
}

/// What a route learns its service time from: the latency of each
/// successful request, timed from where the request was judged: so that a
/// wait before that point (in a limit's queue) is in both the estimate and
/// the time left it is compared with, or in neither.
#[derive(Debug, Clone)]
pub(crate) struct Learn {
    check: Arc<DeadlineCheck>,
    /// Where the request was judged, when that was before its handler's
    /// first poll (a plain route's arrival at `TimeboxLayer`); else the
    /// first poll (a macro route's).
    judged_at: Option<Instant>,
}

impl Learn {
    /// Learning for `check`, when it learns (no `min_budget_ms`), from the
    /// handler's first poll.
    pub(crate) fn from_check(check: Option<Arc<DeadlineCheck>>) -> Option<Self> {
        check.filter(|check| check.learns()).map(|check| Self {
            check,
            judged_at: None,
        })
    }

    /// Learning from `at`, where the request was judged.
    pub(crate) fn judged_at(mut self, at: Instant) -> Self {
        self.judged_at = Some(at);
        self
    }

    /// A request whose handler was first polled at `first_poll` succeeded
    /// now.
    pub(crate) fn succeeded(&self, first_poll: Instant) {
        self.check
            .record_success(self.judged_at.unwrap_or(first_poll));
    }
}
