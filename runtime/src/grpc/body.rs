//! [`GrpcBody`]: a response body under the call's deadline.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Buf;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project::pin_project;
use tonic::{Code, Status};

use crate::deadline::Gated;
use crate::observe::{owner_tells, waiting_now, Stage};

use super::counted::Counted;
use super::learn::Learn;
use super::side::{Side, Told};
use super::status::{peers_deadline, Budget};

/// A boxed error, as tonic's services and bodies carry them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The response body of a call under [`GrpcDeadlineLayer`](super::GrpcDeadlineLayer).
///
/// A gRPC deadline is for the whole call, so the body's frames are polled
/// under the same gate as the service's future, streamed responses
/// included. When the deadline passes mid-body the inner body is dropped
/// at its next poll; on the server the body then ends with trailers saying
/// `DEADLINE_EXCEEDED`, and on the client reading it fails with that
/// status. A body that answers on its own (a refused or timed-out call)
/// is empty: the status is in the response's headers (Trailers-Only).
///
/// That next poll is hyper's to make: on a server whose client has stopped
/// reading (its HTTP/2 window is closed), hyper holds the frame it has and
/// polls the body no more, so the deadline ends the stream only once the
/// client reads again or its connection closes. Bound such clients at the
/// connection (tonic's `http2_keepalive_interval` and
/// `http2_keepalive_timeout` close a connection whose peer has gone; one
/// that is alive and reads nothing is the client's to end).
///
/// On a server with a [`Shutdown`](crate::shutdown::Shutdown), a body still
/// streaming at phase 2 (when remaining streams are told to end) ends with
/// trailers saying `UNAVAILABLE` at its first poll that finds no frame
/// ready (a body waiting for its next frame is woken for it), or once it
/// has sent two more frames. Those two carry a unary answer whole (its
/// message, then its own trailers), so a call that finished its work
/// during phase 2 says how it went, as an HTTP response does then; a
/// stream whose frames are always ready ends all the same. A gRPC client
/// does not retry such an `UNAVAILABLE` on its own: the response's head
/// has gone out, which commits the call. A stream whose client has stopped
/// reading is not polled (HTTP/2 flow control holds it), so it ends only
/// when its connection does.
#[pin_project]
#[derive(Debug, Default)]
pub struct GrpcBody<B> {
    #[pin]
    state: State<B>,
    /// The call's place in its shutdown (server side).
    counted: Option<Counted>,
    /// The method's learning of its service time, at the call's end
    /// (server side, A1).
    learn: Option<Learn>,
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
        told: Told,
    },
    /// Nothing (more) to send.
    #[default]
    Empty,
}

impl<B> GrpcBody<B> {
    /// `body` as it is.
    pub(crate) fn plain(body: B, counted: Option<Counted>) -> Self {
        Self {
            state: State::Plain(body),
            counted,
            learn: None,
        }
    }

    /// `body`, gated as the call's head was (see [`Gated::hand_over`]).
    pub(crate) fn gated(
        body: Gated<B>,
        budget: Budget,
        side: Side,
        told: Told,
        counted: Option<Counted>,
    ) -> Self {
        Self {
            state: State::Gated {
                body,
                budget,
                side,
                told,
            },
            counted,
            learn: None,
        }
    }

    /// No body: the status is in the headers.
    pub(crate) fn empty(counted: Option<Counted>) -> Self {
        Self {
            state: State::Empty,
            counted,
            learn: None,
        }
    }

