//! The client's three doors (DESIGN §12, I6, I7): `Client`, the reqwest
//! middleware and the tower layer over hyper-util's client drive one call
//! engine, so each passes the same table of scenarios against real axum
//! servers on 127.0.0.1, port 0, in real time with short bounds.
//!
//! The scenarios are generic over [`Door`]; `doors!` runs each one through
//! every door. The tests after the table are of one door's own edges.

mod support;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::Router;
use bytes::Bytes;
use http::header::{LOCATION, RETRY_AFTER};
use http::StatusCode;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use timebox::client::middleware::{reqwest_builder, Timebox};
use timebox::client::{
    Attempt, AttemptKind, CallOptions, Client, ClientError, ClientLayer, ClientService,
};
use timebox::config::Config;
use timebox::deadline::{is_deadline_exceeded, Deadline};
use timebox::entropy::Entropy;
use timebox::retry::RetryBudget;
use tokio::time::{sleep, Instant};
use tower::{Layer, Service, ServiceExt};

use support::ports::Refusing;
use support::time::{MS, SECS};
use support::upstream::{
    a_default_authorization, ends, goes_out_as_set, recording, redirecting_to_another_origin,
    serve, the_redirect_was_the_answer, Recorder,
};

/// Why a call through a door gave no response, as the scenarios tell them
/// apart.
#[derive(Debug, PartialEq)]
enum Failure {
    Deadline,
    BreakerOpen,
    Other(String),
}

impl Failure {
    fn of(err: &ClientError) -> Self {
        match err {
            ClientError::DeadlineExceeded(_) => Self::Deadline,
            ClientError::CircuitBreakerOpen { .. } => Self::BreakerOpen,
            other => Self::Other(other.to_string()),
        }
    }
}

/// One way into the call engine.
trait Door: Sized {
    fn new(config: &Config) -> Self;

    /// A GET of `url` with `headers`: the status, or why there is none.
    fn get(
        &self,
        url: String,
        headers: &[(&'static str, &'static str)],
    ) -> impl Future<Output = Result<StatusCode, Failure>>;

    /// A POST of `body` to `url`, with `options`: the status, or why there
    /// is none.
    fn post(
        &self,
        url: String,
        body: &'static str,
        options: CallOptions,
    ) -> impl Future<Output = Result<StatusCode, Failure>>;
}

struct ByClient(Client);

impl Door for ByClient {
    fn new(config: &Config) -> Self {
        Self(
            Client::builder()
                .config(config)
                .entropy(Entropy::seeded(7))
                .build(),
        )
    }

    async fn get(
        &self,
        url: String,
        headers: &[(&'static str, &'static str)],
    ) -> Result<StatusCode, Failure> {
        let mut request = self.0.get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let sent = request.send().await;
        sent.map(|response| response.status())
            .map_err(|err| Failure::of(&err))
    }

    async fn post(
        &self,
        url: String,
        body: &'static str,
        options: CallOptions,
    ) -> Result<StatusCode, Failure> {
        let request = self.0.post(url).body(body).call_options(options);
        let sent = request.send().await;
        sent.map(|response| response.status())
            .map_err(|err| Failure::of(&err))
    }
}

struct ByMiddleware(reqwest_middleware::ClientWithMiddleware);

impl Door for ByMiddleware {
    fn new(config: &Config) -> Self {
        let reqwest = reqwest_builder().build().expect("a reqwest client");
        Self(
            reqwest_middleware::ClientBuilder::new(reqwest)
                .with(Timebox::new(config).entropy(Entropy::seeded(7)))
                .build(),
        )
    }

    async fn get(
        &self,
        url: String,
        headers: &[(&'static str, &'static str)],
    ) -> Result<StatusCode, Failure> {
        let mut request = self.0.get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let sent = request.send().await;
        sent.map(|response| response.status())
            .map_err(|err| middleware_failure(&err))
    }

    async fn post(
        &self,
        url: String,
        body: &'static str,
        options: CallOptions,
    ) -> Result<StatusCode, Failure> {
        let request = self.0.post(url).body(body).with_extension(options);
        let sent = request.send().await;
        sent.map(|response| response.status())
            .map_err(|err| middleware_failure(&err))
    }
}

fn middleware_failure(err: &reqwest_middleware::Error) -> Failure {
    match err {
        reqwest_middleware::Error::Middleware(err) => match err.downcast_ref::<ClientError>() {
            Some(err) => Failure::of(err),
            None => Failure::Other(err.to_string()),
        },
        reqwest_middleware::Error::Reqwest(err) => Failure::Other(err.to_string()),
    }
}

type Hyper = hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>;

fn hyper() -> Hyper {
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build_http()
}

struct ByLayer(ClientService<Hyper>);

impl Door for ByLayer {
    fn new(config: &Config) -> Self {
        Self(
            ClientLayer::new(config)
                .entropy(Entropy::seeded(7))
                .layer(hyper()),
        )
    }

    async fn get(
        &self,
        url: String,
        headers: &[(&'static str, &'static str)],
    ) -> Result<StatusCode, Failure> {
        let mut request = http::Request::get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::default()).expect("a valid request");
        let sent = self.0.clone().oneshot(request).await;
        sent.map(|response| response.status())
            .map_err(|err| Failure::of(&err))
    }

    async fn post(
        &self,
        url: String,
        body: &'static str,
        options: CallOptions,
    ) -> Result<StatusCode, Failure> {
        let mut request = http::Request::post(url)
            .body(Full::from(body))
            .expect("a valid request");
        request.extensions_mut().insert(options);
        let sent = self.0.clone().oneshot(request).await;
        sent.map(|response| response.status())
            .map_err(|err| Failure::of(&err))
    }
}

/// A configuration with short backoffs, so retries are quick.
fn config() -> Config {
    let mut config = Config::default();
    config.http.client.max_backoff_ms = 20;
    config
}

/// [`config`] with hedging on, after 50 ms, for every request.
fn hedging_config() -> Config {
    let mut config = config();
    config.http.client.hedge.enabled = true;
    config.http.client.hedge.delay_ms = Some(50);
    config.http.client.hedge.max_extra_load = 1.0;
    config
}

// The table.

