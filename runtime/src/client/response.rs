//! [`Response`]: what an outbound call returns.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, StatusCode, Version};
use serde::de::DeserializeOwned;
use url::Url;

use crate::deadline::{bounded, BoundedStream, Deadline};
use crate::observe::{tell_outbound_deadline, waiting_at, waiting_now, Observers, Stage};

use super::request::SentTo;
use super::transport::{cut_to_path, BodyLength, BodyStream, RemoteAddr, ResponseBody};
use super::ClientError;

/// The response of an outbound call: status and headers at once, the body
/// read on demand under the call's deadline.
#[derive(Debug)]
pub struct Response {
    status: StatusCode,
    version: Version,
    headers: HeaderMap,
    remote_addr: Option<SocketAddr>,
    /// The body's exact length, when the transport said it.
    length: Option<BodyLength>,
    url: Url,
    body: ResponseBody,
    deadline: Option<Deadline>,
    observers: Observers,
}

impl Response {
    /// The answer `head` to a call to `asked`, or to the URL its last
    /// attempt was sent to.
    pub(super) fn new(
        head: http::Response<ResponseBody>,
        deadline: Option<Deadline>,
        observers: Observers,
        asked: Url,
    ) -> Self {
        let (mut parts, body) = head.into_parts();
        let url = parts
            .extensions
            .remove::<SentTo>()
            .map_or(asked, |SentTo(url)| url);
        Self {
            status: parts.status,
            version: parts.version,
            remote_addr: parts
                .extensions
                .get::<RemoteAddr>()
                .map(|RemoteAddr(addr)| *addr),
            length: parts.extensions.get::<BodyLength>().copied(),
            headers: parts.headers,
            url,
            body,
            deadline,
            observers,
        }
    }

    /// The URL this is the answer from, as reqwest's `url`: after
    /// redirects, the last one's. A user name and password in the URL the
    /// call was given are not in it (they go in the `Authorization` header,
    /// unless one was set).
    #[must_use]
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The status code.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The headers.
    #[must_use]
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The HTTP version the answer came in.
    #[must_use]
    pub fn version(&self) -> Version {
        self.version
    }

    /// The exact length of the body, when it is known, as reqwest's: not
    /// the `Content-Length` header as such (read [`headers`](Self::headers)
    /// for that), but what the head says the body will be: `Some(0)` for
    /// the answer to a `HEAD`, a `204` or a `304`, `None` for a body sent
    /// in chunks, or one a reqwest client with decompression on decodes.
    /// The client's reqwest transport and a simulated network say it; from
    /// another [`Transport`](super::Transport), this is the
    /// `Content-Length` header's value.
    #[must_use]
    pub fn content_length(&self) -> Option<u64> {
        if let Some(BodyLength(length)) = self.length {
            return length;
        }
        self.headers
            .get(CONTENT_LENGTH)?
            .to_str()
            .ok()?
            .parse()
            .ok()
    }

