//! A shutdown's sequence, run on a task of its own.

use timebox::shutdown::Shutdown;
use tokio::task::JoinHandle;

/// Runs `shutdown`'s sequence ([`Shutdown::wait_drained`]) on a task of
/// its own, as `serve` does; the task ends with the sequence.
pub(crate) fn in_background(shutdown: &Shutdown) -> JoinHandle<()> {
    let shutdown = shutdown.clone();
    tokio::spawn(async move { shutdown.wait_drained().await })
}
