//! `Retry-After`: reading a server's hint, and how long the client heeds it.

use std::time::Duration;

use http::header::{DATE, RETRY_AFTER};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

/// The hint a `429` without a usable `Retry-After` is given: 1 s.
pub const DEFAULT_THROTTLING_HINT: Duration = Duration::from_secs(1);

/// The most a hint adds to the backoff, whatever the server asked: 5 s.
pub const MAX_HINT_WAIT: Duration = Duration::from_secs(5);

/// The wait a response's `Retry-After` header asks for, or `None` when it has
/// no usable one.
///
/// Both forms of RFC 9110 §10.2.3 are read:
///
/// - **delay-seconds**, a whole number of seconds (`"120"`). Surrounding ASCII
///   whitespace is trimmed (`" 5 "` is 5 s), as for the deadline header;
///   signs, fractions and units are not numbers (`"-1"`, `"1.5"`, `"5s"` are
///   `None`). A number too large for a `u64` saturates rather than being
///   ignored: the server asked for a very long wait, and the caps of
///   [`hint_wait`] apply to it like to any other.
/// - **HTTP-date** (`"Wed, 21 Oct 2015 07:28:30 GMT"`, and the two obsolete
///   forms recipients must accept). The wait is measured from the response's
///   own `Date` header: both instants are the server's clock, so the answer
///   does not depend on how far the local clock is off, and timebox never
///   reads the wall clock (time comes only from tokio's clock, which has no
///   calendar). A date at or before `Date` is a wait of zero. **Without a
///   usable `Date` header an HTTP-date counts as absent**, since there is
///   nothing trustworthy to measure it from. Network delay makes the wait
///   measured this way slightly long, which errs on the polite side.
///
/// A response carrying `Retry-After` more than once uses none of the values,
/// as a request carrying the deadline header twice does; the same holds for
/// `Date` when the hint is a date. Anything else that does not parse is
/// `None`; nothing here panics.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use http::header::{DATE, RETRY_AFTER};
/// use http::{HeaderMap, HeaderValue};
/// use timebox::retry::retry_after;
///
/// let mut headers = HeaderMap::new();
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("120"));
/// assert_eq!(retry_after(&headers), Some(Duration::from_secs(120)));
///
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("Wed, 21 Oct 2015 07:28:30 GMT"));
/// assert_eq!(retry_after(&headers), None); // no `Date` to measure from
/// headers.insert(DATE, HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
/// assert_eq!(retry_after(&headers), Some(Duration::from_secs(30)));
/// ```
#[must_use]
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = single_text(headers, &RETRY_AFTER)?;
    if text.is_empty() {
        return None;
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        // All digits, so the parse fails only on overflow.
        return Some(Duration::from_secs(text.parse().unwrap_or(u64::MAX)));
    }
    let hint = httpdate::parse_http_date(text).ok()?;
    let date = httpdate::parse_http_date(single_text(headers, &DATE)?).ok()?;
    Some(hint.duration_since(date).unwrap_or(Duration::ZERO))
}

/// How long the server's hint adds to the backoff before retrying after a
/// response with `status`, or `None` when it adds nothing.
///
/// - `429 Too Many Requests`: the [`retry_after`] hint, or
///   [`DEFAULT_THROTTLING_HINT`] (1 s) when there is none;
/// - `503 Service Unavailable`: the hint when there is one, else `None`;
/// - any other status: `None`.
///
/// The hint is first capped by `max_retry_after` (the config's
/// `max_retry_after_secs`), then by [`MAX_HINT_WAIT`] (5 s). The client waits
/// [`Backoff::delay`](super::Backoff::delay) plus this.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use http::header::RETRY_AFTER;
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use timebox::retry::hint_wait;
///
/// let cap = Duration::from_secs(10);
/// let mut headers = HeaderMap::new();
/// assert_eq!(hint_wait(StatusCode::TOO_MANY_REQUESTS, &headers, cap), Some(Duration::from_secs(1)));
/// assert_eq!(hint_wait(StatusCode::SERVICE_UNAVAILABLE, &headers, cap), None);
///
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("60"));
/// assert_eq!(hint_wait(StatusCode::SERVICE_UNAVAILABLE, &headers, cap), Some(Duration::from_secs(5)));
/// ```
#[must_use]
pub fn hint_wait(
    status: StatusCode,
    headers: &HeaderMap,
    max_retry_after: Duration,
) -> Option<Duration> {
    let hint = match status {
        StatusCode::TOO_MANY_REQUESTS => retry_after(headers).unwrap_or(DEFAULT_THROTTLING_HINT),
        StatusCode::SERVICE_UNAVAILABLE => retry_after(headers)?,
        _ => return None,
    };
    Some(hint.min(max_retry_after).min(MAX_HINT_WAIT))
}

/// The one value of `name`, as text without surrounding ASCII whitespace;
/// `None` when absent, repeated or not visible ASCII.
fn single_text<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value: &HeaderValue = values.next()?;
    if values.next().is_some() {
        return None;
    }
    Some(value.to_str().ok()?.trim_ascii())
}
