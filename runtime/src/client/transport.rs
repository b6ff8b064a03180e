//! [`Transport`]: what actually moves a request: the network, or a
//! simulated one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt};
use sync_wrapper::SyncWrapper;

use super::error::BoxError;
use super::ClientError;

/// A response body as it arrives: a stream of chunks.
///
/// `Sync` whatever the stream (which is only ever used through `&mut`), so
/// that a [`Response`](super::Response) can be borrowed across an `.await`
/// in a `Send` future, as reqwest's can.
pub struct ResponseBody {
    stream: SyncWrapper<BodyStream>,
}

/// The chunks of a [`ResponseBody`].
pub(crate) type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, BoxError>> + Send + 'static>>;

impl ResponseBody {
    /// A body from a stream of chunks.
    pub fn from_stream<S, E>(stream: S) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        Self {
            stream: SyncWrapper::new(Box::pin(stream.map_err(Into::into))),
        }
    }

    /// The next chunk, or `None` at the end.
    pub(crate) async fn next_chunk(&mut self) -> Option<Result<Bytes, BoxError>> {
        self.stream.get_mut().next().await
    }

    /// The chunks, as a stream.
    pub(crate) fn into_stream(self) -> BodyStream {
        self.stream.into_inner()
    }
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseBody").finish_non_exhaustive()
    }
}

/// Why a transport could not deliver a request.
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportError {
    /// No connection was made: worth retrying.
    Connect(BoxError),
    /// The request failed after it was sent: not retried.
    Other(BoxError),
    /// A local failure, not the host's doing: the request could not be
    /// sent as asked (it could not be built, its body was already sent, a
    /// reqwest client followed a redirect itself, another middleware
    /// failed). Not retried, and not counted by the host's breaker.
    Local(BoxError),
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connect(_) => f.write_str("connection failed"),
            Self::Other(_) => f.write_str("request failed after it was sent"),
            Self::Local(_) => f.write_str("request not sent as asked"),
        }
    }
}

impl TransportError {
    /// How a reqwest error counts, whatever carries it: a connection not
    /// made is `Connect`; a request reqwest could not build (an `http` URL
    /// for an `https_only` client) never reached the host, so it is
    /// `Local`; anything else failed on the way, `Other`.
    pub(crate) fn of_reqwest(err: &reqwest::Error) -> fn(BoxError) -> Self {
        if err.is_connect() {
            Self::Connect
        } else if err.is_builder() {
            Self::Local
        } else {
            Self::Other
        }
    }

    /// The call's error for a transport that failed.
    pub(crate) fn into_client(self) -> ClientError {
        match self {
            Self::Connect(err) => ClientError::Connect(err),
            Self::Other(err) | Self::Local(err) => ClientError::Transport(err),
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connect(err) | Self::Other(err) | Self::Local(err) => Some(&**err),
        }
    }
}

/// The future a [`Transport`] returns.
pub type TransportFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<ResponseBody>, TransportError>> + Send>>;

/// Sends one request and returns the response head; the body streams.
///
/// One attempt, no redirects, no retries, no timeouts: the
/// [`Client`](super::Client) adds all of those on top, the same way for every
/// transport. timebox has two: the network (reqwest, with rustls) and the
/// simulated network of `timebox::sim`.
pub trait Transport: fmt::Debug + Send + Sync + 'static {
    /// Sends `request`.
    fn send(&self, request: http::Request<Bytes>) -> TransportFuture;
}

/// The network, through reqwest. Redirects are turned off in reqwest: the
/// client follows them itself, each hop under the same rules.
#[derive(Debug, Clone)]
pub(crate) struct ReqwestTransport {
    client: reqwest::Client,
}

impl ReqwestTransport {
    pub(crate) fn new() -> Result<Self, BoxError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self { client })
    }

    /// Sends through the caller's own `client`, which must not follow
    /// redirects itself (see [`RedirectsOn`]).
    pub(crate) fn with_client(client: reqwest::Client) -> Self {
        Self { client }
    }
}

