//! [`Watched`]: a stream under a [`Watchdog`], and [`TimedOut`], the wait
//! for its timers alone.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::{FusedStream, Stream};
use pin_project::pin_project;
use tokio::time::Instant;

use super::timers::{Gate, Timers};
use super::{StreamTimeout, Watchdog, WatchdogHandle};

/// Stream for [`WatchdogExt::watchdog`](super::WatchdogExt::watchdog): the
/// inner stream's items, until one of the watchdog's timers fires.
///
/// Yields `Ok(item)` for every item of the inner stream (an inner
/// `Result` arrives as `Ok(Err(..))` and counts as activity like any other
/// item), then either ends with the inner stream, or yields one
/// `Err(`[`StreamTimeout`]`)` and ends.
///
/// Every poll is **gated**: the clock is read before the inner stream is
/// polled, and at or past a deadline the timeout is yielded without polling
/// the inner stream. So when an item and a timer are due at the same instant,
/// the timer wins, and a consumer that polls late gets the timeout whose
/// instant has passed even if items are waiting: expiry is a comparison with
/// the clock, not a count of what was sent.
///
/// See [`Watched::timed_out`] for a producer that forwards the stream into a
/// bounded channel and must notice a timeout while its send is blocked.
///
/// # Panics
///
/// Polled with a timeout armed (one not off, nor suspended) outside a
/// tokio runtime with its timer enabled, with tokio's message.
#[pin_project]
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct Watched<S> {
    #[pin]
    stream: S,
    timers: Timers,
}

impl<S> Watched<S> {
    pub(super) fn new(stream: S, watchdog: Watchdog) -> Self {
        Self {
            stream,
            timers: Timers::new(watchdog),
        }
    }

    /// A handle to this stream's silence timers (the first item's, then
    /// inactivity), for other tasks to
    /// [`touch`](WatchdogHandle::touch) and
    /// [`suspend`](WatchdogHandle::suspend).
    pub fn handle(&self) -> WatchdogHandle {
        WatchdogHandle::new(Arc::clone(self.timers.activity()))
    }

    /// Waits until one of the timers fires, without polling the inner
    /// stream.
    ///
    /// This is for a task that forwards the stream somewhere that can block,
    /// such as a bounded channel to a slow reader: while its `send` waits,
    /// nobody polls the stream, so race the send against `timed_out` and the
    /// timeout is still seen at its instant. The timeout is latched: the next
    /// poll of the stream yields the same `Err` and then ends. Once the
    /// stream has ended cleanly the timers are stopped and this never
    /// completes.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::pin::pin;
    /// use std::time::Duration;
    /// use futures_util::{stream, StreamExt};
    /// use timebox::watchdog::{TimeoutKind, Watchdog, WatchdogExt};
    /// use tokio::sync::mpsc;
    ///
    /// #[tokio::main]
    /// # async fn _hidden() {}
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     // The doctest runs this on a paused clock (`start_paused`), where the
    ///     // times below are exact.
    ///     let start = tokio::time::Instant::now();
    ///     let watchdog = Watchdog::new().total(Duration::from_secs(60));
    ///     let chunks = stream::repeat("chunk").then(|chunk| async move {
    ///         tokio::time::sleep(Duration::from_secs(10)).await;
    ///         chunk
    ///     });
    ///
    ///     // A reader that never reads: the channel fills after one chunk.
    ///     let (tx, _rx) = mpsc::channel(1);
    ///     let producer = tokio::spawn(async move {
    ///         let mut watched = pin!(chunks.watchdog(watchdog));
    ///         while let Some(item) = watched.next().await {
    ///             let Ok(chunk) = item else { break };
    ///             tokio::select! {
    ///                 biased;
    ///                 timeout = watched.as_mut().timed_out() => return Some(timeout),
    ///                 sent = tx.send(chunk) => if sent.is_err() { break },
    ///             }
    ///         }
    ///         None
    ///     });
    ///
    ///     let timeout = producer.await.unwrap().unwrap();
    ///     assert_eq!(timeout.kind(), TimeoutKind::Total);
    ///     assert_eq!(start.elapsed(), Duration::from_secs(60));
    /// }
    /// ```
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: dropping the returned future loses nothing, and a
    /// timeout that fired stays latched in the stream.
    pub fn timed_out(self: Pin<&mut Self>) -> TimedOut<'_> {
        TimedOut {
            timers: self.project().timers,
        }
    }

    /// Polls for a fired timer without polling the inner stream, as
    /// [`timed_out`](Self::timed_out) does; for hand-written `poll` code.
    pub fn poll_timed_out(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<StreamTimeout> {
        self.project().timers.poll_timed_out(cx)
    }

    /// When what is sent after the stream's clean end (an SSE stream's
    /// final event and `[DONE]`) must have gone: one inactivity window from
    /// now, by the first item's bound if none came, and not past the total
    /// bound; `None` without any of these timers.
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // read by SSE streams only
    pub(crate) fn after_end_deadline(&self) -> Option<Instant> {
        self.timers.after_end_deadline()
    }

    /// When the watchdog began to watch the stream: the start its
    /// first-item and total timers count from.
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // read by SSE streams only
    pub(crate) fn started(&self) -> Instant {
        self.timers.started()
    }

    /// A reference to the inner stream.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// A mutable reference to the inner stream.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// A pinned mutable reference to the inner stream.
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut S> {
        self.project().stream
    }

    /// The inner stream, without the watchdog. Handles keep working but no
    /// longer affect anything.
    pub fn into_inner(self) -> S {
        self.stream
    }
}

impl<S: Stream> Stream for Watched<S> {
    type Item = Result<S::Item, StreamTimeout>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let timers = this.timers;
        match timers.gate() {
            Gate::Ended => return Poll::Ready(None),
            Gate::Fire(timeout) => return Poll::Ready(Some(Err(timeout))),
            Gate::Open => {}
        }
        match this.stream.poll_next(cx) {
            Poll::Ready(Some(item)) => {
                timers.on_item();
                return Poll::Ready(Some(Ok(item)));
            }
            Poll::Ready(None) => {
                timers.end();
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        timers.poll_timed_out(cx).map(|timeout| {
            timers.end();
            Some(Err(timeout))
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.timers.is_ended() {
            return (0, Some(0));
        }
        // Any item may be replaced by the timeout, which comes on top.
        let (_, upper) = self.stream.size_hint();
        (0, upper.and_then(|upper| upper.checked_add(1)))
    }
}

impl<S: Stream> FusedStream for Watched<S> {
    fn is_terminated(&self) -> bool {
        self.timers.is_ended()
    }
}

/// Future for [`Watched::timed_out`]: completes with the timeout once one of
/// the stream's timers fires.
#[derive(Debug)]
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct TimedOut<'a> {
    timers: &'a mut Timers,
}

impl Future for TimedOut<'_> {
    type Output = StreamTimeout;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<StreamTimeout> {
        self.timers.poll_timed_out(cx)
    }
}
