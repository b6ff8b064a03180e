//! Building requests and reading responses in-process.

use axum::body::Body;
use axum::Router;
use http::{Request, Response};
use http_body_util::BodyExt;
use tower::ServiceExt;

/// A request with `method` and `uri` and an empty body.
pub fn request(method: &str, uri: &str) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(uri)
        .body(Body::empty())
        .expect("a valid request")
}

/// A GET of `uri` carrying the deadline header `value`.
pub fn get_with_deadline_header(uri: &str, value: &str) -> Request<Body> {
    Request::builder()
        .uri(uri)
        .header(timebox::deadline::header::DEADLINE_HEADER, value)
        .body(Body::empty())
        .expect("a valid request")
}

/// Sends `request` through `router` in-process.
pub async fn send(router: &Router, request: Request<Body>) -> Response<Body> {
    router
        .clone()
        .oneshot(request)
        .await
        .expect("routers never fail")
}

/// The whole body as text.
pub async fn text(response: Response<Body>) -> String {
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("the body can be read")
        .to_bytes();
    String::from_utf8(bytes.to_vec()).expect("the body is UTF-8")
}

/// The `Retry-After` of `response`, in whole seconds.
pub fn retry_after_secs<B>(response: &Response<B>) -> u64 {
    response.headers()["retry-after"]
        .to_str()
        .expect("an ASCII Retry-After")
        .parse()
        .expect("Retry-After in seconds")
}

/// A middleware that looks something up for 100 ms before it calls the
/// route, as an authentication step would.
pub async fn looks_up_first(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    next.run(request).await
}
