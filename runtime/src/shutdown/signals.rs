//! [`Shutdown::listen_for_signals`]: SIGTERM and SIGINT as triggers.

use std::sync::atomic::Ordering;

use super::Shutdown;

impl Shutdown {
    /// Triggers on SIGTERM and SIGINT (Ctrl-C), for as long as the tokio
    /// runtime it is called on runs: the first signal starts the sequence,
    /// a second one skips to the end.
    ///
    /// One listener serves the shutdown and all its clones: called again
    /// (by a second server sharing this `Shutdown`, say), it does nothing,
    /// so that one signal stays one trigger rather than two, which would
    /// skip the sequence. Its listener goes with its runtime: called on
    /// another runtime once that one is gone (a start-up runtime, then the
    /// serving one), it listens again.
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
        // Made outside the task, so that a task dropped unpolled (its
        // runtime shut down first) lets go of the flag too.
        let listening = Listening(self.clone());
        tokio::spawn(async move {
            let Listening(shutdown) = &listening;
            let mut signals = signals;
            while signals.next().await {
                shutdown.trigger();
            }
        });
        Ok(())
    }
}

/// The one listener of a shutdown: while it lives, `listen_for_signals`
/// starts no other.
struct Listening(Shutdown);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.shared.listening.store(false, Ordering::Release);
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::Shutdown;
    use crate::config::Config;

    /// The test installs tokio's SIGINT and SIGTERM handlers in this
    /// test binary, which tokio never takes off: from then on those
    /// signals no longer stop it (SIGKILL does).
    #[test]
    fn a_listener_whose_runtime_is_gone_lets_the_next_call_listen() {
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
        };
        let shutdown = Shutdown::new(&Config::default());
        let first = runtime();
        first
            .block_on(async { shutdown.listen_for_signals() })
            .expect("listening");
        drop(first);
        assert!(
            !shutdown.shared.listening.load(Ordering::Acquire),
            "the listener went with its runtime"
        );
        let next = runtime();
        let alive = next.block_on(async {
            shutdown.listen_for_signals().expect("listening");
            tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks()
        });
        assert_eq!(alive, 1, "a listener on the next runtime");
        assert!(shutdown.shared.listening.load(Ordering::Acquire));
    }
}
