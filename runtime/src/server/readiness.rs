//! [`readiness`]: the route a load balancer polls.

use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use http::StatusCode;

use crate::entropy::Entropy;
use crate::problem;
use crate::shutdown::Shutdown;

use super::context::RequestContext;

/// A `GET` route that answers `200 ready` until `shutdown` is triggered and
/// `503` (problem+json, with `Retry-After`) from then on: the first step
/// of the sequence, so load balancers stop routing here before the server
/// stops taking new requests.
///
/// The 503's detail says which part of the sequence the server is in: during
/// the pre-stop grace it still serves requests (that is what the grace is
/// for), from phase 1 on it accepts none. `Retry-After` is 1, 2 or 3 seconds
/// drawn from the same source as the timeout 503's: the request's
/// [`Entropy`] extension (as under `Sim::app`, so the sequence replays),
/// else the [`TimeboxLayer`](super::TimeboxLayer)'s around the router,
/// else one OS-seeded source.
///
/// Mount it after a [`TimeboxLayer`](super::TimeboxLayer) with a
/// concurrency limit (axum's `Router::layer` wraps only the routes added
/// before it), so that an overloaded server's probes are not queued or
/// shed with its work, and the orchestrator does not take it out of
/// service for being busy:
///
/// ```
/// use timebox::config::Config;
/// use timebox::server::{readiness, TimeboxLayer};
/// use timebox::shutdown::Shutdown;
///
/// let config = Config::default();
/// let shutdown = Shutdown::new(&config);
/// let app: axum::Router = axum::Router::new()
///     .route("/work", axum::routing::get(|| async { "done" }))
///     .layer(TimeboxLayer::new(&config))
///     .route("/ready", readiness(&shutdown));
/// ```
pub fn readiness<S: Clone + Send + Sync + 'static>(shutdown: &Shutdown) -> MethodRouter<S> {
    let shutdown = shutdown.clone();
    get(move |request: axum::extract::Request| {
        let extensions = request.extensions();
        let entropy = RequestContext::entropy_of(extensions.get(), extensions);
        let answer = answer(&shutdown, entropy);
        async move { answer }
    })
}

fn answer(shutdown: &Shutdown, entropy: Option<Entropy>) -> Response {
    if shutdown.is_ready() {
        return (StatusCode::OK, "ready").into_response();
    }
    let entropy = entropy.unwrap_or_else(problem::fallback_entropy);
    if shutdown.token().is_cancelled() {
        problem::shutting_down(&entropy)
    } else {
        problem::not_ready(&entropy)
    }
}
