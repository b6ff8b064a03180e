//! W1–W4 against a reference model: any sequence of items, touches,
//! suspensions and clock steps, checked after every step.

use super::model::*;
use super::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn a_watched_stream_times_out_exactly_when_and_as_the_model_says(
        windows in (window(), window(), window()),
        steps in prop::collection::vec(step(), 1..60),
    ) {
        run_against_model(windows, &steps)?;
    }
}
