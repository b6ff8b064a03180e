//! Integration tests of `timebox::breaker`, rule B6 of DESIGN.md §5. Time is
//! tokio's paused clock throughout: nothing sleeps in real time.

mod support;

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

// Closed: the window and the thresholds.

#[tokio::test(start_paused = true)]
async fn three_failures_open_the_breaker_and_the_fourth_call_is_refused() {
    let breaker = CircuitBreaker::new(&three_samples());
    fail(&breaker, 2);
    assert_eq!(breaker.state(), BreakerState::Closed);
    fail(&breaker, 1);
    assert_eq!(breaker.state(), BreakerState::Open);
    assert!(breaker.try_acquire().is_err());
}

#[tokio::test(start_paused = true)]
async fn the_breaker_stays_closed_below_the_minimum_sample_count() {
    let breaker = CircuitBreaker::new(&BreakerConfig::default());
    fail(&breaker, 9);
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (9, 9, 0));
    fail(&breaker, 1);
    assert_eq!(breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn successes_keep_the_breaker_closed() {
    let breaker = CircuitBreaker::new(&three_samples());
    succeed(&breaker, 100);
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (100, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_failure_ratio_exactly_at_the_threshold_opens_the_breaker() {
    for (threshold, failures) in [(0.5, 5), (0.3, 3), (0.1, 1)] {
        let breaker = CircuitBreaker::new(&BreakerConfig {
            failure_ratio_threshold: threshold,
            ..BreakerConfig::default()
        });
        succeed(&breaker, 10 - failures);
        fail(&breaker, failures - 1);
        assert_eq!(breaker.state(), BreakerState::Closed, "{threshold}");
        fail(&breaker, 1);
        assert_eq!(breaker.state(), BreakerState::Open, "{threshold}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_failure_ratio_below_the_threshold_keeps_the_breaker_closed() {
    let breaker = CircuitBreaker::new(&BreakerConfig::default());
    fail(&breaker, 4);
    succeed(&breaker, 6);
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (10, 4, 0));
}

#[tokio::test(start_paused = true)]
async fn old_outcomes_leave_the_window_after_window_secs() {
    let breaker = CircuitBreaker::new(&three_samples());
    fail(&breaker, 2);
    advance(9 * SEC).await;
    assert_eq!(counts(&breaker), (2, 2, 0));
    advance(SEC).await;
    assert_eq!(counts(&breaker), (0, 0, 0));
    fail(&breaker, 1);
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (1, 1, 0));
}

#[tokio::test(start_paused = true)]
async fn record_status_counts_server_errors_as_failures_and_the_rest_as_successes() {
    let breaker = CircuitBreaker::new(&BreakerConfig {
        minimum_sample_count: 1000,
        ..BreakerConfig::default()
    });
    for status in [200, 204, 304, 404, 429, 499] {
        let status = StatusCode::from_u16(status).unwrap();
        breaker.try_acquire().unwrap().record_status(status);
    }
    assert_eq!(counts(&breaker), (6, 0, 0));
    for status in [500, 502, 503, 504, 599] {
        let status = StatusCode::from_u16(status).unwrap();
        breaker.try_acquire().unwrap().record_status(status);
    }
    assert_eq!(counts(&breaker), (11, 5, 0));
}

// Open and half-open.

#[tokio::test(start_paused = true)]
async fn an_open_breaker_refuses_calls_until_open_secs_have_passed() {
    let breaker = CircuitBreaker::new(&three_samples());
    fail(&breaker, 3);
    let open: Open = breaker.try_acquire().unwrap_err();
    assert_eq!(open.to_string(), "circuit breaker open");
    assert!(open.source().is_none());
    assert_eq!(open.retry_in(), Some(OPEN));

    advance(OPEN - MS).await;
    assert_eq!(breaker.state(), BreakerState::Open);
    assert_eq!(breaker.try_acquire().unwrap_err().retry_in(), Some(MS));

    advance(MS).await;
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    assert!(breaker.try_acquire().is_ok());
}

#[tokio::test(start_paused = true)]
async fn half_open_admits_exactly_half_open_trials_permits_at_once() {
    let breaker = half_open(&three_samples()).await;
    let _trials = acquire(&breaker, 3);
    let refused = breaker.try_acquire().unwrap_err();
    assert_eq!(refused.retry_in(), None);
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
}

#[tokio::test(start_paused = true)]
async fn all_trials_succeeding_close_the_breaker_with_an_empty_window() {
    // A window longer than the open period still holds the failures that
    // opened the breaker, unless closing empties it.
    let config = BreakerConfig {
        window_secs: 120,
        ..three_samples()
    };
    let breaker = half_open(&config).await;
    let mut trials = acquire(&breaker, 3);
    trials.pop().unwrap().success();
    trials.pop().unwrap().success();
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    trials.pop().unwrap().success();
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (0, 0, 0));

    fail(&breaker, 2);
    assert_eq!(breaker.state(), BreakerState::Closed);
    fail(&breaker, 1);
    assert_eq!(breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn one_failed_trial_opens_the_breaker_for_a_full_period_again() {
    let breaker = half_open(&three_samples()).await;
    let mut trials = acquire(&breaker, 3);
    trials.pop().unwrap().success();
    advance(5 * SEC).await;
    trials.pop().unwrap().failure();
    assert_eq!(breaker.state(), BreakerState::Open);

    // The last trial ends after the round was lost: it neither closes the
    // breaker nor holds a slot in the next round.
    trials.pop().unwrap().success();
    assert_eq!(breaker.state(), BreakerState::Open);
    advance(OPEN - MS).await;
    assert_eq!(breaker.state(), BreakerState::Open);
    advance(MS).await;
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    let _next_round = acquire(&breaker, 3);
}

#[tokio::test(start_paused = true)]
async fn a_slow_trial_opens_the_breaker_again() {
    let config = BreakerConfig {
        slow_call_duration_threshold_secs: 5,
        ..three_samples()
    };
    let breaker = half_open(&config).await;
    let trial = breaker.try_acquire().unwrap();
    advance(6 * SEC).await;
    trial.success();
    assert_eq!(breaker.state(), BreakerState::Open);

    advance(OPEN).await;
    let trial = breaker.try_acquire().unwrap();
    advance(6 * SEC).await;
    drop(trial);
    assert_eq!(breaker.state(), BreakerState::Open);
}

// Cancelled calls: permits dropped without an outcome.

#[tokio::test(start_paused = true)]
async fn permits_dropped_without_an_outcome_count_nothing() {
    let breaker = CircuitBreaker::new(&three_samples());
    for _ in 0..10 {
        drop(breaker.try_acquire().unwrap());
    }
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (0, 0, 0));

    fail(&breaker, 2);
    assert_eq!(breaker.state(), BreakerState::Closed);
    fail(&breaker, 1);
    assert_eq!(breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_half_open_permit_dropped_without_an_outcome_frees_its_slot() {
    let breaker = half_open(&three_samples()).await;
    let mut trials = acquire(&breaker, 3);
    assert!(breaker.try_acquire().is_err());
    drop(trials.pop());
    trials.push(
        breaker
            .try_acquire()
            .expect("the dropped trial's slot is free"),
    );
    assert!(breaker.try_acquire().is_err());

    // The dropped trial was no success either: all three admitted now must
    // succeed to close the breaker.
    trials.pop().unwrap().success();
    trials.pop().unwrap().success();
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    trials.pop().unwrap().success();
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_permit_dropped_by_a_panic_frees_its_half_open_slot() {
    let config = BreakerConfig {
        half_open_trials: 1,
        ..three_samples()
    };
    let breaker = half_open(&config).await;
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        let _trial = breaker.try_acquire().unwrap();
        panic!("the caller crashed mid-call");
    }));
    assert!(caught.is_err());
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    breaker.try_acquire().unwrap().success();
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn cancelled_calls_shorter_than_the_slow_threshold_never_open_the_breaker() {
    let breaker = CircuitBreaker::new(&BreakerConfig {
        slow_call_duration_threshold_secs: 5,
        ..three_samples()
    });
    for _ in 0..20 {
        let permit = breaker.try_acquire().unwrap();
        advance(SEC).await;
        drop(permit);
    }
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn cancelled_calls_past_the_slow_threshold_count_as_slow_and_open_the_breaker() {
    let breaker = CircuitBreaker::new(&BreakerConfig {
        slow_call_duration_threshold_secs: 5,
        ..three_samples()
    });
    let mut permits = acquire(&breaker, 3);
    advance(10 * SEC).await;
    drop(permits.pop());
    drop(permits.pop());
    assert_eq!(counts(&breaker), (2, 0, 2));
    assert_eq!(breaker.state(), BreakerState::Closed);
    drop(permits.pop());
    assert_eq!(breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn cancelled_slow_calls_are_not_failures_by_default() {
    let breaker = CircuitBreaker::new(&BreakerConfig {
        minimum_sample_count: 4,
        slow_call_duration_threshold_secs: 5,
        ..BreakerConfig::default()
    });
    succeed(&breaker, 2);
    let permits = acquire(&breaker, 2);
    advance(6 * SEC).await;
    drop(permits);
    assert_eq!(counts(&breaker), (4, 0, 2));
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn with_cancelled_call_outcome_failure_cancelled_slow_calls_count_as_failures() {
    let breaker = CircuitBreaker::new(&BreakerConfig {
        minimum_sample_count: 4,
        slow_call_duration_threshold_secs: 5,
        cancelled_call_outcome: CancelledCallOutcome::Failure,
        ..BreakerConfig::default()
    });
    succeed(&breaker, 2);
    let mut permits = acquire(&breaker, 2);
    advance(6 * SEC).await;
    drop(permits.pop());
    assert_eq!(counts(&breaker), (3, 1, 0));
    drop(permits.pop());
    assert_eq!(breaker.state(), BreakerState::Open);

    // A cancelled call within the threshold still counts nothing.
    let breaker = CircuitBreaker::new(&BreakerConfig {
        minimum_sample_count: 1,
        slow_call_duration_threshold_secs: 5,
        cancelled_call_outcome: CancelledCallOutcome::Failure,
        ..BreakerConfig::default()
    });
    let permit = breaker.try_acquire().unwrap();
    advance(SEC).await;
    drop(permit);
    assert_eq!(breaker.state(), BreakerState::Closed);
}

// Slow calls that report an outcome.

#[tokio::test(start_paused = true)]
async fn a_slow_success_counts_as_slow_but_not_as_a_failure() {
    let config = BreakerConfig {
        minimum_sample_count: 4,
        slow_call_duration_threshold_secs: 5,
        ..BreakerConfig::default()
    };
    let breaker = CircuitBreaker::new(&config);
    let slow = acquire(&breaker, 2);
    advance(6 * SEC).await;
    slow.into_iter().for_each(Permit::success);
    succeed(&breaker, 2);
    assert_eq!(counts(&breaker), (4, 0, 2));
    assert_eq!(breaker.state(), BreakerState::Closed);

    // Every call slow: the slow-call rate reaches 1.0.
    let breaker = CircuitBreaker::new(&config);
    let slow = acquire(&breaker, 4);
    advance(6 * SEC).await;
    slow.into_iter().for_each(Permit::success);
    assert_eq!(breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_slow_failure_counts_as_a_failure_and_as_slow() {
    let breaker = CircuitBreaker::new(&BreakerConfig {
        slow_call_duration_threshold_secs: 5,
        ..BreakerConfig::default()
    });
    let permit = breaker.try_acquire().unwrap();
    advance(6 * SEC).await;
    permit.failure();
    assert_eq!(counts(&breaker), (1, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_call_of_exactly_the_slow_threshold_is_not_slow() {
    let breaker = CircuitBreaker::new(&BreakerConfig {
        slow_call_duration_threshold_secs: 5,
        ..BreakerConfig::default()
    });
    let permit = breaker.try_acquire().unwrap();
    advance(5 * SEC).await;
    permit.success();
    assert_eq!(counts(&breaker), (1, 0, 0));

    let permit = breaker.try_acquire().unwrap();
    advance(5 * SEC + MS).await;
    permit.success();
    assert_eq!(counts(&breaker), (2, 0, 1));
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_threshold_of_zero_means_no_call_is_slow() {
    let breaker = CircuitBreaker::new(&BreakerConfig {
        slow_call_duration_threshold_secs: 0,
        ..three_samples()
    });
    let permits = acquire(&breaker, 4);
    advance(Duration::from_secs(3600)).await;
    let mut permits = permits.into_iter();
    permits.next().unwrap().success();
    drop(permits);
    assert_eq!(counts(&breaker), (1, 0, 0));
    assert_eq!(breaker.state(), BreakerState::Closed);
}

// Sharing.

#[tokio::test(start_paused = true)]
async fn clones_share_one_breaker() {
    let breaker = CircuitBreaker::new(&three_samples());
    let clone = breaker.clone();
    fail(&clone, 3);
    assert_eq!(breaker.state(), BreakerState::Open);
    assert!(breaker.try_acquire().is_err());
}

#[tokio::test(start_paused = true)]
async fn an_outcome_from_before_the_breaker_opened_does_not_count_after_it() {
    let config = BreakerConfig {
        half_open_trials: 1,
        ..three_samples()
    };
    let breaker = CircuitBreaker::new(&config);
    let early = breaker.try_acquire().unwrap();
    fail(&breaker, 3);
    advance(OPEN).await;
    let trial = breaker.try_acquire().unwrap();
    early.failure();
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    trial.success();
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (0, 0, 0));
}

#[test]
fn the_breaker_its_permits_and_its_error_cross_threads() {
    fn send_sync<T: Send + Sync + 'static>() {}
    fn error<E: Error + Send + Sync + 'static>() {}
    send_sync::<CircuitBreaker>();
    send_sync::<Permit>();
    error::<Open>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_recorded_from_two_threads_concurrently_are_all_counted() {
    const CALLS: u64 = 20_000;
    let breaker = CircuitBreaker::new(&BreakerConfig {
        // Never opens, and nothing ages out while the threads run.
        minimum_sample_count: u32::MAX,
        window_secs: 3600,
        ..BreakerConfig::default()
    });
    let runtime = tokio::runtime::Handle::current();
    let start = Barrier::new(2);
    thread::scope(|scope| {
        for _ in 0..2 {
            let breaker = breaker.clone();
            let (runtime, start) = (&runtime, &start);
            scope.spawn(move || {
                let _clock = runtime.enter();
                start.wait();
                for call in 0..CALLS {
                    let permit = breaker.try_acquire().unwrap();
                    if call % 2 == 0 {
                        permit.failure();
                    } else {
                        permit.success();
                    }
                }
            });
        }
    });
    assert_eq!(counts(&breaker), (2 * CALLS, CALLS, 0));
}

// No stuck half-open state, whatever happens.

#[derive(Debug, Clone)]
enum Op {
    Acquire,
    Success(Index),
    Failure(Index),
    Drop(Index),
    Advance(Duration),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Acquire),
        2 => any::<Index>().prop_map(Op::Success),
        2 => any::<Index>().prop_map(Op::Failure),
        2 => any::<Index>().prop_map(Op::Drop),
        2 => (0..15_000_u64).prop_map(|ms| Op::Advance(Duration::from_millis(ms))),
    ]
}

fn small_config() -> impl Strategy<Value = BreakerConfig> {
    (
        (1..=5_u64, prop::sample::select(vec![1, 2, 4, 5, 10])),
        prop::sample::select(vec![0.1, 0.5, 1.0]),
        prop::sample::select(vec![0.5, 1.0]),
        (1..=5_u32, 1..=10_u64, 1..=4_u32),
        (0..=3_u64, any::<bool>()),
    )
        .prop_map(
            |(
                (window_secs, window_buckets),
                failure_ratio_threshold,
                slow_call_rate_threshold,
                (minimum_sample_count, open_secs, half_open_trials),
                (slow_call_duration_threshold_secs, cancelled_as_failure),
            )| BreakerConfig {
                enabled: true,
                window_secs,
                window_buckets,
                failure_ratio_threshold,
                slow_call_rate_threshold,
                minimum_sample_count,
                open_secs,
                half_open_trials,
                slow_call_duration_threshold_secs,
                cancelled_call_outcome: if cancelled_as_failure {
                    CancelledCallOutcome::Failure
                } else {
                    CancelledCallOutcome::Slow
                },
            },
        )
}

/// A permit the property test holds, with what the test knows about it.
#[derive(Debug)]
struct Held {
    permit: Permit,
    /// The half-open round it is a trial of; `None` when admitted closed.
    round: Option<u64>,
    started: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settle {
    Success,
    Failure,
    Drop,
}

/// What the test expects of half-open rounds: the trials admitted so far and
/// how they end. Each time the breaker is seen entering half-open, a new
/// round begins; no round can begin and end unseen, because the state is
/// checked after every step and an open period lasts at least a second.
#[derive(Debug)]
struct Rounds {
    config: BreakerConfig,
    last: BreakerState,
    round: u64,
    succeeded: u32,
}

impl Rounds {
    fn observe(&mut self, state: BreakerState) {
        if state == BreakerState::HalfOpen && self.last != BreakerState::HalfOpen {
            self.round += 1;
            self.succeeded = 0;
        }
        self.last = state;
    }

    fn is_trial(&self, held: &Held) -> bool {
        self.last == BreakerState::HalfOpen && held.round == Some(self.round)
    }

    fn trials_in_flight(&self, held: &[Held]) -> u32 {
        let in_flight = held.iter().filter(|held| self.is_trial(held)).count();
        u32::try_from(in_flight).unwrap()
    }

    /// The state expected after `held` settles as `how`, when known.
    fn after_settling(&mut self, held: &Held, how: Settle) -> Option<BreakerState> {
        if self.last != BreakerState::HalfOpen {
            return None;
        }
        if !self.is_trial(held) {
            // A call from another round is ignored.
            return Some(BreakerState::HalfOpen);
        }
        let slow = self
            .config
            .slow_call_duration_threshold()
            .is_some_and(|threshold| Instant::now() - held.started > threshold);
        Some(match (how, slow) {
            (Settle::Failure, _) | (_, true) => BreakerState::Open,
            (Settle::Drop, false) => BreakerState::HalfOpen,
            (Settle::Success, false) => {
                self.succeeded += 1;
                if self.succeeded == self.config.half_open_trials {
                    BreakerState::Closed
                } else {
                    BreakerState::HalfOpen
                }
            }
        })
    }
}

fn settle(permit: Permit, how: Settle) {
    match how {
        Settle::Success => permit.success(),
        Settle::Failure => permit.failure(),
        Settle::Drop => drop(permit),
    }
}

/// Runs `ops` checking every half-open decision against [`Rounds`], then
/// settles every permit still held, waits one open period, and checks the
/// breaker admits a call and closes after enough good trials.
async fn never_stuck(
    config: BreakerConfig,
    ops: Vec<Op>,
    finally: Vec<u8>,
) -> Result<(), TestCaseError> {
    let breaker = CircuitBreaker::new(&config);
    let mut rounds = Rounds {
        config: config.clone(),
        last: BreakerState::Closed,
        round: 0,
        succeeded: 0,
    };
    let mut held: Vec<Held> = Vec::new();
    for op in ops {
        let (index, how) = match op {
            Op::Acquire => {
                rounds.observe(breaker.state());
                let admitted = breaker.try_acquire();
                match rounds.last {
                    BreakerState::Closed => prop_assert!(admitted.is_ok()),
                    BreakerState::Open => {
                        prop_assert!(admitted.as_ref().unwrap_err().retry_in().is_some());
                    }
                    BreakerState::HalfOpen => {
                        let free = rounds.trials_in_flight(&held) + rounds.succeeded
                            < config.half_open_trials;
                        prop_assert_eq!(admitted.is_ok(), free, "half-open admission");
                    }
                }
                if let Ok(permit) = admitted {
                    held.push(Held {
                        permit,
                        round: (rounds.last == BreakerState::HalfOpen).then_some(rounds.round),
                        started: Instant::now(),
                    });
                }
                continue;
            }
            Op::Advance(by) => {
                advance(by).await;
                rounds.observe(breaker.state());
                continue;
            }
            _ if held.is_empty() => continue,
            Op::Success(index) => (index, Settle::Success),
            Op::Failure(index) => (index, Settle::Failure),
            Op::Drop(index) => (index, Settle::Drop),
        };
        let one = held.swap_remove(index.index(held.len()));
        let expected = rounds.after_settling(&one, how);
        settle(one.permit, how);
        let state = breaker.state();
        if let Some(expected) = expected {
            prop_assert_eq!(state, expected, "after a {:?}", how);
        }
        rounds.observe(state);
    }

    let finally = finally.iter().cycle().map(|how| match how % 3 {
        0 => Settle::Success,
        1 => Settle::Failure,
        _ => Settle::Drop,
    });
    for (one, how) in held.into_iter().zip(finally) {
        settle(one.permit, how);
    }
    advance(Duration::from_secs(config.open_secs)).await;
    prop_assert_ne!(breaker.state(), BreakerState::Open);
    prop_assert!(breaker.try_acquire().is_ok());
    for _ in 0..config.half_open_trials {
        if breaker.state() == BreakerState::Closed {
            break;
        }
        let trial = breaker.try_acquire();
        prop_assert!(trial.is_ok(), "a half-open slot leaked");
        trial.unwrap().success();
    }
    prop_assert_eq!(breaker.state(), BreakerState::Closed);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn once_every_permit_settles_and_an_open_period_passes_the_breaker_admits_calls_again(
        config in small_config(),
        ops in prop::collection::vec(op(), 0..80),
        finally in prop::collection::vec(any::<u8>(), 1..8),
    ) {
        let runtime = support::paused_runtime();
        runtime.block_on(never_stuck(config, ops, finally))?;
    }
}
