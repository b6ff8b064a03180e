//! Integration tests of `timebox::retry`: the retry budget (DESIGN.md §5
//! B1–B4), backoff and `Retry-After` (C5), and what is retryable (C4).
//! The budget has no clock and backoff draws from a seeded `Entropy`; the
//! one client-level property runs its calls on a paused clock.

mod support;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use axum::body::Bytes;
use futures_util::stream;
use http::header::{DATE, RETRY_AFTER};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use proptest::prelude::*;
use timebox::client::{Client, ResponseBody, Transport, TransportError, TransportFuture};
use timebox::config::{BudgetConfig, ClientConfig, Config};
use timebox::entropy::Entropy;
use timebox::retry::{
    classify_status, hint_wait, is_idempotent, retry_after, Backoff, RetryBudget, RetryBudgets,
    RetryKind,
};

const TRANSIENT: RetryKind = RetryKind::Transient;
const THROTTLING: RetryKind = RetryKind::Throttling;

fn budget() -> RetryBudget {
    RetryBudget::new(&BudgetConfig::default())
}

/// Withdraws `kind` until the bucket refuses; returns how many were paid.
fn drain(budget: &RetryBudget, kind: RetryKind) -> usize {
    std::iter::from_fn(|| budget.try_withdraw(kind).then_some(()))
        .take(10_000)
        .count()
}

fn uri(s: &'static str) -> Uri {
    Uri::from_static(s)
}

// B1, B2: the bucket of one host.

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

// B3: the steady state on a host that always fails.

#[test]
fn a_drained_bucket_on_a_failing_host_retries_about_a_tenth_of_calls() {
    let budget = budget();
    drain(&budget, TRANSIENT);
    let calls = 10_000;
    let max_retries = 3;
    let mut retries = 0;
    for _ in 0..calls {
        budget.on_first_attempt();
        // Every attempt fails, so the call retries until the budget (or
        // `max_retries`) says no.
        for _ in 0..max_retries {
            if !budget.try_withdraw(TRANSIENT) {
                break;
            }
            retries += 1;
        }
    }
    let ratio = f64::from(retries) / f64::from(calls);
    assert!((0.08..=0.12).contains(&ratio), "retry ratio {ratio}");
}

// B1, B4: one bucket per host.

#[test]
fn hosts_differing_only_in_case_share_a_bucket_and_other_hosts_do_not() {
    let budgets = RetryBudgets::new(&BudgetConfig::default());
    let upper = budgets.for_uri(&uri("http://A.example/x")).unwrap();
    let lower = budgets.for_uri(&uri("http://a.example/y")).unwrap();
    let other = budgets.for_uri(&uri("http://b.example/x")).unwrap();
    assert!(upper.try_withdraw(TRANSIENT));
    assert_eq!(lower.tokens(), 486.0);
    assert_eq!(other.tokens(), 500.0);
    assert_eq!(budgets.len(), 2);
}

#[test]
fn an_explicit_default_port_shares_the_bucket_of_the_bare_host() {
    let budgets = RetryBudgets::new(&BudgetConfig::default());
    let bare = budgets.for_uri(&uri("http://a.example")).unwrap();
    let explicit = budgets.for_uri(&uri("http://a.example:80/")).unwrap();
    assert!(explicit.try_withdraw(THROTTLING));
    assert_eq!(bare.tokens(), 495.0);
    let tls_bare = budgets.for_uri(&uri("https://a.example/")).unwrap();
    let tls_explicit = budgets.for_uri(&uri("https://a.example:443/")).unwrap();
    assert!(tls_explicit.try_withdraw(THROTTLING));
    assert_eq!(tls_bare.tokens(), 495.0);
    assert_eq!(budgets.len(), 2);
}

#[test]
fn https_and_http_of_one_host_have_different_buckets() {
    let budgets = RetryBudgets::new(&BudgetConfig::default());
    let plain = budgets.for_uri(&uri("http://a.example")).unwrap();
    let tls = budgets.for_uri(&uri("https://a.example")).unwrap();
    assert!(tls.try_withdraw(TRANSIENT));
    assert_eq!(plain.tokens(), 500.0);
    let other_port = budgets.for_uri(&uri("http://a.example:8080")).unwrap();
    assert_eq!(other_port.tokens(), 500.0);
    assert_eq!(budgets.len(), 3);
}

