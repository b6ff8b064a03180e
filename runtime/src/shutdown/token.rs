//! The two tokens of a shutdown: stop accepting, then drain.

use std::future::Future;

use tokio_util::sync::CancellationToken;

/// Cancelled when the server stops accepting new requests (phase 1).
///
/// Cheap to clone; every clone sees the same cancellation. Handlers can take
/// it as an axum extractor to wind long work down early.
#[derive(Debug, Clone, Default)]
pub struct ShutdownToken {
    inner: CancellationToken,
}

/// Cancelled when streams still running must end (phase 2).
///
/// Cheap to clone; every clone sees the same cancellation.
#[derive(Debug, Clone, Default)]
pub struct DrainToken {
    inner: CancellationToken,
}

macro_rules! token_methods {
    ($name:ident, $phase:literal) => {
        impl $name {
            pub(crate) fn new() -> Self {
                Self {
                    inner: CancellationToken::new(),
                }
            }

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
            pub fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
                self.inner.cancelled()
            }

            /// The same as [`cancelled`](Self::cancelled), owning a clone of
            /// the token, for a `'static` future.
            pub fn cancelled_owned(self) -> impl Future<Output = ()> + Send + 'static {
                self.inner.cancelled_owned()
            }
        }
    };
}

token_methods!(ShutdownToken, "phase 1 (stop accepting)");
token_methods!(DrainToken, "phase 2 (drain)");
