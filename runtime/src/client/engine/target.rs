//! [`Target`]: where the next request goes, and its host's breaker and
//! budget.

use std::sync::Arc;

use http::Uri;
use url::Url;

use crate::breaker::CircuitBreaker;
use crate::client::hedge::HostStats;
use crate::client::rules::Rules;
use crate::client::ClientError;
use crate::observe::Label;
use crate::retry::{host_key, RetryBudget};

/// Where the next request goes, and its host's breaker and budget: found
/// once per call, and again after each redirect.
pub(super) struct Target {
    pub(super) uri: Uri,
    /// The same as a `Url`, once a door or a redirect made one.
    pub(super) url: Option<Url>,
    pub(super) host: String,
    /// The host's `host` value in events, when someone listens.
    pub(super) label: Option<Label>,
    pub(super) breaker: Option<CircuitBreaker>,
    pub(super) budget: Option<RetryBudget>,
    /// The host's recent latencies and hedges, when the call may hedge.
    pub(super) stats: Option<Arc<HostStats>>,
    /// Whether this request has refilled the host's bucket.
    pub(super) refilled: bool,
}

impl Target {
    /// The target of `uri`; with `hedging`, with its host's stats (only
    /// calls that may hedge keep them, so others pay nothing for them).
    pub(super) fn new(
        rules: &Rules,
        uri: Uri,
        url: Option<Url>,
        hedging: bool,
    ) -> Result<Self, ClientError> {
        let host = host_key(&uri).ok_or_else(|| {
            // Its path alone: a query may hold secrets.
            ClientError::InvalidRequest(format!(
                "the request's uri `{}` has no host, or no port and no http(s) scheme",
                uri.path()
            ))
        })?;
        let budget = rules.budgets.for_host(&host);
        // The host tables hold the same hosts: one refused a bucket (past
        // `max_hosts`) gets no breaker and no hedging stats either, and a
        // table filled by other calls (hedging or not) refuses no host the
        // budget table took.
        let tracked = budget.is_some() || !rules.budgets.is_enabled();
        Ok(Self {
            label: rules
                .observers
                .is_listening()
                .then(|| rules.labels.of(&host)),
            breaker: tracked.then(|| rules.breaker(&host)).flatten(),
            budget,
            stats: (hedging && tracked)
                .then(|| rules.hedging.stats(&host))
                .flatten(),
            uri,
            url,
            host,
            refilled: false,
        })
    }

    /// The target as a `Url`, parsed from the URI when no door gave one.
    pub(super) fn url(&self) -> Option<Url> {
        match &self.url {
            Some(url) => Some(url.clone()),
            None => Url::parse(&self.uri.to_string()).ok(),
        }
    }
}