#[test]
fn a_uri_without_a_host_has_no_budget() {
    let budgets = RetryBudgets::new(&BudgetConfig::default());
    assert!(budgets.for_uri(&uri("/just/a/path")).is_none());
    assert!(budgets.is_empty());
    assert_eq!(budgets.unbudgeted_hosts(), 0);
}

#[test]
fn a_host_past_max_hosts_has_no_budget_and_known_hosts_keep_theirs() {
    let budgets = RetryBudgets::new(&BudgetConfig::default());
    let first = budgets.for_uri(&uri("http://host-0.example")).unwrap();
    assert!(first.try_withdraw(TRANSIENT));
    for i in 1..1024 {
        let uri: Uri = format!("http://host-{i}.example/").parse().unwrap();
        assert!(
            budgets.for_uri(&uri).is_some(),
            "host {i} is within max_hosts"
        );
    }
    assert_eq!(budgets.len(), 1024);
    assert_eq!(budgets.unbudgeted_hosts(), 0);

    assert!(budgets.for_uri(&uri("http://new.example")).is_none());
    assert!(budgets.for_uri(&uri("http://new.example")).is_none());
    assert!(budgets.for_uri(&uri("http://newer.example")).is_none());
    assert_eq!(budgets.len(), 1024);
    assert_eq!(budgets.unbudgeted_hosts(), 3, "every refused lookup counts");

    let again = budgets.for_uri(&uri("http://HOST-0.example:80/")).unwrap();
    assert_eq!(again.tokens(), 486.0, "a known host keeps its own bucket");
    assert!(budgets.for_uri(&uri("http://host-1023.example")).is_some());
}

#[test]
fn a_disabled_budget_gives_no_host_a_bucket() {
    let budgets = RetryBudgets::new(&BudgetConfig {
        enabled: false,
        ..BudgetConfig::default()
    });
    assert!(budgets.for_uri(&uri("http://a.example")).is_none());
    assert_eq!(budgets.len(), 0);
    assert_eq!(budgets.unbudgeted_hosts(), 0);
}

#[test]
fn clones_of_a_budget_table_share_its_buckets() {
    let budgets = RetryBudgets::new(&BudgetConfig::default());
    let clone = budgets.clone();
    let a = budgets.for_uri(&uri("http://a.example")).unwrap();
    assert!(a.try_withdraw(TRANSIENT));
    assert_eq!(clone.len(), 1);
    assert_eq!(
        clone.for_uri(&uri("http://a.example")).unwrap().tokens(),
        486.0
    );
}

#[test]
fn a_table_built_from_a_config_prices_its_buckets_by_that_config() {
    let budgets = RetryBudgets::new(&BudgetConfig {
        capacity: 10,
        throttling_cost: 4,
        ..BudgetConfig::default()
    });
    let budget = budgets.for_uri(&uri("http://a.example")).unwrap();
    assert_eq!(budget.tokens(), 10.0);
    assert_eq!(drain(&budget, THROTTLING), 2);
}

// C5: backoff.

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

// C5: Retry-After.

