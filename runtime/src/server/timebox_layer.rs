//! [`TimeboxLayer`]: the outer layer of a timebox router.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::extract::MatchedPath;
use axum::response::Response;
use http::{Method, Request};
use pin_project::pin_project;
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use crate::admission::{Acquire, DeadlineCheck, Limiter, Permit, Refusal};
use crate::bounded_map::BoundedMap;
use crate::config::{AdmissionConfig, Config, DeadlineCheck as CheckMode};
use crate::deadline::{Deadline, Formats, Gated, Start};
use crate::entropy::Entropy;
use crate::observe::{DeadlineSource, Event, Observers, ShedReason, Stage};
use crate::problem::{self, DeadlineCancelled, NoWork};

use super::context::RequestContext;
use super::route_deadline::{admit, Answer, Expiry, Learn, Probe, Probed, RouteName, State};

/// The outer timebox layer: the global deadline for every route of a plain
/// axum router, as tower-http's `TimeoutLayer` would be used.
///
/// ```
/// use axum::{routing::get, Router};
/// use timebox::config::Config;
/// use timebox::server::TimeboxLayer;
///
/// let mut config = Config::default();
/// config.server.timeouts.request_timeout_ms = Some(2_000);
/// let app: Router = Router::new()
///     .route("/users", get(|| async { "[]" }))
///     .layer(TimeboxLayer::new(&config));
/// ```
///
/// Each route then runs under `server.timeouts.request_timeout_ms`, as the
/// [module docs](super) describe for the route macros: poll-gated with the
/// deadline current, counted from when the request reaches this layer
/// (after routing, before extraction), shortened by an inbound deadline
/// header when `server.timeouts.accept_deadline_header` is on, and answered
/// with the timeout 503 when it passes. With no global deadline it only
/// notes the request's start and header, for the routes that have a rule of
/// their own.
///
/// A route with a rule of its own keeps it, a longer override and `off`
/// included: one mounted by the route macros
/// ([`Routes::into_router`](super::Routes::into_router)), or wrapped in a
/// [`RouteDeadlineLayer`](super::RouteDeadlineLayer). The layer learns of
/// the rule when the request reaches the route, before the handler runs,
/// and steps aside; the route's rule then counts from the same start. Build
/// both from the same [`Config`]. Until the request reaches the route, the
/// global deadline gates it: a middleware between the two that waits first
/// (an authentication look-up) waits under it, and a request that is still
/// there when it passes gets the global timeout. Observers are told a
/// request's deadline once: its route rule's when one takes over, else the
/// global one, at the first poll when the layer has seen the route answer
/// without a rule before, or else when the request ends.
///
/// One exception: with an inbound deadline header of `0` the layer answers
/// the timeout 503 at once, without polling the route, also when the route's
/// own rule is `off` (it cannot learn the rule without running a plain
/// handler).
///
/// The layer also applies the server's admission (see
/// [the module docs](super#admission)): the concurrency limit of
/// `server.admission.concurrency` for every route under it (one limit per
/// `TimeboxLayer::new`, shared by its clones), and, with a global deadline,
/// the deadline check of plain routes.
///
/// The shutdown gate and the in-flight count are
/// [`ShutdownGate`](super::ShutdownGate)'s, which [`serve`](super::serve())
/// puts around the whole service.
#[derive(Debug, Clone)]
pub struct TimeboxLayer {
    settings: Arc<Settings>,
}

#[derive(Debug, Clone)]
struct Settings {
    global: Option<Duration>,
    inbound: Formats,
    entropy: Entropy,
    observers: Observers,
    /// The concurrency limit (A2) of every route under the layer.
    limiter: Option<Limiter>,
    /// With a global deadline: what the layer learnt of each route, and
    /// the deadline checks (A1) of the plain ones, by method and route
    /// template.
    routes: Option<Arc<RouteKinds>>,
}

impl TimeboxLayer {
    /// The layer for `config`, with a random source seeded by the operating
    /// system.
    #[must_use]
    pub fn new(config: &Config) -> Self {
        let global = config.server.timeouts.request_timeout();
        let admission = &config.server.admission;
        Self {
            settings: Arc::new(Settings {
                global,
                inbound: Formats::trusted(&config.server.timeouts),
                entropy: Entropy::from_os(),
                observers: config.observers.clone(),
                limiter: Limiter::new(admission.concurrency, &admission.queue),
                routes: global.map(|_| Arc::new(RouteKinds::new(admission))),
            }),
        }
    }

