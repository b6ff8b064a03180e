//! The task that drives a guarded SSE stream: its items, heartbeats, timers
//! and drain, until one of them ends it (the ending's steps are in
//! `ending`).

use std::fmt;
use std::future::poll_fn;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::Event;
use futures_core::Stream;
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use crate::observe::{self, Label, Observers};
use crate::registry::{CancelReason, EndStep, RemoteCleanup, RequestGuard};
use crate::shutdown::{DrainToken, InFlightGuard};
use crate::watchdog::{StreamTimeout, Watched};

use super::ending::{end, Beats, Ending};

/// One step of ending a stream: [`Cancel`](Step::Cancel), then the steps of
/// [`CancelReason::end_steps`] in that order; or, for a stream that
/// completed, [`Final`](Step::Final) and [`Done`](Step::Done).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Step {
    /// The request's token was cancelled with the reason.
    Cancel(CancelReason),
    /// The remote cleanup finished (or gave up at its bounds).
    RemoteCleanup,
    /// Pooled connections were evicted.
    Evict,
    /// The error event naming the cause was handed to the response, or
    /// could not be (the client was gone, or took nothing within the bound
    /// the ending allows): the step is over either way.
    ErrorEvent,
    /// The final event of a completed stream was handed to the response,
    /// or could not be, as for `ErrorEvent`.
    Final,
    /// `[DONE]` was handed to the response, or could not be, as for
    /// `ErrorEvent`; none is sent after an error event that could not be.
    Done,
}

impl From<EndStep> for Step {
    fn from(step: EndStep) -> Self {
        match step {
            EndStep::RemoteCleanup => Self::RemoteCleanup,
            EndStep::Evict => Self::Evict,
            EndStep::ErrorEvent => Self::ErrorEvent,
            EndStep::Done => Self::Done,
        }
    }
}

impl fmt::Display for Step {
    /// The names of [`EndStep`], plus `cancel` and `final`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Cancel(_) => "cancel",
            Step::RemoteCleanup => EndStep::RemoteCleanup.as_str(),
            Step::Evict => EndStep::Evict.as_str(),
            Step::ErrorEvent => EndStep::ErrorEvent.as_str(),
            Step::Final => "final",
            Step::Done => EndStep::Done.as_str(),
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

/// Who hears the stream's events, and the route they name.
#[derive(Default)]
pub(super) struct Told {
    pub(super) observers: Observers,
    pub(super) route: Option<Label>,
}

impl Told {
    fn first_item(&self, after: Duration) {
        self.observers.emit(|| observe::Event::StreamFirstItem {
            route: self.route.clone(),
            after,
        });
    }

    pub(super) fn timed_out(&self, timeout: &StreamTimeout) {
        self.observers.emit(|| observe::Event::StreamTimeout {
            kind: timeout.kind(),
            route: self.route.clone(),
        });
    }

