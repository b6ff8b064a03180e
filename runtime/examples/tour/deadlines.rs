//! Deadlines: scopes that only shorten, poll gating, spawned tasks, the
//! header that carries a deadline to the next service, and jitter that
//! replays from a seed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use http::{HeaderMap, HeaderValue, Request};
use timebox::config::Config;
use timebox::deadline::header::{self, DEADLINE_HEADER};
use timebox::deadline::{bounded, Deadline};
use timebox::entropy::Entropy;
use timebox::server::TimeboxLayer;
use tokio::time::Instant;
use tower_service::Service;

use crate::table::{Row, Section};

pub(crate) async fn section() -> Section {
    let mut rows = scope_rows().await;
    rows.extend(header_rows());
    rows.extend(config_and_entropy_rows().await);
    Section {
        title: "Deadlines",
        intro: &[
            "A deadline is a point on tokio's clock that the code below a scope reads without",
            "being passed it. Scopes only shorten it, a spawned task does not inherit it,",
            "`bounded` stops work at it before every poll, and it travels to the next service",
            "as the milliseconds left. The 503 it ends in carries a Retry-After jittered from",
            "the app's seed, so a test replays it.",
        ],
        rows,
    }
}

async fn scope_rows() -> Vec<Row> {
    let secs = Duration::from_secs;
    let mut rows = Vec::new();

    let seen = Deadline::after(secs(1))
        .scope(Deadline::after(secs(5)).scope(async { remaining_ms() }))
        .await;
    rows.push(Row::new(
        "nested scopes: outer 1 s, inner 5 s",
        "1000 ms",
        seen,
    ));

    let seen = Deadline::after(secs(5))
        .scope(Deadline::after(secs(1)).scope(async { remaining_ms() }))
        .await;
    rows.push(Row::new(
        "nested scopes: outer 5 s, inner 1 s",
        "1000 ms",
        seen,
    ));

    // `bounded` reads the deadline when its work first runs, not when its
    // future is made.
    let made_under_five =
        Deadline::after(secs(5)).sync_scope(|| bounded(tokio::time::sleep(secs(3))));
    let result = Deadline::after(secs(1)).scope(made_under_five).await;
    rows.push(Row::new(
        "bounded(sleep 3 s) made under a 5 s deadline, run under a 1 s one",
        "deadline exceeded",
        outcome(&result),
    ));

    let start = Instant::now();
    let result = Deadline::after(secs(1))
        .scope(bounded(tokio::time::sleep(secs(10))))
        .await;
    rows.push(Row::new(
        "bounded(sleep 10 s) under a 1 s deadline",
        "deadline exceeded after 1000 ms",
        format!(
            "{} after {} ms",
            outcome(&result),
            start.elapsed().as_millis()
        ),
    ));

    let ran = Arc::new(AtomicBool::new(false));
    let deadline = Deadline::after(secs(1));
    let flag = Arc::clone(&ran);
    let result = deadline
        .scope(bounded(async move {
            tokio::time::sleep_until(deadline.instant()).await;
            flag.store(true, Ordering::SeqCst);
        }))
        .await;
    rows.push(Row::new(
        "poll gating: work that wakes exactly at the deadline",
        "deadline exceeded, work never ran",
        format!(
            "{}, work {}",
            outcome(&result),
            if ran.load(Ordering::SeqCst) {
                "ran"
            } else {
                "never ran"
            }
        ),
    ));

    let polled = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&polled);
    let result = Deadline::after(Duration::ZERO)
        .scope(bounded(async move { flag.store(true, Ordering::SeqCst) }))
        .await;
    rows.push(Row::new(
        "poll gating: an expired deadline",
        "deadline exceeded, never polled",
        format!(
            "{}, {}",
            outcome(&result),
            if polled.load(Ordering::SeqCst) {
                "polled"
            } else {
                "never polled"
            }
        ),
    ));

    let seen = Deadline::after(secs(1))
        .scope(async { tokio::spawn(async { remaining_ms() }).await })
        .await
        .unwrap_or_else(|err| err.to_string());
    rows.push(Row::new("tokio::spawn inside a scope", "no deadline", seen));

    let deadline = Deadline::after(secs(1));
    let seen = deadline
        .scope(async move { tokio::spawn(deadline.scope(async { remaining_ms() })).await })
        .await
        .unwrap_or_else(|err| err.to_string());
    rows.push(Row::new(
        "tokio::spawn of deadline.scope(task)",
        "1000 ms",
        seen,
    ));
    rows
}

