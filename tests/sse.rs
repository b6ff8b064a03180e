//! Guarded SSE streams (DESIGN R3, R5): heartbeats, disconnects, and the
//! order of steps for every way a stream ends.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::sse::Event;
use axum::response::IntoResponse;
use axum::Router;
use futures_util::StreamExt;
use http_body_util::BodyExt;
use timebox::config::Config;
use timebox::registry::{CancelReason, Registry, RemoteCleanup};
use timebox::server::sse::SseStream;
use timebox::shutdown::Shutdown;
use timebox::watchdog::{TimeoutKind, Watchdog};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{sleep, Instant};

use support::http::{request, send};
use support::time::SECS;

/// The steps a stream took, in order, as their names.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A stream fed by the test through the returned sender.
fn fed() -> (
    mpsc::Sender<Event>,
    impl futures_util::Stream<Item = Event> + Send + 'static,
) {
    let (tx, rx) = mpsc::channel(16);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|event| (event, rx))
    });
    (tx, stream)
}

/// A guarded stream whose steps, remote notices and evictions go to `log`.
fn guarded<S>(events: S, watchdog: Watchdog, log: &Log) -> SseStream<S>
where
    S: futures_util::Stream<Item = Event> + Send + 'static,
{
    let steps = log.clone();
    let evictions = log.clone();
    SseStream::new(events, watchdog)
        .heartbeat(None)
        .on_step(move |step| steps.push(step.to_string()))
        .on_evict(move || evictions.push("evicted"))
}

/// A guarded stream that `shutdown` drains, whose remote cleanup notifies
/// one tool (logged as `tool notified`).
fn drained_with_a_tool<S>(events: S, shutdown: &Shutdown, log: &Log) -> SseStream<S>
where
    S: futures_util::Stream<Item = Event> + Send + 'static,
{
    let notices = log.clone();
    guarded(events, Watchdog::new(), log)
        .drain(shutdown.drain_token())
        .remote_cleanup(move |_| {
            RemoteCleanup::new().notice("tool", async move { notices.push("tool notified") })
        })
}

/// Every frame of `body` with the virtual time it arrived at.
async fn frames(body: Body) -> Vec<(Duration, String)> {
    let start = Instant::now();
    let mut body = body;
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.unwrap();
        if let Ok(data) = frame.into_data() {
            frames.push((start.elapsed(), String::from_utf8(data.to_vec()).unwrap()));
        }
    }
    frames
}

/// What `reader` read of a stream that must end within a minute.
async fn ended(reader: JoinHandle<Vec<(Duration, String)>>) -> Vec<(Duration, String)> {
    tokio::time::timeout(SECS(60), reader)
        .await
        .expect("the stream ended within a minute")
        .expect("the stream ended in order")
}

/// The steps of a timeout's ending (R3), with the tool's notice of the
/// remote cleanup and the eviction hook's entry.
const TIMEOUT_STEPS: [&str; 7] = [
    "cancel",
    "tool notified",
    "remote_cleanup",
    "evicted",
    "evict",
    "error_event",
    "done",
];

