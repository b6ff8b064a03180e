//! Following a redirect: where the next hop goes and what it carries.

use http::header::{
    AUTHORIZATION, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, LOCATION,
    PROXY_AUTHORIZATION, TRANSFER_ENCODING,
};
use http::{HeaderMap, Method, StatusCode, Uri};
use url::Url;

/// At most this many redirects are followed; one more is an error.
pub(super) const MAX_HOPS: u32 = 10;

/// The next hop of a request.
#[derive(Debug)]
pub(super) struct Hop {
    /// Where the request went: the redirect's own URL.
    pub(super) from: Url,
    pub(super) url: Url,
    /// `url` as the request's URI.
    pub(super) uri: Uri,
    pub(super) method: Method,
    /// Whether the hop resends the body (307, 308); otherwise it goes
    /// without one.
    pub(super) keeps_body: bool,
}

/// Whether `status` is a redirect the client follows (when it has a
/// `Location`).
pub(super) fn is_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// Where a redirect response to a request for `from` sends it, or `None`
/// when it is not a redirect the client follows: another status, or no
/// `Location` that names an http(s) URL a request can be sent to (the
/// URL standard takes some hosts, such as `a{b`, that an HTTP request's
/// URI cannot carry).
pub(super) fn next_hop(
    status: StatusCode,
    headers: &HeaderMap,
    from: Url,
    method: &Method,
) -> Option<Hop> {
    let keep_method = match status {
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => true,
        StatusCode::SEE_OTHER => false,
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => *method != Method::POST,
        _ => return None,
    };
    let location = headers.get(LOCATION)?.to_str().ok()?;
    let next = from.join(location).ok()?;
    if !matches!(next.scheme(), "http" | "https") {
        return None;
    }
    let uri = next.as_str().parse().ok()?;
    Some(if keep_method {
        Hop {
            from,
            url: next,
            uri,
            method: method.clone(),
            keeps_body: true,
        }
    } else {
        // 303, and 301/302 after a POST: the next hop is a GET without the body.
        let method = if *method == Method::HEAD {
            Method::HEAD
        } else {
            Method::GET
        };
        Hop {
            from,
            url: next,
            uri,
            method,
            keeps_body: false,
        }
    })
}

/// Adjusts the headers for `hop`: credentials never cross to another
/// origin, and a hop that sends no body (its method became `GET` or
/// `HEAD`) sends none of the headers that describe one, also when the
/// request had none (RFC 9110, section 15.4).
pub(super) fn carry_headers(headers: &mut HeaderMap, hop: &Hop) {
    if hop.from.origin() != hop.url.origin() {
        for name in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION] {
            headers.remove(name);
        }
    }
    if !hop.keeps_body {
        for name in [
            CONTENT_TYPE,
            CONTENT_LENGTH,
            CONTENT_ENCODING,
            TRANSFER_ENCODING,
        ] {
            headers.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};
    use http::{HeaderMap, HeaderValue, Method, StatusCode};
    use url::Url;

    use super::{carry_headers, next_hop, Hop};

    /// The hop a `303` to `/done` makes of a `POST` to `/upload`.
    fn post_seen_other() -> Hop {
        let url = Url::parse("http://a.test/upload").unwrap();
        let mut answer = HeaderMap::new();
        answer.insert(http::header::LOCATION, HeaderValue::from_static("/done"));
        next_hop(StatusCode::SEE_OTHER, &answer, url, &Method::POST).unwrap()
    }

    #[test]
    fn a_hop_without_the_body_drops_every_header_that_described_it() {
        let hop = post_seen_other();
        let mut headers = HeaderMap::new();
        for (name, value) in [
            (CONTENT_TYPE, "application/json"),
            (CONTENT_LENGTH, "12"),
            (CONTENT_ENCODING, "gzip"),
            (TRANSFER_ENCODING, "chunked"),
            (http::header::ACCEPT, "*/*"),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }

        carry_headers(&mut headers, &hop);

        assert_eq!(hop.method, Method::GET);
        let left: Vec<&str> = headers.keys().map(http::HeaderName::as_str).collect();
        assert_eq!(left, ["accept"]);
    }

    #[test]
    fn a_hop_that_becomes_a_get_drops_a_content_type_set_without_a_body() {
        let hop = post_seen_other();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));

        carry_headers(&mut headers, &hop);

        assert!(headers.is_empty(), "{headers:?}");
    }

    #[test]
    fn a_location_no_request_can_be_sent_to_is_no_hop() {
        let url = Url::parse("http://a.test/").unwrap();
        let mut answer = HeaderMap::new();
        // The URL standard takes `{` in a host; an HTTP request's URI does not.
        answer.insert(
            http::header::LOCATION,
            HeaderValue::from_static("http://a{b/"),
        );
        assert!(url.join("http://a{b/").is_ok());
        assert!(next_hop(StatusCode::FOUND, &answer, url, &Method::GET).is_none());
    }
}
