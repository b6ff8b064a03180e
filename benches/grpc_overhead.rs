//! What timebox's gRPC layers cost a call: unary calls per second over one
//! loopback HTTP/2 connection, in one run, for four variants:
//!
//! - `bare`: a tonic server and a tonic client, nothing else;
//! - `timebox_layers`: the same with `GrpcDeadlineLayer::server` on the
//!   server and `GrpcDeadlineLayer::client` around the channel, the calls
//!   made under a timebox deadline (an hour away, so none meets it): each
//!   call carries `grpc-timeout` and `x-timebox-deadline-ms`, the server
//!   parses them and runs the call and its body gated with the deadline
//!   current, and the client gates the response and its body;
//! - `bare_with_headers`: bare tonic, each call given the same two headers
//!   by hand (`Request::set_timeout` and the metadata), their values the
//!   time the deadline has left, as the client layer sends them (so they
//!   change from call to call, and HPACK cannot index them): what tonic
//!   itself spends on a call that carries a deadline (its channel and its
//!   server each put a timer on a call with `grpc-timeout`), without
//!   timebox;
//! - `client_layer`: the client layer only, against the bare server.
//!
//! The handler answers at once with what `Deadline::current` said, so the
//! layers' work is seen against a real gRPC round trip and little else.
//! One current-thread runtime runs servers and clients alike, as in
//! `server_overhead`. After criterion's group, the binary runs the variants
//! in interleaved rounds (`support/rounds.rs`), whose median per-round
//! ratio and spread are the figures to read.
//!
//! Goal, in throughput: both layers at least 0.97 of bare tonic. The
//! layers' own share is `timebox_layers` against `bare_with_headers`.

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use timebox::config::Config;
use timebox::deadline::Deadline;
use timebox::grpc::{GrpcClientDeadline, GrpcDeadlineLayer};
use timebox_fleet::pb::relay_client::RelayClient;
use timebox_fleet::pb::relay_server::{Relay, RelayServer};
use timebox_fleet::pb::{ForwardReply, ForwardRequest, WaitReply, WaitRequest};
use timebox_fleet::relay::Ticks;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tonic::transport::{Channel, Server};
use tonic::{Request, Response, Status};

#[path = "support/rounds.rs"]
mod rounds;

use rounds::Variant;

/// The calls' deadline: far enough that none meets it.
const DEADLINE: Duration = Duration::from_secs(3600);

/// Answers `Wait` at once with the deadline it ran under.
#[derive(Debug, Clone, Copy)]
struct Echo;

#[tonic::async_trait]
impl Relay for Echo {
    async fn forward(&self, _: Request<ForwardRequest>) -> Result<Response<ForwardReply>, Status> {
        Err(Status::unimplemented("the benchmark calls Wait only"))
    }

    async fn wait(&self, _: Request<WaitRequest>) -> Result<Response<WaitReply>, Status> {
        Ok(Response::new(WaitReply {
            deadline_ms: timebox_fleet::remaining_ms(),
        }))
    }

    type TicksStream = Ticks;

    async fn ticks(&self, _: Request<WaitRequest>) -> Result<Response<Ticks>, Status> {
        Err(Status::unimplemented("the benchmark calls Wait only"))
    }
}

/// A client of one of the variants.
#[derive(Debug, Clone)]
enum Caller {
    Bare(RelayClient<Channel>),
    BareWithHeaders(RelayClient<Channel>),
    Timebox(RelayClient<GrpcClientDeadline<Channel>>),
}

impl Caller {
    async fn call(&mut self) -> i64 {
        let request = WaitRequest { millis: 0 };
        let reply = match self {
            Self::Bare(client) => client.wait(request).await,
            Self::BareWithHeaders(client) => {
                let left = Deadline::current().map_or(DEADLINE, |deadline| deadline.remaining());
                let mut request = Request::new(request);
                request.set_timeout(left);
                request.metadata_mut().insert(
                    "x-timebox-deadline-ms",
                    left.as_millis().to_string().parse().expect("digits"),
                );
                client.wait(request).await
            }
            Self::Timebox(client) => client.wait(request).await,
        };
        reply
            .expect("the loopback server answers")
            .into_inner()
            .deadline_ms
    }
}

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
}

/// Serves `Echo` on a loopback port, under the server layer when `layered`.
async fn serve(rt: &Runtime, layered: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port binds");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let service = RelayServer::new(Echo);
    if layered {
        let server = Server::builder()
            .layer(GrpcDeadlineLayer::server(&Config::default()))
            .add_service(service);
        rt.spawn(server.serve_with_incoming(incoming));
    } else {
        rt.spawn(
            Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming),
        );
    }
    addr
}

/// The variants: a server each and a connected client each.
fn variants(rt: &Runtime) -> [(&'static str, Caller); 4] {
    [
        "bare",
        "timebox_layers",
        "bare_with_headers",
        "client_layer",
    ]
    .map(|name| {
        let layered = name == "timebox_layers" || name == "client_layer";
        let server_layered = name == "timebox_layers";
        let caller = rt.block_on(async {
            let addr = serve(rt, server_layered).await;
            let channel = Channel::from_shared(format!("http://{addr}"))
                .expect("a socket address makes a valid URI")
                .connect()
                .await
                .expect("the loopback server accepts");
            if layered {
                let layer = GrpcDeadlineLayer::client(&Config::default());
                Caller::Timebox(RelayClient::new(
                    tower::ServiceBuilder::new().layer(layer).service(channel),
                ))
            } else if name == "bare_with_headers" {
                Caller::BareWithHeaders(RelayClient::new(channel))
            } else {
                Caller::Bare(RelayClient::new(channel))
            }
        });
        (name, caller)
    })
}

/// Makes `iters` sequential calls under one deadline and times them.
async fn calls(caller: &mut Caller, iters: u64) -> Duration {
    Deadline::after(DEADLINE)
        .scope(async {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(caller.call().await);
            }
            start.elapsed()
        })
        .await
}

fn loopback(c: &mut Criterion) {
    let rt = current_thread();
    let mut group = c.benchmark_group("grpc_overhead/loopback");
    group.throughput(Throughput::Elements(1));
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(30);
    for (name, mut caller) in variants(&rt) {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| rt.block_on(calls(&mut caller, iters)));
        });
    }
    group.finish();
}

/// The same variants in interleaved rounds.
fn interleaved() {
    let rt = current_thread();
    let mut variants: Vec<Variant<'_>> = variants(&rt)
        .into_iter()
        .map(|(name, mut caller)| {
            let rt = &rt;
            Variant::new(name, move |iters| rt.block_on(calls(&mut caller, iters)))
        })
        .collect();
    rounds::run(
        "grpc_overhead/loopback",
        "bare",
        true,
        &mut variants,
        60,
        2_000,
    );
}

criterion_group!(benches, loopback);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if rounds::wanted() {
        interleaved();
    }
}