fn header_rows() -> Vec<Row> {
    let mut rows: Vec<Row> = [
        ("1500", "1500 ms"),
        (" 20 ", "20 ms"),
        ("0", "0 ms"),
        ("1.5", "ignored"),
        ("-1", "ignored"),
        ("5ms", "ignored"),
        ("soon", "ignored"),
        ("18446744073709551616", "ignored"),
    ]
    .into_iter()
    .map(|(value, expected)| {
        let parsed = header::parse(&HeaderValue::from_static(value));
        Row::new(
            format!("header value {value:?}"),
            expected,
            describe_header(parsed),
        )
    })
    .collect();

    let mut headers = HeaderMap::new();
    headers.append(DEADLINE_HEADER, HeaderValue::from_static("100"));
    headers.append(DEADLINE_HEADER, HeaderValue::from_static("200"));
    rows.push(Row::new(
        "header sent twice (100, 200)",
        "ignored",
        describe_header(header::from_headers(&headers)),
    ));

    let value = header::to_value(Duration::from_micros(2_999_999));
    rows.push(Row::new(
        "header for 2.999999 s left",
        "2999",
        value.to_str().unwrap_or("not text"),
    ));
    rows
}

async fn config_and_entropy_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    let config = Config::default();
    rows.push(Row::new(
        "default config: request timeout",
        "none",
        config
            .server
            .timeouts
            .request_timeout()
            .map_or("none".to_owned(), |d| format!("{} ms", d.as_millis())),
    ));
    // A configuration is checked before it is served under: every bad
    // value at once, each naming its key.
    let mut unbounded = Config::default();
    unbounded.server.drain_force_secs = 7 * 24 * 3600;
    let refused = match unbounded.validate() {
        Ok(_) => "accepted".to_owned(),
        Err(err) => format!("refused: {}", err.keys().collect::<Vec<_>>().join(", ")),
    };
    rows.push(Row::new(
        "validate(): a week's drain_force_secs",
        "refused: server.drain_force_secs",
        refused,
    ));
    let (first, second) = (retry_afters(42).await, retry_afters(42).await);
    let other = retry_afters(43).await;
    let alike = "alike, each 503 with 1..=3 s, not all the same; seed 43 differs";
    let jittered = first.windows(2).any(|pair| pair[0] != pair[1]);
    let in_range = first.iter().all(|s| matches!(s, Some(1..=3)));
    let seen = if first == second && other != first && jittered && in_range {
        alike.to_owned()
    } else {
        format!("{first:?} and {second:?}; seed 43: {other:?}")
    };
    rows.push(Row::new(
        "two apps seeded alike: 8 Retry-Afters each",
        alike,
        seen,
    ));
    rows
}

/// The `Retry-After` seconds of eight requests that an app whose random
/// source is seeded with `seed` cuts short at its 10 ms deadline; `None`
/// for an answer that is not a 503 with a `Retry-After` in seconds.
async fn retry_afters(seed: u64) -> Vec<Option<u64>> {
    let mut config = Config::default();
    config.server.timeouts.request_timeout_ms = Some(10);
    let slow = || tokio::time::sleep(Duration::from_secs(1));
    let app = Router::new()
        .route("/slow", get(slow))
        .layer(TimeboxLayer::new(&config).entropy(Entropy::seeded(seed)));
    let mut seen = Vec::new();
    for _ in 0..8 {
        let Ok(request) = Request::get("/slow").body(Body::empty()) else {
            seen.push(None);
            continue;
        };
        let Ok(response) = app.clone().call(request).await;
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|secs| secs.parse().ok())
            .filter(|_| response.status() == 503);
        seen.push(retry_after);
    }
    seen
}

fn remaining_ms() -> String {
    Deadline::current().map_or("no deadline".to_owned(), |deadline| {
        format!("{} ms", deadline.remaining().as_millis())
    })
}

fn outcome<T, E: ToString>(result: &Result<T, E>) -> String {
    match result {
        Ok(_) => "finished".to_owned(),
        Err(err) => err.to_string(),
    }
}

fn describe_header(parsed: Option<Duration>) -> String {
    parsed.map_or("ignored".to_owned(), |d| format!("{} ms", d.as_millis()))
}
