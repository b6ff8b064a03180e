//! Counting what requests allocate, for the tests that run in a binary of
//! their own with `stats_alloc`'s counting allocator installed.

use std::alloc::System;

use axum::body::Body;
use axum::Router;
use http::{Request, StatusCode};
use stats_alloc::{Region, StatsAlloc};
use tower::ServiceExt;

/// Sends `GET path` with `headers` through `app` in process; it must
/// answer 200.
pub async fn get_ok(app: &Router, path: &str, headers: &[(&str, &str)]) {
    let mut request = Request::get(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Body::empty()).expect("the request builds");
    let response = app.clone().oneshot(request).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
}

/// The requests [`of_requests`] sends.
pub struct Requests<'a> {
    pub path: &'a str,
    /// Sent first, not counted: a route's check is made, its window
    /// filled.
    pub warm_up: usize,
    pub counted: usize,
    /// The headers of the counted requests only.
    pub counted_headers: &'a [(&'a str, &'a str)],
}

/// The allocations and reallocations `alloc` counted over the counted
/// `requests` through `app`, after the warm-up.
pub async fn of_requests(
    alloc: &'static StatsAlloc<System>,
    app: &Router,
    requests: &Requests<'_>,
) -> usize {
    for _ in 0..requests.warm_up {
        get_ok(app, requests.path, &[]).await;
    }
    let region = Region::new(alloc);
    for _ in 0..requests.counted {
        get_ok(app, requests.path, requests.counted_headers).await;
    }
    // A buffer grown in place is a reallocation: counted too.
    let change = region.change();
    change.allocations + change.reallocations
}
