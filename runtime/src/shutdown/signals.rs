//! [`Shutdown::listen_for_signals`]: SIGTERM and SIGINT as triggers.

use std::sync::atomic::Ordering;

use super::Shutdown;

impl Shutdown {
    /// Triggers on SIGTERM and SIGINT (Ctrl-C), for the life of the process:
    /// the first signal starts the sequence, a second one skips to the end.
    ///
    /// One listener serves the shutdown and all its clones: called again
    /// (by a second server sharing this `Shutdown`, say), it does nothing,
    /// so that one signal stays one trigger rather than two, which would
    /// skip the sequence.
    ///
    /// # Errors
    ///
    /// When the signal handlers cannot be installed.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    #[track_caller]
    pub fn listen_for_signals(&self) -> std::io::Result<()> {
        let signals = Signals::new()?;
        if self.shared.listening.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let shutdown = self.clone();
        tokio::spawn(async move {
            let mut signals = signals;
            while signals.next().await {
                shutdown.trigger();
            }
        });
        Ok(())
    }
}

/// SIGTERM and SIGINT as one stream of notifications.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    #[cfg(not(unix))]
    fn new() -> std::io::Result<Self> {
        Ok(Self {})
    }

    #[cfg(unix)]
    async fn next(&mut self) -> bool {
        tokio::select! {
            got = self.term.recv() => got.is_some(),
            got = self.int.recv() => got.is_some(),
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) -> bool {
        tokio::signal::ctrl_c().await.is_ok()
    }
}
