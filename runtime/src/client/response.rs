//! [`Response`]: what an outbound call returns.

use std::future::Future;

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;

use crate::deadline::{bounded, Deadline};
use crate::observe::{tell_outbound_deadline, waiting_at, Observers, Stage};

use super::transport::ResponseBody;
use super::ClientError;

/// The response of an outbound call: status and headers at once, the body
/// read on demand under the call's deadline.
#[derive(Debug)]
pub struct Response {
    status: StatusCode,
    headers: HeaderMap,
    body: ResponseBody,
    deadline: Option<Deadline>,
    observers: Observers,
}

impl Response {
    pub(super) fn new(
        head: http::Response<ResponseBody>,
        deadline: Option<Deadline>,
        observers: Observers,
    ) -> Self {
        let (parts, body) = head.into_parts();
        Self {
            status: parts.status,
            headers: parts.headers,
            body,
            deadline,
            observers,
        }
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

    /// The whole body as text (invalid UTF-8 is replaced).
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
    pub fn error_for_status(self) -> Result<Self, ClientError> {
        if self.status.is_client_error() || self.status.is_server_error() {
            return Err(ClientError::Status(self.status));
        }
        Ok(self)
    }

    /// The body as a stream of chunks, each read under the call's deadline:
    /// once it passes the stream yields [`ClientError::DeadlineExceeded`]
    /// and ends.
    pub fn bytes_stream(self) -> impl Stream<Item = Result<Bytes, ClientError>> + Send {
        let Self {
            body,
            deadline,
            observers,
            ..
        } = self;
        futures_util::stream::unfold(
            (Some(body), observers),
            move |(body, observers)| async move {
                let mut body = body?;
                let next = async {
                    match body.next_chunk().await {
                        Some(chunk) => Ok(Some(chunk.map_err(ClientError::Transport)?)),
                        None => Ok(None),
                    }
                };
                match under_deadline(deadline, &observers, next).await {
                    Ok(Some(chunk)) => Some((Ok(chunk), (Some(body), observers))),
                    Ok(None) => None,
                    Err(err) => Some((Err(err), (None, observers))),
                }
            },
        )
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
        deadline.scope(bounded(read)).await.unwrap_or_else(|_| {
            tell_outbound_deadline(observers);
            Err(ClientError::deadline())
        })
    })
    .await
}