fn headers(pairs: &[(http::HeaderName, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(name, HeaderValue::from_static(value));
    }
    map
}

fn hint(value: &'static str) -> Option<Duration> {
    retry_after(&headers(&[(RETRY_AFTER, value)]))
}

#[test]
fn a_retry_after_of_seconds_is_that_many_seconds() {
    assert_eq!(hint("120"), Some(Duration::from_secs(120)));
    assert_eq!(hint("0"), Some(Duration::ZERO));
    assert_eq!(retry_after(&HeaderMap::new()), None);
}

#[test]
fn surrounding_whitespace_around_retry_after_seconds_is_trimmed() {
    assert_eq!(hint(" 5 "), Some(Duration::from_secs(5)));
    assert_eq!(hint("\t7"), Some(Duration::from_secs(7)));
    assert_eq!(hint("   "), None);
}

#[test]
fn a_retry_after_that_is_not_whole_seconds_or_a_date_is_no_hint() {
    for value in ["-1", "soon", "1.5", "+5", "5s", "1e3", "", "1 2", "0x10"] {
        assert_eq!(hint(value), None, "{value:?}");
    }
    let mut map = HeaderMap::new();
    map.insert(RETRY_AFTER, HeaderValue::from_bytes(b"\xff5").unwrap());
    assert_eq!(retry_after(&map), None);
}

#[test]
fn a_retry_after_too_large_for_a_u64_saturates() {
    assert_eq!(
        hint("99999999999999999999999"),
        Some(Duration::from_secs(u64::MAX))
    );
}

#[test]
fn a_repeated_retry_after_is_no_hint() {
    let map = headers(&[(RETRY_AFTER, "1"), (RETRY_AFTER, "2")]);
    assert_eq!(retry_after(&map), None);
}

#[test]
fn an_http_date_is_measured_from_the_responses_date_header() {
    let map = headers(&[
        (DATE, "Wed, 21 Oct 2015 07:28:00 GMT"),
        (RETRY_AFTER, "Wed, 21 Oct 2015 07:28:30 GMT"),
    ]);
    assert_eq!(retry_after(&map), Some(Duration::from_secs(30)));
}

#[test]
fn the_obsolete_http_date_forms_are_read_too() {
    for date in ["Sunday, 06-Nov-94 08:50:37 GMT", "Sun Nov  6 08:50:37 1994"] {
        let map = headers(&[(DATE, "Sun, 06 Nov 1994 08:49:37 GMT"), (RETRY_AFTER, date)]);
        assert_eq!(retry_after(&map), Some(Duration::from_secs(60)), "{date}");
    }
}

#[test]
fn an_http_date_before_the_date_header_is_a_wait_of_zero() {
    let map = headers(&[
        (DATE, "Wed, 21 Oct 2015 07:28:00 GMT"),
        (RETRY_AFTER, "Wed, 21 Oct 2015 07:27:00 GMT"),
    ]);
    assert_eq!(retry_after(&map), Some(Duration::ZERO));
}

#[test]
fn an_http_date_without_a_usable_date_header_is_no_hint() {
    let date = "Wed, 21 Oct 2015 07:28:30 GMT";
    assert_eq!(hint(date), None);
    let bad_date = headers(&[(DATE, "yesterday"), (RETRY_AFTER, date)]);
    assert_eq!(retry_after(&bad_date), None);
    let two_dates = headers(&[
        (DATE, "Wed, 21 Oct 2015 07:28:00 GMT"),
        (DATE, "Wed, 21 Oct 2015 07:28:10 GMT"),
        (RETRY_AFTER, date),
    ]);
    assert_eq!(retry_after(&two_dates), None);
}

#[test]
fn a_429_without_a_hint_waits_one_second() {
    let cap = Duration::from_secs(10);
    assert_eq!(
        hint_wait(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), cap),
        Some(Duration::from_secs(1))
    );
    let unusable = headers(&[(RETRY_AFTER, "soon")]);
    assert_eq!(
        hint_wait(StatusCode::TOO_MANY_REQUESTS, &unusable, cap),
        Some(Duration::from_secs(1))
    );
}

#[test]
fn a_hint_is_capped_by_max_retry_after_and_then_by_five_seconds() {
    let too_many = StatusCode::TOO_MANY_REQUESTS;
    let ten = Duration::from_secs(10);
    let wait = |value, cap| hint_wait(too_many, &headers(&[(RETRY_AFTER, value)]), cap);
    assert_eq!(wait("10", ten), Some(Duration::from_secs(5)));
    assert_eq!(wait("3", ten), Some(Duration::from_secs(3)));
    assert_eq!(
        wait("30", Duration::from_secs(2)),
        Some(Duration::from_secs(2))
    );
    assert_eq!(wait("0", ten), Some(Duration::ZERO));
}

#[test]
fn a_503_waits_for_its_hint_only_when_it_has_one() {
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    let cap = Duration::from_secs(10);
    assert_eq!(hint_wait(unavailable, &HeaderMap::new(), cap), None);
    let two = headers(&[(RETRY_AFTER, "2")]);
    assert_eq!(
        hint_wait(unavailable, &two, cap),
        Some(Duration::from_secs(2))
    );
}

