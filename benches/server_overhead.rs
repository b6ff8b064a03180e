//! What the timebox layers cost a server: requests/s through one small axum
//! app (`GET /hello` answering a short static string), in one run, for six
//! variants of it:
//!
//! - `bare`: a plain axum router;
//! - `timebox_no_deadline`: the handler under `#[timebox::get("/hello")]`,
//!   mounted by `routes![..].into_router(&Config::default())`, with no
//!   deadline configured anywhere;
//! - `timebox_route_deadline`: the same with a 30 s route deadline
//!   (`timeout_ms = 30000`);
//! - `tower_http_timeout`: the plain router under tower-http's
//!   `TimeoutLayer` of 30 s, the peer;
//! - `timebox_route_deadline_metrics`: `timebox_route_deadline` built from
//!   a config observed by `MetricsObserver`, with the Prometheus recorder of
//!   `metrics-exporter-prometheus` installed: every request records its
//!   deadline in `timebox.deadline.remaining` (O3);
//! - `timebox_route_deadline_unchecked`: `timebox_route_deadline` with the
//!   deadline check (A1, on in dark mode by default) turned off, to show
//!   what the check costs.
//!
//! Two groups: `server_overhead/in_process` calls the router with
//! `tower::ServiceExt::oneshot`, so the layers' own cost is most of what is
//! measured; `server_overhead/tcp` serves each variant with `axum::serve` on
//! 127.0.0.1 and sends sequential GETs on one kept-alive HTTP/1.1 connection
//! from hyper's client, so the layers' cost is seen against a real HTTP round
//! trip.
//!
//! In process, each `Router::layer`/`MethodRouter::layer` adds a boxed
//! `Route` that axum clones and whose future it boxes on every request:
//! tower-http's variant pays for one, while timebox applies its deadline
//! inside the handler and pays for none. That is how each is written
//! (`Router::layer` is where tower-http's README puts it), not a cost of
//! tower-http's timeout itself. What remains of timebox's cost is the
//! clock read at the first poll of the handler's future (where the
//! deadline starts and the gate first checks it: 25 to 35 ns on a small
//! VM), the gated future around the handler's, and the deadline check's
//! (A1, dark by default) look-ups and locks, which the `unchecked` variant
//! leaves out. Over TCP,
//! differences of a few percent are within run-to-run noise on a small
//! shared machine: compare runs made on an idle one.
//!
//! After criterion's groups the binary runs the same variants in
//! interleaved rounds (`support/rounds.rs`), whose median per-round ratios
//! and spread are the figures to read; over TCP the rounds add
//! `timebox_serve`, the route-deadline app under `timebox::server::serve`
//! (hyper-util with its connection bounds) instead of `axum::serve`.
//!
//! Goals, in throughput: timebox with a route deadline at least 0.95 of bare
//! axum and at least tower-http's `TimeoutLayer`; timebox with no deadline at
//! least 0.98 of bare axum; the metrics sink at least 0.95 of the same route
//! with no observer (`timebox_route_deadline`).
//! `python3 benches/ratios.py server_overhead --baseline bare --throughput`
//! prints the throughput ratios from the results.

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::header::HOST;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use criterion::measurement::WallTime;
use criterion::{criterion_group, BenchmarkGroup, Criterion, Throughput};
use http_body_util::BodyExt;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use timebox::config::Config;
use timebox::routes;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tower::ServiceExt;
use tower_http::timeout::TimeoutLayer;

#[path = "support/rounds.rs"]
mod rounds;

use rounds::Variant;

/// The deadline of the deadline variants: far enough that no request meets it.
const TIMEOUT: Duration = Duration::from_secs(30);

async fn hello() -> &'static str {
    "hello"
}

#[timebox::get("/hello")]
async fn hello_no_deadline() -> &'static str {
    "hello"
}

#[timebox::get("/hello", timeout_ms = 30000)]
async fn hello_route_deadline() -> &'static str {
    "hello"
}

/// The default config, observed by the `metrics` sink, with a Prometheus
/// recorder installed (once for the process), with the buckets the README
/// gives it.
///
/// `install_recorder` leaves the recorder's upkeep to its caller: without
/// it, every histogram sample stays in memory until a scrape. A thread runs
/// it every 5 s, what `PrometheusBuilder::install`'s own task does, so the
/// samples the requests record are drained as a served app's would be.
fn metrics_config() -> Config {
    static RECORDER: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    RECORDER.get_or_init(|| {
        let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
            .set_buckets_for_metric(
                metrics_exporter_prometheus::Matcher::Prefix("timebox".into()),
                timebox::observe::SECONDS_BUCKETS,
            )
            .expect("the buckets are not empty")
            .install_recorder()
            .expect("the Prometheus recorder installs");
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_secs(5));
            handle.run_upkeep();
        });
    });
    Config::default().observed_by(timebox::observe::MetricsObserver::new())
}

/// The default config with the deadline check (A1) off.
fn unchecked_config() -> Config {
    let mut config = Config::default();
    config.server.admission.deadline_check = timebox::config::DeadlineCheck::Off;
    config
}

