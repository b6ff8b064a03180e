//! [`TimeboxLayer`]: the outer layer of a timebox router.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::response::Response;
use http::Request;
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use crate::config::Config;
use crate::deadline::header;
use crate::entropy::Entropy;

use super::context::RequestContext;

/// The outer timebox layer, for routes mounted without the route macros:
/// put it around routes that carry a [`RouteDeadlineLayer`](super::RouteDeadlineLayer).
///
/// On the way in it notes when the request arrived, so route deadlines count
/// from here, right after routing and before extraction, and reads the
/// inbound deadline header when `server.timeouts.accept_deadline_header` is
/// on. The shutdown gate and the in-flight count are
/// [`ShutdownGate`](super::ShutdownGate)'s, which [`serve`](super::serve)
/// puts around the whole service.
///
/// [`Routes::into_router`](super::Routes::into_router) does the same inside
/// each handler that has a deadline, without layers (see the
/// [module docs](super)).
#[derive(Debug, Clone)]
pub struct TimeboxLayer {
    settings: Arc<Settings>,
}

#[derive(Debug, Clone)]
struct Settings {
    global: Option<Duration>,
    accept_header: bool,
    entropy: Entropy,
}

impl TimeboxLayer {
    /// The layer for `config`, with a random source seeded by the operating
    /// system.
    #[must_use]
    pub fn new(config: &Config) -> Self {
        let global = config.server.timeouts.request_timeout();
        Self {
            settings: Arc::new(Settings {
                global,
                accept_header: config.server.timeouts.accept_deadline_header,
                entropy: Entropy::from_os(),
            }),
        }
    }

    /// Draws `Retry-After` values from `entropy` instead of a fresh source.
    #[must_use]
    pub fn with_entropy(self, entropy: Entropy) -> Self {
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

/// The service of [`TimeboxLayer`].
#[derive(Debug, Clone)]
pub struct TimeboxService<S> {
    inner: S,
    settings: Arc<Settings>,
}

impl<S, B> Service<Request<B>> for TimeboxService<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let settings = &*self.settings;
        let context = RequestContext {
            start: Instant::now(),
            global: settings.global,
            inbound: settings
                .accept_header
                .then(|| header::from_headers(req.headers()))
                .flatten(),
            entropy: req
                .extensions()
                .get::<Entropy>()
                .unwrap_or(&settings.entropy)
                .clone(),
        };
        req.extensions_mut().insert(context);
        self.inner.call(req)
    }
}
