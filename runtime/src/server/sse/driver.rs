//! The task that drives a guarded SSE stream and ends it in the order of R3.

use std::fmt;
use std::future::poll_fn;
use std::pin::pin;
use std::time::Duration;

use axum::response::sse::Event;
use futures_core::Stream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::registry::{CancelReason, RemoteCleanup, RequestGuard, TimeoutCause};
use crate::shutdown::DrainToken;
use crate::watchdog::{StreamTimeout, TimeoutKind, Watched};

/// One step of ending a stream, in the order the [module docs](super) give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Step {
    /// The request's token was cancelled with the reason.
    Cancel(CancelReason),
    /// The remote cleanup finished (or gave up at its bounds).
    RemoteCleanup,
    /// Pooled connections were evicted.
    Evict,
    /// The error event naming the cause was written.
    ErrorEvent,
    /// The final event of a completed stream was written.
    Final,
    /// `[DONE]` was written.
    Done,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Cancel(_) => "cancel",
            Step::RemoteCleanup => "remote_cleanup",
            Step::Evict => "evict",
            Step::ErrorEvent => "error_event",
            Step::Final => "final",
            Step::Done => "done",
        })
    }
}

type Observer = Box<dyn Fn(Step) + Send + Sync>;

/// What the user asked to happen at the end.
#[derive(Default)]
pub(super) struct Hooks {
    pub(super) remote_cleanup: Option<Box<dyn FnOnce(CancelReason) -> RemoteCleanup + Send>>,
    pub(super) evict: Option<Box<dyn FnOnce() + Send>>,
    pub(super) final_event: Option<Event>,
    pub(super) observer: Option<Observer>,
}

pub(super) struct Driver<S> {
    pub(super) watched: Watched<S>,
    pub(super) heartbeat: Option<Duration>,
    pub(super) drain: Option<DrainToken>,
    pub(super) guard: Option<RequestGuard>,
    pub(super) hooks: Hooks,
    pub(super) tx: mpsc::Sender<Event>,
}

/// Why the stream ended.
enum Ending {
    Complete,
    Timeout(StreamTimeout),
    Disconnect,
    Shutdown,
}

impl<S: Stream<Item = Event> + Send + 'static> Driver<S> {
    pub(super) async fn run(self) {
        let Self {
            watched,
            heartbeat,
            drain,
            guard,
            hooks,
            tx,
        } = self;
        let mut watched = pin!(watched);
        let drained = async {
            match &drain {
                Some(drain) => drain.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let mut drained = pin!(drained);
        // A heartbeat right away, then after every `interval` of silence.
        let mut next_heartbeat = heartbeat.map(|_| Instant::now());
        let ending = loop {
            let beat = async {
                match next_heartbeat {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = &mut drained => break Ending::Shutdown,
                () = tx.closed() => break Ending::Disconnect,
                item = poll_fn(|cx| watched.as_mut().poll_next(cx)) => match item {
                    Some(Ok(event)) => {
                        // A full buffer (a slow client) must not hold off the
                        // timers or the drain.
                        tokio::select! {
                            biased;
                            () = &mut drained => break Ending::Shutdown,
                            timeout = watched.as_mut().timed_out() => break Ending::Timeout(timeout),
                            sent = tx.send(event) => if sent.is_err() { break Ending::Disconnect },
                        }
                        next_heartbeat = heartbeat.map(|interval| Instant::now() + interval);
                    }
                    Some(Err(timeout)) => break Ending::Timeout(timeout),
                    None => break Ending::Complete,
                },
                () = beat => {
                    if tx.send(Event::default().comment("heartbeat")).await.is_err() {
                        break Ending::Disconnect;
                    }
                    next_heartbeat = heartbeat.map(|interval| Instant::now() + interval);
                }
            }
        };
        end(ending, guard, hooks, &tx).await;
    }
}

async fn end(ending: Ending, guard: Option<RequestGuard>, hooks: Hooks, tx: &mpsc::Sender<Event>) {
    let Hooks {
        remote_cleanup: cleanup,
        evict,
        final_event,
        observer,
    } = hooks;
    let observe = |step| {
        if let Some(observer) = &observer {
            observer(step);
        }
    };
    let evict = || {
        if let Some(evict) = evict {
            evict();
        }
    };
    let reason = match &ending {
        Ending::Complete => {
            if let Some(event) = final_event {
                let _ = tx.send(event).await;
                observe(Step::Final);
            }
            let _ = tx.send(done()).await;
            observe(Step::Done);
            return;
        }
        Ending::Timeout(timeout) => CancelReason::Timeout(cause(timeout.kind())),
        Ending::Disconnect => CancelReason::Disconnect,
        Ending::Shutdown => CancelReason::Shutdown,
    };
    if let Some(guard) = &guard {
        guard.cancel(reason);
    }
    observe(Step::Cancel(reason));
    let remote_cleanup = || async {
        if let Some(cleanup) = cleanup {
            let report = cleanup(reason).run().await;
            if !report.is_complete() {
                tracing::warn!(
                    timed_out = ?report.timed_out(),
                    skipped = ?report.skipped(),
                    "remote cleanup gave up on some notices"
                );
            }
        }
    };
    match ending {
        Ending::Timeout(timeout) => {
            remote_cleanup().await;
            observe(Step::RemoteCleanup);
            evict();
            observe(Step::Evict);
            let _ = tx.send(error_event(&timeout)).await;
            observe(Step::ErrorEvent);
            let _ = tx.send(done()).await;
            observe(Step::Done);
        }
        Ending::Disconnect => {
            remote_cleanup().await;
            observe(Step::RemoteCleanup);
            evict();
            observe(Step::Evict);
        }
        Ending::Shutdown => {
            let _ = tx.send(done()).await;
            observe(Step::Done);
            remote_cleanup().await;
            observe(Step::RemoteCleanup);
        }
        Ending::Complete => {}
    }
    drop(guard);
}

fn done() -> Event {
    Event::default().data("[DONE]")
}

fn error_event(timeout: &StreamTimeout) -> Event {
    let body = serde_json::json!({
        "error": {
            "type": "stream_timeout",
            "cause": timeout.kind().as_str(),
            "message": timeout.to_string(),
        }
    });
    Event::default().event("error").data(body.to_string())
}

fn cause(kind: TimeoutKind) -> TimeoutCause {
    match kind {
        TimeoutKind::FirstItem => TimeoutCause::FirstItem,
        TimeoutKind::Inactivity => TimeoutCause::Inactivity,
        TimeoutKind::Total => TimeoutCause::Total,
    }
}
