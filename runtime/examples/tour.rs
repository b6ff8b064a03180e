//! A walk through timebox: each row runs one scenario and compares what it
//! observed with what the contract promises.
//!
//! ```text
//! cargo run --example tour
//! ```
//!
//! The deadline rows run in-process on a paused tokio clock, so timeouts of
//! seconds take microseconds. The server rows run a real server on
//! 127.0.0.1 (a free port) in real time, with deadlines of a tenth of a
//! second. The process exits non-zero if any row is not ok.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use timebox::config::Config;
use timebox::deadline::header::{self, DEADLINE_HEADER};
use timebox::deadline::{bounded, Deadline};
use timebox::entropy::Entropy;
use tokio::time::Instant;

/// One line of the table.
struct Row {
    scenario: String,
    expected: String,
    observed: String,
}

impl Row {
    fn new(scenario: impl Into<String>, expected: impl ToString, observed: impl ToString) -> Self {
        Self {
            scenario: scenario.into(),
            expected: expected.to_string(),
            observed: observed.to_string(),
        }
    }

    fn ok(&self) -> bool {
        self.expected == self.observed
    }
}

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    let mut rows = runtime.block_on(deadline_rows());
    rows.extend(runtime.block_on(streams::rows()));
    rows.extend(header_rows());
    rows.extend(config_and_entropy_rows());
    let real_time = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a multi-thread runtime builds");
    rows.extend(real_time.block_on(server::rows()));
    rows.extend(real_time.block_on(client::rows()));
    rows.push(real_time.block_on(streams::disconnect_row()));
    print_table(&rows);
    if rows.iter().all(Row::ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn deadline_rows() -> Vec<Row> {
    let secs = Duration::from_secs;
    let mut rows = Vec::new();

    let seen = Deadline::after(secs(1))
        .scope(Deadline::after(secs(5)).scope(async { remaining_ms() }))
        .await;
    rows.push(Row::new(
        "nested scopes: outer 1 s, inner 5 s",
        "1000 ms",
        seen,
    ));

    let seen = Deadline::after(secs(5))
        .scope(Deadline::after(secs(1)).scope(async { remaining_ms() }))
        .await;
    rows.push(Row::new(
        "nested scopes: outer 5 s, inner 1 s",
        "1000 ms",
        seen,
    ));

    let built_in_five = Deadline::after(secs(5)).scope(async { remaining_ms() });
    let seen = Deadline::after(secs(1)).scope(built_in_five).await;
    rows.push(Row::new(
        "future built in a 5 s scope, polled in a 1 s scope",
        "1000 ms",
        seen,
    ));

    let start = Instant::now();
    let result = Deadline::after(secs(1))
        .scope(bounded(tokio::time::sleep(secs(10))))
        .await;
    rows.push(Row::new(
        "bounded(sleep 10 s) under a 1 s deadline",
        "deadline exceeded after 1000 ms",
        format!(
            "{} after {} ms",
            outcome(&result),
            start.elapsed().as_millis()
        ),
    ));

    let ran = Arc::new(AtomicBool::new(false));
    let deadline = Deadline::after(secs(1));
    let flag = Arc::clone(&ran);
    let result = deadline
        .scope(bounded(async move {
            tokio::time::sleep_until(deadline.instant()).await;
            flag.store(true, Ordering::SeqCst);
        }))
        .await;
    rows.push(Row::new(
        "poll gating: work that wakes exactly at the deadline",
        "deadline exceeded, work never ran",
        format!(
            "{}, work {}",
            outcome(&result),
            if ran.load(Ordering::SeqCst) {
                "ran"
            } else {
                "never ran"
            }
        ),
    ));

    let polled = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&polled);
    let result = Deadline::after(Duration::ZERO)
        .scope(bounded(async move { flag.store(true, Ordering::SeqCst) }))
        .await;
    rows.push(Row::new(
        "poll gating: an expired deadline",
        "deadline exceeded, never polled",
        format!(
            "{}, {}",
            outcome(&result),
            if polled.load(Ordering::SeqCst) {
                "polled"
            } else {
                "never polled"
            }
        ),
    ));

    let seen = Deadline::after(secs(1))
        .scope(async { tokio::spawn(async { remaining_ms() }).await })
        .await
        .unwrap_or_else(|err| err.to_string());
    rows.push(Row::new("tokio::spawn inside a scope", "no deadline", seen));

    let deadline = Deadline::after(secs(1));
    let seen = deadline
        .scope(async move { tokio::spawn(deadline.scope(async { remaining_ms() })).await })
        .await
        .unwrap_or_else(|err| err.to_string());
    rows.push(Row::new(
        "tokio::spawn of deadline.scope(task)",
        "1000 ms",
        seen,
    ));
    rows
}

