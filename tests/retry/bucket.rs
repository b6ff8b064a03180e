//! B1, B2: the bucket of one host.

use super::*;

#[test]
fn a_full_bucket_pays_for_35_transient_retries_then_refuses() {
    let budget = budget();
    assert_eq!(budget.tokens(), 500.0);
    assert_eq!(drain(&budget, TRANSIENT), 35);
    assert_eq!(budget.tokens(), 10.0);
    assert!(!budget.try_withdraw(TRANSIENT));
    assert_eq!(budget.tokens(), 10.0, "a refused withdrawal takes nothing");
}

#[test]
fn a_full_bucket_pays_for_100_throttling_retries_then_refuses() {
    let budget = budget();
    assert_eq!(drain(&budget, THROTTLING), 100);
    assert_eq!(budget.tokens(), 0.0);
    assert!(!budget.try_withdraw(THROTTLING));
}

#[test]
fn a_drained_bucket_lets_about_one_in_ten_first_attempts_retry() {
    let budget = budget();
    drain(&budget, TRANSIENT);
    let retries = (0..1000)
        .filter(|_| {
            budget.on_first_attempt();
            budget.try_withdraw(TRANSIENT)
        })
        .count();
    assert!((95..=105).contains(&retries), "{retries} retries");
}

#[test]
fn ten_thousand_first_attempts_never_fill_a_bucket_past_its_capacity() {
    let budget = budget();
    for _ in 0..10_000 {
        budget.on_first_attempt();
    }
    assert_eq!(budget.tokens(), 500.0);
    assert_eq!(budget.capacity(), 500.0);
}

#[test]
fn a_refunded_retry_gives_its_tokens_back() {
    let budget = budget();
    assert!(budget.try_withdraw(TRANSIENT));
    assert_eq!(budget.tokens(), 486.0);
    budget.refund(TRANSIENT);
    assert_eq!(budget.tokens(), 500.0);
    budget.refund(TRANSIENT);
    assert_eq!(
        budget.tokens(),
        500.0,
        "a refund never overfills the bucket"
    );
}

#[test]
fn first_attempts_earn_exact_tenths_of_a_token() {
    // 1.4 tokens per first attempt: ten of them pay exactly one 14-token
    // retry, with no rounding drift either way.
    let budget = RetryBudget::new(&BudgetConfig {
        capacity: 14,
        ..BudgetConfig::default()
    });
    assert!(budget.try_withdraw(TRANSIENT));
    budget.on_first_attempt();
    assert_eq!(budget.tokens(), 1.4);
    for _ in 0..8 {
        budget.on_first_attempt();
    }
    assert!(!budget.try_withdraw(TRANSIENT), "12.6 tokens cannot pay 14");
    budget.on_first_attempt();
    assert_eq!(budget.tokens(), 14.0);
    assert!(budget.try_withdraw(TRANSIENT));
    assert_eq!(budget.tokens(), 0.0);
}

#[test]
fn a_retry_ratio_of_zero_earns_nothing() {
    let budget = RetryBudget::new(&BudgetConfig {
        retry_ratio: 0.0,
        ..BudgetConfig::default()
    });
    drain(&budget, TRANSIENT);
    for _ in 0..1000 {
        budget.on_first_attempt();
    }
    assert_eq!(budget.tokens(), 10.0);
}

#[test]
fn clones_share_one_bucket() {
    let budget = budget();
    let clone = budget.clone();
    assert!(clone.try_withdraw(THROTTLING));
    assert_eq!(budget.tokens(), 495.0);
    budget.refund(THROTTLING);
    assert_eq!(clone.tokens(), 500.0);
    assert_eq!(drain(&clone, TRANSIENT), 35);
    assert!(!budget.try_withdraw(TRANSIENT));
}

#[test]
fn separately_built_buckets_do_not_share_tokens() {
    let a = budget();
    let b = budget();
    drain(&a, TRANSIENT);
    assert_eq!(b.tokens(), 500.0);
}

#[test]
fn concurrent_withdrawals_from_two_threads_never_overdraw_the_bucket() {
    for _ in 0..20 {
        let budget = budget();
        let start = Barrier::new(2);
        let paid: usize = thread::scope(|s| {
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        (0..100).filter(|_| budget.try_withdraw(TRANSIENT)).count()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).sum()
        });
        assert!(paid * 14 <= 500, "{paid} retries paid from 500 tokens");
        assert_eq!(paid, 35, "every retry the bucket could pay was paid");
        assert_eq!(budget.tokens(), 10.0);
    }
}

#[test]
fn concurrent_deposits_and_refunds_never_overfill_the_bucket() {
    let budget = budget();
    drain(&budget, THROTTLING);
    thread::scope(|s| {
        s.spawn(|| (0..10_000).for_each(|_| budget.on_first_attempt()));
        s.spawn(|| (0..10_000).for_each(|_| budget.refund(TRANSIENT)));
        s.spawn(|| {
            for _ in 0..10_000 {
                let tokens = budget.tokens();
                assert!((0.0..=500.0).contains(&tokens), "{tokens} tokens");
            }
        });
    });
    assert_eq!(budget.tokens(), 500.0);
}
