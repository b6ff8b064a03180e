//! The client side: what is left of the caller's deadline goes out with
//! the call, and the call ends when it does.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use http::{Request, Response};
use pin_project::pin_project;
use tokio::time::{sleep_until, Instant, Sleep};
use tonic::Status;
use tower_service::Service;

use crate::config::Config;
use crate::deadline::{Deadline, Format, Formats, Gated, Start};

use super::body::{is_the_deadlines, BoxError, GrpcBody};
use super::side::{Side, Told};
use super::status::{deadline_status, peers_deadline, Budget, Origin};
use super::timeout;
use crate::observe::{waiting_now, Stage};

/// What the client layer knows.
#[derive(Debug, Clone)]
pub(crate) struct ClientSettings {
    /// The HTTP client's deadline headers (`http.client.deadline_headers`
    /// when `send_deadline_header` is on), besides `grpc-timeout`, which
    /// every call carries.
    pub(crate) written: Formats,
    /// Who hears of a call's deadline passing on its way out.
    pub(crate) told: Told,
}

impl ClientSettings {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            written: Formats::written(&config.http.client).without(Format::GrpcTimeout),
            told: Told {
                observers: config.observers.clone(),
                route: None,
            },
        }
    }
}

/// The service of [`GrpcDeadlineLayer::client`](super::GrpcDeadlineLayer::client).
///
/// The wait for the inner service to be ready (a tonic `Channel` whose
/// request buffer is full, while its connection is down) counts against
/// the caller's deadline too: once the deadline passes, the service says
/// it is ready, and the call it is asked for fails at once with
/// `DEADLINE_EXCEEDED` without reaching the inner service.
///
/// What is left is written into `grpc-timeout` when the call is handed to
/// the inner service. A `Channel` may still hold it in its buffer after
/// that, while it connects or reconnects, and the host then counts the
/// value from the call's arrival: its deadline ends later than the
/// caller's by that wait (grpc-go writes the value as it writes the
/// headers, on a connection already up). The caller still stops on time;
/// the host may work on for as long as the call waited. A channel made
/// with `connect()` rather than `connect_lazy()` and kept up between calls
/// holds a call there only while it reconnects, while the endpoint's
/// `concurrency_limit` or `rate_limit` (below the buffer) holds it, or
/// while the connection has as many streams open as the server allows.
#[derive(Debug)]
pub struct GrpcClientDeadline<S> {
    inner: S,
    settings: Arc<ClientSettings>,
    /// The caller's deadline, while `inner` is not ready.
    waiting: Option<Pin<Box<Sleep>>>,
    /// Said ready because the caller's deadline passed, not because
    /// `inner` is: the next call must not reach it.
    expired: bool,
}

impl<S: Clone> Clone for GrpcClientDeadline<S> {
    fn clone(&self) -> Self {
        Self::new(self.inner.clone(), Arc::clone(&self.settings))
    }
}

impl<S> GrpcClientDeadline<S> {
    pub(crate) fn new(inner: S, settings: Arc<ClientSettings>) -> Self {
        Self {
            inner,
            settings,
            waiting: None,
            expired: false,
        }
    }

