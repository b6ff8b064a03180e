//! Counting what requests allocate, for the tests that run in a binary of
//! their own with `stats_alloc`'s counting allocator installed.

use std::alloc::System;

use axum::body::Body;
use axum::Router;
use http::{Request, StatusCode};
use stats_alloc::{Region, StatsAlloc};
use tower::ServiceExt;

/// Sends `GET path` through `app` in process; it must answer 200.
pub async fn get_ok(app: &Router, path: &str) {
    let request = Request::get(path)
        .body(Body::empty())
        .expect("the request builds");
    let response = app.clone().oneshot(request).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
}

/// The allocations `alloc` counted over `counted` requests `GET path`
/// through `app`, after `warm_up` more (a route's check made, its window
/// filled).
pub async fn of_requests(
    alloc: &'static StatsAlloc<System>,
    app: &Router,
    path: &str,
    warm_up: usize,
    counted: usize,
) -> usize {
    for _ in 0..warm_up {
        get_ok(app, path).await;
    }
    let region = Region::new(alloc);
    for _ in 0..counted {
        get_ok(app, path).await;
    }
    region.change().allocations
}
