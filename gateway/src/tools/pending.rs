//! [`PendingCalls`]: the tool calls of one request still waiting for their
//! result, and the notices that cancel them.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{CancelledNotificationParam, RequestId};
use rmcp::{Peer, RoleClient};
use timebox::registry::RemoteCleanup;

use super::notice::NoticeClock;

/// The calls of one request that were sent to the tool server and have no
/// result yet. Clones share one table.
///
/// A call leaves the table only when its result arrives, never when the task
/// waiting for it is dropped: a request that ends mid-call must still be able
/// to tell the tool server to stop ([`take_cancel_notices`](Self::take_cancel_notices)).
/// Taking the notices closes the table: a call sent later is refused by
/// [`sent`](Self::sent), and its sender cancels it itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct PendingCalls {
    table: Arc<Mutex<Table>>,
}

#[derive(Debug, Default)]
struct Table {
    /// In the order sent. A request has a handful of calls at a time, so a
    /// scan beats an index.
    calls: Vec<Sent>,
    closed: bool,
}

#[derive(Debug)]
struct Sent {
    request_id: RequestId,
    call_id: String,
    /// The MCP server the call went to.
    server: String,
    peer: Peer<RoleClient>,
    /// The session's record of its notices.
    noticed: NoticeClock,
}

/// The table was closed: the request's cleanup has run.
#[derive(Debug)]
pub(crate) struct Closed;

impl PendingCalls {
    /// Records that the call `call_id` went out to `server` as MCP request
    /// `request_id`.
    ///
    /// # Errors
    ///
    /// [`Closed`] once the notices were taken: the caller must cancel the
    /// request itself.
    pub(crate) fn sent(
        &self,
        server: &str,
        call_id: &str,
        request_id: RequestId,
        peer: Peer<RoleClient>,
        noticed: NoticeClock,
    ) -> Result<(), Closed> {
        let mut table = self.lock();
        if table.closed {
            return Err(Closed);
        }
        table.calls.push(Sent {
            request_id,
            call_id: call_id.to_owned(),
            server: server.to_owned(),
            peer,
            noticed,
        });
        Ok(())
    }

    /// Records that the result of MCP request `request_id` arrived.
    pub(crate) fn answered(&self, request_id: &RequestId) {
        self.lock()
            .calls
            .retain(|sent| sent.request_id != *request_id);
    }

    /// One `notifications/cancelled` per call still waiting, giving `reason`,
    /// and closes the table. Run the cleanup to send them. Each notice is
    /// named after its call and server, so a notice the cleanup gives up on
    /// names the server that did not take it.
    pub(crate) fn take_cancel_notices(&self, reason: &str) -> RemoteCleanup {
        let calls = {
            let mut table = self.lock();
            table.closed = true;
            std::mem::take(&mut table.calls)
        };
        calls
            .into_iter()
            .fold(RemoteCleanup::new(), |cleanup, sent| {
                let reason = reason.to_owned();
                let Sent {
                    request_id,
                    call_id,
                    server,
                    peer,
                    noticed,
                } = sent;
                let name = format!("tool call {call_id} on MCP server `{server}`");
                cleanup.notice(name, async move {
                    let notice = CancelledNotificationParam::new(Some(request_id), Some(reason));
                    // Marked before it goes: a notice the cleanup gives up on
                    // may still be taken later.
                    noticed.mark();
                    if let Err(err) = peer.notify_cancelled(notice).await {
                        tracing::warn!(server, %call_id, %err, "could not tell the MCP server to cancel");
                    }
                })
            })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // The table holds no invariant a panicking holder could break.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
