//! [`Rules`]: what every door of the client shares: the configuration, the
//! per-host retry budgets and breakers, the backoff and its entropy.

use std::fmt;
use std::sync::Arc;

use crate::bounded_map::BoundedMap;
use crate::breaker::CircuitBreaker;
use crate::config::{BreakerConfig, ClientConfig, Config};
use crate::deadline::Formats;
use crate::entropy::Entropy;
use crate::observe::{BoundedLabels, Observers};
use crate::retry::{Backoff, RetryBudgets};

use super::hedge::Hedging;

/// The state the call engine reads and updates: one per `Client`,
/// middleware or layer, shared by its clones. A clone of the `Rules`
/// themselves shares the per-host state too (budgets, breakers, hedging
/// latencies, labels): only its settings are its own.
#[derive(Clone)]
pub(crate) struct Rules {
    pub(crate) config: ClientConfig,
    pub(crate) budgets: RetryBudgets,
    pub(crate) backoff: Backoff,
    pub(crate) entropy: Entropy,
    /// The deadline headers each attempt writes.
    pub(crate) deadline_headers: Formats,
    /// Who hears the calls' events, and the `host` values they give.
    pub(crate) observers: Observers,
    pub(crate) labels: Arc<BoundedLabels>,
    pub(crate) hedging: Arc<Hedging>,
    /// Whether a redirect to another origin is followed. Not through a
    /// caller's own reqwest client, the reqwest middleware or `ClientLayer`:
    /// what sends the request there (the client's default headers, a
    /// layer inside) can add an `Authorization` or a `Cookie` to every
    /// request, where a hop cannot take them off.
    pub(crate) follows_other_origins: bool,
    breaker_config: BreakerConfig,
    breakers: Arc<BoundedMap<CircuitBreaker>>,
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
            labels: Arc::new(BoundedLabels::new(client.retry_budget.max_hosts)),
            hedging: Arc::new(Hedging::new(&client.hedge, client.retry_budget.max_hosts)),
            follows_other_origins: true,
            breaker_config: config.breaker.clone(),
            breakers: Arc::new(BoundedMap::new(client.retry_budget.max_hosts)),
        }
    }

    /// `rules` drawing from `entropy`: the same rules when nothing else
    /// holds them, else a copy that shares their per-host state (a door
    /// cloned before, or a service made before, keeps drawing from the old
    /// source).
    pub(crate) fn with_entropy(mut rules: Arc<Self>, entropy: Entropy) -> Arc<Self> {
        Arc::make_mut(&mut rules).entropy = entropy;
        rules
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_entropy_keeps_rules_nothing_else_holds_and_copies_shared_ones_with_their_state() {
        let config = Config::default();
        let only = Arc::new(Rules::new(&config, Entropy::seeded(1)));
        let before = Arc::as_ptr(&only);
        let only = Rules::with_entropy(only, Entropy::seeded(2));
        assert_eq!(
            Arc::as_ptr(&only),
            before,
            "the same rules, now drawing from 2"
        );
        assert_eq!(only.entropy.seed(), Some(2));

        let shared = Arc::new(Rules::new(&config, Entropy::seeded(1)).within_origin());
        let kept = Arc::clone(&shared);
        let copied = Rules::with_entropy(shared, Entropy::seeded(2));
        assert!(!Arc::ptr_eq(&copied, &kept), "the holder keeps its rules");
        assert_eq!(copied.entropy.seed(), Some(2));
        assert_eq!(kept.entropy.seed(), Some(1));
        assert!(
            !copied.follows_other_origins,
            "the copy keeps the rules' origin policy"
        );
        // The per-host state is one: what one learns, the other sees.
        assert!(Arc::ptr_eq(&copied.breakers, &kept.breakers));
        assert!(Arc::ptr_eq(&copied.hedging, &kept.hedging));
        assert!(Arc::ptr_eq(&copied.labels, &kept.labels));
        let _ = kept.budgets.for_host("up:80");
        assert_eq!(copied.budgets.len(), 1, "one table of budgets");
    }
}
