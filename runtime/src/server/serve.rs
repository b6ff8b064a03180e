//! [`serve`]: run a router until shutdown.

use std::io;

use std::future::IntoFuture;

use axum::{Extension, Router};
use tokio::net::TcpListener;

use crate::shutdown::Shutdown;

/// Serves `router` on `listener` until `shutdown` is triggered.
///
/// Every request carries the [`ShutdownToken`](crate::shutdown::ShutdownToken)
/// (as an extractor, and for the 503 gate of
/// [`TimeboxLayer`](super::TimeboxLayer)). On the trigger the listener stops
/// accepting connections, and the function returns once the connections still
/// open have finished, or when `shutdown`'s grace and drain bounds have
/// passed, whichever is first: it never waits without a bound.
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
    let router = router.layer(Extension(shutdown.token()));
    let server = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.token().cancelled_owned())
        .into_future();
    let bound = async {
        shutdown.token().cancelled().await;
        tokio::time::sleep(shutdown.grace() + shutdown.drain_force()).await;
    };
    tokio::select! {
        result = server => result,
        () = bound => Ok(()),
    }
}
