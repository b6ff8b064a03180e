//! [`TimeboxLayer`] and the settings its services share.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tower_layer::Layer;

use crate::admission::Limiter;
use crate::config::Config;
use crate::deadline::Formats;
use crate::entropy::Entropy;
use crate::observe::Observers;
use crate::server::route_deadline::RouteName;

use super::future::Queue;
use super::route_kinds::RouteKinds;
use super::service::TimeboxService;

/// The outer timebox layer: the global deadline for every route of a plain
/// axum router, as tower-http's `TimeoutLayer` would be used.
///
/// ```
/// use std::time::Duration;
/// use axum::{body::Body, http::Request, routing::get, Router};
/// use timebox::config::Config;
/// use timebox::server::TimeboxLayer;
/// use tower::ServiceExt;
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let mut config = Config::default();
///     config.server.timeouts.request_timeout_ms = Some(2_000);
///     let app: Router = Router::new()
///         .route("/users", get(|| async { "[]" }))
///         .route(
///             "/report",
///             get(|| async {
///                 tokio::time::sleep(Duration::from_secs(10)).await;
///                 "done"
///             }),
///         )
///         .layer(TimeboxLayer::new(&config));
///
///     let start = tokio::time::Instant::now();
///     let request = Request::get("/report").body(Body::empty()).unwrap();
///     let response = app.oneshot(request).await.unwrap();
///     assert_eq!(start.elapsed(), Duration::from_secs(2)); // not 10
///     assert_eq!(response.status(), 503);
///     let retry_after = response.headers()["retry-after"].to_str().unwrap();
///     assert!(["1", "2", "3"].contains(&retry_after));
/// }
/// ```
///
/// Each route then runs under `server.timeouts.request_timeout_ms`, as the
/// [module docs](crate::server) describe for the route macros: poll-gated with the
/// deadline current, counted from when the request reaches this layer
/// (after routing, before extraction), shortened by an inbound deadline
/// header when `server.timeouts.accept_deadline_header` is on, and answered
/// with the timeout 503 when it passes. With no global deadline it only
/// notes the request's start and header, for the routes that have a rule of
/// their own.
///
/// A route with a rule of its own keeps it, a longer override and `off`
/// included: one mounted by the route macros
/// ([`Routes::into_router`](crate::server::Routes::into_router)), or wrapped in a
/// [`RouteDeadlineLayer`](crate::server::RouteDeadlineLayer). The layer learns of
/// the rule when the request reaches the route, before the handler runs,
/// and steps aside; the route's rule then counts from the same start. Build
/// both from the same [`Config`]. Until the request reaches the route, the
/// global deadline gates it: a middleware between the two that waits first
/// (an authentication look-up) waits under it, and a request that is still
/// there when it passes gets the global timeout. Observers are told a
/// request's deadline once: its route rule's when one takes over, else the
/// global one, at the first poll when the layer has seen the route answer
/// without a rule before, or else when the request ends.
///
/// One exception: with an inbound deadline header of `0` the layer answers
/// the timeout 503 at once, without polling the route, also when the route's
/// own rule is `off` (it cannot learn the rule without running a plain
/// handler).
///
/// The layer also applies the server's admission (see
/// [the module docs](crate::server#admission)): the concurrency limit of
/// `server.admission.concurrency` for every route under it (one limit per
/// `TimeboxLayer::new`, shared by its clones), and, with a global deadline,
/// the deadline check of plain routes.
///
/// The inner service may answer with any body of `Bytes` (a tower-http
/// `TraceLayer` or `CompressionLayer` inside this one, in one
/// `tower::ServiceBuilder`); the layer answers with axum's
/// [`Response`](axum::response::Response), keeping an axum body as it is.
/// [`RouteDeadlineLayer`](crate::server::RouteDeadlineLayer) and
/// [`ShutdownGateLayer`](crate::server::ShutdownGateLayer) do the same.
///
/// The shutdown gate and the in-flight count are
/// [`ShutdownGate`](crate::server::ShutdownGate)'s, which [`serve`](crate::server::serve())
/// puts around the whole service.
#[derive(Debug, Clone)]
pub struct TimeboxLayer {
    settings: Arc<Settings>,
}

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) global: Option<Duration>,
    pub(super) inbound: Formats,
    pub(super) entropy: Entropy,
    pub(super) observers: Observers,
    /// The concurrency limit (A2) of every route under the layer.
    pub(super) limiter: Option<Limiter>,
    /// With a global deadline: what the layer learnt of each route, and
    /// the deadline checks (A1) of the plain ones, by method and route
    /// template.
    pub(super) routes: Option<Arc<RouteKinds>>,
}

impl TimeboxLayer {
    /// The layer for `config`, with a random source seeded by the operating
    /// system.
    #[must_use]
    pub fn new(config: &Config) -> Self {
        let global = config.server.timeouts.request_timeout();
        let admission = &config.server.admission;
        Self {
            settings: Arc::new(Settings {
                global,
                inbound: Formats::trusted(&config.server.timeouts),
                entropy: Entropy::from_os(),
                observers: config.observers.clone(),
                limiter: Limiter::new(admission.concurrency, &admission.queue),
                routes: global.map(|_| Arc::new(RouteKinds::new(admission))),
            }),
        }
    }

    /// Draws `Retry-After` values from `entropy` instead of a fresh source.
    #[must_use]
    pub fn entropy(self, entropy: Entropy) -> Self {
        self.map(|settings| settings.entropy = entropy)
    }

    fn map(self, change: impl FnOnce(&mut Settings)) -> Self {
        let mut settings = Arc::unwrap_or_clone(self.settings);
        change(&mut settings);
        Self {
            settings: Arc::new(settings),
        }
    }
}

impl<S> Layer<S> for TimeboxLayer {
    type Service = TimeboxService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TimeboxService {
            inner,
            settings: Arc::clone(&self.settings),
        }
    }
}

impl Settings {
    /// The wait for a slot of the concurrency limit, when there is one,
    /// bounded by `deadline`.
    pub(super) fn queue(
        &self,
        deadline: Option<Instant>,
        route: &RouteName,
        entropy: &Entropy,
    ) -> Option<Queue> {
        self.limiter.as_ref().map(|limiter| Queue {
            acquire: limiter.acquire(deadline),
            route: route.clone(),
            entropy: entropy.clone(),
            observers: self.observers.clone(),
        })
    }
}
