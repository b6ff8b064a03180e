//! `Retry-After` (DESIGN C5): any `Retry-After` and `Date` headers a server
//! can send, read by `retry_after` and capped by `hint_wait`.
//!
//! The input is split on `\n` into header lines. A line starting with `r` is
//! a `Retry-After` value, one starting with `d` a `Date` value, and anything
//! else an unrelated header; the rest of the line is the value. Nothing may
//! panic; delay-seconds must read as the documented rule says; a repeated
//! header is no hint; every wait `hint_wait` returns is within both caps.

#![no_main]

use std::time::Duration;

use http::header::{DATE, RETRY_AFTER};
use http::{HeaderMap, HeaderValue, StatusCode};
use libfuzzer_sys::fuzz_target;
use timebox::retry::{hint_wait, retry_after, DEFAULT_THROTTLING_HINT, MAX_HINT_WAIT};

/// 9999-12-31T23:59:59Z: the latest instant an HTTP-date can name, so the
/// longest wait a date can ask for (measured from a `Date` at the epoch).
const LATEST_HTTP_DATE: Duration = Duration::from_secs(253_402_300_799);

fuzz_target!(|data: &[u8]| {
    let mut headers = HeaderMap::new();
    let mut retry_afters = Vec::new();
    for line in data.split(|&b| b == b'\n').take(8) {
        let Some((&tag, value)) = line.split_first() else {
            continue;
        };
        let Ok(value) = HeaderValue::from_bytes(value) else {
            continue;
        };
        match tag {
            b'r' => {
                retry_afters.push(value.clone());
                headers.append(RETRY_AFTER, value);
            }
            b'd' => {
                headers.append(DATE, value);
            }
            _ => {
                headers.append(http::header::SERVER, value);
            }
        }
    }

    let hint = retry_after(&headers);
    match retry_afters.as_slice() {
        [] => assert_eq!(hint, None),
        [one] => match delay_seconds(one.as_bytes()) {
            Some(secs) => assert_eq!(hint, Some(Duration::from_secs(secs)), "{one:?}"),
            // An HTTP-date, or nothing usable: a date is measured from the
            // server's `Date`, so it can never ask for more than the span of
            // the calendar HTTP-dates cover.
            None => assert!(
                hint.is_none_or(|d| d <= LATEST_HTTP_DATE),
                "{one:?}: {hint:?}"
            ),
        },
        _ => assert_eq!(hint, None, "a repeated Retry-After is no hint"),
    }

    let caps = [
        Duration::ZERO,
        Duration::from_millis(1500),
        Duration::from_secs(10),
        Duration::MAX,
    ];
    for cap in caps {
        let capped = |d: Duration| d.min(cap).min(MAX_HINT_WAIT);
        for status in [
            StatusCode::TOO_MANY_REQUESTS,
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::INTERNAL_SERVER_ERROR,
            StatusCode::OK,
        ] {
            let wait = hint_wait(status, &headers, cap);
            let expected = match status {
                StatusCode::TOO_MANY_REQUESTS => {
                    Some(capped(hint.unwrap_or(DEFAULT_THROTTLING_HINT)))
                }
                StatusCode::SERVICE_UNAVAILABLE => hint.map(capped),
                _ => None,
            };
            assert_eq!(wait, expected, "{status} with cap {cap:?}");
            if let Some(wait) = wait {
                assert!(wait <= cap && wait <= MAX_HINT_WAIT, "{wait:?}");
            }
        }
    }
});

/// The delay-seconds form read independently: trimmed, all ASCII digits,
/// saturating at `u64::MAX`.
fn delay_seconds(bytes: &[u8]) -> Option<u64> {
    let text = bytes.trim_ascii();
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(text.iter().fold(0u64, |n, &b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}
