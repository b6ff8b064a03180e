//! What timebox's client doors cost a call on the success path: sequential
//! GETs per second to an axum server on a loopback port, body read, in one
//! run. Three groups, each with its peer:
//!
//! `client_overhead/middleware`, a `reqwest_middleware::ClientWithMiddleware`
//! over one `reqwest::Client` with
//! - `reqwest_retry`: reqwest-retry's `RetryTransientMiddleware` (exponential
//!   backoff, 3 retries), the peer;
//! - `timebox`: timebox's `Timebox` middleware, no deadline current;
//! - `timebox_deadline`: the same under a deadline an hour away, so each
//!   call also writes `x-timebox-deadline-ms` and runs gated;
//! - `reqwest`: reqwest alone, for scale.
//!
//! `client_overhead/tower`, hyper-util's legacy client
//! - `hyper_util`: bare, the peer, called as a tower service and cloned
//!   for each `oneshot`, as the layered client is;
//! - `client_layer`: inside `ClientLayer`, under a deadline an hour away;
//! - `client_layer_no_deadline`: the same with no deadline current.
//!
//! `client_overhead/in_process`, a service that answers at once, no network
//! - `service`: called bare;
//! - `client_layer`: inside `ClientLayer`, under a deadline an hour away:
//!   the engine's own cost per call, with nothing to hide it.
//!
//! One current-thread runtime runs server and clients, as in
//! `server_overhead`. After criterion's groups the binary runs each group's
//! variants in interleaved rounds (`support/rounds.rs`), whose median
//! per-round ratio and spread are the figures to read.
//!
//! Goals, in throughput: the middleware at least 1.0 of `reqwest_retry`;
//! `ClientLayer` at least 0.97 of bare hyper-util.

use std::future::Future;
use std::hint::black_box;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::serve::ListenerExt;
use axum::Router;
use bytes::Bytes;
use criterion::{criterion_group, Criterion, Throughput};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use reqwest_middleware::ClientWithMiddleware;
use reqwest_retry::policies::ExponentialBackoff;
use reqwest_retry::RetryTransientMiddleware;
use timebox::client::middleware::{reqwest_builder, Timebox};
use timebox::client::{ClientLayer, ClientService};
use timebox::config::Config;
use timebox::deadline::Deadline;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tower::{Layer, ServiceExt};

#[path = "support/rounds.rs"]
mod rounds;

use rounds::Variant;

/// The calls' deadline, where there is one: far enough that none meets it.
const DEADLINE: Duration = Duration::from_secs(3600);

type Hyper = hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>;

/// A caller of one of the groups.
enum Caller {
    Middleware {
        client: ClientWithMiddleware,
        deadline: bool,
    },
    Reqwest(reqwest::Client),
    Hyper(Hyper),
    Layer {
        client: ClientService<Hyper>,
        deadline: bool,
    },
    Answering(Answering),
    AnsweringLayer(ClientService<Answering>),
}

/// A service that answers `200 ok` at once, no network: what the layer's
/// own work costs, seen against nothing else.
#[derive(Debug, Clone, Copy)]
struct Answering;

impl tower::Service<http::Request<Full<Bytes>>> for Answering {
    type Response = http::Response<Full<Bytes>>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<Full<Bytes>>) -> Self::Future {
        std::future::ready(Ok(http::Response::new(Full::new(Bytes::from_static(
            b"ok",
        )))))
    }
}

impl Caller {
    /// One GET of `url`, its body read.
    async fn call(&self, url: &str) -> usize {
        match self {
            Self::Middleware { client, .. } => {
                let response = client.get(url).send().await.expect("the server answers");
                response.bytes().await.expect("the body arrives").len()
            }
            Self::Reqwest(client) => {
                let response = client.get(url).send().await.expect("the server answers");
                response.bytes().await.expect("the body arrives").len()
            }
            // Called as a tower service, cloned for `oneshot`, as the
            // layered client is.
            Self::Hyper(client) => {
                let response = client
                    .clone()
                    .oneshot(request(url))
                    .await
                    .expect("the server answers");
                body_len(response).await
            }
            Self::Layer { client, .. } => {
                let response = client
                    .clone()
                    .oneshot(request(url))
                    .await
                    .expect("the server answers");
                body_len(response).await
            }
            Self::Answering(service) => {
                let response = (*service).oneshot(request(url)).await.expect("infallible");
                full_len(response).await
            }
            Self::AnsweringLayer(client) => {
                let response = client
                    .clone()
                    .oneshot(request(url))
                    .await
                    .expect("the service answers");
                full_len(response).await
            }
        }
    }

    fn under_deadline(&self) -> bool {
        match self {
            Self::Middleware { deadline, .. } | Self::Layer { deadline, .. } => *deadline,
            Self::AnsweringLayer(_) => true,
            Self::Reqwest(_) | Self::Hyper(_) | Self::Answering(_) => false,
        }
    }
}

fn request(url: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(url)
        .body(Full::default())
        .expect("a valid request")
}

async fn body_len(response: http::Response<hyper::body::Incoming>) -> usize {
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the body arrives");
    body.to_bytes().len()
}

