//! [`Pool`]: the idle MCP sessions of one server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::notice::NOTICE_LINGER;
use super::{Session, TimeboxHttp, ToolError};
use crate::settings::Server;

/// One server's sessions between requests. A request takes one for all of
/// its calls to the server ([`Leases`](super::Leases)) and gives it back
/// when it ends normally; a request that timed out or lost its client
/// evicts it instead (DESIGN R3), so the next request starts a fresh
/// session rather than inherit one the server may still be busy on.
///
/// At most `max_sessions` are open at once, busy or idle (over stdio each
/// is a process): past them, a request waits for one to be given back or
/// to end (an ended session holds its place until it has closed, at most
/// 10 s: over stdio, until its process has exited).
#[derive(Debug)]
pub(crate) struct Pool {
    server: Server,
    /// How sessions over HTTP reach the server.
    http: TimeboxHttp,
    idle: Mutex<Vec<Session>>,
    /// A place for each session that may be open; each session holds one.
    places: Arc<Semaphore>,
    /// Told when a session is given back to `idle`.
    returned: Notify,
    /// Set by [`close`](Self::close): sessions given back are ended, once
    /// the notices just sent on them have had their time.
    closed: AtomicBool,
    /// The sessions being ended (waiting out their notices' linger, then
    /// for the SDK to end them), which [`close`](Self::close) waits for.
    ending: TaskTracker,
}

impl Pool {
    pub(crate) fn new(server: Server, http: TimeboxHttp) -> Self {
        Self {
            places: Arc::new(Semaphore::new(server.max_sessions)),
            server,
            http,
            idle: Mutex::new(Vec::new()),
            returned: Notify::new(),
            closed: AtomicBool::new(false),
            ending: TaskTracker::new(),
        }
    }

    pub(crate) fn server(&self) -> &Server {
        &self.server
    }

    pub(crate) fn name(&self) -> &str {
        &self.server.name
    }

    /// An idle session, or a new one when there is none; when
    /// `max_sessions` are open, the first one given back or a new one once
    /// one has closed, whichever comes first.
    ///
    /// # Errors
    ///
    /// When the pool is closed or a new session cannot be opened; the error
    /// names the server.
    pub(crate) async fn take(&self) -> Result<Session, ToolError> {
        let mut told = false;
        loop {
            let closed = || ToolError::server(self.name(), "is closed: the gateway is stopping");
            if self.closed.load(Ordering::Acquire) {
                return Err(closed());
            }
            // A session given back between the look at the idle list and
            // the wait below is not missed: with no waiter, `notify_one`
            // leaves a permit, and the wait ends at once.
            let returned = self.returned.notified();
            if let Some(session) = self.idle_session() {
                return Ok(session);
            }
            if self.places.available_permits() == 0 && !std::mem::replace(&mut told, true) {
                tracing::info!(
                    server = self.name(),
                    max_sessions = self.server.max_sessions,
                    "every MCP session is in use; waiting for one"
                );
            }
            let place = tokio::select! {
                place = Arc::clone(&self.places).acquire_owned() => place.map_err(|_| closed())?,
                () = returned => continue,
            };
            // A session of its own span, not the request's that opens it:
            // rmcp keeps the span current at the open for the session's
            // life, and later requests use the session too.
            let session = Session::open(&self.server, &self.http)
                .instrument(tracing::info_span!(parent: None, "mcp_session", server = self.name()))
                .await?;
            tracing::info!(server = self.name(), "opened an MCP session");
            return Ok(session.holding(place, self.ending.clone()));
        }
    }

    /// An idle session whose connection is still open, if there is one.
    fn idle_session(&self) -> Option<Session> {
        loop {
            let session = self.lock().pop()?;
            if !session.is_closed() {
                return Some(session);
            }
            tracing::warn!(
                server = self.name(),
                "an idle MCP session had closed; dropping it"
            );
        }
    }

    /// Keeps `session` for the next request, unless the pool is closed or
    /// full or the session has closed. One it does not keep is ended as an
    /// evicted one is: after the notices just sent on it have had their
    /// time.
    pub(crate) fn give_back(&self, session: Session) {
        if session.is_closed() {
            session.end();
            return;
        }
        // Read under the idle list's lock, which `close` sets it under: a
        // session given back as the pool closes is either among the idle
        // ones it closes or ended here, never left in a list nobody reads.
        let mut idle = self.lock();
        if self.closed.load(Ordering::Acquire) {
            drop(idle);
            self.end_after_linger(Arc::new(session));
            return;
        }
        if idle.len() < self.server.max_idle {
            idle.push(session);
            drop(idle);
            self.returned.notify_one();
        } else {
            drop(idle);
            tracing::debug!(
                server = self.name(),
                max_idle = self.server.max_idle,
                "no room among the idle MCP sessions; ending the one given back"
            );
            self.end_after_linger(Arc::new(session));
        }
    }

    /// Ends `session` rather than keep it, saying why. It leaves the pool
    /// at once; it closes once the server has had its time to act on the
    /// notices just sent on it ([`Session::linger`]).
    pub(crate) fn evict(&self, session: Arc<Session>, why: &str) {
        tracing::info!(server = self.name(), why, "evicted an MCP session");
        self.end_after_linger(session);
    }

