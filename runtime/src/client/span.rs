//! The span of one attempt (O4), named and filled as OpenTelemetry's HTTP
//! client conventions say, so `tracing-opentelemetry` exports it as a
//! client span.
//!
//! | field | value |
//! |---|---|
//! | `otel.name`, `http.request.method` | the method; `HTTP` and `_OTHER` for one the HTTP RFCs do not define |
//! | `http.request.method_original` | such a method, as sent |
//! | `otel.kind` | `client` |
//! | `server.address`, `server.port` | the host and port |
//! | `timebox.attempt.kind` | `first`, `retry`, `redirect` or `hedge` |
//! | `http.request.resend_count` | the requests sent before it, when above 0 |
//! | `http.response.status_code` | the answer's status |
//! | `error.type` | see below |
//! | `otel.status_code` | `ERROR` when `error.type` is set |
//!
//! `error.type` is one of a closed list: `timeout` (the attempt's own
//! timeout), `deadline_exceeded` (the call's deadline), `connect`,
//! `circuit_open` (the breaker refused the attempt, which was not sent),
//! `retry_budget_exhausted` (the attempt failed and the budget could not pay
//! for a retry), the status code of a 4xx or 5xx answer (both are errors
//! for a client span, where a server's leaves 4xx alone), or `_OTHER` (one
//! is the redirect answered past the hop limit, which fails the call). An
//! attempt with an `error.type` has the span status `Error`, except one
//! the client cancelled itself (the loser of a hedge race, an attempt of a
//! call dropped before its deadline): it did not fail, it was no longer
//! wanted. An attempt of a call dropped after its deadline passed ends
//! `deadline_exceeded`.

use http::{Method, Uri};
use tracing::field::Empty;
use tracing::Span;

use crate::attempt::Attempt;
use crate::observe::CallOutcome;

/// A new span for `attempt` of a `method` call to `uri`, not yet entered.
pub(super) fn attempt_span(method: &Method, uri: &Uri, attempt: Attempt) -> Span {
    // A method the HTTP RFCs do not define is `_OTHER`, as sent in
    // `http.request.method_original`, and the span is named `HTTP`: a
    // caller's own methods must not become span names and attribute values
    // without bound.
    let known = is_known(method);
    let span = tracing::info_span!(
        target: "timebox::client",
        "timebox.client.attempt",
        otel.name = if known { method.as_str() } else { "HTTP" },
        otel.kind = "client",
        http.request.method = if known { method.as_str() } else { "_OTHER" },
        http.request.method_original = Empty,
        server.address = uri.host().unwrap_or(""),
        server.port = uri
            .port_u16()
            .or_else(|| crate::retry::default_port(uri.scheme_str()?)),
        timebox.attempt.kind = attempt.kind.as_str(),
        http.request.resend_count = Empty,
        http.response.status_code = Empty,
        "error.type" = Empty,
        otel.status_code = Empty,
    );
    if !span.is_disabled() {
        if attempt.number > 1 {
            span.record("http.request.resend_count", attempt.number - 1);
        }
        if !known {
            span.record("http.request.method_original", method.as_str());
        }
    }
    span
}

/// Whether `method` is one the HTTP RFCs define (9110's, and `PATCH`).
fn is_known(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET
            | Method::HEAD
            | Method::POST
            | Method::PUT
            | Method::DELETE
            | Method::CONNECT
            | Method::OPTIONS
            | Method::TRACE
            | Method::PATCH
    )
}

/// Writes what came of the attempt into its span, once: `budget_refused`
/// when the budget could not pay for the retry it asked for.
pub(super) fn record_outcome(span: &Span, outcome: CallOutcome, budget_refused: bool) {
    if span.is_disabled() {
        return;
    }
    if let CallOutcome::Status(status) = outcome {
        span.record("http.response.status_code", status);
    }
    let error_type = match outcome {
        _ if budget_refused => Some("retry_budget_exhausted".to_owned()),
        CallOutcome::Status(status) => (status >= 400).then(|| status.to_string()),
        other => other.error_type().map(str::to_owned),
    };
    if let Some(error_type) = error_type {
        span.record("error.type", error_type.as_str());
        if outcome != CallOutcome::Cancelled {
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// Marks the attempt's span as the call's error, `outcome`, whatever the
/// attempt itself got (a redirect past the hop limit).
pub(super) fn record_error(span: &Span, outcome: CallOutcome) {
    if let Some(error_type) = outcome.error_type() {
        span.record("error.type", error_type);
        span.record("otel.status_code", "ERROR");
    }
}
