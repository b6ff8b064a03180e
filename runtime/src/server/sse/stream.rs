//! [`SseStream`]: the builder of a guarded SSE response.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures_core::Stream;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::observe::{Label, Observers};
use crate::registry::{CancelReason, RemoteCleanup, RequestGuard};
use crate::shutdown::DrainToken;
use crate::watchdog::{Watchdog, WatchdogExt, WatchdogHandle, Watched};

use super::driver::{Driver, Events, Hooks, Step, Told};

/// Default interval of heartbeat comments.
const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(15);

/// A stream of events on its way to becoming an SSE response (see the
/// [module docs](super)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use axum::response::sse::Event;
/// use axum::response::IntoResponse;
/// use timebox::server::sse::SseStream;
/// use timebox::watchdog::Watchdog;
///
/// async fn chat() -> axum::response::Response {
///     let tokens = futures_util::stream::iter(["Hel", "lo"]).map(|t| Event::default().data(t));
///     let stream = SseStream::new(tokens, Watchdog::new().inactivity(Duration::from_secs(30)));
///     let tools = stream.watchdog_handle(); // suspend() around tool calls
///     # drop(tools);
///     stream.into_response()
/// }
/// # use futures_util::StreamExt;
/// # let _ = axum::Router::<()>::new().route("/chat", axum::routing::get(chat));
/// ```
pub struct SseStream<S> {
    watched: Watched<S>,
    heartbeat: Option<Duration>,
    drain: Option<DrainToken>,
    guard: Option<RequestGuard>,
    hooks: Hooks,
    told: Told,
}

impl<S> SseStream<S>
where
    S: Stream<Item = Event> + Send + 'static,
{
    /// `events` under `watchdog`, with heartbeats every 15 s.
    ///
    /// A stream takes `[stream]`'s settings from the parts it is given:
    /// [`Watchdog::from_config`] reads the timers, and
    /// `.heartbeat(config.stream.heartbeat())` the `heartbeat_secs`.
    pub fn new(events: S, watchdog: Watchdog) -> Self {
        Self {
            watched: events.watchdog(watchdog),
            heartbeat: Some(DEFAULT_HEARTBEAT),
            drain: None,
            guard: None,
            hooks: Hooks::default(),
            told: Told::default(),
        }
    }

    /// The watchdog's handle: [`suspend`](WatchdogHandle::suspend) it for
    /// the length of a tool call, [`touch`](WatchdogHandle::touch) it for
    /// progress that is not an event.
    #[must_use]
    pub fn watchdog_handle(&self) -> WatchdogHandle {
        self.watched.handle()
    }

    /// Heartbeat comments: one at once unless an event is ready first, then
    /// every `interval` of silence; `None` (or zero) for none. [`StreamConfig::heartbeat`](crate::config::StreamConfig::heartbeat)
    /// gives `[stream] heartbeat_secs` in this form.
    #[must_use]
    pub fn heartbeat(mut self, interval: impl Into<Option<Duration>>) -> Self {
        self.heartbeat = interval.into().filter(|d| !d.is_zero());
        self
    }

    /// Ends the stream (with `[DONE]`) when `drain` is cancelled: phase 2 of
    /// a shutdown. With the token of a [`Shutdown`](crate::shutdown::Shutdown)
    /// (the `DrainToken` extractor's), the stream counts in that shutdown's
    /// in-flight count until its last step: the response body leaves the
    /// count when the client has `[DONE]` or is gone, and the remote cleanup
    /// runs after that, so the shutdown waits for it too (bounded as
    /// [`RemoteCleanup`] is).
    #[must_use]
    pub fn drain(mut self, drain: DrainToken) -> Self {
        self.drain = Some(drain);
        self
    }

    /// The request's registry entry: it is cancelled with the reason the
    /// stream ended for, and dropped (running its cleanups) at the end.
    /// Cancelled elsewhere first ([`Registry::cancel`](crate::registry::Registry::cancel)),
    /// it ends the stream for the reason recorded (the first reason
    /// wins), in that reason's order; a timeout's error event then names
    /// the kind it was given.
    #[must_use]
    pub fn guard(mut self, guard: RequestGuard) -> Self {
        self.guard = Some(guard);
        self
    }

    /// The notices to send when the stream is cancelled (tell the tools to
    /// stop), made for the reason; bounded as [`RemoteCleanup`] is.
    #[must_use]
    pub fn remote_cleanup(
        mut self,
        cleanup: impl FnOnce(CancelReason) -> RemoteCleanup + Send + 'static,
    ) -> Self {
        self.hooks.remote_cleanup = Some(Box::new(cleanup));
        self
    }

    /// Evicts the pooled connections the request used, after a timeout or a
    /// disconnect.
    #[must_use]
    pub fn on_evict(mut self, evict: impl FnOnce() + Send + 'static) -> Self {
        self.hooks.evict = Some(Box::new(evict));
        self
    }

    /// The event sent after the last item of a stream that completed.
    #[must_use]
    pub fn final_event(mut self, event: Event) -> Self {
        self.hooks.final_event = Some(event);
        self
    }

    /// Tells `observers` (the app's, `config.observers`) the stream's
    /// events: its first item, a watchdog timeout and a cancellation, naming
    /// `route` (the route template, never a raw path).
    #[must_use]
    pub fn observed(mut self, observers: &Observers, route: &'static str) -> Self {
        self.told = Told {
            observers: observers.clone(),
            route: Some(Label::from_static(route)),
        };
        self
    }

    /// Called with every [`Step`] as it happens: for logs and metrics.
    #[must_use]
    pub fn on_step(mut self, observer: impl Fn(Step) + Send + Sync + 'static) -> Self {
        self.hooks.observer = Some(Box::new(observer));
        self
    }
}

