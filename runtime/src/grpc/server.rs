//! The server side: every call under its deadline, and shutdown's refusal.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderMap, Request, Response, Uri};
use pin_project::pin_project;
use tokio::time::Instant;
use tonic::Status;
use tower_service::Service;

use crate::admission::RouteChecks;
use crate::config::{Config, MethodTimeout};
use crate::deadline::{trusted_value, Deadline, Format, Formats, Gated, Start};
use crate::entropy::Entropy;
use crate::observe::{
    noting, owner_tells, BoundedLabels, Event, Label, Observers, ShedReason, Stage,
};
use crate::shutdown::{Shutdown, Unanswered};

use super::body::GrpcBody;
use super::counted::Counted;
use super::learn::Learn;
use super::side::{Side, Told};
use super::status::{self, Budget, Origin};

/// The most methods the events name one by one; later ones are `other`.
const MAX_ROUTES: usize = 256;

/// How long before the layer reads the clock a `grpc-timeout` counts from.
///
/// tonic puts a timer of its own on every call that carries the header,
/// started in its own service as the layers' `call`s return, and answers
/// `CANCELLED` ("Timeout expired") if that timer fires while the call is
/// still going. Counted from one tick of tokio's timer earlier, the
/// layer's deadline is never later than tonic's, also when a layer before
/// it puts off calling on, into its future, by less than that (see
/// [`GrpcDeadlineLayer::server`]), so a call past its deadline ends with
/// the layer's `DEADLINE_EXCEEDED`.
///
/// [`GrpcDeadlineLayer::server`]: super::GrpcDeadlineLayer::server
const AHEAD_OF_TONIC: Duration = Duration::from_millis(1);

/// What the server layer knows: the deadlines of `[server.grpc]` and the
/// shutdown it answers for.
#[derive(Debug, Clone)]
pub(crate) struct ServerSettings {
    pub(crate) default: Option<Duration>,
    pub(crate) methods: HashMap<Box<str>, MethodRule>,
    /// The HTTP deadline headers trusted besides `grpc-timeout`.
    pub(crate) inbound: Formats,
    pub(crate) shutdown: Option<Shutdown>,
    pub(crate) entropy: Entropy,
    pub(crate) observers: Observers,
    /// The `route` values of the events: the methods named in
    /// `server.grpc.methods`; every other path, which a caller may make up,
    /// is `other`.
    pub(crate) routes: Arc<BoundedLabels>,
    /// The deadline check (A1) of each method, by full name, made at the
    /// method's first success: a path a caller made up never answers one, so
    /// it takes none of the table's places. `None` when the check is off.
    pub(crate) checks: Option<Arc<RouteChecks>>,
}

/// A method's own rule.
#[derive(Debug, Clone)]
pub(crate) enum MethodRule {
    Timeout(Duration, Arc<str>),
    Off,
}

impl ServerSettings {
    /// A call's watch for being dropped before its answer, when the layer
    /// answers for a shutdown (whose count says what is in flight).
    fn unanswered(&self) -> Option<Unanswered> {
        (self.shutdown.as_ref()).map(|shutdown| Unanswered::new(shutdown, &self.observers))
    }

    pub(crate) fn new(config: &Config) -> Self {
        let grpc = &config.server.grpc;
        let methods = grpc
            .methods
            .iter()
            .map(|(name, timeout)| {
                let rule = match *timeout {
                    MethodTimeout::Millis(ms) => {
                        MethodRule::Timeout(Duration::from_millis(ms), Arc::from(name.as_str()))
                    }
                    MethodTimeout::Off => MethodRule::Off,
                };
                (Box::from(name.as_str()), rule)
            })
            .collect();
        Self {
            default: grpc.default_timeout(),
            methods,
            inbound: Formats::trusted(&config.server.timeouts).without(Format::GrpcTimeout),
            shutdown: None,
            entropy: Entropy::from_os(),
            observers: config.observers.clone(),
            routes: Arc::new(BoundedLabels::new(MAX_ROUTES)),
            checks: RouteChecks::new(&config.server.admission, MAX_ROUTES).map(Arc::new),
        }
    }

    /// The `route` value of a call to `path`, when someone listens.
    fn route(&self, path: &str) -> Option<Label> {
        self.observers.is_listening().then(|| {
            if self.methods.contains_key(path) {
                self.routes.of(path)
            } else {
                self.routes.other()
            }
        })
    }