/// C4: a POST is not retried unless the call opts in; then every attempt
/// carries the same `Idempotency-Key`.
async fn an_opted_in_post_is_retried_with_one_idempotency_key<D: Door>() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        StatusCode::SERVICE_UNAVAILABLE
    }))
    .await;
    let door = D::new(&config());
    let url = format!("http://{addr}/");

    let plain = ends(door.post(url.clone(), "order", CallOptions::new())).await;
    assert_eq!(plain, Ok(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(recorder.count(), 1, "a POST is not retried by default");

    let options = CallOptions::new().retries(2).retry_non_idempotent();
    let opted_in = ends(door.post(url, "order", options)).await;

    assert_eq!(opted_in, Ok(StatusCode::SERVICE_UNAVAILABLE));
    let keys: Vec<Option<String>> = recorder.hits()[1..]
        .iter()
        .map(|hit| {
            hit.headers
                .get("idempotency-key")
                .map(|key| key.to_str().expect("ascii").to_owned())
        })
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys[0].is_some(), "{keys:?}");
    assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");
}

/// O1: each door tells the same events of a call: its attempts, the retry
/// it did not make and why, and its end.
async fn the_calls_events_are_told<D: Door>() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        StatusCode::SERVICE_UNAVAILABLE
    }))
    .await;
    let recording = timebox::observe::Recording::new();
    let mut config = config();
    config.http.client.max_retries = 1;
    let door = D::new(&config.observed_by(recording.clone()));

    let outcome = ends(door.get(format!("http://{addr}/"), &[])).await;

    assert_eq!(outcome, Ok(StatusCode::SERVICE_UNAVAILABLE));
    let host = format!("host={addr}");
    let told: Vec<String> = support::observe::lines(&recording.events())
        .into_iter()
        .filter(|line| !line.starts_with("budget_tokens") && !line.starts_with("breaker_call"))
        .map(|line| line.replace(&host, "host=H"))
        .map(|line| match line.split_once(" duration=") {
            Some((head, _)) => head.to_owned(),
            None => line,
        })
        .collect();
    assert_eq!(
        told,
        [
            "breaker_created host=H",
            "attempt_started host=H kind=first number=1",
            "attempt_finished host=H kind=first number=1 outcome=5xx",
            "attempt_started host=H kind=retry number=2",
            "attempt_finished host=H kind=retry number=2 outcome=5xx",
            "retry_skipped host=H reason=max_attempts",
            "call_finished host=H outcome=5xx",
        ]
    );
}

/// C6: a retry whose wait (here the server's `Retry-After: 5`) does not fit
/// the time left is not started: the 503 comes back at once.
async fn a_retry_that_does_not_fit_is_not_started<D: Door>() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        (StatusCode::SERVICE_UNAVAILABLE, [(RETRY_AFTER, "5")])
    }))
    .await;
    let door = D::new(&config());

    let start = Instant::now();
    let outcome =
        ends(Deadline::after(SECS(3)).scope(door.get(format!("http://{addr}/"), &[]))).await;

    assert_eq!(outcome, Ok(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(recorder.count(), 1, "{:?}", recorder.hits());
    // Well before the deadline, which a call that waited would reach.
    assert!(start.elapsed() < SECS(2), "{:?}", start.elapsed());
}

/// C4: transient failures are retried until one succeeds.
async fn transient_failures_are_retried_until_one_succeeds<D: Door>() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |hit| async move {
        if hit < 3 {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        }
    }))
    .await;
    let door = D::new(&config());

    let outcome =
        ends(Deadline::after(SECS(2)).scope(door.get(format!("http://{addr}/"), &[]))).await;

    assert_eq!(outcome, Ok(StatusCode::OK));
    assert_eq!(recorder.count(), 3);
}

/// B2: a host's bucket pays for two retries of 14 tokens from its 28; the
/// next call's first attempt earns too little for another.
async fn the_hosts_budget_bounds_the_retries<D: Door>() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        StatusCode::SERVICE_UNAVAILABLE
    }))
    .await;
    let mut config = config();
    config.breaker.enabled = false;
    config.http.client.retry_budget.capacity = 28;
    let door = D::new(&config);
    let url = format!("http://{addr}/");

    let first = ends(Deadline::after(SECS(2)).scope(door.get(url.clone(), &[]))).await;
    let after_first = recorder.count();
    let second = ends(Deadline::after(SECS(2)).scope(door.get(url, &[]))).await;

    assert_eq!(first, Ok(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(second, Ok(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(after_first, 3, "one attempt and two paid retries");
    assert_eq!(recorder.count() - after_first, 1, "no tokens left to retry");
}

/// B1: after three failures in a row the host's breaker opens, and the next
/// call fails fast without reaching the host.
async fn an_open_breaker_fails_fast<D: Door>() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        StatusCode::INTERNAL_SERVER_ERROR
    }))
    .await;
    let mut config = config();
    config.http.client.max_retries = 0;
    config.breaker.minimum_sample_count = 3;
    let door = D::new(&config);
    let url = format!("http://{addr}/");

    for _ in 0..3 {
        let outcome = ends(door.get(url.clone(), &[])).await;
        assert_eq!(outcome, Ok(StatusCode::INTERNAL_SERVER_ERROR));
    }
    let outcome = ends(door.get(url, &[])).await;

    assert_eq!(outcome, Err(Failure::BreakerOpen));
    assert_eq!(recorder.count(), 3);
}

/// C7: each redirect hop carries what is left of the deadline, less after
/// a slow first hop.
async fn each_redirect_hop_carries_less_time_left<D: Door>() {
    let recorder = Recorder::new();
    let answer = |path: &str| -> Response {
        match path {
            "/slow" => (StatusCode::FOUND, [(LOCATION, "/end")]).into_response(),
            _ => StatusCode::OK.into_response(),
        }
    };
    let router = {
        let recorder = recorder.clone();
        Router::new().fallback(move |request: Request| {
            let recorder = recorder.clone();
            async move {
                recorder.record(&request);
                if request.uri().path() == "/slow" {
                    sleep(MS(200)).await;
                }
                answer(request.uri().path())
            }
        })
    };
    let addr = serve(router).await;
    let door = D::new(&config());

    let outcome =
        ends(Deadline::after(SECS(2)).scope(door.get(format!("http://{addr}/slow"), &[]))).await;

    assert_eq!(outcome, Ok(StatusCode::OK));
    let hits = recorder.hits();
    let left: Vec<u64> = hits
        .iter()
        .map(|hit| {
            hit.deadline_header
                .as_deref()
                .expect("the header")
                .parse()
                .expect("ms")
        })
        .collect();
    assert_eq!(
        hits.iter().map(|hit| hit.path.as_str()).collect::<Vec<_>>(),
        ["/slow", "/end"]
    );
    assert!(left[0] <= 2000 && left[0] > 1500, "{left:?}");
    assert!(
        left[1] + 150 <= left[0],
        "the second hop has at least 150 ms less: {left:?}"
    );
}

