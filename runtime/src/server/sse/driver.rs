//! The task that drives a guarded SSE stream and ends it in the order of
//! `CancelReason::end_steps`.

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
use crate::watchdog::{StreamTimeout, TimeoutKind, Watched};

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

    fn timed_out(&self, timeout: &StreamTimeout) {
        self.observers.emit(|| observe::Event::StreamTimeout {
            kind: timeout.kind(),
            route: self.route.clone(),
        });
    }

    fn cancelled(&self, reason: CancelReason) {
        self.observers
            .emit(|| observe::Event::RequestCancelled { reason });
    }
}

/// How long an ending that cancelled the request waits for the response to
/// take each of its events (the error event, `[DONE]`) before the steps
/// after it run anyway: a client that stops reading cannot hold up a
/// shutdown's remote cleanup, or keep the request registered, for longer.
const HANDOVER_BOUND: Duration = Duration::from_millis(500);

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

/// Why the stream ended.
enum Ending {
    /// The stream ended by itself; its last events must have gone `by`
    /// then, as its items had to.
    Complete {
        by: Option<Instant>,
    },
    Timeout(StreamTimeout),
    Disconnect,
    Shutdown,
    /// The request's registry entry was cancelled elsewhere
    /// (`Registry::cancel`), for this reason.
    Cancelled(CancelReason),
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
async fn cancelled_elsewhere(token: Option<CancellationToken>) {
    match token {
        Some(token) => token.cancelled_owned().await,
        None => std::future::pending().await,
    }
}

/// The reason recorded for a request cancelled elsewhere. A token cancelled
/// with none recorded (through [`RequestGuard::token`] itself) ends the
/// stream as a disconnect would: nothing more is written.
fn recorded(guard: Option<&RequestGuard>) -> CancelReason {
    guard
        .and_then(RequestGuard::reason)
        .unwrap_or(CancelReason::Disconnect)
}

/// Sends one of the ending's events, unless `stop` comes first: whether
/// it was sent.
async fn send_unless(
    tx: &mpsc::Sender<Event>,
    event: Event,
    stop: impl std::future::Future<Output = ()>,
) -> bool {
    tokio::select! {
        biased;
        () = stop => false,
        sent = tx.send(event) => sent.is_ok(),
    }
}

/// Sends one event of an ending that cancelled the request: the steps after
/// it must not wait for a client that stopped reading for longer than
/// [`HANDOVER_BOUND`].
async fn send_bounded(tx: &mpsc::Sender<Event>, event: Event) -> bool {
    send_unless(tx, event, tokio::time::sleep(HANDOVER_BOUND)).await
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
fn heartbeat_event() -> Event {
    Event::default().comment("heartbeat")
}

/// The heartbeats still due while an ending waits on its remote cleanup:
/// the next at `next`, then one every `interval`.
#[derive(Debug, Clone, Copy)]
struct Beats {
    interval: Duration,
    next: Instant,
}

/// `work`, with a heartbeat comment queued on `tx` each time `beats` says
/// one is due while it runs: a client (and a proxy before it) that waits
/// for the ending's events through a long remote cleanup still hears the
/// stream every heartbeat interval. A beat the full buffer has no room for
/// is skipped (the client has something to read); a closed one stops them.
async fn beating<F: std::future::Future>(
    work: F,
    tx: Option<&mpsc::Sender<Event>>,
    beats: Option<Beats>,
) -> F::Output {
    let (Some(tx), Some(Beats { interval, mut next })) = (tx, beats) else {
        return work.await;
    };
    let mut work = pin!(work);
    loop {
        tokio::select! {
            biased;
            output = &mut work => return output,
            () = tokio::time::sleep_until(next) => {
                if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(heartbeat_event()) {
                    return work.await;
                }
                match next.checked_add(interval) {
                    Some(after) => next = after,
                    None => return work.await,
                }
            }
        }
    }
}

async fn end(
    ending: Ending,
    guard: Option<RequestGuard>,
    hooks: Hooks,
    told: &Told,
    tx: Events,
    drain: Option<&DrainToken>,
    beats: Option<Beats>,
) {
    let Hooks {
        remote_cleanup: mut cleanup,
        mut evict,
        final_event,
        observer,
    } = hooks;
    let observe = |step| {
        if let Some(observer) = &observer {
            observer(step);
        }
    };
    let (reason, timeout) = match ending {
        Ending::Complete { by } => {
            // A slow client gets the last events as it got the others: within
            // the watchdog's bounds, and until a shutdown's drain; from then
            // on, as any ending, within `HANDOVER_BOUND`.
            let drained = async {
                match drain {
                    Some(drain) => drain.cancelled().await,
                    None => std::future::pending().await,
                }
                tokio::time::sleep(HANDOVER_BOUND).await;
            };
            let bounded = async {
                match by {
                    Some(by) => tokio::time::sleep_until(by).await,
                    None => std::future::pending().await,
                }
            };
            let cut = async {
                tokio::select! {
                    () = drained => {}
                    () = bounded => {}
                }
            };
            let finishing = async {
                let mut cut = pin!(cut);
                // Once cut off (or disconnected), nothing more is sent:
                // `cut` has ended and is not polled again.
                let mut open = true;
                if let Some(event) = final_event {
                    open = send_unless(&tx, event, cut.as_mut()).await;
                    observe(Step::Final);
                }
                if open {
                    send_unless(&tx, done(), cut.as_mut()).await;
                }
                observe(Step::Done);
            };
            // Cancelled elsewhere while its last events wait on a slow
            // client, the request ends for the reason recorded, in that
            // reason's order (R1, R3), as it would have before the stream
            // completed.
            let cancelled = cancelled_elsewhere(guard.as_ref().map(RequestGuard::token));
            tokio::select! {
                biased;
                () = finishing => return,
                () = cancelled => (recorded(guard.as_ref()), None),
            }
        }
        Ending::Timeout(timeout) => (CancelReason::Timeout(timeout.kind()), Some(timeout)),
        Ending::Disconnect => (CancelReason::Disconnect, None),
        Ending::Shutdown => (CancelReason::Shutdown, None),
        Ending::Cancelled(reason) => (reason, None),
    };
    // The first reason recorded wins (R1): a request cancelled elsewhere
    // while the stream was ending for a reason of its own ends for that one.
    let reason = match &guard {
        Some(guard) if !guard.cancel(reason) => guard.reason().unwrap_or(reason),
        _ => reason,
    };
    // A timeout is told only when it is why the stream ends: one that lost
    // to a cancellation from elsewhere counts as that cancellation alone.
    if let Some(timeout) = &timeout {
        if reason == CancelReason::Timeout(timeout.kind()) {
            told.timed_out(timeout);
        }
    }
    told.cancelled(reason);
    observe(Step::Cancel(reason));
    // The response's end: the body ends once its last event is taken,
    // when the sender is dropped after `[DONE]`.
    let mut tx = Some(tx);
    // The one table of R3's order, step by step.
    let steps = reason.end_steps();
    for (index, &step) in steps.iter().enumerate() {
        match step {
            EndStep::RemoteCleanup => {
                if let Some(cleanup) = cleanup.take() {
                    // Heartbeats keep a client waiting for what is still to
                    // be written; with nothing to come (a disconnect),
                    // nothing is written.
                    let to_come = steps[index + 1..]
                        .iter()
                        .any(|step| matches!(step, EndStep::ErrorEvent | EndStep::Done));
                    let beating_on = tx.as_deref().filter(|_| to_come);
                    let report = beating(cleanup(reason).run(), beating_on, beats).await;
                    if !report.is_complete() {
                        tracing::warn!(
                            timed_out = ?report.timed_out(),
                            panicked = ?report.panicked(),
                            skipped = ?report.skipped(),
                            "remote cleanup gave up on some notices"
                        );
                    }
                }
            }
            EndStep::Evict => {
                if let Some(evict) = evict.take() {
                    evict();
                }
            }
            EndStep::ErrorEvent => {
                let event = match (timeout, reason) {
                    (Some(timeout), CancelReason::Timeout(kind)) if timeout.kind() == kind => {
                        error_event(kind, &timeout)
                    }
                    (_, CancelReason::Timeout(kind)) => {
                        error_event(kind, &format_args!("stream cancelled: its {kind} passed"))
                    }
                    (_, CancelReason::Disconnect | CancelReason::Shutdown) => continue,
                };
                let queued = match &tx {
                    Some(tx) => send_bounded(tx, event).await,
                    None => false,
                };
                if !queued {
                    // R5: a stream cut short must not look like a short
                    // answer. A client that took nothing within the bound
                    // and reads again later must not find `[DONE]` after
                    // the events it had: the body ends here, without it.
                    tx = None;
                }
            }
            EndStep::Done => {
                if let Some(tx) = tx.take() {
                    let queued = send_bounded(&tx, done()).await;
                    if queued && !matches!(steps.last(), Some(EndStep::Done)) {
                        // Steps follow `[DONE]` (a shutdown's remote
                        // cleanup): let the response take it first, so the
                        // client has it before any remote notice goes
                        // out. A `[DONE]` that could not be queued
                        // is not waited for twice.
                        let _ = tokio::time::timeout(HANDOVER_BOUND, tx.reserve()).await;
                    }
                    // The body ends with `[DONE]`, not after the steps that
                    // follow it.
                    drop(tx);
                }
            }
        }
        observe(step.into());
    }
    drop(guard);
}

fn done() -> Event {
    Event::default().data("[DONE]")
}

/// The error event that names a timeout's cause (R5).
fn error_event(kind: TimeoutKind, message: &dyn fmt::Display) -> Event {
    let body = serde_json::json!({
        "error": {
            "type": "stream_timeout",
            "cause": kind.as_str(),
            "message": message.to_string(),
        }
    });
    Event::default().event("error").data(body.to_string())
}
