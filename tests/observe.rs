//! The event model (DESIGN §13, O1–O2): the exact sequence of events that
//! a recording observer hears, on a paused clock or under `#[sim_test]`.

mod support;

use axum::response::sse::Event as SseEvent;
use axum::response::IntoResponse;
use futures_util::StreamExt;
use http::StatusCode;
use http_body_util::BodyExt;
use timebox::client::{AttemptKind, ClientError};
use timebox::config::Config;
use timebox::deadline::Deadline;
use timebox::observe::{Event, Observer, Recording};
use timebox::server::sse::SseStream;
use timebox::shutdown::Shutdown;
use timebox::sim::Sim;
use timebox::sim_test;
use timebox::watchdog::Watchdog;
use tokio::time::sleep;

use support::http::request;
use support::observe::{budget_levels_after_a_panicking_get, lines, tells_a_withdrawal, PanicsAt};
use support::time::{MS, SECS};
use support::upstream::{recording, Recorder};

/// An upstream that answers `status` at once.
fn answering(status: StatusCode) -> axum::Router {
    recording(&Recorder::new(), move |_| async move { status })
}

#[sim_test]
async fn a_retry_the_empty_budget_cannot_pay_for_is_skipped_for_budget(sim: Sim) {
    sim.net()
        .host("up", answering(StatusCode::SERVICE_UNAVAILABLE));
    let mut config = sim.config();
    // Fewer tokens than one retry costs (14).
    config.http.client.retry_budget.capacity = 10;
    let client = sim.client_with(&config);
    let response = client.get("http://up/").send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        lines(&sim.observed()),
        [
            "breaker_created host=up:80",
            "budget_tokens host=up:80 tokens=10",
            "attempt_started host=up:80 kind=first number=1",
            "attempt_finished host=up:80 kind=first number=1 outcome=5xx",
            "breaker_call host=up:80 outcome=failure",
            "retry_skipped host=up:80 reason=budget",
            "call_finished host=up:80 outcome=5xx duration=0ms",
        ]
    );
}

#[sim_test]
async fn a_retry_whose_wait_does_not_fit_the_time_left_is_skipped_for_deadline(sim: Sim) {
    sim.net()
        .host("up", answering(StatusCode::SERVICE_UNAVAILABLE));
    // No backoff: the 5 ms left would hold the retry itself, but not its
    // 10 ms margin.
    let mut config = sim.config();
    config.http.client.max_backoff_ms = 0;
    let client = sim.client_with(&config);
    let response = Deadline::after(MS(5))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        lines(&sim.observed()),
        [
            "breaker_created host=up:80",
            "budget_tokens host=up:80 tokens=500",
            "attempt_started host=up:80 kind=first number=1",
            "attempt_finished host=up:80 kind=first number=1 outcome=5xx",
            "breaker_call host=up:80 outcome=failure",
            "retry_skipped host=up:80 reason=deadline",
            "call_finished host=up:80 outcome=5xx duration=0ms",
        ]
    );
}

#[sim_test]
async fn a_post_that_fails_is_not_retried_and_says_it_is_not_idempotent(sim: Sim) {
    sim.net()
        .host("up", answering(StatusCode::SERVICE_UNAVAILABLE));
    let client = sim.client_with(&sim.config());
    let response = client
        .post("http://up/")
        .body("an order")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let told = lines(&sim.observed());
    assert!(
        told.contains(&"retry_skipped host=up:80 reason=not_idempotent".to_owned()),
        "{told:?}"
    );
    assert_eq!(
        told.iter()
            .filter(|line| line.starts_with("attempt_started"))
            .count(),
        1,
        "{told:?}"
    );
}

#[timebox::get("/work")]
async fn work() -> &'static str {
    "done"
}

/// O1: a request that arrives once the server stops admitting is told as
/// shed, for the shutdown.
#[sim_test]
async fn a_request_refused_in_phase_one_is_told_as_shed_for_shutting_down(sim: Sim) {
    let shutdown = Shutdown::new(&sim.config());
    let app = sim
        .app(timebox::routes![work].into_router(&sim.config()))
        .with_shutdown(&shutdown);
    shutdown.trigger();
    support::drain::in_background(&shutdown);
    shutdown.token().cancelled().await;
    let response = app.request(request("GET", "/work")).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let told = lines(&sim.observed());
    assert!(
        told.iter()
            .any(|line| line.starts_with("request_shed reason=shutting_down")),
        "{told:?}"
    );
}

#[timebox::get("/never", timeout = "off")]
async fn never() -> &'static str {
    std::future::pending().await
}

/// The cancellations `sim` heard, in order.
fn cancellations(sim: &Sim) -> Vec<String> {
    lines(&sim.observed())
        .into_iter()
        .filter(|line| line.starts_with("request_cancelled"))
        .collect()
}

/// O1: a request whose client leaves before its answer is told as
/// cancelled for a disconnect, once; an answered one is not.
#[sim_test]
async fn a_request_whose_client_leaves_before_its_answer_is_told_as_a_disconnect(sim: Sim) {
    let shutdown = Shutdown::new(&sim.config());
    let app = sim
        .app(timebox::routes![work, never].into_router(&sim.config()))
        .with_shutdown(&shutdown);
    let answered = app.request(request("GET", "/work")).await;
    assert_eq!(answered.status(), StatusCode::OK);
    drop(answered);
    let left = tokio::time::timeout(SECS(1), app.request(request("GET", "/never"))).await;
    assert!(left.is_err(), "the client gave up");
    assert_eq!(cancellations(&sim), ["request_cancelled reason=disconnect"]);
    assert_eq!(shutdown.in_flight().count(), 0);
}

