//! [`Registry`]: the table of live requests, by id.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use tokio_util::sync::CancellationToken;

use super::{AlreadyRegistered, CancelReason, RequestGuard};

/// The shared table. A `BTreeMap` so that [`Registry::cancel_all`] visits
/// requests in the same order on every run (simulations replay exactly).
pub(super) type Table = Mutex<BTreeMap<String, Arc<Entry>>>;

/// What the registry keeps per live request.
#[derive(Debug, Default)]
pub(super) struct Entry {
    token: CancellationToken,
    /// How the request ended, set once: the first of a cancellation and the
    /// guard's drop wins, so a cancel that loses to the drop reports `false`.
    end: OnceLock<End>,
}

/// How a request ended.
#[derive(Debug, Clone, Copy)]
enum End {
    /// Cancelled for this reason while it was live.
    Cancelled(CancelReason),
    /// Its guard was dropped first.
    Finished,
}

impl Entry {
    pub(super) fn token(&self) -> &CancellationToken {
        &self.token
    }

    pub(super) fn reason(&self) -> Option<CancelReason> {
        match self.end.get() {
            Some(End::Cancelled(reason)) => Some(*reason),
            Some(End::Finished) | None => None,
        }
    }

    /// Records `reason` and cancels the token, unless the request was
    /// cancelled before (the first reason wins) or has finished.
    pub(super) fn cancel(&self, reason: CancelReason) -> bool {
        if self.end.set(End::Cancelled(reason)).is_err() {
            return false;
        }
        self.token.cancel();
        true
    }

    /// Marks the request finished: a cancel from now on reports `false`,
    /// also one that looked the entry up before it left the table. A reason
    /// recorded before is kept.
    pub(super) fn finish(&self) {
        let _ = self.end.set(End::Finished);
    }
}

/// Locks the table. The lock is never held while user code runs, so a
/// poisoned lock still holds a consistent table: take it anyway.
pub(super) fn lock(table: &Table) -> MutexGuard<'_, BTreeMap<String, Arc<Entry>>> {
    table.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes `entry` from the table, if it is still the one under `id`.
pub(super) fn unregister(table: &Table, id: &str, entry: &Arc<Entry>) {
    let mut table = lock(table);
    if table.get(id).is_some_and(|live| Arc::ptr_eq(live, entry)) {
        table.remove(id);
    }
}

/// The requests in flight, by id, each with a [`CancellationToken`] and, once
/// cancelled, the [`CancelReason`].
///
/// [`register`](Registry::register) adds a request and returns the
/// [`RequestGuard`] that removes it again when dropped; anything that knows
/// the id ([`cancel`](Registry::cancel)) can stop the request and say why.
/// Ids are strings, unique among live requests: registering a live id is an
/// error, never a silent replace. Unknown ids are harmless everywhere.
///
/// `Registry` is `Send + Sync`; clones share one table.
///
/// # Examples
///
/// ```
/// use timebox::registry::{CancelReason, Registry};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let registry = Registry::new();
/// let guard = registry.register("req-1").unwrap();
/// let token = guard.token();
///
/// // Elsewhere: the client went away.
/// assert!(registry.cancel("req-1", CancelReason::Disconnect));
/// token.cancelled().await;
/// assert_eq!(guard.reason(), Some(CancelReason::Disconnect));
///
/// // The same id cannot be registered twice while the request is live...
/// let err = registry.register("req-1").unwrap_err();
/// assert_eq!(err.to_string(), "request id `req-1` is already registered");
///
/// // ...and is free again once its guard is dropped.
/// drop(guard);
/// assert!(registry.is_empty());
/// assert!(!registry.cancel("req-1", CancelReason::Shutdown));
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    table: Arc<Table>,
}

impl Registry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a request under `id` and returns its guard; the request is
    /// live until the guard is dropped.
    ///
    /// The request's token is new and not cancelled.
    ///
    /// # Errors
    ///
    /// [`AlreadyRegistered`] if a live request has this id. The live request
    /// is left untouched.
    pub fn register(&self, id: impl Into<String>) -> Result<RequestGuard, AlreadyRegistered> {
        let id = id.into();
        let entry = Arc::new(Entry::default());
        {
            let mut table = lock(&self.table);
            if table.contains_key(&id) {
                return Err(AlreadyRegistered::new(id));
            }
            table.insert(id.clone(), Arc::clone(&entry));
        }
        Ok(RequestGuard::new(id, entry, Arc::downgrade(&self.table)))
    }

    /// Cancels the request `id` for `reason`.
    ///
    /// Returns `true` if the request is live and this call recorded the
    /// reason; the request's token is then cancelled. Returns `false` for an
    /// unknown id, for a request whose guard was dropped (also while this
    /// call ran) and for a request that was already cancelled: the first
    /// reason wins and is never overwritten.
    pub fn cancel(&self, id: &str, reason: CancelReason) -> bool {
        let entry = lock(&self.table).get(id).cloned();
        entry.is_some_and(|entry| entry.cancel(reason))
    }

    /// Cancels every live request for `reason` (in id order) and returns how
    /// many of them this call cancelled. Requests cancelled before keep their
    /// first reason.
    pub fn cancel_all(&self, reason: CancelReason) -> usize {
        let entries: Vec<_> = lock(&self.table).values().cloned().collect();
        // Cancel outside the lock: cancelling wakes tasks, which may call
        // back into the registry.
        entries.iter().filter(|entry| entry.cancel(reason)).count()
    }

    /// The token of the live request `id`, or `None` for an unknown id.
    #[must_use]
    pub fn token(&self, id: &str) -> Option<CancellationToken> {
        lock(&self.table).get(id).map(|entry| entry.token().clone())
    }

    /// Why the live request `id` was cancelled: `None` if it was not, or if
    /// the id is unknown.
    #[must_use]
    pub fn reason(&self, id: &str) -> Option<CancelReason> {
        lock(&self.table).get(id).and_then(|entry| entry.reason())
    }

    /// The number of live requests.
    #[must_use]
    pub fn len(&self) -> usize {
        lock(&self.table).len()
    }

    /// Whether no request is live.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        lock(&self.table).is_empty()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_that_looked_up_a_request_before_it_ended_reports_false() {
        let registry = Registry::new();
        let guard = registry.register("req-1").unwrap();
        // What `Registry::cancel` holds once it has left the table's lock.
        let entry = lock(&registry.table).get("req-1").cloned().unwrap();
        drop(guard);
        assert!(!entry.cancel(CancelReason::Disconnect));
        assert_eq!(entry.reason(), None);
    }

    #[test]
    fn a_reason_recorded_while_live_outlasts_the_guard() {
        let registry = Registry::new();
        let guard = registry.register("req-1").unwrap();
        let entry = lock(&registry.table).get("req-1").cloned().unwrap();
        assert!(guard.cancel(CancelReason::Shutdown));
        drop(guard);
        assert_eq!(entry.reason(), Some(CancelReason::Shutdown));
        assert!(entry.token().is_cancelled());
    }
}