/// C3: a caller's shorter deadline header goes out exactly as set.
async fn a_callers_shorter_header_goes_out_as_set<D: Door>() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async { StatusCode::OK })).await;
    let door = D::new(&config());

    goes_out_as_set(&recorder, 250, || async {
        let outcome = ends(Deadline::after(SECS(10)).scope(door.get(
            format!("http://{addr}/"),
            &[("x-timebox-deadline-ms", "250")],
        )))
        .await;
        assert_eq!(outcome, Ok(StatusCode::OK));
    })
    .await;
}

/// A host that never answers, recording what it gets; its address.
async fn hanging(recorder: &Recorder) -> std::net::SocketAddr {
    serve(recording(recorder, |_| {
        std::future::pending::<StatusCode>()
    }))
    .await
}

/// C1, C2: a hanging host ends the call at the deadline, after one hit.
async fn a_hanging_host_ends_the_call_at_the_deadline<D: Door>() {
    let recorder = Recorder::new();
    let addr = hanging(&recorder).await;
    let door = D::new(&config());

    let start = Instant::now();
    let outcome =
        ends(Deadline::after(MS(300)).scope(door.get(format!("http://{addr}/"), &[]))).await;

    assert_eq!(outcome, Err(Failure::Deadline));
    assert!(start.elapsed() < SECS(2), "{:?}", start.elapsed());
    assert_eq!(recorder.count(), 1);
}

/// `CallOptions::attempt_timeout` bounds each attempt instead of
/// `http.client.timeout_secs` (30 s here), with no deadline of its own.
async fn a_calls_own_attempt_timeout_ends_its_attempt<D: Door>() {
    let recorder = Recorder::new();
    let addr = hanging(&recorder).await;
    let door = D::new(&config());

    let start = Instant::now();
    let options = CallOptions::new().attempt_timeout(MS(100)).retries(0);
    let outcome = ends(door.post(format!("http://{addr}/"), "order", options)).await;

    let Err(Failure::Other(said)) = outcome else {
        panic!("the attempt times out: {outcome:?}");
    };
    assert!(said.contains("timed out"), "{said}");
    assert!(start.elapsed() < SECS(2), "{:?}", start.elapsed());
    assert_eq!(recorder.count(), 1);
    assert_eq!(recorder.hits()[0].deadline_header, None, "no deadline");
}

/// A3: a first attempt that has not answered after the delay gets a hedge,
/// which answers; the first one's connection is dropped.
async fn a_slow_first_attempt_is_hedged_and_the_hedge_wins<D: Door>() {
    let recorder = Recorder::new();
    let seen = recorder.clone();
    // The first attempt hangs, told by its header rather than by the order
    // the two arrive in.
    let addr = serve(Router::new().fallback(move |request: Request| {
        let seen = seen.clone();
        async move {
            seen.record(&request);
            if !request.headers().contains_key("x-timebox-attempt") {
                std::future::pending::<()>().await;
            }
            StatusCode::OK
        }
    }))
    .await;
    let config = hedging_config();
    let door = D::new(&config);

    let start = Instant::now();
    let outcome =
        ends(Deadline::after(SECS(2)).scope(door.get(format!("http://{addr}/"), &[]))).await;

    assert_eq!(outcome, Ok(StatusCode::OK));
    assert!(start.elapsed() < SECS(1), "{:?}", start.elapsed());
    let mut attempts: Vec<_> = recorder
        .hits()
        .iter()
        .map(|hit| hit.headers.get("x-timebox-attempt").cloned())
        .collect();
    attempts.sort();
    assert_eq!(attempts, [None, Some("2;hedge".parse().unwrap())]);
}