impl<S> IntoResponse for SseStream<S>
where
    S: Stream<Item = Event> + Send + 'static,
{
    /// Spawns the task that drives the stream, in the current span, and
    /// answers with its events.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    fn into_response(self) -> Response {
        // One event of buffer: a slow client holds the driver at its next
        // send, where it still watches the timers and the drain.
        let (tx, rx) = mpsc::channel::<Event>(1);
        let broken = Arc::new(AtomicBool::new(false));
        // Counted from here to the driver's last step: the response body's
        // count ends with the body, before a disconnect's or a drain's
        // remote cleanup runs.
        let in_flight = self.drain.as_ref().and_then(DrainToken::enter);
        let driver = Driver {
            watched: self.watched,
            heartbeat: self.heartbeat,
            drain: self.drain,
            guard: self.guard,
            hooks: self.hooks,
            told: self.told,
            tx: Events::new(tx, Arc::clone(&broken)),
            in_flight,
        };
        // In the span the answer is made in (the request's, under
        // tower-http's `TraceLayer`): the inner stream, the hooks and the
        // calls they make log and trace as part of the request.
        tokio::spawn(driver.run().instrument(tracing::Span::current()));
        let events =
            futures_util::stream::unfold((rx, Some(broken)), |(mut rx, broken)| async move {
                if let Some(event) = rx.recv().await {
                    return Some((Ok(event), (rx, broken)));
                }
                // The events are over. A driver that panicked (in the inner
                // stream, or in a hook) wrote no ending: the body ends with an
                // error, so the client sees a broken response and never takes
                // it for a short answer (R5).
                broken
                    .filter(|broken| broken.load(Ordering::Acquire))
                    .map(|_| (Err(DriverPanicked), (rx, None)))
            });
        Sse::new(events).into_response()
    }
}

/// The error that ends a stream's body when its driver panicked.
#[derive(Debug)]
struct DriverPanicked;

impl fmt::Display for DriverPanicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the stream's driver panicked before the stream's ending")
    }
}

impl std::error::Error for DriverPanicked {}

impl<S> fmt::Debug for SseStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseStream")
            .field("heartbeat", &self.heartbeat)
            .field("drain", &self.drain)
            .finish_non_exhaustive()
    }
}