#[test]
fn other_statuses_ignore_retry_after() {
    let two = headers(&[(RETRY_AFTER, "2")]);
    for status in [
        StatusCode::INTERNAL_SERVER_ERROR,
        StatusCode::OK,
        StatusCode::MOVED_PERMANENTLY,
    ] {
        assert_eq!(
            hint_wait(status, &two, Duration::from_secs(10)),
            None,
            "{status}"
        );
    }
}

// C4: what is retryable.

#[test]
fn only_429_and_500_502_503_504_are_retryable_statuses() {
    for code in 100..=599 {
        let status = StatusCode::from_u16(code).unwrap();
        let expected = match code {
            429 => Some(THROTTLING),
            500 | 502 | 503 | 504 => Some(TRANSIENT),
            _ => None,
        };
        assert_eq!(classify_status(status), expected, "{code}");
    }
}

#[test]
fn only_idempotent_methods_are_retried_by_default() {
    let table = [
        (Method::GET, true),
        (Method::HEAD, true),
        (Method::PUT, true),
        (Method::DELETE, true),
        (Method::OPTIONS, true),
        (Method::TRACE, true),
        (Method::POST, false),
        (Method::PATCH, false),
        (Method::CONNECT, false),
        (Method::from_bytes(b"PURGE").unwrap(), false),
    ];
    for (method, idempotent) in table {
        assert_eq!(is_idempotent(&method), idempotent, "{method}");
    }
}

// Any sequence of operations keeps the bucket within bounds and matches a
// model in exact thousandths.

#[derive(Debug, Clone, Copy)]
enum Op {
    FirstAttempt,
    Withdraw(RetryKind),
    Refund(RetryKind),
}

fn kind() -> impl Strategy<Value = RetryKind> {
    prop_oneof![Just(TRANSIENT), Just(THROTTLING)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::FirstAttempt),
        3 => kind().prop_map(Op::Withdraw),
        1 => kind().prop_map(Op::Refund),
    ]
}

fn config() -> impl Strategy<Value = BudgetConfig> {
    (1u64..=1000, 1u64..=50, 1u64..=50, 0.0f64..=1.0).prop_map(
        |(capacity, transient_cost, throttling_cost, retry_ratio)| BudgetConfig {
            capacity,
            transient_cost,
            throttling_cost,
            retry_ratio,
            ..BudgetConfig::default()
        },
    )
}

proptest! {
    #[test]
    fn any_sequence_of_operations_keeps_tokens_within_capacity(
        config in config(),
        ops in prop::collection::vec(op(), 0..400),
    ) {
        let budget = RetryBudget::new(&config);
        let capacity = config.capacity * 1000;
        let deposit = (config.retry_ratio * config.transient_cost as f64 * 1000.0).round() as u64;
        let cost = |kind| match kind {
            RetryKind::Transient => config.transient_cost * 1000,
            RetryKind::Throttling => config.throttling_cost * 1000,
        };
        let mut model = capacity;
        for op in ops {
            let before = budget.tokens();
            match op {
                Op::FirstAttempt => {
                    budget.on_first_attempt();
                    prop_assert!(budget.tokens() >= before, "a first attempt never takes tokens");
                    model = (model + deposit).min(capacity);
                }
                Op::Withdraw(kind) => {
                    let paid = budget.try_withdraw(kind);
                    prop_assert_eq!(paid, model >= cost(kind));
                    if paid {
                        model -= cost(kind);
                    }
                }
                Op::Refund(kind) => {
                    budget.refund(kind);
                    model = (model + cost(kind)).min(capacity);
                }
            }
            let tokens = budget.tokens();
            prop_assert!((0.0..=budget.capacity()).contains(&tokens), "{} tokens", tokens);
            prop_assert_eq!(tokens, model as f64 / 1000.0);
        }
    }
}

