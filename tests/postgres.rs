//! Postgres statements that stop at the deadline (feature `postgres`),
//! against a real PostgreSQL server on a loopback port that the tests
//! provision themselves (`support/postgres.rs`). Real time: each bound is
//! short, and durations are checked as upper bounds with room.

mod support;

use std::ops::Deref;
use std::time::Duration;

use axum::extract::State;
use http::StatusCode;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use timebox::config::Config;
use timebox::db::pg::{self, PgError};
use timebox::db::PoolWaitError;
use timebox::deadline::{is_deadline_exceeded, Deadline};
use timebox::observe::{Event, Recording, Stage};
use timebox::{get, routes};
use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;
use tower::ServiceExt;

use support::postgres::Postgres;
use support::time::{MS, SECS};

/// The tests here run one at a time: a server starting or stopping takes
/// both cores of a small machine for a moment, which would otherwise land
/// inside another test's timed deadline.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// A server of its own for one test, and the test's turn to run: the
/// server stops before the next test starts.
struct Turn {
    server: Postgres,
    _alone: MutexGuard<'static, ()>,
}

impl Deref for Turn {
    type Target = Postgres;

    fn deref(&self) -> &Postgres {
        &self.server
    }
}

/// Waits for this test's turn, and starts its server.
async fn start() -> Turn {
    let alone = ONE_AT_A_TIME.lock().await;
    Turn {
        server: Postgres::start(),
        _alone: alone,
    }
}

/// A pool of one connection, so the next query runs on the connection the
/// last one used.
async fn pool(server: &Postgres) -> PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(SECS(5))
        .connect(&server.url())
        .await
        .expect("the test server accepts connections")
}

/// `SELECT pg_sleep(seconds)` in a transaction from [`pg::begin`].
async fn sleep_in_transaction(pool: &PgPool, seconds: f64) -> Result<(), PgError> {
    let mut tx = pg::begin(pool).await?;
    sqlx::query("SELECT pg_sleep($1)")
        .bind(seconds)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// The connection is back and healthy: a query on it answers at once, and
/// the deadline's setting did not outlive its transaction.
async fn healthy(pool: &PgPool) {
    let start = Instant::now();
    let (timeout,): (String,) = sqlx::query_as("SHOW statement_timeout")
        .fetch_one(pool)
        .await
        .expect("the connection works after the deadline");
    assert_eq!(timeout, "0", "SET LOCAL ended with its transaction");
    assert!(start.elapsed() < SECS(1), "{:?}", start.elapsed());
}

/// What `SHOW statement_timeout` says inside a transaction from
/// [`pg::begin`] under `deadline`.
async fn shown_under(pool: &PgPool, deadline: Deadline) -> String {
    deadline
        .scope(async {
            let mut tx = pg::begin(pool).await.expect("a transaction");
            let (shown,): (String,) = sqlx::query_as("SHOW statement_timeout")
                .fetch_one(&mut *tx)
                .await
                .expect("SHOW answers");
            shown
        })
        .await
}

#[tokio::test]
async fn a_five_second_sleep_inside_a_300_ms_deadline_ends_at_it_with_a_deadline_error() {
    let server = start().await;
    let pool = pool(&server).await;

    let start = Instant::now();
    let err = Deadline::after(MS(300))
        .scope(sleep_in_transaction(&pool, 5.0))
        .await
        .expect_err("the server stops the statement");
    let took = start.elapsed();

    assert!(matches!(err, PgError::DeadlineExceeded { .. }), "{err:?}");
    assert!(is_deadline_exceeded(&err), "{err:?}");
    assert!(took >= MS(200) && took < SECS(2), "{took:?}");
    healthy(&pool).await;
}

#[tokio::test]
async fn the_same_sleep_with_ten_seconds_left_runs_to_the_end() {
    let server = start().await;
    let pool = pool(&server).await;

    let start = Instant::now();
    Deadline::after(SECS(10))
        .scope(sleep_in_transaction(&pool, 5.0))
        .await
        .expect("five seconds fit in ten");

    assert!(start.elapsed() >= SECS(5), "{:?}", start.elapsed());
    healthy(&pool).await;
}

#[tokio::test]
async fn the_transaction_is_given_the_time_left_less_the_allowance() {
    let server = start().await;
    let pool = pool(&server).await;

    let start = Instant::now();
    let shown = shown_under(&pool, Deadline::after(Duration::from_micros(2_500_700))).await;
    let spent = u64::try_from(start.elapsed().as_millis()).expect("milliseconds");

    // `SHOW` gives whole seconds when the value is one, milliseconds else.
    let millis: u64 = shown
        .strip_suffix("ms")
        .unwrap_or_else(|| panic!("milliseconds, not {shown}"))
        .parse()
        .expect("a number");
    // 2 500.7 ms less the 50 ms allowance and what the setting waited for
    // (at most what the whole exchange took), rounded down.
    assert!(
        (2_450_u64.saturating_sub(spent + 1)..=2_450).contains(&millis),
        "{shown} after {spent} ms"
    );
    healthy(&pool).await;
}

#[tokio::test]
async fn without_a_deadline_nothing_is_set() {
    let server = start().await;
    let pool = pool(&server).await;

    let mut tx = pg::begin(&pool).await.expect("a transaction");
    let (shown,): (String,) = sqlx::query_as("SHOW statement_timeout")
        .fetch_one(&mut *tx)
        .await
        .expect("SHOW answers");

    assert_eq!(shown, "0");
}

#[tokio::test]
async fn a_cancel_with_time_left_stays_an_ordinary_database_error() {
    let server = start().await;
    let pool = pool(&server).await;

    let err = Deadline::after(SECS(10))
        .scope(async {
            let mut tx = pg::begin(&pool).await?;
            // The service's own, shorter, statement timeout.
            sqlx::raw_sql("SET LOCAL statement_timeout = 50")
                .execute(&mut *tx)
                .await?;
            sqlx::query("SELECT pg_sleep(1)").execute(&mut *tx).await?;
            Ok::<_, PgError>(())
        })
        .await
        .expect_err("the service's timeout stops the statement");

    match &err {
        PgError::Database(sqlx::Error::Database(db)) => {
            assert_eq!(db.code().as_deref(), Some("57014"));
        }
        other => panic!("an ordinary database error, not {other:?}"),
    }
    assert!(!is_deadline_exceeded(&err));
    healthy(&pool).await;
}

#[tokio::test]
async fn an_expired_deadline_sends_nothing() {
    let server = start().await;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_lazy(&server.url())
        .expect("a lazy pool");

    let deadline = Deadline::after(Duration::ZERO);
    let err = deadline
        .scope(pg::begin(&pool))
        .await
        .expect_err("no time left to begin");

    assert!(
        matches!(err, PgError::Pool(PoolWaitError::DeadlineExceeded(_))),
        "{err:?}"
    );
    assert_eq!(pool.size(), 0, "no connection was even made");
}

#[get("/sleep", timeout_ms = 300)]
async fn sleeps(State(pool): State<PgPool>) -> Result<&'static str, PgError> {
    let mut tx = pg::begin(&pool).await?;
    sqlx::query("SELECT pg_sleep(5)").execute(&mut *tx).await?;
    tx.commit().await?;
    Ok("slept")
}

