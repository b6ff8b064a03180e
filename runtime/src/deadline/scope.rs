//! The task-local current deadline and the futures that set it.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project::pin_project;

use super::Deadline;

thread_local! {
    /// The deadline of the future being polled on this thread, and the
    /// tokio task that set it. Scopes set it for the length of one poll of
    /// their inner future and put the previous value back afterwards, so it
    /// behaves as a task-local: whatever task the thread polls next sees its
    /// own value. A task polled *inside* another's poll (a current-thread
    /// runtime's `block_on` or a `LocalSet` run within a scope) is another
    /// task, so the value it finds is not its own (D4). A `const` `Cell` of
    /// a `Copy` value keeps the read to a plain load (no lazy
    /// initialisation, no destructor), which matters because every poll of
    /// a scope reads it; the task's id is one more such read, of tokio's
    /// own thread-local.
    static CURRENT: Cell<Option<Current>> = const { Cell::new(None) };
}

/// A current deadline, and the task that made it current (`None` outside
/// any task: a thread of its own, or a runtime's `block_on`).
#[derive(Clone, Copy)]
struct Current {
    deadline: Deadline,
    task: Option<tokio::task::Id>,
}

pub(super) fn current() -> Option<Deadline> {
    let current = CURRENT.try_with(Cell::get).ok().flatten()?;
    (current.task == tokio::task::try_id()).then_some(current.deadline)
}

/// Runs `f` with `deadline` current, restoring the previous value afterwards
/// (also when `f` panics).
pub(super) fn with_current<R>(deadline: Option<Deadline>, f: impl FnOnce() -> R) -> R {
    let current = deadline.map(|deadline| Current {
        deadline,
        task: tokio::task::try_id(),
    });
    crate::thread_cell::with_set(&CURRENT, current, f)
}

/// Future for [`Deadline::scope`]: runs the inner future with a deadline current.
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct Scope<F> {
    deadline: Deadline,
    #[pin]
    future: F,
}

impl<F> Scope<F> {
    pub(super) fn new(deadline: Deadline, future: F) -> Self {
        Self { deadline, future }
    }

    /// The deadline this scope sets, before shortening to an enclosing one.
    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// A reference to the inner future.
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// A mutable reference to the inner future.
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The inner future, without the scope.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Scope<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // Read the enclosing deadline at every poll: a scope built outside a
        // shorter one and polled inside it must see the shorter one.
        let deadline = this.deadline.min_with_current();
        with_current(Some(deadline), || this.future.poll(cx))
    }
}

/// Runs `future` with no current deadline.
///
/// For work that must outlive the request that started it (writing an audit
/// record, finishing a cache fill) and for simulated remote hosts, which learn
/// a caller's deadline only from the header, as a real remote would.
///
/// `future` may also be a [`Stream`], or an `http_body::Body` (with the
/// `server`, `client` or `grpc` feature): the `Unscoped` is then a stream,
/// or a body, whose every poll runs with no current deadline (a simulated
/// host's response body, read by a caller under its own deadline).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::deadline::{unscoped, Deadline};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let seen = Deadline::after(Duration::from_secs(1))
///         .scope(unscoped(async { Deadline::current() }))
///         .await;
///     assert_eq!(seen, None);
/// }
/// ```
///
/// # Cancellation safety
///
/// Dropping the returned future drops `future`.
pub fn unscoped<F>(future: F) -> Unscoped<F> {
    Unscoped { future }
}

/// Future (or stream, or body) for [`unscoped`]: runs the inner future's
/// (or stream's, or body's) polls with no current deadline.
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct Unscoped<F> {
    #[pin]
    future: F,
}

impl<F> Unscoped<F> {
    /// The inner future.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Unscoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.project().future;
        with_current(None, || future.poll(cx))
    }
}

impl<S: Stream> Stream for Unscoped<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let stream = self.project().future;
        with_current(None, || stream.poll_next(cx))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.future.size_hint()
    }
}

#[cfg(any(feature = "server", feature = "client", feature = "grpc"))]
impl<B: http_body::Body> http_body::Body for Unscoped<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        let body = self.project().future;
        with_current(None, || body.poll_frame(cx))
    }

    fn is_end_stream(&self) -> bool {
        self.future.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.future.size_hint()
    }
}
