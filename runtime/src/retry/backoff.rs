//! [`Backoff`]: exponential backoff with full jitter.

use std::time::Duration;

use crate::config::ClientConfig;
use crate::entropy::Entropy;

/// Exponential backoff with full jitter: before retry `n` (0-based), a wait
/// drawn uniformly from `[0, min(max, base · 2ⁿ)]`.
///
/// Full jitter spreads the retries of many clients that failed together over
/// the whole window instead of bunching them at its end, which is what keeps
/// a recovering server from being hit by the same wave again (see the AWS
/// Architecture Blog, "Exponential Backoff And Jitter"). The draws come from
/// an [`Entropy`], so a seeded test replays the same waits.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::entropy::Entropy;
/// use timebox::retry::Backoff;
///
/// let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(20));
///
/// // Retry 3 waits at most 100 ms · 2³ = 800 ms...
/// assert_eq!(backoff.ceiling(3), Duration::from_millis(800));
/// assert!(backoff.delay(3, &Entropy::from_os()) <= Duration::from_millis(800));
///
/// // ...and no retry waits more than the maximum.
/// assert_eq!(backoff.ceiling(60), Duration::from_secs(20));
///
/// // The same seed gives the same waits.
/// let waits = |entropy: Entropy| (0..4).map(|n| backoff.delay(n, &entropy)).collect::<Vec<_>>();
/// assert_eq!(waits(Entropy::seeded(7)), waits(Entropy::seeded(7)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
}

impl Backoff {
    /// The base of the exponent unless configured otherwise: 100 ms.
    pub const DEFAULT_BASE: Duration = Duration::from_millis(100);

    /// Backoff from `base` (the ceiling before retry 0) doubling up to `max`.
    #[must_use]
    pub const fn new(base: Duration, max: Duration) -> Self {
        Self { base, max }
    }

    /// The client's backoff: base 100 ms, maximum `max_backoff_ms`.
    #[must_use]
    pub const fn from_config(config: &ClientConfig) -> Self {
        Self::new(
            Self::DEFAULT_BASE,
            Duration::from_millis(config.max_backoff_ms),
        )
    }

    /// The base: the ceiling of the wait before retry 0.
    #[must_use]
    pub const fn base(&self) -> Duration {
        self.base
    }

    /// The most any wait can be.
    #[must_use]
    pub const fn max(&self) -> Duration {
        self.max
    }

    /// The ceiling of the wait before retry `n` (0-based):
    /// `min(max, base · 2ⁿ)`, saturating at `max` for any `n`.
    #[must_use]
    pub fn ceiling(&self, n: u32) -> Duration {
        1u32.checked_shl(n)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.max, |ceiling| ceiling.min(self.max))
    }

    /// The wait before retry `n` (0-based): uniform in
    /// `[0, `[`ceiling(n)`](Backoff::ceiling)`]`, drawn from `entropy`.
    #[must_use]
    pub fn delay(&self, n: u32, entropy: &Entropy) -> Duration {
        entropy.jitter(self.ceiling(n))
    }
}

impl Default for Backoff {
    /// The client's defaults: base 100 ms, maximum 20 s.
    fn default() -> Self {
        Self::from_config(&ClientConfig::default())
    }
}
