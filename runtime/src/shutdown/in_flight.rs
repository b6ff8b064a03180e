//! [`InFlight`]: how many requests are being served right now.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A shared count of admitted requests, from admission to the end of the
/// response body or stream.
///
/// Clones share one count. [`InFlight::enter`] returns a guard that decrements
/// the count exactly once when dropped, panics included.
///
/// # Examples
///
/// ```
/// use timebox::shutdown::InFlight;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let in_flight = InFlight::new();
/// let guard = in_flight.enter();
/// assert_eq!(in_flight.count(), 1);
/// let waiter = tokio::spawn({
///     let in_flight = in_flight.clone();
///     async move { in_flight.wait_zero().await }
/// });
/// drop(guard);
/// waiter.await.unwrap();
/// assert_eq!(in_flight.count(), 0);
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct InFlight {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    count: AtomicUsize,
    zero: Notify,
}

impl InFlight {
    /// A new count at zero.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one more request until the returned guard is dropped.
    #[must_use = "the request counts only while the guard is alive"]
    pub fn enter(&self) -> InFlightGuard {
        self.shared.count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The number of requests in flight.
    #[must_use]
    pub fn count(&self) -> usize {
        self.shared.count.load(Ordering::Acquire)
    }

    /// Completes when the count is zero (at once if it is).
    ///
    /// # Cancellation safety
    ///
    /// Cancellation safe: dropping the future loses nothing.
    pub async fn wait_zero(&self) {
        loop {
            // Register before reading the count, so a decrement to zero
            // between the read and the await cannot be missed.
            let zero = self.shared.zero.notified();
            tokio::pin!(zero);
            zero.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            zero.await;
        }
    }
}

/// Counts one request in flight; dropping it ends the count.
#[derive(Debug)]
#[must_use = "the request counts only while the guard is alive"]
pub struct InFlightGuard {
    shared: Arc<Shared>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.shared.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.zero.notify_waiters();
        }
    }
}
