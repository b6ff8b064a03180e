//! What a door hands the engine, and what the engine reads of an answer.

use bytes::Bytes;
use http::{Extensions, HeaderMap, Method, StatusCode, Uri, Version};
use url::Url;

use crate::client::ClientError;

/// A request body as the engine holds it between attempts.
pub(crate) trait Body: Sized {
    /// Whether the body can be sent again; one that cannot is sent once:
    /// the call makes no retry, and follows no redirect that keeps it.
    fn replayable(&self) -> bool;
    /// A copy for the next attempt, when the body is replayable.
    fn try_clone(&self) -> Option<Self>;
    /// No body: what a redirect to a GET sends.
    fn empty() -> Self;
}

impl Body for Bytes {
    fn replayable(&self) -> bool {
        true
    }

    fn try_clone(&self) -> Option<Self> {
        Some(self.clone())
    }

    fn empty() -> Self {
        Bytes::new()
    }
}

/// What the engine reads of a response: its status and headers.
pub(crate) trait Answer {
    fn status(&self) -> StatusCode;
    fn headers(&self) -> &HeaderMap;
}

impl<T> Answer for http::Response<T> {
    fn status(&self) -> StatusCode {
        http::Response::status(self)
    }

    fn headers(&self) -> &HeaderMap {
        http::Response::headers(self)
    }
}

/// A request as a door hands it to the engine.
pub(crate) struct Request<B> {
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    /// The same target as a `Url`, when the door has one: the engine needs
    /// it only to follow a redirect, and parses it then if not given.
    pub(crate) url: Option<Url>,
    pub(crate) version: Version,
    pub(crate) headers: HeaderMap,
    pub(crate) extensions: Extensions,
    pub(crate) body: B,
}

impl<B> Request<B> {
    /// `request` as it is; [`Call::new`](super::Call::new) checks that its URI is absolute.
    pub(crate) fn from_http(request: http::Request<B>) -> Self {
        let (parts, body) = request.into_parts();
        Self {
            method: parts.method,
            uri: parts.uri,
            url: None,
            version: parts.version,
            headers: parts.headers,
            extensions: parts.extensions,
            body,
        }
    }

    /// A request to `url`.
    ///
    /// # Errors
    ///
    /// `url` is not a valid URI.
    pub(crate) fn to_url(
        method: Method,
        url: Url,
        headers: HeaderMap,
        body: B,
    ) -> Result<Self, ClientError> {
        Ok(Self {
            method,
            uri: to_uri(&url)?,
            url: Some(url),
            version: Version::default(),
            headers,
            extensions: Extensions::new(),
            body,
        })
    }

    /// The same request with its body mapped.
    pub(crate) fn map_body<C>(self, f: impl FnOnce(B) -> C) -> Request<C> {
        Request {
            method: self.method,
            uri: self.uri,
            url: self.url,
            version: self.version,
            headers: self.headers,
            extensions: self.extensions,
            body: f(self.body),
        }
    }
}

/// `url` as a URI, for the request sent to it. The error shows the URL
/// as errors do, without its query or user info.
pub(super) fn to_uri(url: &Url) -> Result<Uri, ClientError> {
    url.as_str().parse().map_err(|err| {
        let shown = crate::client::transport::shown(url.clone());
        ClientError::InvalidRequest(format!("the url {shown} is not a valid URI: {err}"))
    })
}
