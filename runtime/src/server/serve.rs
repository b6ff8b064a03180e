//! [`serve`]: run a router until shutdown.

use std::io;

use std::future::IntoFuture;

use axum::{Router, ServiceExt};
use tokio::net::TcpListener;

use crate::shutdown::Shutdown;

use super::ShutdownGate;

/// Serves `router` on `listener` until `shutdown` is triggered.
///
/// The whole service sits behind a [`ShutdownGate`]: every request carries
/// the [`ShutdownToken`](crate::shutdown::ShutdownToken) and
/// [`DrainToken`](crate::shutdown::DrainToken) (as extractors) and is counted
/// in `shutdown`'s [`InFlight`](crate::shutdown::InFlight) from admission to
/// the end of its response body. Once triggered, `serve` runs the sequence of
/// [`Shutdown`]: after the pre-stop grace new requests are answered `503`
/// (phase 1) while requests in flight finish within the grace; then streams
/// still running are told to end and the listener closes (phase 2), and it
/// returns when the last connection closed or the drain bound passed,
/// whichever is first. It never waits without a bound.
///
/// Signals are not listened for implicitly: call
/// [`Shutdown::listen_for_signals`] in `main`.
///
/// # Examples
///
/// ```no_run
/// use timebox::config::Config;
/// use timebox::shutdown::Shutdown;
///
/// # async fn run(router: axum::Router) -> std::io::Result<()> {
/// let config = Config::load().expect("valid configuration");
/// let shutdown = Shutdown::new(&config);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// timebox::server::serve(listener, router, shutdown).await
/// # }
/// ```
///
/// # Errors
///
/// The listener's I/O error, if accepting fails for good.
///
/// # Cancellation safety
///
/// Dropping the future stops the server at once, without a drain.
pub async fn serve(listener: TcpListener, router: Router, shutdown: Shutdown) -> io::Result<()> {
    let service = ShutdownGate::new(router, &shutdown);
    // The listener stays open through phase 1, so a request that still
    // arrives is told `503` with a `Retry-After` rather than refused; it
    // closes at phase 2, which begins as soon as nothing is in flight.
    let server = axum::serve(
        listener,
        ServiceExt::<axum::extract::Request>::into_make_service(service),
    )
    .with_graceful_shutdown(shutdown.drain_token().cancelled_owned())
    .into_future();
    tokio::select! {
        result = server => result,
        () = shutdown.wait_drained() => Ok(()),
    }
}