/// Runs every scenario through every door.
macro_rules! doors {
    ($($scenario:ident),* $(,)?) => {
        mod through_client {
            $(#[tokio::test] async fn $scenario() { super::$scenario::<super::ByClient>().await })*
        }
        mod through_middleware {
            $(#[tokio::test] async fn $scenario() { super::$scenario::<super::ByMiddleware>().await })*
        }
        mod through_layer {
            $(#[tokio::test] async fn $scenario() { super::$scenario::<super::ByLayer>().await })*
        }
    };
}

doors!(
    the_calls_events_are_told,
    an_opted_in_post_is_retried_with_one_idempotency_key,
    a_retry_that_does_not_fit_is_not_started,
    transient_failures_are_retried_until_one_succeeds,
    the_hosts_budget_bounds_the_retries,
    an_open_breaker_fails_fast,
    each_redirect_hop_carries_less_time_left,
    a_callers_shorter_header_goes_out_as_set,
    a_hanging_host_ends_the_call_at_the_deadline,
    a_calls_own_attempt_timeout_ends_its_attempt,
    a_slow_first_attempt_is_hedged_and_the_hedge_wins,
);

// Each door's own edges.

/// Records the [`Attempt`] of every request that passes.
#[derive(Clone, Default)]
struct Attempts(Arc<Mutex<Vec<Attempt>>>);

impl Attempts {
    fn seen(&self) -> Vec<Attempt> {
        self.0.lock().expect("not poisoned").clone()
    }

    fn record(&self, extensions: &http::Extensions) {
        let attempt = *extensions
            .get::<Attempt>()
            .expect("every attempt is marked");
        self.0.lock().expect("not poisoned").push(attempt);
    }
}

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Attempts {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        self.record(extensions);
        next.run(request, extensions).await
    }
}

impl Attempts {
    /// hyper-util's client, recording each request's [`Attempt`] on its way
    /// in.
    fn around_hyper(
        &self,
    ) -> impl Service<
        http::Request<Full<Bytes>>,
        Response = http::Response<hyper::body::Incoming>,
        Error = hyper_util::client::legacy::Error,
        Future: Send,
    > + Clone
           + Send
           + 'static {
        let attempts = self.clone();
        let hyper = hyper();
        tower::service_fn(move |request: http::Request<Full<Bytes>>| {
            attempts.record(request.extensions());
            hyper.request(request)
        })
    }
}

/// A request body reqwest cannot copy: a stream of one chunk.
fn streaming_body() -> reqwest::Body {
    reqwest::Body::wrap_stream(futures_util::stream::iter([Ok::<_, std::io::Error>(
        Bytes::from("chunk"),
    )]))
}

/// A redirect, then a 503, then a 200: first, redirect, retry.
fn redirect_then_retry(recorder: &Recorder) -> Router {
    recording(recorder, |hit| async move {
        match hit {
            1 => (StatusCode::TEMPORARY_REDIRECT, [(LOCATION, "/next")]).into_response(),
            2 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
            _ => StatusCode::OK.into_response(),
        }
    })
}

/// Written as the contract writes an attempt, `Attempt { number, kind }`.
const FIRST_REDIRECT_RETRY: [Attempt; 3] = [
    Attempt {
        number: 1,
        kind: AttemptKind::First,
    },
    Attempt {
        number: 2,
        kind: AttemptKind::Redirect,
    },
    Attempt {
        number: 3,
        kind: AttemptKind::Retry,
    },
];

#[tokio::test]
async fn the_middleware_marks_every_attempt_for_the_middlewares_after_it() {
    let recorder = Recorder::new();
    let addr = serve(redirect_then_retry(&recorder)).await;
    let attempts = Attempts::default();
    let client = reqwest_middleware::ClientBuilder::new(reqwest_builder().build().unwrap())
        .with(Timebox::new(&config()))
        .with(attempts.clone())
        .build();

    let response = ends(client.get(format!("http://{addr}/")).send())
        .await
        .unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(attempts.seen(), FIRST_REDIRECT_RETRY);
}

#[tokio::test]
async fn the_layer_marks_every_attempt_for_the_service_inside_it() {
    let recorder = Recorder::new();
    let addr = serve(redirect_then_retry(&recorder)).await;
    let attempts = Attempts::default();
    let inner = attempts.around_hyper();
    let client = ClientLayer::new(&config()).layer(inner);
    let request = http::Request::get(format!("http://{addr}/"))
        .body(Full::default())
        .unwrap();

    let response = ends(client.oneshot(request)).await.unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(attempts.seen(), FIRST_REDIRECT_RETRY);
}

/// Counts the spans reqwest-tracing opens.
#[derive(Clone, Default)]
struct SpanCount(Arc<Mutex<usize>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanCount {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().target().starts_with("reqwest_tracing") {
            *self.0.lock().expect("not poisoned") += 1;
        }
    }
}

#[tokio::test]
async fn reqwest_tracing_after_the_middleware_opens_one_span_per_attempt() {
    use tracing_subscriber::layer::SubscriberExt;

    let spans = SpanCount::default();
    let _subscriber = support::logs::scoped(tracing_subscriber::registry().with(spans.clone()));
    let recorder = Recorder::new();
    let addr = serve(redirect_then_retry(&recorder)).await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest_builder().build().unwrap())
        .with(Timebox::new(&config()))
        .with(reqwest_tracing::TracingMiddleware::default())
        .build();

    let response = ends(client.get(format!("http://{addr}/")).send())
        .await
        .unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(recorder.count(), 3);
    assert_eq!(*spans.0.lock().unwrap(), 3, "one span per attempt");
}

#[tokio::test]
async fn a_streaming_body_is_sent_once_and_never_retried() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        StatusCode::SERVICE_UNAVAILABLE
    }))
    .await;
    let client = ByMiddleware::new(&config()).0;

    let response = ends(
        client
            .put(format!("http://{addr}/"))
            .body(streaming_body())
            .send(),
    )
    .await
    .unwrap();

    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        recorder.count(),
        1,
        "a PUT is idempotent, but its body is gone"
    );
}

#[tokio::test]
async fn a_buffered_body_is_sent_again_on_a_retry() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |hit| async move {
        if hit < 2 {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        }
    }))
    .await;
    let client = ByMiddleware::new(&config()).0;

    let response = ends(
        client
            .put(format!("http://{addr}/"))
            .body("the body")
            .send(),
    )
    .await
    .unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    let hits = recorder.hits();
    assert_eq!(hits.len(), 2);
    for hit in hits {
        assert_eq!(hit.headers.get(http::header::CONTENT_LENGTH).unwrap(), "8");
    }
}

/// C7: the middleware's reqwest client adds its default headers to every
/// request, where a hop cannot take them off: a redirect to another origin
/// is the answer, so its `Authorization` never reaches that origin.
#[tokio::test]
async fn through_the_middleware_a_redirect_to_another_origin_is_the_answer() {
    let other_seen = Recorder::new();
    let first = redirecting_to_another_origin(&other_seen).await;
    let reqwest = reqwest_builder()
        .default_headers(a_default_authorization())
        .build()
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest)
        .with(Timebox::new(&Config::default()))
        .build();
    let response = client
        .get(format!("http://{first}/go"))
        .send()
        .await
        .expect("an answer");
    the_redirect_was_the_answer(response.status(), &other_seen);
}

/// C7: a layer inside `ClientLayer` adds its headers to every request,
/// where a hop cannot take them off: a redirect to another origin is the
/// answer, so the `Authorization` it adds never reaches that origin.
#[tokio::test]
async fn through_the_layer_a_redirect_to_another_origin_is_the_answer() {
    let other_seen = Recorder::new();
    let first = redirecting_to_another_origin(&other_seen).await;
    let credentials = a_default_authorization();
    let inner = tower::ServiceBuilder::new()
        .map_request(move |mut request: http::Request<Full<Bytes>>| {
            request.headers_mut().extend(credentials.clone());
            request
        })
        .service(hyper());
    let client = ClientLayer::new(&Config::default()).layer(inner);
    let request = http::Request::get(format!("http://{first}/go"))
        .body(Full::default())
        .unwrap();
    let response = ends(client.oneshot(request)).await.expect("an answer");
    the_redirect_was_the_answer(response.status(), &other_seen);
}