    pub(super) fn cancelled(&self, reason: CancelReason) {
        self.observers
            .emit(|| observe::Event::RequestCancelled { reason });
    }
}

pub(super) struct Driver<S> {
    pub(super) watched: Watched<S>,
    pub(super) heartbeat: Option<Duration>,
    pub(super) drain: Option<DrainToken>,
    pub(super) guard: Option<RequestGuard>,
    pub(super) hooks: Hooks,
    pub(super) told: Told,
    pub(super) tx: Events,
    /// The stream's place in its shutdown's in-flight count, held until
    /// the last step has run.
    pub(super) in_flight: Option<InFlightGuard>,
}

impl<S: Stream<Item = Event> + Send + 'static> Driver<S> {
    pub(super) async fn run(self) {
        let Self {
            watched,
            heartbeat,
            drain,
            guard,
            hooks,
            told,
            tx,
            in_flight: _counted,
        } = self;
        let started = watched.started();
        let mut first = true;
        let drained = async {
            match &drain {
                Some(drain) => drain.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let mut drained = pin!(drained);
        // A heartbeat right away, then after every `interval` of silence,
        // on one timer moved after each event (none without a heartbeat).
        let mut beat = pin!(heartbeat.map(|_| tokio::time::sleep_until(Instant::now())));
        let cancelled = cancelled_elsewhere(guard.as_ref().map(RequestGuard::token));
        let mut cancelled = pin!(cancelled);
        // The stream lives in this block only: whatever it holds (an
        // upstream response, a pooled connection) is dropped as soon as it
        // has ended, before any step of its ending runs (S4, R3).
        let ending = {
            let mut watched = pin!(watched);
            loop {
                let event = tokio::select! {
                    biased;
                    () = &mut drained => break Ending::Shutdown,
                    () = &mut cancelled => break Ending::Cancelled(recorded(guard.as_ref())),
                    () = tx.closed() => break Ending::Disconnect,
                    item = poll_fn(|cx| watched.as_mut().poll_next(cx)) => match item {
                        Some(Ok(event)) => {
                            if std::mem::take(&mut first) {
                                told.first_item(started.elapsed());
                            }
                            event
                        }
                        Some(Err(timeout)) => break Ending::Timeout(timeout),
                        None => break Ending::Complete {
                            by: watched.as_ref().get_ref().after_end_deadline(),
                        },
                    },
                    () = heartbeat_due(beat.as_mut()) => heartbeat_event(),
                };
                // A full buffer (a slow client, or one that stopped reading)
                // must not hold off the timers or the drain.
                tokio::select! {
                    biased;
                    () = &mut drained => break Ending::Shutdown,
                    () = &mut cancelled => break Ending::Cancelled(recorded(guard.as_ref())),
                    timeout = watched.as_mut().timed_out() => break Ending::Timeout(timeout),
                    sent = tx.send(event) => if sent.is_err() { break Ending::Disconnect },
                }
                // An interval too long to add is no heartbeat at all.
                match heartbeat.and_then(|interval| Instant::now().checked_add(interval)) {
                    Some(next) => {
                        if let Some(timer) = beat.as_mut().as_pin_mut() {
                            timer.reset(next);
                        }
                    }
                    None => beat.set(None),
                }
            }
        };
        let beats = heartbeat
            .zip(beat.as_ref().as_pin_ref().map(|timer| timer.deadline()))
            .map(|(interval, next)| Beats { interval, next });
        end(ending, guard, hooks, &told, tx, drain.as_ref(), beats).await;
    }
}

/// Resolves when the heartbeat's timer fires; never without a heartbeat.
async fn heartbeat_due(timer: Pin<&mut Option<Sleep>>) {
    match timer.as_pin_mut() {
        Some(timer) => timer.await,
        None => std::future::pending().await,
    }
}

/// Resolves when the request's entry (its `token`) is cancelled by someone
/// other than the stream; never without an entry.
pub(super) async fn cancelled_elsewhere(token: Option<CancellationToken>) {
    match token {
        Some(token) => token.cancelled_owned().await,
        None => std::future::pending().await,
    }
}

/// The reason recorded for a request cancelled elsewhere. A token cancelled
/// with none recorded (through [`RequestGuard::token`] itself) ends the
/// stream as a disconnect would: nothing more is written.
pub(super) fn recorded(guard: Option<&RequestGuard>) -> CancelReason {
    guard
        .and_then(RequestGuard::reason)
        .unwrap_or(CancelReason::Disconnect)
}

/// The sending end of a stream's events. Dropped while its task unwinds
/// from a panic, it marks the stream broken before the channel closes, so
/// the body, finding no more events, ends with an error rather than as a
/// whole answer.
pub(super) struct Events {
    tx: mpsc::Sender<Event>,
    broken: Arc<AtomicBool>,
}

impl Events {
    pub(super) fn new(tx: mpsc::Sender<Event>, broken: Arc<AtomicBool>) -> Self {
        Self { tx, broken }
    }
}

impl std::ops::Deref for Events {
    type Target = mpsc::Sender<Event>;

    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.broken.store(true, Ordering::Release);
        }
    }
}

/// A heartbeat: a comment the client's SSE parser skips.
pub(super) fn heartbeat_event() -> Event {
    Event::default().comment("heartbeat")
}
