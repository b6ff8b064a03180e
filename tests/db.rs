//! Deadline-bounded pool waits (DESIGN S11), with SQLite in memory.

mod support;

use std::time::Duration;

use axum::Router;
use sqlx::sqlite::SqlitePoolOptions;
use sqlx::{Sqlite, SqlitePool};
use timebox::config::Config;
use timebox::db::{acquire, Conn, PoolWaitError};
use timebox::deadline::{is_deadline_exceeded, Deadline};
use timebox::entropy::Entropy;
use timebox::observe::{Recording, Stage};
use timebox::server::{DeadlineCancelled, TimeboxLayer};
use timebox::{get, routes};
use tokio::sync::oneshot;
use tokio::time::Instant;

use support::http::{request, send, text};
use support::observe::exceeded_stages;
use support::time::{assert_just_after, MS};

async fn pool_of_one() -> SqlitePool {
    SqlitePoolOptions::new()
        .max_connections(1)
        // An idle connection is handed out as it is, with no ping on
        // SQLite's thread: a test on the paused clock can take one.
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(30))
        .connect("sqlite::memory:")
        .await
        .expect("an in-memory SQLite pool")
}

#[get("/answer", timeout_ms = 200)]
async fn answer(Conn(mut conn): Conn<Sqlite>) -> Result<String, PoolWaitError> {
    let (value,): (i64,) = sqlx::query_as("SELECT 41 + 1")
        .fetch_one(&mut *conn)
        .await?;
    Ok(value.to_string())
}

fn app(pool: SqlitePool) -> Router {
    routes![answer]
        .into_router(&Config::default())
        .with_state(pool)
}

#[tokio::test]
async fn a_free_connection_serves_the_request() {
    let app = app(pool_of_one().await);
    let response = send(&app, request("GET", "/answer")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(text(response).await, "42");
}

#[tokio::test]
async fn a_request_waiting_for_a_held_connection_gets_503_at_its_deadline() {
    let pool = pool_of_one().await;
    let held = pool.acquire().await.unwrap();
    let app = app(pool.clone());
    // SQLite connects on a thread of its own in real time; only the wait
    // below runs on the paused clock.
    tokio::time::pause();
    let start = Instant::now();
    let response = send(&app, request("GET", "/answer")).await;
    assert_just_after(start.elapsed(), Duration::from_millis(200), MS(1));
    assert_eq!(response.status(), 503);
    assert!(response.extensions().get::<DeadlineCancelled>().is_some());
    assert!(response.headers().contains_key("retry-after"));
    drop(held);
    // The request that gave up holds nothing: the connection serves the next
    // (returning it to the pool talks to SQLite's thread, in real time).
    tokio::time::resume();
    let next = tokio::time::timeout(Duration::from_secs(1), pool.acquire()).await;
    assert!(matches!(next, Ok(Ok(_))), "{next:?}");
}

#[tokio::test]
async fn a_deadline_that_passes_in_a_pool_wait_is_told_at_the_pool_wait_stage() {
    let pool = pool_of_one().await;
    let held = pool.acquire().await.unwrap();
    let recording = Recording::new();
    let app = routes![answer]
        .into_router(&Config::default().observed_by(recording.clone()))
        .with_state(pool.clone());
    tokio::time::pause();
    let response = send(&app, request("GET", "/answer")).await;
    assert_eq!(response.status(), 503);
    assert_eq!(exceeded_stages(&recording.events()), [Stage::PoolWait]);
    // Once the connection is free, a deadline that passes later in the
    // handler is the handler's.
    drop(held);
    tokio::time::resume();
    // Returning the connection talks to SQLite's thread, in real time; the
    // next request starts once it is back.
    let returned = tokio::time::timeout(Duration::from_secs(5), async {
        while pool.num_idle() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        returned.is_ok(),
        "the connection did not return to the pool"
    );
    recording.clear();
    let slow = routes![slow_after_connecting]
        .into_router(&Config::default().observed_by(recording.clone()))
        .with_state(pool);
    // The connection is idle: taking it needs no real time, and the
    // route's deadline passes on the paused clock, in the handler.
    tokio::time::pause();
    let response = send(&slow, request("GET", "/slow")).await;
    assert_eq!(response.status(), 503);
    assert_eq!(exceeded_stages(&recording.events()), [Stage::Handler]);
}

#[get("/slow", timeout_ms = 200)]
async fn slow_after_connecting(Conn(_conn): Conn<Sqlite>) -> &'static str {
    tokio::time::sleep(Duration::from_secs(10)).await;
    "late"
}

#[tokio::test]
async fn acquire_stops_at_the_current_deadline_with_a_deadline_error() {
    let pool = pool_of_one().await;
    let _held = pool.acquire().await.unwrap();
    tokio::time::pause();
    let start = Instant::now();
    let err = Deadline::after(Duration::from_millis(150))
        .scope(acquire(&pool))
        .await
        .unwrap_err();
    assert_just_after(start.elapsed(), Duration::from_millis(150), MS(1));
    assert!(matches!(err, PoolWaitError::DeadlineExceeded(_)));
    assert!(is_deadline_exceeded(&err));
    let response = axum::response::IntoResponse::into_response(err);
    assert_eq!(response.status(), 503);
    assert!(response.extensions().get::<DeadlineCancelled>().is_some());
}

#[tokio::test]
async fn acquire_with_no_deadline_waits_for_the_connection() {
    let pool = pool_of_one().await;
    let held = pool.acquire().await.unwrap();
    let (tx, rx) = oneshot::channel();
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move {
            let _ = tx.send(());
            acquire(&pool).await.map(|_| ())
        }
    });
    rx.await.unwrap();
    drop(held);
    waiter.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_pool_error_is_not_a_deadline_error() {
    let pool = pool_of_one().await;
    pool.close().await;
    let err = acquire(&pool).await.unwrap_err();
    assert!(matches!(err, PoolWaitError::Pool(_)));
    assert!(!is_deadline_exceeded(&err));
}