    /// Draws `Retry-After` values from `entropy` instead of a fresh source.
    #[must_use]
    pub fn entropy(self, entropy: Entropy) -> Self {
        self.map(|settings| settings.entropy = entropy)
    }

    fn map(self, change: impl FnOnce(&mut Settings)) -> Self {
        let mut settings = Arc::unwrap_or_clone(self.settings);
        change(&mut settings);
        Self {
            settings: Arc::new(settings),
        }
    }
}

impl<S> Layer<S> for TimeboxLayer {
    type Service = TimeboxService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TimeboxService {
            inner,
            settings: Arc::clone(&self.settings),
        }
    }
}

/// The service of [`TimeboxLayer`].
#[derive(Debug, Clone)]
pub struct TimeboxService<S> {
    inner: S,
    settings: Arc<Settings>,
}

impl<S> TimeboxService<S> {
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

impl<S, B, E> Service<Request<B>> for TimeboxService<S>
where
    S: Service<Request<B>, Response = Response, Error = E>,
{
    type Response = Response;
    type Error = E;
    type Future = TimeboxFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let settings = &*self.settings;
        let start = Instant::now();
        let inbound = settings.inbound.earliest(req.headers());
        let entropy = req
            .extensions()
            .get::<Entropy>()
            .unwrap_or(&settings.entropy)
            .clone();
        let (probe, claim) = settings.global.map(|_| Probe::new()).unzip();
        req.extensions_mut().insert(RequestContext {
            start,
            global: settings.global,
            inbound,
            entropy: entropy.clone(),
            claim,
            observers: settings.observers.clone(),
        });
        let route = RouteName::Matched(req.extensions().get::<MatchedPath>().cloned());
        let Some(global) = settings.global else {
            let queue = settings.queue(None, &route, &entropy);
            return TimeboxFuture::new(
                State::passthrough(self.inner.call(req)),
                None,
                queue,
                None,
                entropy,
            );
        };
        // An inbound header can only shorten the deadline.
        let (budget, source) = DeadlineSource::Global.shortened(global, inbound);
        // A request that matched no route has no check.
        let plain = match (&settings.routes, &route) {
            (Some(routes), RouteName::Matched(Some(path))) => {
                routes.get(req.method(), path.as_str())
            }
            _ => None,
        };
        // A deadline already passed (an inbound header of 0) is answered as
        // expired below (S4), not judged too short.
        let judged = plain
            .as_ref()
            .filter(|plain| !budget.is_zero() && plain.is_plain())
            .and_then(|plain| plain.check.as_ref());
        // Whether the request's deadline was told already.
        let told = Cell::new(false);
        if let Some(check) = judged {
            // A plain route's deadline is the global one: a request the
            // check has a verdict on (a refusal, or dark mode's count) is
            // told it was set (O1), before the verdict, as gRPC and the
            // route rules tell it. Any other is told once its route has
            // shown whose deadline it has (below).
            let tell_set = || {
                told.set(true);
                settings.observers.emit(|| Event::DeadlineSet {
                    source: source.clone(),
                    budget,
                    route: route.label(),
                });
            };
            let refused = admit(check, budget, start, &route, &settings.observers, tell_set);
            if let Some(refusal) = refused {
                return TimeboxFuture::new(State::refused(refusal), None, None, None, entropy);
            }
        }
        let deadline = Deadline::after_start(start, budget);
        // A deadline already passed is answered at once (S4): it waits for
        // no slot, and holds none.
        let queue = (!budget.is_zero())
            .then(|| settings.queue(Some(deadline.instant()), &route, &entropy))
            .flatten();
        let expiry = Expiry {
            method: req.method().clone(),
            route,
            budget,
            source,
            start: Some(start),
            entropy: Some(entropy.clone()),
            observers: settings.observers.clone(),
            // Told at the first poll, unless a route rule takes over.
            tell_at_first_poll: probe.is_none(),
            told: told.get(),
            check: None,
            // Judged at arrival, above: learnt from there too.
            learn: Learn::from_check(plain.as_ref().and_then(|plain| plain.check.clone()))
                .map(|learn| learn.judged_at(start)),
            stage: Stage::Handler,
            waiting: None,
            taken_over: false,
        };
        if budget.is_zero() {
            return TimeboxFuture::new(State::expired(expiry), None, None, None, entropy);
        }
        let future = deadline.sync_scope(|| self.inner.call(req));
        TimeboxFuture::new(
            State::bounded(Gated::new(Start::At(deadline), future), expiry),
            probe,
            queue,
            plain,
            entropy,
        )
    }
}

