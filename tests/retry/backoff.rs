//! C5: backoff.

use super::*;

#[test]
fn every_backoff_delay_stays_under_the_doubling_ceiling() {
    let backoff = Backoff::default();
    let entropy = Entropy::seeded(11);
    for n in 0..40 {
        let ceiling = Duration::from_millis(100)
            .checked_mul(1 << n.min(31))
            .map_or(Duration::from_secs(20), |c| c.min(Duration::from_secs(20)));
        assert_eq!(backoff.ceiling(n), ceiling, "ceiling before retry {n}");
        for _ in 0..50 {
            let delay = backoff.delay(n, &entropy);
            assert!(delay <= ceiling, "retry {n} waited {delay:?}");
        }
    }
}

#[test]
fn backoff_doubles_from_100_ms_up_to_max_backoff() {
    let backoff = Backoff::from_config(&ClientConfig {
        max_backoff_ms: 1_000,
        ..ClientConfig::default()
    });
    let ceilings: Vec<u64> = (0..6)
        .map(|n| u64::try_from(backoff.ceiling(n).as_millis()).unwrap())
        .collect();
    assert_eq!(ceilings, [100, 200, 400, 800, 1000, 1000]);
    assert_eq!(backoff.base(), Duration::from_millis(100));
    assert_eq!(backoff.max(), Duration::from_secs(1));
    assert_eq!(Backoff::default().max(), Duration::from_secs(20));
}

#[test]
fn a_huge_retry_number_saturates_at_the_maximum_delay() {
    let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(20));
    let entropy = Entropy::seeded(5);
    for n in [31, 32, 33, 64, 1000, u32::MAX] {
        assert_eq!(backoff.ceiling(n), Duration::from_secs(20));
        assert!(backoff.delay(n, &entropy) <= Duration::from_secs(20));
    }
    let huge = Backoff::new(Duration::MAX, Duration::MAX);
    assert_eq!(huge.ceiling(3), Duration::MAX);
}

#[test]
fn full_jitter_spreads_delays_over_the_whole_window() {
    let backoff = Backoff::default();
    let entropy = Entropy::seeded(3);
    let delays: Vec<Duration> = (0..1000).map(|_| backoff.delay(0, &entropy)).collect();
    assert!(delays.iter().any(|&d| d < Duration::from_millis(5)));
    assert!(delays.iter().any(|&d| d > Duration::from_millis(95)));
}

#[test]
fn the_same_seed_gives_the_same_backoff_delays() {
    let backoff = Backoff::default();
    let delays = |seed| {
        let entropy = Entropy::seeded(seed);
        (0..20)
            .map(|n| backoff.delay(n, &entropy))
            .collect::<Vec<_>>()
    };
    assert_eq!(delays(42), delays(42));
    assert_ne!(delays(42), delays(43));
}
