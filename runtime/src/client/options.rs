//! [`CallOptions`]: what one call asks beyond the configuration.

use std::time::Duration;

/// What one call asks of the client's rules beyond the configuration: more
/// or fewer retries, a retry of a method that is not idempotent, a hedge,
/// an attempt timeout of its own, its time kept out of the host's health.
///
/// [`RequestBuilder`](super::RequestBuilder) sets them with its methods of
/// the same names. The doors that take a request someone else built read
/// them from its extensions: [`ClientLayer`](super::ClientLayer) from the
/// `http::Request`'s, the reqwest middleware
/// (`timebox::client::middleware::Timebox`, feature `reqwest-middleware`)
/// from the chain's (reqwest-middleware's `RequestBuilder::with_extension`).
/// Without them a call follows the configuration.
///
/// ```
/// use timebox::client::CallOptions;
///
/// // A POST the server deduplicates by its `Idempotency-Key`: safe to retry.
/// let mut request = http::Request::post("http://orders.internal/")
///     .body(String::from("{\"id\":7}"))
///     .unwrap();
/// request
///     .extensions_mut()
///     .insert(CallOptions::new().retries(2).retry_non_idempotent());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub struct CallOptions {
    pub(crate) retries: Option<u32>,
    pub(crate) retry_non_idempotent: bool,
    pub(crate) hedge: bool,
    /// Each attempt's timeout instead of `http.client.timeout_secs`: what
    /// [`CallOptions::attempt_timeout`] asks, else what
    /// `RequestBuilder::timeout` does, as reqwest's per-request timeout
    /// replaces its client's.
    pub(crate) attempt_timeout: Option<Duration>,
    pub(crate) long_running: bool,
}

impl CallOptions {
    /// The options a door found in a request's `extensions`; none there is
    /// what the configuration says.
    pub(crate) fn in_extensions(extensions: &http::Extensions) -> Self {
        extensions.get::<Self>().copied().unwrap_or_default()
    }

    /// What the configuration says, nothing more.
    pub const fn new() -> Self {
        Self {
            retries: None,
            retry_non_idempotent: false,
            hedge: false,
            attempt_timeout: None,
            long_running: false,
        }
    }

    /// At most `retries` retries for this call, instead of
    /// `http.client.max_retries`. The deadline and the retry budget still
    /// bound them.
    pub const fn retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// Retries this call even though its method is not idempotent (POST,
    /// PATCH). Every attempt carries the same `Idempotency-Key` header (the
    /// caller's own, when set) so the server can tell a retry from a new
    /// request.
    pub const fn retry_non_idempotent(mut self) -> Self {
        self.retry_non_idempotent = true;
        self
    }

    /// Hedges this call, whatever `http.client.hedge.enabled` says (unless
    /// it is [`long_running`](Self::long_running)):
    /// see [`RequestBuilder::hedge`](super::RequestBuilder::hedge).
    pub const fn hedge(mut self) -> Self {
        self.hedge = true;
        self
    }

    /// Bounds each attempt of this call, until its response's head, by
    /// `timeout` instead of `http.client.timeout_secs`: see
    /// [`RequestBuilder::attempt_timeout`](super::RequestBuilder::attempt_timeout).
    /// A call given zero fails with
    /// [`ClientError::InvalidRequest`](super::ClientError::InvalidRequest).
    pub const fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }

    /// Takes this call for one whose answer comes only once its work is
    /// done, so its time says nothing of the host's health: see
    /// [`RequestBuilder::long_running`](super::RequestBuilder::long_running).
    pub const fn long_running(mut self) -> Self {
        self.long_running = true;
        self
    }
}
