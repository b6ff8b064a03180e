//! The server integration (DESIGN §3): route deadlines, timeout responses,
//! the inbound header, handler errors, sessions and shutdown.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::Router;
use http::StatusCode;
use timebox::config::Config;
use timebox::deadline::Deadline;
use timebox::server::DeadlineCancelled;
use timebox::{get, post, routes};
use tokio::time::{sleep, Instant};

use support::http::{get_with_deadline_header, request, send, text};
use support::time::MS;

fn config_with_global(ms: Option<u64>) -> Config {
    let mut config = Config::default();
    config.server.timeouts.request_timeout_ms = ms;
    config
}

fn config_accepting_header(accept: bool) -> Config {
    let mut config = Config::default();
    config.server.timeouts.accept_deadline_header = accept;
    config
}

fn is_cancelled(response: &http::Response<axum::body::Body>) -> bool {
    response.extensions().get::<DeadlineCancelled>().is_some()
}

// S5: the timeout response.

#[get("/slow")]
async fn slow() -> &'static str {
    sleep(MS(300)).await;
    "finished"
}

#[tokio::test(start_paused = true)]
async fn a_handler_past_the_global_deadline_gets_503_problem_json_with_retry_after() {
    let app = routes![slow].into_router(&config_with_global(Some(50)));
    let start = Instant::now();
    let response = send(&app, request("GET", "/slow")).await;
    assert_eq!(start.elapsed(), MS(50));
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    // About this request's time, not the resource: no cache keeps it.
    assert_eq!(response.headers()["cache-control"], "no-store");
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3).contains(&retry_after), "{retry_after}");
    assert!(is_cancelled(&response));
    let body: serde_json::Value = serde_json::from_str(&text(response).await).unwrap();
    // RFC 9457's members: `about:blank`, whose title is the status's.
    assert_eq!(body["type"], "about:blank");
    assert_eq!(body["status"], 503);
    assert_eq!(body["title"], "Service Unavailable");
    assert!(body["detail"].as_str().unwrap().contains("50 ms"), "{body}");
}

#[tokio::test]
async fn a_handler_past_the_global_deadline_gets_503_over_real_tcp() {
    let app = routes![slow].into_router(&config_with_global(Some(50)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let response = reqwest::get(format!("http://{addr}/slow")).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3).contains(&retry_after));
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["status"], 503);
}

// S2: which deadline a route gets.

#[get("/same", timeout = "off")]
async fn same_get() -> &'static str {
    sleep(MS(200)).await;
    "get"
}

#[post("/same")]
async fn same_post() -> &'static str {
    sleep(MS(200)).await;
    "post"
}

#[tokio::test(start_paused = true)]
async fn an_override_on_one_method_never_spills_onto_another_of_the_same_path() {
    let app = routes![same_get, same_post].into_router(&config_with_global(Some(50)));
    assert_eq!(send(&app, request("GET", "/same")).await.status(), 200);
    assert_eq!(send(&app, request("POST", "/same")).await.status(), 503);
}

mod elsewhere {
    /// Answers `GET /same` as `same_get` does.
    #[timebox::get("/same")]
    pub(super) async fn same_again() -> &'static str {
        "again"
    }
}

/// Two handlers for one method and path are a mistake `into_router`
/// names, as axum's own `route` does.
#[test]
#[should_panic(expected = "Handler for `GET /same` already exists")]
fn two_handlers_for_one_method_and_path_panic_naming_the_method_and_the_path() {
    let _: Router =
        routes![same_get, same_post, elsewhere::same_again].into_router(&Config::default());
}

#[get("/covered", timeout_ms = 50)]
async fn covered() -> &'static str {
    sleep(MS(200)).await;
    "late"
}

#[tokio::test(start_paused = true)]
async fn a_get_override_also_covers_head() {
    let app = routes![covered].into_router(&Config::default());
    assert_eq!(send(&app, request("HEAD", "/covered")).await.status(), 503);
    assert_eq!(send(&app, request("GET", "/covered")).await.status(), 503);
}

#[get("/long", timeout_ms = 5000)]
async fn long() -> &'static str {
    sleep(MS(200)).await;
    "long"
}

#[get("/off", timeout = "off")]
async fn off() -> &'static str {
    sleep(MS(200)).await;
    "off"
}

#[get("/instant")]
async fn instant() -> &'static str {
    "instant"
}

#[tokio::test(start_paused = true)]
async fn overrides_and_off_routes_outlive_a_short_global_deadline() {
    let app = routes![long, off, instant].into_router(&config_with_global(Some(50)));
    for (uri, body) in [("/long", "long"), ("/off", "off"), ("/instant", "instant")] {
        let response = send(&app, request("GET", uri)).await;
        assert_eq!(response.status(), 200, "{uri}");
        assert!(!is_cancelled(&response));
        assert_eq!(text(response).await, body);
    }
}