/// How a stream that timed out ends (R3, R5): its steps in order, then, at
/// `at`, the error event naming `cause`, and `[DONE]`.
fn assert_timeout_ending(log: &Log, frames: &[(Duration, String)], at: Duration, cause: &str) {
    assert_eq!(log.entries(), TIMEOUT_STEPS);
    let (at_error, error) = &frames[frames.len() - 2];
    assert_eq!(*at_error, at);
    assert!(error.starts_with("event: error\n"), "{error}");
    assert!(error.contains(&format!(r#""cause":"{cause}""#)), "{error}");
    assert_eq!(frames.last().unwrap().1, "data: [DONE]\n\n");
}

fn route(
    response: impl FnOnce() -> axum::response::Response + Clone + Send + Sync + 'static,
) -> Router {
    Router::new().route(
        "/",
        axum::routing::get(move || {
            let response = response.clone();
            async move { response() }
        }),
    )
}

async fn served(stream: impl IntoResponse + Send + 'static) -> Body {
    let slot = Arc::new(Mutex::new(Some(stream.into_response())));
    let app = route(move || slot.lock().unwrap().take().expect("one request"));
    send(&app, request("GET", "/")).await.into_body()
}

/// The stream's task runs in the span the answer was made in: what the
/// inner stream and the hooks log is the request's.
#[tokio::test(start_paused = true)]
async fn the_streams_task_logs_in_the_requests_span() {
    let (logs, _guard) = support::logs::Logs::capture();
    let events = futures_util::stream::iter(["a"]).map(|t| {
        tracing::info!("an event made");
        Event::default().data(t)
    });
    let stream = SseStream::new(events, Watchdog::new())
        .on_step(|step| tracing::info!(?step, "a stream step"));
    let span = tracing::info_span!("request", id = 7);
    let response = span.in_scope(|| stream.into_response());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(!body.is_empty());
    for needle in ["an event made", "a stream step"] {
        let lines = logs.lines_with(needle);
        assert!(!lines.is_empty(), "{needle}");
        for line in lines {
            assert!(line.contains("request{id=7}"), "{line}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_completed_stream_sends_its_final_event_then_done() {
    let log = Log::default();
    let events = futures_util::stream::iter(["Hel", "lo"]).map(|t| Event::default().data(t));
    let stream = guarded(events, Watchdog::new(), &log).final_event(Event::default().data("final"));
    let frames = frames(served(stream).await).await;
    let text: String = frames.iter().map(|(_, f)| f.as_str()).collect();
    assert_eq!(
        text,
        "data: Hel\n\ndata: lo\n\ndata: final\n\ndata: [DONE]\n\n"
    );
    assert_eq!(log.entries(), ["final", "done"]);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_cancels_cleans_up_evicts_then_names_the_cause_before_done() {
    let log = Log::default();
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let token = guard.token();
    let (tx, events) = fed();
    let notices = log.clone();
    let stream = guarded(events, Watchdog::new().inactivity(SECS(30)), &log)
        .guard(guard)
        .remote_cleanup(move |reason| {
            assert_eq!(reason, CancelReason::Timeout(TimeoutKind::Inactivity));
            RemoteCleanup::new().notice("tool", async move { notices.push("tool notified") })
        });
    tx.send(Event::default().data("first")).await.unwrap();
    let frames = frames(served(stream).await).await;
    assert_timeout_ending(&log, &frames, SECS(30), "inactivity");
    assert!(token.is_cancelled());
    assert_eq!(registry.len(), 0, "the guard dropped with the stream");
    drop(tx);
}

/// R5's heartbeat: a client waiting for a timeout's error event through a
/// long remote cleanup still hears the stream every heartbeat interval.
#[tokio::test(start_paused = true)]
async fn heartbeats_go_on_while_a_timeouts_remote_cleanup_runs() {
    let log = Log::default();
    let (tx, events) = fed();
    let stream = guarded(events, Watchdog::new().inactivity(SECS(5)), &log)
        .heartbeat(SECS(1))
        .remote_cleanup(|_| RemoteCleanup::new().notice("slow tool", sleep(SECS(3))));
    tx.send(Event::default().data("first")).await.unwrap();
    let frames = frames(served(stream).await).await;
    // The timeout at 5 s, the notice given up on at 7 s (its 2 s bound),
    // then the error event: no silence longer than the interval on the way.
    let (at_error, error) = &frames[frames.len() - 2];
    assert_eq!(*at_error, SECS(7), "{frames:?}");
    assert!(error.starts_with("event: error\n"), "{frames:?}");
    for pair in frames.windows(2) {
        assert!(pair[1].0 - pair[0].0 <= SECS(1), "{frames:?}");
    }
    drop(tx);
}

/// R1: a request cancelled through the registry (here, by its request
/// deadline) ends its stream for that reason, in that reason's order, with
/// the error event naming the cause (R5), not as a short answer.
#[tokio::test(start_paused = true)]
async fn a_request_cancelled_in_the_registry_ends_its_stream_for_that_reason() {
    let log = Log::default();
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let (tx, events) = fed();
    let notices = log.clone();
    let stream = guarded(events, Watchdog::new(), &log)
        .guard(guard)
        .remote_cleanup(move |reason| {
            assert_eq!(reason, CancelReason::Timeout(TimeoutKind::RequestDeadline));
            RemoteCleanup::new().notice("tool", async move { notices.push("tool notified") })
        });
    tx.send(Event::default().data("first")).await.unwrap();
    let reader = tokio::spawn(frames(served(stream).await));
    sleep(SECS(1)).await;
    assert!(registry.cancel("req-1", CancelReason::Timeout(TimeoutKind::RequestDeadline)));
    let frames = ended(reader).await;
    assert_timeout_ending(&log, &frames, SECS(1), "request_deadline");
    assert_eq!(registry.len(), 0, "the guard dropped with the stream");
    drop(tx);
}

/// What a disconnect's ending does, in R3's order, as `guarded` logs it.
const DISCONNECT_STEPS: [&str; 4] = ["cancel", "remote_cleanup", "evicted", "evict"];

/// R1, R3: a disconnect recorded in the registry (a proxy saw the client
/// go) ends the stream with a disconnect's steps: nothing is written.
#[tokio::test(start_paused = true)]
async fn a_disconnect_recorded_in_the_registry_ends_the_stream_silently() {
    let log = Log::default();
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let (tx, events) = fed();
    let stream = guarded(events, Watchdog::new().inactivity(SECS(30)), &log).guard(guard);
    let reader = tokio::spawn(frames(served(stream).await));
    assert!(registry.cancel("req-1", CancelReason::Disconnect));
    let frames = ended(reader).await;
    assert_eq!(log.entries(), DISCONNECT_STEPS);
    assert!(frames.is_empty(), "a disconnect writes nothing: {frames:?}");
    drop(tx);
}

/// R3: nor while its remote cleanup runs, heartbeats on: the heartbeats
/// that keep a timeout's client waiting for its error event are not sent
/// when nothing is to come.
#[tokio::test(start_paused = true)]
async fn a_disconnect_recorded_in_the_registry_sends_no_heartbeat_during_its_cleanup() {
    let log = Log::default();
    let registry = Registry::new();
    let (tx, events) = fed();
    let stream = guarded(events, Watchdog::new().inactivity(SECS(30)), &log)
        .heartbeat(SECS(1))
        .guard(registry.register("req-1").unwrap())
        .remote_cleanup(|_| RemoteCleanup::new().notice("slow tool", sleep(SECS(3))));
    let reader = tokio::spawn(frames(served(stream).await));
    let cancelled_at = SECS(1) + SECS(1) / 2;
    sleep(cancelled_at).await;
    assert!(registry.cancel("req-1", CancelReason::Disconnect));
    let frames = ended(reader).await;
    assert!(
        frames.iter().all(|(at, _)| *at <= cancelled_at),
        "nothing after the cancel: {frames:?}"
    );
    assert_eq!(log.entries(), DISCONNECT_STEPS);
    drop(tx);
}

/// A stream that ends before its first item, on a client that reads
/// nothing (a heartbeat fills the response's buffer), has until its first
/// item's bound to hand over `[DONE]`, as that item had: the request does
/// not stay registered for good.
#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_before_its_first_item_on_a_stalled_client_ends_by_its_bound() {
    let log = Log::default();
    let registry = Registry::new();
    let (tx, events) = fed();
    let stream = guarded(events, Watchdog::new().first_item(SECS(90)), &log)
        .heartbeat(SECS(15))
        .guard(registry.register("req-1").unwrap());
    let body = served(stream).await; // never read
    sleep(SECS(1)).await;
    drop(tx);
    sleep(SECS(89)).await;
    assert_eq!(registry.len(), 1, "still within the bound");
    sleep(SECS(1)).await;
    assert!(registry.is_empty(), "{:?}", log.entries());
    drop(body);
}

/// A stream that ends with no item while its watchdog is suspended (a
/// tool call longer than the first-item bound) still hands over its final
/// event and `[DONE]`: the suspended first-item window has not run.
#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_with_no_item_while_suspended_still_sends_its_end() {
    let log = Log::default();
    let (tx, events) = fed();
    let stream = guarded(events, Watchdog::new().first_item(SECS(5)), &log)
        .final_event(Event::default().data("final"));
    let suspension = stream.watchdog_handle().suspend();
    let reader = tokio::spawn(frames(served(stream).await));
    sleep(SECS(10)).await;
    drop(tx);
    let frames = ended(reader).await;
    let text: String = frames.iter().map(|(_, frame)| frame.as_str()).collect();
    assert_eq!(text, "data: final\n\ndata: [DONE]\n\n", "{frames:?}");
    drop(suspension);
}

/// R1, R3: a stream that completed while its client stopped reading waits
/// to hand over its last events; a cancel recorded in the registry
/// meanwhile ends it for that reason, at once, as before it completed.
#[tokio::test(start_paused = true)]
async fn a_registry_cancel_ends_a_completed_stream_waiting_on_a_stalled_client() {
    let log = Log::default();
    let registry = Registry::new();
    let (tx, events) = fed();
    let stream = guarded(events, Watchdog::new().total(SECS(900)), &log)
        .guard(registry.register("req-1").unwrap())
        .final_event(Event::default().data("final"));
    let body = served(stream).await; // never read
                                     // Fills the response's buffer, then the stream completes.
    tx.send(Event::default().data("token")).await.unwrap();
    drop(tx);
    sleep(SECS(1)).await;
    assert!(registry.cancel("req-1", CancelReason::Disconnect));
    sleep(SECS(1)).await;
    assert_eq!(registry.len(), 0, "the cancelled request left the registry");
    assert_eq!(log.entries(), DISCONNECT_STEPS);
    drop(body);
}

#[tokio::test(start_paused = true)]
async fn a_remote_cleanup_that_never_returns_delays_done_by_its_total_bound() {
    let log = Log::default();
    let (_tx, events) = fed();
    // Three tools that never answer: 2 s each, and 5 s in all.
    let stream = guarded(events, Watchdog::new().first_item(SECS(10)), &log).remote_cleanup(|_| {
        (1..=3).fold(RemoteCleanup::new(), |cleanup, n| {
            cleanup.notice(format!("stuck tool {n}"), std::future::pending::<()>())
        })
    });
    let frames = frames(served(stream).await).await;
    let (done_at, done) = frames.last().unwrap();
    assert_eq!(done, "data: [DONE]\n\n");
    assert_eq!(*done_at, SECS(10) + SECS(5));
}

#[tokio::test(start_paused = true)]
async fn a_disconnect_cancels_cleans_up_and_evicts_and_writes_nothing() {
    let log = Log::default();
    let registry = Registry::new();
    let guard = registry.register("req-2").unwrap();
    let tool = guard.tool_calls().register(Some("call-1"));
    let (tx, events) = fed();
    let notices = log.clone();
    let stream = guarded(events, Watchdog::new(), &log)
        .guard(guard)
        .remote_cleanup(move |_| {
            RemoteCleanup::new().notice("tool", async move { notices.push("tool notified") })
        });
    let body = served(stream).await;
    drop(body);
    sleep(SECS(1)).await;
    assert_eq!(
        log.entries(),
        [
            "cancel",
            "tool notified",
            "remote_cleanup",
            "evicted",
            "evict"
        ]
    );
    assert!(tool.is_cancelled());
    assert_eq!(registry.len(), 0);
    drop(tx);
}

/// Logs `stream dropped` when the stream that holds it is dropped.
struct LogsItsDrop(Log);

impl Drop for LogsItsDrop {
    fn drop(&mut self) {
        self.0.push("stream dropped");
    }
}

/// `events`, holding something that logs when the stream is dropped (as
/// an upstream response or a pooled connection would be released).
fn holding_a_resource(
    events: impl futures_util::Stream<Item = Event> + Send + 'static,
    log: &Log,
) -> impl futures_util::Stream<Item = Event> + Send + 'static {
    let held = LogsItsDrop(log.clone());
    events.map(move |event| {
        let _held = &held;
        event
    })
}

/// S4: work that ended is dropped before its ending is told, so what it
/// holds is released before the cleanup and the evictions run, not after
/// the error event and `[DONE]`.
#[tokio::test(start_paused = true)]
async fn a_stream_that_timed_out_is_dropped_before_its_ending_steps() {
    let log = Log::default();
    let (tx, events) = fed();
    let notices = log.clone();
    let stream = guarded(
        holding_a_resource(events, &log),
        Watchdog::new().inactivity(SECS(30)),
        &log,
    )
    .remote_cleanup(move |_| {
        RemoteCleanup::new().notice("tool", async move { notices.push("tool notified") })
    });
    tx.send(Event::default().data("first")).await.unwrap();
    let frames = frames(served(stream).await).await;
    assert_eq!(log.entries()[0], "stream dropped");
    assert_eq!(log.entries()[1..], TIMEOUT_STEPS);
    assert_eq!(frames.last().unwrap().1, "data: [DONE]\n\n");
    drop(tx);
}

#[tokio::test(start_paused = true)]
async fn a_stream_whose_client_left_is_dropped_before_its_ending_steps() {
    let log = Log::default();
    let (tx, events) = fed();
    let stream = guarded(holding_a_resource(events, &log), Watchdog::new(), &log);
    drop(served(stream).await);
    sleep(SECS(1)).await;
    assert_eq!(
        log.entries(),
        [
            "stream dropped",
            "cancel",
            "remote_cleanup",
            "evicted",
            "evict"
        ]
    );
    drop(tx);
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_sends_done_first_then_cleans_up_without_evicting() {
    let log = Log::default();
    let (_tx, events) = fed();
    let shutdown = Shutdown::new(&Config::default());
    let drain = shutdown.drain_token();
    let notices = log.clone();
    let stream = guarded(events, Watchdog::new(), &log)
        .drain(drain.clone())
        .remote_cleanup(move |reason| {
            assert_eq!(reason, CancelReason::Shutdown);
            RemoteCleanup::new().notice("tool", async move { notices.push("tool notified") })
        });
    let body = served(stream).await;
    let reader = tokio::spawn(frames(body));
    sleep(SECS(3)).await;
    // Phase 2 begins (here at once, skipping the grace).
    shutdown.force();
    let frames = reader.await.unwrap();
    assert_eq!(
        frames.last().unwrap(),
        &(SECS(3), "data: [DONE]\n\n".to_owned())
    );
    assert_eq!(
        log.entries(),
        ["cancel", "done", "tool notified", "remote_cleanup"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_lets_the_client_take_done_before_any_remote_notice() {
    let log = Log::default();
    let (_tx, events) = fed();
    let shutdown = Shutdown::new(&Config::default());
    let stream = drained_with_a_tool(events, &shutdown, &log);
    let mut body = served(stream).await.into_data_stream();
    let client = log.clone();
    let reader = tokio::spawn(async move {
        while let Some(Ok(frame)) = body.next().await {
            if frame.as_ref() == b"data: [DONE]\n\n" {
                client.push("client has [DONE]");
            }
        }
    });
    sleep(SECS(1)).await;
    shutdown.force();
    reader.await.unwrap();
    assert_eq!(
        log.entries(),
        [
            "cancel",
            "client has [DONE]",
            "done",
            "tool notified",
            "remote_cleanup"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_silent_stream_shows_heartbeats_at_0_15_and_30_seconds() {
    assert_eq!(
        heartbeats_every_15_s(&[], SECS(40)).await,
        [SECS(0), SECS(15), SECS(30)]
    );
}

/// The heartbeat follows the silence: an event moves the next one to a
/// whole interval after it.
#[tokio::test(start_paused = true)]
async fn an_event_moves_the_next_heartbeat_to_an_interval_after_it() {
    assert_eq!(
        heartbeats_every_15_s(&[SECS(10)], SECS(45)).await,
        [SECS(0), SECS(25), SECS(40)]
    );
}

/// When a stream with a heartbeat every 15 s, sending an event at each of
/// `events` (times from its start, in order), sent its heartbeats until
/// it ended at `end`.
async fn heartbeats_every_15_s(events: &[Duration], end: Duration) -> Vec<Duration> {
    let start = Instant::now();
    let (tx, fed_events) = fed();
    let stream = SseStream::new(fed_events, Watchdog::new()).heartbeat(SECS(15));
    let reader = tokio::spawn(frames(served(stream).await));
    for &at in events {
        tokio::time::sleep_until(start + at).await;
        tx.send(Event::default().data("news")).await.unwrap();
    }
    tokio::time::sleep_until(start + end).await;
    drop(tx);
    let frames = reader.await.unwrap();
    frames
        .iter()
        .filter(|(_, frame)| frame.starts_with(':'))
        .map(|(at, _)| *at)
        .collect()
}

/// W3: heartbeats are not activity. After one item, a stream that says
/// nothing more ends at its inactivity bound, counted from that item, with
/// heartbeats going out every 5 s meanwhile.
#[tokio::test(start_paused = true)]
async fn heartbeats_never_keep_a_silent_stream_alive() {
    let log = Log::default();
    let (tx, events) = fed();
    tx.send(Event::default().data("one")).await.unwrap();
    let stream = guarded(events, Watchdog::new().inactivity(SECS(20)), &log).heartbeat(SECS(5));
    let frames = ended(tokio::spawn(frames(served(stream).await))).await;
    let beats = frames
        .iter()
        .filter(|(_, frame)| frame.starts_with(':'))
        .count();
    assert!(beats >= 3, "heartbeats went out: {frames:?}");
    let (error_at, error) = &frames[frames.len() - 2];
    assert_eq!(*error_at, SECS(20));
    assert!(error.contains("inactivity"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_does_not_stop_the_timeout() {
    let log = Log::default();
    let events = futures_util::stream::repeat_with(|| Event::default().data("token"));
    let stream = guarded(events, Watchdog::new().total(SECS(60)), &log);
    let body = served(stream).await;
    sleep(SECS(61)).await;
    assert_eq!(
        log.entries()[0],
        "cancel",
        "the total timer fired while the client read nothing"
    );
    drop(body);
}

#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_does_not_stop_the_timeout_with_heartbeats_on() {
    let log = Log::default();
    let stream = guarded(
        futures_util::stream::pending(),
        Watchdog::new().total(SECS(5)),
        &log,
    )
    .heartbeat(SECS(1));
    let body = served(stream).await;
    sleep(SECS(10)).await;
    assert_eq!(
        log.entries().first().map(String::as_str),
        Some("cancel"),
        "the total timer fired while heartbeats waited for a client that read nothing"
    );
    drop(body);
}

#[tokio::test(start_paused = true)]
async fn a_shutdowns_response_ends_with_done_not_after_the_cleanup() {
    let log = Log::default();
    let (_tx, events) = fed();
    let shutdown = Shutdown::new(&Config::default());
    let stream = guarded(events, Watchdog::new(), &log)
        .drain(shutdown.drain_token())
        .remote_cleanup(|_| {
            RemoteCleanup::new().notice("stuck tool", std::future::pending::<()>())
        });
    let body = served(stream).await;
    let start = Instant::now();
    let reader = tokio::spawn(async move {
        let frames = frames(body).await;
        (frames, start.elapsed())
    });
    sleep(SECS(1)).await;
    shutdown.force();
    let (frames, ended_at) = reader.await.unwrap();
    assert_eq!(
        frames.last().unwrap(),
        &(SECS(1), "data: [DONE]\n\n".to_owned())
    );
    assert_eq!(ended_at, SECS(1), "the body ended with [DONE]");
    sleep(SECS(10)).await;
    assert_eq!(log.entries(), ["cancel", "done", "remote_cleanup"]);
}

/// A client that stopped reading does not hold up a shutdown's remote
/// cleanup: the `[DONE]` it cannot be given holds it up once, for the
/// hand-over bound (500 ms), and the cleanup runs while the body stays
/// unread.
#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_holds_up_a_shutdowns_cleanup_half_a_second() {
    let log = Log::default();
    let (tx, events) = fed();
    let shutdown = Shutdown::new(&Config::default());
    let start = Instant::now();
    let notices = log.clone();
    let stream = guarded(events, Watchdog::new(), &log)
        .drain(shutdown.drain_token())
        .remote_cleanup(move |_| {
            RemoteCleanup::new().notice("tool", async move {
                notices.push(format!("tool notified at {:?}", start.elapsed()));
            })
        });
    let body = served(stream).await;
    tx.send(Event::default().data("token")).await.unwrap();
    sleep(SECS(1)).await;
    shutdown.force();
    sleep(SECS(2)).await;
    assert_eq!(
        log.entries(),
        ["cancel", "done", "tool notified at 1.5s", "remote_cleanup"]
    );
    drop(body);
}

/// A client that stopped reading past a timeout's hand-over bound, and
/// reads again before `[DONE]`'s bound ends, finds the events it had and
/// then the end of the body: not `[DONE]`, which would make the cut-off
/// answer look whole without the error event that says it was cut (R5).
#[tokio::test(start_paused = true)]
async fn a_timeout_whose_error_event_was_not_taken_ends_without_done() {
    let log = Log::default();
    let events = futures_util::stream::repeat_with(|| Event::default().data("token"));
    let body = served(guarded(events, Watchdog::new().total(SECS(60)), &log)).await;
    // The error event is given up at 60.5 s; `[DONE]` would wait to 61 s.
    sleep(SECS(60) + Duration::from_millis(700)).await;
    let frames = ended(tokio::spawn(frames(body))).await;
    assert!(!frames.is_empty(), "the tokens sent before the timeout");
    assert!(
        frames.iter().all(|(_, frame)| frame == "data: token\n\n"),
        "{frames:?}"
    );
    assert_eq!(
        log.entries(),
        [
            "cancel",
            "remote_cleanup",
            "evicted",
            "evict",
            "error_event",
            "done"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_completed_stream_cut_off_by_the_drain_still_ends_in_order() {
    let log = Log::default();
    let (tx, events) = fed();
    let shutdown = Shutdown::new(&Config::default());
    let stream = guarded(events, Watchdog::new(), &log)
        .final_event(Event::default().data("final"))
        .drain(shutdown.drain_token());
    let body = served(stream).await;
    tx.send(Event::default().data("token")).await.unwrap();
    drop(tx);
    sleep(SECS(1)).await;
    shutdown.force();
    sleep(SECS(2)).await;
    assert_eq!(
        log.entries(),
        ["final", "done"],
        "the final event was cut off by the drain, and the stream still ended"
    );
    drop(body);
}

#[tokio::test(start_paused = true)]
async fn a_completed_streams_last_events_wait_no_longer_than_its_items_could() {
    let log = Log::default();
    let registry = Registry::new();
    let (tx, events) = fed();
    let stream = guarded(events, Watchdog::new().total(SECS(60)), &log)
        .guard(registry.register("req-1").unwrap())
        .final_event(Event::default().data("final"));
    let body = served(stream).await;
    tx.send(Event::default().data("token")).await.unwrap();
    drop(tx);
    sleep(SECS(59)).await;
    assert_eq!(
        log.entries(),
        Vec::<String>::new(),
        "still within the total bound"
    );
    sleep(SECS(2)).await;
    assert_eq!(
        log.entries(),
        ["final", "done"],
        "the total bound cut off the last events of a client that read nothing"
    );
    assert_eq!(registry.len(), 0, "the request is no longer registered");
    drop(body);
}

#[tokio::test(start_paused = true)]
async fn a_heartbeat_interval_too_long_to_add_sends_one_heartbeat_and_keeps_the_stream() {
    let (tx, events) = fed();
    let stream = SseStream::new(events, Watchdog::new()).heartbeat(Duration::MAX);
    let reader = tokio::spawn(frames(served(stream).await));
    sleep(SECS(60)).await;
    tx.send(Event::default().data("still here")).await.unwrap();
    drop(tx);
    let frames: Vec<String> = reader
        .await
        .expect("the stream ended in order")
        .into_iter()
        .map(|(_, frame)| frame)
        .collect();
    assert_eq!(
        frames,
        [
            ": heartbeat\n\n",
            "data: still here\n\n",
            "data: [DONE]\n\n"
        ]
    );
}

/// R3: a client that closes its connection during a silent tool run
/// cancels the tool and leaves the registry. (hyper sees the connection
/// close and drops the body, which the stream reads as the disconnect; a
/// peer that vanishes without closing is found by the next heartbeat's
/// write instead, which loopback cannot show.)
#[tokio::test]
async fn a_client_gone_during_a_silent_tool_run_cancels_the_tool_within_a_heartbeat() {
    let registry = Registry::new();
    let (tool_tx, tool_rx) = tokio::sync::oneshot::channel::<Duration>();
    let tool_tx = Arc::new(Mutex::new(Some(tool_tx)));
    let app = Router::new().route(
        "/",
        axum::routing::get({
            let registry = registry.clone();
            move || {
                let registry = registry.clone();
                let tool_tx = tool_tx.clone();
                async move {
                    let guard = registry.register("req-tcp").unwrap();
                    let tool = guard.tool_calls().register(Some("slow-tool"));
                    let (tx, events) = fed();
                    let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(30)))
                        .heartbeat(Duration::from_millis(100))
                        .guard(guard);
                    // The tool runs silently for a minute, with the watchdog
                    // suspended, until it is cancelled.
                    let suspension = stream.watchdog_handle().suspend();
                    let start = Instant::now();
                    tokio::spawn(async move {
                        tokio::select! {
                            () = tool.token().cancelled_owned() => {
                                if let Some(tx) = tool_tx.lock().unwrap().take() {
                                    let _ = tx.send(start.elapsed());
                                }
                            }
                            () = sleep(SECS(60)) => {}
                        }
                        drop(suspension);
                        drop(tx);
                    });
                    stream.into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut response = reqwest::get(format!("http://{addr}/")).await.unwrap();
    let first = response.chunk().await.unwrap().unwrap();
    assert!(first.starts_with(b":"), "a heartbeat comes first");
    drop(response);
    let cancelled_after = tokio::time::timeout(SECS(5), tool_rx)
        .await
        .expect("the tool was cancelled")
        .unwrap();
    // The heartbeats are 100 ms apart; the rest is room for a busy
    // machine.
    assert!(cancelled_after < SECS(2), "{cancelled_after:?}");
    assert_eq!(registry.len(), 0);
}

/// R5: a stream whose inner stream panics wrote no ending: its body ends
/// with an error, not as a whole answer would.
#[tokio::test(start_paused = true)]
async fn a_stream_whose_inner_stream_panics_ends_its_body_with_an_error() {
    let events = futures_util::stream::iter([Event::default().data("a token")]).chain(
        futures_util::stream::poll_fn(|_| -> std::task::Poll<Option<Event>> {
            panic!("the model's stream failed")
        }),
    );
    let stream = SseStream::new(events, Watchdog::new());
    let mut body = stream.into_response().into_body();
    let first = body.frame().await.expect("a frame").expect("the token");
    assert!(first
        .into_data()
        .is_ok_and(|data| data.starts_with(b"data: a token")));
    let end = body.frame().await.expect("not a clean end");
    assert!(end.is_err(), "the body ends with an error");
}

#[test]
fn a_step_reads_as_the_end_step_it_performs() {
    use timebox::registry::EndStep;
    use timebox::server::sse::Step;

    for step in [
        EndStep::RemoteCleanup,
        EndStep::Evict,
        EndStep::ErrorEvent,
        EndStep::Done,
    ] {
        assert_eq!(Step::from(step).to_string(), step.to_string());
    }
}

/// G1, R3: a disconnect's remote cleanup is part of the drain. The
/// response body leaves the in-flight count when the client goes (its drop
/// is how the disconnect is seen), and the cleanup runs after that; a
/// shutdown begun then still waits for the tools to hear, as it waits for
/// any request in flight.
#[tokio::test(start_paused = true)]
async fn a_shutdown_waits_for_the_remote_cleanup_of_a_stream_whose_client_left() {
    let log = Log::default();
    let (_tx, events) = fed();
    let mut config = Config::default();
    config.server.prestop_grace_secs = 0;
    let shutdown = Shutdown::new(&config);
    let notices = log.clone();
    let stream = guarded(events, Watchdog::new(), &log)
        .drain(shutdown.drain_token())
        .remote_cleanup(move |_| {
            RemoteCleanup::new().notice("tool", async move {
                sleep(SECS(1)).await;
                notices.push("tool notified");
            })
        });
    let slot = Arc::new(Mutex::new(Some(stream.into_response())));
    let app = timebox::sim::Sim::new(7)
        .app(route(move || {
            slot.lock().unwrap().take().expect("one request")
        }))
        .with_shutdown(&shutdown);
    let body = app.request(request("GET", "/")).await.into_body();
    let start = Instant::now();
    drop(body);
    shutdown.trigger();
    shutdown.wait_drained().await;
    assert_eq!(start.elapsed(), SECS(1), "the tool took 1 s to hear");
    assert_eq!(
        log.entries(),
        [
            "cancel",
            "tool notified",
            "remote_cleanup",
            "evicted",
            "evict"
        ]
    );
    assert_eq!(shutdown.in_flight().count(), 0);
}
