//! Following a redirect: where the next hop goes and what it carries.

use http::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, LOCATION, PROXY_AUTHORIZATION,
};
use http::{HeaderMap, Method, StatusCode};
use url::Url;

/// At most this many redirects are followed; one more is an error.
pub(super) const MAX_HOPS: u32 = 10;

/// The next hop of a request.
#[derive(Debug)]
pub(super) struct Hop {
    pub(super) url: Url,
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

/// Where a redirect response sends the request, or `None` when it is not a
/// redirect the client follows (another status, or no parseable `Location`).
pub(super) fn next_hop(
    status: StatusCode,
    headers: &HeaderMap,
    url: &Url,
    method: &Method,
) -> Option<Hop> {
    let keep_method = match status {
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => true,
        StatusCode::SEE_OTHER => false,
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => *method != Method::POST,
        _ => return None,
    };
    let location = headers.get(LOCATION)?.to_str().ok()?;
    let next = url.join(location).ok()?;
    if !matches!(next.scheme(), "http" | "https") {
        return None;
    }
    Some(if keep_method {
        Hop {
            url: next,
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
            url: next,
            method,
            keeps_body: false,
        }
    })
}

/// Adjusts the headers for the hop from `from` to `hop`: credentials never
/// cross to another origin, and a body that was dropped takes its headers
/// with it.
pub(super) fn carry_headers(headers: &mut HeaderMap, from: &Url, hop: &Hop, had_body: bool) {
    if from.origin() != hop.url.origin() {
        for name in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION] {
            headers.remove(name);
        }
    }
    if had_body && !hop.keeps_body {
        headers.remove(CONTENT_TYPE);
        headers.remove(CONTENT_LENGTH);
    }
}
