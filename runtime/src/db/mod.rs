//! Deadline-bounded waits for a database pool connection (feature `sqlx`).
//!
//! Waiting for a pooled connection is where an overloaded service loses its
//! time: every connection is busy, and requests queue behind them long after
//! their callers gave up. [`acquire()`] waits only until the current deadline
//! (and no longer than the pool's own `acquire_timeout`).
#![cfg_attr(
    feature = "server",
    doc = "The [`Conn`] extractor does the same for a handler and answers `503` with [`DeadlineCancelled`](crate::server::DeadlineCancelled) when the wait is cut short."
)]
#![cfg_attr(
    not(feature = "server"),
    doc = "With the `server` feature, the `Conn` extractor does the same for an axum handler, and the errors answer requests."
)]
//!
//! A query that is already running is not cut by these: stopping a
//! statement half way is the database's job, and dropping the future would
//! only abandon the connection with the statement still running on it. With
//! Postgres, `timebox::db::pg::begin` (feature `postgres`) has the server do it, at the
//! deadline.
//!
//! # Examples
//!
//! With Postgres (the driver the `postgres` feature turns on; any sqlx
//! driver the application enables works the same way):
//!
#![cfg_attr(
    all(feature = "postgres", feature = "server", feature = "macros"),
    doc = "```"
)]
#![cfg_attr(
    not(all(feature = "postgres", feature = "server", feature = "macros")),
    doc = "```ignore"
)]
//! use axum::Router;
//! use sqlx::PgPool;
//! use timebox::config::Config;
//! use timebox::db::pg::PgError;
//! use timebox::db::Conn;
//! use timebox::{get, routes};
//!
//! // The wait for a connection is bounded by the route's deadline; the
//! // query's own error answers as `PgError` does: a `500` here, and a
//! // `504` for a statement Postgres stopped at the deadline, which it
//! // does in a transaction of `pg::begin`.
//! #[get("/count", timeout_ms = 200)]
//! async fn count(Conn(mut conn): Conn<sqlx::Postgres>) -> Result<String, PgError> {
//!     let row: (i64,) = sqlx::query_as("SELECT 41 + 1")
//!         .fetch_one(&mut *conn)
//!         .await?;
//!     Ok(row.0.to_string())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), sqlx::Error> {
//! // Connects at the first query, not here.
//! let pool = PgPool::connect_lazy("postgres://localhost/app")?;
//! let app: Router = routes![count].into_router(&Config::default()).with_state(pool);
//! # Ok(())
//! # }
//! ```

mod acquire;
#[cfg(feature = "server")]
mod extract;
#[cfg(feature = "postgres")]
pub mod pg;
#[cfg(feature = "server")]
mod respond;

pub use acquire::{acquire, PoolWaitError};
#[cfg(feature = "server")]
pub use extract::Conn;
#[cfg(feature = "server")]
pub(crate) use respond::{cut_short_answer, holds_cut_short_wait};