// B3, exactly: once the bucket is drained, every first attempt pays in
// `d = retry_ratio × transient_cost` (rounded to a thousandth of a token) and
// every retry of `kind` takes out `c = cost(kind)`. Nothing else moves the
// bucket, so retries R after N first attempts satisfy R·c + left = start +
// paid in, with `left < c`: R = ⌊(start + N·d) / c⌋ while no deposit
// overflows the capacity, and |R − N·d/c| < 1, i.e. R/N is within 1/N of
// `retry_ratio × transient_cost / cost(kind)`. A deposit can overflow only
// when the capacity holds less than one retry plus one deposit; then each
// deposit still pays at least `capacity − (c − 1)` thousandths, which bounds R
// from below. A cost above the capacity can never be paid.

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

// B2: a first attempt never waits for tokens, seen from the client: whatever
// state the host's bucket is in (full, drained, or anywhere after earlier
// calls), every call's first attempt reaches the upstream. The breaker is kept
// out (its sample count is never reached), so only the budget could hold an
// attempt back.

/// What the upstream does with one attempt.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    Refuse,
}

/// An upstream reached through the client's transport: answers attempts in
/// order from a script (503 once it runs out) and records which call each
/// attempt belonged to, by its `x-call` header.
#[derive(Debug, Default)]
struct Upstream {
    script: Mutex<VecDeque<Answer>>,
    calls_seen: Mutex<Vec<usize>>,
}

impl Transport for Upstream {
    fn send(&self, request: http::Request<Bytes>) -> TransportFuture {
        let call = request.headers()["x-call"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        self.calls_seen.lock().unwrap().push(call);
        let answer = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Answer::Status(503));
        Box::pin(async move {
            match answer {
                Answer::Refuse => Err(TransportError::Connect("connection refused".into())),
                Answer::Status(status) => Ok(http::Response::builder()
                    .status(status)
                    .body(ResponseBody::from_stream(stream::empty::<
                        Result<Bytes, Infallible>,
                    >()))
                    .unwrap()),
            }
        })
    }
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        Just(Answer::Status(200)),
        Just(Answer::Status(404)),
        Just(Answer::Status(429)),
        Just(Answer::Status(500)),
        Just(Answer::Status(503)),
        Just(Answer::Refuse),
    ]
}

/// One call: its method, and whether the host's bucket is drained (by other
/// callers' retries) just before it.
fn call() -> impl Strategy<Value = (Method, bool)> {
    (
        prop_oneof![3 => Just(Method::GET), 1 => Just(Method::POST)],
        prop::bool::weighted(0.3),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_first_attempt_reaches_the_upstream_whatever_the_budget_holds(
        budget in config(),
        max_retries in 0u64..=4,
        script in prop::collection::vec(answer(), 0..120),
        calls in prop::collection::vec(call(), 1..40),
    ) {
        let mut config = Config::default();
        config.http.client.retry_budget = budget;
        config.http.client.max_retries = max_retries;
        config.breaker.minimum_sample_count = u32::MAX;
        let upstream = Arc::new(Upstream {
            script: Mutex::new(script.into()),
            ..Upstream::default()
        });
        let client = Client::builder(&config)
            .transport(upstream.clone())
            .entropy(Entropy::seeded(1))
            .build();
        let bucket = client.budgets().for_uri(&uri("http://up.example/")).unwrap();

        let runtime = support::paused_runtime();
        runtime.block_on(async {
            for (i, (method, drain_first)) in calls.iter().enumerate() {
                if *drain_first {
                    drain(&bucket, THROTTLING);
                    drain(&bucket, TRANSIENT);
                }
                let tokens = bucket.tokens();
                let before = upstream.calls_seen.lock().unwrap().len();
                let _ = client
                    .request(method.clone(), "http://up.example/")
                    .header("x-call", i.to_string())
                    .send()
                    .await;
                let seen = upstream.calls_seen.lock().unwrap();
                let attempts = &seen[before..];
                prop_assert!(
                    !attempts.is_empty(),
                    "call {} ({}) with {} tokens in the bucket never reached the upstream",
                    i, method, tokens
                );
                prop_assert!(attempts.iter().all(|&call| call == i), "{:?}", attempts);
                prop_assert!(attempts.len() as u64 <= max_retries + 1, "{:?}", attempts);
            }
            Ok::<(), TestCaseError>(())
        })?;
    }
}
