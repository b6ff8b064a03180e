//! B3, exactly: once the bucket is drained, every first attempt pays in
//! `d = retry_ratio × transient_cost` (rounded to a thousandth of a token) and
//! every retry of `kind` takes out `c = cost(kind)`. Nothing else moves the
//! bucket, so retries R after N first attempts satisfy R·c + left = start +
//! paid in, with `left < c`: R = ⌊(start + N·d) / c⌋ while no deposit
//! overflows the capacity, and |R − N·d/c| < 1, i.e. R/N is within 1/N of
//! `retry_ratio × transient_cost / cost(kind)`. A deposit can overflow only
//! when the capacity holds less than one retry plus one deposit; then each
//! deposit still pays at least `capacity − (c − 1)` thousandths, which bounds R
//! from below. A cost above the capacity can never be paid.

use super::strategies::{config, kind};
use super::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn a_drained_bucket_retries_first_attempts_at_retry_ratio_times_transient_cost_over_cost(
        config in config(),
        kind in kind(),
        calls in 1u64..=500,
    ) {
        let budget = RetryBudget::new(&config);
        let milli = |tokens: f64| (tokens * 1000.0).round() as u64;
        let capacity = config.capacity * 1000;
        let deposit = (config.retry_ratio * config.transient_cost as f64 * 1000.0).round() as u64;
        let cost = match kind {
            RetryKind::Transient => config.transient_cost * 1000,
            RetryKind::Throttling => config.throttling_cost * 1000,
        };

        drain(&budget, kind);
        let start = milli(budget.tokens());
        prop_assert_eq!(start, if cost <= capacity { capacity % cost } else { capacity });

        let mut retries = 0u64;
        for _ in 0..calls {
            budget.on_first_attempt();
            while budget.try_withdraw(kind) {
                retries += 1;
            }
            prop_assert!(milli(budget.tokens()) < cost, "the bucket is drained after every call");
        }

        if cost > capacity {
            prop_assert_eq!(retries, 0, "a retry dearer than the capacity is never paid");
            return Ok(());
        }
        let least_deposit = deposit.min(capacity - (cost - 1));
        let most = (start + calls * deposit) / cost;
        let least = (start + calls * least_deposit) / cost;
        prop_assert!(
            (least..=most).contains(&retries),
            "{} retries after {} first attempts; expected {}..={}", retries, calls, least, most
        );
        if capacity >= cost - 1 + deposit {
            prop_assert_eq!(retries, most);
            // The same, as the ratio B3 speaks of: within 1/N of d/c.
            let expected = calls as f64 * deposit as f64 / cost as f64;
            prop_assert!((retries as f64 - expected).abs() < 1.0, "{} vs {}", retries, expected);
        }
    }
}
