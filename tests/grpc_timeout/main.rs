//! The `grpc-timeout` codec's properties (DESIGN I1).

mod model;

use std::time::Duration;

use proptest::prelude::*;
use timebox::grpc::timeout::{encode, parse};

/// How much `encode` may round away: less than one of the unit it picks.
fn unit_of(value: &str) -> Duration {
    match value.as_bytes().last() {
        Some(b'H') => Duration::from_secs(3600),
        Some(b'M') => Duration::from_secs(60),
        Some(b'S') => Duration::from_secs(1),
        Some(b'm') => Duration::from_millis(1),
        Some(b'u') => Duration::from_micros(1),
        Some(b'n') => Duration::from_nanos(1),
        _ => panic!("no unit in {value:?}"),
    }
}

fn durations() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (1_u64..1_000_000).prop_map(Duration::from_nanos),
        (1_u64..100_000_000_000).prop_map(Duration::from_micros),
        // Seconds of every scale, so that each unit is picked.
        (0_u32..63, 0_u32..1_000_000_000).prop_flat_map(|(scale, nanos)| {
            (0_u64..1 << scale)
                .prop_map(move |secs| Duration::new(secs, nanos).max(Duration::from_nanos(1)))
        }),
    ]
}

proptest! {
    #[test]
    fn what_is_sent_is_never_more_than_what_is_left(remaining in durations()) {
        let value = encode(remaining).expect("a non-zero duration encodes");
        let sent = parse(&value).expect("encode writes what parse reads");
        prop_assert!(sent <= remaining, "{remaining:?} sent as {value:?}");
        let value = value.to_str().unwrap().to_owned();
        if sent < Duration::from_secs(99_999_999 * 3600) {
            prop_assert!(remaining - sent < unit_of(&value), "{remaining:?} sent as {value}");
        }
    }

    #[test]
    fn parse_accepts_exactly_the_rule(value in "[ \t]?[+\\- ]?[0-9]{0,10}[ ]?[HMSmunsh]?[ \t]?") {
        prop_assert_eq!(parse(&value), model::expected(value.as_bytes()), "{:?}", value);
    }
}

#[test]
fn the_forms_the_spec_rules_out_are_no_value() {
    for value in ["+5S", "5 S", "123456789m", "", "5s", "-1S", "5", "S"] {
        assert_eq!(parse(value), None, "{value:?}");
    }
    assert_eq!(encode(Duration::ZERO), None, "zero sends nothing");
}
