//! The state machine: closed, open, half-open, and what moves between them.

use std::time::Duration;

use tokio::time::Instant;

use super::error::Open;
use super::transition::Transition;
use super::window::{Call, CallCounts, Window};
use crate::config::{BreakerConfig, CancelledCallOutcome};
use crate::observe::BreakerCallOutcome;

/// Where a [`CircuitBreaker`](super::CircuitBreaker) stands, for tests and
/// metrics.
///
/// # Examples
///
/// ```
/// use timebox::breaker::{BreakerConfig, BreakerState, CircuitBreaker};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     let breaker = CircuitBreaker::new(&BreakerConfig::default());
///     assert_eq!(breaker.state(), BreakerState::Closed);
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls go through and their outcomes are counted in the window.
    Closed,
    /// Calls are refused without touching the host until the open period ends.
    Open,
    /// A few trial calls go through; their outcomes close or reopen it.
    HalfOpen,
}

impl BreakerState {
    /// A stable `snake_case` name: `"closed"`, `"half_open"` or `"open"`,
    /// for logs and metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::HalfOpen => "half_open",
            Self::Open => "open",
        }
    }

    /// The value of the `timebox.breaker.state` gauge: 0 closed, 1
    /// half-open, 2 open.
    #[must_use]
    pub const fn gauge(self) -> f64 {
        match self {
            Self::Closed => 0.0,
            Self::HalfOpen => 1.0,
            Self::Open => 2.0,
        }
    }
}

/// How a permit ended, as its holder reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Success,
    Failure,
    /// Dropped without an outcome.
    Cancelled,
}

/// An open period longer than this is cut to it, so `now + open` cannot
/// overflow the clock (about 30 years, tokio's own "far future").
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `ratio` as a threshold: one of 0 or below (or NaN), which
/// `Config::validate` refuses, is 1.0, so a window of successes never opens
/// the breaker. One above 1.0, refused too, stays: it never opens it.
fn usable_ratio(ratio: f64) -> f64 {
    if ratio > 0.0 {
        ratio
    } else {
        1.0
    }
}

/// The configuration, with the degenerate values `Config::validate` refuses
/// made harmless (a breaker must never panic or get stuck on them).
#[derive(Debug)]
struct Settings {
    failure_ratio_threshold: f64,
    slow_call_rate_threshold: f64,
    minimum_sample_count: u64,
    open: Duration,
    half_open_trials: u32,
    slow_call_duration_threshold: Option<Duration>,
    cancelled_call_outcome: CancelledCallOutcome,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Closed,
    Open { until: Instant },
    HalfOpen { in_flight: u32, succeeded: u32 },
}

/// The breaker's state behind its lock.
///
/// `generation` changes at every phase change. A permit remembers the
/// generation it was issued in, and its outcome counts only while that
/// generation lasts: a call started before the breaker opened cannot count
/// in the next closed window, nor free a slot of a later half-open round.
#[derive(Debug)]
pub(super) struct Machine {
    settings: Settings,
    phase: Phase,
    generation: u64,
    window: Window,
    /// The last change of state, until the caller takes it to log it.
    transition: Option<Transition>,
}

impl Machine {
    pub(super) fn new(config: &BreakerConfig, now: Instant) -> Self {
        Self {
            settings: Settings {
                failure_ratio_threshold: usable_ratio(config.failure_ratio_threshold),
                slow_call_rate_threshold: usable_ratio(config.slow_call_rate_threshold),
                minimum_sample_count: u64::from(config.minimum_sample_count),
                open: Duration::from_secs(config.open_secs).min(FAR_FUTURE),
                half_open_trials: config.half_open_trials.max(1),
                slow_call_duration_threshold: config.slow_call_duration_threshold(),
                cancelled_call_outcome: config.cancelled_call_outcome,
            },
            phase: Phase::Closed,
            generation: 0,
            window: Window::new(
                Duration::from_secs(config.window_secs),
                config.window_buckets,
                now,
            ),
            transition: None,
        }
    }

    /// The change of state the last call made, if any.
    pub(super) fn take_transition(&mut self) -> Option<Transition> {
        self.transition.take()
    }