fn header_rows() -> Vec<Row> {
    let mut rows: Vec<Row> = [
        ("1500", "1500 ms"),
        (" 20 ", "20 ms"),
        ("0", "0 ms"),
        ("1.5", "ignored"),
        ("-1", "ignored"),
        ("5ms", "ignored"),
        ("soon", "ignored"),
        ("18446744073709551616", "ignored"),
    ]
    .into_iter()
    .map(|(value, expected)| {
        let parsed = header::parse(&HeaderValue::from_static(value));
        Row::new(
            format!("header value {value:?}"),
            expected,
            describe_header(parsed),
        )
    })
    .collect();

    let mut headers = HeaderMap::new();
    headers.append(DEADLINE_HEADER, HeaderValue::from_static("100"));
    headers.append(DEADLINE_HEADER, HeaderValue::from_static("200"));
    rows.push(Row::new(
        "header sent twice (100, 200)",
        "ignored",
        describe_header(header::from_headers(&headers)),
    ));

    let value = header::to_value(Duration::from_micros(2_999_999));
    rows.push(Row::new(
        "header for 2.999999 s left",
        "2999",
        value.to_str().unwrap_or("not text"),
    ));
    rows
}

fn config_and_entropy_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    let config = Config::default();
    rows.push(Row::new(
        "default config: request timeout",
        "none",
        config
            .server
            .timeouts
            .request_timeout()
            .map_or("none".to_owned(), |d| format!("{} ms", d.as_millis())),
    ));
    let draws = |seed| {
        let entropy = Entropy::seeded(seed);
        (0..8)
            .map(|_| entropy.uniform(1..=3).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    rows.push(Row::new(
        "same seed, same Retry-After draws",
        draws(42),
        draws(42),
    ));
    rows
}

fn remaining_ms() -> String {
    Deadline::current().map_or("no deadline".to_owned(), |deadline| {
        format!("{} ms", deadline.remaining().as_millis())
    })
}

fn outcome<T, E: ToString>(result: &Result<T, E>) -> String {
    match result {
        Ok(_) => "finished".to_owned(),
        Err(err) => err.to_string(),
    }
}

fn describe_header(parsed: Option<Duration>) -> String {
    parsed.map_or("ignored".to_owned(), |d| format!("{} ms", d.as_millis()))
}

fn print_table(rows: &[Row]) {
    let width =
        |f: fn(&Row) -> usize, title: &str| rows.iter().map(f).max().unwrap_or(0).max(title.len());
    let (s, e, o) = (
        width(|r| r.scenario.len(), "scenario"),
        width(|r| r.expected.len(), "expected"),
        width(|r| r.observed.len(), "observed"),
    );
    println!(
        "{:s$} | {:e$} | {:o$} | ok",
        "scenario", "expected", "observed"
    );
    println!(
        "{}-|-{}-|-{}-|---",
        "-".repeat(s),
        "-".repeat(e),
        "-".repeat(o)
    );
    for row in rows {
        let ok = if row.ok() { "ok" } else { "NOT OK" };
        println!(
            "{:s$} | {:e$} | {:o$} | {ok}",
            row.scenario, row.expected, row.observed
        );
    }
}

/// A real server on loopback, asked by a real HTTP client.
mod server {
    use std::time::Duration;

    use timebox::config::Config;
    use timebox::deadline::{bounded, header::DEADLINE_HEADER, Deadline};
    use timebox::shutdown::Shutdown;
    use timebox::{get, routes};

    use super::Row;

    #[get("/slow")]
    async fn slow() -> &'static str {
        tokio::time::sleep(Duration::from_millis(300)).await;
        "finished"
    }

    #[get("/off", timeout = "off")]
    async fn off() -> &'static str {
        tokio::time::sleep(Duration::from_millis(150)).await;
        "finished"
    }

    #[get("/override", timeout_ms = 2000)]
    async fn long() -> &'static str {
        tokio::time::sleep(Duration::from_millis(150)).await;
        "finished"
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
        // A call with its own 10 ms deadline that takes 50 ms.
        Deadline::after(Duration::from_millis(10))
            .scope(bounded(tokio::time::sleep(Duration::from_millis(50))))
            .await
            .map_err(|err| LookupError(err.into()))?;
        Ok("found")
    }

    pub(super) async fn rows() -> Vec<Row> {
        let mut config = Config::default();
        config.server.timeouts.request_timeout_ms = Some(100);
        config.server.timeouts.accept_deadline_header = true;
        // The tour has no load balancer to warn: stop accepting at once.
        config.server.prestop_grace_secs = 0;
        // A short bound on request heads, to see slow-loris cut off.
        config.server.header_read_timeout_ms = 200;
        let app = routes![slow, off, long, lookup].into_router(&config);
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(err) => return vec![Row::new("server on 127.0.0.1:0", "listening", err)],
        };
        let addr = listener
            .local_addr()
            .map_or_else(|err| err.to_string(), |addr| addr.to_string());
        let shutdown = Shutdown::new(&config);
        let server = tokio::spawn(timebox::server::serve(listener, app, shutdown.clone()));
        let client = reqwest::Client::new();
        let ask = |path: &str, header: Option<&str>| {
            let mut request = client.get(format!("http://{addr}{path}"));
            if let Some(value) = header {
                request = request.header(DEADLINE_HEADER.as_str(), value);
            }
            async move {
                match request.send().await {
                    Ok(response) => describe(&response),
                    Err(err) => err.to_string(),
                }
            }
        };
        let rows = vec![
            Row::new(
                "server: 300 ms handler, 100 ms global deadline",
                "503, Retry-After 1..=3, problem+json",
                ask("/slow", None).await,
            ),
            Row::new(
                "server: 150 ms handler, timeout = \"off\"",
                "200",
                ask("/off", None).await,
            ),
            Row::new(
                "server: 150 ms handler, timeout_ms = 2000",
                "200",
                ask("/override", None).await,
            ),
            Row::new(
                "server: same route, deadline header 50",
                "503, Retry-After 1..=3, problem+json",
                ask("/override", Some("50")).await,
            ),
            Row::new(
                "server: handler returns a deadline error",
                "504",
                ask("/lookup", None).await,
            ),
            Row::new(
                "server: half a request head, 200 ms header bound",
                "closed within 1 s",
                half_a_head(&addr).await,
            ),
        ];
        shutdown.trigger();
        let stopped = match server.await {
            Ok(Ok(())) => "stopped".to_owned(),
            Ok(Err(err)) => err.to_string(),
            Err(err) => err.to_string(),
        };
        let mut rows = rows;
        rows.push(Row::new(
            "server: serve returns after trigger",
            "stopped",
            stopped,
        ));
        rows
    }

    /// Sends half a request head (slow-loris) and says when the server
    /// closed the connection.
    async fn half_a_head(addr: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let mut stream = match tokio::net::TcpStream::connect(addr).await {
            Ok(stream) => stream,
            Err(err) => return err.to_string(),
        };
        if let Err(err) = stream.write_all(b"GET /off HTTP/1.1\r\nHost: x\r\n").await {
            return err.to_string();
        }
        let mut buf = [0u8; 64];
        match tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => "closed within 1 s".to_owned(),
            Ok(Ok(_)) => "answered".to_owned(),
            Err(_) => "still open after 1 s".to_owned(),
        }
    }

    fn describe(response: &reqwest::Response) -> String {
        let status = response.status().as_u16();
        if status != 503 {
            return status.to_string();
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
            (Some(1..=3), true) => "503, Retry-After 1..=3, problem+json".to_owned(),
            _ => format!("503, Retry-After {retry_after:?}, problem+json {problem}"),
        }
    }
}

