//! Upstream services for client tests: routers that record every request.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::Router;
use tokio::net::TcpListener;
use tokio::time::Instant;

/// Serves `router` on a fresh port of 127.0.0.1 until the test ends.
pub async fn serve(router: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port on 127.0.0.1");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    tokio::spawn(async move {
        axum::serve(listener, router)
            .await
            .expect("the test server runs");
    });
    addr
}

/// A timebox server that trusts the deadline header (`config`, with
/// `accept_deadline_header` on) and whose route `/` waits for ever under
/// its own 5 s deadline: it answers `503` when the time a request carried
/// runs out.
pub fn answering_at_the_time_sent(config: &timebox::config::Config) -> Router {
    let mut config = config.clone();
    config.server.timeouts.accept_deadline_header = true;
    timebox::routes![forever].into_router(&config)
}

#[timebox::get("/", timeout_ms = 5000)]
async fn forever() -> &'static str {
    std::future::pending::<()>().await;
    "never"
}

/// Makes calls with `call` until the host behind `recorder` sees the
/// deadline header exactly as the caller set it, `value`, and fails the
/// test after five calls: a caller's header goes out as set when the first
/// attempt starts within a millisecond of the call reading it (later, it
/// goes out as what is left), which a busy machine misses now and then.
/// Without that rule no call would, as what is left is always below the
/// value by then. Every value that goes out is at most `value`.
#[allow(dead_code)] // not every test binary uses every helper
pub async fn goes_out_as_set<F, Fut>(recorder: &Recorder, value: u64, mut call: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    for _ in 0..5 {
        let before = recorder.count();
        call().await;
        let hits = recorder.hits();
        assert_eq!(hits.len(), before + 1, "one request a call");
        let sent = hits
            .last()
            .and_then(|hit| hit.deadline_header.as_deref())
            .and_then(|sent| sent.parse::<u64>().ok())
            .expect("the host saw a deadline header");
        assert!(sent <= value, "{sent} went out for {value}");
        if sent == value {
            return;
        }
    }
    panic!("in five calls, {value} never went out as set");
}

/// `future`, failing the test instead of hanging when it does not end in
/// 5 s, far past every deadline the client tests use (real time).
pub async fn ends<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(5), future)
        .await
        .expect("the call ends long before 5 s")
}

/// One request an upstream saw.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Virtual time since the recorder was made.
    pub at: Duration,
    pub method: String,
    pub path: String,
    /// The deadline header's value, if any; its values joined with `, `
    /// when it came more than once (C3: one goes out), so that no test
    /// reads one of several as the value sent.
    pub deadline_header: Option<String>,
    pub headers: http::HeaderMap,
}

/// A shared log of hits.
#[derive(Debug, Clone)]
pub struct Recorder {
    start: Instant,
    hits: Arc<Mutex<Vec<Hit>>>,
}

impl Recorder {
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            hits: Arc::default(),
        }
    }

    pub fn record(&self, request: &Request) {
        let hit = Hit {
            at: self.start.elapsed(),
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
            deadline_header: one_line(
                request
                    .headers()
                    .get_all(timebox::deadline::header::DEADLINE_HEADER),
            ),
            headers: request.headers().clone(),
        };
        self.hits.lock().unwrap().push(hit);
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.hits.lock().unwrap().len()
    }
}

/// `values` joined with `, `; `None` when there are none.
fn one_line(values: http::header::GetAll<'_, http::HeaderValue>) -> Option<String> {
    let values: Vec<&str> = values.iter().map(|v| v.to_str().unwrap()).collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// A router that records every request, then answers with `answer`.
pub fn recording<F, Fut, R>(recorder: &Recorder, answer: F) -> Router
where
    F: Fn(usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = R> + Send + 'static,
    R: axum::response::IntoResponse,
{
    let recorder = recorder.clone();
    Router::new().fallback(move |request: Request| {
        let recorder = recorder.clone();
        let answer = answer.clone();
        async move {
            recorder.record(&request);
            answer(recorder.count()).await
        }
    })
}

/// A server that redirects every request (`307`) to another origin, whose
/// hits `other_seen` records; its address.
pub async fn redirecting_to_another_origin(other_seen: &Recorder) -> SocketAddr {
    let other = serve(recording(other_seen, |_| async { "other origin" })).await;
    let location = format!("http://{other}/landing");
    serve(recording(&Recorder::new(), move |_| {
        let location = location.clone();
        async move {
            (
                http::StatusCode::TEMPORARY_REDIRECT,
                [(http::header::LOCATION, location)],
            )
        }
    }))
    .await
}

/// Checks that a call to [`redirecting_to_another_origin`] got the redirect
/// itself as its answer (`status`), and that the other origin was never
/// called.
pub fn the_redirect_was_the_answer(status: http::StatusCode, other_seen: &Recorder) {
    assert_eq!(status, http::StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(
        other_seen.hits().len(),
        0,
        "the other origin was not called"
    );
}

/// Default headers with an `Authorization`, as a caller's reqwest client
/// may carry on every request it sends.
pub fn a_default_authorization() -> http::HeaderMap {
    let mut defaults = http::HeaderMap::new();
    defaults.insert(
        http::header::AUTHORIZATION,
        http::HeaderValue::from_static("Bearer secret"),
    );
    defaults
}
