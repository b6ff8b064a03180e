//! The Prometheus recorder's upkeep. `install_recorder` leaves it to its
//! caller: without it, every histogram sample a request records stays in
//! memory until the next scrape, and a gateway nobody scrapes grows without
//! bound.

use std::time::Duration;

use tokio::time::{interval_at, Instant, MissedTickBehavior};
use tokio_util::task::AbortOnDropHandle;

/// How often the recorder is kept up: what `PrometheusBuilder::install`'s
/// own task does.
pub(crate) const EVERY: Duration = Duration::from_secs(5);

/// Runs `upkeep` every `period`, first one `period` from now, until the
/// returned handle is dropped.
pub(crate) fn every(
    period: Duration,
    mut upkeep: impl FnMut() + Send + 'static,
) -> AbortOnDropHandle<()> {
    AbortOnDropHandle::new(tokio::spawn(async move {
        let mut ticks = interval_at(Instant::now() + period, period);
        // After a stall, one upkeep drains everything: no catching up.
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            upkeep();
        }
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::every;

    const PERIOD: Duration = Duration::from_secs(5);

    #[tokio::test(start_paused = true)]
    async fn runs_once_a_period_until_its_handle_is_dropped() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let handle = every(PERIOD, move || {
            counted.fetch_add(1, Ordering::Relaxed);
        });
        tokio::time::sleep(PERIOD - Duration::from_millis(1)).await;
        assert_eq!(runs.load(Ordering::Relaxed), 0, "not before one period");
        tokio::time::sleep(2 * PERIOD).await;
        assert_eq!(runs.load(Ordering::Relaxed), 2);
        drop(handle);
        tokio::time::sleep(3 * PERIOD).await;
        assert_eq!(runs.load(Ordering::Relaxed), 2, "none after the drop");
    }
}