#[tokio::test]
async fn a_handler_whose_statement_postgres_stops_answers_504() {
    let server = start().await;
    let pool = pool(&server).await;
    let app = routes![sleeps]
        .into_router(&Config::default())
        .with_state(pool.clone());
    let request = http::Request::get("/sleep")
        .body(axum::body::Body::empty())
        .expect("a valid request");

    let start = Instant::now();
    let response = app.oneshot(request).await.expect("the router answers");

    let took = start.elapsed();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("the answer's body");
    assert_eq!(
        status,
        StatusCode::GATEWAY_TIMEOUT,
        "after {took:?}: {}",
        String::from_utf8_lossy(&body)
    );
    assert!(took < SECS(2), "{took:?}");
    healthy(&pool).await;
}

#[get("/begin", timeout_ms = 100)]
async fn begins(State(pool): State<PgPool>) -> Result<&'static str, PgError> {
    pg::begin(&pool).await?.commit().await?;
    Ok("begun")
}

#[tokio::test]
async fn a_deadline_that_passes_waiting_for_begin_is_told_at_the_pool_wait_stage() {
    let server = start().await;
    let pool = pool(&server).await;
    let held = pool.acquire().await.expect("the pool's one connection");
    let recording = Recording::new();
    let app = routes![begins]
        .into_router(&Config::default().observed_by(recording.clone()))
        .with_state(pool.clone());
    let request = http::Request::get("/begin")
        .body(axum::body::Body::empty())
        .expect("a valid request");

    let response = app.oneshot(request).await.expect("the router answers");

    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let stages: Vec<Stage> = recording
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::DeadlineExceeded { stage, .. } => Some(*stage),
            _ => None,
        })
        .collect();
    assert_eq!(stages, [Stage::PoolWait]);
    drop(held);
}

#[tokio::test]
async fn a_shorter_timeout_already_in_force_is_kept() {
    let server = start().await;
    let pool = pool(&server).await;
    // The session's own (as a role's or a database's would be): the pool's
    // one connection keeps it.
    sqlx::raw_sql("SET statement_timeout = 100")
        .execute(&pool)
        .await
        .expect("SET works");

    let shown = shown_under(&pool, Deadline::after(SECS(10))).await;

    assert_eq!(shown, "100ms");
}

#[tokio::test]
async fn a_deadline_past_what_postgres_can_count_sets_nothing() {
    let server = start().await;
    let pool = pool(&server).await;

    let shown = shown_under(&pool, Deadline::after(Duration::from_secs(30 * 24 * 3600))).await;

    assert_eq!(shown, "0");
}
