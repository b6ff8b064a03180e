//! The deadline header (DESIGN D7): any bytes a peer can send as
//! `x-timebox-deadline-ms`.
//!
//! The input is split on `\n` (a byte no header value can hold) into the
//! values of the header. Each value that `http` accepts is parsed and checked
//! against an independent reading of the rule (trim ASCII whitespace, then
//! one or more ASCII digits that fit a `u64`); a parsed value must round-trip
//! through `to_value`. A map holding the values checks `from_headers`: one
//! value is that value's parse, two or more are none. The first 12 bytes,
//! read as a duration, check that `to_value` rounds down and saturates.

#![no_main]

use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use timebox::deadline::header::{self, DEADLINE_HEADER};

fuzz_target!(|data: &[u8]| {
    let values: Vec<HeaderValue> = data
        .split(|&b| b == b'\n')
        .take(3)
        .filter_map(|bytes| HeaderValue::from_bytes(bytes).ok())
        .collect();

    for value in &values {
        let parsed = header::parse(value);
        assert_eq!(
            parsed.map(|d| d.as_millis()),
            expected_millis(value.as_bytes()).map(u128::from),
            "{value:?}"
        );
        if let Some(parsed) = parsed {
            let written = header::to_value(parsed);
            assert_eq!(
                written.as_bytes(),
                parsed.as_millis().to_string().as_bytes()
            );
            assert_eq!(
                header::parse(&written),
                Some(parsed),
                "{value:?} round trip"
            );
        }
    }

    let mut headers = HeaderMap::new();
    headers.insert(http::header::ACCEPT, HeaderValue::from_static("1500"));
    for value in &values {
        headers.append(DEADLINE_HEADER, value.clone());
    }
    let expected = match values.as_slice() {
        [one] => header::parse(one),
        _ => None,
    };
    assert_eq!(header::from_headers(&headers), expected, "{values:?}");

    if let Some((secs, nanos)) = data.get(..8).zip(data.get(8..12)) {
        let secs = u64::from_le_bytes(secs.try_into().unwrap());
        let nanos = u32::from_le_bytes(nanos.try_into().unwrap()) % 1_000_000_000;
        let remaining = Duration::new(secs, nanos);
        let millis = u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX);
        let written = header::to_value(remaining);
        assert_eq!(written.as_bytes(), millis.to_string().as_bytes());
        let read = header::parse(&written).expect("to_value writes a parseable value");
        assert!(read <= remaining, "{remaining:?} was sent as {read:?}");
    }
});

/// D7 read independently: the milliseconds `bytes` stand for, if any.
fn expected_millis(bytes: &[u8]) -> Option<u64> {
    let is_space = |b: &u8| matches!(b, b' ' | b'\t');
    let start = bytes.iter().position(|b| !is_space(b))?;
    let end = bytes.iter().rposition(|b| !is_space(b))?;
    let digits = &bytes[start..=end];
    digits.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}
