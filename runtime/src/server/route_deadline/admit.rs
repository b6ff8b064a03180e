//! A1 at a route's door: the deadline check, told and, when enforced,
//! answered, before the handler's future is polled (so before extraction).

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use tokio::time::Instant;

use crate::admission::{DeadlineCheck, EstimateSource, Verdict};
use crate::observe::{Event, Observers, ShedReason};
use crate::problem;

use super::future::RouteName;

/// Judges a request with `time_left` on its route: `Some` with the 504 to
/// answer when the check refuses it, `None` to serve it (told as
/// `deadline_too_short_dark` when dark mode would have refused it).
pub(crate) fn admit(
    check: &DeadlineCheck,
    time_left: Duration,
    route: &RouteName,
    observers: &Observers,
) -> Option<Response> {
    let Verdict::TooShort {
        time_left,
        estimate,
        source,
        enforced,
    } = check.check(time_left)
    else {
        return None;
    };
    let reason = if enforced {
        ShedReason::DeadlineTooShort
    } else {
        ShedReason::DeadlineTooShortDark
    };
    observers.emit(|| Event::RequestShed {
        reason,
        route: route.label(),
    });
    if !enforced {
        return None;
    }
    let from = match source {
        EstimateSource::MinBudget => "its `min_budget_ms`",
        EstimateSource::Median => "the median of its successful requests over the last 30 s",
    };
    tracing::info!(
        route = route.as_str(),
        time_left_ms = time_left.as_millis(),
        estimate_ms = estimate.as_millis(),
        "request refused: its deadline is too short for the route",
    );
    Some(problem::deadline_too_short(time_left, estimate, from))
}

/// What a route learns its service time from: the latency of each
/// successful request, from when its deadline started.
#[derive(Debug, Clone)]
pub(crate) struct Learn {
    check: Arc<DeadlineCheck>,
}

impl Learn {
    /// Learning for `check`, when it learns (no `min_budget_ms`).
    pub(crate) fn from_check(check: Option<&Arc<DeadlineCheck>>) -> Option<Self> {
        check.filter(|check| check.learns()).map(|check| Self {
            check: Arc::clone(check),
        })
    }

    /// A request that started at `start` succeeded now.
    pub(crate) fn succeeded(&self, start: Instant) {
        self.check.record_success(start.elapsed());
    }
}