#[tokio::test]
async fn a_reqwest_client_with_redirects_on_is_refused_by_the_middleware() {
    let recorder = Recorder::new();
    let addr = serve(redirect_then_retry(&recorder)).await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(Timebox::new(&config()))
        .build();

    let err = ends(client.get(format!("http://{addr}/")).send())
        .await
        .expect_err("a client that follows redirects itself is refused");

    let text = format!("{:?}", anyhow_chain(&err));
    assert!(text.contains("followed a redirect itself"), "{text}");
    assert!(
        text.contains("`.redirect(reqwest::redirect::Policy::none())`"),
        "{text}"
    );
}

/// A middleware that answers itself, as a cache or a stub does.
struct Answers;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Answers {
    async fn handle(
        &self,
        _: reqwest::Request,
        _: &mut http::Extensions,
        _: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        Ok(http::Response::new("from the cache").into())
    }
}

#[tokio::test]
async fn a_response_a_later_middleware_makes_up_is_not_taken_for_a_redirect() {
    let client = reqwest_middleware::ClientBuilder::new(reqwest_builder().build().unwrap())
        .with(Timebox::new(&config()))
        .with(Answers)
        .build();

    // No server: the answer never leaves the middleware chain.
    let response = ends(client.get("http://127.0.0.1:9/").send())
        .await
        .expect("the made-up answer comes back");

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "from the cache");
}

/// A middleware that lets the first request through and fails every later
/// one on our side, as a token refresh that fails does.
#[derive(Default, Clone)]
struct FailsAfterTheFirst(Arc<AtomicUsize>);

impl FailsAfterTheFirst {
    /// How many requests it saw.
    fn seen(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for FailsAfterTheFirst {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            return next.run(request, extensions).await;
        }
        Err(reqwest_middleware::Error::middleware(
            std::io::Error::other("the token refresh failed"),
        ))
    }
}

/// A client whose `Timebox` middleware, of `config`, has a
/// [`FailsAfterTheFirst`] after it, that middleware, and the bucket of the
/// host at `addr`.
fn failing_after_the_first(
    config: &Config,
    addr: SocketAddr,
) -> (
    reqwest_middleware::ClientWithMiddleware,
    FailsAfterTheFirst,
    RetryBudget,
) {
    let timebox = Timebox::new(config);
    let failing = FailsAfterTheFirst::default();
    let client = reqwest_middleware::ClientBuilder::new(reqwest_builder().build().unwrap())
        .with(timebox.clone())
        .with(failing.clone())
        .build();
    let budget = timebox
        .budgets()
        .for_uri(&format!("http://{addr}/").parse().unwrap())
        .expect("a bucket");
    (client, failing, budget)
}

/// B2: a retry that a later middleware fails before it is sent never
/// reached the host: its tokens go back.
#[tokio::test]
async fn a_retry_a_later_middleware_fails_gives_its_tokens_back() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        StatusCode::SERVICE_UNAVAILABLE
    }))
    .await;
    let (client, failing, budget) = failing_after_the_first(&config(), addr);
    let full = budget.tokens();

    let err = ends(client.get(format!("http://{addr}/")).send())
        .await
        .expect_err("the retry fails on our side");

    assert!(
        format!("{:?}", anyhow_chain(&err)).contains("token refresh"),
        "{err:?}"
    );
    assert_eq!(recorder.count(), 1, "only the first attempt was sent");
    assert_eq!(failing.seen(), 2, "the retry was made");
    assert!(
        (budget.tokens() - full).abs() < 1e-9,
        "{} of {full}",
        budget.tokens()
    );
}

/// A3: a hedge that a later middleware fails before it is sent never
/// reached the host either: its tokens go back, and the first attempt's
/// answer is the call's.
#[tokio::test]
async fn a_hedge_a_later_middleware_fails_gives_its_tokens_back() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        sleep(MS(200)).await;
        StatusCode::OK
    }))
    .await;
    let config = hedging_config();
    let (client, failing, budget) = failing_after_the_first(&config, addr);
    let full = budget.tokens();

    let response = ends(client.get(format!("http://{addr}/")).send())
        .await
        .expect("the first attempt answers");

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(recorder.count(), 1, "the hedge was never sent");
    assert_eq!(failing.seen(), 2, "the hedge was made");
    assert!(
        (budget.tokens() - full).abs() < 1e-9,
        "{} of {full}",
        budget.tokens()
    );
}

/// A middleware that sends every request to `addr`, as service discovery
/// does.
struct Discovery(SocketAddr);

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Discovery {
    async fn handle(
        &self,
        mut request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let url = request.url_mut();
        url.set_ip_host(self.0.ip()).unwrap();
        url.set_port(Some(self.0.port())).unwrap();
        next.run(request, extensions).await
    }
}

#[tokio::test]
async fn a_middleware_that_sends_the_request_elsewhere_belongs_before_timebox() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async { StatusCode::OK })).await;
    let before = reqwest_middleware::ClientBuilder::new(reqwest_builder().build().unwrap())
        .with(Discovery(addr))
        .with(Timebox::new(&config()))
        .build();
    let response = ends(before.get("http://orders.internal/").send())
        .await
        .expect("the request goes where discovery sends it");
    assert_eq!(response.status(), StatusCode::OK);

    // After `Timebox`, the answer comes from a URL it did not ask for.
    let after = reqwest_middleware::ClientBuilder::new(reqwest_builder().build().unwrap())
        .with(Timebox::new(&config()))
        .with(Discovery(addr))
        .build();
    let err = ends(after.get("http://orders.internal/").send())
        .await
        .expect_err("taken for a redirect reqwest followed");
    let text = format!("{:?}", anyhow_chain(&err));
    assert!(text.contains("followed a redirect itself"), "{text}");
    assert!(text.contains("a middleware after timebox's"), "{text}");
    assert_eq!(recorder.count(), 2);
}

/// The error's `Display` and every `source()` after it.
fn anyhow_chain(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut chain = vec![err.to_string()];
    let mut next = err.source();
    while let Some(err) = next {
        chain.push(err.to_string());
        next = err.source();
    }
    chain
}

