//! No stuck half-open state, whatever happens.

use super::model::*;
use super::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn once_every_permit_settles_and_an_open_period_passes_the_breaker_admits_calls_again(
        config in small_config(),
        ops in prop::collection::vec(op(), 0..80),
        finally in prop::collection::vec(any::<u8>(), 1..8),
    ) {
        let runtime = support::paused_runtime();
        runtime.block_on(never_stuck(config, ops, finally))?;
    }
}