/// A shutdown, and a request to `/never` behind its gate, on a task of its
/// own, a second after it was sent.
async fn unanswered(
    sim: &Sim,
) -> (
    Shutdown,
    tokio::task::JoinHandle<http::Response<axum::body::Body>>,
) {
    let shutdown = Shutdown::new(&sim.config());
    let app = sim
        .app(timebox::routes![never].into_router(&sim.config()))
        .with_shutdown(&shutdown);
    let request = tokio::spawn(async move { app.request(request("GET", "/never")).await });
    sleep(SECS(1)).await;
    (shutdown, request)
}

/// O1: a request still unanswered when the shutdown's sequence has ended,
/// which `serve` then drops with its connection, is told as cancelled for
/// the shutdown.
#[sim_test]
async fn a_request_dropped_at_the_end_of_the_shutdown_is_told_as_a_shutdown(sim: Sim) {
    let (shutdown, request) = unanswered(&sim).await;
    shutdown.trigger();
    shutdown.wait_drained().await;
    assert_eq!(
        cancellations(&sim),
        Vec::<String>::new(),
        "not before it is dropped"
    );
    request.abort();
    assert!(request.await.is_err_and(|error| error.is_cancelled()));
    assert_eq!(cancellations(&sim), ["request_cancelled reason=shutdown"]);
}

/// O1: a forced shutdown's requests are the shutdown's when dropped,
/// though no sequence ran to its end.
#[sim_test]
async fn a_request_dropped_after_a_forced_shutdown_is_told_as_a_shutdown(sim: Sim) {
    let (shutdown, request) = unanswered(&sim).await;
    shutdown.force();
    request.abort();
    assert!(request.await.is_err_and(|error| error.is_cancelled()));
    assert_eq!(cancellations(&sim), ["request_cancelled reason=shutdown"]);
}

/// O1: a service behind the gate that fails has answered, as far as the
/// gate can tell: no cancellation.
#[tokio::test(start_paused = true)]
async fn a_service_that_fails_is_not_told_as_cancelled() {
    use tower::ServiceExt;
    let recording = Recording::new();
    let shutdown = Shutdown::new(&Config::default().observed_by(recording.clone()));
    let failing = tower::service_fn(|_: http::Request<axum::body::Body>| async {
        Err::<http::Response<axum::body::Body>, _>(std::io::Error::other("broken"))
    });
    let answer = timebox::server::ShutdownGate::new(failing, &shutdown)
        .oneshot(request("GET", "/"))
        .await;
    assert!(answer.is_err());
    assert_eq!(lines(&recording.events()), Vec::<String>::new());
    assert_eq!(shutdown.in_flight().count(), 0);
}

/// O1: during the shutdown's phases, before its sequence ends, a client
/// that leaves is still a disconnect.
#[sim_test]
async fn a_client_that_leaves_during_phase_one_is_told_as_a_disconnect(sim: Sim) {
    let (shutdown, request) = unanswered(&sim).await;
    shutdown.trigger();
    support::drain::in_background(&shutdown);
    shutdown.token().cancelled().await;
    request.abort();
    assert!(request.await.is_err_and(|error| error.is_cancelled()));
    assert_eq!(cancellations(&sim), ["request_cancelled reason=disconnect"]);
}

/// Hears cancellations with the shutdown's in-flight count as it was then.
struct CountAtCancel {
    in_flight: std::sync::OnceLock<timebox::shutdown::InFlight>,
    counts: std::sync::Mutex<Vec<usize>>,
}

impl Observer for CountAtCancel {
    fn on_event(&self, event: &Event) {
        if let (Event::RequestCancelled { .. }, Some(in_flight)) = (event, self.in_flight.get()) {
            self.counts.lock().unwrap().push(in_flight.count());
        }
    }
}

/// O1: a dropped request is told while it still counts in flight, so that
/// a shutdown the count's end lets finish cannot come between.
#[tokio::test(start_paused = true)]
async fn a_dropped_request_is_told_before_it_leaves_the_count() {
    let observer = std::sync::Arc::new(CountAtCancel {
        in_flight: std::sync::OnceLock::new(),
        counts: std::sync::Mutex::new(Vec::new()),
    });
    let config = Config::default().observed_by(std::sync::Arc::clone(&observer));
    let shutdown = Shutdown::new(&config);
    assert!(observer.in_flight.set(shutdown.in_flight()).is_ok());
    let gate =
        timebox::server::ShutdownGate::new(timebox::routes![never].into_router(&config), &shutdown);
    let answer = tower::ServiceExt::oneshot(gate, request("GET", "/never"));
    assert!(
        tokio::time::timeout(SECS(1), answer).await.is_err(),
        "the client gave up"
    );
    assert_eq!(*observer.counts.lock().unwrap(), [1]);
    assert_eq!(shutdown.in_flight().count(), 0);
}

#[timebox::get("/panics", timeout = "off")]
async fn panics() -> &'static str {
    panic!("the handler's own bug")
}

/// O1: a handler that panics is not a cancelled request.
#[sim_test]
async fn a_handler_that_panics_is_not_told_as_cancelled(sim: Sim) {
    let shutdown = Shutdown::new(&sim.config());
    let app = sim
        .app(timebox::routes![panics].into_router(&sim.config()))
        .with_shutdown(&shutdown);
    let request = tokio::spawn(async move { app.request(request("GET", "/panics")).await });
    assert!(request.await.is_err_and(|error| error.is_panic()));
    assert_eq!(cancellations(&sim), Vec::<String>::new());
    assert_eq!(shutdown.in_flight().count(), 0);
}

