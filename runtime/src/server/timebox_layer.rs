//! [`TimeboxLayer`]: the outer layer of a timebox router.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::Request;
use pin_project::pin_project;
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use crate::config::Config;
use crate::deadline::header;
use crate::entropy::Entropy;
use crate::shutdown::{InFlight, InFlightGuard, ShutdownToken};

use super::context::RequestContext;
use crate::problem;

/// The outer layer that [`Routes::into_router`](super::Routes::into_router)
/// puts around the whole router.
///
/// On the way in it:
/// - refuses the request with a 503 when the server is shutting down (the
///   [`ShutdownToken`] that [`serve`](super::serve) attaches is cancelled);
/// - notes when the request arrived, so route deadlines count from here,
///   before routing and extraction;
/// - reads the inbound deadline header when
///   `server.timeouts.accept_deadline_header` is on.
///
/// When no route can have a deadline (no global timeout, no route override),
/// it does no deadline work at all (S9).
#[derive(Debug, Clone)]
pub struct TimeboxLayer {
    settings: Arc<Settings>,
}

#[derive(Debug, Clone)]
struct Settings {
    global: Option<Duration>,
    accept_header: bool,
    track: bool,
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
                track: global.is_some(),
                entropy: Entropy::from_os(),
            }),
        }
    }

    /// Also notes the arrival time when there is no global timeout, because
    /// some route below has its own (`RouteTimeout::Override`).
    #[must_use]
    pub fn with_route_overrides(self, any: bool) -> Self {
        self.map(|settings| settings.track |= any)
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
    type Future = TimeboxFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let settings = &*self.settings;
        let extensions = req.extensions();
        if extensions
            .get::<ShutdownToken>()
            .is_some_and(ShutdownToken::is_cancelled)
        {
            let entropy = extensions.get::<Entropy>().unwrap_or(&settings.entropy);
            return TimeboxFuture::refused(problem::shutting_down(entropy));
        }
        let guard = extensions.get::<InFlight>().map(InFlight::enter);
        if settings.track || settings.accept_header {
            let context = RequestContext {
                start: Instant::now(),
                global: settings.global,
                inbound: settings
                    .accept_header
                    .then(|| header::from_headers(req.headers()))
                    .flatten(),
                entropy: extensions
                    .get::<Entropy>()
                    .unwrap_or(&settings.entropy)
                    .clone(),
            };
            req.extensions_mut().insert(context);
        }
        TimeboxFuture::inner(self.inner.call(req), guard)
    }
}

/// Response future of [`TimeboxService`].
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct TimeboxFuture<F> {
    #[pin]
    state: State<F>,
}

#[pin_project(project = StateProj)]
#[derive(Debug)]
enum State<F> {
    Inner {
        #[pin]
        future: F,
        /// Counts the request in flight until its body has been sent.
        guard: Option<InFlightGuard>,
    },
    Refused(Option<Response>),
}

impl<F> TimeboxFuture<F> {
    fn inner(future: F, guard: Option<InFlightGuard>) -> Self {
        Self {
            state: State::Inner { future, guard },
        }
    }

    fn refused(response: Response) -> Self {
        Self {
            state: State::Refused(Some(response)),
        }
    }
}

impl<F, E> Future for TimeboxFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Inner { future, guard } => {
                let response = ready!(future.poll(cx))?;
                Poll::Ready(Ok(match guard.take() {
                    Some(guard) => response.map(|body| Body::new(CountedBody { body, guard })),
                    None => response,
                }))
            }
            StateProj::Refused(response) => Poll::Ready(Ok(response
                .take()
                .expect("TimeboxFuture polled after completion"))),
        }
    }
}

/// A response body that keeps its request counted in flight until the body
/// is finished or dropped.
#[pin_project]
struct CountedBody {
    #[pin]
    body: Body,
    guard: InFlightGuard,
}

impl http_body::Body for CountedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
