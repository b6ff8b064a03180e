//! [`RetryBudget`]: one host's retry token bucket, lock-free.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
#[cfg(feature = "client")]
use std::time::Duration;

use tokio::time::Instant;

use super::RetryKind;
use crate::config::BudgetConfig;

/// Tokens are counted in thousandths, so `retry_ratio × transient_cost` (1.4
/// at the defaults) is exact.
const MILLI: u64 = 1000;

/// A retry token bucket, shared by every clone.
///
/// The bucket starts full (`capacity` tokens). Every first attempt pays in
/// `retry_ratio × transient_cost` ([`on_first_attempt`]); every retry takes
/// out its cost ([`try_withdraw`]), or is not made when the bucket cannot pay.
/// Tokens are exact thousandths held in one atomic integer: every operation
/// is a single load or compare-and-swap, with no lock and no clock.
///
/// `RetryBudget::new` builds a bucket whatever `enabled` says; whether a host
/// gets one at all is [`RetryBudgets`]' decision.
///
/// # Examples
///
/// ```
/// use timebox::config::BudgetConfig;
/// use timebox::retry::{RetryBudget, RetryKind};
///
/// let budget = RetryBudget::new(&BudgetConfig::default());
/// assert_eq!(budget.tokens(), 500.0);
///
/// // A retry after a 503 costs 14 tokens...
/// assert!(budget.try_withdraw(RetryKind::Transient));
/// assert_eq!(budget.tokens(), 486.0);
///
/// // ...given back when the retry succeeded.
/// budget.refund(RetryKind::Transient);
/// assert_eq!(budget.tokens(), 500.0);
///
/// // Clones share the bucket: 35 retries drain it for everyone.
/// let clone = budget.clone();
/// for _ in 0..35 {
///     assert!(clone.try_withdraw(RetryKind::Transient));
/// }
/// assert!(!budget.try_withdraw(RetryKind::Transient));
///
/// // Each first attempt earns back 10 % of a transient retry.
/// budget.on_first_attempt();
/// assert_eq!(budget.tokens(), 11.4);
/// ```
///
/// [`on_first_attempt`]: RetryBudget::on_first_attempt
/// [`try_withdraw`]: RetryBudget::try_withdraw
/// [`RetryBudgets`]: super::RetryBudgets
#[derive(Clone)]
pub struct RetryBudget {
    shared: Arc<Shared>,
    costs: Costs,
}

/// What the clones of a bucket share. No field publishes other data, so
/// `Relaxed` is enough: read-modify-writes of one atomic are totally
/// ordered.
struct Shared {
    /// The balance in thousandths of a token; never above `costs.capacity`.
    milli_tokens: AtomicU64,
    /// When the bucket last refused a retry, in milliseconds after `born`,
    /// plus one; 0 outside a spell of refusals. The log says when a spell
    /// begins and when one ends ([`REFUSING_QUIET`] with none), not each
    /// refusal.
    #[cfg_attr(not(feature = "client"), allow(dead_code))] // the client's engine says them
    refused: AtomicU64,
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    born: Instant,
}

/// How long with no retry refused ends a spell of refusals.
#[cfg(feature = "client")]
const REFUSING_QUIET: Duration = Duration::from_secs(10);

/// The fixed numbers of a bucket, in thousandths of a token, worked out once
/// from a [`BudgetConfig`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Costs {
    capacity: u64,
    deposit: u64,
    transient: u64,
    throttling: u64,
}

impl Costs {
    pub(super) fn new(config: &BudgetConfig) -> Self {
        // `as` saturates: a NaN or negative ratio (rejected by validation,
        // possible with `enabled = false`) earns nothing, an absurd one the
        // most a `u64` holds; the deposit is capped at capacity anyway.
        let deposit =
            (config.retry_ratio * config.transient_cost as f64 * MILLI as f64).round() as u64;
        Self {
            capacity: config.capacity.saturating_mul(MILLI),
            deposit,
            transient: config.transient_cost.saturating_mul(MILLI),
            throttling: config.throttling_cost.saturating_mul(MILLI),
        }
    }

    const fn cost(self, kind: RetryKind) -> u64 {
        match kind {
            RetryKind::Transient => self.transient,
            RetryKind::Throttling => self.throttling,
        }
    }
}

impl RetryBudget {
    /// A full bucket sized and priced by `config`.
    #[must_use]
    pub fn new(config: &BudgetConfig) -> Self {
        Self::with_costs(Costs::new(config))
    }

    pub(super) fn with_costs(costs: Costs) -> Self {
        Self {
            shared: Arc::new(Shared {
                milli_tokens: AtomicU64::new(costs.capacity),
                refused: AtomicU64::new(0),
                born: Instant::now(),
            }),
            costs,
        }
    }

    /// Pays in for a first attempt: `retry_ratio × transient_cost` tokens, up
    /// to capacity.
    ///
    /// Call it once per call, before its first attempt. It never fails and
    /// never waits: a first attempt is never held back by the budget.
    pub fn on_first_attempt(&self) {
        self.add(self.costs.deposit);
    }