#[sim_test]
async fn a_breaker_opens_admits_trials_when_half_open_and_closes(sim: Sim) {
    let failing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = failing.clone();
    sim.net().host(
        "up",
        recording(&Recorder::new(), move |_| {
            let failing = flag.load(std::sync::atomic::Ordering::SeqCst);
            async move {
                if failing {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::OK
                }
            }
        }),
    );
    let mut config = sim.config();
    config.http.client.max_retries = 0;
    config.breaker.minimum_sample_count = 2;
    config.breaker.open_secs = 30;
    config.breaker.half_open_trials = 1;
    let client = sim.client_with(&config);
    for _ in 0..2 {
        client.get("http://up/").send().await.unwrap();
    }
    let refused = client.get("http://up/").send().await.unwrap_err();
    assert!(refused.to_string().contains("circuit breaker"), "{refused}");
    sleep(SECS(30)).await;
    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(client.get("http://up/").send().await.unwrap().status(), 200);
    let breaker: Vec<_> = lines(&sim.observed())
        .into_iter()
        .filter(|line| line.starts_with("breaker_"))
        .collect();
    assert_eq!(
        breaker,
        [
            "breaker_created host=up:80",
            "breaker_call host=up:80 outcome=failure",
            "breaker_call host=up:80 outcome=failure",
            "breaker_transition host=up:80 from=closed to=open",
            "breaker_call host=up:80 outcome=rejected",
            "breaker_transition host=up:80 from=open to=half_open",
            "breaker_call host=up:80 outcome=success",
            "breaker_transition host=up:80 from=half_open to=closed",
        ]
    );
}

/// O1: a call that answers after the breaker's slow threshold is told as
/// slow, a quick one as a success.
#[sim_test]
async fn a_slow_call_is_told_as_slow(sim: Sim) {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    sim.net().host(
        "up",
        recording(&Recorder::new(), move |_| {
            let first = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
            async move {
                if first {
                    sleep(SECS(2)).await;
                }
                StatusCode::OK
            }
        }),
    );
    let mut config = sim.config();
    config.breaker.slow_call_duration_threshold_secs = 1;
    let client = sim.client_with(&config);
    for _ in 0..2 {
        client.get("http://up/").send().await.unwrap();
    }
    let calls: Vec<_> = lines(&sim.observed())
        .into_iter()
        .filter(|line| line.starts_with("breaker_call"))
        .collect();
    assert_eq!(
        calls,
        [
            "breaker_call host=up:80 outcome=slow",
            "breaker_call host=up:80 outcome=success",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_goes_quiet_times_out_for_inactivity() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let events = futures_util::stream::once(async {
        sleep(MS(200)).await;
        SseEvent::default().data("first")
    })
    .chain(futures_util::stream::pending());
    let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(1)))
        .heartbeat(None)
        .observed(&config.observers, "/chat");
    let body = stream.into_response().into_body().collect().await.unwrap();
    assert!(!body.to_bytes().is_empty());
    assert_eq!(
        lines(&recording.events()),
        [
            "stream_first_item route=/chat after=200ms",
            "stream_timeout kind=inactivity route=/chat",
            "request_cancelled reason=timeout (inactivity)",
        ]
    );
}

/// O1: a stream whose client went away tells the cancellation, with no
/// timeout.
#[tokio::test(start_paused = true)]
async fn a_stream_whose_client_left_tells_a_disconnect() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let events = futures_util::stream::once(async { SseEvent::default().data("first") })
        .chain(futures_util::stream::pending());
    let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(10)))
        .heartbeat(None)
        .observed(&config.observers, "/chat");
    let mut body = stream.into_response().into_body();
    assert!(body.frame().await.is_some(), "the first event");
    drop(body);
    sleep(SECS(1)).await;
    assert_eq!(
        lines(&recording.events()),
        [
            "stream_first_item route=/chat after=0ms",
            "request_cancelled reason=disconnect",
        ]
    );
}

/// O1: a stream that a shutdown's drain ends tells the cancellation, with
/// no timeout.
#[tokio::test(start_paused = true)]
async fn a_stream_a_shutdown_drains_tells_a_shutdown() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let shutdown = Shutdown::new(&Config::default());
    let events = futures_util::stream::once(async { SseEvent::default().data("first") })
        .chain(futures_util::stream::pending());
    let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(10)))
        .heartbeat(None)
        .drain(shutdown.drain_token())
        .observed(&config.observers, "/chat");
    let body = tokio::spawn(stream.into_response().into_body().collect());
    sleep(SECS(1)).await;
    shutdown.force();
    assert!(!body.await.unwrap().unwrap().to_bytes().is_empty());
    assert_eq!(
        lines(&recording.events()),
        [
            "stream_first_item route=/chat after=0ms",
            "request_cancelled reason=shutdown",
        ]
    );
}

/// W2, O1: the time to the first item counts from the stream's start (its
/// watchdog's), as the first-item timer does, not from when its response
/// began to be sent.
#[tokio::test(start_paused = true)]
async fn the_time_to_the_first_item_counts_from_the_streams_start() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let events = futures_util::stream::once(async { SseEvent::default().data("first") });
    let stream = SseStream::new(events, Watchdog::new().first_item(SECS(10)))
        .heartbeat(None)
        .observed(&config.observers, "/chat");
    // The handler takes 2 s more before it answers with the stream.
    sleep(SECS(2)).await;
    let body = stream.into_response().into_body().collect().await.unwrap();
    assert!(!body.to_bytes().is_empty());
    assert_eq!(
        lines(&recording.events())[0],
        "stream_first_item route=/chat after=2000ms"
    );
}

