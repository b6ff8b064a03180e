//! [`Acceptor`]: accepting connections, with back-off when the process runs
//! out of sockets.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The first wait after an accept error that is not the peer's.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// The longest wait between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// At most one accept-error warning in this long.
const WARN_EVERY: Duration = Duration::from_secs(5);

/// The listener and what it needs to wait out an error.
#[derive(Debug)]
pub(super) struct Acceptor {
    listener: TcpListener,
    closed: Arc<Notify>,
    warnings: Warnings,
}

impl Acceptor {
    /// Accepts from `listener`; `closed` is notified when a connection closes.
    pub(super) fn new(listener: TcpListener, closed: Arc<Notify>) -> Self {
        Self {
            listener,
            closed,
            warnings: Warnings::default(),
        }
    }

    /// The next connection, and its peer's address.
    ///
    /// Errors of one connection (reset or aborted before it was accepted)
    /// are skipped. Any other error, such as running out of file
    /// descriptors (`EMFILE`), is logged (rate-limited) and waited out: the
    /// next try comes as soon as one of our connections closes (freeing its
    /// descriptor) or after a back-off that doubles from 10 ms to 1 s, so a
    /// full process neither spins nor stays deaf once sockets free up.
    ///
    /// # Errors
    ///
    /// `InvalidInput`: the socket is not a listening socket, which no wait
    /// can fix.
    ///
    /// # Cancellation safety
    ///
    /// Cancellation safe: no connection is lost when the future is dropped.
    pub(super) async fn accept(&mut self) -> io::Result<(TcpStream, SocketAddr)> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            match self.listener.accept().await {
                Ok(accepted) => return Ok(accepted),
                Err(err) if is_connection_error(&err) => {}
                Err(err) if err.kind() == io::ErrorKind::InvalidInput => return Err(err),
                Err(err) => {
                    self.warnings.warn(&err, backoff);
                    tokio::select! {
                        () = self.closed.notified() => {}
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }
}

fn is_connection_error(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// Rate-limits the accept-error warning: one per [`WARN_EVERY`], saying how
/// many it held back.
#[derive(Debug, Default)]
struct Warnings {
    last: Option<Instant>,
    held_back: u64,
}

impl Warnings {
    fn warn(&mut self, err: &io::Error, backoff: Duration) {
        let now = Instant::now();
        if self.last.is_some_and(|last| now < last + WARN_EVERY) {
            self.held_back += 1;
            return;
        }
        tracing::warn!(
            error = %err,
            retry_in_ms = backoff.as_millis(),
            similar_errors_held_back = self.held_back,
            "cannot accept connections; retrying when a connection closes \
             (out of file descriptors? see `ulimit -n`)"
        );
        self.last = Some(now);
        self.held_back = 0;
    }
}