#[tokio::test(start_paused = true)]
async fn with_no_deadline_anywhere_a_slow_handler_finishes() {
    let app = routes![slow].into_router(&config_with_global(None));
    let response = send(&app, request("GET", "/slow")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(text(response).await, "finished");
}

#[tokio::test(start_paused = true)]
async fn a_zero_global_timeout_means_no_deadline() {
    let app = routes![slow].into_router(&config_with_global(Some(0)));
    assert_eq!(send(&app, request("GET", "/slow")).await.status(), 200);
}

// S3: the inbound deadline header.

#[get("/h5000", timeout_ms = 5000)]
async fn h5000() -> &'static str {
    sleep(MS(300)).await;
    "done"
}

#[get("/h50", timeout_ms = 50)]
async fn h50() -> &'static str {
    sleep(MS(300)).await;
    "done"
}

#[get("/hoff", timeout = "off")]
async fn hoff() -> &'static str {
    sleep(MS(300)).await;
    "done"
}

#[tokio::test(start_paused = true)]
async fn an_accepted_header_shortens_the_route_deadline() {
    let app = routes![h5000].into_router(&config_accepting_header(true));
    let start = Instant::now();
    let response = send(&app, get_with_deadline_header("/h5000", "50")).await;
    assert_eq!(response.status(), 503);
    assert_eq!(start.elapsed(), MS(50));
}

/// S5's log line names the method, the route, the deadline and the time
/// spent, and where the deadline came from: here a header that cut a 5 s
/// route short, which the route alone would not explain.
#[tokio::test(start_paused = true)]
async fn the_timeouts_log_line_says_where_its_deadline_came_from() {
    let (logs, _guard) = support::logs::Logs::capture();
    let app = routes![h5000].into_router(&config_accepting_header(true));
    let response = send(&app, get_with_deadline_header("/h5000", "50")).await;
    assert_eq!(response.status(), 503);
    logs.one_line_with(
        "request deadline exceeded",
        &[
            "WARN",
            "method=GET",
            r#"route="/h5000""#,
            "deadline_ms=50",
            "elapsed_ms=50",
            r#"source="x-timebox-deadline-ms""#,
        ],
    );
}

/// The log capture the tests above rely on sees a line that another thread
/// (another test, running alongside) reached first with no subscriber.
#[test]
fn a_captured_line_is_seen_when_another_thread_reached_it_first() {
    fn say() {
        tracing::debug!("said on two threads");
    }
    let (logs, _guard) = support::logs::Logs::capture();
    std::thread::spawn(say)
        .join()
        .expect("the other thread says it");
    say();
    assert_eq!(logs.lines_with("said on two threads").len(), 1);
}

#[get("/zero", timeout_ms = 5000)]
async fn zero() -> &'static str {
    ZERO_HITS.fetch_add(1, Ordering::SeqCst);
    "ran"
}

static ZERO_HITS: AtomicUsize = AtomicUsize::new(0);

#[tokio::test(start_paused = true)]
async fn a_zero_header_is_answered_at_once_without_calling_the_handler() {
    let app = routes![zero].into_router(&config_accepting_header(true));
    let response = send(&app, get_with_deadline_header("/zero", "0")).await;
    assert_eq!(response.status(), 503);
    assert!(is_cancelled(&response));
    assert_eq!(ZERO_HITS.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_header_never_lengthens_the_route_deadline() {
    let app = routes![h50].into_router(&config_accepting_header(true));
    let response = send(&app, get_with_deadline_header("/h50", "10000")).await;
    assert_eq!(response.status(), 503);
}

/// Ignored, and said at debug level, naming the header (a warning per
/// request would let any caller fill the log).
#[tokio::test(start_paused = true)]
async fn an_unparseable_header_is_ignored_and_said() {
    let (logs, _guard) = support::logs::Logs::capture();
    let app = routes![h5000].into_router(&config_accepting_header(true));
    let response = send(&app, get_with_deadline_header("/h5000", "soon")).await;
    assert_eq!(response.status(), 200);
    logs.one_line_with(
        "ignored a deadline header",
        &[
            "DEBUG",
            r#"header="x-timebox-deadline-ms""#,
            r#"is "soon", not a whole number of milliseconds"#,
        ],
    );
}

#[tokio::test(start_paused = true)]
async fn a_header_does_not_give_an_off_route_a_deadline() {
    let app = routes![hoff].into_router(&config_accepting_header(true));
    let response = send(&app, get_with_deadline_header("/hoff", "50")).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn a_header_is_ignored_unless_accepted() {
    let app = routes![h5000].into_router(&config_accepting_header(false));
    let response = send(&app, get_with_deadline_header("/h5000", "50")).await;
    assert_eq!(response.status(), 200);
}

// S4: the handler runs poll-gated, with the deadline current.

static AT_DEADLINE_HITS: AtomicUsize = AtomicUsize::new(0);

#[get("/until", timeout_ms = 100)]
async fn until_the_deadline() -> &'static str {
    let deadline = Deadline::current().expect("the route deadline is current");
    tokio::time::sleep_until(deadline.instant()).await;
    AT_DEADLINE_HITS.fetch_add(1, Ordering::SeqCst);
    "too late"
}

#[tokio::test(start_paused = true)]
async fn a_handler_woken_exactly_at_the_deadline_never_runs_on() {
    let app = routes![until_the_deadline].into_router(&Config::default());
    let response = send(&app, request("GET", "/until")).await;
    assert_eq!(response.status(), 503);
    assert_eq!(AT_DEADLINE_HITS.load(Ordering::SeqCst), 0);
}

#[get("/remaining", timeout_ms = 5000)]
async fn remaining() -> String {
    let left = Deadline::current().map(|d| d.remaining().as_millis());
    let spawned = tokio::spawn(async { Deadline::current() }).await.unwrap();
    format!("{left:?} {}", spawned.is_none())
}

#[tokio::test(start_paused = true)]
async fn the_route_deadline_is_current_in_the_handler_but_not_in_tasks_it_spawns() {
    let app = routes![remaining].into_router(&Config::default());
    let body = text(send(&app, request("GET", "/remaining")).await).await;
    let (left, spawned_sees_none) = body.split_once(' ').unwrap();
    let left: u128 = left
        .trim_start_matches("Some(")
        .trim_end_matches(')')
        .parse()
        .unwrap();
    assert!(left > 4900 && left <= 5000, "{left}");
    assert_eq!(spawned_sees_none, "true");
}

/// An extractor that takes 30 ms, as a slow body read would.
struct SlowExtractor;

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for SlowExtractor {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        _parts: &mut http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        sleep(MS(30)).await;
        Ok(SlowExtractor)
    }
}

#[get("/extract", timeout_ms = 100)]
async fn slow_extraction(_slow: SlowExtractor) -> &'static str {
    sleep(MS(80)).await;
    "done"
}