    /// Takes the cost of a retry of `kind` out of the bucket if it holds that
    /// much, and says whether it did.
    ///
    /// `false` means the retry must not be made: the caller returns the last
    /// result at once. The check and the withdrawal are one atomic step, so
    /// callers on several threads never overdraw the bucket together.
    #[must_use = "a retry is allowed only when the withdrawal succeeded"]
    pub fn try_withdraw(&self, kind: RetryKind) -> bool {
        let cost = self.costs.cost(kind);
        self.shared
            .milli_tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |tokens| {
                tokens.checked_sub(cost)
            })
            .is_ok()
    }

    /// Takes `cost` tokens for a hedge (A3) if the bucket is at least half
    /// full, and says whether it did: a host whose retries have been
    /// drawing on its bucket gets no extra load from hedges.
    #[cfg(feature = "client")]
    #[must_use = "a hedge is allowed only when the withdrawal succeeded"]
    pub(crate) fn try_withdraw_hedge(&self, cost: u64) -> bool {
        let cost = cost.saturating_mul(MILLI);
        let half = self.costs.capacity / 2;
        self.shared
            .milli_tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |tokens| {
                (tokens >= half).then(|| tokens.checked_sub(cost)).flatten()
            })
            .is_ok()
    }

    /// Gives back `cost` tokens taken for a hedge that was not sent after
    /// all, up to capacity.
    #[cfg(feature = "client")]
    pub(crate) fn refund_hedge(&self, cost: u64) {
        self.add(cost.saturating_mul(MILLI));
    }

    /// Gives back the cost of a retry of `kind`, up to capacity.
    ///
    /// The caller refunds a retry that succeeded (final status below 400) and
    /// one cancelled before it was sent: the bucket meters failures, and
    /// neither of those added load to a failing host.
    pub fn refund(&self, kind: RetryKind) {
        self.add(self.costs.cost(kind));
    }

    /// Notes a retry refused at `now`; whether it begins a spell of
    /// refusals. A refusal within the millisecond of the last one noted
    /// writes nothing, so a bucket refusing most retries of a failing host
    /// costs a load, not a write, per refusal.
    #[cfg(feature = "client")]
    pub(crate) fn refused_at(&self, now: Instant) -> bool {
        let at = self.millis(now).saturating_add(1);
        if self.shared.refused.load(Ordering::Relaxed) == at {
            return false;
        }
        self.shared.refused.swap(at, Ordering::Relaxed) == 0
    }

    /// Whether a spell of refusals ends at `now`: none was refused for
    /// [`REFUSING_QUIET`]. Asked at each first attempt; outside a spell
    /// it is one load.
    #[cfg(feature = "client")]
    pub(crate) fn quiet_at(&self, now: Instant) -> bool {
        let last = self.shared.refused.load(Ordering::Relaxed);
        last != 0
            && self.millis(now).saturating_add(1)
                >= last.saturating_add(REFUSING_QUIET.as_millis() as u64)
            && self
                .shared
                .refused
                .compare_exchange(last, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    #[cfg(feature = "client")]
    fn millis(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.shared.born);
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    }

    /// The balance, in tokens (exact to a thousandth).
    #[must_use]
    pub fn tokens(&self) -> f64 {
        self.shared.milli_tokens.load(Ordering::Relaxed) as f64 / MILLI as f64
    }

    /// The most tokens the bucket holds: `capacity`.
    #[must_use]
    pub fn capacity(&self) -> f64 {
        self.costs.capacity as f64 / MILLI as f64
    }

    fn add(&self, amount: u64) {
        let capacity = self.costs.capacity;
        // A full bucket, the usual case on a healthy host, costs one load and
        // no write, so callers on many threads do not fight over its cache
        // line.
        let _ =
            self.shared
                .milli_tokens
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |tokens| {
                    (tokens < capacity).then(|| tokens.saturating_add(amount).min(capacity))
                });
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("tokens", &self.tokens())
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, feature = "client"))]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::RetryBudget;
    use crate::config::BudgetConfig;

    #[test]
    fn a_spell_of_refusals_begins_once_and_ends_after_10_s_with_none() {
        let budget = RetryBudget::new(&BudgetConfig::default());
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        assert!(budget.refused_at(at(0)), "the first refusal begins a spell");
        assert!(!budget.refused_at(at(0)), "one in the same millisecond");
        assert!(!budget.refused_at(at(500)), "one later in the spell");
        assert!(
            !budget.quiet_at(at(10_499)),
            "10 s less a millisecond after"
        );
        assert!(budget.quiet_at(at(10_500)), "10 s after the last refusal");
        assert!(!budget.quiet_at(at(10_501)), "the end is said once");
        assert!(budget.refused_at(at(20_000)), "a new spell");
    }
}
