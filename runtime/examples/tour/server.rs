//! The server: route deadlines from the attributes, the answers a client
//! gets when time runs out, the same rules for a plain axum router under
//! `TimeboxLayer`, and a connection that cannot be held open.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::routing::get;
use axum::Router;
use http::{Request, Response};
use timebox::config::Config;
use timebox::deadline::{bounded, header::DEADLINE_HEADER, Deadline};
use timebox::server::TimeboxLayer;
use timebox::shutdown::Shutdown;
use timebox::{get, routes};
use tokio::time::{sleep, Instant};
use tower_service::Service;

use crate::table::{Row, Section, STILL_OPEN_AFTER};

const SECS: fn(u64) -> Duration = Duration::from_secs;

#[get("/report")]
async fn report() -> &'static str {
    sleep(SECS(3)).await;
    "a report"
}

#[get("/upload", timeout = "off")]
async fn upload() -> &'static str {
    sleep(SECS(2)).await;
    "stored"
}

#[get("/export", timeout_ms = 5000)]
async fn export() -> &'static str {
    sleep(SECS(2)).await;
    "an export"
}

/// The handler's own error type, wrapping whatever went wrong.
#[derive(Debug)]
struct LookupError(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("lookup failed")
    }
}

impl std::error::Error for LookupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

impl axum::response::IntoResponse for LookupError {
    fn into_response(self) -> axum::response::Response {
        http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
    }
}

#[get("/lookup", timeout = "off")]
async fn lookup() -> Result<&'static str, LookupError> {
    // A call with its own 100 ms deadline that takes 500 ms.
    Deadline::after(Duration::from_millis(100))
        .scope(bounded(sleep(Duration::from_millis(500))))
        .await
        .map_err(|err| LookupError(err.into()))?;
    Ok("found")
}

/// When the `/draft` handler's work was dropped, if it was.
type DroppedAt = Arc<Mutex<Option<Instant>>>;

/// Work a handler holds: it records when it is dropped.
struct Work(DroppedAt);

impl Drop for Work {
    fn drop(&mut self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }
}

#[get("/draft")]
async fn draft(State(dropped_at): State<DroppedAt>) -> &'static str {
    let _work = Work(dropped_at);
    sleep(SECS(3)).await;
    "a draft"
}

async fn plain_report() -> &'static str {
    sleep(SECS(3)).await;
    "a report"
}

pub(crate) async fn section() -> Section {
    let mut config = Config::default();
    config.server.timeouts.request_timeout_ms = Some(1_000);
    config.server.timeouts.accept_deadline_header = true;
    config.server.timeouts.deadline_headers = [
        "x-timebox-deadline-ms",
        "grpc-timeout",
        "x-envoy-expected-rq-timeout-ms",
    ]
    .map(str::to_owned)
    .into();
    let app = routes![report, upload, export, lookup].into_router(&config);
    let plain = Router::new()
        .route("/report", get(plain_report))
        .layer(TimeboxLayer::new(&config));
    let rows = vec![
        Row::new(
            "3 s handler, 1 s global deadline",
            "503 at 1 s, Retry-After 1..=3, problem+json",
            ask(&app, "/report", None).await,
        ),
        Row::new(
            "3 s handler holding its work, 1 s deadline",
            "work dropped at 1 s, before the 503 came back",
            work_dropped(&config).await,
        ),
        Row::new(
            "2 s handler, timeout = \"off\"",
            "200 at 2 s",
            ask(&app, "/upload", None).await,
        ),
        Row::new(
            "2 s handler, timeout_ms = 5000",
            "200 at 2 s",
            ask(&app, "/export", None).await,
        ),
        Row::new(
            "same route, caller's deadline header 500",
            "503 at 0.5 s, Retry-After 1..=3, problem+json",
            ask(&app, "/export", Some((DEADLINE_HEADER.as_str(), "500"))).await,
        ),
        Row::new(
            "3 s handler, Envoy's expected timeout 300",
            "503 at 0.3 s, Retry-After 1..=3, problem+json",
            ask(
                &app,
                "/report",
                Some(("x-envoy-expected-rq-timeout-ms", "300")),
            )
            .await,
        ),
        Row::new(
            "3 s handler, grpc-timeout 8S (longer)",
            "503 at 1 s, Retry-After 1..=3, problem+json",
            ask(&app, "/report", Some(("grpc-timeout", "8S"))).await,
        ),
        Row::new(
            "handler returns a deadline error",
            "504 at 0.1 s",
            ask(&app, "/lookup", None).await,
        ),
        Row::new(
            "plain axum router under TimeboxLayer",
            "503 at 1 s, Retry-After 1..=3, problem+json",
            ask(&plain, "/report", None).await,
        ),
        Row::new(
            "half a request head (slow-loris)",
            "closed at 30 s (server.header_read_timeout_ms)",
            half_a_head().await,
        ),
    ];
    Section {
        title: "Server",
        intro: &[
            "Each route's deadline comes from its attribute or the global one (a plain axum",
            "router gets the global one from `TimeboxLayer`), counts from before extraction, and",
            "drops the handler when it passes: the client gets a 503 that says so, with a",
            "jittered Retry-After; a handler whose call ran out of time answers 504. A caller's",
            "deadline header (timebox's, gRPC's or Envoy's, as configured) can only shorten it,",
            "and a client that trickles its request head is cut off. The clock is paused.",
        ],
        rows,
    }
}

