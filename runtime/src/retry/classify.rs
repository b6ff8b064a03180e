//! Which answers may be retried, and which requests may be sent twice.

use http::{HeaderMap, Method, StatusCode};

use super::RetryKind;
use crate::observe::ShedReason;

/// The kind of retry a response status calls for, or `None` when the status
/// is final.
///
/// `429` is [`RetryKind::Throttling`]; `500`, `502`, `503` and `504` are
/// [`RetryKind::Transient`]. Every other status, `501 Not Implemented` and
/// `505` included, is final: asking again would get the same answer. Connect
/// errors and attempt timeouts are transient too; they have no status, so the
/// client classifies them itself.
///
/// # Examples
///
/// ```
/// use http::StatusCode;
/// use timebox::retry::{classify_status, RetryKind};
///
/// assert_eq!(classify_status(StatusCode::TOO_MANY_REQUESTS), Some(RetryKind::Throttling));
/// assert_eq!(classify_status(StatusCode::BAD_GATEWAY), Some(RetryKind::Transient));
/// assert_eq!(classify_status(StatusCode::NOT_FOUND), None);
/// ```
#[must_use]
pub fn classify_status(status: StatusCode) -> Option<RetryKind> {
    match status {
        StatusCode::TOO_MANY_REQUESTS => Some(RetryKind::Throttling),
        StatusCode::INTERNAL_SERVER_ERROR
        | StatusCode::BAD_GATEWAY
        | StatusCode::SERVICE_UNAVAILABLE
        | StatusCode::GATEWAY_TIMEOUT => Some(RetryKind::Transient),
        _ => None,
    }
}

/// The kind of retry a whole answer calls for: [`classify_status`], except
/// for an answer with an `x-timebox-shed` header (a timebox server refused
/// the request before running it). Refused as overloaded or shutting down,
/// a retryable status is [`RetryKind::Throttling`], since the server is
/// healthy and asked for less load. Refused because its deadline was too
/// short for the route (`deadline_too_short`, A1), it is final: a retry,
/// with less time still, would be refused again.
///
/// # Examples
///
/// ```
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use timebox::retry::{classify_answer, RetryKind};
///
/// let mut headers = HeaderMap::new();
/// let status = StatusCode::SERVICE_UNAVAILABLE;
/// assert_eq!(classify_answer(status, &headers), Some(RetryKind::Transient));
/// headers.insert("x-timebox-shed", HeaderValue::from_static("overloaded"));
/// assert_eq!(classify_answer(status, &headers), Some(RetryKind::Throttling));
///
/// let status = StatusCode::GATEWAY_TIMEOUT;
/// headers.insert("x-timebox-shed", HeaderValue::from_static("deadline_too_short"));
/// assert_eq!(classify_answer(status, &headers), None);
/// ```
#[must_use]
pub fn classify_answer(status: StatusCode, headers: &HeaderMap) -> Option<RetryKind> {
    let kind = classify_status(status)?;
    match headers.get(SHED_HEADER) {
        None => Some(kind),
        Some(reason) if reason == ShedReason::DeadlineTooShort.as_str() => None,
        Some(_) => Some(RetryKind::Throttling),
    }
}

/// The header a timebox server sets on an answer it gave without running
/// the request, with the reason.
pub(crate) const SHED_HEADER: &str = "x-timebox-shed";

/// Whether a timebox server refused the request because its deadline was
/// too short for the route (A1, always a `504`): the caller's impatience,
/// not the host's failure. Any other answer is not looked into.
#[cfg(feature = "client")]
pub(crate) fn refused_for_its_deadline(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::GATEWAY_TIMEOUT && classify_answer(status, headers).is_none()
}

/// Whether a timebox server answered without running the request: a
/// server error carrying `x-timebox-shed` (shutting down, overloaded, or
/// its deadline too short for the route). The host has not answered the
/// request itself.
#[cfg(feature = "client")]
pub(crate) fn was_shed(status: StatusCode, headers: &HeaderMap) -> bool {
    status.is_server_error() && headers.contains_key(SHED_HEADER)
}

/// Whether sending `method` twice has the same effect as sending it once
/// (RFC 9110 §9.2.2): `GET`, `HEAD`, `PUT`, `DELETE`, `OPTIONS`, `TRACE`.
///
/// Only these are retried unless a request opts in; `POST`, `PATCH`,
/// `CONNECT` and extension methods are not idempotent.
///
/// # Examples
///
/// ```
/// use http::Method;
/// use timebox::retry::is_idempotent;
///
/// assert!(is_idempotent(&Method::PUT));
/// assert!(!is_idempotent(&Method::POST));
/// ```
#[must_use]
pub fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}