/// The outbound client against real servers on loopback.
mod client {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use axum::extract::{Request, State};
    use axum::response::{IntoResponse, Redirect, Response};
    use axum::routing::get;
    use axum::Router;
    use http::StatusCode;
    use timebox::client::{Client, ClientError};
    use timebox::config::Config;
    use timebox::deadline::header::DEADLINE_HEADER;
    use timebox::deadline::Deadline;

    use super::Row;

    #[derive(Clone, Default)]
    struct Upstream {
        hits: Arc<AtomicUsize>,
        seen: Arc<std::sync::Mutex<Vec<String>>>,
    }

    impl Upstream {
        fn hit(&self, request: &Request) {
            self.hits.fetch_add(1, Ordering::SeqCst);
            let header = request
                .headers()
                .get(&DEADLINE_HEADER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned();
            self.seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(header);
        }

        fn hits(&self) -> usize {
            self.hits.load(Ordering::SeqCst)
        }

        fn seen(&self) -> Vec<String> {
            self.seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        }
    }

    async fn throttle(State(up): State<Upstream>, request: Request) -> Response {
        up.hit(&request);
        (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "10")]).into_response()
    }

    async fn unavailable(State(up): State<Upstream>, request: Request) -> StatusCode {
        up.hit(&request);
        StatusCode::SERVICE_UNAVAILABLE
    }

    async fn failing(State(up): State<Upstream>, request: Request) -> StatusCode {
        up.hit(&request);
        StatusCode::INTERNAL_SERVER_ERROR
    }

    async fn redirect(State(up): State<Upstream>, request: Request) -> Redirect {
        up.hit(&request);
        tokio::time::sleep(Duration::from_millis(200)).await;
        Redirect::temporary("/target")
    }

    async fn target(State(up): State<Upstream>, request: Request) -> &'static str {
        up.hit(&request);
        "arrived"
    }

    pub(super) async fn rows() -> Vec<Row> {
        let up = Upstream::default();
        let app = Router::new()
            .route("/throttle", get(throttle))
            .route("/unavailable", get(unavailable))
            .route("/failing", get(failing))
            .route("/redirect", get(redirect))
            .route("/target", get(target))
            .with_state(up.clone());
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(err) => return vec![Row::new("upstream on 127.0.0.1:0", "listening", err)],
        };
        let base = match listener.local_addr() {
            Ok(addr) => format!("http://{addr}"),
            Err(err) => return vec![Row::new("upstream on 127.0.0.1:0", "listening", err)],
        };
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let mut config = Config::default();
        // Keep the breaker out of the budget row; the breaker row has its own.
        config.breaker.minimum_sample_count = u32::MAX;
        let client = Client::new(&config);

        let mut rows = Vec::new();
        let before = up.hits();
        let start = tokio::time::Instant::now();
        let outcome = Deadline::after(Duration::from_secs(1))
            .scope(client.get(format!("{base}/throttle")).send())
            .await;
        let observed = match outcome {
            Ok(response) => format!(
                "{}, {} attempt, {}",
                response.status().as_u16(),
                up.hits() - before,
                if start.elapsed() < Duration::from_millis(500) {
                    "at once"
                } else {
                    "after a wait"
                }
            ),
            Err(err) => err.to_string(),
        };
        rows.push(Row::new(
            "client: 429 Retry-After 10 s under a 1 s deadline",
            "429, 1 attempt, at once",
            observed,
        ));

        for _ in 0..100 {
            let _ = client.get(format!("{base}/unavailable")).send().await;
        }
        let before = up.hits();
        for _ in 0..500 {
            let _ = client.get(format!("{base}/unavailable")).send().await;
        }
        let share = (up.hits() - before - 500) as f64 / 500.0;
        rows.push(Row::new(
            "client: retries per request on an always-503 host",
            "0.08..=0.12 (budget)",
            if (0.08..=0.12).contains(&share) {
                "0.08..=0.12 (budget)".to_owned()
            } else {
                format!("{share:.3}")
            },
        ));

        let start_seen = up.seen().len();
        let outcome = Deadline::after(Duration::from_secs(3))
            .scope(client.get(format!("{base}/redirect")).send())
            .await;
        let seen: Vec<u64> = up.seen()[start_seen..]
            .iter()
            .filter_map(|v| v.parse().ok())
            .collect();
        let observed = match (outcome, seen.as_slice()) {
            (Ok(_), [first, second]) if *second + 200 <= *first => {
                "second hop sees 200+ ms less".to_owned()
            }
            (Ok(_), seen) => format!("headers {seen:?}"),
            (Err(err), _) => err.to_string(),
        };
        rows.push(Row::new(
            "client: header across a redirect after 200 ms",
            "second hop sees 200+ ms less",
            observed,
        ));

        let mut breaker_config = Config::default();
        breaker_config.breaker.minimum_sample_count = 10;
        let client = Client::new(&breaker_config);
        for _ in 0..10 {
            let _ = client
                .get(format!("{base}/failing"))
                .retries(0)
                .send()
                .await;
        }
        let before = up.hits();
        let outcome = client
            .get(format!("{base}/failing"))
            .retries(0)
            .send()
            .await;
        let observed = match outcome {
            Err(ClientError::CircuitBreakerOpen { .. }) if up.hits() == before => {
                "breaker open, not sent".to_owned()
            }
            Err(err) => err.to_string(),
            Ok(response) => response.status().to_string(),
        };
        rows.push(Row::new(
            "client: 11th call after 10 failures",
            "breaker open, not sent",
            observed,
        ));
        server.abort();
        rows
    }
}

