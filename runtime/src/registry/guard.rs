//! [`RequestGuard`]: a live request, and the cleanup that runs when it ends.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::mem;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, OnceLock, Weak};
use std::thread;

use sync_wrapper::SyncWrapper;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::table::{self, Entry, Table};
use super::{CancelReason, ToolCalls};

type Cleanup = Box<dyn FnOnce() + Send + 'static>;
type AsyncCleanup =
    Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> + Send + 'static>;

/// A request registered in a [`Registry`](super::Registry); dropping it ends
/// the request.
///
/// The drop runs on every way out — a normal end, an early return, a panic —
/// and does, in this order:
///
/// 1. removes the id from the registry, so it can be registered again;
/// 2. cancels the request's token (recording no reason), so tool calls and
///    other work tied to the request stop with it, and forgets the tool
///    calls nobody claimed;
/// 3. runs the [`on_cleanup`](Self::on_cleanup) functions at once, in the
///    order they were added;
/// 4. spawns the [`on_async_cleanup`](Self::on_async_cleanup) functions on
///    the tokio runtime of the dropping thread. With no runtime there (a
///    plain thread, a runtime already gone) they are skipped with a debug
///    log, never a panic; one that its runtime drops before it ends (a
///    guard dropped with its task as the runtime shuts down, at the end of
///    `main` or of a test) says so in a debug log too.
///
/// # Panics
///
/// A cleanup that panics does not stop the others: each one runs under
/// [`catch_unwind`](std::panic::catch_unwind), and the async cleanups are
/// spawned regardless. Afterwards the first such panic is resumed, as if it
/// had happened at the drop — unless the guard is being dropped by a panic
/// already, which then simply continues (a second panic would abort).
///
/// # Examples
///
/// ```
/// use timebox::registry::Registry;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let registry = Registry::new();
/// let (done, finished) = tokio::sync::oneshot::channel();
/// {
///     let mut guard = registry.register("req-7").unwrap();
///     guard
///         .on_cleanup(|| println!("release the local slot"))
///         .on_async_cleanup(|| async move {
///             // Tell a remote tool the request is over.
///             let _ = done.send(());
///         });
///     assert_eq!(registry.len(), 1);
/// } // the guard drops here
/// assert!(registry.is_empty());
/// finished.await.unwrap();
/// # }
/// ```
#[must_use = "the request is unregistered as soon as the guard is dropped"]
pub struct RequestGuard {
    id: String,
    entry: Arc<Entry>,
    table: Weak<Table>,
    /// In a `SyncWrapper` so that the guard is `Sync` (a handler may hold
    /// `&guard` across an `.await`): they are reached only through
    /// `&mut self`.
    cleanups: SyncWrapper<Vec<Cleanup>>,
    async_cleanups: SyncWrapper<Vec<AsyncCleanup>>,
    tool_calls: OnceLock<ToolCalls>,
}

impl RequestGuard {
    pub(super) fn new(id: String, entry: Arc<Entry>, table: Weak<Table>) -> Self {
        Self {
            id,
            entry,
            table,
            cleanups: SyncWrapper::new(Vec::new()),
            async_cleanups: SyncWrapper::new(Vec::new()),
            tool_calls: OnceLock::new(),
        }
    }

    /// The request id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The request's token: cancelled by [`Registry::cancel`], by
    /// [`RequestGuard::cancel`] and when the guard is dropped.
    ///
    /// Cancelling the token itself records no reason. A streamed response
    /// (`timebox::server::sse::SseStream`) cancelled so ends as
    /// a client that went away would: nothing more is written, and it is
    /// counted as a disconnect. To end it with its ending (an error event,
    /// `[DONE]`), cancel it with a reason, through [`Registry::cancel`] or
    /// [`RequestGuard::cancel`].
    ///
    /// [`Registry::cancel`]: super::Registry::cancel
    #[must_use]
    pub fn token(&self) -> CancellationToken {
        self.entry.token().clone()
    }

    /// Why the request was cancelled, or `None` while it was not (a drop
    /// records no reason).
    #[must_use]
    pub fn reason(&self) -> Option<CancelReason> {
        self.entry.reason()
    }

    /// Cancels the request for `reason`, like
    /// [`Registry::cancel`](super::Registry::cancel) with this guard's id:
    /// `true` if this call recorded the reason, `false` if one was recorded
    /// before (the first reason wins).
    pub fn cancel(&self, reason: CancelReason) -> bool {
        self.entry.cancel(reason)
    }

