//! [`Leases`]: the MCP sessions one request holds, one per server it used.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Pool, Session, ToolError, Tools};

/// The sessions a request took from the [pools](Pool), for all of its tool
/// calls: parallel calls to one server share its session and are told apart
/// by request id. Clones share them.
///
/// When the last clone goes, the sessions go back to their pools; after
/// [`evict`](Self::evict) they are ended instead. The SSE stream's
/// `on_evict` step holds a clone, so the sessions of a request that timed
/// out or lost its client stay out of the pool until its cancellation
/// notices are sent and the step evicts them.
#[derive(Debug, Clone)]
pub(crate) struct Leases {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tools: Tools,
    held: Mutex<BTreeMap<String, Held>>,
    /// Held while a session is taken from a pool: a parallel call to the
    /// same server waits for that session rather than take a second one,
    /// which a full pool would only give once this request ended.
    opening: tokio::sync::Mutex<()>,
    /// Set by `evict`: sessions taken later are ended at once.
    evicted: AtomicBool,
}

#[derive(Debug)]
struct Held {
    pool: Arc<Pool>,
    session: Arc<Session>,
}

impl Leases {
    pub(crate) fn new(tools: Tools) -> Self {
        Self {
            inner: Arc::new(Inner {
                tools,
                held: Mutex::new(BTreeMap::new()),
                opening: tokio::sync::Mutex::new(()),
                evicted: AtomicBool::new(false),
            }),
        }
    }

    /// The request's session with `server`, taken from its pool on first
    /// use.
    ///
    /// The request's sessions are taken one at a time: parallel calls to
    /// one server share the first one's, and calls to another server wait
    /// for that take (at once when the pool has an idle session).
    ///
    /// # Errors
    ///
    /// An unknown server, a session that cannot be opened, or a request
    /// whose sessions were evicted.
    pub(crate) async fn session(&self, server: &str) -> Result<Arc<Session>, ToolError> {
        if let Some(session) = self.held(server) {
            return Ok(session);
        }
        let _opening = self.inner.opening.lock().await;
        // A parallel call of the same request may have taken one meanwhile.
        if let Some(session) = self.held(server) {
            return Ok(session);
        }
        let pool = self
            .inner
            .tools
            .pool(server)
            .ok_or_else(|| ToolError::server(server, "is not configured"))?;
        let session = Arc::new(pool.take().await?);
        let mut held = self.lock();
        if self.inner.evicted.load(Ordering::Acquire) {
            drop(held);
            pool.evict(session, "the request ended while its session was opening");
            return Err(ToolError::Cancelled);
        }
        held.insert(
            server.to_owned(),
            Held {
                pool: Arc::clone(pool),
                session: Arc::clone(&session),
            },
        );
        Ok(session)
    }

    /// The session the request holds with `server`, if it has taken one.
    fn held(&self, server: &str) -> Option<Arc<Session>> {
        self.lock()
            .get(server)
            .map(|held| Arc::clone(&held.session))
    }

    /// Ends every session the request holds rather than give it back:
    /// DESIGN R3's eviction after a timeout or a disconnect.
    pub(crate) fn evict(&self, why: &str) {
        self.inner.evicted.store(true, Ordering::Release);
        let held = std::mem::take(&mut *self.lock());
        for Held { pool, session } in held.into_values() {
            pool.evict(session, why);
        }
    }

    /// Ends the request's session with `server`, which broke or carried a
    /// call that had to cancel itself.
    pub(crate) fn evict_broken(&self, server: &str, why: &str) {
        let held = self.lock().remove(server);
        if let Some(Held { pool, session }) = held {
            pool.evict(session, why);
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Held>> {
        // A map of sessions holds no invariant a panicking holder could break.
        self.inner
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let held = std::mem::take(self.held.get_mut().unwrap_or_else(PoisonError::into_inner));
        for Held { pool, session } in held.into_values() {
            give_back(&pool, session);
        }
    }
}

/// Returns `session` to `pool`, or ends it when a call still holds it (a
/// call that outlived its request: the session is not known to be idle).
fn give_back(pool: &Pool, session: Arc<Session>) {
    match Arc::try_unwrap(session) {
        Ok(session) => pool.give_back(session),
        Err(session) => pool.evict(session, "a call still held it when its request ended"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use timebox::config::Config;

    use super::Leases;
    use crate::settings::Server;
    use crate::tools::Tools;

    /// The built-in server with room for `max_sessions` sessions, started
    /// as the gateway starts it (its first session idle in the pool).
    async fn tools(max_sessions: usize) -> Tools {
        let server = Server::builtin_for_tests(max_sessions);
        Tools::start(vec![server], &Config::default())
            .await
            .expect("the built-in server starts")
    }

    /// Two parallel calls of one request to one server share one session,
    /// even when the pool has only one place left: the second waits for
    /// the first's, not for a place that only this request could free.
    #[tokio::test(start_paused = true)]
    async fn parallel_calls_to_a_full_pool_share_one_session() {
        let tools = tools(2).await;
        let other = Leases::new(tools.clone());
        let _held = other.session("here").await.expect("the idle session");
        let leases = Leases::new(tools);
        let both = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(leases.session("here"), leases.session("here"))
        })
        .await
        .expect("neither call waits for the other's request to end");
        let (first, second) = (both.0.unwrap(), both.1.unwrap());
        assert!(Arc::ptr_eq(&first, &second));
    }

    /// The first session, opened at start, holds one of the server's
    /// places: with one place, a second request waits for it.
    #[tokio::test(start_paused = true)]
    async fn the_session_opened_at_start_holds_a_place() {
        let tools = tools(1).await;
        let first = Leases::new(tools.clone());
        let _held = first.session("here").await.expect("the idle session");
        let second = Leases::new(tools);
        let waited = tokio::time::timeout(Duration::from_secs(1), second.session("here")).await;
        assert!(
            waited.is_err(),
            "a second session while the only place is taken"
        );
        drop(first);
    }
}
