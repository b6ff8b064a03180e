//! [`DeadlineCheck`]: A1, a request whose time left is below its route's
//! service time is refused before extraction.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::fraction::FractionCap;
use super::window::LatencyWindow;
use crate::config::{AdmissionConfig, DeadlineCheck as Mode};

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
    pub(crate) fn new(config: &AdmissionConfig, min_budget: Option<Duration>) -> Option<Arc<Self>> {
        let enforce = match config.deadline_check {
            Mode::Off => return None,
            Mode::Dark => false,
            Mode::Enforce => true,
        };
        Some(Arc::new(Self {
            enforce,
            min_budget,
            state: Mutex::new(State {
                window: LatencyWindow::new(),
                cap: FractionCap::new(config.max_reject_fraction),
            }),
        }))
    }

    /// Judges a request with `time_left` before its deadline.
    pub(crate) fn check(&self, time_left: Duration) -> Verdict {
        let now = Instant::now();
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
            Some((estimate, source)) if state.cap.try_take(now) => Verdict::TooShort {
                time_left,
                estimate,
                source,
                enforced: self.enforce,
            },
            _ => Verdict::Admit,
        }
    }

    /// Whether the route learns its service time from its requests (it has
    /// no `min_budget_ms`).
    pub(crate) fn learns(&self) -> bool {
        self.min_budget.is_none()
    }

    /// Adds the latency of one successful request.
    pub(crate) fn record_success(&self, latency: Duration) {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.window.record(now, latency);
    }
}
