//! [`ClientLayer`]: the client's rules around any tower HTTP service.

use std::error::Error;
use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;
use url::Url;

use crate::config::Config;
use crate::entropy::Entropy;
use crate::retry::RetryBudgets;

use super::call::{self, Sender};
use super::engine::{self, Call};
use super::rules::Rules;
use super::transport::TransportError;
use super::{Attempt, BoxError, CallOptions, ClientError};

/// A tower layer that gives any HTTP client service the rules of
/// [`Client`](super::Client): attempts within the deadline, retries that
/// fit the time left and the host's budget, the host's breaker, redirects
/// hop by hop, and the deadline headers on every request. It is the same
/// engine as `Client`'s, not a copy. The call takes the deadline current
/// where [`Service::call`] is called, shortened by one current at the
/// returned future's first poll (a `tower::Buffer` outside the layer calls
/// it from its own worker task, where none is, and its caller polls the
/// future).
///
/// The inner service is any `Service<http::Request<B>, Response =
/// http::Response<R>>`: hyper-util's legacy client, for one. It must be
/// `Clone` (a call takes the service readied for it and leaves a clone in
/// its place, readies it again for each retry and hop, and sends a hedge
/// through another clone), and the
/// body `B` must be `Clone` (it is sent again on a retry or a `307`/`308`)
/// and `Default` (the empty body of a redirect that becomes a GET);
/// `http_body_util::Full<Bytes>` is both. Request URIs must be absolute.
///
/// An error of the inner service's `call` counts as a connection failure,
/// and is retried as one, when its `source()` chain holds hyper-util's
/// connect error or an `io::Error` of kind `ConnectionRefused`; any other
/// ends the call with [`ClientError::Transport`], since the request may
/// have been sent, and counts as a failure for the host's breaker. That
/// includes a timeout of the inner stack's own (a `tower::timeout::Timeout`
/// inside): the attempt timeout the layer retries is
/// `http.client.timeout_secs`. An error readying the inner service for a
/// retry or a hop ends the call with it ([`ClientError::Connect`] when it
/// is a connection failure, else `ClientError::Transport`), unretried,
/// and the host's breaker does not count it: no request was sent, and a
/// service whose readiness failed stays failed (a `tower::Buffer` whose
/// worker saw the error fails every call after it).
///
/// The response body comes back as the inner service gave it: unlike
/// `Client`'s, reading it is not bounded by the call's deadline. Read
/// it under [`bounded`](crate::deadline::bounded), or inside a handler's
/// gate, to cut it there.
///
/// The first wait for the inner service's readiness (a `Buffer` or a
/// concurrency limit inside) is the caller's, in `poll_ready`, as for any
/// tower service: bound it with `bounded(service.ready())`. The waits the
/// layer makes itself, before each retry and redirect hop, are bounded by
/// the deadline. No wait counts against the host's breaker or in the
/// attempt's timeout.
///
/// A redirect to another origin (scheme, host and port) is the answer, not
/// followed, as through the reqwest middleware: a layer inside this one
/// (tower-http's `AddAuthorization` or `SetRequestHeader`, a request
/// signer) adds its headers to every request it passes on, and a hop to
/// another origin must not carry an `Authorization` or a `Cookie` (C7).
/// Redirects within the origin are followed, hop by hop.
///
/// A request asks for more retries, a retry of a POST, a hedge, an attempt
/// timeout of its own or to be taken for long-running with a
/// [`CallOptions`] in its extensions.
///
/// ```
/// use bytes::Bytes;
/// use http_body_util::Full;
/// use hyper_util::client::legacy::Client;
/// use hyper_util::rt::TokioExecutor;
/// use timebox::client::ClientLayer;
/// use timebox::config::Config;
/// use tower::ServiceBuilder;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let hyper = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
/// let client = ServiceBuilder::new()
///     .layer(ClientLayer::new(&Config::default()))
///     .service(hyper);
/// # let _ = client;
/// # }
/// ```
///
/// # Panics
///
/// A call's future panics when polled outside a tokio runtime with its
/// timer enabled, with tokio's message (see
/// [Timers and paused clocks](super#timers-and-paused-clocks)).
#[derive(Debug, Clone)]
pub struct ClientLayer {
    rules: Arc<Rules>,
}

impl ClientLayer {
    /// The layer of `config.http.client` and `config.breaker`; backoff
    /// jitter and idempotency keys come from a source seeded by the
    /// operating system.
    #[must_use]
    pub fn new(config: &Config) -> Self {
        Self {
            rules: Arc::new(Rules::new(config, Entropy::from_os()).within_origin()),
        }
    }

    /// Draws backoff jitter and idempotency keys from `entropy` instead (a
    /// seeded one replays). A clone of the layer, or a service it made,
    /// before this call keeps drawing from the old source; all of them
    /// still share the per-host budgets, breakers and latencies.
    #[must_use]
    pub fn entropy(self, entropy: Entropy) -> Self {
        Self {
            rules: Rules::with_entropy(self.rules, entropy),
        }
    }

