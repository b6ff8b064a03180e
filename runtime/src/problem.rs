//! The `application/problem+json` answers timebox gives (RFC 9457), shared by
//! the server layers, pool waits and the client's errors.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, StatusCode};

use crate::entropy::Entropy;
use crate::observe::ShedReason;
use crate::retry::SHED_HEADER;

const PROBLEM_JSON: HeaderValue = HeaderValue::from_static("application/problem+json");

/// Every answer here is about one request (its deadline, its moment in a
/// shutdown or a queue), not about the resource: no cache is to keep it
/// for another (a CDN set to cache errors would).
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

/// The random source for what has no app's own at hand (an answer made
/// outside a `TimeboxLayer`, which carries the app's; a connection's age
/// bound in `serve`): one per process, seeded by the operating system.
pub(crate) fn fallback_entropy() -> Entropy {
    static FALLBACK: std::sync::OnceLock<Entropy> = std::sync::OnceLock::new();
    FALLBACK.get_or_init(Entropy::from_os).clone()
}

/// Marks an answer made without its request (an error's `IntoResponse`),
/// whose `Retry-After` came from [`fallback_entropy`]: a simulation draws
/// it again from its own source, so its runs replay.
#[cfg(any(feature = "client", feature = "sqlx"))]
#[derive(Debug, Clone, Copy)]
struct DrawnWithoutRequest;

/// `answer` for an error made into a response without its request: drawn
/// from [`fallback_entropy`], and marked so that [`redraw_retry_after`] can
/// draw it again.
#[cfg(any(feature = "client", feature = "sqlx"))]
pub(crate) fn without_request(answer: impl FnOnce(&Entropy) -> Response) -> Response {
    let mut response = answer(&fallback_entropy());
    response.extensions_mut().insert(DrawnWithoutRequest);
    response
}

/// Draws the `Retry-After` of an answer made without its request again,
/// from `entropy`, the source its request carried (a `TimeboxLayer`'s, a
/// simulation's).
#[cfg(any(feature = "sim", feature = "server"))]
pub(crate) fn redraw_retry_after(response: &mut Response, entropy: &Entropy) {
    #[cfg(any(feature = "client", feature = "sqlx"))]
    if response
        .extensions_mut()
        .remove::<DrawnWithoutRequest>()
        .is_some()
    {
        set_retry_after(response, entropy);
    }
    // Without those features no answer is made without its request.
    #[cfg(not(any(feature = "client", feature = "sqlx")))]
    let _ = (response, entropy);
}

/// Draws the `Retry-After` seconds: uniform in {1, 2, 3}, so clients told to
/// come back do not all come back in the same second.
pub(crate) fn retry_after_secs(entropy: &Entropy) -> u64 {
    entropy.uniform(1..=3)
}

/// 503 for a request that ran out of its `deadline`.
pub(crate) fn deadline_timeout(deadline: Duration, entropy: &Entropy) -> Response {
    let detail = format!(
        "the request did not finish within its deadline of {} ms",
        deadline.as_millis()
    );
    let mut response = problem(StatusCode::SERVICE_UNAVAILABLE, &detail);
    set_retry_after(&mut response, entropy);
    response.extensions_mut().insert(DeadlineCancelled);
    response
}

/// 504 for a handler whose work stopped at its deadline.
pub(crate) fn deadline_error() -> Response {
    let mut response = problem(
        StatusCode::GATEWAY_TIMEOUT,
        "the work behind this request ran out of time at its deadline",
    );
    response.extensions_mut().insert(DeadlineCancelled);
    response
}

/// Marks a handler's answer to a deadline that passed in its work and that
/// nothing has told yet (O1): the route deadline, or `TimeboxLayer` for a
/// plain route, tells it at this stage and takes the mark off. An outbound
/// call tells its own deadline, so the answers to its errors carry none.
#[cfg(feature = "server")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct UntoldDeadline(pub(crate) crate::observe::Stage);

/// `response`, marked as the answer to a deadline that passed at `stage`
/// and that nothing has told yet.
#[cfg(feature = "server")]
pub(crate) fn untold(mut response: Response, stage: crate::observe::Stage) -> Response {
    response.extensions_mut().insert(UntoldDeadline(stage));
    response
}

/// 503 for a request that arrived after the server began shutting down
/// (phase 1), and for the readiness route from then on.
pub(crate) fn shutting_down(entropy: &Entropy) -> Response {
    let mut response = problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "the server is shutting down and accepts no new requests",
    );
    set_retry_after(&mut response, entropy);
    set_shed(&mut response, ShedReason::ShuttingDown);
    response
}

/// 503 for a request the concurrency limit's queue shed (A2).
pub(crate) fn overloaded(entropy: &Entropy) -> Response {
    let mut response = problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "the server is overloaded: the request waited too long for a slot",
    );
    set_retry_after(&mut response, entropy);
    set_shed(&mut response, ShedReason::Overloaded);
    response
}

/// 504 for a request with less time left than its route takes (A1):
/// `type` `urn:timebox:deadline-too-short`, both numbers named, no
/// `Retry-After` (the same request would be refused again).
pub(crate) fn deadline_too_short(time_left: Duration, estimate: Duration, from: &str) -> Response {
    let detail = format!(
        "the request has {} ms left, and this route takes {} ms ({from})",
        time_left.as_millis(),
        estimate.as_millis(),
    );
    let mut response = typed_problem(
        StatusCode::GATEWAY_TIMEOUT,
        "urn:timebox:deadline-too-short",
        &detail,
    );
    set_shed(&mut response, ShedReason::DeadlineTooShort);
    response.extensions_mut().insert(NoWork);
    response
}