    /// The call's budget: the earliest of what its headers and the config
    /// say, with the `grpc-timeout` it carries; `None` when nothing does.
    fn budget(&self, path: &str, headers: &HeaderMap) -> Option<(Budget, Option<Duration>)> {
        let configured = match self.methods.get(path) {
            Some(MethodRule::Timeout(length, name)) => {
                Some((*length, Origin::Method(Arc::clone(name))))
            }
            Some(MethodRule::Off) => None,
            None => self.default.map(|length| (length, Origin::Default)),
        };
        let grpc_timeout = trusted_value(Format::GrpcTimeout, headers);
        let inbound = grpc_timeout.map(|length| (length, Origin::GrpcTimeout));
        // `grpc-timeout` is read once, above, whether or not it is listed.
        let header = self
            .inbound
            .without(Format::GrpcTimeout)
            .earliest(headers)
            .map(|(length, format)| (length, Origin::Header(format)));
        [inbound, header, configured]
            .into_iter()
            .flatten()
            .min_by_key(|(length, _)| *length)
            .map(|(length, origin)| (Budget { length, origin }, grpc_timeout))
    }
}

/// The service of [`GrpcDeadlineLayer::server`](super::GrpcDeadlineLayer::server).
#[derive(Debug, Clone)]
pub struct GrpcServerDeadline<S> {
    pub(crate) inner: S,
    pub(crate) settings: Arc<ServerSettings>,
}

impl<S> GrpcServerDeadline<S> {
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

impl<S, B, R> Service<Request<B>> for GrpcServerDeadline<S>
where
    S: Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<GrpcBody<R>>;
    type Error = S::Error;
    type Future = GrpcServerFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let settings = &*self.settings;
        let counted = match &settings.shutdown {
            None => None,
            Some(shutdown) => {
                // Counted before the token is read, as `ShutdownGate` does.
                let guard = shutdown.in_flight().enter();
                if shutdown.token().is_cancelled() {
                    drop(guard);
                    // A simulation's app puts its own random source on requests.
                    settings.observers.emit(|| Event::RequestShed {
                        reason: ShedReason::ShuttingDown,
                        route: settings.route(req.uri().path()),
                    });
                    let entropy = req
                        .extensions()
                        .get::<Entropy>()
                        .unwrap_or(&settings.entropy);
                    return GrpcServerFuture::answered(status::shutting_down(entropy), None);
                }
                let extensions = req.extensions_mut();
                extensions.insert(shutdown.token());
                extensions.insert(shutdown.drain_token());
                Some(Counted::new(
                    guard,
                    shutdown.drain_token(),
                    shutdown.finished_token(),
                    settings.observers.clone(),
                ))
            }
        };
        // A1: each method learns its service time from every call.
        let check = (settings.checks.as_ref()).and_then(|checks| checks.find(req.uri().path()));
        let start = Instant::now();
        let learn = (settings.checks.as_ref())
            .map(|checks| Learn::new(check.as_ref(), checks, req.uri(), start));
        let Some((budget, grpc_timeout)) = settings.budget(req.uri().path(), req.headers()) else {
            // Not judged, but one of the method's calls for the cap.
            if let Some(check) = &check {
                check.count(start);
            }
            return GrpcServerFuture {
                state: CallState::Passthrough(self.inner.call(req)),
                counted,
                learn,
                unanswered: settings.unanswered(),
            };
        };
        let route = settings.route(req.uri().path());
        settings.observers.emit(|| Event::DeadlineSet {
            source: budget.origin.source(),
            budget: budget.length,
            route: route.clone(),
        });
        let told = Told {
            observers: settings.observers.clone(),
            route,
        };
        let deadline = deadline_of(start, &budget, grpc_timeout);
        if deadline.instant() <= start {
            // Out of time on arrival (no time, or a `grpc-timeout` no longer
            // than tonic's lead): the handler never runs.
            let status = expired(req.uri(), &budget, &told, Stage::Admission);
            return GrpcServerFuture::answered(status, counted);
        }
        // A1: a call with less time than its method takes is not started.
        if let Some(check) = &check {
            let path = req.uri().path();
            let refused = check.judge(
                budget.length,
                start,
                path,
                || told.route.clone(),
                &told.observers,
                || {},
            );
            if let Some(refused) = refused {
                return GrpcServerFuture::answered(status::deadline_too_short(&refused), counted);
            }
        }
        let uri = req.uri().clone();
        let future = deadline.sync_scope(|| self.inner.call(req));
        GrpcServerFuture {
            state: CallState::Bounded {
                future: Gated::new(Start::At(deadline), future),
                budget: Some(budget),
                uri,
                told,
                waiting: None,
            },
            counted,
            learn,
            unanswered: settings.unanswered(),
        }
    }
}

