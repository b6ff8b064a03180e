//! [`GrpcBody`]: a response body under the call's deadline.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Buf;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project::pin_project;
use tonic::{Code, Status};

use crate::deadline::{Deadline, Gated};
use crate::shutdown::InFlightGuard;

use super::status::Budget;

/// A boxed error, as tonic's services and bodies carry them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The response body of a call under [`GrpcDeadlineLayer`](super::GrpcDeadlineLayer).
///
/// A gRPC deadline is for the whole call, so the body's frames are polled
/// under the same gate as the service's future, streamed responses
/// included. When the deadline passes mid-body the inner body is dropped;
/// on the server the body then ends with trailers saying
/// `DEADLINE_EXCEEDED`, and on the client reading it fails with that
/// status. A body that answers on its own (a refused or timed-out call)
/// is empty: the status is in the response's headers (Trailers-Only).
#[pin_project]
#[derive(Debug, Default)]
pub struct GrpcBody<B> {
    #[pin]
    state: State<B>,
    /// Counts the call in flight until the body is done (server side).
    guard: Option<InFlightGuard>,
}

#[pin_project(project = StateProj)]
#[derive(Debug, Default)]
enum State<B> {
    /// No deadline: the body as it is.
    Plain(#[pin] B),
    /// Under the call's deadline.
    Gated {
        #[pin]
        body: Gated<B>,
        budget: Budget,
        side: Side,
    },
    /// Nothing (more) to send.
    #[default]
    Empty,
}

/// Which end of the call the body is read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Written to the network by a server.
    Server,
    /// Read by a client that sent a `grpc-timeout` ending at `sent`: an
    /// error or a `CANCELLED` from then on is the deadline's (tonic's
    /// channel enforces the header itself, with `CANCELLED`).
    Client { sent: Deadline },
}

impl Side {
    /// Whether a failure now is the deadline's, on the client.
    pub(crate) fn client_past_sent(self) -> bool {
        matches!(self, Self::Client { sent } if sent.is_expired())
    }
}

impl<B> GrpcBody<B> {
    /// `body` as it is.
    pub(crate) fn plain(body: B, guard: Option<InFlightGuard>) -> Self {
        Self {
            state: State::Plain(body),
            guard,
        }
    }

    /// `body`, gated as the call's head was (see [`Gated::hand_over`]).
    pub(crate) fn gated(
        body: Gated<B>,
        budget: Budget,
        side: Side,
        guard: Option<InFlightGuard>,
    ) -> Self {
        Self {
            state: State::Gated { body, budget, side },
            guard,
        }
    }

    /// No body: the status is in the headers.
    pub(crate) fn empty(guard: Option<InFlightGuard>) -> Self {
        Self {
            state: State::Empty,
            guard,
        }
    }
}

impl<B> Body for GrpcBody<B>
where
    B: Body,
    B::Data: Buf,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let mut state = this.state;
        let outcome = match state.as_mut().project() {
            StateProj::Plain(body) => return body.poll_frame(cx).map_err(Into::into),
            StateProj::Empty => return Poll::Ready(None),
            StateProj::Gated { body, budget, side } => {
                match ready!(body.poll_with(cx, |body, cx| body.poll_frame(cx))) {
                    Ok(Some(Ok(frame)))
                        if frame
                            .trailers_ref()
                            .is_some_and(|trailers| is_the_deadlines(trailers, *side)) =>
                    {
                        Expired::Fail(budget.exceeded())
                    }
                    Ok(Some(Err(_))) if side.client_past_sent() => Expired::Fail(budget.exceeded()),
                    Ok(frame) => return Poll::Ready(frame.map(|frame| frame.map_err(Into::into))),
                    Err(_) if *side == Side::Server => Expired::End(budget.exceeded()),
                    Err(_) => Expired::Fail(budget.exceeded()),
                }
            }
        };
        // The deadline passed: drop the inner body before saying so.
        match outcome {
            Expired::End(status) => {
                tracing::warn!(
                    status = status.message(),
                    "grpc deadline exceeded while streaming the response",
                );
                let mut trailers = HeaderMap::new();
                // A status timebox makes has a valid message; nothing to lose.
                let _ = status.add_header(&mut trailers);
                state.set(State::Empty);
                *this.guard = None;
                Poll::Ready(Some(Ok(Frame::trailers(trailers))))
            }
            Expired::Fail(status) => {
                state.set(State::Empty);
                Poll::Ready(Some(Err(Box::new(status))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.state {
            State::Plain(body) => body.is_end_stream(),
            State::Gated { body, .. } => body.get_ref().is_end_stream(),
            State::Empty => true,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.state {
            State::Plain(body) => body.size_hint(),
            State::Gated { body, .. } => body.get_ref().size_hint(),
            State::Empty => SizeHint::with_exact(0),
        }
    }
}

/// How a body ends when its deadline passes (or, on the client, when the
/// peer says it passed).
enum Expired {
    /// Server: with trailers carrying the status.
    End(Status),
    /// Client: with the status as the read's error.
    Fail(Status),
}

/// Client side: whether the status in `headers` (a Trailers-Only head,
/// or trailers) is the deadline's: `DEADLINE_EXCEEDED` from the peer, or a
/// `CANCELLED` that came once the `grpc-timeout` sent had run out. Either is reported as
/// timebox's own deadline status, whose source makes
/// [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded) hold.
pub(crate) fn is_the_deadlines(headers: &HeaderMap, side: Side) -> bool {
    if side == Side::Server {
        return false;
    }
    let Some(code) = headers.get(Status::GRPC_STATUS) else {
        return false;
    };
    match Code::from_bytes(code.as_bytes()) {
        Code::DeadlineExceeded => true,
        Code::Cancelled => side.client_past_sent(),
        _ => false,
    }
}
