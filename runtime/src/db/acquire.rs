//! [`acquire`]: a pool connection, or the deadline.

use std::error::Error;
use std::fmt;

use sqlx::pool::PoolConnection;
use sqlx::{Database, Pool};

use crate::deadline::{bounded, DeadlineExceeded};
use crate::observe::{waiting_at, Stage};

/// Waits for a connection from `pool` until the current deadline.
///
/// With no current deadline this is `pool.acquire()`: the pool's own
/// `acquire_timeout` still bounds it. When a route's deadline passes during
/// the wait, the route tells it at the stage `pool_wait`, not `handler`.
///
/// # Errors
///
/// [`PoolWaitError`]: the deadline passed first (its `source()` is
/// [`DeadlineExceeded`], so
/// [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded) holds), or
/// the pool failed (closed, its own timeout, a failed connect).
///
/// # Cancellation safety
///
/// Dropping the future gives up the place in the pool's queue.
pub async fn acquire<DB: Database>(pool: &Pool<DB>) -> Result<PoolConnection<DB>, PoolWaitError> {
    match bounded(waiting_at(Stage::PoolWait, pool.acquire())).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(err)) => Err(PoolWaitError::Pool(err)),
        Err(deadline) => Err(PoolWaitError::DeadlineExceeded(deadline)),
    }
}

/// Why no pool connection came.
#[derive(Debug)]
#[non_exhaustive]
pub enum PoolWaitError {
    /// The deadline passed while waiting.
    DeadlineExceeded(DeadlineExceeded),
    /// The pool or the database failed.
    Pool(sqlx::Error),
}

impl fmt::Display for PoolWaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolWaitError::DeadlineExceeded(_) => {
                f.write_str("deadline exceeded while waiting for a database connection")
            }
            PoolWaitError::Pool(_) => f.write_str("database error"),
        }
    }
}

impl Error for PoolWaitError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            PoolWaitError::DeadlineExceeded(err) => Some(err),
            PoolWaitError::Pool(err) => Some(err),
        }
    }
}

impl From<sqlx::Error> for PoolWaitError {
    fn from(err: sqlx::Error) -> Self {
        PoolWaitError::Pool(err)
    }
}