    /// A reference to the inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// A mutable reference to the inner service.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B, R> Service<Request<B>> for GrpcClientDeadline<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<GrpcBody<R>>;
    type Error = BoxError;
    type Future = GrpcClientFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.expired {
            // Said ready for a deadline that has passed: still so, unless
            // whoever asks now has another (the caller asked, then called
            // nothing).
            if Deadline::current().is_some_and(Deadline::is_expired) {
                return Poll::Ready(Ok(()));
            }
            self.expired = false;
        }
        if let Poll::Ready(ready) = self.inner.poll_ready(cx) {
            self.waiting = None;
            return Poll::Ready(ready.map_err(Into::into));
        }
        // The request waits on the channel: a request deadline that passes
        // meanwhile is told at the `outbound` stage.
        waiting_now(Stage::Outbound);
        let Some(deadline) = Deadline::current() else {
            self.waiting = None;
            return Poll::Pending;
        };
        let until = deadline.instant();
        let waiting = self
            .waiting
            .get_or_insert_with(|| Box::pin(sleep_until(until)));
        if waiting.deadline() != until {
            waiting.as_mut().reset(until);
        }
        ready!(waiting.as_mut().poll(cx));
        self.waiting = None;
        self.expired = true;
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if std::mem::take(&mut self.expired) {
            // Its deadline passed while the inner service was not ready.
            self.settings.told.exceeded(Stage::Outbound);
            let status = deadline_status(
                "the caller's deadline passed while the channel was not ready; the call was \
                 not sent"
                    .to_owned(),
            );
            return GrpcClientFuture {
                state: CallState::Failed(Some(status)),
            };
        }
        // One clock reading for what is left and for when what is sent ends.
        let now = Instant::now();
        let left =
            Deadline::current().map(|deadline| deadline.instant().saturating_duration_since(now));
        // A deadline the caller set on the request, as a `grpc-timeout` or
        // in a format the client writes, is the call's when it is shorter
        // than the current one, or when none is current (C3). It is kept
        // as it was set, and the other headers say the same time; either
        // way exactly one value of each goes out. It gates the call and its
        // response, and a status names it.
        let read = self.settings.written.with(Format::GrpcTimeout);
        let callers = read
            .set_by_caller(req.headers())
            .filter(|&(callers, _, _)| left.is_none_or(|left| callers <= left));
        let (sent, kept, budget) = match (callers, left) {
            (Some((callers, format, value)), _) => (
                callers,
                Some((format, value)),
                Budget {
                    length: callers,
                    origin: Origin::Header(format),
                },
            ),
            (None, Some(left)) => {
                let budget = Budget {
                    length: left,
                    origin: Origin::Caller,
                };
                // What `grpc-timeout` can say of it, never more.
                let Some(sent) = timeout::encode(left).and_then(|ours| timeout::parse(&ours))
                else {
                    // Out of time: nothing is sent.
                    self.settings.told.exceeded(Stage::Outbound);
                    return GrpcClientFuture {
                        state: CallState::Failed(Some(budget.exceeded())),
                    };
                };
                (sent, None, budget)
            }
            (None, None) => {
                return GrpcClientFuture {
                    state: CallState::Passthrough(self.inner.call(req)),
                };
            }
        };
        if sent.is_zero() {
            // The deadline the caller set on the request has passed:
            // nothing is sent either, and the status names that header.
            self.settings.told.exceeded(Stage::Outbound);
            return GrpcClientFuture {
                state: CallState::Failed(Some(budget.exceeded())),
            };
        }
        let deadline = Deadline::after_start(now, budget.length);
        let headers = req.headers_mut();
        read.write(sent, headers);
        if let Some((format, value)) = kept {
            headers.insert(format.name(), value);
        }
        let side = Side::Client {
            sent: Deadline::after_start(now, sent),
        };
        GrpcClientFuture {
            state: CallState::Bounded {
                future: Gated::new(Start::At(deadline), self.inner.call(req)),
                side,
                budget: Some(budget),
                told: self.settings.told.clone(),
            },
        }
    }
}

/// Response future of [`GrpcClientDeadline`].
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct GrpcClientFuture<F> {
    #[pin]
    state: CallState<F>,
}

#[pin_project(project = CallStateProj)]
#[derive(Debug)]
// The large variants hold the inner future; boxing it would allocate per call.
#[allow(clippy::large_enum_variant)]
enum CallState<F> {
    /// No deadline current, and none set on the request: the call as it
    /// is.
    Passthrough(#[pin] F),
    /// The call, gated by the caller's deadline.
    Bounded {
        #[pin]
        future: Gated<F>,
        side: Side,
        budget: Option<Budget>,
        told: Told,
    },
    /// Failed without sending, or after the deadline passed.
    Failed(Option<Status>),
}

impl<F, R, E> Future for GrpcClientFuture<F>
where
    F: Future<Output = Result<Response<R>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<GrpcBody<R>>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let status = match this.state.as_mut().project() {
            CallStateProj::Passthrough(future) => {
                let response = ready!(future.poll(cx)).map_err(Into::into)?;
                return Poll::Ready(Ok(response.map(|body| GrpcBody::plain(body, None))));
            }
            CallStateProj::Bounded {
                mut future,
                side,
                budget,
                told,
            } => {
                let side = *side;
                let Poll::Ready(polled) = future.as_mut().poll(cx) else {
                    // A request deadline that passes meanwhile is told at
                    // the `outbound` stage.
                    waiting_now(Stage::Outbound);
                    return Poll::Pending;
                };
                match polled {
                    // A Trailers-Only answer that is the deadline's (see
                    // `is_the_deadlines`) becomes timebox's deadline status.
                    Ok(Ok(response)) if !is_the_deadlines(response.headers(), side) => {
                        let budget = budget.take().expect("polled after completion");
                        let (parts, body) = response.into_parts();
                        let told = told.clone();
                        let body =
                            GrpcBody::gated(future.hand_over(body), budget, side, told, None);
                        return Poll::Ready(Ok(Response::from_parts(parts, body)));
                    }
                    // The peer's own deadline passed, not the caller's: its
                    // status as it said it (no deadline of ours to tell).
                    Ok(Ok(response)) if !side.client_near_sent() => {
                        peers_deadline(response.headers())
                    }
                    // A reset stream, a dropped connection or tonic's own
                    // timeout once the time sent has run out is the
                    // deadline too.
                    Ok(Err(err)) if !side.client_past_sent() => {
                        return Poll::Ready(Err(err.into()));
                    }
                    Ok(Ok(_) | Err(_)) | Err(_) => {
                        told.exceeded(Stage::Outbound);
                        budget.as_ref().expect("polled after completion").exceeded()
                    }
                }
            }
            CallStateProj::Failed(status) => status.take().expect("polled after completion"),
        };
        this.state.set(CallState::Failed(None));
        Poll::Ready(Err(Box::new(status)))
    }
}
