//! Closed: the window and the thresholds.

use super::*;

#[tokio::test(start_paused = true)]
async fn three_failures_open_the_breaker_and_the_fourth_call_is_refused() {
    let breaker = CircuitBreaker::new(&three_samples());
    opens_on_the_third_failure(&breaker);
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

#[tokio::test(start_paused = true)]
async fn values_validate_refuses_neither_exhaust_memory_nor_open_on_successes() {
    for threshold in [0.0, -1.0, f64::NAN] {
        // A billion buckets would take gigabytes for each host.
        let config = BreakerConfig {
            window_buckets: u32::MAX,
            failure_ratio_threshold: threshold,
            slow_call_rate_threshold: threshold,
            ..three_samples()
        };
        let breaker = CircuitBreaker::new(&config);
        succeed(&breaker, 10);
        assert_eq!(breaker.state(), BreakerState::Closed, "{threshold}");
        // A window of failures alone still opens it.
        let breaker = CircuitBreaker::new(&config);
        opens_on_the_third_failure(&breaker);
    }
}