    /// The retry budgets, one per upstream host, shared by every service
    /// this layer makes.
    #[must_use]
    pub fn budgets(&self) -> &RetryBudgets {
        &self.rules.budgets
    }
}

impl<S> Layer<S> for ClientLayer {
    type Service = ClientService<S>;

    fn layer(&self, inner: S) -> ClientService<S> {
        ClientService {
            inner,
            rules: Arc::clone(&self.rules),
        }
    }
}

/// The service [`ClientLayer`] makes.
#[derive(Debug, Clone)]
pub struct ClientService<S> {
    inner: S,
    rules: Arc<Rules>,
}

impl<S> ClientService<S> {
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

impl<S, B, R> Service<http::Request<B>> for ClientService<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    B: http_body::Body + Clone + Default + Send + 'static,
    R: Send + 'static,
{
    type Response = http::Response<R>;
    type Error = ClientError;
    type Future = ResponseFuture<R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        self.inner
            .poll_ready(cx)
            .map_err(|err| transport_error(err.into()).into_client())
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture<R> {
        // The call is made here, so it takes the deadline current where
        // `call` is, even if the future is polled elsewhere; one current
        // where it is first polled shortens it.
        let options = CallOptions::in_extensions(request.extensions());
        let request = engine::Request::from_http(request).map_body(Replay);
        let call = match Call::new(Arc::clone(&self.rules), request, options) {
            Ok(call) => call,
            Err(err) => {
                return ResponseFuture {
                    inner: Box::pin(std::future::ready(Err(err))),
                }
            }
        };
        // The readied service takes the call; a clone stays for the next
        // caller.
        let clone = self.inner.clone();
        let sender = ByService {
            service: std::mem::replace(&mut self.inner, clone),
            readied: true,
        };
        ResponseFuture {
            inner: Box::pin(call::drive(call, sender)),
        }
    }
}

/// The future of a [`ClientService`] call.
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct ResponseFuture<R> {
    inner: Pin<Box<dyn Future<Output = Result<http::Response<R>, ClientError>> + Send>>,
}

impl<R> Future for ResponseFuture<R> {
    type Output = Result<http::Response<R>, ClientError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<R> fmt::Debug for ResponseFuture<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

/// A request body the engine may send again: a clone each time.
struct Replay<B>(B);

impl<B: http_body::Body + Clone + Default> engine::Body for Replay<B> {
    fn replayable(&self) -> bool {
        true
    }

    fn try_clone(&self) -> Option<Self> {
        Some(Self(self.0.clone()))
    }

    fn empty() -> Self {
        Self(B::default())
    }
}

/// The layer's door to the engine: each request through the inner service.
struct ByService<S> {
    /// The service every request of the call goes through: readied by
    /// `poll_ready` for the first, and by [`Sender::ready`] for each later
    /// one (a retry, a redirect hop).
    service: S,
    /// Whether `service` is ready for a request: it is once readied, and
    /// is not again until readied after its next `call`.
    readied: bool,
}

impl<S, B, R> Sender<Replay<B>> for ByService<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send,
    S::Error: Into<BoxError>,
    S::Future: Send,
    B: Send,
{
    type Response = http::Response<R>;

    fn fork(&mut self) -> Option<Self> {
        Some(Self {
            service: self.service.clone(),
            readied: false,
        })
    }

    fn ready(&mut self) -> impl Future<Output = Result<(), TransportError>> + Send {
        let Self { service, readied } = self;
        async move {
            if !*readied {
                poll_fn(|cx| service.poll_ready(cx))
                    .await
                    .map_err(|err| transport_error(err.into()))?;
                *readied = true;
            }
            Ok(())
        }
    }

    fn send(
        &mut self,
        mut request: http::Request<Replay<B>>,
        attempt: Attempt,
        _url: Option<&Url>,
    ) -> impl Future<Output = Result<Self::Response, TransportError>> + Send {
        request.extensions_mut().insert(attempt);
        // Called here, so the attempt's future holds only the service's.
        let sent = std::mem::take(&mut self.readied)
            .then(|| self.service.call(request.map(|Replay(body)| body)));
        async move {
            let Some(sent) = sent else {
                return Err(TransportError::Local(
                    "the inner service was not readied before the request".into(),
                ));
            };
            sent.await.map_err(|err| transport_error(err.into()))
        }
    }
}

/// An inner service's error, as a connection failure (retried) or a
/// failure after sending (not retried).
fn transport_error(err: BoxError) -> TransportError {
    if is_connect(&*err) {
        TransportError::Connect(err)
    } else {
        TransportError::Other(err)
    }
}

fn is_connect(err: &(dyn Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(err) = err.downcast_ref::<hyper_util::client::legacy::Error>() {
            if err.is_connect() {
                return true;
            }
        }
        if let Some(err) = err.downcast_ref::<std::io::Error>() {
            if err.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
        }
        next = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use bytes::Bytes;
    use http_body_util::Full;
    use tower::limit::ConcurrencyLimit;
    use tower::{service_fn, Layer, Service, ServiceExt};

    use super::ClientLayer;
    use crate::config::Config;
    use crate::deadline::Deadline;

    /// The call's future is copied whole into its box when it is made, so
    /// its size is paid on every call. Over this service it is about 1.4 KB;
    /// it was 7 KB (14 KB over hyper-util's client) while each level of
    /// it kept its arguments twice and room for a hedge's race.
    #[tokio::test]
    async fn the_future_of_a_call_stays_small() {
        let inner = service_fn(|_: http::Request<Full<Bytes>>| async {
            Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(b"ok"))))
        });
        let mut client = ClientLayer::new(&Config::default()).layer(inner);
        let request = http::Request::get("http://upstream.test/")
            .body(Full::default())
            .expect("a valid request");
        let future = client.call(request);
        let size = std::mem::size_of_val(&*future.inner);
        assert!(size < 2 * 1024, "the call's future is {size} bytes");
        assert!(future.await.is_ok());
    }

