//! C5: Retry-After.

use super::*;

fn headers(pairs: &[(http::HeaderName, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(name, HeaderValue::from_static(value));
    }
    map
}

fn hint(value: &'static str) -> Option<Duration> {
    retry_after(&headers(&[(RETRY_AFTER, value)]))
}

#[test]
fn a_retry_after_of_seconds_is_that_many_seconds() {
    assert_eq!(hint("120"), Some(Duration::from_secs(120)));
    assert_eq!(hint("0"), Some(Duration::ZERO));
    assert_eq!(retry_after(&HeaderMap::new()), None);
}

#[test]
fn surrounding_whitespace_around_retry_after_seconds_is_trimmed() {
    assert_eq!(hint(" 5 "), Some(Duration::from_secs(5)));
    assert_eq!(hint("\t7"), Some(Duration::from_secs(7)));
    assert_eq!(hint("   "), None);
}

#[test]
fn a_retry_after_that_is_not_whole_seconds_or_a_date_is_no_hint() {
    for value in ["-1", "soon", "1.5", "+5", "5s", "1e3", "", "1 2", "0x10"] {
        assert_eq!(hint(value), None, "{value:?}");
    }
    let mut map = HeaderMap::new();
    map.insert(RETRY_AFTER, HeaderValue::from_bytes(b"\xff5").unwrap());
    assert_eq!(retry_after(&map), None);
}

#[test]
fn a_retry_after_too_large_for_a_u64_saturates() {
    assert_eq!(
        hint("99999999999999999999999"),
        Some(Duration::from_secs(u64::MAX))
    );
}

#[test]
fn a_repeated_retry_after_is_no_hint() {
    let map = headers(&[(RETRY_AFTER, "1"), (RETRY_AFTER, "2")]);
    assert_eq!(retry_after(&map), None);
}

#[test]
fn an_http_date_is_measured_from_the_responses_date_header() {
    let map = headers(&[
        (DATE, "Wed, 21 Oct 2015 07:28:00 GMT"),
        (RETRY_AFTER, "Wed, 21 Oct 2015 07:28:30 GMT"),
    ]);
    assert_eq!(retry_after(&map), Some(Duration::from_secs(30)));
}

#[test]
fn the_obsolete_http_date_forms_are_read_too() {
    for date in ["Sunday, 06-Nov-94 08:50:37 GMT", "Sun Nov  6 08:50:37 1994"] {
        let map = headers(&[(DATE, "Sun, 06 Nov 1994 08:49:37 GMT"), (RETRY_AFTER, date)]);
        assert_eq!(retry_after(&map), Some(Duration::from_secs(60)), "{date}");
    }
}

#[test]
fn an_http_date_before_the_date_header_is_a_wait_of_zero() {
    let map = headers(&[
        (DATE, "Wed, 21 Oct 2015 07:28:00 GMT"),
        (RETRY_AFTER, "Wed, 21 Oct 2015 07:27:00 GMT"),
    ]);
    assert_eq!(retry_after(&map), Some(Duration::ZERO));
}

#[test]
fn an_http_date_without_a_usable_date_header_is_no_hint() {
    let date = "Wed, 21 Oct 2015 07:28:30 GMT";
    assert_eq!(hint(date), None);
    let bad_date = headers(&[(DATE, "yesterday"), (RETRY_AFTER, date)]);
    assert_eq!(retry_after(&bad_date), None);
    let two_dates = headers(&[
        (DATE, "Wed, 21 Oct 2015 07:28:00 GMT"),
        (DATE, "Wed, 21 Oct 2015 07:28:10 GMT"),
        (RETRY_AFTER, date),
    ]);
    assert_eq!(retry_after(&two_dates), None);
}

#[test]
fn a_429_without_a_hint_waits_one_second() {
    let cap = Duration::from_secs(10);
    assert_eq!(
        hint_wait(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), cap),
        Some(Duration::from_secs(1))
    );
    let unusable = headers(&[(RETRY_AFTER, "soon")]);
    assert_eq!(
        hint_wait(StatusCode::TOO_MANY_REQUESTS, &unusable, cap),
        Some(Duration::from_secs(1))
    );
}

#[test]
fn a_hint_is_capped_by_max_retry_after_and_then_by_five_seconds() {
    let too_many = StatusCode::TOO_MANY_REQUESTS;
    let ten = Duration::from_secs(10);
    let wait = |value, cap| hint_wait(too_many, &headers(&[(RETRY_AFTER, value)]), cap);
    assert_eq!(wait("10", ten), Some(Duration::from_secs(5)));
    assert_eq!(wait("3", ten), Some(Duration::from_secs(3)));
    assert_eq!(
        wait("30", Duration::from_secs(2)),
        Some(Duration::from_secs(2))
    );
    assert_eq!(wait("0", ten), Some(Duration::ZERO));
}

#[test]
fn a_503_waits_for_its_hint_only_when_it_has_one() {
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    let cap = Duration::from_secs(10);
    assert_eq!(hint_wait(unavailable, &HeaderMap::new(), cap), None);
    let two = headers(&[(RETRY_AFTER, "2")]);
    assert_eq!(
        hint_wait(unavailable, &two, cap),
        Some(Duration::from_secs(2))
    );
}

#[test]
fn other_statuses_ignore_retry_after() {
    let two = headers(&[(RETRY_AFTER, "2")]);
    for status in [
        StatusCode::INTERNAL_SERVER_ERROR,
        StatusCode::OK,
        StatusCode::MOVED_PERMANENTLY,
    ] {
        assert_eq!(
            hint_wait(status, &two, Duration::from_secs(10)),
            None,
            "{status}"
        );
    }
}