impl Settings {
    /// The wait for a slot of the concurrency limit, when there is one,
    /// bounded by `deadline`.
    fn queue(
        &self,
        deadline: Option<Instant>,
        route: &RouteName,
        entropy: &Entropy,
    ) -> Option<Queue> {
        self.limiter.as_ref().map(|limiter| Queue {
            acquire: limiter.acquire(deadline),
            route: route.clone(),
            entropy: entropy.clone(),
            observers: self.observers.clone(),
        })
    }
}

/// A request's wait for a slot of the concurrency limit (A2).
#[derive(Debug)]
struct Queue {
    acquire: Acquire,
    /// Named in the shed event; its label is made only if one is told.
    route: RouteName,
    entropy: Entropy,
    observers: Observers,
}

/// Response future of [`TimeboxService`]: the route's future under the
/// global deadline, or under the route's own rule once it took over.
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct TimeboxFuture<F> {
    #[pin]
    state: State<F>,
    /// Until a route rule takes over, or the route's future ends: the
    /// probe that learns whether one does.
    probe: Option<Probe>,
    /// Until a slot of the concurrency limit is free: the wait for it. The
    /// route is not polled before.
    queue: Option<Queue>,
    /// The slot, held until the response head.
    permit: Option<Permit>,
    /// The route's deadline check, until the claim says whose it is.
    plain: Option<Arc<PlainRoute>>,
    /// The request's random source: an answer the route made without its
    /// request (a cut pool wait's 503) draws its `Retry-After` from it
    /// again, so it comes from the app's source as the layer's own do.
    entropy: Entropy,
}

impl<F> TimeboxFuture<F> {
    fn new(
        state: State<F>,
        probe: Option<Probe>,
        queue: Option<Queue>,
        plain: Option<Arc<PlainRoute>>,
        entropy: Entropy,
    ) -> Self {
        Self {
            state,
            probe,
            queue,
            permit: None,
            plain,
            entropy,
        }
    }
}

impl<F, E> Future for TimeboxFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Some(queue) = this.queue {
            let acquired = ready!(Pin::new(&mut queue.acquire).poll(cx));
            let queue = this.queue.take().expect("the queue was just polled");
            match acquired {
                Ok(permit) => *this.permit = Some(permit),
                Err(Refusal::Overloaded) => {
                    // The route's future is dropped unpolled (and with it
                    // the request's body): this future is done.
                    this.state.set(State::Done);
                    queue.observers.emit(|| Event::RequestShed {
                        reason: ShedReason::Overloaded,
                        route: queue.route.label(),
                    });
                    return Poll::Ready(Ok(problem::overloaded(&queue.entropy)));
                }
                // The deadline passed in the queue: the gate answers the
                // timeout without polling the route.
                Err(Refusal::Deadline) => this.state.as_mut().timed_out_at(Stage::Admission),
            }
        }
        // A route rule that took the request over on a task of its own
        // while this future waited is let go before the gate checks the
        // clock: its rule alone applies from then on.
        if this.probe.as_ref().is_some_and(Probe::is_taken) {
            this.probe.take();
            step_aside(this.state.as_mut(), this.plain);
        }
        let mut answer = this.state.as_mut().poll_answer(cx);
        let probed = this
            .probe
            .as_ref()
            .map(|probe| probe.after_poll(cx, answer.is_pending()));
        match probed {
            // The route has a rule of its own and waits for us to let go:
            // from now on only its rule applies, and it tells its deadline
            // and learns its service time. (Unless something between us and
            // the route answered already, or the global deadline passed
            // before it was reached: that answer stands.)
            Some(Probed::Taken) => {
                *this.probe = None;
                if answer.is_pending() {
                    step_aside(this.state.as_mut(), this.plain);
                    answer = this.state.poll_answer(cx);
                } else if let Some(plain) = this.plain.take() {
                    plain.ruled();
                }
            }
            // The global deadline gates the request until a route rule
            // takes it over. It is told now when the route is known to be a
            // plain one (or is no route of a table); a route that may have a
            // rule of its own (behind a middleware that waits) tells its
            // own once it takes over, or the global one is told when the
            // request ends without that.
            Some(Probed::Open) if this.plain.as_ref().is_none_or(|plain| plain.is_plain()) => {
                this.state.as_mut().tell_set();
            }
            // The request ended under the global deadline. Its route is a
            // plain one if it answered; a timeout, or a middleware's own
            // answer before the route, shows nothing of the route.
            Some(Probed::Untaken) => {
                *this.probe = None;
                if let Some(plain) = this.plain.take() {
                    if matches!(answer, Poll::Ready(Answer::Inner(_))) {
                        plain.plain();
                    }
                }
                this.state.as_mut().tell_set();
            }
            Some(Probed::Open) | None => {}
        }
        let answer = ready!(answer);
        if let Some(mut permit) = this.permit.take() {
            match &answer {
                // A route's own refusal (A1), or its answer to a deadline
                // that had passed on arrival (S4), did no work: no sample.
                Answer::Inner(Ok(response)) if response.extensions().get::<NoWork>().is_some() => {
                    permit.release_unsampled();
                }
                // A route's own timeout answer is timed-out work, as the
                // layer's own is: the permit goes back as dropped, which
                // the adaptive limits read as overload.
                Answer::Inner(Ok(response))
                    if response.extensions().get::<DeadlineCancelled>().is_some() => {}
                Answer::Inner(_) => permit.answered(),
                Answer::Timeout(_) | Answer::Refused(_) => {}
            }
        }
        Poll::Ready(match answer {
            Answer::Inner(output) => output.map(|mut response| {
                problem::redraw_retry_after(&mut response, this.entropy);
                response
            }),
            Answer::Timeout(response) | Answer::Refused(response) => Ok(response),
        })
    }
}

