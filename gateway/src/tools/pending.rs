//! [`PendingCalls`]: the tool calls of one request still waiting for their
//! result, and the notices that cancel them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CancelledNotificationParam, RequestId};
use rmcp::{Peer, RoleClient};
use timebox::registry::RemoteCleanup;

/// The calls of one request that were sent to the tool server and have no
/// result yet, by tool-call id. Clones share one table.
///
/// A call leaves the table only when its result arrives, never when the task
/// waiting for it is dropped: a request that ends mid-call must still be able
/// to tell the tool server to stop ([`cancel_notices`](Self::cancel_notices)).
#[derive(Debug, Clone, Default)]
pub(crate) struct PendingCalls {
    calls: Arc<Mutex<BTreeMap<String, Sent>>>,
}

#[derive(Debug)]
struct Sent {
    request_id: RequestId,
    peer: Peer<RoleClient>,
}

impl PendingCalls {
    /// Records that the call `call_id` went out as MCP request `request_id`.
    pub(crate) fn sent(&self, call_id: &str, request_id: RequestId, peer: Peer<RoleClient>) {
        self.lock()
            .insert(call_id.to_owned(), Sent { request_id, peer });
    }

    /// Records that the call's result arrived.
    pub(crate) fn answered(&self, call_id: &str) {
        self.lock().remove(call_id);
    }

    /// One `notifications/cancelled` per call still waiting, giving `reason`;
    /// the calls leave the table. Run the cleanup to send them.
    pub(crate) fn cancel_notices(&self, reason: &str) -> RemoteCleanup {
        let calls = std::mem::take(&mut *self.lock());
        calls
            .into_iter()
            .fold(RemoteCleanup::new(), |cleanup, (call_id, sent)| {
                let reason = reason.to_owned();
                cleanup.notice(format!("tool call {call_id}"), async move {
                    let notice =
                        CancelledNotificationParam::new(Some(sent.request_id), Some(reason));
                    if let Err(err) = sent.peer.notify_cancelled(notice).await {
                        tracing::warn!(%call_id, %err, "could not tell the tool server to cancel");
                    }
                })
            })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Sent>> {
        // The table holds no invariant a panicking holder could break.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