/// A handler's own error type, which answers 500 for anything.
#[derive(Debug)]
struct AppError(PoolWaitError);

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the app failed")
    }
}

impl std::error::Error for AppError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl axum::response::IntoResponse for AppError {
    fn into_response(self) -> axum::response::Response {
        http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
    }
}

/// Waits at most 100 ms for a connection, well within the route's deadline.
#[get("/impatient", timeout_ms = 5000)]
async fn impatient(
    axum::extract::State(pool): axum::extract::State<SqlitePool>,
) -> Result<&'static str, AppError> {
    let _conn = Deadline::after(Duration::from_millis(100))
        .scope(acquire(&pool))
        .await
        .map_err(AppError)?;
    Ok("connected")
}

#[tokio::test]
async fn a_pool_wait_cut_short_in_a_handlers_error_answers_503_not_504() {
    let pool = pool_of_one().await;
    let _held = pool.acquire().await.unwrap();
    let app = routes![impatient]
        .into_router(&Config::default())
        .with_state(pool.clone());
    tokio::time::pause();
    let response = send(&app, request("GET", "/impatient")).await;
    // S11 over S6: the wait ran out, not the work; and over the error's
    // own 500.
    assert_eq!(response.status(), 503);
    assert!(response.extensions().get::<DeadlineCancelled>().is_some());
    assert!(response.headers().contains_key("retry-after"));
}

/// Waits at most 100 ms for a connection, on a plain axum route.
async fn impatient_plain(
    axum::extract::State(pool): axum::extract::State<SqlitePool>,
) -> Result<&'static str, PoolWaitError> {
    let _conn = Deadline::after(Duration::from_millis(100))
        .scope(acquire(&pool))
        .await?;
    Ok("connected")
}

/// The `Retry-After`s of eight cut pool waits, under a `TimeboxLayer`
/// whose source is seeded with `seed`.
async fn retry_afters(pool: &SqlitePool, seed: u64) -> Vec<u64> {
    let app = Router::new()
        .route("/impatient", axum::routing::get(impatient_plain))
        .layer(TimeboxLayer::new(&Config::default()).entropy(Entropy::seeded(seed)))
        .with_state(pool.clone());
    let mut seen = Vec::new();
    for _ in 0..8 {
        let response = send(&app, request("GET", "/impatient")).await;
        assert_eq!(response.status(), 503);
        seen.push(support::http::retry_after_secs(&response));
    }
    seen
}

/// S11's 503 is made by the error, without its request: its `Retry-After`
/// still comes from the app's source, as every other timebox answer's
/// does, so a seeded app replays it.
#[tokio::test]
async fn a_cut_pool_waits_retry_after_comes_from_the_apps_source() {
    let pool = pool_of_one().await;
    let _held = pool.acquire().await.unwrap();
    tokio::time::pause();
    let first = retry_afters(&pool, 42).await;
    assert_eq!(retry_afters(&pool, 42).await, first);
    let drawn = Entropy::seeded(42);
    let expected: Vec<u64> = (0..8).map(|_| drawn.uniform(1..=3)).collect();
    assert_eq!(first, expected);
}