#[tokio::test(start_paused = true)]
async fn the_deadline_counts_extraction_too() {
    let app = routes![slow_extraction].into_router(&Config::default());
    let start = Instant::now();
    let response = send(&app, request("GET", "/extract")).await;
    assert_eq!(response.status(), 503);
    assert_eq!(start.elapsed(), MS(100));
}

/// Records whether it was dropped.
struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn the_handler_is_dropped_before_the_timeout_response_is_returned() {
    use timebox::server::{RouteDeadlineLayer, RouteTimeout};
    use tower::Layer;
    use tower::Service;

    let dropped = Arc::new(AtomicUsize::new(0));
    let guard_source = Arc::clone(&dropped);
    let handler = axum::routing::get(move || {
        let guard = DropFlag(Arc::clone(&guard_source));
        async move {
            sleep(MS(300)).await;
            drop(guard);
            "late"
        }
    });
    let mut service = RouteDeadlineLayer::new(RouteTimeout::Override(MS(50)))
        .layer(Router::new().route("/", handler));
    let mut future = tokio_test::task::spawn(service.call(request("GET", "/")));
    tokio_test::assert_pending!(future.poll());
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    tokio::time::advance(MS(50)).await;
    let response = tokio_test::assert_ready_ok!(future.poll());
    // The response future is still alive here, yet the handler is gone.
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    assert_eq!(response.status(), 503);
    drop(future);
}

/// S4: a route deadline of 0 through the layer door (the macros refuse
/// `timeout_ms = 0`) answers every request at once, and says so once;
/// `Off` is no deadline.
#[tokio::test(start_paused = true)]
async fn a_route_deadline_layer_of_zero_refuses_every_request_and_says_so() {
    use timebox::server::{RouteDeadlineLayer, RouteTimeout};

    let (logs, _guard) = support::logs::Logs::capture();
    let app: Router = Router::new().route(
        "/",
        axum::routing::get(|| async { "ran" }).layer(RouteDeadlineLayer::new(
            RouteTimeout::Override(Duration::ZERO),
        )),
    );
    for _ in 0..2 {
        assert_eq!(send(&app, request("GET", "/")).await.status(), 503);
    }
    // Said once, though axum layers the route per method and per request.
    logs.one_line_with("a route deadline of 0", &["WARN", "RouteTimeout::Off"]);
}

// S6: deadline errors from a handler.

#[derive(Debug)]
struct LookupError {
    source: std::io::Error,
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("lookup failed")
    }
}

impl std::error::Error for LookupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl axum::response::IntoResponse for LookupError {
    fn into_response(self) -> axum::response::Response {
        (StatusCode::BAD_REQUEST, "the lookup's own answer").into_response()
    }
}

#[get("/lookup")]
async fn lookup() -> Result<&'static str, LookupError> {
    let outcome = Deadline::after(MS(10))
        .scope(timebox::deadline::bounded(sleep(MS(100))))
        .await;
    match outcome {
        Ok(()) => Ok("found"),
        Err(deadline) => Err(LookupError {
            source: deadline.into(),
        }),
    }
}

#[get("/refuse")]
async fn refuse() -> Result<&'static str, LookupError> {
    Err(LookupError {
        source: std::io::Error::other("not found"),
    })
}

