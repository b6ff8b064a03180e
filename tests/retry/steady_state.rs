//! B3: the steady state on a host that always fails.

use super::*;

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
