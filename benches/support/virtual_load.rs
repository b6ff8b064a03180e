//! What the experiments in virtual time share: a paused runtime, random
//! arrivals, and quantiles of the latencies they saw.

use std::time::Duration;

use timebox::entropy::Entropy;

/// A current-thread runtime on a paused clock: timers fire as soon as
/// nothing else can run, so seconds of traffic take milliseconds.
pub(crate) fn paused_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
}

/// The gap to the next arrival of a Poisson process of `rate` a second:
/// exponential, of mean `1 / rate`, drawn from `entropy`.
pub(crate) fn poisson_gap(entropy: &Entropy, rate: f64) -> Duration {
    let uniform = (entropy.next_u64() >> 11) as f64 / (1_u64 << 53) as f64;
    Duration::from_secs_f64(-(1.0 - uniform).ln() / rate)
}

/// The `q` quantile of `latencies` by the nearest rank (the smallest value
/// with at least `q` of them at or below it); `None` when there are none.
pub(crate) fn quantile(latencies: &[Duration], q: f64) -> Option<Duration> {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    let last = sorted.len().checked_sub(1)?;
    let rank = (sorted.len() as f64 * q).ceil() as usize;
    sorted.get(rank.saturating_sub(1).min(last)).copied()
}
