//! The front: an axum route with a 2 s deadline that calls the relay.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use timebox::config::Config;
use timebox::deadline::Deadline;
use timebox::grpc::{GrpcClientDeadline, GrpcDeadlineLayer};
use timebox::routes;
use tonic::transport::Channel;
use tonic::Status;

use crate::pb::relay_client::RelayClient;
use crate::pb::ForwardRequest;
use crate::remaining_ms;

/// The relay's generated client, over a channel under the client layer.
pub type Relay = RelayClient<GrpcClientDeadline<Channel>>;

/// The time the front keeps for itself: the relay is called with its
/// deadline this much earlier, so that the relay's answer (a
/// `DEADLINE_EXCEEDED` included) is back before the front's own deadline
/// and the front can say what happened downstream (504) instead of only
/// that it ran out of time (503).
pub const RESERVE: Duration = Duration::from_millis(50);

/// Connects to the relay at `addr` through timebox's client layer.
///
/// # Errors
///
/// When the relay cannot be reached.
pub async fn relay_client(
    config: &Config,
    addr: SocketAddr,
) -> Result<Relay, tonic::transport::Error> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("a socket address makes a valid URI")
        .connect()
        .await?;
    let channel = tower::ServiceBuilder::new()
        .layer(GrpcDeadlineLayer::client(config))
        .service(channel);
    Ok(RelayClient::new(channel))
}

/// `GET /front`, under its 2 s route deadline.
pub fn router(config: &Config, relay: Relay) -> Router {
    routes![front].into_router(config).with_state(relay)
}

/// Calls the relay and says, one line per hop, how many milliseconds each
/// was given.
#[timebox::get("/front", timeout_ms = 2000)]
async fn front(State(mut relay): State<Relay>) -> Result<String, FrontError> {
    let front_ms = remaining_ms();
    let reply = keeping_reserve(relay.forward(ForwardRequest {}))
        .await
        .map_err(FrontError)?
        .into_inner();
    Ok(format!(
        "front {front_ms} ms\nrelay {} ms\nleaf {} ms (HTTP {})\n",
        reply.relay_deadline_ms, reply.leaf_deadline_ms, reply.leaf_status
    ))
}

/// Runs `call` with the current deadline shortened by [`RESERVE`].
async fn keeping_reserve<F: Future>(call: F) -> F::Output {
    let earlier = Deadline::current()
        .and_then(|deadline| deadline.instant().checked_sub(RESERVE))
        .map(Deadline::at);
    match earlier {
        Some(deadline) => deadline.scope(call).await,
        None => call.await,
    }
}

/// The relay's answer when it was not OK. A deadline status keeps its
/// [`DeadlineExceeded`](timebox::deadline::DeadlineExceeded) source, so
/// the route answers it with 504.
#[derive(Debug, thiserror::Error)]
#[error("the relay answered {}: {}", .0.code(), .0.message())]
pub struct FrontError(#[source] Status);

impl IntoResponse for FrontError {
    fn into_response(self) -> Response {
        (StatusCode::BAD_GATEWAY, self.to_string()).into_response()
    }
}
