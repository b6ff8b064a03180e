//! Serving a relay in memory, on the paused clock.

#![allow(dead_code, unreachable_pub)] // each test file uses part of it

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use timebox::config::Config;
use timebox::grpc::{GrpcClientDeadline, GrpcDeadlineLayer};
use timebox_fleet::pb::relay_client::RelayClient;
use timebox_fleet::pb::relay_server::{Relay, RelayServer};
use timebox_fleet::pb::{ForwardReply, ForwardRequest, WaitReply, WaitRequest};
use timebox_fleet::relay::Ticks;
use tokio::io::DuplexStream;
use tonic::transport::{Channel, Endpoint, Server, Uri};
use tonic::{Request, Response, Status};

/// A relay's generated client under the client layer.
pub type Client = RelayClient<GrpcClientDeadline<Channel>>;

/// Serves `relay` on an in-memory connection, with `layer` around it
/// (`None` for bare tonic); the channel to it.
pub async fn serve<R: Relay>(relay: R, layer: Option<GrpcDeadlineLayer>) -> Channel {
    connect(serve_io(relay, layer)).await
}

/// A channel over `client_io`, the client's end of an in-memory connection.
pub async fn connect(client_io: DuplexStream) -> Channel {
    let client_io = Arc::new(Mutex::new(Some(client_io)));
    Endpoint::from_static("http://in-memory")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let io = client_io.lock().expect("unpoisoned").take();
            async move {
                io.map(TokioIo::new)
                    .ok_or_else(|| io::Error::other("the in-memory server takes one connection"))
            }
        }))
        .await
        .expect("the in-memory connection opens")
}

/// A channel to an HTTP/2 server that takes every call and never answers
/// it: it has no timer of its own, as tonic's server has for a
/// `grpc-timeout`.
pub async fn silent() -> Channel {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let never = hyper::service::service_fn(|_: http::Request<hyper::body::Incoming>| {
        std::future::pending::<Result<http::Response<http_body_util::Empty<bytes::Bytes>>, io::Error>>(
        )
    });
    tokio::spawn(async move {
        let serving = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(server_io), never);
        // It ends when the client's end of the connection goes.
        let _ = serving.await;
    });
    connect(client_io).await
}

/// Serves `relay` as [`serve`] does; the client's end of the connection.
pub fn serve_io<R: Relay>(relay: R, layer: Option<GrpcDeadlineLayer>) -> DuplexStream {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let incoming = futures_util::stream::iter([Ok::<_, io::Error>(server_io)]);
    let service = RelayServer::new(relay);
    tokio::spawn(async move {
        let served = match layer {
            Some(layer) => {
                Server::builder()
                    .layer(layer)
                    .add_service(service)
                    .serve_with_incoming(incoming)
                    .await
            }
            None => {
                Server::builder()
                    .add_service(service)
                    .serve_with_incoming(incoming)
                    .await
            }
        };
        served.expect("the in-memory server runs");
    });
    client_io
}

