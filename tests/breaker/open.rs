//! Open and half-open.

use super::*;

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
    three_trials_succeed(&breaker, acquire(&breaker, 3));
    assert_eq!(counts(&breaker), (0, 0, 0));

    opens_on_the_third_failure(&breaker);
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
