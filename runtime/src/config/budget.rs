//! `[http.client.retry_budget]`: the per-host retry token bucket.

use serde::{Deserialize, Serialize};

/// `[http.client.retry_budget]`: the retry token bucket kept per upstream host.
///
/// Each first attempt adds `retry_ratio × transient_cost` tokens (up to
/// `capacity`); a retry costs `transient_cost` (after a 5xx, a connect error
/// or a timeout) or `throttling_cost` (after a 429). A retry the bucket cannot
/// pay is not made, so retries stay near `retry_ratio` of first attempts when a
/// host keeps failing.
///
/// [`Config::validate`](super::Config::validate) rejects a zero `capacity`,
/// `transient_cost` or `throttling_cost` and a `retry_ratio` outside
/// `0.0..=1.0` (or NaN) while `enabled` is `true`.
///
/// # Examples
///
/// ```
/// use timebox::config::BudgetConfig;
///
/// let budget = BudgetConfig {
///     retry_ratio: 0.2,
///     ..BudgetConfig::default()
/// };
/// assert_eq!(budget.capacity, 500);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetConfig {
    /// Whether retries are budgeted at all. Default `true`; when `false`, only
    /// `max_retries` and the deadline bound retries, and the other values of
    /// this section are not checked.
    pub enabled: bool,
    /// Tokens a host's bucket holds; it starts full. Default 500.
    pub capacity: u64,
    /// Tokens a retry after a 5xx, connect error or timeout costs. Default 14.
    pub transient_cost: u64,
    /// Tokens a retry after a 429 costs. Default 5.
    pub throttling_cost: u64,
    /// Fraction of `transient_cost` each first attempt earns back, which is
    /// about the fraction of requests that may retry once the bucket is empty.
    /// Default 0.1.
    pub retry_ratio: f64,
    /// Most hosts that get a bucket; hosts first seen after that have no
    /// budget, and a client gives them no circuit breaker and no hedging
    /// stats either, so no stream of new host names grows its tables.
    /// With budgets off it still caps the hosts that get a breaker and
    /// hedging stats. Default 1024.
    pub max_hosts: usize,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            capacity: 500,
            transient_cost: 14,
            throttling_cost: 5,
            retry_ratio: 0.1,
            max_hosts: 1024,
        }
    }
}