#[tokio::test]
async fn the_middlewares_deadline_error_holds_the_deadline_in_its_sources() {
    let addr = serve(recording(&Recorder::new(), |_| {
        std::future::pending::<StatusCode>()
    }))
    .await;
    let client = ByMiddleware::new(&config()).0;

    let err = ends(Deadline::after(MS(100)).scope(client.get(format!("http://{addr}/")).send()))
        .await
        .expect_err("the deadline ends the call");

    assert!(is_deadline_exceeded(&err), "{:?}", anyhow_chain(&err));
    assert_eq!(middleware_failure(&err), Failure::Deadline);
}

#[tokio::test]
async fn an_error_of_the_chain_comes_back_from_the_middleware_as_it_was() {
    let refusing = Refusing::new();
    let addr = refusing.addr();
    let mut config = config();
    config.http.client.max_retries = 1;
    let client = ByMiddleware::new(&config).0;

    let err = ends(client.get(format!("http://{addr}/")).send())
        .await
        .expect_err("nothing listens there");

    match err {
        reqwest_middleware::Error::Reqwest(err) => assert!(err.is_connect(), "{err:?}"),
        other @ reqwest_middleware::Error::Middleware(_) => {
            panic!("expected reqwest's own error, got {other:?}")
        }
    }
}

/// C3: a caller's header that gives more time than a deadline can hold
/// (timebox caps one at 30 years) still goes out exactly as set.
#[tokio::test(start_paused = true)]
async fn through_the_layer_a_header_past_the_deadlines_cap_goes_out_as_set() {
    let (seen, inner) = header_seen();
    let client = ClientLayer::new(&config()).layer(inner);
    let request = http::Request::get("http://in-memory/")
        .header("x-timebox-deadline-ms", "999999999999999")
        .body(Full::default())
        .unwrap();

    client.oneshot(request).await.unwrap();

    let sent = seen.lock().unwrap().clone();
    assert_eq!(
        sent,
        [Some(http::HeaderValue::from_static("999999999999999"))]
    );
}

/// The deadline header of each request a [`header_seen`] service was sent.
type Seen = Arc<Mutex<Vec<Option<http::HeaderValue>>>>;

/// An in-process service that answers 200 and keeps the deadline header of
/// each request it is sent.
fn header_seen() -> (
    Seen,
    impl Service<
            http::Request<Full<Bytes>>,
            Response = http::Response<Full<Bytes>>,
            Error = Infallible,
            Future: Send,
        > + Clone
        + Send
        + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let inner = tower::service_fn({
        let seen = Arc::clone(&seen);
        move |request: http::Request<Full<Bytes>>| {
            let mut values = request.headers().get_all("x-timebox-deadline-ms").iter();
            let header = values.next().cloned();
            assert_eq!(values.next(), None, "C3: one deadline header goes out");
            seen.lock().unwrap().push(header);
            async { Ok(http::Response::new(Full::<Bytes>::default())) }
        }
    });
    (seen, inner)
}

/// C3: a call the layer was given can start later (behind a
/// `tower::Buffer`, or held by its caller): a caller's deadline header then
/// goes out as what is left of it, never as more.
#[tokio::test(start_paused = true)]
async fn through_the_layer_a_header_set_before_the_call_started_goes_out_as_what_is_left() {
    let (seen, inner) = header_seen();
    let mut client = ClientLayer::new(&config()).layer(inner);
    let request = http::Request::get("http://in-memory/")
        .header("x-timebox-deadline-ms", "200")
        .body(Full::default())
        .unwrap();

    let call = client.ready().await.unwrap().call(request);
    tokio::time::advance(MS(150)).await;
    let response = call.await.unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        *seen.lock().unwrap(),
        [Some(http::HeaderValue::from_static("50"))]
    );
}

#[tokio::test]
async fn the_layer_retries_a_refused_connection_and_says_connect() {
    let refusing = Refusing::new();
    let addr = refusing.addr();
    let attempts = Attempts::default();
    let inner = attempts.around_hyper();
    let mut config = config();
    config.http.client.max_retries = 2;
    let client = ClientLayer::new(&config).layer(inner);
    let request = http::Request::get(format!("http://{addr}/"))
        .body(Full::default())
        .unwrap();

    let err = ends(client.oneshot(request))
        .await
        .expect_err("nothing listens there");

    assert!(matches!(err, ClientError::Connect(_)), "{err:?}");
    assert_eq!(
        attempts.seen().len(),
        3,
        "the first attempt and two retries"
    );
}

/// An inner service that answers `/` with a `307` to `/next` after 900 ms
/// and `/next` with a `200` after 50 ms, and is not ready for 500 ms after
/// it answered `/` (a limit another caller holds).
#[derive(Default)]
struct BusyAfterRedirect {
    busy_until: Arc<Mutex<Option<Instant>>>,
    waiting: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Clone for BusyAfterRedirect {
    fn clone(&self) -> Self {
        Self {
            busy_until: Arc::clone(&self.busy_until),
            waiting: None,
        }
    }
}

impl Service<http::Request<Full<Bytes>>> for BusyAfterRedirect {
    type Response = http::Response<Full<Bytes>>;
    type Error = Infallible;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if let Some(until) = *self.busy_until.lock().unwrap() {
            let waiting = self
                .waiting
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
            ready!(waiting.as_mut().poll(cx));
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Full<Bytes>>) -> Self::Future {
        let busy_until = Arc::clone(&self.busy_until);
        Box::pin(async move {
            let mut response = http::Response::new(Full::default());
            if request.uri().path() == "/" {
                sleep(MS(900)).await;
                *busy_until.lock().unwrap() = Some(Instant::now() + MS(500));
                *response.status_mut() = StatusCode::TEMPORARY_REDIRECT;
                response.headers_mut().insert(
                    LOCATION,
                    http::HeaderValue::from_static("http://up.test/next"),
                );
            } else {
                sleep(MS(50)).await;
            }
            Ok(response)
        })
    }
}

/// A hop that waits for the inner service to be ready does not spend its
/// attempt's timeout on that wait: the hop still has the 100 ms its
/// attempt had left when the redirect came.
#[tokio::test(start_paused = true)]
async fn through_the_layer_a_hops_wait_for_readiness_is_not_in_its_attempts_timeout() {
    let mut config = config();
    config.http.client.timeout_secs = 1;
    config.http.client.max_retries = 0;
    let client = ClientLayer::new(&config).layer(BusyAfterRedirect::default());
    let request = http::Request::get("http://up.test/")
        .body(Full::default())
        .unwrap();
    let start = Instant::now();

    let response = client.oneshot(request).await.expect("the hop answers");

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(start.elapsed(), MS(1450));
}

/// An inner service whose readiness fails for the first retry, with a
/// refused connection: its first call answers `503`, any later one `200`.
#[derive(Clone, Default)]
struct RefusedOnceReadied {
    readied: Arc<AtomicUsize>,
    called: Arc<AtomicUsize>,
}

impl Service<http::Request<Full<Bytes>>> for RefusedOnceReadied {
    type Response = http::Response<Full<Bytes>>;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let n = self.readied.fetch_add(1, Ordering::SeqCst);
        Poll::Ready(if n == 1 {
            Err(std::io::ErrorKind::ConnectionRefused.into())
        } else {
            Ok(())
        })
    }