    /// Adds a function to run synchronously when the guard is dropped, after
    /// the ones added before it.
    ///
    /// For local bookkeeping that must happen at once: releasing a slot,
    /// closing a channel, decrementing a gauge.
    pub fn on_cleanup<F>(&mut self, cleanup: F) -> &mut Self
    where
        F: FnOnce() + Send + 'static,
    {
        self.cleanups.get_mut().push(Box::new(cleanup));
        self
    }

    /// Adds an async function to spawn on the runtime when the guard is
    /// dropped.
    ///
    /// `cleanup` is called inside the spawned task, so nothing of it runs in
    /// the drop itself, and in a span of its own, `timebox.cleanup` with the
    /// `request_id`, that follows from the span current here (the
    /// request's): what it logs is the request's wherever the guard drops,
    /// and a cleanup that takes long does not hold the request's span open.
    /// With no runtime at the drop it is never called. The spawned task is
    /// not awaited by anyone: bound the remote work it does (see
    /// [`RemoteCleanup`](super::RemoteCleanup)).
    pub fn on_async_cleanup<F, Fut>(&mut self, cleanup: F) -> &mut Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let span = tracing::info_span!(parent: None, "timebox.cleanup", request_id = %self.id);
        span.follows_from(tracing::Span::current());
        self.async_cleanups.get_mut().push(Box::new(move || {
            let work = span.in_scope(cleanup);
            Box::pin(work.instrument(span))
        }));
        self
    }

    /// The request's [`ToolCalls`]: their tokens are children of the
    /// request's token, and the calls nobody claimed are forgotten when the
    /// guard drops. Every call returns a clone of the same table.
    #[must_use]
    pub fn tool_calls(&self) -> ToolCalls {
        self.tool_calls
            .get_or_init(|| ToolCalls::new(self.entry.token()))
            .clone()
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.entry.finish();
        if let Some(table) = self.table.upgrade() {
            table::unregister(&table, &self.id, &self.entry);
        }
        self.entry.token().cancel();
        if let Some(tool_calls) = self.tool_calls.get() {
            tool_calls.clear();
        }
        let panicked = run_cleanups(mem::take(self.cleanups.get_mut()));
        spawn_async_cleanups(&self.id, mem::take(self.async_cleanups.get_mut()));
        if let Some(payload) = panicked {
            if !thread::panicking() {
                panic::resume_unwind(payload);
            }
        }
    }
}

/// Runs every cleanup, also after one panics; returns the first panic. The
/// panic hook has reported each panic already, so none is logged here.
fn run_cleanups(cleanups: Vec<Cleanup>) -> Option<Box<dyn Any + Send>> {
    let mut first = None;
    for cleanup in cleanups {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(cleanup)) {
            first.get_or_insert(payload);
        }
    }
    first
}

fn spawn_async_cleanups(id: &str, cleanups: Vec<AsyncCleanup>) {
    if cleanups.is_empty() {
        return;
    }
    match Handle::try_current() {
        Ok(runtime) => {
            for cleanup in cleanups {
                let unfinished = Unfinished(Some(id.to_owned()));
                drop(runtime.spawn(async move {
                    // A cleanup that panics ended too (the panic hook
                    // said so); the panic goes on to tokio.
                    let ended = caught(async move { cleanup().await }).await;
                    unfinished.ended();
                    if let Err(payload) = ended {
                        panic::resume_unwind(payload);
                    }
                }));
            }
        }
        Err(_) => tracing::debug!(
            request_id = id,
            skipped = cleanups.len(),
            "request guard dropped outside a tokio runtime; async cleanups skipped"
        ),
    }
}

/// `future`'s output, or the panic of one of its polls.
async fn caught<F: Future>(future: F) -> Result<F::Output, Box<dyn Any + Send>> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        match panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(polled) => polled.map(Ok),
            Err(payload) => std::task::Poll::Ready(Err(payload)),
        }
    })
    .await
}

/// An async cleanup under way, with its request's id until it ends: one
/// its runtime drops first (shutting down, also while another panic
/// unwinds) is said, not lost silently.
struct Unfinished(Option<String>);

impl Unfinished {
    fn ended(mut self) {
        self.0 = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(id) = &self.0 {
            tracing::debug!(
                request_id = id,
                "an async cleanup of a request guard was dropped before it ended: \
                 its runtime shut down"
            );
        }
    }
}

impl fmt::Debug for RequestGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestGuard")
            .field("id", &self.id)
            .field("reason", &self.reason())
            .finish_non_exhaustive()
    }
}
