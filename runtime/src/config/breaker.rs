//! `[breaker]`: the per-host circuit breaker of the outbound client.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sections::secs_or_off;

/// The most buckets a breaker's window may have: every host's breaker keeps
/// all of them.
pub(crate) const MOST_WINDOW_BUCKETS: u32 = 1000;

/// `[breaker]`: when the per-host circuit breaker opens and how it recovers.
///
/// Calls are counted in a rolling window of `window_secs` split into
/// `window_buckets` buckets. Once `minimum_sample_count` calls are in the
/// window, the breaker opens when the failed share reaches
/// `failure_ratio_threshold` or the slow share reaches
/// `slow_call_rate_threshold`. It stays open `open_secs`, then admits
/// `half_open_trials` trial calls.
///
/// # Examples
///
/// ```
/// use timebox::config::{BreakerConfig, CancelledCallOutcome};
///
/// let breaker = BreakerConfig {
///     cancelled_call_outcome: CancelledCallOutcome::Failure,
///     ..BreakerConfig::default()
/// };
/// assert_eq!(breaker.window_secs, 10);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BreakerConfig {
    /// Whether the client keeps a breaker per host at all. Default `true`.
    ///
    /// With `false` no breaker state is kept, no call is refused, and the
    /// values below are not validated: the retry budget and the deadline
    /// still bound retries.
    pub enabled: bool,
    /// Length of the rolling window, in seconds. Default 10.
    pub window_secs: u64,
    /// Buckets the window is split into; each bucket must be a whole number of
    /// milliseconds. Default 10.
    pub window_buckets: u32,
    /// Share of failed calls in the window that opens the breaker, in
    /// `(0.0, 1.0]`. Default 0.5.
    pub failure_ratio_threshold: f64,
    /// Share of slow calls in the window that opens the breaker, in
    /// `(0.0, 1.0]`. Default 1.0.
    pub slow_call_rate_threshold: f64,
    /// Calls the window must hold before either ratio is looked at. Default 10.
    pub minimum_sample_count: u32,
    /// How long the breaker stays open before it admits trials, in seconds.
    /// Default 60.
    pub open_secs: u64,
    /// Trial calls admitted while half-open. Default 3.
    pub half_open_trials: u32,
    /// A call that runs longer than this is slow, in seconds. Default 60;
    /// `0` means calls are never slow.
    pub slow_call_duration_threshold_secs: u64,
    /// How a cancelled call that ran past `slow_call_duration_threshold_secs`
    /// counts. Default `"slow"`.
    pub cancelled_call_outcome: CancelledCallOutcome,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            window_secs: 10,
            window_buckets: 10,
            failure_ratio_threshold: 0.5,
            slow_call_rate_threshold: 1.0,
            minimum_sample_count: 10,
            open_secs: 60,
            half_open_trials: 3,
            slow_call_duration_threshold_secs: 60,
            cancelled_call_outcome: CancelledCallOutcome::Slow,
        }
    }
}

impl BreakerConfig {
    /// The slow-call threshold; `None` when
    /// `slow_call_duration_threshold_secs` is `0` (no call is ever slow).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use timebox::config::BreakerConfig;
    ///
    /// let mut breaker = BreakerConfig::default();
    /// assert_eq!(breaker.slow_call_duration_threshold(), Some(Duration::from_secs(60)));
    /// breaker.slow_call_duration_threshold_secs = 0;
    /// assert_eq!(breaker.slow_call_duration_threshold(), None);
    /// ```
    #[must_use]
    pub fn slow_call_duration_threshold(&self) -> Option<Duration> {
        secs_or_off(self.slow_call_duration_threshold_secs)
    }
}

/// How a call dropped without an outcome counts once it ran past the slow-call
/// threshold (a cancelled call that finished sooner is not counted at all).
///
/// In TOML: `cancelled_call_outcome = "slow"` or `"failure"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CancelledCallOutcome {
    /// It counts as a slow call (the default).
    #[default]
    Slow,
    /// It counts as a failed call.
    Failure,
}