/// Long streams: the watchdog, tool calls, disconnects and shutdown.
mod streams {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use axum::response::sse::Event;
    use axum::response::IntoResponse;
    use futures_util::{Stream, StreamExt};
    use timebox::config::Config;
    use timebox::registry::Registry;
    use timebox::server::sse::SseStream;
    use timebox::shutdown::Shutdown;
    use timebox::watchdog::Watchdog;
    use tokio::sync::mpsc;
    use tokio::time::{sleep, Instant};

    use super::Row;

    const SECS: fn(u64) -> Duration = Duration::from_secs;

    /// A stream the scenario feeds through the sender.
    fn fed() -> (
        mpsc::Sender<Event>,
        impl Stream<Item = Event> + Send + 'static,
    ) {
        let (tx, rx) = mpsc::channel(16);
        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|event| (event, rx))
        });
        (tx, stream)
    }

    /// How the stream ended, as the client saw it: its last two frames and
    /// when the last arrived.
    async fn ending<S>(stream: SseStream<S>) -> String
    where
        S: Stream<Item = Event> + Send + 'static,
    {
        let start = Instant::now();
        let mut body = stream.into_response().into_body().into_data_stream();
        let mut frames: Vec<String> = Vec::new();
        while let Some(Ok(frame)) = body.next().await {
            frames.push(String::from_utf8_lossy(&frame).into_owned());
        }
        let at = start.elapsed().as_secs();
        let error = frames
            .iter()
            .find(|f| f.starts_with("event: error"))
            .and_then(|f| f.split("\"cause\":\"").nth(1))
            .and_then(|rest| rest.split('"').next());
        let done = frames.last().is_some_and(|f| f == "data: [DONE]\n\n");
        match (error, done) {
            (Some(cause), true) => format!("error ({cause}) then [DONE] at {at} s"),
            (None, true) => format!("[DONE] at {at} s"),
            _ => format!("ended without [DONE] at {at} s"),
        }
    }

    pub(super) async fn rows() -> Vec<Row> {
        let mut rows = Vec::new();

        let (tx, events) = fed();
        let _ = tx.send(Event::default().data("Hello")).await;
        let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(30))).heartbeat(None);
        rows.push(Row::new(
            "stream: one token, then silence (inactivity 30 s)",
            "error (inactivity) then [DONE] at 30 s",
            ending(stream).await,
        ));

        let (tx, events) = fed();
        let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(30))).heartbeat(None);
        let tool = stream.watchdog_handle().suspend();
        tokio::spawn(async move {
            let _ = tx.send(Event::default().data("calling a tool")).await;
            sleep(SECS(100)).await; // the tool runs silently for 100 s
            drop(tool);
            let _ = tx.send(Event::default().data("the tool's answer")).await;
        });
        rows.push(Row::new(
            "stream: a 100 s tool call under inactivity 30 s",
            "[DONE] at 100 s",
            ending(stream).await,
        ));

        let mut config = Config::default();
        config.server.prestop_grace_secs = 0;
        config.server.shutdown_timeout_secs = 30;
        let shutdown = Shutdown::new(&config);
        let request = shutdown.in_flight().enter();
        tokio::spawn(async move {
            sleep(SECS(4)).await; // the last request in flight ends at 4 s
            drop(request);
        });
        let start = Instant::now();
        shutdown.trigger();
        shutdown.wait_drained().await;
        rows.push(Row::new(
            "shutdown: grace 30 s, last request ends at 4 s",
            "drained at 4 s",
            format!("drained at {} s", start.elapsed().as_secs()),
        ));

        let shutdown = Shutdown::new(&config);
        let (_tx, events) = fed();
        let stream = SseStream::new(events, Watchdog::new())
            .heartbeat(None)
            .drain(shutdown.drain_token());
        let stream_guard = shutdown.in_flight().enter();
        let client = tokio::spawn(async move {
            let seen = ending(stream).await;
            drop(stream_guard);
            seen
        });
        shutdown.trigger();
        shutdown.wait_drained().await;
        rows.push(Row::new(
            "shutdown: a stream that outlives the 30 s grace",
            "[DONE] at 30 s",
            client.await.unwrap_or_else(|err| err.to_string()),
        ));
        rows
    }

    /// A client that goes away during a silent tool run, over real TCP.
    pub(super) async fn disconnect_row() -> Row {
        let scenario = "stream: client gone during a silent tool run";
        let registry = Registry::new();
        let cancelled = Arc::new(Mutex::new(None::<Duration>));
        let app = axum::Router::new().route(
            "/",
            axum::routing::get({
                let registry = registry.clone();
                let cancelled = Arc::clone(&cancelled);
                move || {
                    let registry = registry.clone();
                    let cancelled = Arc::clone(&cancelled);
                    async move {
                        let Ok(guard) = registry.register("tour-stream") else {
                            return http::StatusCode::CONFLICT.into_response();
                        };
                        let tool = guard.tool_calls().register(Some("slow-tool"));
                        let (tx, events) = fed();
                        let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(30)))
                            .heartbeat(Duration::from_millis(200))
                            .guard(guard);
                        let suspension = stream.watchdog_handle().suspend();
                        let start = Instant::now();
                        tokio::spawn(async move {
                            tokio::select! {
                                () = tool.token().cancelled_owned() => {
                                    *cancelled.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(start.elapsed());
                                }
                                () = sleep(SECS(60)) => {}
                            }
                            drop((suspension, tx));
                        });
                        stream.into_response()
                    }
                }
            }),
        );
        let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
            return Row::new(scenario, "tool cancelled", "cannot bind 127.0.0.1:0");
        };
        let Ok(addr) = listener.local_addr() else {
            return Row::new(scenario, "tool cancelled", "no local address");
        };
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let observed = match reqwest::get(format!("http://{addr}/")).await {
            Ok(mut response) => {
                let _ = response.chunk().await; // the first heartbeat
                drop(response); // the client goes away
                let deadline = Instant::now() + SECS(2);
                loop {
                    let seen = *cancelled
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if let Some(after) = seen {
                        break if after < SECS(2) && registry.is_empty() {
                            "tool cancelled".to_owned()
                        } else {
                            format!("tool cancelled after {after:?}")
                        };
                    }
                    if Instant::now() >= deadline {
                        break "tool still running".to_owned();
                    }
                    sleep(Duration::from_millis(20)).await;
                }
            }
            Err(err) => err.to_string(),
        };
        server.abort();
        Row::new(scenario, "tool cancelled", observed)
    }
}
