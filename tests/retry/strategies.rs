//! The strategies the retry properties draw operations and budgets from.

use super::*;

#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    FirstAttempt,
    Withdraw(RetryKind),
    Refund(RetryKind),
}

pub(super) fn kind() -> impl Strategy<Value = RetryKind> {
    prop_oneof![Just(TRANSIENT), Just(THROTTLING)]
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::FirstAttempt),
        3 => kind().prop_map(Op::Withdraw),
        1 => kind().prop_map(Op::Refund),
    ]
}

pub(super) fn config() -> impl Strategy<Value = BudgetConfig> {
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