/// The six variants, by benchmark name.
fn variants() -> [(&'static str, Router); 6] {
    let config = Config::default();
    [
        ("bare", Router::new().route("/hello", get(hello))),
        (
            "timebox_no_deadline",
            routes![hello_no_deadline].into_router(&config),
        ),
        (
            "timebox_route_deadline",
            routes![hello_route_deadline].into_router(&config),
        ),
        (
            "tower_http_timeout",
            Router::new()
                .route("/hello", get(hello))
                .layer(TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    TIMEOUT,
                )),
        ),
        (
            "timebox_route_deadline_metrics",
            routes![hello_route_deadline].into_router(&metrics_config()),
        ),
        (
            "timebox_route_deadline_unchecked",
            routes![hello_route_deadline].into_router(&unchecked_config()),
        ),
    ]
}

fn hello_request() -> Request<Body> {
    Request::get("/hello")
        .body(Body::empty())
        .expect("the request builds")
}

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    group.throughput(Throughput::Elements(1));
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(5));
}

/// Each request through `oneshot` on a clone of the router.
fn in_process(c: &mut Criterion) {
    let rt = current_thread();
    let mut group = c.benchmark_group("server_overhead/in_process");
    configure(&mut group);
    for (name, app) in variants() {
        let answer = rt.block_on(app.clone().oneshot(hello_request()));
        assert_eq!(
            answer.expect("routers are infallible").status(),
            StatusCode::OK,
            "{name} answers GET /hello"
        );
        group.bench_function(name, |b| {
            b.iter_custom(|iters| rt.block_on(call_hello(&app, iters)));
        });
    }
    group.finish();
}

/// Sends `iters` requests through `app` in process and times them.
async fn call_hello(app: &Router, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        let response = app
            .clone()
            .oneshot(hello_request())
            .await
            .expect("routers are infallible");
        black_box(response.status());
    }
    start.elapsed()
}

/// Each request a GET over a kept-alive loopback connection to `axum::serve`.
fn tcp(c: &mut Criterion) {
    // One thread runs the servers and the client alike, so a request costs no
    // cross-thread wake-up: a wake-up of a parked thread (tens of
    // microseconds, varying with what else the machine runs) would swamp the
    // layers' cost.
    let rt = current_thread();
    let mut group = c.benchmark_group("server_overhead/tcp");
    configure(&mut group);
    group.sample_size(30);
    for (name, app) in variants() {
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port binds");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        rt.spawn(async move { axum::serve(listener, app).await });
        group.bench_function(name, |b| {
            b.iter_custom(|iters| rt.block_on(get_hello(addr, iters)));
        });
    }
    group.finish();
}

/// Opens one HTTP/1.1 connection to `addr`, then sends `iters` sequential
/// GETs on it and times them.
///
/// hyper's client connection rather than a pooled client: a pool decides per
/// request whether the kept-alive connection is back in time to be reused,
/// which made whole runs of one variant slower by a third.
async fn get_hello(addr: SocketAddr, iters: u64) -> Duration {
    let stream = TcpStream::connect(addr)
        .await
        .expect("the loopback server accepts");
    let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .expect("the HTTP/1.1 handshake succeeds");
    let driver = tokio::spawn(connection);
    let start = Instant::now();
    for _ in 0..iters {
        sender.ready().await.expect("the connection stays open");
        let request = Request::get("/hello")
            .header(HOST, addr.to_string())
            .body(Body::empty())
            .expect("the request builds");
        let response = sender
            .send_request(request)
            .await
            .expect("the loopback server answers");
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().collect().await;
        black_box(body.expect("the body arrives").to_bytes());
    }
    let elapsed = start.elapsed();
    drop(sender);
    driver
        .await
        .expect("the connection task does not panic")
        .expect("the connection closes cleanly");
    elapsed
}

/// The same variants in interleaved rounds (see `support/rounds.rs`), in
/// process and over TCP; over TCP also timebox's own `serve` (with a route
/// deadline) beside `axum::serve`.
fn interleaved() {
    let rt = current_thread();
    let mut in_process: Vec<Variant<'_>> = variants()
        .into_iter()
        .map(|(name, app)| {
            let rt = &rt;
            Variant::new(name, move |iters| rt.block_on(call_hello(&app, iters)))
        })
        .collect();
    rounds::run(
        "server_overhead/in_process",
        "bare",
        true,
        &mut in_process,
        40,
        20_000,
    );

    let mut servers: Vec<(&'static str, SocketAddr)> = variants()
        .into_iter()
        .map(|(name, app)| (name, rt.block_on(serve_with_axum(&rt, app))))
        .collect();
    let routed = routes![hello_route_deadline].into_router(&Config::default());
    servers.push((
        "timebox_serve",
        rt.block_on(serve_with_timebox(&rt, routed)),
    ));
    let mut tcp: Vec<Variant<'_>> = servers
        .into_iter()
        .map(|(name, addr)| {
            let rt = &rt;
            Variant::new(name, move |iters| rt.block_on(get_hello(addr, iters)))
        })
        .collect();
    rounds::run("server_overhead/tcp", "bare", true, &mut tcp, 30, 2_000);
}

async fn bind() -> TcpListener {
    TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port binds")
}

async fn serve_with_axum(rt: &Runtime, app: Router) -> SocketAddr {
    let listener = bind().await;
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    rt.spawn(async move { axum::serve(listener, app).await });
    addr
}

async fn serve_with_timebox(rt: &Runtime, app: Router) -> SocketAddr {
    let listener = bind().await;
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    let shutdown = timebox::shutdown::Shutdown::new(&Config::default());
    rt.spawn(timebox::server::serve(listener, app, shutdown));
    addr
}

criterion_group!(benches, in_process, tcp);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if rounds::wanted() {
        interleaved();
    }
}