    fn call(&mut self, _: http::Request<Full<Bytes>>) -> Self::Future {
        let n = self.called.fetch_add(1, Ordering::SeqCst);
        let mut response = http::Response::new(Full::default());
        if n == 0 {
            *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        }
        std::future::ready(Ok(response))
    }
}

/// An inner service that fails to get ready for a retry (as a
/// `tower::Buffer` does once its worker saw its service fail): the call
/// ends with that error, not retried through it, and neither the retry nor
/// a breaker count is told for a request that was never sent.
#[tokio::test(start_paused = true)]
async fn through_the_layer_a_service_that_fails_to_get_ready_for_a_retry_ends_the_call() {
    let recording = timebox::observe::Recording::new();
    let mut config = config();
    config.http.client.max_retries = 2;
    let inner = RefusedOnceReadied::default();
    let client = ClientLayer::new(&config.observed_by(recording.clone())).layer(inner.clone());
    let request = http::Request::get("http://up.test/")
        .body(Full::default())
        .unwrap();

    let err = client
        .oneshot(request)
        .await
        .expect_err("the retry's readiness failed");

    assert!(matches!(err, ClientError::Connect(_)), "{err:?}");
    assert_eq!(
        inner.called.load(Ordering::SeqCst),
        1,
        "only the first attempt was sent"
    );
    let told = support::observe::lines_of(&recording.events(), &["attempt_", "breaker_call"]);
    assert_eq!(
        told,
        [
            "attempt_started host=up.test:80 kind=first number=1",
            "attempt_finished host=up.test:80 kind=first number=1 outcome=5xx",
            "breaker_call host=up.test:80 outcome=failure",
        ]
    );
}

/// An inner service that answers `503` once, and is never ready again (a
/// limit another caller holds for good).
#[derive(Clone, Default)]
struct BusyAfterA503(Arc<AtomicBool>);

impl Service<http::Request<Full<Bytes>>> for BusyAfterA503 {
    type Response = http::Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.0.load(Ordering::SeqCst) {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    }

    fn call(&mut self, _: http::Request<Full<Bytes>>) -> Self::Future {
        self.0.store(true, Ordering::SeqCst);
        let mut response = http::Response::new(Full::default());
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        std::future::ready(Ok(response))
    }
}

/// A retry whose wait fitted, but that the deadline ends while the inner
/// service is not ready for it, is told as skipped for the deadline.
#[tokio::test(start_paused = true)]
async fn through_the_layer_a_retry_the_deadline_ends_before_it_is_sent_is_told_skipped() {
    let recording = timebox::observe::Recording::new();
    let client =
        ClientLayer::new(&config().observed_by(recording.clone())).layer(BusyAfterA503::default());
    let request = http::Request::get("http://up.test/")
        .body(Full::default())
        .unwrap();

    let err = Deadline::after(MS(500))
        .scope(client.oneshot(request))
        .await
        .expect_err("the deadline passes before the retry is sent");

    assert!(is_deadline_exceeded(&err), "{err:?}");
    let told = support::observe::lines_of(&recording.events(), &["attempt_", "retry_skipped"]);
    assert_eq!(
        told,
        [
            "attempt_started host=up.test:80 kind=first number=1",
            "attempt_finished host=up.test:80 kind=first number=1 outcome=5xx",
            "retry_skipped host=up.test:80 reason=deadline",
        ]
    );
}

#[tokio::test]
async fn the_layer_refuses_a_relative_uri_naming_it() {
    let client = ByLayer::new(&config()).0;
    let request = http::Request::get("/relative?api_key=s3cret")
        .body(Full::default())
        .unwrap();

    let err = ends(client.oneshot(request))
        .await
        .expect_err("no host to send to");

    assert!(matches!(err, ClientError::InvalidRequest(_)), "{err:?}");
    assert!(err.to_string().contains("`/relative`"), "{err}");
    assert!(
        !err.to_string().contains("s3cret"),
        "a query may hold secrets: {err}"
    );
}

/// Why the docs say not to combine them: reqwest-retry around `Timebox`
/// retries each of `Timebox`'s calls, so the attempts multiply (here 3 × 2
/// against a host that always answers 503, where `Timebox` alone makes 2).
#[tokio::test]
async fn reqwest_retry_around_the_middleware_multiplies_the_attempts() {
    use reqwest_retry::policies::ExponentialBackoff;
    use reqwest_retry::RetryTransientMiddleware;

    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        StatusCode::SERVICE_UNAVAILABLE
    }))
    .await;
    let mut config = config();
    config.breaker.enabled = false;
    config.http.client.max_retries = 1;
    let retry = ExponentialBackoff::builder()
        .retry_bounds(MS(1), MS(5))
        .build_with_max_retries(2);
    let both = reqwest_middleware::ClientBuilder::new(reqwest_builder().build().unwrap())
        .with(RetryTransientMiddleware::new_with_policy(retry))
        .with(Timebox::new(&config))
        .build();
    let alone = ByMiddleware::new(&config).0;
    let url = format!("http://{addr}/");

    let response = ends(alone.get(&url).send()).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let by_timebox = recorder.count();
    let response = ends(both.get(&url).send()).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);

    assert_eq!(by_timebox, 2, "one attempt and Timebox's one retry");
    assert_eq!(
        recorder.count() - by_timebox,
        6,
        "reqwest-retry's 3 calls of 2 attempts"
    );
}

