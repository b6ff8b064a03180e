//! The `grpc-timeout` codec, where every part of the crate can reach it:
//! [`crate::grpc::timeout`] (feature `grpc`) is its public face, and the
//! HTTP server's inbound mesh headers read `grpc-timeout` with the same
//! parser.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

use super::Format;

/// `grpc-timeout`.
pub const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// The most digits a value may have.
const MAX_DIGITS: usize = 8;

/// The largest amount a value can carry: eight nines.
const MAX_AMOUNT: u64 = 99_999_999;

/// The time a `grpc-timeout` value grants; `None` for anything that is not
/// exactly 1 to 8 ASCII digits and one unit byte of `H M S m u n`, once
/// ASCII whitespace around it is trimmed. `0` with a unit is valid: the
/// call is already out of time.
#[must_use]
pub fn parse(value: impl AsRef<[u8]>) -> Option<Duration> {
    let value = value.as_ref().trim_ascii();
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > MAX_DIGITS || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let amount = digits
        .iter()
        .fold(0_u64, |amount, digit| amount * 10 + u64::from(digit - b'0'));
    let duration = match unit {
        b'H' => Duration::from_secs(amount * 3600),
        b'M' => Duration::from_secs(amount * 60),
        b'S' => Duration::from_secs(amount),
        b'm' => Duration::from_millis(amount),
        b'u' => Duration::from_micros(amount),
        b'n' => Duration::from_nanos(amount),
        _ => return None,
    };
    Some(duration)
}

/// The time the `grpc-timeout` headers of a request grant: `None` when
/// there is none, when its value does not [`parse`], or when there are
/// several (a call that says two things is trusted on neither).
#[must_use]
pub fn from_headers(headers: &HeaderMap) -> Option<Duration> {
    Format::GrpcTimeout.from_headers(headers)
}

/// The `grpc-timeout` value for `remaining`, rounded down: whole
/// milliseconds (`"1500m"`) while they fit in 8 digits, microseconds or
/// nanoseconds below a millisecond, seconds, minutes or hours above
/// 99 999 999 ms (capped at 99 999 999 hours). `None` for zero: a call with
/// no time left should fail where it is, not be sent.
#[must_use]
pub fn encode(remaining: Duration) -> Option<HeaderValue> {
    if remaining.is_zero() {
        return None;
    }
    let (amount, unit) = if remaining < Duration::from_micros(1) {
        (u64::from(remaining.subsec_nanos()), 'n')
    } else if remaining < Duration::from_millis(1) {
        (u64::from(remaining.subsec_micros()), 'u')
    } else {
        let millis = u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX);
        let secs = remaining.as_secs();
        [(millis, 'm'), (secs, 'S'), (secs / 60, 'M')]
            .into_iter()
            .find(|&(amount, _)| amount <= MAX_AMOUNT)
            .unwrap_or(((secs / 3600).min(MAX_AMOUNT), 'H'))
    };
    let value = HeaderValue::try_from(format!("{amount}{unit}"))
        .expect("digits and an ASCII unit are a valid header value");
    Some(value)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::{HeaderMap, HeaderValue};

    use super::{encode, from_headers, parse, GRPC_TIMEOUT};

    #[test]
    fn every_unit_parses() {
        for (value, expected) in [
            ("2H", Duration::from_secs(7200)),
            ("3M", Duration::from_secs(180)),
            ("4S", Duration::from_secs(4)),
            ("5m", Duration::from_millis(5)),
            ("6u", Duration::from_micros(6)),
            ("7n", Duration::from_nanos(7)),
            ("0m", Duration::ZERO),
            ("99999999H", Duration::from_secs(99_999_999 * 3600)),
            ("\t12m ", Duration::from_millis(12)),
        ] {
            assert_eq!(parse(value), Some(expected), "{value:?}");
        }
    }

    #[test]
    fn anything_else_is_no_value() {
        for value in [
            "",
            " ",
            "m",
            "5",
            "+5S",
            "-5S",
            "5 S",
            "5s",
            "5ms",
            "123456789m",
            "1.5S",
            "٣S",
            "5SS",
            "0x5m",
        ] {
            assert_eq!(parse(value), None, "{value:?}");
        }
    }

    #[test]
    fn encode_picks_the_finest_unit_that_fits() {
        for (remaining, expected) in [
            (Duration::from_nanos(999), "999n"),
            (Duration::from_nanos(1_999), "1u"),
            (Duration::from_micros(999), "999u"),
            (Duration::from_micros(1_999), "1m"),
            (Duration::from_millis(99_999_999), "99999999m"),
            (Duration::from_millis(100_000_000), "100000S"),
            (Duration::new(100_000, 999_999_999), "100000S"),
            (Duration::from_secs(100_000_000), "1666666M"),
            (Duration::from_secs(6_000_000_000), "1666666H"),
            (Duration::MAX, "99999999H"),
        ] {
            assert_eq!(encode(remaining).unwrap(), expected, "{remaining:?}");
        }
    }

    #[test]
    fn zero_encodes_to_nothing() {
        assert_eq!(encode(Duration::ZERO), None);
    }

    #[test]
    fn several_values_grant_nothing() {
        let mut headers = HeaderMap::new();
        headers.append(GRPC_TIMEOUT, HeaderValue::from_static("5S"));
        assert_eq!(from_headers(&headers), Some(Duration::from_secs(5)));
        headers.append(GRPC_TIMEOUT, HeaderValue::from_static("5S"));
        assert_eq!(from_headers(&headers), None);
    }
}