fn shutdown_config(recording: &Recording) -> Config {
    let mut config = Config::default().observed_by(recording.clone());
    config.server.prestop_grace_secs = 2;
    config.server.shutdown_timeout_secs = 30;
    config.server.drain_force_secs = 10;
    config
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_that_drains_says_so_for_each_phase() {
    let recording = Recording::new();
    let shutdown = Shutdown::new(&shutdown_config(&recording));
    let guard = shutdown.in_flight().enter();
    tokio::spawn(async move {
        sleep(SECS(7)).await;
        drop(guard);
    });
    shutdown.trigger();
    shutdown.wait_drained().await;
    assert_eq!(
        lines(&recording.events()),
        [
            "shutdown_phase phase=prestop duration=2000ms outcome=drained",
            "shutdown_phase phase=grace duration=5000ms outcome=drained",
            "shutdown_phase phase=drain duration=0ms outcome=drained",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_cut_at_its_bounds_says_forced() {
    let recording = Recording::new();
    let shutdown = Shutdown::new(&shutdown_config(&recording));
    let _stuck = shutdown.in_flight().enter();
    shutdown.trigger();
    shutdown.wait_drained().await;
    assert_eq!(
        lines(&recording.events()),
        [
            "shutdown_phase phase=prestop duration=2000ms outcome=drained",
            "shutdown_phase phase=grace duration=30000ms outcome=forced",
            "shutdown_phase phase=drain duration=10000ms outcome=forced",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_route_deadline_is_told_when_set_and_when_exceeded() {
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.server.timeouts.request_timeout_ms = Some(2_000);
    let app = axum::Router::new()
        .route(
            "/slow/{id}",
            axum::routing::get(|| async {
                sleep(SECS(10)).await;
                "late"
            }),
        )
        .layer(timebox::server::TimeboxLayer::new(&config));
    let response = tower::ServiceExt::oneshot(app, request("GET", "/slow/7"))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        lines(&recording.events()),
        [
            "deadline_set source=global budget=2000ms route=/slow/{id}",
            "deadline_exceeded stage=handler route=/slow/{id}",
        ]
    );
}

#[timebox::get("/slow/{id}", timeout_ms = 500)]
async fn slow_item() -> &'static str {
    sleep(SECS(10)).await;
    "late"
}

/// A handler's own error type (answered 500 by its `IntoResponse`), whose
/// `source()` is what caused it: a deadline error, or an `io::Error` made
/// from one.
#[derive(Debug)]
struct Failed<E>(E);

impl<E> std::fmt::Display for Failed<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the handler's work failed")
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Failed<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl<E> IntoResponse for Failed<E> {
    fn into_response(self) -> axum::response::Response {
        StatusCode::INTERNAL_SERVER_ERROR.into_response()
    }
}

/// A handler's own error that a shorter deadline of its own ended.
type OwnWork = Failed<timebox::deadline::DeadlineExceeded>;

/// Work that runs out of a 100 ms deadline of its own.
async fn own_work() -> Result<&'static str, OwnWork> {
    Deadline::after(MS(100))
        .scope(timebox::deadline::bounded(sleep(SECS(10))))
        .await
        .map_err(Failed)?;
    Ok("done")
}

#[timebox::get("/own", timeout_ms = 500)]
async fn own_scope() -> Result<&'static str, OwnWork> {
    own_work().await
}

/// O1: a deadline the handler's work stopped at by itself (here a shorter
/// scope of its own) is told by the route, once, at the `handler` stage.
#[tokio::test(start_paused = true)]
async fn a_deadline_the_handlers_own_work_stopped_at_is_told_once() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let app = timebox::routes![own_scope].into_router(&config);
    let response = tower::ServiceExt::oneshot(app, request("GET", "/own"))
        .await
        .unwrap();
    assert_eq!(response.status(), 504);
    assert_eq!(
        lines(&recording.events()),
        [
            "deadline_set source=route budget=500ms route=/own",
            "deadline_exceeded stage=handler route=/own",
        ]
    );
}

#[timebox::get("/own-off", timeout = "off")]
async fn own_scope_on_an_off_route() -> Result<&'static str, OwnWork> {
    own_work().await
}

/// A route whose rule is `off` has no deadline of ours: under a
/// `TimeboxLayer` whose global deadline it replaced, its handler's own
/// shorter deadline is told by neither.
#[tokio::test(start_paused = true)]
async fn an_off_routes_own_deadline_is_not_told_as_the_layers() {
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.server.timeouts.request_timeout_ms = Some(2_000);
    let app = timebox::routes![own_scope_on_an_off_route]
        .into_router(&config)
        .layer(timebox::server::TimeboxLayer::new(&config));
    let response = tower::ServiceExt::oneshot(app, request("GET", "/own-off"))
        .await
        .unwrap();
    assert_eq!(response.status(), 504);
    assert_eq!(lines(&recording.events()), Vec::<String>::new());
}

/// The deadlines told when `GET path` on `routes`, whose handlers call the
/// hanging host `up` with the simulation's client, has answered 504.
async fn told_by_a_calling_route(
    sim: &Sim,
    routes: timebox::server::Routes<timebox::client::Client>,
    path: &str,
) -> Vec<String> {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| std::future::pending::<StatusCode>()),
    );
    let client = sim.client_with(&sim.config());
    let app = routes.into_router(&sim.config()).with_state(client);
    let response = sim.app(app).request(request("GET", path)).await;
    assert_eq!(response.status(), 504);
    let told = lines(&sim.observed());
    exceeded(&told).into_iter().cloned().collect()
}

#[timebox::get("/call", timeout_ms = 1000)]
async fn calls_with_less_time(
    axum::extract::State(client): axum::extract::State<timebox::client::Client>,
) -> Result<&'static str, ClientError> {
    Deadline::after(MS(100))
        .scope(client.get("http://up/").send())
        .await?;
    Ok("answered")
}