    /// The address of the server the answer came from, as reqwest's: known
    /// to the client's own reqwest transport; `None` from another
    /// [`Transport`](super::Transport) (a simulated network's hosts have
    /// none).
    #[must_use]
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.remote_addr
    }

    /// The whole body.
    ///
    /// # Errors
    ///
    /// [`ClientError::DeadlineExceeded`] when the call's deadline passes
    /// while the body is still arriving; [`ClientError::Transport`] when the
    /// body breaks off.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future loses the part of the body already read.
    pub async fn bytes(mut self) -> Result<Bytes, ClientError> {
        let read = async {
            let mut all = BytesMut::new();
            while let Some(chunk) = self.body.next_chunk().await {
                all.extend_from_slice(&chunk.map_err(ClientError::Transport)?);
            }
            Ok(all.freeze())
        };
        under_deadline(self.deadline, &self.observers, read).await
    }

    /// The whole body as text, read as UTF-8 whatever the `charset` of its
    /// `Content-Type` (invalid UTF-8 is replaced, and a byte-order mark
    /// kept), where reqwest decodes the charset: read another with
    /// [`bytes`](Self::bytes) and a decoder such as `encoding_rs`.
    ///
    /// # Errors
    ///
    /// As [`Response::bytes`].
    ///
    /// # Cancellation safety
    ///
    /// As [`Response::bytes`].
    pub async fn text(self) -> Result<String, ClientError> {
        let bytes = self.bytes().await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The whole body, deserialized from JSON.
    ///
    /// # Errors
    ///
    /// As [`Response::bytes`], and [`ClientError::Decode`] when the body is
    /// not JSON of type `T`.
    ///
    /// # Cancellation safety
    ///
    /// As [`Response::bytes`].
    pub async fn json<T: DeserializeOwned>(self) -> Result<T, ClientError> {
        let bytes = self.bytes().await?;
        serde_json::from_slice(&bytes).map_err(|err| ClientError::Decode(Box::new(err)))
    }

    /// The response itself when its status is not an error, as reqwest's:
    /// a 4xx or 5xx status becomes [`ClientError::Status`].
    ///
    /// # Errors
    ///
    /// [`ClientError::Status`] for a client or server error status.
    ///
    /// # Examples
    ///
    /// Against hosts of the simulated network (feature `sim`):
    ///
    #[cfg_attr(feature = "sim", doc = "```")]
    #[cfg_attr(not(feature = "sim"), doc = "```ignore")]
    /// use axum::{http::StatusCode, routing::get, Json, Router};
    /// use timebox::client::ClientError;
    /// use timebox::sim::Sim;
    ///
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() -> Result<(), ClientError> {
    ///     let sim = Sim::new(1);
    ///     let api = Router::new()
    ///         .route("/user", get(|| async { Json(serde_json::json!({ "name": "ada" })) }))
    ///         .route("/gone", get(|| async { StatusCode::NOT_FOUND }));
    ///     sim.net().host("api", api);
    ///     let client = sim.client();
    ///
    ///     let user: serde_json::Value = client
    ///         .get("http://api/user")
    ///         .send()
    ///         .await?
    ///         .error_for_status()?
    ///         .json()
    ///         .await?;
    ///     assert_eq!(user["name"], "ada");
    ///
    ///     let gone = client.get("http://api/gone").send().await?.error_for_status();
    ///     let err = gone.unwrap_err();
    ///     assert_eq!(err.status(), Some(StatusCode::NOT_FOUND));
    ///     assert_eq!(err.to_string(), "the server answered 404 Not Found for http://api/gone");
    ///     Ok(())
    /// }
    /// ```
    pub fn error_for_status(self) -> Result<Self, ClientError> {
        if self.status.is_client_error() || self.status.is_server_error() {
            let mut url = self.url;
            cut_to_path(&mut url);
            return Err(ClientError::Status {
                status: self.status,
                url,
            });
        }
        Ok(self)
    }

    /// The body as a stream of chunks, each read under the call's deadline:
    /// once it passes the stream yields [`ClientError::DeadlineExceeded`]
    /// and ends.
    pub fn bytes_stream(self) -> impl Stream<Item = Result<Bytes, ClientError>> + Send {
        BodyChunks {
            chunks: Some(BoundedStream::new(self.body.into_stream(), self.deadline)),
            observers: self.observers,
        }
    }
}

/// The stream of [`Response::bytes_stream`]: the body's chunks under the
/// call's deadline, one gate (and at most one timer) for the whole body,
/// however many chunks it has. An error ends it.
struct BodyChunks {
    /// `None` once the stream has ended.
    chunks: Option<BoundedStream<BodyStream>>,
    observers: Observers,
}

impl Stream for BodyChunks {
    type Item = Result<Bytes, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(chunks) = self.chunks.as_mut() else {
            return Poll::Ready(None);
        };
        let mut chunks = Pin::new(chunks);
        // Read with the call's deadline current, as `Response::bytes` reads.
        let polled = match chunks.deadline() {
            Some(deadline) => deadline.sync_scope(|| chunks.as_mut().poll_next(cx)),
            None => chunks.poll_next(cx),
        };
        let item = match polled {
            Poll::Pending => {
                // As `under_deadline`'s reads: a request's deadline that
                // passes meanwhile finds it waiting at the `outbound` stage.
                waiting_now(Stage::Outbound);
                return Poll::Pending;
            }
            Poll::Ready(Some(Ok(Ok(chunk)))) => return Poll::Ready(Some(Ok(chunk))),
            Poll::Ready(Some(Ok(Err(err)))) => Some(Err(ClientError::Transport(err))),
            Poll::Ready(Some(Err(_expired))) => Some(Err(deadline_error(&self.observers))),
            Poll::Ready(None) => None,
        };
        self.chunks = None;
        Poll::Ready(item)
    }
}

/// Reads (part of) a body under the call's `deadline`: one that passes is
/// [`ClientError::DeadlineExceeded`], told at the `outbound` stage (O1), as
/// the call's engine tells one that passes before the head. A request's
/// deadline that passes meanwhile finds the request waiting at that stage.
async fn under_deadline<T>(
    deadline: Option<Deadline>,
    observers: &Observers,
    read: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, ClientError> {
    waiting_at(Stage::Outbound, async {
        let Some(deadline) = deadline else {
            return read.await;
        };
        deadline
            .scope(bounded(read))
            .await
            .unwrap_or_else(|_| Err(deadline_error(observers)))
    })
    .await
}

/// The error of a body read the call's deadline cut short, told at the
/// `outbound` stage (O1), as the call's engine tells one that passes
/// before the head.
fn deadline_error(observers: &Observers) -> ClientError {
    tell_outbound_deadline(observers);
    ClientError::deadline()
}