/// The deadline of a call that started at `start` with `budget`: never
/// later than its `grpc-timeout` counted [`AHEAD_OF_TONIC`], where tonic's
/// own timer for it started.
fn deadline_of(start: Instant, budget: &Budget, grpc_timeout: Option<Duration>) -> Deadline {
    let own = Deadline::after_start(start, budget.length);
    let Some(grpc_timeout) = grpc_timeout else {
        return own;
    };
    let tonics_start = start.checked_sub(AHEAD_OF_TONIC).unwrap_or(start);
    own.min(Deadline::after_start(tonics_start, grpc_timeout))
}

/// Response future of [`GrpcServerDeadline`].
#[pin_project(project = GrpcServerFutureProj)]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct GrpcServerFuture<F> {
    #[pin]
    state: CallState<F>,
    /// Until the answer's head, with a shutdown: a call dropped before it
    /// is told as cancelled. Before `counted`, so that it is told while the
    /// call still counts in flight.
    unanswered: Option<Unanswered>,
    /// The call's place in the in-flight count and its drain, which the
    /// response body takes over.
    counted: Option<Counted>,
    learn: Option<Learn>,
}

#[pin_project(project = CallStateProj)]
#[derive(Debug)]
// The large variants hold the inner future; boxing it would allocate per call.
#[allow(clippy::large_enum_variant)]
enum CallState<F> {
    /// No deadline: the call as it is.
    Passthrough(#[pin] F),
    /// The call, gated by its deadline.
    Bounded {
        #[pin]
        future: Gated<F>,
        budget: Option<Budget>,
        uri: Uri,
        told: Told,
        /// Where the method said it was left waiting at its last poll (an
        /// outbound call, a pool): a deadline then is told at that stage.
        waiting: Option<Stage>,
    },
    /// Answered without the inner service, or after dropping it.
    Answered(Option<Status>),
}

impl<F> GrpcServerFuture<F> {
    fn answered(status: Status, counted: Option<Counted>) -> Self {
        Self {
            state: CallState::Answered(Some(status)),
            counted,
            learn: None,
            unanswered: None,
        }
    }
}

impl<F, R, E> Future for GrpcServerFuture<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = Result<Response<GrpcBody<R>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let polled = poll_call(&mut this, cx);
        if polled.is_ready() {
            if let Some(unanswered) = this.unanswered.take() {
                unanswered.answered();
            }
        }
        polled
    }
}

/// Polls the call to its answer's head.
fn poll_call<F, R, E>(
    this: &mut GrpcServerFutureProj<'_, F>,
    cx: &mut Context<'_>,
) -> Poll<Result<Response<GrpcBody<R>>, E>>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    let status = match this.state.as_mut().project() {
        CallStateProj::Passthrough(future) => match future.poll(cx) {
            Poll::Pending if ended(this.counted, cx) => ended_by_shutdown(),
            Poll::Pending => return Poll::Pending,
            Poll::Ready(response) => {
                let response = response?;
                let learn = learning(this.learn.take(), response.headers());
                let counted = this.counted.take();
                return Poll::Ready(Ok(
                    response.map(|body| GrpcBody::plain(body, counted).learning(learn))
                ));
            }
        },
        CallStateProj::Bounded {
            mut future,
            budget,
            uri,
            told,
            waiting,
        } => match noting(|| future.as_mut().poll(cx)) {
            (Poll::Pending, seen) => {
                *waiting = seen.waiting;
                if !ended(this.counted, cx) {
                    return Poll::Pending;
                }
                ended_by_shutdown()
            }
            (Poll::Ready(polled), seen) => match polled {
                Ok(result) => {
                    let (parts, body) = result?.into_parts();
                    let learn = learning(this.learn.take(), &parts.headers);
                    let budget = budget.take().expect("polled after completion");
                    let body = future.hand_over(body);
                    let told = told.clone();
                    let body =
                        GrpcBody::gated(body, budget, Side::Server, told, this.counted.take())
                            .learning(learn);
                    return Poll::Ready(Ok(Response::from_parts(parts, body)));
                }
                Err(_) => {
                    let budget = budget.as_ref().expect("polled after completion");
                    let stage = seen.waiting.or(*waiting).unwrap_or(Stage::Handler);
                    expired(uri, budget, told, stage)
                }
            },
        },
        CallStateProj::Answered(status) => status.take().expect("polled after completion"),
    };
    // The handler's future (its guards, its outbound calls) is dropped
    // before the answer leaves; a deadline that passed is told above,
    // once.
    owner_tells(|| this.state.set(CallState::Answered(None)));
    let counted = this.counted.take();
    Poll::Ready(Ok(status.into_http().map(|()| GrpcBody::empty(counted))))
}

