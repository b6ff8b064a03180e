//! Cancelled calls: permits dropped without an outcome.

use super::*;

#[tokio::test(start_paused = true)]
async fn permits_dropped_without_an_outcome_count_nothing() {
    let breaker = CircuitBreaker::new(&three_samples());
    for _ in 0..10 {
        drop(breaker.try_acquire().unwrap());
    }
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(counts(&breaker), (0, 0, 0));

    opens_on_the_third_failure(&breaker);
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
    three_trials_succeed(&breaker, trials);
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
        // The one trial slot is taken while the caller runs.
        assert!(breaker.try_acquire().is_err());
        panic!("the caller crashed mid-call");
    }));
    let payload = caught.expect_err("the caller panicked");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"the caller crashed mid-call")
    );
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
