//! What [`TimeboxLayer`](super::TimeboxLayer) learns about a request on the
//! way in, for the route layer below it.

use std::time::Duration;

use tokio::time::Instant;

use crate::deadline::Format;
use crate::entropy::Entropy;
use crate::observe::Observers;

use super::route_deadline::RouteClaim;

/// A request extension set by `TimeboxLayer` when any deadline can apply.
#[derive(Debug, Clone)]
pub(crate) struct RequestContext {
    /// When the request entered the timebox layers: every deadline counts
    /// from here, so extraction and routing are inside it.
    pub(crate) start: Instant,
    /// `server.timeouts.request_timeout_ms`, for routes that inherit it.
    pub(crate) global: Option<Duration>,
    /// The inbound deadline header, when accepted and parseable.
    pub(crate) inbound: Option<(Duration, Format)>,
    /// The application's random source, for `Retry-After`.
    pub(crate) entropy: Entropy,
    /// Set while `TimeboxLayer` gates the request at the global deadline: a
    /// route rule below takes it over (see [`RouteClaim`]).
    pub(crate) claim: Option<RouteClaim>,
    /// The app's observers (`TimeboxLayer`'s config): the route rules below
    /// tell them too.
    pub(crate) observers: Observers,
}

impl RequestContext {
    /// The random source for a request's `Retry-After`: its context's
    /// (the app's), else one the request brought (`Sim::app` puts its own
    /// on every request, so a simulation replays).
    pub(crate) fn entropy_of(
        context: Option<&Self>,
        extensions: &http::Extensions,
    ) -> Option<Entropy> {
        match context {
            Some(context) => Some(context.entropy.clone()),
            None => extensions.get::<Entropy>().cloned(),
        }
    }

    /// The claim, when the route rule reading it takes the request over.
    pub(crate) fn take_over(&self) -> Option<RouteClaim> {
        self.claim
            .as_ref()
            .filter(|claim| claim.take_over())
            .cloned()
    }
}