#[tokio::test]
async fn the_layer_takes_the_deadline_current_where_it_is_called() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async { StatusCode::OK })).await;
    let mut client = ByLayer::new(&config()).0;
    let request = http::Request::get(format!("http://{addr}/"))
        .body(Full::default())
        .unwrap();

    // Called under the deadline, polled after it on another task.
    #[allow(clippy::async_yields_async)] // the point: made here, awaited there
    let response = Deadline::after(SECS(10))
        .scope(async {
            client.ready().await.expect("hyper's client is ready");
            client.call(request)
        })
        .await;
    let response = ends(tokio::spawn(response)).await.unwrap().unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    let left: u64 = recorder.hits()[0]
        .deadline_header
        .as_deref()
        .expect("the call carried the deadline")
        .parse()
        .expect("ms");
    assert!(left > 9_000 && left <= 10_000, "{left}");
}

/// A `tower::Buffer` outside the layer calls it from its worker task, where
/// no deadline is current; the call takes its caller's, current where the
/// call's future is polled.
#[tokio::test(start_paused = true)]
async fn behind_a_buffer_the_layer_takes_its_callers_deadline() {
    let (seen, inner) = header_seen();
    let client = tower::buffer::Buffer::new(ClientLayer::new(&config()).layer(inner), 8);
    let request = http::Request::get("http://in-memory/")
        .body(Full::default())
        .unwrap();

    let response = Deadline::after(MS(300))
        .scope(client.oneshot(request))
        .await
        .unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        *seen.lock().unwrap(),
        [Some(http::HeaderValue::from_static("300"))]
    );
}

/// D3: a call made under one deadline and polled inside a shorter scope
/// goes out with the shorter one.
#[tokio::test(start_paused = true)]
async fn a_layer_call_polled_in_a_shorter_scope_takes_its_deadline() {
    let (seen, inner) = header_seen();
    let mut client = ClientLayer::new(&config()).layer(inner);
    let request = http::Request::get("http://in-memory/")
        .body(Full::default())
        .unwrap();

    #[allow(clippy::async_yields_async)] // the point: made here, awaited there
    let call = Deadline::after(SECS(10))
        .scope(async {
            client.ready().await.expect("ready");
            client.call(request)
        })
        .await;
    let response = Deadline::after(MS(300)).scope(call).await.unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        *seen.lock().unwrap(),
        [Some(http::HeaderValue::from_static("300"))]
    );
}

#[tokio::test]
async fn a_reqwest_timeout_bounds_each_attempt_and_is_not_retried() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| {
        std::future::pending::<StatusCode>()
    }))
    .await;
    let client = ByMiddleware::new(&config()).0;

    let start = Instant::now();
    let err = ends(
        client
            .get(format!("http://{addr}/"))
            .timeout(MS(100))
            .send(),
    )
    .await
    .expect_err("the host never answers");

    match err {
        reqwest_middleware::Error::Reqwest(err) => assert!(err.is_timeout(), "{err:?}"),
        other @ reqwest_middleware::Error::Middleware(_) => {
            panic!("expected reqwest's timeout, got {other:?}")
        }
    }
    assert!(start.elapsed() < SECS(2), "{:?}", start.elapsed());
    assert_eq!(recorder.count(), 1);
}

#[tokio::test]
async fn a_303_after_a_streaming_body_is_followed_as_a_get() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |hit| async move {
        if hit == 1 {
            (StatusCode::SEE_OTHER, [(LOCATION, "/next")]).into_response()
        } else {
            StatusCode::OK.into_response()
        }
    }))
    .await;
    let client = ByMiddleware::new(&config()).0;

    let response = ends(
        client
            .post(format!("http://{addr}/"))
            .body(streaming_body())
            .send(),
    )
    .await
    .unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    let hits = recorder.hits();
    let seen: Vec<_> = hits
        .iter()
        .map(|hit| (hit.method.as_str(), hit.path.as_str()))
        .collect();
    assert_eq!(seen, [("POST", "/"), ("GET", "/next")]);
}

/// B6: through the middleware too, a request reqwest could not build (an
/// `http` URL for an `https_only` client) is no failure of the host.
#[tokio::test]
async fn through_the_middleware_a_request_reqwest_could_not_build_is_no_failure_of_the_host() {
    let recording = timebox::observe::Recording::new();
    let reqwest = reqwest_builder().https_only(true).build().unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest)
        .with(Timebox::new(&config().observed_by(recording.clone())))
        .build();
    for _ in 0..12 {
        ends(client.get("http://127.0.0.1:9/").send())
            .await
            .unwrap_err();
    }
    assert_eq!(
        support::observe::breaker_calls(&recording.events()),
        [timebox::observe::BreakerCallOutcome::Cancelled; 12],
        "the host was never asked"
    );
}

// Each door's call runs on tokio's timer (every attempt has one): on a
// runtime without it, its first poll panics with tokio's message.

/// A runtime with I/O and no timer, and the address of nothing.
fn without_a_timer() -> (tokio::runtime::Runtime, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("a runtime without its time driver");
    (runtime, "http://127.0.0.1:9/".to_owned())
}

#[test]
#[should_panic(expected = "timers are disabled")]
fn a_client_call_needs_the_time_driver() {
    use futures_util::FutureExt;

    let (runtime, url) = without_a_timer();
    let client = runtime.block_on(async { Client::new(&Config::default()) });
    runtime.block_on(async { client.get(url).send().now_or_never() });
}

#[test]
#[should_panic(expected = "timers are disabled")]
fn a_client_layer_call_needs_the_time_driver() {
    use futures_util::FutureExt;

    let (runtime, url) = without_a_timer();
    let service = ClientLayer::new(&Config::default()).layer(tower::service_fn(
        |_: http::Request<Full<Bytes>>| async {
            Ok::<_, Infallible>(http::Response::new(Full::<Bytes>::default()))
        },
    ));
    let request = http::Request::get(url)
        .body(Full::<Bytes>::default())
        .expect("a request");
    runtime.block_on(async { service.oneshot(request).now_or_never() });
}

#[test]
#[should_panic(expected = "timers are disabled")]
fn a_call_through_the_middleware_needs_the_time_driver() {
    use futures_util::FutureExt;

    let (runtime, url) = without_a_timer();
    let client = ByMiddleware::new(&Config::default()).0;
    runtime.block_on(async { client.get(url).send().now_or_never() });
}
