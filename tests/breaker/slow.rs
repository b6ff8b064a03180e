//! Slow calls that report an outcome.

use super::*;

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
