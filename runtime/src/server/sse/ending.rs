//! How a guarded SSE stream ends: the steps of
//! `CancelReason::end_steps` for its reason, its last events, and the
//! heartbeats that go on while its remote cleanup runs.

use std::fmt;
use std::pin::pin;
use std::time::Duration;

use axum::response::sse::Event;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::registry::{CancelReason, EndStep, RequestGuard};
use crate::shutdown::DrainToken;
use crate::watchdog::{StreamTimeout, TimeoutKind};

use super::driver::{cancelled_elsewhere, heartbeat_event, recorded, Events, Hooks, Step, Told};

/// How long an ending that cancelled the request waits for the response to
/// take each of its events (the error event, `[DONE]`) before the steps
/// after it run anyway: a client that stops reading cannot hold up a
/// shutdown's remote cleanup, or keep the request registered, for longer.
const HANDOVER_BOUND: Duration = Duration::from_millis(500);

/// Why the stream ended.
pub(super) enum Ending {
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

/// The heartbeats still due while an ending waits on its remote cleanup:
/// the next at `next`, then one every `interval`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Beats {
    pub(super) interval: Duration,
    pub(super) next: Instant,
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

pub(super) async fn end(
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
