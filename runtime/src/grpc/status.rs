//! The statuses the layers answer with, and how an outbound call's error
//! becomes one.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

use crate::config::dotted_key;
use crate::deadline::{DeadlineExceeded, Format};
use crate::entropy::Entropy;
use crate::observe::DeadlineSource;

/// Where a call's deadline came from: said in the `grpc-message` and the
/// log line when it passes.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// The inbound `grpc-timeout` header.
    GrpcTimeout,
    /// A trusted inbound deadline header
    /// (`server.timeouts.deadline_headers`).
    Header(Format),
    /// `server.grpc.methods."<method>"`.
    Method(Arc<str>),
    /// `server.grpc.default_timeout_ms`.
    Default,
    /// The deadline current where the outbound call was made.
    Caller,
}

impl Origin {
    /// Where the deadline came from, as the events say it.
    pub(crate) fn source(&self) -> DeadlineSource {
        match self {
            Self::GrpcTimeout => DeadlineSource::Header(Format::GrpcTimeout.as_str()),
            Self::Header(format) => DeadlineSource::Header(format.as_str()),
            Self::Method(_) => DeadlineSource::Route,
            Self::Default | Self::Caller => DeadlineSource::Global,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::GrpcTimeout => f.write_str("the grpc-timeout header"),
            Self::Header(format) => write!(f, "the {format} header"),
            Self::Method(method) => {
                f.write_str(&dotted_key(&["server", "grpc", "methods", &**method]))
            }
            Self::Default => f.write_str("server.grpc.default_timeout_ms"),
            Self::Caller => f.write_str("the caller's deadline"),
        }
    }
}

/// A call's deadline: how long it was and where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pub(crate) length: Duration,
    pub(crate) origin: Origin,
}

impl Budget {
    /// `DEADLINE_EXCEEDED`, naming this deadline, with a
    /// [`DeadlineExceeded`] as its source.
    pub(crate) fn exceeded(&self) -> Status {
        let message = format!(
            "deadline of {} ms from {} exceeded",
            self.length.as_millis(),
            self.origin
        );
        deadline_status(message)
    }
}

/// `DEADLINE_EXCEEDED` with `message` and a [`DeadlineExceeded`] as its
/// source, so that [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded)
/// holds for it and for every error that wraps it.
pub(crate) fn deadline_status(message: String) -> Status {
    let mut status = Status::deadline_exceeded(message);
    // Told where it is made (a client call's, or the server's own answer,
    // which leaves by the network), so a route answering with it does not
    // tell it again.
    status.set_source(Arc::new(DeadlineExceeded::told()));
    status
}

/// A peer's own `DEADLINE_EXCEEDED` (its method's deadline, or its A1
/// check), from the status in `headers` (a Trailers-Only head, or
/// trailers): its message and metadata as the peer said them, with a
/// [`DeadlineExceeded`] as its source all the same. The code stays the
/// peer's when its `grpc-message` does not decode (tonic reads such a
/// status as `UNKNOWN`, saying why).
pub(crate) fn peers_deadline(headers: &http::HeaderMap) -> Status {
    let mut status = match Status::from_header_map(headers) {
        Some(status) if status.code() == Code::DeadlineExceeded => status,
        Some(unread) => Status::with_metadata(
            Code::DeadlineExceeded,
            format!("the peer answered DEADLINE_EXCEEDED; {}", unread.message()),
            unread.metadata().clone(),
        ),
        None => Status::deadline_exceeded("the peer answered DEADLINE_EXCEEDED"),
    };
    // The peer's, not ours: told by no one, a route answering with it
    // neither.
    status.set_source(Arc::new(DeadlineExceeded::told()));
    status
}

/// `grpc-retry-pushback-ms`: when a client told `UNAVAILABLE` may retry.
const RETRY_PUSHBACK: &str = "grpc-retry-pushback-ms";

/// `UNAVAILABLE` for a call that arrived after shutdown began, with a
/// retry pushback of 1000 to 3000 ms drawn from `entropy`, so that the
/// clients turned away do not all come back in the same millisecond.
pub(crate) fn shutting_down(entropy: &Entropy) -> Status {
    let pushback = entropy.uniform(1000..=3000);
    let mut status = Status::unavailable("the server is shutting down");
    status
        .metadata_mut()
        .insert(RETRY_PUSHBACK, MetadataValue::from(pushback));
    status
}

/// `DEADLINE_EXCEEDED` for a call with less time left than its method
/// takes (A1), naming both numbers; no pushback (the same call would be
/// refused again).
pub(crate) fn deadline_too_short(refused: &crate::admission::TooShort) -> Status {
    deadline_status(format!(
        "the call has {} ms left, and this method takes {} ms ({}); it was not started",
        refused.time_left.as_millis(),
        refused.estimate.as_millis(),
        refused.from,
    ))
}

/// `DEADLINE_EXCEEDED` (4) for work a deadline stopped, for a tonic
/// handler that returns what [`bounded`](crate::deadline::bounded()) gave
/// with `?`. The error is the status's source, so
/// [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded) holds
/// for the status. It is not told as an event: the server layer tells the
/// call's own deadline when it ends the call, and tonic leaves a status
/// the handler returns nothing the layer could read the source of.
impl From<DeadlineExceeded> for Status {
    fn from(err: DeadlineExceeded) -> Self {
        let mut status = Status::deadline_exceeded(err.to_string());
        status.set_source(Arc::new(err));
        status
    }
}

