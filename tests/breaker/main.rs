//! Integration tests of `timebox::breaker`, rule B6 of DESIGN.md §5. Time is
//! tokio's paused clock throughout: nothing sleeps in real time.

#[path = "../support/mod.rs"]
mod support;

mod cancelled;
mod closed;
mod model;
mod open;
mod properties;
mod sharing;
mod slow;

use std::error::Error;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use http::StatusCode;
use proptest::prelude::*;
use proptest::sample::Index;
use timebox::breaker::{
    BreakerConfig, BreakerState, CallCounts, CancelledCallOutcome, CircuitBreaker, Open, Permit,
};
use tokio::time::{advance, Instant};

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);
const OPEN: Duration = Duration::from_secs(60);

/// The defaults of B6, except that three calls are enough to judge.
fn three_samples() -> BreakerConfig {
    BreakerConfig {
        minimum_sample_count: 3,
        ..BreakerConfig::default()
    }
}

fn succeed(breaker: &CircuitBreaker, calls: usize) {
    for _ in 0..calls {
        breaker.try_acquire().expect("the breaker admits").success();
    }
}

fn fail(breaker: &CircuitBreaker, calls: usize) {
    for _ in 0..calls {
        breaker.try_acquire().expect("the breaker admits").failure();
    }
}

fn acquire(breaker: &CircuitBreaker, calls: usize) -> Vec<Permit> {
    (0..calls)
        .map(|_| breaker.try_acquire().expect("the breaker admits"))
        .collect()
}

/// Fails calls on a fresh three-sample window: two leave it closed, the
/// third opens it.
fn opens_on_the_third_failure(breaker: &CircuitBreaker) {
    fail(breaker, 2);
    assert_eq!(breaker.state(), BreakerState::Closed);
    fail(breaker, 1);
    assert_eq!(breaker.state(), BreakerState::Open);
}

/// Succeeds three half-open trials in turn: the breaker closes on the last.
fn three_trials_succeed(breaker: &CircuitBreaker, mut trials: Vec<Permit>) {
    assert_eq!(trials.len(), 3, "three trials");
    trials.pop().unwrap().success();
    trials.pop().unwrap().success();
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    trials.pop().unwrap().success();
    assert_eq!(breaker.state(), BreakerState::Closed);
}

/// `(calls, failures, slow)` in the window now.
fn counts(breaker: &CircuitBreaker) -> (u64, u64, u64) {
    let CallCounts {
        calls,
        failures,
        slow,
        ..
    } = breaker.counts();
    (calls, failures, slow)
}

/// A breaker (minimum 3 samples) that has just gone half-open.
async fn half_open(config: &BreakerConfig) -> CircuitBreaker {
    let breaker = CircuitBreaker::new(config);
    fail(&breaker, config.minimum_sample_count as usize);
    assert_eq!(breaker.state(), BreakerState::Open);
    advance(Duration::from_secs(config.open_secs)).await;
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    breaker
}
