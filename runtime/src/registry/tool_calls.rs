//! [`ToolCalls`]: tool calls of one request, from where they are decided to
//! the task that runs them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

/// The tool calls of one request that were decided but not yet picked up by
/// the task that runs them.
///
/// The deciding side (say, the code reading a model's output)
/// [`register`](Self::register)s each call; the running side
/// [`claim`](Self::claim)s it and gets the same [`ToolCall`], with the same
/// token. Calls are matched by id; a call decided without an id is matched
/// first-in first-out, as a fallback:
///
/// - `claim(Some(id))` takes the oldest pending call with that id, else the
///   oldest pending call registered without an id (the runner learned an id
///   the decider did not have);
/// - `claim(None)` takes the oldest pending call registered without an id.
///   It never takes a call that has an id: that one is waiting for its own
///   runner.
///
/// Each call's token is a child of the request's token: cancelling the
/// request cancels every tool call, and cancelling one call cancels only
/// that one. Get the table of a registered request from
/// [`RequestGuard::tool_calls`](super::RequestGuard::tool_calls); it is
/// cleared when the request ends. Clones share one table.
///
/// # Examples
///
/// ```
/// use timebox::registry::{CancellationToken, ToolCalls};
///
/// let request = CancellationToken::new();
/// let calls = ToolCalls::new(&request);
/// let weather = calls.register(Some("call_1"));
/// calls.register(None);
///
/// let claimed = calls.claim(Some("call_1")).unwrap();
/// assert_eq!(claimed.id(), Some("call_1"));
/// assert!(calls.claim(None).unwrap().id().is_none());
/// assert!(calls.is_empty());
///
/// request.cancel();
/// assert!(weather.is_cancelled() && claimed.is_cancelled());
/// ```
#[derive(Debug, Clone)]
pub struct ToolCalls {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    request: CancellationToken,
    /// In registration order. A request has a handful of calls at a time,
    /// so a scan beats keeping an index by id.
    pending: Mutex<VecDeque<ToolCall>>,
}

/// One tool call: its id, if it has one, and its cancellation token.
///
/// The deciding and the running side hold clones that share the token.
#[derive(Debug, Clone)]
pub struct ToolCall {
    id: Option<String>,
    token: CancellationToken,
}

impl ToolCalls {
    /// An empty table for the request whose token is `request`.
    #[must_use]
    pub fn new(request: &CancellationToken) -> Self {
        Self {
            shared: Arc::new(Shared {
                request: request.clone(),
                pending: Mutex::new(VecDeque::new()),
            }),
        }
    }

    /// Records a decided call, with its id if it has one, and returns it; it
    /// stays pending until [`claim`](Self::claim)ed.
    ///
    /// Ids need not be unique: calls with the same id are claimed in
    /// registration order.
    pub fn register(&self, id: Option<&str>) -> ToolCall {
        let call = ToolCall {
            id: id.map(str::to_owned),
            token: self.shared.request.child_token(),
        };
        self.lock().push_back(call.clone());
        call
    }

    /// Takes the pending call for a runner that knows `id` (or no id), as
    /// described on [`ToolCalls`]; `None` if no pending call matches.
    #[must_use]
    pub fn claim(&self, id: Option<&str>) -> Option<ToolCall> {
        let mut pending = self.lock();
        let index = id
            .and_then(|id| pending.iter().position(|call| call.id() == Some(id)))
            .or_else(|| pending.iter().position(|call| call.id.is_none()))?;
        pending.remove(index)
    }

    /// The number of calls registered and not yet claimed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether every registered call has been claimed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Forgets the pending calls: the request has ended.
    pub(super) fn clear(&self) {
        self.lock().clear();
    }

    /// The lock is never held while user code runs, so a poisoned table is
    /// still consistent.
    fn lock(&self) -> MutexGuard<'_, VecDeque<ToolCall>> {
        self.shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl ToolCall {
    /// The call's id, if the deciding side gave one.
    #[must_use]
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The call's token: a child of the request's token.
    #[must_use]
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Cancels this call only.
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether this call, or its request, was cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}