/// A timebox client call's error as a gRPC status, for a tonic handler
/// that calls out with timebox's [`Client`](crate::client::Client) and
/// answers with `?`.
///
/// | error | code |
/// |---|---|
/// | `DeadlineExceeded` | `DEADLINE_EXCEEDED` (4) |
/// | `CircuitBreakerOpen`, `Timeout`, `Connect`, `Transport`, a `429` or 5xx `Status` | `UNAVAILABLE` (14) |
/// | `TooManyRedirects`, `InvalidRequest`, `Decode`, any other `Status` | `INTERNAL` (13) |
///
/// The status's source is the error, so its chain is kept: for a
/// deadline, [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded)
/// holds for the status. Its message, which goes to the caller, says what
/// kind of failure it was and never where: an open breaker's host, an
/// invalid request's URL and a body that did not decode stay in the source,
/// and every error but a deadline and an open breaker is logged (`warn!`,
/// with the whole error), as the axum answer of a `ClientError` does.
#[cfg(feature = "client")]
impl From<crate::client::ClientError> for Status {
    fn from(err: crate::client::ClientError) -> Self {
        use crate::client::ClientError;
        use tonic::Code;

        let code = match &err {
            ClientError::DeadlineExceeded(_) => Code::DeadlineExceeded,
            ClientError::CircuitBreakerOpen { .. }
            | ClientError::Timeout
            | ClientError::Connect(_)
            | ClientError::Transport(_) => Code::Unavailable,
            // What the client retries (C4), gRPC's callers retry too: gRPC
            // maps an HTTP 429 to UNAVAILABLE as well.
            ClientError::Status { status, .. }
                if status.is_server_error() || *status == http::StatusCode::TOO_MANY_REQUESTS =>
            {
                Code::Unavailable
            }
            ClientError::TooManyRedirects
            | ClientError::InvalidRequest(_)
            | ClientError::Decode(_)
            | ClientError::Status { .. } => Code::Internal,
        };
        let message = match &err {
            ClientError::CircuitBreakerOpen { .. } => {
                "an upstream's circuit breaker is open".to_owned()
            }
            ClientError::InvalidRequest(_) | ClientError::Decode(_) => {
                "an outbound call failed".to_owned()
            }
            // The upstream's URL is for this service's logs, not its callers.
            ClientError::Status { status, .. } => format!("an upstream answered {status}"),
            other => other.to_string(),
        };
        // As the axum answer: neither the caller's own deadline nor an
        // open breaker (which refuses every call while it is, and says so
        // when it opens) is logged per call.
        if !matches!(
            err,
            ClientError::DeadlineExceeded(_) | ClientError::CircuitBreakerOpen { .. }
        ) {
            tracing::warn!(error = %crate::observe::Chain(&err), "outbound call failed");
        }
        let mut status = Status::new(code, message);
        status.set_source(Arc::new(err));
        status
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tonic::Code;

    use super::{deadline_too_short, peers_deadline, shutting_down, Budget, Origin};
    use crate::admission::TooShort;
    use crate::deadline::is_deadline_exceeded;
    use crate::entropy::Entropy;

    #[test]
    fn an_exceeded_budget_says_how_long_and_from_where() {
        let status = Budget {
            length: Duration::from_millis(300),
            origin: Origin::Method("/fleet.Relay/Forward".into()),
        }
        .exceeded();
        assert_eq!(status.code(), Code::DeadlineExceeded);
        assert_eq!(
            status.message(),
            "deadline of 300 ms from server.grpc.methods.\"/fleet.Relay/Forward\" exceeded"
        );
        assert!(is_deadline_exceeded(&status));
    }

    #[test]
    fn a_peers_deadline_keeps_its_code_when_its_message_does_not_decode() {
        let mut headers = http::HeaderMap::new();
        headers.insert("grpc-status", http::HeaderValue::from_static("4"));
        headers.insert("grpc-message", http::HeaderValue::from_static("%FF"));
        let status = peers_deadline(&headers);
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert!(status
            .message()
            .starts_with("the peer answered DEADLINE_EXCEEDED; "));
        assert!(is_deadline_exceeded(&status));

        headers.insert("grpc-message", http::HeaderValue::from_static("too%20slow"));
        let status = peers_deadline(&headers);
        assert_eq!(status.code(), Code::DeadlineExceeded);
        assert_eq!(
            status.message(),
            "too slow",
            "the peer's message as it said it"
        );
    }

    #[test]
    fn a_refusal_as_too_short_carries_the_deadline_as_its_source() {
        let status = deadline_too_short(&TooShort {
            time_left: Duration::from_millis(10),
            estimate: Duration::from_millis(40),
            from: "its `min_budget_ms`",
        });
        assert_eq!(status.code(), Code::DeadlineExceeded);
        assert!(status.message().contains("takes 40 ms"), "{status:?}");
        assert!(is_deadline_exceeded(&status), "{status:?}");
    }

    #[test]
    fn the_pushback_is_drawn_between_one_and_three_seconds() {
        let draws = |entropy: &Entropy| -> Vec<u64> {
            (0..100)
                .map(|_| {
                    let status = shutting_down(entropy);
                    assert_eq!(status.code(), Code::Unavailable);
                    status
                        .metadata()
                        .get("grpc-retry-pushback-ms")
                        .and_then(|value| value.to_str().ok())
                        .and_then(|value| value.parse().ok())
                        .expect("a pushback in whole milliseconds")
                })
                .collect()
        };
        let pushbacks = draws(&Entropy::seeded(7));
        for pushback in &pushbacks {
            assert!((1000..=3000).contains(pushback), "{pushback}");
        }
        // Spread, so that clients told together come back apart, and drawn
        // from the source given, so that a simulation replays.
        let distinct: std::collections::BTreeSet<_> = pushbacks.iter().collect();
        assert!(distinct.len() > 50, "{} distinct", distinct.len());
        assert_eq!(draws(&Entropy::seeded(7)), pushbacks);
    }
}