/// What is left to learn once a response's head is out: nothing when the
/// head ends the call (Trailers-Only, learnt now), else `learn`, for the
/// body to learn from at the call's end.
fn learning(learn: Option<Learn>, head: &HeaderMap) -> Option<Learn> {
    let learn = learn?;
    if Learn::ends_the_call(head) {
        learn.ended(head);
        return None;
    }
    Some(learn)
}

/// Whether the shutdown a call counts in has run its sequence to the end,
/// told as the call's cancellation (O1); when it has not, the task is woken
/// when it does.
fn ended(counted: &mut Option<Counted>, cx: &mut Context<'_>) -> bool {
    let ended = counted
        .as_mut()
        .is_some_and(|counted| counted.poll_ended(cx));
    if let (true, Some(counted)) = (ended, counted.as_ref()) {
        counted.tell_cancelled();
    }
    ended
}

/// `UNAVAILABLE` for a call still waiting for its answer when the
/// shutdown's sequence ended, said at `debug` (the sequence's own lines
/// count what it ended): its handler is dropped, as `serve` closes the
/// connections still open then, and tonic's graceful shutdown has no call
/// left to wait for.
fn ended_by_shutdown() -> Status {
    tracing::debug!("grpc call ended unanswered: the shutdown's drain is over");
    Status::unavailable("the server is shutting down: the call was ended when its drain was over")
}

/// `DEADLINE_EXCEEDED` for the call to `uri`, said in the log and told.
fn expired(uri: &Uri, budget: &Budget, told: &Told, stage: Stage) -> Status {
    told.exceeded(stage);
    tracing::warn!(
        method = uri.path(),
        deadline_ms = budget.length.as_millis(),
        origin = %budget.origin,
        "grpc deadline exceeded",
    );
    budget.exceeded()
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::task::Poll;

    use tower::{Layer, ServiceExt};

    use crate::config::Config;
    use crate::grpc::GrpcDeadlineLayer;
    use crate::observe::{waiting_now, Event, Recording, Stage};

    /// O1: a method's deadline that passes while it waits on an outbound
    /// call (its client said so) is told at the `outbound` stage, once.
    #[tokio::test(start_paused = true)]
    async fn a_deadline_passing_while_the_method_waits_outbound_is_told_at_that_stage() {
        let recording = Recording::new();
        let mut config = Config::default().observed_by(recording.clone());
        config.server.grpc.default_timeout_ms = Some(100);
        let method = tower::service_fn(|_: http::Request<()>| {
            std::future::poll_fn(|_| {
                waiting_now(Stage::Outbound);
                Poll::<Result<http::Response<()>, Infallible>>::Pending
            })
        });
        let server = GrpcDeadlineLayer::server(&config).layer(method);
        let request = http::Request::post("http://in-memory/fleet.Relay/Wait")
            .body(())
            .expect("a valid request");
        let response = server.oneshot(request).await.expect("answered");
        assert_eq!(response.headers()["grpc-status"], "4");
        let exceeded: Vec<Event> = recording
            .events()
            .into_iter()
            .filter(|event| matches!(event, Event::DeadlineExceeded { .. }))
            .collect();
        assert_eq!(
            exceeded,
            [Event::DeadlineExceeded {
                stage: Stage::Outbound,
                route: Some("other".into()),
            }]
        );
    }
}
