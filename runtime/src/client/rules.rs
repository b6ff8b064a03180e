//! [`Rules`]: what every door of the client shares: the configuration, the
//! per-host retry budgets and breakers, the backoff and its entropy.

use std::fmt;

use crate::bounded_map::BoundedMap;
use crate::breaker::CircuitBreaker;
use crate::config::{BreakerConfig, ClientConfig, Config};
use crate::deadline::Formats;
use crate::entropy::Entropy;
use crate::observe::{BoundedLabels, Observers};
use crate::retry::{Backoff, RetryBudgets};

use super::hedge::Hedging;

/// The state the call engine reads and updates: one per `Client`,
/// middleware or layer, shared by its clones.
pub(crate) struct Rules {
    pub(crate) config: ClientConfig,
    pub(crate) budgets: RetryBudgets,
    pub(crate) backoff: Backoff,
    pub(crate) entropy: Entropy,
    /// The deadline headers each attempt writes.
    pub(crate) deadline_headers: Formats,
    /// Who hears the calls' events, and the `host` values they give.
    pub(crate) observers: Observers,
    pub(crate) labels: BoundedLabels,
    pub(crate) hedging: Hedging,
    /// Whether a redirect to another origin is followed. Not through a
    /// caller's own reqwest client: it adds its default headers (an
    /// `Authorization`, a `Cookie`) to every request it sends, where a
    /// hop cannot take them off.
    pub(crate) follows_other_origins: bool,
    breaker_config: BreakerConfig,
    breakers: BoundedMap<CircuitBreaker>,
}

impl Rules {
    /// The rules of `config.http.client` and `config.breaker`, drawing jitter
    /// and idempotency keys from `entropy`.
    pub(crate) fn new(config: &Config, entropy: Entropy) -> Self {
        let client = &config.http.client;
        Self {
            budgets: RetryBudgets::new(&client.retry_budget),
            backoff: Backoff::from_config(client),
            config: client.clone(),
            entropy,
            deadline_headers: Formats::written(client),
            observers: config.observers.clone(),
            labels: BoundedLabels::new(client.retry_budget.max_hosts),
            hedging: Hedging::new(&client.hedge, client.retry_budget.max_hosts),
            follows_other_origins: true,
            breaker_config: config.breaker.clone(),
            breakers: BoundedMap::new(client.retry_budget.max_hosts),
        }
    }

    /// The rules, following no redirect to another origin (see
    /// `follows_other_origins`).
    pub(crate) fn within_origin(mut self) -> Self {
        self.follows_other_origins = false;
        self
    }

    /// The circuit breaker of `host` (a `host:port` key), made on first use;
    /// `None` with `breaker.enabled = false`, and for hosts first seen after
    /// `max_hosts` others. The engine asks only for hosts that have a retry
    /// budget (any host, when budgets are off), so a host past `max_hosts`
    /// of the budget table gets no breaker either.
    pub(crate) fn breaker(&self, host: &str) -> Option<CircuitBreaker> {
        if !self.breaker_config.enabled {
            return None;
        }
        self.breakers.get_or_make(host, || {
            CircuitBreaker::observed(
                host,
                self.labels.of(host),
                &self.breaker_config,
                self.observers.clone(),
            )
        })
    }
}

impl fmt::Debug for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rules")
            .field("config", &self.config)
            .field("budgets", &self.budgets)
            .field("breaker", &self.breaker_config)
            .finish_non_exhaustive()
    }
}
