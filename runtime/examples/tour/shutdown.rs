//! Shutdown: the two phases, bounded, and what `serve` does with them.

use std::time::Duration;

use timebox::config::Config;
use timebox::server::sse::SseStream;
use timebox::shutdown::Shutdown;
use timebox::watchdog::Watchdog;
use timebox::{get, routes};
use tokio::time::{sleep, Instant};

use crate::streams::{ending, fed};
use crate::table::{Row, Section, STILL_OPEN_AFTER};

const SECS: fn(u64) -> Duration = Duration::from_secs;

#[get("/hello")]
async fn hello() -> &'static str {
    "hello"
}

pub(crate) async fn section() -> Section {
    let mut rows = Vec::new();
    let mut config = Config::default();
    config.server.prestop_grace_secs = 0;
    config.server.shutdown_timeout_secs = 30;
    let shutdown = Shutdown::new(&config);
    let request = shutdown.in_flight().enter();
    tokio::spawn(async move {
        sleep(SECS(4)).await; // the last request in flight ends at 4 s
        drop(request);
    });
    let start = Instant::now();
    shutdown.trigger();
    rows.push(Row::new(
        "readiness right after the trigger",
        "not ready",
        if shutdown.is_ready() {
            "ready"
        } else {
            "not ready"
        },
    ));
    shutdown.wait_drained().await;
    rows.push(Row::new(
        "shutdown_timeout_secs 30, last request ends at 4 s",
        "drained at 4000 ms",
        format!("drained at {} ms", start.elapsed().as_millis()),
    ));

    let shutdown = Shutdown::new(&config);
    let (_tx, events) = fed();
    let stream = SseStream::new(events, Watchdog::new())
        .heartbeat(None)
        .drain(shutdown.drain_token());
    let stream_guard = shutdown.in_flight().enter();
    let client = tokio::spawn(async move {
        let seen = ending(stream).await;
        drop(stream_guard);
        seen
    });
    shutdown.trigger();
    shutdown.wait_drained().await;
    rows.push(Row::new(
        "a stream that outlives shutdown_timeout_secs (30)",
        "[DONE] at 30 s",
        client.await.unwrap_or_else(|err| err.to_string()),
    ));
    rows.push(Row::new(
        "serve, triggered with nothing in flight",
        "returned at 0 ms",
        serve_and_stop(&config).await,
    ));
    Section {
        title: "Shutdown",
        intro: &[
            "A shutdown flips readiness at once, waits the pre-stop grace (none here), stops",
            "admitting (503), lets requests in flight finish within shutdown_timeout_secs, tells",
            "streams to end, and never waits without a bound. The wait ends as soon as the last",
            "request does.",
        ],
        rows,
    }
}

/// Serves an app on loopback, triggers its shutdown, and says when `serve`
/// returned.
async fn serve_and_stop(config: &Config) -> String {
    let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
        return "cannot bind 127.0.0.1:0".to_owned();
    };
    let shutdown = Shutdown::new(config);
    let app = routes![hello].into_router(config);
    let server = tokio::spawn(timebox::server::serve(listener, app, shutdown.clone()));
    let start = Instant::now();
    shutdown.trigger();
    match tokio::time::timeout(STILL_OPEN_AFTER, server).await {
        Ok(Ok(Ok(()))) => format!("returned at {} ms", start.elapsed().as_millis()),
        Ok(Ok(Err(err))) => err.to_string(),
        Ok(Err(err)) => err.to_string(),
        Err(_) => format!("still serving at {} s", STILL_OPEN_AFTER.as_secs()),
    }
}
