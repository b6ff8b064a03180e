//! D7: the header carries the time left as a plain whole number of
//! milliseconds; parsing is strict; several values mean none.

use super::*;

#[test]
fn the_deadline_header_is_named_x_timebox_deadline_ms() {
    assert_eq!(DEADLINE_HEADER.as_str(), "x-timebox-deadline-ms");
}

#[test]
fn plain_whole_milliseconds_parse() {
    for (value, millis) in [("1500", 1500), ("0", 0), (" 20 ", 20), ("\t7\t", 7)] {
        assert_eq!(
            header::parse(&HeaderValue::from_static(value)),
            Some(Duration::from_millis(millis)),
            "parsing {value:?}"
        );
    }
}

#[test]
fn anything_but_plain_whole_milliseconds_does_not_parse() {
    for value in [
        "-1",
        "1.5",
        "+5",
        "1e3",
        "5ms",
        "soon",
        "",
        "   ",
        "1 500",
        "0x10",
        "18446744073709551616",
        "123456789012345678901",
    ] {
        assert_eq!(
            header::parse(&HeaderValue::from_static(value)),
            None,
            "parsing {value:?}"
        );
    }
}

#[test]
fn u64_max_milliseconds_parse() {
    let value = HeaderValue::from_str(&u64::MAX.to_string()).expect("digits are a valid value");
    assert_eq!(header::parse(&value), Some(Duration::from_millis(u64::MAX)));
}

#[test]
fn to_value_writes_whole_milliseconds_rounded_down() {
    assert_eq!(header::to_value(Duration::from_millis(1500)), "1500");
    assert_eq!(header::to_value(Duration::from_micros(2_999_999)), "2999");
    assert_eq!(header::to_value(Duration::from_micros(999)), "0");
    assert_eq!(header::to_value(Duration::ZERO), "0");
}

#[test]
fn to_value_saturates_at_u64_max_milliseconds() {
    assert_eq!(
        header::to_value(Duration::MAX),
        u64::MAX.to_string().as_str()
    );
    let just_over = Duration::from_millis(u64::MAX) + Duration::from_millis(1);
    assert_eq!(header::to_value(just_over), u64::MAX.to_string().as_str());
}

#[test]
fn to_value_parses_back_to_the_same_milliseconds() {
    for millis in [0, 1, 1500, u64::MAX] {
        let remaining = Duration::from_millis(millis);
        assert_eq!(header::parse(&header::to_value(remaining)), Some(remaining));
    }
}

#[test]
fn a_single_deadline_header_is_used() {
    let mut headers = HeaderMap::new();
    headers.insert(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    assert_eq!(
        header::from_headers(&headers),
        Some(Duration::from_millis(1500))
    );
}

#[test]
fn no_deadline_header_means_no_deadline() {
    let mut headers = HeaderMap::new();
    headers.insert(http::header::ACCEPT, HeaderValue::from_static("1500"));
    assert_eq!(header::from_headers(&headers), None);
}

#[test]
fn an_unparseable_deadline_header_is_ignored() {
    let mut headers = HeaderMap::new();
    headers.insert(DEADLINE_HEADER, HeaderValue::from_static("soon"));
    assert_eq!(header::from_headers(&headers), None);
}

#[test]
fn several_deadline_headers_mean_no_deadline() {
    let mut different = HeaderMap::new();
    different.append(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    different.append(DEADLINE_HEADER, HeaderValue::from_static("20"));
    assert_eq!(header::from_headers(&different), None);

    let mut same = HeaderMap::new();
    same.append(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    same.append(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    assert_eq!(header::from_headers(&same), None);

    let mut one_bad = HeaderMap::new();
    one_bad.append(DEADLINE_HEADER, HeaderValue::from_static("soon"));
    one_bad.append(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    assert_eq!(header::from_headers(&one_bad), None);
}
