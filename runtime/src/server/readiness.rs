//! [`readiness`]: the route a load balancer polls.

use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use http::StatusCode;

use crate::problem;
use crate::shutdown::Shutdown;

/// A `GET` route that answers `200 ready` until `shutdown` is triggered and
/// `503` (problem+json, with `Retry-After`) from then on (G2): the first step
/// of the sequence, so load balancers stop routing here before the server
/// stops accepting.
///
/// ```
/// use timebox::config::Config;
/// use timebox::server::readiness;
/// use timebox::shutdown::Shutdown;
///
/// let shutdown = Shutdown::new(&Config::default());
/// let app: axum::Router = axum::Router::new().route("/ready", readiness(&shutdown));
/// ```
pub fn readiness<S: Clone + Send + Sync + 'static>(shutdown: &Shutdown) -> MethodRouter<S> {
    let shutdown = shutdown.clone();
    get(move || {
        let ready = shutdown.is_ready();
        async move { answer(ready) }
    })
}

fn answer(ready: bool) -> Response {
    if ready {
        (StatusCode::OK, "ready").into_response()
    } else {
        problem::shutting_down(&problem::fallback_entropy())
    }
}
