//! A small fleet that shows a deadline crossing gRPC: an axum front with a
//! 2 s route deadline calls a tonic relay through timebox's client layer;
//! the relay, under timebox's server layer, calls an axum leaf through
//! timebox's HTTP [`Client`](timebox::client::Client). Every hop reports the
//! deadline it was given.
//!
//! ```text
//! GET /front (2 s) ──gRPC, grpc-timeout──▶ fleet.Relay/Forward ──HTTP, x-timebox-deadline-ms──▶ GET /leaf
//! ```
//!
//! `cargo run --example fleet` starts it on loopback and prints what each
//! hop received; `--slow-leaf` makes the leaf take 10 s.

pub mod front;
pub mod leaf;
pub mod relay;

/// The code generated from `proto/fleet.proto`.
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("fleet");
}

use std::net::SocketAddr;

use timebox::config::Config;
use timebox::grpc::GrpcDeadlineLayer;
use timebox::shutdown::Shutdown;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// The time a deadline has left, in whole milliseconds; `-1` for none.
#[must_use]
pub fn remaining_ms() -> i64 {
    timebox::deadline::Deadline::current().map_or(-1, |deadline| {
        i64::try_from(deadline.remaining().as_millis()).unwrap_or(i64::MAX)
    })
}

/// The three hops, served on loopback.
#[derive(Debug)]
pub struct Fleet {
    /// The front's address (HTTP).
    pub front: SocketAddr,
    /// The relay's address (gRPC).
    pub relay: SocketAddr,
    /// The leaf's address (HTTP).
    pub leaf: SocketAddr,
    /// The leaf's switch for slowness.
    pub leaf_state: leaf::Leaf,
    /// The relay's record of handlers dropped before they finished.
    pub relay_state: relay::Relay,
    /// The servers' tasks, aborted when the fleet is dropped.
    _tasks: JoinSet<()>,
}

impl Fleet {
    /// Starts the leaf, the relay and the front, in that order, each on
    /// its own loopback port, all built from `config`.
    ///
    /// # Errors
    ///
    /// When a port cannot be bound or the front cannot reach the relay.
    pub async fn start(config: &Config) -> Result<Self, Box<dyn std::error::Error>> {
        // Dropped on an error below, the set stops the servers started.
        let mut tasks = JoinSet::new();
        let leaf_state = leaf::Leaf::default();
        let leaf = serve_http(&mut tasks, leaf_state.router()).await?;

        let relay_state = relay::Relay::new(config, format!("http://{leaf}/leaf"));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let relay = listener.local_addr()?;
        let shutdown = Shutdown::new(config);
        let server = tonic::transport::Server::builder()
            .layer(GrpcDeadlineLayer::server(config).shutdown(&shutdown))
            .add_service(pb::relay_server::RelayServer::new(relay_state.clone()));
        tasks.spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            if let Err(err) = server.serve_with_incoming(incoming).await {
                tracing::error!(%err, "the relay stopped");
            }
        });

        let client = front::relay_client(config, relay).await?;
        let front = serve_http(&mut tasks, front::router(config, client)).await?;
        Ok(Self {
            front,
            relay,
            leaf,
            leaf_state,
            relay_state,
            _tasks: tasks,
        })
    }
}

async fn serve_http(tasks: &mut JoinSet<()>, app: axum::Router) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tasks.spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::error!(%err, "a fleet server stopped");
        }
    });
    Ok(addr)
}
