//! [`ClientError`]: why an outbound call gave no response.

use std::error::Error;
use std::fmt;

use http::StatusCode;
use url::Url;

use crate::breaker::Open;
use crate::deadline::DeadlineExceeded;
#[cfg(feature = "server")]
use crate::observe::Chain;

/// A boxed error from a transport or a body.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Why an outbound call gave no response.
///
/// A response with an error status (a 503 the retries could not fix, say) is
/// not an error: it comes back as a [`Response`](super::Response).
///
/// The errors of a [`Client`](super::Client)'s own reqwest transport show
/// the URL as scheme, host, port and path, without its query or user info
/// (reqwest's would show them all), since a server that answers for a
/// failed call logs its error.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The deadline passed: before an attempt could start, during an
    /// attempt, or while reading the body. Its `source()` is the
    /// [`DeadlineExceeded`], so
    /// [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded) holds
    /// and a handler returning it answers `504`.
    DeadlineExceeded(DeadlineExceeded),
    /// The host's circuit breaker is open: the call was not sent. Its
    /// `source()` is the breaker's [`Open`].
    ///
    /// A retry whose host's breaker is open when the retry is decided is
    /// not made, and the last answer is the call's. One whose breaker opens
    /// (or fills its half-open trials) while the retry waits ends the call
    /// with this error: the last answer was let go for the retry, so that
    /// its connection could serve it. Either way the retry is told as
    /// skipped, for `breaker_open`.
    CircuitBreakerOpen {
        /// The host key (`host:port`).
        host: String,
        /// What the breaker said: when it admits calls again.
        open: Open,
    },
    /// A redirect chain longer than 10 hops.
    TooManyRedirects,
    /// An attempt ran past its own timeout (`http.client.timeout_secs`, or
    /// the call's [`attempt_timeout`](super::RequestBuilder::attempt_timeout))
    /// while the deadline still had time left.
    Timeout,
    /// The connection could not be made (refused, unreachable, dropped by a
    /// simulated network).
    Connect(BoxError),
    /// The request cannot be sent: a URL that does not parse or has no
    /// host, a header that is not valid HTTP. The text says which.
    InvalidRequest(String),
    /// The request failed after it was sent, or its body could not be read.
    Transport(BoxError),
    /// The response body is not the JSON that
    /// [`Response::json`](super::Response::json) was asked for.
    Decode(BoxError),
    /// [`Response::error_for_status`](super::Response::error_for_status)
    /// found a client or server error status. Its text names the status
    /// and the URL.
    Status {
        /// The answer's status.
        status: StatusCode,
        /// The URL the answer came from ([`Response::url`](super::Response::url)),
        /// without its query or user info, as the other errors show URLs:
        /// an error is logged, and its `Debug` shows this field.
        url: Url,
    },
}

impl ClientError {
    /// Whether the deadline ended the call.
    #[must_use]
    pub fn is_deadline_exceeded(&self) -> bool {
        matches!(self, ClientError::DeadlineExceeded(_))
    }

    /// The status of an answer [`Response::error_for_status`] turned into
    /// this error, as reqwest's `Error::status`; `None` for any other.
    ///
    /// [`Response::error_for_status`]: super::Response::error_for_status
    #[must_use]
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The call's deadline passed: told as an event where the call ends
    /// (see `observe::tell_outbound_deadline`), so marked told.
    pub(crate) fn deadline() -> Self {
        ClientError::DeadlineExceeded(DeadlineExceeded::told())
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::DeadlineExceeded(_) => f.write_str("deadline exceeded"),
            ClientError::CircuitBreakerOpen { host, .. } => {
                write!(f, "circuit breaker open for {host}")
            }
            ClientError::TooManyRedirects => f.write_str("too many redirects (more than 10)"),
            ClientError::Timeout => f.write_str("attempt timed out"),
            ClientError::Connect(_) => f.write_str("connection failed"),
            ClientError::InvalidRequest(what) => write!(f, "invalid request: {what}"),
            ClientError::Transport(_) => f.write_str("request failed"),
            ClientError::Decode(_) => f.write_str("the response body is not the JSON expected"),
            ClientError::Status { status, url } => {
                write!(f, "the server answered {status} for {url}")
            }
        }
    }
}

impl Error for ClientError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            ClientError::DeadlineExceeded(err) => Some(err),
            ClientError::Connect(err) | ClientError::Transport(err) | ClientError::Decode(err) => {
                Some(&**err)
            }
            ClientError::CircuitBreakerOpen { open, .. } => Some(open),
            ClientError::TooManyRedirects
            | ClientError::Timeout
            | ClientError::InvalidRequest(_)
            | ClientError::Status { .. } => None,
        }
    }
}

#[cfg(feature = "server")]
impl axum::response::IntoResponse for ClientError {
    /// `504` with [`DeadlineCancelled`](crate::server::DeadlineCancelled) for
    /// a deadline, `503` with `Retry-After` for an open breaker, `502` for
    /// everything else an upstream did wrong.
    fn into_response(self) -> axum::response::Response {
        use crate::problem;
        match self {
            ClientError::DeadlineExceeded(_) => problem::deadline_error(),
            ClientError::CircuitBreakerOpen { .. } => {
                problem::without_request(problem::upstream_unavailable)
            }
            other => {
                tracing::warn!(error = %Chain(&other), "outbound call failed");
                http::StatusCode::BAD_GATEWAY.into_response()
            }
        }
    }
}
