//! [`ConnectionService`]: the router as one connection's hyper service.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use http::header::CONNECTION;
use http::{HeaderValue, Method, Request, StatusCode, Version};
use http_body::Body as _;
use hyper::body::Incoming;
use pin_project::pin_project;
use tower_service::Service;

use tokio_util::sync::CancellationToken;

use super::clock::{ConnectionClock, RequestEnd};
use super::request_body::ReadToTheEnd;
use super::response_body::ResponseBody;

/// Serves one connection's requests with `inner`, marking each on the
/// connection's clock from its head to the end of its response, and
/// asking HTTP/1 clients to close once the connection is closing
/// (shutdown's phase 1, or the connection's age).
#[derive(Debug)]
pub(super) struct ConnectionService<S> {
    inner: S,
    clock: Arc<ConnectionClock>,
    closing: CancellationToken,
    peer: ConnectInfo<SocketAddr>,
}

impl<S> ConnectionService<S> {
    pub(super) fn new(
        inner: S,
        clock: Arc<ConnectionClock>,
        closing: CancellationToken,
        peer: SocketAddr,
    ) -> Self {
        Self {
            inner,
            clock,
            closing,
            peer: ConnectInfo(peer),
        }
    }
}

impl<S> hyper::service::Service<Request<Incoming>> for ConnectionService<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    type Response = http::Response<ResponseBody>;
    type Error = Infallible;
    type Future = TrackedResponse<S::Future>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let version = req.version();
        let bodiless = req.body().is_end_stream();
        let end = self.clock.on_request(version, bodiless);
        let connect = req.method() == Method::CONNECT;
        let tunnel = connect && req.extensions().get::<hyper::ext::Protocol>().is_some();
        // hyper can hand this request's socket to the app (it asks for an
        // upgrade, or is a `CONNECT`).
        let upgradable = req
            .extensions()
            .get::<hyper::upgrade::OnUpgrade>()
            .is_some();
        // On HTTP/1 the clock learns where a body ends in the bytes read
        // when its handler reads it whole.
        let mut req = if bodiless || version >= Version::HTTP_2 {
            req.map(Body::new)
        } else {
            let read = end.body_read();
            req.map(|body| Body::new(ReadToTheEnd::new(body, read)))
        };
        // The client's address, as axum's `ConnectInfo` extractor reads it
        // (`axum::serve` gives it with `into_make_service_with_connect_info`).
        req.extensions_mut().insert(self.peer);
        // An axum `Router` (behind the shutdown gate) is always ready, so
        // there is no readiness to wait for, as in `axum::serve`.
        let future = self.inner.clone().call(req);
        TrackedResponse {
            future,
            end: Some(end),
            upgradable,
            connect,
            tunnel,
            close: (version < Version::HTTP_2).then(|| self.closing.clone()),
        }
    }
}

/// Response future of [`ConnectionService`].
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub(super) struct TrackedResponse<F> {
    #[pin]
    future: F,
    end: Option<RequestEnd>,
    /// Whether hyper can hand the request's socket to the app.
    upgradable: bool,
    /// Whether the request is a `CONNECT`.
    connect: bool,
    /// Whether the request asks for a tunnel (an HTTP/2 extended
    /// `CONNECT`).
    tunnel: bool,
    /// The connection's closing token, for an HTTP/1 request.
    close: Option<CancellationToken>,
}

impl<F> Future for TrackedResponse<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<http::Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(mut response) = ready!(this.future.poll(cx));
        // A `101` keeps its `Connection: upgrade`: the socket leaves `serve`
        // with it (see `serve`'s docs on upgrades).
        let upgrade = response.status() == StatusCode::SWITCHING_PROTOCOLS;
        // hyper hands the socket over after a `101`, or a 2xx to a
        // `CONNECT`, to a request it can upgrade.
        let handed_over =
            *this.upgradable && (upgrade || (*this.connect && response.status().is_success()));
        if handed_over {
            if let Some(end) = this.end.as_ref() {
                end.upgraded();
            }
        }
        if !upgrade
            && this
                .close
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
        {
            // hyper closes an HTTP/1 connection after a response that says so.
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        let mut end = this.end.take();
        if *this.tunnel && response.status().is_success() {
            // hyper drops the body of a tunnel's answer at once: the tunnel
            // keeps the connection busy instead (see `open_tunnel`).
            if let Some(end) = end.take() {
                end.open_tunnel();
            }
        }
        // The connection stays busy until the response body is done.
        Poll::Ready(Ok(response.map(|body| ResponseBody::new(body, end))))
    }
}