    /// Admits a call, returning the generation its permit belongs to.
    pub(super) fn acquire(&mut self, now: Instant) -> Result<u64, Open> {
        self.refresh(now);
        let trials = self.settings.half_open_trials;
        match &mut self.phase {
            Phase::Closed => Ok(self.generation),
            Phase::Open { until } => Err(Open::new(Some(until.saturating_duration_since(now)))),
            Phase::HalfOpen {
                in_flight,
                succeeded,
            } => {
                if in_flight.saturating_add(*succeeded) < trials {
                    *in_flight += 1;
                    Ok(self.generation)
                } else {
                    Err(Open::new(None))
                }
            }
        }
    }

    /// Applies the outcome of a permit issued in `generation` that was
    /// acquired `elapsed` ago.
    pub(super) fn finish(
        &mut self,
        generation: u64,
        outcome: Outcome,
        elapsed: Duration,
        now: Instant,
    ) -> Option<BreakerCallOutcome> {
        if generation != self.generation {
            return None;
        }
        let call = self.classify(outcome, elapsed);
        let counted = match call {
            None => BreakerCallOutcome::Cancelled,
            Some(Call { failure: true, .. }) => BreakerCallOutcome::Failure,
            Some(Call { slow: true, .. }) => BreakerCallOutcome::Slow,
            Some(_) => BreakerCallOutcome::Success,
        };
        match &mut self.phase {
            Phase::Closed => {
                if let Some(call) = call {
                    self.window.record(now, call);
                    if self.should_open(now) {
                        self.open(now);
                    }
                }
            }
            Phase::HalfOpen {
                in_flight,
                succeeded,
            } => match call {
                None => *in_flight -= 1,
                Some(Call {
                    failure: false,
                    slow: false,
                }) => {
                    *in_flight -= 1;
                    *succeeded += 1;
                    if *succeeded >= self.settings.half_open_trials {
                        self.close();
                    }
                }
                Some(_) => self.open(now),
            },
            // No permit is issued while open, so none has this generation.
            Phase::Open { .. } => {}
        }
        Some(counted)
    }

    pub(super) fn state(&mut self, now: Instant) -> BreakerState {
        self.refresh(now);
        match self.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { .. } => BreakerState::Open,
            Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    pub(super) fn counts(&self, now: Instant) -> CallCounts {
        self.window.counts(now)
    }

    /// What a finished call counts as, if anything.
    fn classify(&self, outcome: Outcome, elapsed: Duration) -> Option<Call> {
        let slow = self
            .settings
            .slow_call_duration_threshold
            .is_some_and(|threshold| elapsed > threshold);
        match outcome {
            Outcome::Success => Some(Call {
                failure: false,
                slow,
            }),
            Outcome::Failure => Some(Call {
                failure: true,
                slow,
            }),
            Outcome::Cancelled if !slow => None,
            Outcome::Cancelled => Some(match self.settings.cancelled_call_outcome {
                CancelledCallOutcome::Slow => Call {
                    failure: false,
                    slow: true,
                },
                CancelledCallOutcome::Failure => Call {
                    failure: true,
                    slow: false,
                },
            }),
        }
    }

    fn should_open(&self, now: Instant) -> bool {
        let counts = self.window.counts(now);
        if counts.calls == 0 || counts.calls < self.settings.minimum_sample_count {
            return false;
        }
        // Integer counts divided once: a ratio exactly at a decimal threshold
        // (5 of 10 at 0.5, 3 of 10 at 0.3) compares equal.
        let calls = counts.calls as f64;
        counts.failures as f64 / calls >= self.settings.failure_ratio_threshold
            || counts.slow as f64 / calls >= self.settings.slow_call_rate_threshold
    }

    /// Moves an open breaker whose period is over to half-open.
    fn refresh(&mut self, now: Instant) {
        if let Phase::Open { until } = self.phase {
            if now >= until {
                self.enter(Phase::HalfOpen {
                    in_flight: 0,
                    succeeded: 0,
                });
                self.transition = Some(Transition::HalfOpened {
                    trials: self.settings.half_open_trials,
                });
            }
        }
    }

    fn open(&mut self, now: Instant) {
        let open = self.settings.open;
        self.transition = Some(match self.phase {
            Phase::HalfOpen { .. } => Transition::Reopened { open },
            Phase::Closed | Phase::Open { .. } => Transition::Opened {
                counts: self.window.counts(now),
                open,
            },
        });
        self.enter(Phase::Open { until: now + open });
    }

    fn close(&mut self) {
        self.window.clear();
        self.enter(Phase::Closed);
        self.transition = Some(Transition::Closed);
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.generation = self.generation.wrapping_add(1);
    }
}