/// Asks `app` in process, as a server would, with one deadline header if
/// given, and says what came back when.
async fn ask(app: &Router, path: &str, deadline_header: Option<(&str, &str)>) -> String {
    let mut request = Request::get(path);
    if let Some((name, value)) = deadline_header {
        request = request.header(name, value);
    }
    let Ok(request) = request.body(Body::empty()) else {
        return "the request does not build".to_owned();
    };
    let start = Instant::now();
    let Ok(response) = app.clone().call(request).await;
    describe(&response, start.elapsed())
}

fn describe(response: &Response<Body>, after: Duration) -> String {
    let status = response.status().as_u16();
    let at = format!("{} s", after.as_secs_f64());
    if status != 503 {
        return format!("{status} at {at}");
    }
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let problem = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v == "application/problem+json");
    match (retry_after, problem) {
        (Some(1..=3), true) => format!("503 at {at}, Retry-After 1..=3, problem+json"),
        _ => format!("503 at {at}, Retry-After {retry_after:?}, problem+json {problem}"),
    }
}

/// Asks a route whose handler outlives its deadline, and says when its
/// work was dropped: before the answer came back, or not at all.
async fn work_dropped(config: &Config) -> String {
    let dropped_at = DroppedAt::default();
    let app = routes![draft]
        .into_router(config)
        .with_state(dropped_at.clone());
    let Ok(request) = Request::get("/draft").body(Body::empty()) else {
        return "the request does not build".to_owned();
    };
    let start = Instant::now();
    let Ok(response) = app.clone().call(request).await;
    let status = response.status().as_u16();
    // Read while the answer is still held: dropped before it came back?
    let dropped = *dropped_at.lock().unwrap_or_else(PoisonError::into_inner);
    match dropped {
        Some(at) => format!(
            "work dropped at {} s, before the {status} came back",
            (at - start).as_secs_f64()
        ),
        None => format!("{status} came back, the work still held"),
    }
}

/// Serves an app on loopback with the default connection bounds, sends it
/// half a request head and says when the server closed the connection.
async fn half_a_head() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let config = Config::default();
    let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
        return "cannot bind 127.0.0.1:0".to_owned();
    };
    let Ok(addr) = listener.local_addr() else {
        return "no local address".to_owned();
    };
    let shutdown = Shutdown::new(&config);
    let app = routes![upload].into_router(&config);
    let server = tokio::spawn(timebox::server::serve(listener, app, shutdown));
    let start = Instant::now();
    let observed = match tokio::net::TcpStream::connect(addr).await {
        Ok(mut stream) => {
            let _ = stream
                .write_all(b"GET /upload HTTP/1.1\r\nHost: x\r\n")
                .await;
            let mut buf = [0u8; 64];
            match tokio::time::timeout(STILL_OPEN_AFTER, stream.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => format!(
                    "closed at {} s (server.header_read_timeout_ms)",
                    start.elapsed().as_secs_f64()
                ),
                Ok(Ok(_)) => "answered".to_owned(),
                Err(_) => format!("still open at {} s", STILL_OPEN_AFTER.as_secs()),
            }
        }
        Err(err) => err.to_string(),
    };
    server.abort();
    observed
}