/// O1: a deadline an outbound call of the handler stopped at is told by
/// the call, at the `outbound` stage, and not again by the route.
#[sim_test]
async fn a_deadline_an_outbound_call_stopped_at_is_not_told_again_by_the_route(sim: Sim) {
    let told = told_by_a_calling_route(&sim, timebox::routes![calls_with_less_time], "/call").await;
    assert_eq!(told, ["deadline_exceeded stage=outbound route=-"]);
}

/// Returns what `bounded` gave, under a scope shorter than its route's.
#[timebox::get("/bounded", timeout_ms = 1000)]
async fn bounded_with_less_time() -> Result<&'static str, timebox::deadline::DeadlineExceeded> {
    Deadline::after(MS(100))
        .scope(timebox::deadline::bounded(sleep(SECS(1))))
        .await?;
    Ok("answered")
}

/// O1: a handler that returns `DeadlineExceeded` itself has its deadline
/// told once, at the `handler` stage, by its route's rule or, on a plain
/// route, by the `TimeboxLayer` that gives it the global deadline.
#[sim_test]
async fn a_deadline_a_handler_returns_is_told_once_at_the_handler_stage(sim: Sim) {
    let mut config = sim.config();
    config.server.timeouts.request_timeout_ms = Some(1000);
    let plain = axum::routing::get(|| async {
        Deadline::after(MS(100))
            .scope(timebox::deadline::bounded(sleep(SECS(1))))
            .await?;
        Ok::<_, timebox::deadline::DeadlineExceeded>("answered")
    });
    let app = timebox::routes![bounded_with_less_time]
        .into_router(&config)
        .route("/plain", plain)
        .layer(timebox::server::TimeboxLayer::new(&config));
    let app = sim.app(app);
    for (path, route) in [("/bounded", "/bounded"), ("/plain", "/plain")] {
        let before = exceeded(&lines(&sim.observed())).len();
        let response = app.request(request("GET", path)).await;
        assert_eq!(response.status(), 504, "{path}");
        let told = lines(&sim.observed());
        let told = exceeded(&told);
        assert_eq!(
            told[before..],
            [&format!("deadline_exceeded stage=handler route={route}")],
            "{path}"
        );
    }
}

/// O3: the `tracing` sink is on with no observer at all: each event is a
/// `DEBUG` line at `timebox::observe`, its attributes as fields.
#[tokio::test(start_paused = true)]
async fn with_no_observer_the_tracing_sink_tells_each_event() {
    let (logs, _guard) = support::logs::Logs::capture();
    let app = timebox::routes![slow_item].into_router(&Config::default());
    let response = tower::ServiceExt::oneshot(app, request("GET", "/slow/7"))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    logs.one_line_with(
        "event=\"deadline_set\"",
        &[
            "DEBUG",
            "timebox::observe",
            "source=\"route\"",
            "budget_s=0.5",
            "route=\"/slow/{id}\"",
        ],
    );
    logs.one_line_with(
        "event=\"deadline_exceeded\"",
        &[
            "DEBUG",
            "timebox::observe",
            "stage=\"handler\"",
            "route=\"/slow/{id}\"",
        ],
    );
}

#[timebox::get("/call-in-a-task", timeout_ms = 1000)]
async fn calls_with_less_time_in_a_task(
    axum::extract::State(client): axum::extract::State<timebox::client::Client>,
) -> Result<&'static str, ClientError> {
    let call = Deadline::after(MS(100)).scope(async move { client.get("http://up/").send().await });
    tokio::spawn(call).await.expect("the call's task ends")?;
    Ok("answered")
}

/// O1: the call told its deadline in the task it ran in; the route that
/// answers with its error does not tell it again.
#[sim_test]
async fn a_deadline_a_call_told_in_another_task_is_not_told_again_by_the_route(sim: Sim) {
    let told = told_by_a_calling_route(
        &sim,
        timebox::routes![calls_with_less_time_in_a_task],
        "/call-in-a-task",
    )
    .await;
    assert_eq!(told, ["deadline_exceeded stage=outbound route=-"]);
}

#[timebox::get("/call-then-own", timeout_ms = 1000)]
async fn calls_then_runs_out_of_its_own_time(
    axum::extract::State(client): axum::extract::State<timebox::client::Client>,
) -> Result<&'static str, OwnWork> {
    // An outbound call cut at its own 100 ms, which it tells, and left.
    let _ = Deadline::after(MS(100))
        .scope(client.get("http://up/").send())
        .await;
    own_work().await
}

/// O1: each deadline is told once: the call's by the call, then the
/// handler's own by the route.
#[sim_test]
async fn a_handlers_own_deadline_after_a_calls_is_told_too(sim: Sim) {
    let told = told_by_a_calling_route(
        &sim,
        timebox::routes![calls_then_runs_out_of_its_own_time],
        "/call-then-own",
    )
    .await;
    assert_eq!(
        told,
        [
            "deadline_exceeded stage=outbound route=-",
            "deadline_exceeded stage=handler route=/call-then-own"
        ]
    );
}

#[timebox::get("/call-gated", timeout_ms = 1000)]
async fn calls_under_a_gate_of_its_own(
    axum::extract::State(client): axum::extract::State<timebox::client::Client>,
) -> Result<&'static str, OwnWork> {
    // The gate cuts the call at 100 ms, and the call, dropped, tells it.
    let _answer = Deadline::after(MS(100))
        .scope(timebox::deadline::bounded(client.get("http://up/").send()))
        .await
        .map_err(Failed)?;
    Ok("answered")
}