/// The error of an attempt through a `reqwest::Client` that followed a
/// redirect by itself: timebox follows redirects hop by hop under its own
/// rules (each hop's deadline header, the retry allowance, the breaker of
/// each host), which a client that follows them itself would bypass.
/// reqwest does not say how a client was built, so this is found out at
/// the first redirect, and that attempt fails. A middleware after the
/// reqwest middleware's `Timebox` that sends the request to another URL
/// looks the same to it, and gets the same error.
#[derive(Debug)]
pub struct RedirectsOn {
    requested: String,
    ended_at: String,
}

impl fmt::Display for RedirectsOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the reqwest::Client given to timebox followed a redirect itself \
             ({} ended at {}); build it with \
             `.redirect(reqwest::redirect::Policy::none())` so that timebox \
             follows redirects under its rules (or, if a middleware after \
             timebox's sent the request elsewhere, add that one before it)",
            self.requested, self.ended_at
        )
    }
}

impl std::error::Error for RedirectsOn {}

/// The URL reqwest gives a `reqwest::Response` made from an
/// `http::Response` without one.
const MADE_UP_URL: &str = "http://no.url.provided.local/";

/// `response`, unless reqwest followed a redirect from `requested` itself.
pub(crate) fn refuse_redirected(
    requested: &url::Url,
    response: reqwest::Response,
) -> Result<reqwest::Response, TransportError> {
    // A response a middleware made from an `http::Response` (a cache, a
    // stub) has reqwest's placeholder URL: it came from no network at all.
    if response.url() == requested || response.url().as_str() == MADE_UP_URL {
        return Ok(response);
    }
    Err(TransportError::Local(Box::new(RedirectsOn {
        requested: shown(requested.clone()),
        ended_at: shown(response.url().clone()),
    })))
}

/// The address a response came from, as the transport that made the
/// connection knows it: [`Response::remote_addr`](super::Response::remote_addr).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RemoteAddr(pub(crate) std::net::SocketAddr);

/// The exact length of a response's body, when its transport knows it
/// (hyper's reading of the head: `0` for a `HEAD`, a `204` or a `304`,
/// none for a body sent in chunks): [`Response::content_length`](super::Response::content_length).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLength(pub(crate) Option<u64>);

/// `url` as errors show it: scheme, host, port and path. Its query and
/// user info may hold secrets (a presigned link's signature, an API key),
/// and the errors of a call are logged where a server answers for them.
pub(crate) fn shown(mut url: url::Url) -> String {
    cut_to_path(&mut url);
    url.into()
}

/// Takes the query, fragment and user info off `url`, as [`shown`] shows it.
pub(crate) fn cut_to_path(url: &mut url::Url) {
    url.set_query(None);
    url.set_fragment(None);
    // Both fail only on a URL that cannot have user info, which has none.
    let _ = url.set_username("");
    let _ = url.set_password(None);
}

/// `err` with its URL cut as [`shown`] cuts it: reqwest's `Display` ends
/// with the URL.
fn without_secrets(mut err: reqwest::Error) -> reqwest::Error {
    if let Some(url) = err.url_mut() {
        cut_to_path(url);
    }
    err
}

impl Transport for ReqwestTransport {
    fn send(&self, request: http::Request<Bytes>) -> TransportFuture {
        let client = self.client.clone();
        Box::pin(async move {
            let request = reqwest::Request::try_from(request)
                .map_err(|err| TransportError::Local(err.into()))?;
            let requested = request.url().clone();
            let response = client
                .execute(request)
                .await
                .map_err(|err| TransportError::of_reqwest(&err)(without_secrets(err).into()))?;
            let response = refuse_redirected(&requested, response)?;
            let mut head = http::Response::builder()
                .status(response.status())
                .version(response.version());
            if let Some(headers) = head.headers_mut() {
                headers.extend(response.headers().clone());
            }
            if let Some(addr) = response.remote_addr() {
                head = head.extension(RemoteAddr(addr));
            }
            head = head.extension(BodyLength(response.content_length()));
            let chunks = response.bytes_stream().map_err(without_secrets);
            head.body(ResponseBody::from_stream(chunks))
                .map_err(|err| TransportError::Other(err.into()))
        })
    }
}
