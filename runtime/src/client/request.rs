//! [`RequestBuilder`]: one outbound call, before it is sent.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method};

use super::call;
use super::{Client, ClientError, Response};

/// An outbound call being put together; [`send`](RequestBuilder::send) makes it.
#[derive(Debug)]
#[must_use = "a request does nothing until it is sent"]
pub struct RequestBuilder {
    pub(super) client: Client,
    pub(super) method: Method,
    pub(super) url: String,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
    pub(super) retries: Option<u32>,
    pub(super) retry_non_idempotent: bool,
    pub(super) error: Option<ClientError>,
}

impl RequestBuilder {
    pub(super) fn new(client: Client, method: Method, url: String) -> Self {
        Self {
            client,
            method,
            url,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            retries: None,
            retry_non_idempotent: false,
            error: None,
        }
    }

    /// Adds a header. A name or value that is not valid HTTP makes
    /// [`send`](RequestBuilder::send) fail with an error that names it.
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        HeaderValue: TryFrom<V>,
    {
        match (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            (Ok(name), Ok(value)) => {
                self.headers.append(name, value);
            }
            (Err(_), _) => self.fail("a header name is not valid HTTP"),
            (Ok(name), Err(_)) => {
                self.fail(&format!("the value of header `{name}` is not valid HTTP"))
            }
        }
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// At most `retries` retries for this call, instead of
    /// `http.client.max_retries`. The deadline and the retry budget still
    /// bound them.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// Retries this call even though its method is not idempotent (POST,
    /// PATCH). Every attempt carries the same `Idempotency-Key` header (the
    /// caller's own, when set) so the server can tell a retry from a new
    /// request.
    pub fn retry_non_idempotent(mut self) -> Self {
        self.retry_non_idempotent = true;
        self
    }

    /// Sends the request: attempts, retries and redirects within the
    /// current deadline.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: the deadline passed, the host's breaker is open, too
    /// many redirects, or the last attempt failed without a response. A
    /// response with an error status is a `Response`, not an error.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future stops the call; a retry that was paid for but not
    /// yet sent gives its tokens back.
    pub async fn send(self) -> Result<Response, ClientError> {
        call::send(self).await
    }

    fn fail(&mut self, message: &str) {
        if self.error.is_none() {
            self.error = Some(ClientError::InvalidRequest(message.to_owned()));
        }
    }
}
