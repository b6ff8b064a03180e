//! The session changes of a cancelled handler are not saved.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::response::Response;
use http::{Request, StatusCode};
use pin_project::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use super::DeadlineCancelled;

/// Wraps a session layer so that whether it saves follows
/// [`DeadlineCancelled`], not the status code.
///
/// Session layers save a handler's changes after the response comes back.
/// `tower-sessions` (and others) skip the save for every 5xx, which discards
/// the changes of a cancelled handler, but also those of a handler that
/// chose to answer 503 itself. timebox marks the responses it made because a
/// deadline ran out, so the rule can be exact: the changes of a cancelled
/// handler are dropped, those of every other handler are kept.
///
/// Inside the wrapped session layer, a 5xx *without* the marker is shown to
/// it as `200 OK` (so it saves), and the real status is put back on the way
/// out; a marked response passes unchanged (so it does not save). Nothing
/// else about the response changes.
///
/// # Examples
///
/// ```
/// use axum::{routing::get, Router};
/// use timebox::server::SaveSessionUnlessCancelledLayer;
/// use tower_sessions::{MemoryStore, SessionManagerLayer};
///
/// let sessions = SessionManagerLayer::new(MemoryStore::default());
/// let app: Router = Router::new()
///     .route("/", get(|| async { "hello" }))
///     .layer(SaveSessionUnlessCancelledLayer::new(sessions));
/// ```
#[derive(Debug, Clone)]
pub struct SaveSessionUnlessCancelledLayer<L> {
    session_layer: L,
}

impl<L> SaveSessionUnlessCancelledLayer<L> {
    /// Wraps `session_layer`.
    pub const fn new(session_layer: L) -> Self {
        Self { session_layer }
    }
}

impl<L, S> Layer<S> for SaveSessionUnlessCancelledLayer<L>
where
    L: Layer<MapStatus<S>>,
{
    type Service = MapStatus<L::Service>;

    fn layer(&self, inner: S) -> Self::Service {
        let masked = MapStatus {
            inner,
            map: hide_status,
        };
        MapStatus {
            inner: self.session_layer.layer(masked),
            map: restore_status,
        }
    }
}

/// The status a masked response had before the session layer saw it.
#[derive(Debug, Clone, Copy)]
struct HiddenStatus(StatusCode);

/// One side of [`SaveSessionUnlessCancelledLayer`]: below the session
/// layer it shows an unmarked 5xx as `200 OK`; above it, it puts the real
/// status back.
///
/// The outer side's inner service is the session layer's service, whose
/// inner service is the inner side: yours is two levels down.
#[derive(Debug, Clone)]
pub struct MapStatus<S> {
    inner: S,
    map: fn(Response) -> Response,
}

impl<S> MapStatus<S> {
    /// A reference to the inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// A mutable reference to the inner service.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B> Service<Request<B>> for MapStatus<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = MapStatusFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        MapStatusFuture {
            future: self.inner.call(req),
            map: self.map,
        }
    }
}

fn hide_status(mut response: Response) -> Response {
    let status = response.status();
    if status.is_server_error() && response.extensions().get::<DeadlineCancelled>().is_none() {
        response.extensions_mut().insert(HiddenStatus(status));
        *response.status_mut() = StatusCode::OK;
    }
    response
}

fn restore_status(mut response: Response) -> Response {
    if let Some(HiddenStatus(status)) = response.extensions_mut().remove::<HiddenStatus>() {
        *response.status_mut() = status;
    }
    response
}

/// Response future of [`MapStatus`].
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct MapStatusFuture<F> {
    #[pin]
    future: F,
    map: fn(Response) -> Response,
}

impl<F, E> Future for MapStatusFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = ready!(this.future.poll(cx))?;
        Poll::Ready(Ok((this.map)(response)))
    }
}
