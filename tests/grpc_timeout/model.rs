//! The `grpc-timeout` rule (DESIGN I1) read independently of the codec:
//! trim ASCII whitespace, then 1 to 8 ASCII digits and one unit of
//! `H M S m u n`. Shared by the property tests and the fuzz target.

use std::time::Duration;

/// The duration `bytes` stand for, if any.
pub(crate) fn expected(bytes: &[u8]) -> Option<Duration> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace())?;
    let (unit, digits) = bytes[start..=end].split_last()?;
    if !(1..=8).contains(&digits.len()) || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}
