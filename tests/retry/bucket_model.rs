//! Any sequence of operations keeps the bucket within bounds and matches a
//! model in exact thousandths.

use super::strategies::*;
use super::*;

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