    /// The body, learning the call's latency for its method when it ends
    /// with `OK` in its trailers.
    pub(crate) fn learning(mut self, learn: Option<Learn>) -> Self {
        self.learn = learn;
        self
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
        // G1: at phase 2 a stream ends, also one whose frames are always
        // ready, once it has sent what a unary answer needs.
        let drained = this.counted.as_ref().is_some_and(Counted::is_drained);
        if this
            .counted
            .as_ref()
            .is_some_and(|counted| counted.drain_due(drained))
        {
            return drained_end(state, this.counted);
        }
        let polled = match state.as_mut().project() {
            StateProj::Plain(body) => body.poll_frame(cx).map_err(Into::into),
            StateProj::Empty => return Poll::Ready(None),
            StateProj::Gated {
                body,
                budget,
                side,
                told,
            } => match body.poll_with(cx, |body, cx| body.poll_frame(cx)) {
                Poll::Pending => {
                    // A client's body waits on its peer: a request deadline
                    // that passes meanwhile is told at the `outbound` stage.
                    if matches!(side, Side::Client { .. }) {
                        waiting_now(Stage::Outbound);
                    }
                    Poll::Pending
                }
                Poll::Ready(Ok(Some(Ok(frame))))
                    if frame
                        .trailers_ref()
                        .is_some_and(|trailers| is_the_deadlines(trailers, *side)) =>
                {
                    let how = match frame.trailers_ref() {
                        // The peer's own deadline passed, not the caller's.
                        Some(trailers) if !side.client_near_sent() => {
                            Expired::Fail(peers_deadline(trailers))
                        }
                        _ => deadline_passed(budget, *side, told),
                    };
                    return end(state, this.counted, how);
                }
                Poll::Ready(Ok(Some(Err(_)))) if side.client_past_sent() => {
                    let how = deadline_passed(budget, *side, told);
                    return end(state, this.counted, how);
                }
                Poll::Ready(Ok(frame)) => Poll::Ready(frame.map(|frame| frame.map_err(Into::into))),
                Poll::Ready(Err(_)) => {
                    let how = deadline_passed(budget, *side, told);
                    return end(state, this.counted, how);
                }
            },
        };
        // G1: a stream still waiting for its next frame at phase 2 ends.
        if polled.is_pending()
            && this
                .counted
                .as_mut()
                .is_some_and(|counted| counted.poll_drained(cx))
        {
            return drained_end(state, this.counted);
        }
        let ended = match &polled {
            Poll::Ready(Some(Ok(frame))) => match frame.trailers_ref() {
                Some(trailers) => {
                    if let Some(learn) = this.learn.take() {
                        learn.ended(trailers);
                    }
                    true
                }
                None => {
                    if let Some(counted) = this.counted.as_mut().filter(|_| drained) {
                        counted.sent_since_drain += 1;
                    }
                    false
                }
            },
            Poll::Ready(None) => true,
            _ => false,
        };
        // Trailers, or the inner body's end, end the body: nothing follows,
        // not even the drain's (the call is done, and no longer in flight).
        if ended {
            state.set(State::Empty);
            *this.counted = None;
        }
        polled
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

/// How a body ends before its inner body does: its deadline passed (or,
/// on the client, the peer says it passed), or the server drains.
enum Expired {
    /// Server: with trailers carrying the status.
    End(Status),
    /// Client: with the status as the read's error.
    Fail(Status),
}

/// How a body ends when the call's deadline passed while it streamed,
/// told (O1) at the `stream` stage on the server and as the outbound
/// call's on the client.
fn deadline_passed(budget: &Budget, side: Side, told: &Told) -> Expired {
    let status = budget.exceeded();
    match side {
        Side::Server => {
            told.exceeded(Stage::Stream);
            Expired::End(status)
        }
        Side::Client { .. } => {
            told.exceeded(Stage::Outbound);
            Expired::Fail(status)
        }
    }
}

/// Ends a server's body at phase 2 with `UNAVAILABLE`. Said at `debug`:
/// phase 2's own `info!` line counts what it ends, and a line per stream
/// would flood a shutdown.
fn drained_end<B, D>(
    state: Pin<&mut State<B>>,
    counted: &mut Option<Counted>,
) -> Poll<Option<Result<Frame<D>, BoxError>>> {
    tracing::debug!("grpc stream ended by the drain (shutdown phase 2)");
    if let Some(counted) = counted.as_ref() {
        counted.tell_cancelled();
    }
    let status =
        Status::unavailable("the server is shutting down: the stream was ended at the drain");
    end(state, counted, Expired::End(status))
}

/// Ends the body: drops the inner body (and, on the server, the call's
/// place in the in-flight count) before saying how it ended.
fn end<B, D>(
    mut state: Pin<&mut State<B>>,
    counted: &mut Option<Counted>,
    how: Expired,
) -> Poll<Option<Result<Frame<D>, BoxError>>> {
    // What the body still ran (an outbound call between frames) leaves
    // the telling of a deadline to it.
    owner_tells(|| state.set(State::Empty));
    match how {
        Expired::End(status) => {
            if status.code() == Code::DeadlineExceeded {
                tracing::warn!(
                    status = status.message(),
                    "grpc deadline exceeded while streaming the response",
                );
            }
            let mut trailers = HeaderMap::new();
            // A status timebox makes has a valid message; nothing to lose.
            let _ = status.add_header(&mut trailers);
            *counted = None;
            Poll::Ready(Some(Ok(Frame::trailers(trailers))))
        }
        Expired::Fail(status) => Poll::Ready(Some(Err(Box::new(status)))),
    }
}

/// Client side: whether the status in `headers` (a Trailers-Only head,
/// or trailers) is a deadline's: `DEADLINE_EXCEEDED` from the peer, or a
/// `CANCELLED` or `UNAVAILABLE` that came once the `grpc-timeout` sent had
/// run out (a proxy that timed the call out by a header it was sent: an
/// Envoy answers `UNAVAILABLE`, "upstream request timeout", its HTTP 504
/// in gRPC's mapping). Once that time has run out each is reported as
/// timebox's own deadline status; before, a `DEADLINE_EXCEEDED` is the
/// peer's own deadline, kept as the peer said it. Both have a source that
/// makes [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded)
/// hold.
pub(crate) fn is_the_deadlines(headers: &HeaderMap, side: Side) -> bool {
    if side == Side::Server {
        return false;
    }
    let Some(code) = headers.get(Status::GRPC_STATUS) else {
        return false;
    };
    match Code::from_bytes(code.as_bytes()) {
        Code::DeadlineExceeded => true,
        Code::Cancelled | Code::Unavailable => side.client_past_sent(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use http::HeaderMap;
    use http_body::{Body, Frame};
    use tokio_util::sync::CancellationToken;

    use super::{Counted, GrpcBody};
    use crate::config::Config;
    use crate::observe::{Event, Observers, Recording};
    use crate::registry::CancelReason;
    use crate::shutdown::Shutdown;

    /// A stream whose next message is always ready.
    struct Endless;

    impl Body for Endless {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"tick")))))
        }
    }

    /// A unary answer: its message, then trailers saying `OK`; polled after
    /// them, it would wait, so the answer must end at its trailers.
    #[derive(Default)]
    struct Unary(u8);

    impl Body for Unary {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            self.0 += 1;
            Poll::Ready(match self.0 {
                1 => Some(Ok(Frame::data(Bytes::from_static(b"answer")))),
                2 => {
                    let mut trailers = HeaderMap::new();
                    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                    Some(Ok(Frame::trailers(trailers)))
                }
                _ => return Poll::Pending,
            })
        }
    }

    /// The frames `body` gives until it ends or pends: data as `data`,
    /// trailers as their `grpc-status`.
    fn frames<B: Body<Data = Bytes> + Unpin>(body: &mut B) -> Vec<String> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut frames = Vec::new();
        while let Poll::Ready(Some(frame)) = Pin::new(&mut *body).poll_frame(&mut cx) {
            let Ok(frame) = frame else {
                frames.push("error".to_owned());
                break;
            };
            let trailers: Option<&HeaderMap> = frame.trailers_ref();
            frames.push(match trailers {
                Some(trailers) => format!("grpc-status {:?}", trailers.get("grpc-status")),
                None => "data".to_owned(),
            });
            assert!(frames.len() < 100, "the body never ends: {frames:?}");
        }
        frames
    }

    /// `inner` as a server call's body, counted in a shutdown that is
    /// past phase 2; the shutdown, and what its observer heard.
    fn drained<B>(inner: B) -> (GrpcBody<B>, Shutdown, Recording) {
        let shutdown = Shutdown::new(&Config::default());
        let recording = Recording::new();
        let counted = Counted::new(
            shutdown.in_flight().enter(),
            shutdown.drain_token(),
            CancellationToken::new(),
            Observers::new().with(recording.clone()),
        );
        shutdown.force();
        (GrpcBody::plain(inner, Some(counted)), shutdown, recording)
    }

    #[test]
    fn at_phase_two_a_unary_answer_goes_out_whole_and_nothing_after_it() {
        let (mut body, shutdown, recording) = drained(Unary::default());
        assert_eq!(frames(&mut body), ["data", "grpc-status Some(\"0\")"]);
        assert_eq!(shutdown.in_flight().count(), 0);
        assert_eq!(recording.events(), [], "no call was ended by the drain");
    }

    #[test]
    fn at_phase_two_a_stream_whose_frames_are_always_ready_ends_after_two_more() {
        let (mut body, shutdown, recording) = drained(Endless);
        assert_eq!(
            frames(&mut body),
            ["data", "data", "grpc-status Some(\"14\")"]
        );
        assert_eq!(
            shutdown.in_flight().count(),
            0,
            "the call is no longer counted"
        );
        assert_eq!(
            recording.events(),
            [Event::RequestCancelled {
                reason: CancelReason::Shutdown
            }]
        );
    }
}
