//! The deadline header: how a deadline travels to another service.
//!
//! The value is the time left in whole milliseconds, *relative* to when the
//! request is sent ("1500"), never a timestamp, so the two machines' clocks
//! need not agree. The receiver starts its own clock when the request
//! arrives; network time is the small error this accepts.
//!
//! Parsing is strict: anything but a plain decimal number that fits a `u64`
//! is ignored rather than guessed at, and a request that carries the header
//! more than once uses none of its values.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use http::HeaderValue;
//! use timebox::deadline::header;
//!
//! assert_eq!(header::parse(&HeaderValue::from_static(" 1500 ")), Some(Duration::from_millis(1500)));
//! assert_eq!(header::parse(&HeaderValue::from_static("1.5")), None);
//! assert_eq!(header::to_value(Duration::from_micros(2_999_999)), "2999");
//! ```

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

/// The header that carries the time left: `x-timebox-deadline-ms`.
pub const DEADLINE_HEADER: HeaderName = HeaderName::from_static("x-timebox-deadline-ms");

/// Parses one header value: the time left, or `None` when the value is not a
/// plain whole number of milliseconds.
///
/// Surrounding ASCII whitespace is trimmed; what is left must be one or more
/// ASCII digits whose value fits a `u64`. Signs, fractions, exponents, units
/// and empty values are rejected.
#[must_use]
pub fn parse(value: &HeaderValue) -> Option<Duration> {
    let digits = value.as_bytes().trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // All ASCII digits, so this is valid UTF-8; `parse` rejects overflow.
    let millis: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(Duration::from_millis(millis))
}

/// The time left that `headers` carry: `None` when the header is absent,
/// unparseable, or present more than once (a request that says two different
/// things is trusted on neither).
#[must_use]
pub fn from_headers(headers: &HeaderMap) -> Option<Duration> {
    super::Format::Timebox.from_headers(headers)
}

/// The header value for `remaining`: whole milliseconds, rounded down (never
/// promising more time than there is), saturating at `u64::MAX`.
#[must_use]
pub fn to_value(remaining: Duration) -> HeaderValue {
    let millis = u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX);
    HeaderValue::from(millis)
}
