//! [`Pool`]: the idle MCP sessions of one server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::{Session, TimeboxHttp, ToolError};
use crate::settings::Server;

/// One server's sessions between requests. A request takes one for all of
/// its calls to the server ([`Leases`](super::Leases)) and gives it back
/// when it ends normally; a request that timed out or lost its client
/// evicts it instead (DESIGN R3), so the next request starts a fresh
/// session rather than inherit one the server may still be busy on.
#[derive(Debug)]
pub(crate) struct Pool {
    server: Server,
    /// How sessions over HTTP reach the server.
    http: TimeboxHttp,
    idle: Mutex<Vec<Session>>,
    /// Set by [`close`](Self::close): sessions given back are ended.
    closed: AtomicBool,
}

impl Pool {
    pub(crate) fn new(server: Server, http: TimeboxHttp) -> Self {
        Self {
            server,
            http,
            idle: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn server(&self) -> &Server {
        &self.server
    }

    pub(crate) fn name(&self) -> &str {
        &self.server.name
    }

    /// An idle session, or a new one when there is none.
    ///
    /// # Errors
    ///
    /// When the pool is closed or a new session cannot be opened; the error
    /// names the server.
    pub(crate) async fn take(&self) -> Result<Session, ToolError> {
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Err(ToolError::server(
                    self.name(),
                    "is closed: the gateway is stopping",
                ));
            }
            let Some(session) = self.lock().pop() else {
                break;
            };
            if !session.is_closed() {
                return Ok(session);
            }
            tracing::warn!(
                server = self.name(),
                "an idle MCP session had closed; dropping it"
            );
        }
        let session = Session::open(&self.server, &self.http).await?;
        tracing::info!(server = self.name(), "opened an MCP session");
        Ok(session)
    }

    /// Keeps `session` for the next request, unless the pool is closed or
    /// full or the session has closed.
    pub(crate) fn give_back(&self, session: Session) {
        if self.closed.load(Ordering::Acquire) || session.is_closed() {
            session.end();
            return;
        }
        let mut idle = self.lock();
        if idle.len() < self.server.max_idle {
            idle.push(session);
        } else {
            drop(idle);
            session.end();
        }
    }

    /// Ends `session` rather than keep it, saying why. It leaves the pool
    /// at once; it closes once the server has had its time to act on the
    /// notices just sent on it ([`Session::linger`]).
    pub(crate) fn evict(&self, session: Arc<Session>, why: &str) {
        tracing::info!(server = self.name(), why, "evicted an MCP session");
        let linger = session.linger();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !linger.is_zero() => {
                runtime.spawn(async move {
                    tokio::time::sleep(linger).await;
                    session.end();
                });
            }
            _ => session.end(),
        }
    }

    /// Closes the pool: every idle session is closed, each waited for at
    /// most `bound` (they close side by side), and sessions given back
    /// later are ended.
    pub(crate) async fn close(&self, bound: Duration) {
        self.closed.store(true, Ordering::Release);
        let idle = std::mem::take(&mut *self.lock());
        let closing = idle.into_iter().map(|session| session.close(bound));
        let closed = futures_util::future::join_all(closing).await;
        let stuck = closed.iter().filter(|closed| !**closed).count();
        if stuck > 0 {
            tracing::warn!(
                server = self.name(),
                stuck,
                ?bound,
                "MCP sessions still closing; leaving them"
            );
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Session>> {
        // A list of sessions holds no invariant a panicking holder could break.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