/// A route rule took the request over: the layer stops gating it and
/// learning from it, and its route checks for itself from now on.
fn step_aside<F>(mut state: Pin<&mut State<F>>, plain: &mut Option<Arc<PlainRoute>>) {
    if let Some(plain) = plain.take() {
        plain.ruled();
    }
    state.as_mut().taken_over();
    state.release();
}

/// What the layer learnt of its routes, one table per method: the methods
/// of one path can have different rules (a macro's `GET` beside a plain
/// `POST`) and different service times. `HEAD` shares `GET`'s, as axum
/// answers it with the `GET` handler; methods beyond the standard ones
/// share one table.
#[derive(Debug)]
struct RouteKinds {
    /// The admission settings a plain route's check is made with; `None`
    /// when the check is off.
    check: Option<AdmissionConfig>,
    tables: [BoundedMap<Arc<PlainRoute>>; METHOD_TABLES],
}

/// The standard methods, `HEAD` with `GET`, and one for the others.
const METHOD_TABLES: usize = 9;

impl RouteKinds {
    fn new(admission: &AdmissionConfig) -> Self {
        Self {
            check: (admission.deadline_check != CheckMode::Off).then(|| admission.clone()),
            tables: std::array::from_fn(|_| BoundedMap::new(MAX_ROUTES)),
        }
    }

    /// What the layer knows of `method` on `route`, made the first time;
    /// `None` past [`MAX_ROUTES`].
    fn get(&self, method: &Method, route: &str) -> Option<Arc<PlainRoute>> {
        let table = match *method {
            Method::GET | Method::HEAD => 0,
            Method::POST => 1,
            Method::PUT => 2,
            Method::DELETE => 3,
            Method::PATCH => 4,
            Method::OPTIONS => 5,
            Method::TRACE => 6,
            Method::CONNECT => 7,
            _ => 8,
        };
        self.tables[table].get_or_make(route, || {
            Arc::new(PlainRoute {
                check: self
                    .check
                    .as_ref()
                    .map(|admission| Arc::new(DeadlineCheck::new(admission, None))),
                kind: AtomicU8::new(UNKNOWN),
            })
        })
    }
}

/// One route for one method: whether it is a plain one (a route with a rule
/// of its own checks for itself and tells its own deadline), learnt from
/// its requests, and the deadline check it has as a plain one.
#[derive(Debug)]
struct PlainRoute {
    check: Option<Arc<DeadlineCheck>>,
    kind: AtomicU8,
}

const UNKNOWN: u8 = 0;
const PLAIN: u8 = 1;
const RULED: u8 = 2;

/// Most routes a layer keeps: far more than a router has.
const MAX_ROUTES: usize = 1024;

impl PlainRoute {
    fn is_plain(&self) -> bool {
        self.kind.load(Ordering::Relaxed) == PLAIN
    }

    /// A route rule took a request over: the route checks for itself, for
    /// good (an answer from a middleware before it never makes it plain).
    fn ruled(&self) {
        self.kind.store(RULED, Ordering::Relaxed);
    }

    /// A request its route answered with no route rule taking it over: the
    /// route is a plain one, unless a request showed it has a rule.
    fn plain(&self) {
        let _ = self
            .kind
            .compare_exchange(UNKNOWN, PLAIN, Ordering::Relaxed, Ordering::Relaxed);
    }
}
