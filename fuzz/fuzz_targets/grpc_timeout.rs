//! The `grpc-timeout` codec (DESIGN I1): any bytes a peer can send as the
//! header's value.
//!
//! The input is split on `\n` into the values of the header. Each value
//! that `http` accepts is parsed and checked against an independent reading
//! of the rule (trim ASCII whitespace, then 1 to 8 ASCII digits and one of
//! `H M S m u n`); a parsed value must survive `encode` without growing. A
//! map holding the values checks `from_headers`: one value is that value's
//! parse, two or more are none. The first 12 bytes, read as a duration,
//! check that `encode` rounds down and writes a value `parse` reads.

#![no_main]

use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use timebox::grpc::timeout::{encode, from_headers, parse, GRPC_TIMEOUT};

#[path = "../../tests/grpc_timeout/model.rs"]
mod model;

use model::expected;

fuzz_target!(|data: &[u8]| {
    let values: Vec<HeaderValue> = data
        .split(|&b| b == b'\n')
        .take(3)
        .filter_map(|bytes| HeaderValue::from_bytes(bytes).ok())
        .collect();

    for value in &values {
        let parsed = parse(value);
        assert_eq!(parsed, expected(value.as_bytes()), "{value:?}");
        if let Some(parsed) = parsed {
            match encode(parsed) {
                Some(written) => {
                    let read = parse(&written).expect("encode writes a parseable value");
                    assert!(read <= parsed, "{value:?} was sent on as {written:?}");
                }
                None => assert!(parsed.is_zero(), "only zero encodes to nothing"),
            }
        }
    }

    let mut headers = HeaderMap::new();
    for value in &values {
        headers.append(GRPC_TIMEOUT, value.clone());
    }
    let expected = match values.as_slice() {
        [one] => parse(one),
        _ => None,
    };
    assert_eq!(from_headers(&headers), expected, "{values:?}");

    if let Some((secs, nanos)) = data.get(..8).zip(data.get(8..12)) {
        let secs = u64::from_le_bytes(secs.try_into().unwrap());
        let nanos = u32::from_le_bytes(nanos.try_into().unwrap()) % 1_000_000_000;
        let remaining = Duration::new(secs, nanos);
        if let Some(written) = encode(remaining) {
            let read = parse(&written).expect("encode writes a parseable value");
            assert!(read <= remaining, "{remaining:?} was sent as {written:?}");
        }
    }
});