/// Marks the answer of a request that did no work, so the concurrency
/// limit takes no latency sample from it: A1's refusal, S4's answer to a
/// deadline that had passed when the request arrived, and a route's answer
/// to its own deadline spent before its handler first ran (in the limit's
/// queue). Each holds its slot for next to no time, and a limit fed those
/// times would learn a latency of nothing (Vegas: a "no-load" latency that
/// makes every real request look queued).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoWork;

/// 503 of the readiness route during the pre-stop grace: the server still
/// serves, but wants no new traffic from load balancers.
pub(crate) fn not_ready(entropy: &Entropy) -> Response {
    let mut response = problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "the server is shutting down: it still serves requests during its pre-stop \
         grace, but should be sent no new traffic",
    );
    set_retry_after(&mut response, entropy);
    response
}

/// 503 for a call not sent because the upstream's circuit breaker is open.
#[cfg(feature = "client")]
pub(crate) fn upstream_unavailable(entropy: &Entropy) -> Response {
    let mut response = problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "an upstream this request needs is failing; its circuit breaker is open",
    );
    set_retry_after(&mut response, entropy);
    response
}

/// 503 for a wait (such as a pool connection) that the deadline cut short.
#[cfg(feature = "sqlx")]
pub(crate) fn wait_cancelled(what: &str, entropy: &Entropy) -> Response {
    let detail = format!("the deadline passed while waiting for {what}");
    let mut response = problem(StatusCode::SERVICE_UNAVAILABLE, &detail);
    set_retry_after(&mut response, entropy);
    response.extensions_mut().insert(DeadlineCancelled);
    untold(response, crate::observe::Stage::PoolWait)
}

fn set_retry_after(response: &mut Response, entropy: &Entropy) {
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_after_secs(entropy)));
}

/// Says that the request was refused before it ran, and why (the `reason`
/// of the `request_shed` event): a timebox client pays the retry budget's
/// `throttling_cost` to retry after it.
fn set_shed(response: &mut Response, reason: ShedReason) {
    response
        .headers_mut()
        .insert(SHED_HEADER, HeaderValue::from_static(reason.as_str()));
}

fn problem(status: StatusCode, detail: &str) -> Response {
    typed_problem(status, "about:blank", detail)
}

fn typed_problem(status: StatusCode, kind: &str, detail: &str) -> Response {
    let body = serde_json::json!({
        "type": kind,
        "title": status.canonical_reason().unwrap_or("Error"),
        "status": status.as_u16(),
        "detail": detail,
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, PROBLEM_JSON);
    headers.insert(CACHE_CONTROL, NO_STORE);
    response
}

/// `response` as the answer to a `HEAD` request, made where no router
/// takes its content off (axum's does, and hyper does over HTTP/1, not over
/// HTTP/2, where a client resets a `HEAD` stream that gets content): no
/// content, and the `Content-Length` a `GET` would have got (RFC 9110
/// §9.3.2).
#[cfg(feature = "server")]
pub(crate) fn for_head(mut response: Response) -> Response {
    use http::header::CONTENT_LENGTH;
    use http_body::Body as _;
    if let Some(length) = response.body().size_hint().exact() {
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from(length));
    }
    *response.body_mut() = Body::empty();
    response
}

/// A response extension on every answer timebox gave because a deadline ran
/// out: the 503 of a route timeout, the 504 of a handler's deadline error, the
/// 503 of a pool wait cut short.
///
/// Layers outside the handler read it to undo what a cancelled handler
/// started: a session layer must not save the session changes of a cancelled
/// handler (see [`SaveSessionUnlessCancelledLayer`](crate::server::SaveSessionUnlessCancelledLayer)).
/// A 503 that a handler returns itself does not carry it.
///
/// ```
/// use axum::response::Response;
/// use timebox::server::DeadlineCancelled;
///
/// fn was_cancelled(response: &Response) -> bool {
///     response.extensions().get::<DeadlineCancelled>().is_some()
/// }
/// # assert!(!was_cancelled(&Response::new(axum::body::Body::empty())));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct DeadlineCancelled;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::header::{CACHE_CONTROL, CONTENT_TYPE};

    use super::*;

    /// Every problem answer timebox builds: none may be kept by a cache
    /// or a CDN and served to the next client.
    fn answers() -> Vec<(&'static str, Response)> {
        let entropy = Entropy::seeded(7);
        let mut answers = vec![
            (
                "deadline_timeout",
                deadline_timeout(Duration::from_secs(2), &entropy),
            ),
            ("deadline_error", deadline_error()),
            ("shutting_down", shutting_down(&entropy)),
            ("overloaded", overloaded(&entropy)),
            (
                "deadline_too_short",
                deadline_too_short(Duration::from_millis(5), Duration::from_millis(40), "x"),
            ),
            ("not_ready", not_ready(&entropy)),
        ];
        #[cfg(feature = "client")]
        answers.push(("upstream_unavailable", upstream_unavailable(&entropy)));
        #[cfg(feature = "sqlx")]
        answers.push(("wait_cancelled", wait_cancelled("a connection", &entropy)));
        answers
    }

    #[test]
    fn every_problem_answer_is_problem_json_that_no_cache_keeps() {
        for (name, response) in answers() {
            assert_eq!(response.headers()[CACHE_CONTROL], "no-store", "{name}");
            assert_eq!(response.headers()[CONTENT_TYPE], PROBLEM_JSON, "{name}");
        }
    }
}
