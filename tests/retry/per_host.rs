//! B1, B4: one bucket per host.

use super::*;

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
    let (logs, _guard) = support::logs::Logs::capture();
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
    // Said once, at the first refusal, not once a lookup.
    let full = logs.lines_with("retry budget table is full");
    assert_eq!(full.len(), 1, "{full:?}");
    assert!(full[0].contains("WARN"), "{}", full[0]);

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