async fn full_len(response: http::Response<Full<Bytes>>) -> usize {
    let body = response.into_body().collect().await.expect("infallible");
    body.to_bytes().len()
}

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
}

/// Serves `GET /` answering `ok` on a loopback port; the count of
/// connections it accepted.
async fn serve(rt: &Runtime) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port binds");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    let accepted = Arc::new(AtomicUsize::new(0));
    let listener = listener.tap_io({
        let accepted = Arc::clone(&accepted);
        move |_| {
            accepted.fetch_add(1, Ordering::Relaxed);
        }
    });
    let router = Router::new().route("/", get(|| async { "ok" }));
    rt.spawn(async move { axum::serve(listener, router).await });
    (addr, accepted)
}

fn middleware_variants() -> Variants {
    let reqwest = || reqwest_builder().build().expect("a reqwest client");
    let config = Config::default();
    let retry = RetryTransientMiddleware::new_with_policy(
        ExponentialBackoff::builder().build_with_max_retries(3),
    );
    vec![
        (
            "reqwest_retry",
            Caller::Middleware {
                client: reqwest_middleware::ClientBuilder::new(reqwest())
                    .with(retry)
                    .build(),
                deadline: false,
            },
        ),
        (
            "timebox",
            Caller::Middleware {
                client: reqwest_middleware::ClientBuilder::new(reqwest())
                    .with(Timebox::new(&config))
                    .build(),
                deadline: false,
            },
        ),
        (
            "timebox_deadline",
            Caller::Middleware {
                client: reqwest_middleware::ClientBuilder::new(reqwest())
                    .with(Timebox::new(&config))
                    .build(),
                deadline: true,
            },
        ),
        ("reqwest", Caller::Reqwest(reqwest())),
    ]
}

fn tower_variants() -> Variants {
    let hyper = || hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build_http();
    vec![
        ("hyper_util", Caller::Hyper(hyper())),
        (
            "client_layer",
            Caller::Layer {
                client: ClientLayer::new(&Config::default()).layer(hyper()),
                deadline: true,
            },
        ),
        (
            "client_layer_no_deadline",
            Caller::Layer {
                client: ClientLayer::new(&Config::default()).layer(hyper()),
                deadline: false,
            },
        ),
    ]
}

/// Makes `iters` sequential calls and times them, under a deadline for the
/// variants that have one.
fn calls<'a>(
    caller: &'a Caller,
    url: &'a str,
    iters: u64,
) -> Pin<Box<dyn Future<Output = Duration> + 'a>> {
    let run = async move {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(caller.call(url).await);
        }
        start.elapsed()
    };
    if caller.under_deadline() {
        Box::pin(Deadline::after(DEADLINE).scope(run))
    } else {
        Box::pin(run)
    }
}

/// A group's variants, each named.
type Variants = Vec<(&'static str, Caller)>;

/// A group of variants and the one the others are measured against.
struct Group {
    name: &'static str,
    baseline: &'static str,
    variants: fn() -> Variants,
}

const GROUPS: [Group; 3] = [
    Group {
        name: "client_overhead/middleware",
        baseline: "reqwest_retry",
        variants: middleware_variants,
    },
    Group {
        name: "client_overhead/tower",
        baseline: "hyper_util",
        variants: tower_variants,
    },
    Group {
        name: "client_overhead/in_process",
        baseline: "service",
        variants: in_process_variants,
    },
];

fn in_process_variants() -> Variants {
    vec![
        ("service", Caller::Answering(Answering)),
        (
            "client_layer",
            Caller::AnsweringLayer(ClientLayer::new(&Config::default()).layer(Answering)),
        ),
    ]
}

fn loopback(c: &mut Criterion) {
    let rt = current_thread();
    let url = format!("http://{}/", rt.block_on(serve(&rt)).0);
    for Group { name, variants, .. } in GROUPS {
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Elements(1));
        group.warm_up_time(Duration::from_secs(2));
        group.measurement_time(Duration::from_secs(5));
        group.sample_size(30);
        for (name, caller) in variants() {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| rt.block_on(calls(&caller, &url, iters)));
            });
        }
        group.finish();
    }
}

/// Each group's variants in interleaved rounds; checks that each client
/// kept the one connection it opened, so that every variant's calls reuse
/// a connection alike.
fn interleaved() {
    let rt = current_thread();
    let (addr, accepted) = rt.block_on(serve(&rt));
    let url = format!("http://{addr}/");
    for Group {
        name,
        baseline,
        variants,
    } in GROUPS
    {
        let callers = variants();
        let mut variants: Vec<Variant<'_>> = callers
            .iter()
            .map(|(name, caller)| {
                let (rt, url) = (&rt, url.as_str());
                Variant::new(name, move |iters| rt.block_on(calls(caller, url, iters)))
            })
            .collect();
        let before = accepted.load(Ordering::Relaxed);
        rounds::run(name, baseline, true, &mut variants, 60, 1_000);
        let opened = accepted.load(Ordering::Relaxed) - before;
        println!("{name}: the server accepted {opened} connections");
        assert!(
            opened <= callers.len(),
            "{name}: {opened} connections for {} clients; a client did not keep its connection",
            callers.len()
        );
    }
}

criterion_group!(benches, loopback);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if rounds::wanted() {
        interleaved();
    }
}
