//! Sharing.

use super::*;

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