/// O1: a call that a gate of the handler's own cut tells its deadline as
/// it is dropped; the route that answers with the gate's error does not
/// tell it again.
#[sim_test]
async fn a_call_cut_by_the_handlers_own_gate_is_told_once(sim: Sim) {
    let told = told_by_a_calling_route(
        &sim,
        timebox::routes![calls_under_a_gate_of_its_own],
        "/call-gated",
    )
    .await;
    assert_eq!(told, ["deadline_exceeded stage=outbound route=-"]);
}

/// A handler's error holding an `io::Error` made from a deadline error.
type IoWork = Failed<std::io::Error>;

#[timebox::get("/call-as-io", timeout_ms = 1000)]
async fn calls_and_answers_an_io_error(
    axum::extract::State(client): axum::extract::State<timebox::client::Client>,
) -> Result<&'static str, IoWork> {
    let sent = Deadline::after(MS(100))
        .scope(client.get("http://up/").send())
        .await;
    // Answered in a later poll than the one the call told its deadline in.
    sleep(MS(1)).await;
    match sent {
        Err(ClientError::DeadlineExceeded(deadline)) => Err(Failed(deadline.into())),
        _ => Ok("answered"),
    }
}

/// O1: a call's deadline error carried inside an `io::Error` (D6) is still
/// known as told.
#[sim_test]
async fn a_calls_deadline_inside_an_io_error_is_told_once(sim: Sim) {
    let told = told_by_a_calling_route(
        &sim,
        timebox::routes![calls_and_answers_an_io_error],
        "/call-as-io",
    )
    .await;
    assert_eq!(told, ["deadline_exceeded stage=outbound route=-"]);
}

/// O3: `route` is the matched template, also for a macro route nested in
/// a larger router.
#[tokio::test(start_paused = true)]
async fn a_nested_macro_route_is_named_by_its_whole_template() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let app = axum::Router::new().nest("/v1", timebox::routes![slow_item].into_router(&config));
    let response = tower::ServiceExt::oneshot(app, request("GET", "/v1/slow/7"))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        lines(&recording.events()),
        [
            "deadline_set source=route budget=500ms route=/v1/slow/{id}",
            "deadline_exceeded stage=handler route=/v1/slow/{id}",
        ]
    );
}

/// O1: a deadline already spent when the request arrives (an inbound
/// header of 0) is answered without running the handler: told at
/// admission, on a plain route and on a macro route alike.
#[tokio::test(start_paused = true)]
async fn a_deadline_spent_on_arrival_is_told_at_admission() {
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.server.timeouts.accept_deadline_header = true;
    config.server.timeouts.request_timeout_ms = Some(2_000);
    let app = timebox::routes![slow_item]
        .into_router(&config)
        .route("/plain", axum::routing::get(|| async { "ran" }))
        .layer(timebox::server::TimeboxLayer::new(&config));
    for path in ["/plain", "/slow/7"] {
        answered_spent_on_arrival(app.clone(), path).await;
    }
    let told = lines(&recording.events());
    assert_eq!(
        exceeded(&told),
        [
            "deadline_exceeded stage=admission route=/plain",
            "deadline_exceeded stage=admission route=/slow/{id}",
        ],
        "{told:?}"
    );

    // The macro route with no layer in front reads the header itself.
    let alone = Recording::new();
    let mut config = Config::default().observed_by(alone.clone());
    config.server.timeouts.accept_deadline_header = true;
    answered_spent_on_arrival(timebox::routes![slow_item].into_router(&config), "/slow/7").await;
    let told = lines(&alone.events());
    assert_eq!(
        exceeded(&told),
        ["deadline_exceeded stage=admission route=/slow/{id}"],
        "{told:?}"
    );
}

/// Sends `path` to `app` with an inbound deadline of 0.
async fn answered_spent_on_arrival(app: axum::Router, path: &str) {
    let mut spent = request("GET", path);
    spent
        .headers_mut()
        .insert("x-timebox-deadline-ms", http::HeaderValue::from_static("0"));
    let response = tower::ServiceExt::oneshot(app, spent).await.unwrap();
    // S4, S5: answered at once, as any route deadline that passed.
    assert_eq!(response.status(), 503, "{path}");
}

#[timebox::get("/long", timeout_ms = 5000)]
async fn long_item() -> &'static str {
    "done"
}