/// The lookup behind `impl IntoResponse`: the error type is hidden.
#[get("/hidden")]
async fn hidden_lookup() -> impl axum::response::IntoResponse {
    lookup().await
}

/// What `#[error(transparent)]` writes for a variant holding the deadline
/// error: its `Display` and its `source()` are the held error's.
#[derive(Debug)]
struct Transparent(timebox::deadline::DeadlineExceeded);

impl std::fmt::Display for Transparent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Transparent {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.0)
    }
}

impl axum::response::IntoResponse for Transparent {
    fn into_response(self) -> axum::response::Response {
        (StatusCode::INTERNAL_SERVER_ERROR, "its own answer").into_response()
    }
}

#[get("/transparent")]
async fn transparent() -> Result<&'static str, Transparent> {
    Err(Transparent(timebox::deadline::DeadlineExceeded::new()))
}

/// S6, as the route attributes' docs say: the error type is read from the
/// return type as written, and must hold the deadline error in its
/// `source()` chain; a type hidden behind `impl IntoResponse`, or a
/// transparent wrapper that hands on the held error's own source, answers
/// as its own `IntoResponse` says.
#[tokio::test(start_paused = true)]
async fn a_deadline_error_the_route_cannot_see_answers_as_its_own_response_says() {
    let app = routes![hidden_lookup, transparent].into_router(&Config::default());
    let hidden = send(&app, request("GET", "/hidden")).await;
    assert_eq!(hidden.status(), StatusCode::BAD_REQUEST);
    let wrapped = send(&app, request("GET", "/transparent")).await;
    assert_eq!(wrapped.status(), StatusCode::INTERNAL_SERVER_ERROR);
}

#[get("/busy")]
async fn busy() -> StatusCode {
    StatusCode::SERVICE_UNAVAILABLE
}

#[tokio::test(start_paused = true)]
async fn a_deadline_error_deep_in_a_handler_error_answers_504_with_the_marker() {
    let app = routes![lookup].into_router(&Config::default());
    let response = send(&app, request("GET", "/lookup")).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert!(is_cancelled(&response));
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
}

/// What `bounded` gives, returned with `?`.
#[get("/bounded")]
async fn bounded_lookup() -> Result<&'static str, timebox::deadline::DeadlineExceeded> {
    Deadline::after(MS(10))
        .scope(timebox::deadline::bounded(sleep(MS(100))))
        .await?;
    Ok("found")
}

/// One it makes itself, as work that checks its own deadline does.
#[get("/checked")]
async fn checked_itself() -> Result<&'static str, timebox::deadline::DeadlineExceeded> {
    Err(timebox::deadline::DeadlineExceeded::new())
}

/// S6: a handler may return `DeadlineExceeded` itself, from a route of the
/// macros or a plain axum route, bounded's or its own: each answers 504
/// with the marker.
#[tokio::test(start_paused = true)]
async fn a_handler_returning_deadline_exceeded_answers_504_with_the_marker() {
    let plain = axum::routing::get(|| async {
        Deadline::after(MS(10))
            .scope(timebox::deadline::bounded(sleep(MS(100))))
            .await?;
        Ok::<_, timebox::deadline::DeadlineExceeded>("found")
    });
    let app = routes![bounded_lookup, checked_itself]
        .into_router(&Config::default())
        .route("/plain", plain);
    for path in ["/bounded", "/checked", "/plain"] {
        let response = send(&app, request("GET", path)).await;
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT, "{path}");
        assert!(is_cancelled(&response), "{path}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
        assert_eq!(response.headers()["cache-control"], "no-store");
    }
}

