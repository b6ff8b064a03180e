//! The one seedable random source behind every jittered choice.
//!
//! Jitter (the `Retry-After` seconds of a timeout response, the backoff before
//! a retry) must spread load in production and replay exactly in a test. So
//! timebox draws every random number from an [`Entropy`]: an application holds
//! one (clones share its stream), seeded from the operating system by default
//! and from the test's seed under `#[sim_test]`. Nothing in timebox reads
//! another source of randomness.
//!
//! The generator is ChaCha8, whose output for a given seed is fixed by its
//! specification, so a seed printed by a failing test replays the same
//! sequence on any machine.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use timebox::entropy::Entropy;
//!
//! let a = Entropy::seeded(42);
//! let b = Entropy::seeded(42);
//! let draws_a: Vec<u64> = (0..5).map(|_| a.uniform(1..=3)).collect();
//! let draws_b: Vec<u64> = (0..5).map(|_| b.uniform(1..=3)).collect();
//! assert_eq!(draws_a, draws_b);
//!
//! let wait = a.jitter(Duration::from_millis(100));
//! assert!(wait <= Duration::from_millis(100));
//! ```

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A shared, seedable source of random numbers.
///
/// Cloning is cheap and the clones draw from one stream, so the order of draws
/// across an application decides the values, and a seeded run replays.
#[derive(Clone)]
pub struct Entropy {
    inner: Arc<Inner>,
}

struct Inner {
    seed: Option<u64>,
    rng: Mutex<ChaCha8Rng>,
}

impl Entropy {
    /// A source seeded from the operating system: different on every start.
    #[must_use]
    pub fn from_os() -> Self {
        Self::with_rng(None, ChaCha8Rng::from_os_rng())
    }

    /// A source whose sequence is fixed by `seed`.
    #[must_use]
    pub fn seeded(seed: u64) -> Self {
        Self::with_rng(Some(seed), ChaCha8Rng::seed_from_u64(seed))
    }

    fn with_rng(seed: Option<u64>, rng: ChaCha8Rng) -> Self {
        Self {
            inner: Arc::new(Inner {
                seed,
                rng: Mutex::new(rng),
            }),
        }
    }

    /// The seed this source was made from, or `None` when it came from the
    /// operating system.
    #[must_use]
    pub fn seed(&self) -> Option<u64> {
        self.inner.seed
    }

    /// The next 64 random bits.
    #[must_use]
    pub fn next_u64(&self) -> u64 {
        self.with(RngCore::next_u64)
    }

    /// A number drawn uniformly from `range` (both ends included).
    ///
    /// # Panics
    ///
    /// Panics if the range is empty (`start > end`).
    #[must_use]
    #[track_caller]
    pub fn uniform(&self, range: RangeInclusive<u64>) -> u64 {
        assert!(
            range.start() <= range.end(),
            "Entropy::uniform called with an empty range {range:?}"
        );
        self.with(|rng| rng.random_range(range))
    }

    /// A duration drawn uniformly from `[0, max]` at nanosecond resolution:
    /// "full jitter".
    #[must_use]
    pub fn jitter(&self, max: Duration) -> Duration {
        let max_nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(self.uniform(0..=max_nanos))
    }

    /// A `true` with probability `p` (clamped to `0.0..=1.0`; NaN is never).
    #[must_use]
    pub fn chance(&self, p: f64) -> bool {
        if p.is_nan() || p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        self.with(|rng| rng.random_bool(p))
    }

    fn with<T>(&self, draw: impl FnOnce(&mut ChaCha8Rng) -> T) -> T {
        // A panic while the lock was held cannot leave a half-written
        // generator behind (every draw is a single call), so poisoning is
        // ignored rather than turned into a second panic.
        let mut rng = self
            .inner
            .rng
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        draw(&mut rng)
    }
}

impl Default for Entropy {
    /// The same as [`Entropy::from_os`].
    fn default() -> Self {
        Self::from_os()
    }
}

impl fmt::Debug for Entropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entropy")
            .field("seed", &self.inner.seed)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_stream() {
        let a = Entropy::seeded(7);
        let b = a.clone();
        let fresh = Entropy::seeded(7);
        let interleaved = [a.next_u64(), b.next_u64()];
        assert_eq!(interleaved, [fresh.next_u64(), fresh.next_u64()]);
    }

    #[test]
    fn uniform_stays_in_range_and_reaches_both_ends() {
        let e = Entropy::seeded(1);
        let draws: Vec<u64> = (0..200).map(|_| e.uniform(1..=3)).collect();
        assert!(draws.iter().all(|d| (1..=3).contains(d)));
        assert!(draws.contains(&1) && draws.contains(&3));
    }

    #[test]
    fn jitter_of_zero_is_zero() {
        assert_eq!(Entropy::seeded(3).jitter(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn chance_edges_are_exact() {
        let e = Entropy::seeded(4);
        assert!((0..100).all(|_| !e.chance(0.0) && e.chance(1.0) && !e.chance(f64::NAN)));
    }
}
