//! What [`TimeboxLayer`](super::TimeboxLayer) learns about a request on the
//! way in, for the route layer below it.

use std::time::Duration;

use tokio::time::Instant;

use crate::entropy::Entropy;

/// A request extension set by `TimeboxLayer` when any deadline can apply.
#[derive(Debug, Clone)]
pub(crate) struct RequestContext {
    /// When the request entered the timebox layers: every deadline counts
    /// from here, so extraction and routing are inside it.
    pub(crate) start: Instant,
    /// `server.timeouts.request_timeout_ms`, for routes that inherit it.
    pub(crate) global: Option<Duration>,
    /// The inbound deadline header, when accepted and parseable.
    pub(crate) inbound: Option<Duration>,
    /// The application's random source, for `Retry-After`.
    pub(crate) entropy: Entropy,
}