    /// Closes the pool: every idle session is closed, each waited for at
    /// most `bound` (they close side by side), sessions given back later
    /// are ended, and the sessions being ended (evicted, or given back
    /// with no room among the idle ones) are waited for beside them, at
    /// most their notices' linger and `bound` too.
    pub(crate) async fn close(&self, bound: Duration) {
        let idle = {
            let mut idle = self.lock();
            self.closed.store(true, Ordering::Release);
            std::mem::take(&mut *idle)
        };
        // Requests waiting for a session stop waiting.
        self.places.close();
        self.ending.close();
        let closing = idle.into_iter().map(|session| session.close(bound));
        let ending = tokio::time::timeout(NOTICE_LINGER + bound, self.ending.wait());
        let (closed, ended) = tokio::join!(futures_util::future::join_all(closing), ending);
        let stuck = closed.iter().filter(|closed| !**closed).count();
        if stuck > 0 {
            tracing::warn!(
                server = self.name(),
                stuck,
                ?bound,
                "MCP sessions still closing; leaving them"
            );
        }
        if ended.is_err() {
            tracing::warn!(
                server = self.name(),
                ending = self.ending.len(),
                ?bound,
                "MCP sessions still ending; leaving them"
            );
        }
    }

    /// Ends `session` once the server has had its time to act on the
    /// notices just sent on it ([`Session::linger`]): at once when none
    /// was. [`close`](Self::close) waits for it.
    fn end_after_linger(&self, session: Arc<Session>) {
        let linger = session.linger();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !linger.is_zero() => {
                self.ending.spawn_on(
                    async move {
                        tokio::time::sleep(linger).await;
                        session.end();
                    },
                    &runtime,
                );
            }
            _ => session.end(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Session>> {
        // A list of sessions holds no invariant a panicking holder could break.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use timebox::config::Config;

    use tokio::time::Instant;

    use super::Pool;
    use crate::settings::Server;
    use crate::tools::notice::NOTICE_LINGER;
    use crate::tools::TimeboxHttp;

    fn pool(max_sessions: usize) -> Arc<Pool> {
        pool_of(Server::builtin_for_tests(max_sessions))
    }

    fn pool_of(server: Server) -> Arc<Pool> {
        let http = TimeboxHttp::new(&Config::default());
        Arc::new(Pool::new(server, http))
    }

    /// A second `take`, which must still be waiting after a virtual second
    /// (opening a session with the built-in server takes none).
    async fn waiting_take(pool: &Arc<Pool>) -> tokio::task::JoinHandle<()> {
        let mut waiting = tokio::spawn({
            let pool = Arc::clone(pool);
            async move {
                pool.take().await.expect("a session in the end");
            }
        });
        let waited = tokio::time::timeout(Duration::from_secs(1), &mut waiting).await;
        assert!(waited.is_err(), "no second session while one is open");
        waiting
    }

    #[tokio::test(start_paused = true)]
    async fn past_max_sessions_a_take_waits_for_one_given_back() {
        let pool = pool(1);
        let first = pool.take().await.expect("a session");
        let waiting = waiting_take(&pool).await;
        pool.give_back(first);
        waiting.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_that_ends_makes_room_for_a_new_one() {
        let pool = pool(1);
        let first = pool.take().await.expect("a session");
        let waiting = waiting_take(&pool).await;
        pool.evict(Arc::new(first), "a test");
        waiting.await.unwrap();
    }

    /// A session the pool keeps no room for, given back just after a
    /// cancellation notice went out on it, stays open (and holds its
    /// place) for the notice's linger, as an evicted one does: closing it
    /// at once would leave the cancelled call running on the server.
    #[tokio::test(start_paused = true)]
    async fn a_session_given_back_just_after_a_notice_lingers_before_it_ends() {
        let mut server = Server::builtin_for_tests(1);
        server.max_idle = 0;
        let pool = pool_of(server);
        let session = pool.take().await.expect("a session");
        session.noticed_now();
        let given_back = Instant::now();
        pool.give_back(session);
        let _next = pool.take().await.expect("a session once the first ends");
        assert_eq!(given_back.elapsed(), NOTICE_LINGER);
    }

    /// Closing the pool waits for the sessions it is ending, not only its
    /// idle ones: with no room among the idle, one given back just after a
    /// notice lingers, then ends, before the pool is closed.
    #[tokio::test(start_paused = true)]
    async fn closing_the_pool_waits_for_the_sessions_it_is_ending() {
        let mut server = Server::builtin_for_tests(1);
        server.max_idle = 0;
        let pool = pool_of(server);
        let session = pool.take().await.expect("a session");
        session.noticed_now();
        pool.give_back(session);
        let closing = Instant::now();
        pool.close(Duration::from_secs(1)).await;
        assert_eq!(closing.elapsed(), NOTICE_LINGER);
        assert!(pool.ending.is_empty(), "the session has ended");
    }

    #[tokio::test(start_paused = true)]
    async fn closing_the_pool_ends_the_wait_with_an_error_naming_the_server() {
        let pool = pool(1);
        let _first = pool.take().await.expect("a session");
        let waiting = tokio::spawn({
            let pool = Arc::clone(&pool);
            async move { pool.take().await.map(|_| ()) }
        });
        tokio::task::yield_now().await;
        pool.close(Duration::from_secs(1)).await;
        let err = waiting.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("here"), "{err}");
    }
}