#[tokio::test(start_paused = true)]
async fn other_handler_errors_keep_their_own_response() {
    let app = routes![refuse].into_router(&Config::default());
    let response = send(&app, request("GET", "/refuse")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(!is_cancelled(&response));
    assert_eq!(text(response).await, "the lookup's own answer");
}

#[tokio::test(start_paused = true)]
async fn a_503_the_handler_returns_itself_carries_no_marker() {
    let app = routes![busy].into_router(&config_with_global(Some(50)));
    let response = send(&app, request("GET", "/busy")).await;
    assert_eq!(response.status(), 503);
    assert!(!is_cancelled(&response));
}

// S8: a streaming body outlives the deadline of the response head.

#[get("/events")]
async fn events() -> axum::response::sse::Sse<
    impl futures_util::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
> {
    let stream = futures_util::stream::unfold(0, |n| async move {
        match n {
            0 => Some((Ok(axum::response::sse::Event::default().data("first")), 1)),
            1 => {
                sleep(MS(150)).await;
                Some((Ok(axum::response::sse::Event::default().data("second")), 2))
            }
            _ => None,
        }
    });
    axum::response::sse::Sse::new(stream)
}

#[tokio::test(start_paused = true)]
async fn an_sse_stream_keeps_going_after_the_deadline_of_its_head() {
    let app = routes![events].into_router(&config_with_global(Some(50)));
    let response = send(&app, request("GET", "/events")).await;
    assert_eq!(response.status(), 200);
    let body = text(response).await;
    assert!(body.contains("data: first"), "{body}");
    assert!(body.contains("data: second"), "{body}");
}

// S1: handlers with state, and handlers called directly.

#[derive(Clone)]
struct Counter(Arc<AtomicUsize>);

#[post("/count")]
async fn count(State(counter): State<Counter>) -> String {
    (counter.0.fetch_add(1, Ordering::SeqCst) + 1).to_string()
}

#[tokio::test(start_paused = true)]
async fn state_handlers_and_stateless_handlers_share_one_router() {
    let counter = Counter(Arc::new(AtomicUsize::new(0)));
    let app: Router = routes![count, instant]
        .into_router(&Config::default())
        .with_state(counter.clone());
    assert_eq!(text(send(&app, request("POST", "/count")).await).await, "1");
    assert_eq!(
        text(send(&app, request("GET", "/instant")).await).await,
        "instant"
    );
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_handler_stays_callable_as_written() {
    assert_eq!(instant().await, "instant");
    let counter = Counter(Arc::new(AtomicUsize::new(41)));
    assert_eq!(count(State(counter)).await, "42");
}

// S7: a cancelled handler's session changes are not saved.

mod sessions {
    use super::*;
    use timebox::server::SaveSessionUnlessCancelledLayer;
    use tower_sessions::{MemoryStore, Session, SessionManagerLayer};

    #[get("/visit")]
    async fn visit(session: Session) -> &'static str {
        session.insert("visited", true).await.unwrap();
        "welcome"
    }

    #[post("/login", timeout_ms = 50)]
    async fn login(session: Session) -> &'static str {
        session.insert("user", "ann").await.unwrap();
        sleep(MS(300)).await;
        "logged in"
    }

    #[post("/note")]
    async fn note(session: Session) -> StatusCode {
        session.insert("note", "kept").await.unwrap();
        StatusCode::SERVICE_UNAVAILABLE
    }

    #[get("/whoami")]
    async fn whoami(session: Session) -> String {
        let user: Option<String> = session.get("user").await.unwrap();
        let note: Option<String> = session.get("note").await.unwrap();
        format!("user={user:?} note={note:?}")
    }

    fn app() -> Router {
        let sessions = SessionManagerLayer::new(MemoryStore::default()).with_secure(false);
        routes![visit, login, note, whoami]
            .into_router(&Config::default())
            .layer(SaveSessionUnlessCancelledLayer::new(sessions))
    }

    async fn send_with_cookie(
        app: &Router,
        method: &str,
        uri: &str,
        cookie: &str,
    ) -> http::Response<axum::body::Body> {
        let request = http::Request::builder()
            .method(method)
            .uri(uri)
            .header("cookie", cookie)
            .body(axum::body::Body::empty())
            .unwrap();
        send(app, request).await
    }

    async fn session_cookie(app: &Router) -> String {
        let response = send(app, request("GET", "/visit")).await;
        let cookie = response.headers()["set-cookie"].to_str().unwrap();
        cookie.split(';').next().unwrap().to_owned()
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_handlers_session_changes_are_not_saved() {
        let app = app();
        let cookie = session_cookie(&app).await;
        let response = send_with_cookie(&app, "POST", "/login", &cookie).await;
        assert_eq!(response.status(), 503);
        assert!(is_cancelled(&response));
        let body = text(send_with_cookie(&app, "GET", "/whoami", &cookie).await).await;
        assert_eq!(body, "user=None note=None");
    }

    #[tokio::test(start_paused = true)]
    async fn a_handlers_own_503_still_saves_its_session_changes() {
        let app = app();
        let cookie = session_cookie(&app).await;
        let response = send_with_cookie(&app, "POST", "/note", &cookie).await;
        assert_eq!(response.status(), 503);
        let body = text(send_with_cookie(&app, "GET", "/whoami", &cookie).await).await;
        assert_eq!(body, r#"user=None note=Some("kept")"#);
    }
}

// S10: the shutdown token, and serve.

mod shutdown {
    use super::*;
    use timebox::shutdown::{Shutdown, ShutdownToken};

    #[get("/token")]
    async fn token(token: ShutdownToken) -> String {
        token.is_cancelled().to_string()
    }

    static ARRIVED: tokio::sync::Notify = tokio::sync::Notify::const_new();

    #[get("/wait", timeout = "off")]
    async fn wait_for_shutdown(token: ShutdownToken) -> &'static str {
        ARRIVED.notify_one();
        token.cancelled().await;
        "wound down"
    }

    fn no_prestop() -> Config {
        let mut config = Config::default();
        config.server.prestop_grace_secs = 0;
        config
    }

    #[tokio::test]
    async fn serve_lets_open_requests_finish_and_then_closes_its_listener() {
        let shutdown = Shutdown::new(&no_prestop());
        let app = routes![token, wait_for_shutdown].into_router(&Config::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(timebox::server::serve(listener, app, shutdown.clone()));

        let client = reqwest::Client::new();
        let seen = client
            .get(format!("http://{addr}/token"))
            .send()
            .await
            .unwrap();
        assert_eq!(seen.text().await.unwrap(), "false");

        let waiting = tokio::spawn({
            let client = client.clone();
            async move {
                client
                    .get(format!("http://{addr}/wait"))
                    .send()
                    .await?
                    .text()
                    .await
            }
        });
        ARRIVED.notified().await;
        shutdown.trigger();
        assert_eq!(waiting.await.unwrap().unwrap(), "wound down");
        server.await.unwrap().unwrap();
        let refused = reqwest::Client::new()
            .get(format!("http://{addr}/token"))
            .send()
            .await;
        assert!(refused.is_err(), "the listener is closed: {refused:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_after_the_trigger_gets_503_problem_json() {
        let sim = timebox::sim::Sim::new(1);
        let shutdown = Shutdown::new(&no_prestop());
        support::drain::in_background(&shutdown);
        let app = sim
            .app(routes![token].into_router(&Config::default()))
            .with_shutdown(&shutdown);
        assert_eq!(
            text(app.request(request("GET", "/token")).await).await,
            "false"
        );
        shutdown.trigger();
        tokio::task::yield_now().await;
        let response = app.request(request("GET", "/token")).await;
        assert_eq!(response.status(), 503);
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
        assert!(response.headers().contains_key("retry-after"));
        assert!(!is_cancelled(&response));
    }

    #[tokio::test]
    async fn outside_serve_the_extractor_gives_a_token_that_is_never_cancelled() {
        let app = routes![token].into_router(&Config::default());
        assert_eq!(
            text(send(&app, request("GET", "/token")).await).await,
            "false"
        );
    }
}

// S12: `TimeboxLayer` on a plain axum router, as tower-http's `TimeoutLayer`
// is used; routes with a rule of their own keep it.

/// A handler that works `secs` seconds and says how much of its deadline
/// was left when it started.
async fn works(secs: u64) -> String {
    let left = Deadline::current().map(|d| d.remaining().as_millis());
    sleep(Duration::from_secs(secs)).await;
    format!("{left:?}")
}

fn layered(router: Router, config: &Config) -> Router {
    router.layer(timebox::server::TimeboxLayer::new(config))
}

#[tokio::test(start_paused = true)]
async fn timebox_layer_gives_every_plain_route_the_global_deadline() {
    let config = config_with_global(Some(2_000));
    let dropped = Arc::new(AtomicUsize::new(0));
    let guard_source = Arc::clone(&dropped);
    let app = layered(
        Router::new()
            .route(
                "/slow",
                axum::routing::get(move || {
                    let guard = DropFlag(Arc::clone(&guard_source));
                    async move {
                        sleep(Duration::from_secs(10)).await;
                        drop(guard);
                        "late"
                    }
                }),
            )
            .route("/left", axum::routing::get(|| works(0))),
        &config,
    );
    let start = Instant::now();
    let response = send(&app, request("GET", "/slow")).await;
    assert_eq!(start.elapsed(), MS(2_000));
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(is_cancelled(&response));
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    let left = text(send(&app, request("GET", "/left")).await).await;
    assert_eq!(left, "Some(2000)");
}

/// The layers take any response body, as `Router::layer` does: in one
/// `ServiceBuilder` they sit outside tower-http's `TraceLayer`, whose
/// responses carry a body of its own, and keep their rules there.
#[tokio::test(start_paused = true)]
async fn the_layers_sit_outside_a_tower_http_layer_in_one_service_builder() {
    use timebox::server::{RouteDeadlineLayer, RouteTimeout, ShutdownGateLayer, TimeboxLayer};
    use timebox::shutdown::Shutdown;
    use tower::ServiceBuilder;
    use tower_http::trace::TraceLayer;

    let config = config_with_global(Some(2_000));
    let shutdown = Shutdown::new(&config);
    let long = ServiceBuilder::new()
        .layer(RouteDeadlineLayer::new(RouteTimeout::Override(
            Duration::from_secs(5),
        )))
        .layer(TraceLayer::new_for_http());
    let app = Router::new()
        .route("/slow", axum::routing::get(|| works(10)))
        .route("/long", axum::routing::get(|| works(3)).layer(long))
        .layer(
            ServiceBuilder::new()
                .layer(ShutdownGateLayer::new(&shutdown))
                .layer(TimeboxLayer::new(&config))
                .layer(TraceLayer::new_for_http()),
        );
    let start = Instant::now();
    let slow = send(&app, request("GET", "/slow")).await;
    assert_eq!(start.elapsed(), MS(2_000));
    assert_eq!(slow.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(is_cancelled(&slow));
    drop(slow);
    let long = send(&app, request("GET", "/long")).await;
    assert_eq!(long.status(), StatusCode::OK);
    assert_eq!(
        shutdown.in_flight().count(),
        1,
        "the gate counts a request until its body is done"
    );
    assert_eq!(text(long).await, "Some(5000)");
    assert_eq!(shutdown.in_flight().count(), 0);
    shutdown.force();
    let refused = send(&app, request("GET", "/long")).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(!is_cancelled(&refused));
}

#[get("/long", timeout_ms = 5000)]
async fn long_override() -> String {
    works(3).await
}

#[get("/short", timeout_ms = 500)]
async fn short_override() -> String {
    works(3).await
}

#[get("/off", timeout = "off")]
async fn off_route() -> String {
    works(3).await
}

#[get("/inherit")]
async fn inherit_route() -> String {
    works(3).await
}

/// A middleware that gives the route one poll, then answers for it.
async fn impatient(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut route = std::pin::pin!(next.run(request));
    match futures_util::poll!(route.as_mut()) {
        std::task::Poll::Ready(response) => response,
        std::task::Poll::Pending => "answered by the middleware".into_response(),
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_from_between_timebox_layer_and_a_route_with_its_own_rule_stands() {
    let config = config_with_global(Some(2_000));
    let app = layered(
        routes![long_override]
            .into_router(&config)
            .layer(axum::middleware::from_fn(impatient)),
        &config,
    );
    let response = send(&app, request("GET", "/long")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text(response).await, "answered by the middleware");
}

/// Checks that each of `long_override`, `off_route`, `short_override` and
/// `inherit_route` in `app` (under a `TimeboxLayer` with a 2 s global
/// deadline) keeps its own rule, counted from when the request reached the
/// layer, its handler starting `late` after that.
async fn each_keeps_its_rule(app: &Router, late: Duration) {
    let start = Instant::now();
    let long = send(app, request("GET", "/long")).await;
    assert_eq!(long.status(), StatusCode::OK);
    let left = MS(5_000) - late;
    assert_eq!(text(long).await, format!("Some({})", left.as_millis()));
    assert_eq!(start.elapsed(), late + Duration::from_secs(3));

    let off = send(app, request("GET", "/off")).await;
    assert_eq!(off.status(), StatusCode::OK);
    assert_eq!(text(off).await, "None");

    let start = Instant::now();
    let short = send(app, request("GET", "/short")).await;
    assert_eq!(short.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(start.elapsed(), MS(500));

    let start = Instant::now();
    let inherit = send(app, request("GET", "/inherit")).await;
    assert_eq!(inherit.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(start.elapsed(), MS(2_000));
}

/// A middleware that runs the route on a task of its own.
async fn on_its_own_task(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    tokio::spawn(next.run(request))
        .await
        .expect("the route's task panicked")
}

#[tokio::test(start_paused = true)]
async fn a_route_reached_after_a_middleware_waited_keeps_its_own_rule() {
    let config = config_with_global(Some(2_000));
    let app = layered(
        routes![long_override, short_override, off_route, inherit_route]
            .into_router(&config)
            .layer(axum::middleware::from_fn(support::http::looks_up_first)),
        &config,
    );
    // The middleware's 100 ms count: the rules start at the layer.
    each_keeps_its_rule(&app, MS(100)).await;
}

/// A middleware that takes 3 s before it calls the route.
async fn looks_up_for_3_s(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    tokio::time::sleep(Duration::from_secs(3)).await;
    next.run(request).await
}

/// A middleware between the layer and the route runs under the global
/// deadline until it calls the route: the route's longer rule does not
/// cover it.
#[tokio::test(start_paused = true)]
async fn a_middleware_that_outlasts_the_global_deadline_is_cut_at_it() {
    let config = config_with_global(Some(2_000));
    let app = layered(
        routes![long_override]
            .into_router(&config)
            .layer(axum::middleware::from_fn(looks_up_for_3_s)),
        &config,
    );
    let start = Instant::now();
    let response = send(&app, request("GET", "/long")).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(start.elapsed(), MS(2_000));
}

#[tokio::test(start_paused = true)]
async fn a_route_run_on_a_task_of_its_own_keeps_its_own_rule() {
    let config = config_with_global(Some(2_000));
    let app = layered(
        routes![long_override, off_route]
            .into_router(&config)
            .layer(axum::middleware::from_fn(on_its_own_task)),
        &config,
    );
    let start = Instant::now();
    let long = send(&app, request("GET", "/long")).await;
    assert_eq!(long.status(), StatusCode::OK);
    assert_eq!(text(long).await, "Some(5000)");
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    let off = send(&app, request("GET", "/off")).await;
    assert_eq!(off.status(), StatusCode::OK);
    assert_eq!(text(off).await, "None");
}

/// A route rule that took the request over on a task of its own keeps it
/// when the layer above is polled again only after the global deadline
/// (its workers were busy).
#[tokio::test(start_paused = true)]
async fn a_route_that_took_over_keeps_its_rule_when_the_layer_is_polled_late() {
    use tower::ServiceExt;

    let config = config_with_global(Some(2_000));
    let app = layered(
        routes![off_route]
            .into_router(&config)
            .layer(axum::middleware::from_fn(on_its_own_task)),
        &config,
    );
    let mut call = tokio_test::task::spawn(app.oneshot(request("GET", "/off")));
    tokio_test::assert_pending!(call.poll());
    // The route's task takes the request over and waits for the layer.
    tokio::task::yield_now().await;
    assert!(call.is_woken(), "the take-over did not wake the layer");
    tokio::time::advance(MS(2_500)).await;
    let response = call.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text(response).await, "None");
}

/// A route that took the request over on a task of its own, then lost the
/// `TimeboxLayer` above it (its client went away), runs on under its own
/// rule rather than waiting for good.
#[tokio::test(start_paused = true)]
async fn a_route_on_its_own_task_is_let_go_when_the_layer_above_is_dropped() {
    use timebox::server::{RouteDeadlineLayer, RouteTimeout};
    use tower::ServiceExt;

    let config = config_with_global(Some(2_000));
    let finished = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&finished);
    let app = layered(
        Router::new()
            .route(
                "/",
                axum::routing::get(move || {
                    let counter = Arc::clone(&counter);
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        "done"
                    }
                })
                .layer(RouteDeadlineLayer::new(RouteTimeout::Off)),
            )
            .layer(axum::middleware::from_fn(on_its_own_task)),
        &config,
    );
    let mut call = tokio_test::task::spawn(app.oneshot(request("GET", "/")));
    tokio_test::assert_pending!(call.poll());
    // The route's task takes the request over and waits for the layer.
    tokio::task::yield_now().await;
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    assert!(call.is_woken(), "the take-over did not wake the layer");
    drop(call);
    sleep(MS(1)).await;
    assert_eq!(finished.load(Ordering::SeqCst), 1, "the route still waits");
}

#[tokio::test(start_paused = true)]
async fn under_timebox_layer_macro_routes_keep_their_own_rule() {
    let config = config_with_global(Some(2_000));
    let app = layered(
        routes![long_override, short_override, off_route, inherit_route].into_router(&config),
        &config,
    );
    each_keeps_its_rule(&app, Duration::ZERO).await;
}

#[tokio::test(start_paused = true)]
async fn under_timebox_layer_a_route_deadline_layer_keeps_its_rule() {
    use timebox::server::{RouteDeadlineLayer, RouteTimeout};

    let config = config_with_global(Some(2_000));
    let rule = |timeout| axum::routing::get(|| works(3)).layer(RouteDeadlineLayer::new(timeout));
    let app = layered(
        Router::new()
            .route(
                "/long",
                rule(RouteTimeout::Override(Duration::from_secs(5))),
            )
            .route("/off", rule(RouteTimeout::Off))
            .route("/inherit", rule(RouteTimeout::Inherit)),
        &config,
    );
    let long = send(&app, request("GET", "/long")).await;
    assert_eq!(long.status(), StatusCode::OK);
    assert_eq!(text(long).await, "Some(5000)");
    let off = send(&app, request("GET", "/off")).await;
    assert_eq!(text(off).await, "None");
    let start = Instant::now();
    let inherit = send(&app, request("GET", "/inherit")).await;
    assert_eq!(inherit.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(start.elapsed(), MS(2_000));
}

/// A route whose own rule took over from `TimeboxLayer` is woken neither
/// by the take-over nor at the global deadline it no longer has, only at
/// its own.
#[tokio::test(start_paused = true)]
async fn under_timebox_layer_a_route_rule_that_took_over_is_woken_only_at_its_own_deadline() {
    use timebox::server::{RouteDeadlineLayer, RouteTimeout};
    use tower::ServiceExt;

    let config = config_with_global(Some(1_000));
    let app = layered(
        Router::new().route(
            "/",
            axum::routing::get(std::future::pending::<&'static str>)
                .layer(RouteDeadlineLayer::new(RouteTimeout::Override(MS(5_000)))),
        ),
        &config,
    );
    let mut call = tokio_test::task::spawn(app.oneshot(request("GET", "/")));
    tokio_test::assert_pending!(call.poll());
    assert!(!call.is_woken(), "woken by the take-over");
    tokio::time::advance(MS(1_001)).await;
    assert!(!call.is_woken(), "woken at the global deadline");
    tokio::time::advance(MS(4_000)).await;
    assert!(call.is_woken(), "not woken at the route's own deadline");
    let response = tokio_test::assert_ready_ok!(call.poll());
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test(start_paused = true)]
async fn under_timebox_layer_an_accepted_header_shortens_plain_and_macro_routes() {
    let mut config = config_with_global(Some(2_000));
    config.server.timeouts.accept_deadline_header = true;
    let app = layered(
        routes![long_override]
            .into_router(&config)
            .route("/plain", axum::routing::get(|| works(3))),
        &config,
    );
    for path in ["/plain", "/long"] {
        let start = Instant::now();
        let response = send(&app, get_with_deadline_header(path, "300")).await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert_eq!(start.elapsed(), MS(300), "{path}");
    }
}
