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
                evicted: AtomicBool::new(false),
            }),
        }
    }

    /// The request's session with `server`, taken from its pool on first
    /// use.
    ///
    /// # Errors
    ///
    /// An unknown server, a session that cannot be opened, or a request
    /// whose sessions were evicted.
    pub(crate) async fn session(&self, server: &str) -> Result<Arc<Session>, ToolError> {
        if let Some(held) = self.lock().get(server) {
            return Ok(Arc::clone(&held.session));
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
        // A parallel call of the same request may have opened one first.
        let kept = held.entry(server.to_owned()).or_insert_with(|| Held {
            pool: Arc::clone(pool),
            session: Arc::clone(&session),
        });
        let kept = Arc::clone(&kept.session);
        drop(held);
        if !Arc::ptr_eq(&kept, &session) {
            give_back(pool, session);
        }
        Ok(kept)
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

    /// Ends the request's session with `server`, which broke.
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