/// O1: a request is told its deadline once, also when a middleware under
/// the `TimeboxLayer` waits before the route's own rule takes it over, and
/// a plain route's is told before what its handler does.
#[tokio::test(start_paused = true)]
async fn a_deadline_is_told_once_when_a_route_rule_takes_over_late() {
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.server.timeouts.request_timeout_ms = Some(2_000);
    let app = timebox::routes![long_item]
        .into_router(&config)
        .route(
            "/plain",
            axum::routing::get(|| async {
                sleep(MS(10)).await;
                "plain"
            }),
        )
        .layer(axum::middleware::from_fn(support::http::looks_up_first))
        .layer(timebox::server::TimeboxLayer::new(&config));
    for path in ["/long", "/long", "/plain", "/plain"] {
        let response = tower::ServiceExt::oneshot(app.clone(), request("GET", path))
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    assert_eq!(
        lines(&recording.events()),
        [
            "deadline_set source=route budget=5000ms route=/long",
            "deadline_set source=route budget=5000ms route=/long",
            "deadline_set source=global budget=2000ms route=/plain",
            "deadline_set source=global budget=2000ms route=/plain",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn two_apps_in_one_process_never_hear_each_other() {
    let (first, second) = (Recording::new(), Recording::new());
    let a = Shutdown::new(&shutdown_config(&first));
    let b = Shutdown::new(&shutdown_config(&second));
    let _stuck = b.in_flight().enter();
    a.force();
    a.wait_drained().await;
    b.trigger();
    b.wait_drained().await;
    assert_eq!(
        lines(&first.events()),
        [
            "shutdown_phase phase=prestop duration=0ms outcome=forced",
            "shutdown_phase phase=grace duration=0ms outcome=drained",
            "shutdown_phase phase=drain duration=0ms outcome=drained",
        ]
    );
    assert_eq!(
        lines(&second.events()),
        [
            "shutdown_phase phase=prestop duration=2000ms outcome=drained",
            "shutdown_phase phase=grace duration=30000ms outcome=forced",
            "shutdown_phase phase=drain duration=10000ms outcome=forced",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn two_waiters_of_one_shutdown_tell_each_phase_once() {
    let recording = Recording::new();
    let shutdown = Shutdown::new(&shutdown_config(&recording));
    shutdown.trigger();
    tokio::join!(shutdown.wait_drained(), shutdown.wait_drained());
    let phases: Vec<String> = lines(&recording.events())
        .iter()
        .map(|line| line.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        phases,
        [
            "shutdown_phase phase=prestop",
            "shutdown_phase phase=grace",
            "shutdown_phase phase=drain",
        ]
    );
}

/// An observer whose every `on_event` panics.
struct Panics;

impl Observer for Panics {
    fn on_event(&self, _: &Event) {
        panic!("an observer's own failure");
    }
}

/// A panic in an observer reaches the call that told the event; the events
/// its parts tell as they are dropped on the way out (the breaker's permit,
/// the call's end) then panic again while the first unwinds, which must not
/// abort the process.
#[sim_test]
async fn an_observer_that_panics_fails_the_call_not_the_process(sim: Sim) {
    sim.net().host("up", answering(StatusCode::OK));
    let client = sim.client_with(&sim.config().observed_by(Panics));
    let call = tokio::spawn(async move { client.get("http://up/").send().await.map(|_| ()) });
    let failed = call
        .await
        .expect_err("the observer's panic reaches the call");
    assert!(failed.is_panic());
}

#[sim_test]
async fn a_call_its_caller_drops_is_told_as_cancelled(sim: Sim) {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| std::future::pending::<StatusCode>()),
    );
    let client = sim.client_with(&sim.config());
    let outcome = tokio::time::timeout(SECS(1), client.get("http://up/").send()).await;
    assert!(outcome.is_err());
    let told = lines(&sim.observed());
    let end = &told[told.len().saturating_sub(2)..];
    assert_eq!(
        end,
        [
            "attempt_finished host=up:80 kind=first number=1 outcome=cancelled",
            "call_finished host=up:80 outcome=cancelled duration=1000ms",
        ],
        "the attempt under way ends with its call: {told:?}"
    );
}

/// One run of the budget scenario with `seed`, on its own paused runtime.
fn observed_run(seed: u64) -> Vec<String> {
    support::paused_runtime().block_on(async {
        let sim = Sim::new(seed);
        sim.net()
            .host("up", answering(StatusCode::SERVICE_UNAVAILABLE))
            .latency(MS(1), MS(40));
        let client = sim.client();
        for _ in 0..5 {
            let _ = Deadline::after(SECS(1))
                .scope(client.get("http://up/").send())
                .await;
        }
        lines(&sim.observed())
    })
}

#[test]
fn the_same_seed_gives_the_same_event_sequence() {
    let first = observed_run(3);
    assert!(first.len() > 10, "{first:?}");
    assert_eq!(first, observed_run(3));
    assert_ne!(first, observed_run(4));
}

/// O1: the tokens of a retry that was never sent go back to the bucket
/// when its call is dropped during the backoff, and the bucket's level is
/// told then, so the gauge does not keep the withdrawal.
#[sim_test]
async fn a_retry_dropped_in_its_backoff_tells_the_tokens_given_back(sim: Sim) {
    sim.net()
        .host("up", answering(StatusCode::SERVICE_UNAVAILABLE));
    let client = sim.client_with(&sim.config());
    let outcome = tokio::time::timeout(MS(1), client.get("http://up/").send()).await;
    assert!(outcome.is_err(), "dropped during the backoff");
    let told = lines(&sim.observed());
    let tokens: Vec<&str> = told
        .iter()
        .filter(|line| line.starts_with("budget_tokens"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tokens,
        [
            "budget_tokens host=up:80 tokens=500",
            "budget_tokens host=up:80 tokens=486",
            "budget_tokens host=up:80 tokens=500",
        ],
        "refilled, withdrawn for the retry, given back: {told:?}"
    );
}

/// Whether `event` tells a retry's start.
fn tells_a_retry_start(event: &Event) -> bool {
    matches!(
        event,
        Event::AttemptStarted { attempt, .. } if attempt.kind == AttemptKind::Retry
    )
}

/// B2: a retry an observer's panic stops before it is sent gives its
/// tokens back, whether the panic comes as the withdrawal is told or as
/// the retry starts: the bucket is full again.
#[sim_test]
async fn a_retry_an_observer_panic_stops_gives_its_tokens_back(sim: Sim) {
    let tells_a_withdrawal: fn(&Event) -> bool = tells_a_withdrawal;
    for (host, at) in [("a", tells_a_withdrawal), ("b", tells_a_retry_start)] {
        sim.net()
            .host(host, answering(StatusCode::SERVICE_UNAVAILABLE));
        let panicking = sim.client_with(&sim.config().observed_by(PanicsAt(at)));
        let url = format!("http://{host}/");
        let host = format!("{host}:80");
        let levels =
            budget_levels_after_a_panicking_get(panicking, url, &host, || sim.observed()).await;
        assert_eq!(
            levels,
            ["tokens=500", "tokens=486", "tokens=500"],
            "full, withdrawn for the retry, given back"
        );
    }
}

/// `GET /proxy` on a route with a 1 s deadline whose handler calls host
/// `up` and gives its answer to `read`.
async fn proxied<F, Fut>(sim: &Sim, read: F) -> http::Response<axum::body::Body>
where
    F: Fn(Result<timebox::client::Response, ClientError>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let mut config = sim.config();
    config.server.timeouts.request_timeout_ms = Some(1_000);
    let client = sim.client_with(&config);
    let app = axum::Router::new()
        .route(
            "/proxy",
            axum::routing::get(move || {
                let client = client.clone();
                let read = read.clone();
                async move {
                    read(client.get("http://up/").send().await).await;
                    "answered"
                }
            }),
        )
        .layer(timebox::server::TimeboxLayer::new(&config));
    sim.app(app).request(request("GET", "/proxy")).await
}

/// O1: a route deadline that passes while its handler waits on an outbound
/// call is told once, at the `outbound` stage, with the route: the call
/// dropped with the handler leaves the telling to the route.
#[sim_test]
async fn a_deadline_passing_in_an_outbound_call_is_told_once_at_that_stage(sim: Sim) {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| std::future::pending::<StatusCode>()),
    );
    let response = proxied(&sim, |response| async move {
        let _ = response;
    })
    .await;
    let told = cut_and_told_at_outbound(&sim, &response);
    assert!(
        told.iter()
            .any(|line| line.starts_with("call_finished host=up:80 outcome=deadline_exceeded")),
        "the call still ends as the deadline's: {told:?}"
    );
}

/// A host that answers its head at once and never sends its body.
fn stalling_body() -> axum::Router {
    axum::Router::new().fallback(|| async {
        axum::body::Body::from_stream(futures_util::stream::pending::<
            Result<bytes::Bytes, std::convert::Infallible>,
        >())
    })
}

/// Checks that `GET /proxy` was cut at its deadline (503) and that the
/// deadline was told once, at the `outbound` stage; all that was told.
fn cut_and_told_at_outbound(sim: &Sim, response: &http::Response<axum::body::Body>) -> Vec<String> {
    assert_eq!(response.status(), 503);
    let told = lines(&sim.observed());
    assert_eq!(
        exceeded(&told),
        ["deadline_exceeded stage=outbound route=/proxy"],
        "{told:?}"
    );
    told
}

/// The lines of `told` that tell a deadline exceeded.
fn exceeded(told: &[String]) -> Vec<&String> {
    told.iter()
        .filter(|line| line.starts_with("deadline_exceeded"))
        .collect()
}

/// O1: reading an outbound call's body is part of the call: a route
/// deadline that passes meanwhile is told at the `outbound` stage.
#[sim_test]
async fn a_deadline_passing_while_a_response_body_is_read_is_told_at_the_outbound_stage(sim: Sim) {
    sim.net().host("up", stalling_body());
    let response = proxied(&sim, |response| async move {
        let _ = response.unwrap().bytes().await;
    })
    .await;
    cut_and_told_at_outbound(&sim, &response);
}

/// The same, with the body read as a stream of chunks.
#[sim_test]
async fn a_deadline_passing_while_a_response_body_streams_is_told_at_the_outbound_stage(sim: Sim) {
    sim.net().host("up", stalling_body());
    let response = proxied(&sim, |response| async move {
        let _: Vec<_> = response.unwrap().bytes_stream().collect().await;
    })
    .await;
    cut_and_told_at_outbound(&sim, &response);
}

/// O1: a call's own deadline that passes while its body is read is told
/// once, at the `outbound` stage, as one that passes before the head.
#[sim_test]
async fn a_calls_own_deadline_passing_in_its_body_is_told_once(sim: Sim) {
    let read = read_body_under_own_deadline(&sim, |response| response.bytes()).await;
    assert!(
        matches!(read, Err(ClientError::DeadlineExceeded(_))),
        "{read:?}"
    );
    told_once_at_outbound(&sim);
}

/// The same, with the body read as a stream of chunks: the stream ends in
/// the deadline's error.
#[sim_test]
async fn a_calls_own_deadline_passing_in_its_body_stream_is_told_once(sim: Sim) {
    let read = read_body_under_own_deadline(&sim, |response| async move {
        let chunks: Vec<_> = response.bytes_stream().collect().await;
        chunks.into_iter().collect::<Result<Vec<_>, _>>()
    })
    .await;
    assert!(
        matches!(read, Err(ClientError::DeadlineExceeded(_))),
        "{read:?}"
    );
    told_once_at_outbound(&sim);
}

/// Calls a host whose body stalls under a deadline of 100 ms of the call's
/// own, and reads the body with `read`.
async fn read_body_under_own_deadline<F, T>(
    sim: &Sim,
    read: impl FnOnce(timebox::client::Response) -> F,
) -> Result<T, ClientError>
where
    F: std::future::Future<Output = Result<T, ClientError>>,
{
    sim.net().host("up", stalling_body());
    let client = sim.client_with(&sim.config());
    Deadline::after(MS(100))
        .scope(async {
            let response = client.get("http://up/").send().await.unwrap();
            read(response).await
        })
        .await
}

/// The call's own deadline was told once, at the `outbound` stage.
fn told_once_at_outbound(sim: &Sim) {
    let told = lines(&sim.observed());
    let exceeded = exceeded(&told);
    assert_eq!(exceeded.len(), 1, "{told:?}");
    assert!(
        exceeded[0].starts_with("deadline_exceeded stage=outbound"),
        "{told:?}"
    );
}
