//! The two tokens of a shutdown: take no new requests, then drain.

use tokio_util::sync::{
    CancellationToken, WaitForCancellationFuture, WaitForCancellationFutureOwned,
};

use super::{InFlight, InFlightGuard};

/// Cancelled when the server stops taking new requests (phase 1): from then
/// on they are answered 503.
///
/// Cheap to clone; every clone sees the same cancellation. Handlers can take
/// it as an axum extractor to wind long work down early.
#[derive(Debug, Clone, Default)]
pub struct ShutdownToken {
    inner: CancellationToken,
}

/// Cancelled when streams still running must end (phase 2).
///
/// Cheap to clone; every clone sees the same cancellation. The token of a
/// [`Shutdown`](super::Shutdown) also knows its in-flight count: a stream
/// given it (`SseStream::drain`) counts in flight until its last step, its
/// remote cleanup included, so the shutdown waits for the tools to hear.
///
/// # Examples
///
/// A long stream runs on through phase 1 and ends at phase 2:
///
/// ```
/// use std::time::Duration;
/// use timebox::config::Config;
/// use timebox::shutdown::Shutdown;
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let shutdown = Shutdown::new(&Config::default()); // 5 s, then 30 s
///     let (token, drain) = (shutdown.token(), shutdown.drain_token());
///     let guard = shutdown.in_flight().enter(); // the stream's request
///     let stream = tokio::spawn(async move {
///         let _counted = guard;
///         drain.cancelled().await; // phase 2: send a last event and end
///         token.is_cancelled()
///     });
///     let start = tokio::time::Instant::now();
///     shutdown.trigger();
///     shutdown.wait_drained().await;
///     assert!(stream.await.unwrap(), "phase 1 came first");
///     // Phase 2 began when phase 1's 30 s for the requests in flight
///     // ran out, after the 5 s pre-stop grace; the stream ended at once.
///     assert_eq!(start.elapsed(), Duration::from_secs(35));
/// }
/// ```
#[derive(Debug, Clone, Default)]
pub struct DrainToken {
    inner: CancellationToken,
    in_flight: Option<InFlight>,
}

macro_rules! token_methods {
    ($name:ident, $phase:literal) => {
        impl $name {
            pub(crate) fn cancel(&self) {
                self.inner.cancel();
            }

            #[doc = concat!("Whether ", $phase, " has begun.")]
            #[must_use]
            pub fn is_cancelled(&self) -> bool {
                self.inner.is_cancelled()
            }

            #[doc = concat!("Completes when ", $phase, " begins (at once if it has).")]
            ///
            /// # Cancellation safety
            ///
            /// Cancellation safe: dropping the future loses nothing.
            pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
                self.inner.cancelled()
            }

            /// The same as [`cancelled`](Self::cancelled), owning the token:
            /// a `'static` future, which a response body can keep (it is
            /// `Send` and `Sync`).
            ///
            /// # Cancellation safety
            ///
            /// Cancellation safe: dropping the future loses nothing.
            pub fn cancelled_owned(self) -> WaitForCancellationFutureOwned {
                self.inner.cancelled_owned()
            }
        }
    };
}

token_methods!(ShutdownToken, "phase 1 (no new requests)");

impl ShutdownToken {
    /// A token cancelled with this one, or on its own: one connection's
    /// phase 1 (`serve` retires a connection at its age so).
    #[cfg(feature = "server")]
    pub(crate) fn child_token(&self) -> CancellationToken {
        self.inner.child_token()
    }
}
token_methods!(DrainToken, "phase 2 (drain)");

impl DrainToken {
    /// The token of a shutdown whose in-flight count is `in_flight`.
    pub(crate) fn counting(in_flight: InFlight) -> Self {
        Self {
            inner: CancellationToken::new(),
            in_flight: Some(in_flight),
        }
    }

    /// Counts one more piece of work in the shutdown's in-flight count
    /// until the guard is dropped; `None` for a token of no shutdown.
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // used by SSE streams only
    pub(crate) fn enter(&self) -> Option<InFlightGuard> {
        self.in_flight.as_ref().map(InFlight::enter)
    }
}
