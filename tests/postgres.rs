//! Postgres statements that stop at the deadline (feature `postgres`),
//! against a real PostgreSQL server on a loopback port that the tests
//! provision themselves (`support/postgres.rs`). Real time: each bound is
//! short, and durations are checked as upper bounds with room.

mod support;

use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use http::StatusCode;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use timebox::config::Config;
use timebox::db::pg::{self, PgError};
use timebox::db::PoolWaitError;
use timebox::deadline::{is_deadline_exceeded, Deadline};
use timebox::observe::{Recording, Stage};
use timebox::{get, routes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;
use tower::ServiceExt;

use support::observe::exceeded_stages;
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
            shown(&mut tx).await
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
async fn a_sleep_that_fits_the_time_left_runs_to_the_end() {
    let server = start().await;
    let pool = pool(&server).await;

    let start = Instant::now();
    Deadline::after(SECS(3))
        .scope(sleep_in_transaction(&pool, 1.0))
        .await
        .expect("one second fits in three");

    assert!(start.elapsed() >= SECS(1), "{:?}", start.elapsed());
    healthy(&pool).await;
}

#[tokio::test]
async fn the_transaction_is_given_the_time_left_less_the_allowance() {
    let server = start().await;
    let pool = pool(&server).await;

    let start = Instant::now();
    let shown = shown_under(&pool, Deadline::after(Duration::from_micros(2_500_700))).await;
    let spent = u64::try_from(start.elapsed().as_millis()).expect("milliseconds");

    let millis = millis(&shown);
    // 2 500.7 ms less the 50 ms allowance and what the setting waited for
    // (at most what the whole exchange took), rounded down.
    assert!(
        (2_450_u64.saturating_sub(spent + 1)..=2_450).contains(&millis),
        "{shown} after {spent} ms"
    );
    healthy(&pool).await;
}

/// The milliseconds of a `statement_timeout` that `SHOW` gave: whole
/// seconds when the value is one, milliseconds else.
fn millis(shown: &str) -> u64 {
    shown
        .strip_suffix("ms")
        .unwrap_or_else(|| panic!("milliseconds, not {shown}"))
        .parse()
        .expect("a number")
}

/// `set_statement_timeout` on `conn`, under the current deadline.
async fn set_under_the_deadline(conn: &mut sqlx::PgConnection) {
    pg::set_statement_timeout(conn)
        .await
        .expect("the setting is taken");
}

/// `SHOW statement_timeout` on `conn`.
async fn shown(conn: &mut sqlx::PgConnection) -> String {
    let (shown,): (String,) = sqlx::query_as("SHOW statement_timeout")
        .fetch_one(conn)
        .await
        .expect("SHOW answers");
    shown
}

#[tokio::test]
async fn a_later_statement_is_given_only_what_is_left_by_then() {
    let server = start().await;
    let pool = pool(&server).await;

    let (at_begin, later) = Deadline::after(SECS(2))
        .scope(async {
            let mut tx = pg::begin(&pool).await.expect("a transaction");
            let at_begin = millis(&shown(&mut tx).await);
            tokio::time::sleep(MS(500)).await;
            set_under_the_deadline(&mut tx).await;
            (at_begin, millis(&shown(&mut tx).await))
        })
        .await;

    assert!(at_begin <= 1_950, "{at_begin} ms at the start");
    assert!(
        later + 500 <= at_begin && later > 0,
        "{later} ms after 500 ms, {at_begin} ms at the start"
    );
}

/// A call under a shorter scope of its own does not hold a later call of
/// the transaction to its shorter time.
#[tokio::test]
async fn a_later_call_under_the_longer_deadline_gets_its_time_back() {
    let server = start().await;
    let pool = pool(&server).await;

    let (inner, outer) = Deadline::after(SECS(10))
        .scope(async {
            let mut tx = pg::begin(&pool).await.expect("a transaction");
            let inner = Deadline::after(MS(200))
                .scope(async {
                    set_under_the_deadline(&mut tx).await;
                    millis(&shown(&mut tx).await)
                })
                .await;
            set_under_the_deadline(&mut tx).await;
            (inner, millis(&shown(&mut tx).await))
        })
        .await;

    assert!(inner <= 150, "{inner} ms under the 200 ms scope");
    assert!(outer > 9_000, "{outer} ms back under the 10 s deadline");
}

/// A timeout the caller set in the transaction after an earlier call is
/// the caller's, and shorter: kept.
#[tokio::test]
async fn a_shorter_timeout_the_caller_set_after_an_earlier_call_is_kept() {
    let server = start().await;
    let pool = pool(&server).await;

    let shown = Deadline::after(SECS(10))
        .scope(async {
            let mut tx = pg::begin(&pool).await.expect("a transaction");
            sqlx::query("SET LOCAL statement_timeout = 1234")
                .execute(&mut *tx)
                .await
                .expect("the setting is taken");
            set_under_the_deadline(&mut tx).await;
            shown(&mut tx).await
        })
        .await;

    assert_eq!(shown, "1234ms");
}

/// An expired deadline inside a transaction sends nothing, and answers as
/// the deadline's error.
#[tokio::test]
async fn setting_the_timeout_after_the_deadline_is_the_deadlines_error() {
    let server = start().await;
    let pool = pool(&server).await;
    let mut tx = pool.begin().await.expect("a transaction");

    let set = Deadline::after(Duration::ZERO)
        .scope(pg::set_statement_timeout(&mut tx))
        .await;

    let err = set.expect_err("nothing left to set");
    assert!(err.is_deadline_exceeded(), "{err}");
    assert!(
        matches!(
            err,
            PgError::DeadlineExceeded {
                cancelled: None,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        axum::response::IntoResponse::into_response(err).status(),
        StatusCode::GATEWAY_TIMEOUT
    );
    assert_eq!(shown(&mut tx).await, "0", "nothing was set");
}

#[tokio::test]
async fn without_a_deadline_setting_the_timeout_changes_nothing() {
    let server = start().await;
    let pool = pool(&server).await;

    let mut tx = pool.begin().await.expect("a transaction");
    sqlx::query("SET LOCAL statement_timeout = 1234")
        .execute(&mut *tx)
        .await
        .expect("the setting is taken");
    pg::set_statement_timeout(&mut tx)
        .await
        .expect("nothing to set");

    assert_eq!(shown(&mut tx).await, "1234ms");
}

#[tokio::test]
async fn without_a_deadline_nothing_is_set() {
    let server = start().await;
    let pool = pool(&server).await;

    let mut tx = pg::begin(&pool).await.expect("a transaction");

    assert_eq!(shown(&mut tx).await, "0");
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

/// A loopback proxy in front of a server that holds each of the server's
/// replies back for [`HeldReplies::HOLD`] while told to.
struct HeldReplies {
    addr: SocketAddr,
    holding: Arc<AtomicBool>,
}

impl HeldReplies {
    const HOLD: Duration = Duration::from_millis(300);

    async fn start(server: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("the proxy's address");
        let holding = Arc::new(AtomicBool::new(false));
        let held = Arc::clone(&holding);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = TcpStream::connect(server)
                    .await
                    .expect("the server accepts the proxy");
                let (from_client, to_client) = client.into_split();
                let (from_server, to_server) = upstream.into_split();
                tokio::spawn(forward(from_client, to_server, None));
                tokio::spawn(forward(from_server, to_client, Some(Arc::clone(&held))));
            }
        });
        HeldReplies { addr, holding }
    }

    fn hold(&self, on: bool) {
        self.holding.store(on, Ordering::SeqCst);
    }
}

/// Copies `from` to `to`, waiting [`HeldReplies::HOLD`] before each chunk
/// that arrives while `holding` is set.
async fn forward(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    holding: Option<Arc<AtomicBool>>,
) {
    let mut buf = vec![0; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if holding.as_ref().is_some_and(|h| h.load(Ordering::SeqCst)) {
            tokio::time::sleep(HeldReplies::HOLD).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn a_deadline_that_passes_during_begin_leaves_no_transaction_on_the_connection() {
    let server = start().await;
    let url = server.url();
    let port = url
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .and_then(|port| port.parse::<u16>().ok())
        .expect("the server's url names its port");
    let proxy = HeldReplies::start(SocketAddr::from(([127, 0, 0, 1], port))).await;
    // One connection, handed out again without a check in between: the
    // next query runs on whatever state the cut `BEGIN` left.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .acquire_timeout(SECS(5))
        .connect(&url.replace(&format!(":{port}/"), &format!(":{}/", proxy.addr.port())))
        .await
        .expect("the test server accepts connections through the proxy");

    proxy.hold(true);
    let err = Deadline::after(MS(100))
        .scope(pg::begin(&pool))
        .await
        .expect_err("the deadline passes before `BEGIN` is answered");
    proxy.hold(false);
    assert!(err.is_deadline_exceeded(), "{err:?}");

    // Outside a transaction each statement is a transaction of its own,
    // with its own id; inside the cut `BEGIN`'s, both would share one.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (id,): (i64,) = sqlx::query_as("SELECT txid_current()")
            .fetch_one(&pool)
            .await
            .expect("the connection works after the cut");
        ids.push(id);
    }
    assert_ne!(
        ids[0], ids[1],
        "the statements ran inside the cut `BEGIN`'s transaction"
    );
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
    let recording = Recording::new();
    let app = routes![sleeps]
        .into_router(&Config::default().observed_by(recording.clone()))
        .with_state(pool.clone());
    sleep_answers_504(app, &pool).await;
    assert_eq!(exceeded_stages(&recording.events()), [Stage::Outbound]);
}

#[get("/id")]
async fn looks_up(State(pool): State<PgPool>) -> Result<&'static str, PgError> {
    // Postgres quotes the value it could not read in its error.
    sqlx::query("SELECT $1::uuid")
        .bind("abc\nERROR forged line")
        .execute(&pool)
        .await?;
    Ok("found")
}

#[get("/signup")]
async fn signs_up(State(pool): State<PgPool>) -> Result<&'static str, PgError> {
    // Postgres's `detail` holds the failing row: `Failing row contains
    // (alice@example.com, null)`.
    let mut conn = pool.acquire().await.map_err(PgError::Database)?;
    sqlx::query("CREATE TEMP TABLE users (email text, name text NOT NULL)")
        .execute(&mut *conn)
        .await?;
    sqlx::query("INSERT INTO users VALUES ($1, NULL)")
        .bind("alice@example.com")
        .execute(&mut *conn)
        .await?;
    Ok("signed up")
}

/// A database error answers 500 and is logged as one line: what Postgres
/// quoted of the statement's input (a caller's value, newlines and all)
/// cannot forge a line of its own.
#[tokio::test]
async fn a_database_error_is_logged_as_one_line_whatever_it_quotes() {
    use support::logs::Logs;

    let server = start().await;
    let pool = pool(&server).await;
    let app = routes![looks_up, signs_up]
        .into_router(&Config::default())
        .with_state(pool);
    let (logs, _guard) = Logs::capture();
    let request = http::Request::get("/id")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let line = logs.one_line_with("database error", &["code=\"22P02\""]);
    assert!(
        line.contains("forged line"),
        "the quoted value on the same line: {line}"
    );
    // A row's values, in Postgres's `detail`, stay out of the log.
    let request = http::Request::get("/signup")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let line = logs.one_line_with("code=\"23502\"", &[]);
    assert!(!line.contains("alice"), "{line}");
}

/// The same handler as a plain route under `TimeboxLayer`'s global
/// deadline: the error answers 504 without the macros' help.
#[tokio::test]
async fn a_plain_route_whose_statement_postgres_stops_answers_504_too() {
    let server = start().await;
    let pool = pool(&server).await;
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.server.timeouts.request_timeout_ms = Some(300);
    let app = axum::Router::new()
        .route("/sleep", axum::routing::get(sleeps))
        .layer(timebox::server::TimeboxLayer::new(&config))
        .with_state(pool.clone());
    sleep_answers_504(app, &pool).await;
    assert_eq!(exceeded_stages(&recording.events()), [Stage::Outbound]);
}

/// `GET /sleep` on `app`: Postgres stops the statement, the answer is 504
/// well within 2 s, and the connection is healthy after.
async fn sleep_answers_504(app: axum::Router, pool: &PgPool) {
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
    healthy(pool).await;
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
    assert_eq!(exceeded_stages(&recording.events()), [Stage::PoolWait]);
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
