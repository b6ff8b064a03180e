//! [`DeadlineCheck`]: A1, a request whose time left is below its route's
//! service time is refused before extraction.

#[cfg(feature = "server")]
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::fraction::FractionCap;
use super::window::LatencyWindow;
use crate::config::{AdmissionConfig, DeadlineCheck as Mode};
use crate::observe::{Event, Label, Observers, ShedReason};

/// One route's deadline check: its estimate of the service time and its
/// cap on refusals.
#[derive(Debug)]
pub(crate) struct DeadlineCheck {
    enforce: bool,
    /// The route's `min_budget_ms`; without it the route's median.
    min_budget: Option<Duration>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    window: LatencyWindow,
    cap: FractionCap,
}

/// Where the service time a request was compared with comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EstimateSource {
    /// The route's `min_budget_ms`.
    MinBudget,
    /// The median of the route's successful requests of the last 30 s.
    Median,
}

/// What the check says of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Enough time left, or no estimate yet, or the cap is reached.
    Admit,
    /// Too little time left: refused when `enforced`, else only counted.
    TooShort {
        time_left: Duration,
        estimate: Duration,
        source: EstimateSource,
        enforced: bool,
    },
}

impl DeadlineCheck {
    /// The check of one route, or `None` when `deadline_check` is off.
    #[cfg(feature = "server")]
    pub(crate) fn for_route(
        config: &AdmissionConfig,
        min_budget: Option<Duration>,
    ) -> Option<Arc<Self>> {
        (config.deadline_check != Mode::Off).then(|| Arc::new(Self::new(config, min_budget)))
    }

    /// The check of one route, for a caller that knows the check is on.
    pub(crate) fn new(config: &AdmissionConfig, min_budget: Option<Duration>) -> Self {
        Self {
            enforce: config.deadline_check == Mode::Enforce,
            min_budget,
            state: Mutex::new(State {
                window: LatencyWindow::new(),
                cap: FractionCap::new(config.max_reject_fraction),
            }),
        }
    }

    /// Judges a request with `time_left` before its deadline, at `now`.
    pub(crate) fn check(&self, time_left: Duration, now: Instant) -> Verdict {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let estimate = match self.min_budget {
            Some(min_budget) => Some((min_budget, EstimateSource::MinBudget)),
            None => state
                .window
                .estimate(now)
                .map(|estimate| (estimate.median, EstimateSource::Median)),
        };
        state.cap.count(now);
        match estimate.filter(|&(estimate, _)| time_left < estimate) {
            Some((estimate, source)) if state.cap.try_take(now).is_some() => Verdict::TooShort {
                time_left,
                estimate,
                source,
                enforced: self.enforce,
            },
            _ => Verdict::Admit,
        }
    }

    /// Counts a request of the route that has no deadline to judge, at
    /// `now`: one of the route's requests all the same, for the cap on
    /// refusals.
    #[cfg(feature = "grpc")]
    pub(crate) fn count(&self, now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.cap.count(now);
    }

    /// Whether the route learns its service time from its requests (it has
    /// no `min_budget_ms`).
    #[cfg(feature = "server")]
    pub(crate) fn learns(&self) -> bool {
        self.min_budget.is_none()
    }

    /// Adds the latency of one successful request, which started at
    /// `start` and ended now.
    pub(crate) fn record_success(&self, start: Instant) {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .window
            .record(now, now.saturating_duration_since(start));
    }
}

/// A request the check refused, for the answer of its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooShort {
    pub(crate) time_left: Duration,
    pub(crate) estimate: Duration,
    /// Where the estimate came from, in words for the answer.
    pub(crate) from: &'static str,
}

impl DeadlineCheck {
    /// Judges a request with `time_left` at `now` (the clock reading its
    /// door took when the request arrived) on the route `route` (named
    /// `label()` in events, made only for an event that is told): `Some`
    /// when it is refused (after `before_verdict` ran, and then the
    /// refusal was told), `None` to serve it, told as
    /// `deadline_too_short_dark` (after `before_verdict` ran) when dark
    /// mode would have refused it. HTTP answers a refusal with 504, gRPC
    /// with `DEADLINE_EXCEEDED`.
    pub(crate) fn judge(
        &self,
        time_left: Duration,
        now: Instant,
        route: &str,
        label: impl FnOnce() -> Option<Label>,
        observers: &Observers,
        before_verdict: impl FnOnce(),
    ) -> Option<TooShort> {
        let Verdict::TooShort {
            time_left,
            estimate,
            source,
            enforced,
        } = self.check(time_left, now)
        else {
            return None;
        };
        before_verdict();
        let reason = if enforced {
            ShedReason::DeadlineTooShort
        } else {
            ShedReason::DeadlineTooShortDark
        };
        observers.emit(|| Event::RequestShed {
            reason,
            route: label(),
        });
        if !enforced {
            return None;
        }
        tracing::info!(
            route,
            time_left_ms = time_left.as_millis(),
            estimate_ms = estimate.as_millis(),
            "request refused: its deadline is too short for the route",
        );
        let from = match source {
            EstimateSource::MinBudget => "its `min_budget_ms`",
            EstimateSource::Median => "the median of its successful requests over the last 30 s",
        };
        Some(TooShort {
            time_left,
            estimate,
            from,
        })
    }
}