/// One unary call by hand over HTTP/2, as a client that enforces nothing
/// itself would make it: `message` to `path` with `headers`. The
/// response's head, its body unread.
pub async fn raw_call(
    io: DuplexStream,
    path: &str,
    headers: &[(&'static str, &str)],
    message: impl prost::Message,
) -> http::Response<hyper::body::Incoming> {
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .expect("the HTTP/2 handshake succeeds");
    tokio::spawn(connection);
    let encoded = message.encode_to_vec();
    let mut frame = vec![0_u8];
    frame.extend(u32::try_from(encoded.len()).unwrap().to_be_bytes());
    frame.extend(encoded);
    let mut request = http::Request::post(format!("http://in-memory{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(http_body_util::Full::new(bytes::Bytes::from(frame)))
        .expect("the request builds");
    sender
        .send_request(request)
        .await
        .expect("the call is answered")
}

/// The client layer of `config` around `channel`.
pub fn client(config: &Config, channel: Channel) -> Client {
    RelayClient::new(
        tower::ServiceBuilder::new()
            .layer(GrpcDeadlineLayer::client(config))
            .service(channel),
    )
}

/// A relay for the tests: counts its calls, records what their headers
/// said, notes handlers dropped before they finished, and forwards
/// `Forward` to `next`'s `Wait` after [`HOP`].
#[derive(Clone, Default)]
pub struct Probe {
    pub calls: Arc<AtomicUsize>,
    pub dropped: Arc<AtomicUsize>,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    pub next: Option<Client>,
    /// What `Wait` answers once it has waited, instead of OK.
    pub wait_answer: Option<fn() -> Status>,
    /// How many ticks `Ticks` sends before it ends with OK; without it,
    /// ticks go on until the call ends.
    pub ticks: Option<i64>,
}

/// The deadline headers of one call, every value of each.
#[derive(Debug, Clone)]
pub struct Seen {
    pub grpc_timeout: Vec<String>,
    pub deadline_ms: Vec<String>,
    pub envoy_timeout_ms: Vec<String>,
}

/// The time each hop spends before calling the next.
pub const HOP: Duration = Duration::from_millis(100);

impl Probe {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Counts a call begun; its mark counts it as dropped if it is
    /// dropped before it finishes.
    pub fn begun(&self) -> Unfinished {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Unfinished(Some(Arc::clone(&self.dropped)))
    }

    fn record<T>(&self, request: &Request<T>) -> Unfinished {
        let values = |name| {
            request
                .metadata()
                .get_all(name)
                .iter()
                .map(|value| value.to_str().unwrap_or("(not ASCII)").to_owned())
                .collect()
        };
        self.seen.lock().expect("unpoisoned").push(Seen {
            grpc_timeout: values("grpc-timeout"),
            deadline_ms: values("x-timebox-deadline-ms"),
            envoy_timeout_ms: values("x-envoy-upstream-rq-timeout-ms"),
        });
        self.begun()
    }
}

#[tonic::async_trait]
impl Relay for Probe {
    async fn forward(
        &self,
        request: Request<ForwardRequest>,
    ) -> Result<Response<ForwardReply>, Status> {
        let unfinished = self.record(&request);
        let relay_deadline_ms = timebox_fleet::remaining_ms();
        tokio::time::sleep(HOP).await;
        let mut next = self
            .next
            .clone()
            .expect("a probe that forwards has a next hop");
        let reply = next.wait(WaitRequest { millis: 0 }).await?.into_inner();
        unfinished.finish();
        Ok(Response::new(ForwardReply {
            relay_deadline_ms,
            leaf_deadline_ms: reply.deadline_ms,
            leaf_status: 200,
        }))
    }

    async fn wait(&self, request: Request<WaitRequest>) -> Result<Response<WaitReply>, Status> {
        let unfinished = self.record(&request);
        let deadline_ms = timebox_fleet::remaining_ms();
        tokio::time::sleep(Duration::from_millis(request.get_ref().millis)).await;
        unfinished.finish();
        match self.wait_answer {
            Some(answer) => Err(answer()),
            None => Ok(Response::new(WaitReply { deadline_ms })),
        }
    }

    type TicksStream = Ticks;

    async fn ticks(&self, request: Request<WaitRequest>) -> Result<Response<Ticks>, Status> {
        self.record(&request).finish();
        let every = Duration::from_millis(request.get_ref().millis);
        let last = self.ticks.unwrap_or(i64::MAX);
        let ticks = futures_util::stream::unfold(0_i64, move |n| async move {
            if n == last {
                return None;
            }
            tokio::time::sleep(every).await;
            Some((Ok(WaitReply { deadline_ms: n }), n + 1))
        });
        Ok(Response::new(Box::pin(ticks)))
    }
}

/// Counts a handler dropped before it finished.
pub struct Unfinished(Option<Arc<AtomicUsize>>);

impl Unfinished {
    pub fn finish(mut self) {
        self.0 = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(dropped) = self.0.take() {
            dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}
