use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::sse::Event;
use axum::response::IntoResponse;
use futures_util::{Stream, StreamExt};
use timebox::config::Config;
use timebox::registry::Registry;
use timebox::server::sse::SseStream;
use timebox::shutdown::Shutdown;
use timebox::watchdog::Watchdog;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{sleep, Instant};

use crate::table::{Row, Section, STILL_OPEN_AFTER};

const SECS: fn(u64) -> Duration = Duration::from_secs;

/// A stream the scenario feeds through the sender.
pub(crate) fn fed() -> (
    mpsc::Sender<Event>,
    impl Stream<Item = Event> + Send + 'static,
) {
    let (tx, rx) = mpsc::channel(16);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|event| (event, rx))
    });
    (tx, stream)
}

/// How the stream ended, as the client saw it: its last two frames and
/// when the last arrived.
pub(crate) async fn ending<S>(stream: SseStream<S>) -> String
where
    S: Stream<Item = Event> + Send + 'static,
{
    let start = Instant::now();
    let mut body = stream.into_response().into_body().into_data_stream();
    let mut frames: Vec<String> = Vec::new();
    let read = async {
        while let Some(Ok(frame)) = body.next().await {
            frames.push(String::from_utf8_lossy(&frame).into_owned());
        }
    };
    if tokio::time::timeout(STILL_OPEN_AFTER, read).await.is_err() {
        return format!("still open at {} s", STILL_OPEN_AFTER.as_secs());
    }
    let at = start.elapsed().as_secs_f64();
    let error = frames
        .iter()
        .find(|f| f.starts_with("event: error"))
        .and_then(|f| f.split("\"cause\":\"").nth(1))
        .and_then(|rest| rest.split('"').next());
    let done = frames.last().is_some_and(|f| f == "data: [DONE]\n\n");
    match (error, done) {
        (Some(cause), true) => format!("error ({cause}) then [DONE] at {at} s"),
        (None, true) => format!("[DONE] at {at} s"),
        _ => format!("ended without [DONE] at {at} s"),
    }
}

pub(crate) async fn section() -> Section {
    let mut rows = stream_rows().await;
    rows.push(disconnect_row().await);
    Section {
        title: "Streams",
        intro: &[
            "A long stream runs under a watchdog (time to the first item, inactivity, total;",
            "inactivity below). A timeout ends it with an error event naming the cause before",
            "[DONE], so a cut-off answer never looks like a short one; a tool call suspends the",
            "inactivity timer, and a client that hangs up gets its tool call cancelled.",
        ],
        rows,
    }
}

async fn stream_rows() -> Vec<Row> {
    let mut rows = Vec::new();

    let (tx, events) = fed();
    let _ = tx.send(Event::default().data("Hello")).await;
    let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(30))).heartbeat(None);
    rows.push(Row::new(
        "one token, then silence (inactivity 30 s)",
        "error (inactivity) then [DONE] at 30 s",
        ending(stream).await,
    ));

    let (tx, events) = fed();
    let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(30))).heartbeat(None);
    let tool = stream.watchdog_handle().suspend();
    tokio::spawn(async move {
        let _ = tx.send(Event::default().data("calling a tool")).await;
        sleep(SECS(100)).await; // the tool runs silently for 100 s
        drop(tool);
        let _ = tx.send(Event::default().data("the tool's answer")).await;
    });
    rows.push(Row::new(
        "a 100 s tool call under inactivity 30 s",
        "[DONE] at 100 s",
        ending(stream).await,
    ));

    rows
}

/// A client that goes away during a silent tool run, over TCP: the server
/// notices (hyper sees the connection close; at the latest, the next
/// heartbeat's write fails), and the tool call is cancelled.
async fn disconnect_row() -> Row {
    let scenario = "client gone during a 60 s silent tool run";
    let registry = Registry::new();
    let (cancelled_tx, cancelled_rx) = oneshot::channel::<Duration>();
    let cancelled_tx = Arc::new(Mutex::new(Some(cancelled_tx)));
    let app = axum::Router::new().route(
        "/",
        axum::routing::get({
            let registry = registry.clone();
            move || tool_stream(registry.clone(), Arc::clone(&cancelled_tx))
        }),
    );
    let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
        return Row::new(
            scenario,
            "tool cancelled within a heartbeat (2 s)",
            "cannot bind",
        );
    };
    let Ok(addr) = listener.local_addr() else {
        return Row::new(
            scenario,
            "tool cancelled within a heartbeat (2 s)",
            "no local address",
        );
    };
    let shutdown = Shutdown::new(&Config::default());
    let server = tokio::spawn(timebox::server::serve(listener, app, shutdown));
    let observed = match reqwest::get(format!("http://{addr}/")).await {
        Ok(mut response) => {
            let _ = response.chunk().await; // the first heartbeat
            drop(response); // the client goes away
            match tokio::time::timeout(SECS(60), cancelled_rx).await {
                Ok(Ok(after)) if after <= SECS(2) && registry.is_empty() => {
                    "tool cancelled within a heartbeat (2 s)".to_owned()
                }
                Ok(Ok(after)) => format!("tool cancelled after {after:?}"),
                Ok(Err(_)) | Err(_) => "tool still running".to_owned(),
            }
        }
        Err(err) => err.to_string(),
    };
    server.abort();
    Row::new(
        scenario,
        "tool cancelled within a heartbeat (2 s)",
        observed,
    )
}

/// The handler: a stream whose watchdog is suspended while a silent tool
/// runs, heartbeats every 2 s, and a tool task that reports when it is
/// cancelled.
async fn tool_stream(
    registry: Registry,
    cancelled: Arc<Mutex<Option<oneshot::Sender<Duration>>>>,
) -> axum::response::Response {
    let Ok(guard) = registry.register("tour-stream") else {
        return http::StatusCode::CONFLICT.into_response();
    };
    let tool = guard.tool_calls().register(Some("slow-tool"));
    let (tx, events) = fed();
    let stream = SseStream::new(events, Watchdog::new().inactivity(SECS(30)))
        .heartbeat(SECS(2))
        .guard(guard);
    let suspension = stream.watchdog_handle().suspend();
    let start = Instant::now();
    tokio::spawn(async move {
        tokio::select! {
            () = tool.token().cancelled_owned() => {
                let sender = cancelled
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                if let Some(sender) = sender {
                    let _ = sender.send(start.elapsed());
                }
            }
            () = sleep(SECS(60)) => {}
        }
        drop((suspension, tx));
    });
    stream.into_response()
}