    /// The inner service is called with the call's deadline current, also
    /// when the call's future is polled where no deadline is.
    #[tokio::test(start_paused = true)]
    async fn the_inner_service_is_called_under_the_calls_deadline() {
        let inner = service_fn(|_: http::Request<Full<Bytes>>| {
            let seen = Deadline::current();
            async move {
                Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from(format!(
                    "{:?}",
                    seen.map(Deadline::instant)
                )))))
            }
        });
        let mut client = ClientLayer::new(&Config::default()).layer(inner);
        let request = http::Request::get("http://upstream.test/")
            .body(Full::default())
            .expect("a valid request");
        let deadline = Deadline::after(std::time::Duration::from_secs(1));
        let future = deadline.sync_scope(|| client.call(request));
        let response = future.await.expect("the inner service answers");
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .expect("a full body")
            .to_bytes();
        assert_eq!(body, format!("{:?}", Some(deadline.instant())));
    }

    /// A retry goes through the call's service readied again: tower's
    /// `ConcurrencyLimit` panics on a `call` its `poll_ready` did not allow.
    #[tokio::test(start_paused = true)]
    async fn each_attempt_goes_through_a_readied_service() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let inner = ConcurrencyLimit::new(
            service_fn(move |_: http::Request<Full<Bytes>>| {
                let status = match seen.fetch_add(1, Ordering::SeqCst) {
                    0 => http::StatusCode::SERVICE_UNAVAILABLE,
                    _ => http::StatusCode::OK,
                };
                async move {
                    let mut response = http::Response::new(Full::<Bytes>::default());
                    *response.status_mut() = status;
                    Ok::<_, Infallible>(response)
                }
            }),
            1,
        );
        let mut client = ClientLayer::new(&Config::default()).layer(inner);
        let request = http::Request::get("http://upstream.test/")
            .body(Full::default())
            .expect("a valid request");
        let response = client
            .ready()
            .await
            .expect("the limit has room")
            .call(request)
            .await
            .expect("the retry answers");
        assert_eq!(response.status(), http::StatusCode::OK);
        assert_eq!(calls.load(Ordering::SeqCst), 2, "one retry");
    }

    /// A3 through tower: a hedge the bucket refuses gives back the place
    /// its fork took in the service beneath (here a `ConcurrencyLimit` of
    /// two), instead of keeping it while the first attempt runs.
    #[tokio::test(start_paused = true)]
    async fn a_refused_hedge_keeps_no_place_in_the_service_beneath() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let inner = ConcurrencyLimit::new(
            service_fn(move |_: http::Request<Full<Bytes>>| {
                let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
                async move {
                    if first {
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    }
                    Ok::<_, Infallible>(http::Response::new(Full::<Bytes>::default()))
                }
            }),
            2,
        );
        let mut config = Config::default();
        config.http.client.hedge.enabled = true;
        config.http.client.hedge.delay_ms = Some(20);
        // Only the bucket refuses the hedge.
        config.http.client.hedge.max_extra_load = 1.0;
        let layer = ClientLayer::new(&config);
        let uri: http::Uri = "http://upstream.test/".parse().expect("a valid URI");
        let budget = layer.budgets().for_uri(&uri).expect("the host's budget");
        let client = layer.layer(inner);
        // Below half full: no hedge is sent (A3).
        while budget.tokens() >= 250.0 {
            assert!(budget.try_withdraw(crate::retry::RetryKind::Transient));
        }
        let request = http::Request::get(uri.clone())
            .body(Full::default())
            .expect("a valid request");
        let slow = tokio::spawn(client.clone().oneshot(request));
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        let mut other = client.clone();
        let ready = tokio::time::timeout(std::time::Duration::from_millis(50), other.ready()).await;
        assert!(
            ready.is_ok(),
            "the second place is free while the slow call runs"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1, "no hedge was sent");
        slow.await
            .expect("the call does not panic")
            .expect("the slow call answers");
    }
}
