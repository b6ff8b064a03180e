//! C4: what is retryable.

use super::*;

#[test]
fn only_429_and_500_502_503_504_are_retryable_statuses() {
    for code in 100..=599 {
        let status = StatusCode::from_u16(code).unwrap();
        let expected = match code {
            429 => Some(THROTTLING),
            500 | 502 | 503 | 504 => Some(TRANSIENT),
            _ => None,
        };
        assert_eq!(classify_status(status), expected, "{code}");
    }
}

#[test]
fn only_idempotent_methods_are_retried_by_default() {
    let table = [
        (Method::GET, true),
        (Method::HEAD, true),
        (Method::PUT, true),
        (Method::DELETE, true),
        (Method::OPTIONS, true),
        (Method::TRACE, true),
        (Method::POST, false),
        (Method::PATCH, false),
        (Method::CONNECT, false),
        (Method::from_bytes(b"PURGE").unwrap(), false),
    ];
    for (method, idempotent) in table {
        assert_eq!(is_idempotent(&method), idempotent, "{method}");
    }
}
