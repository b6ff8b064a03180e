//! Postgres statements that stop at the deadline (feature `postgres`).
//!
//! A deadline that only bounds the wait for a pool connection leaves a
//! query that is already running to run on: dropping its future abandons
//! the connection with the statement still going. Here Postgres itself
//! stops the statement: [`begin`] opens a transaction and sets its
//! `statement_timeout` (as `SET LOCAL`) to the time the current deadline has
//! left, less 50 ms for the server's error to travel back, in whole
//! milliseconds rounded down, at least 1 (never longer than a timeout
//! already in force, and nothing past Postgres's limit of about 24.8 days).
//! A statement that starts at once and is still running at the deadline
//! is cancelled by the server with SQLSTATE `57014`. The 50 ms must hold
//! three trips to the database (the setting's answer, the statement's
//! start, its error's way back); with a round trip under about 15 ms the
//! error reaches the handler before the deadline's own timer would cut it,
//! and the connection is ready for the next query.
//!
//! - **Errors.** Convert a query's `sqlx::Error` into [`PgError`] (`?` does
//!   it): a `57014` that arrives when the deadline has passed (or is within
//!   the 50 ms allowance and the rounding of it) becomes
//!   [`PgError::DeadlineExceeded`], whose `source()` is the
//!   [`DeadlineExceeded`], so a handler answers `504`; a `57014` with
//!   time left (a shorter timeout of the service's own, say) stays an
//!   ordinary [`PgError::Database`].
//! - **Each statement.** `statement_timeout` bounds each statement, from
//!   when it starts, with the time that was left when it was set. A
//!   statement that starts later (after an outbound call, or a later one of
//!   a long transaction) gets that whole value again, and could run past
//!   the deadline by as long as it waited: call [`set_statement_timeout`]
//!   before it to give it only what is left by then.
//! - **No deadline** means a plain transaction: nothing is set.
//! - **PgBouncer.** The setting is transaction-local (`SET LOCAL`), so it
//!   never leaks to the next user of the server connection, and it is sent
//!   as an unnamed statement, never kept prepared: this is safe behind
//!   PgBouncer in transaction pooling mode.
//!
#![cfg_attr(all(feature = "server", feature = "macros"), doc = "```no_run")]
#![cfg_attr(not(all(feature = "server", feature = "macros")), doc = "```ignore")]
//! use sqlx::PgPool;
//! use timebox::db::pg::{self, PgError};
//! use timebox::get;
//!
//! #[get("/report", timeout_ms = 300)]
//! async fn report(axum::extract::State(pool): axum::extract::State<PgPool>) -> Result<String, PgError> {
//!     let mut tx = pg::begin(&pool).await?;
//!     let (total,): (i64,) = sqlx::query_as("SELECT count(*) FROM orders")
//!         .fetch_one(&mut *tx)
//!         .await?;
//!     tx.commit().await?;
//!     Ok(total.to_string())
//! }
//! ```

use std::error::Error;
use std::fmt;
use std::time::Duration;

use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use crate::deadline::{bounded, Deadline, DeadlineExceeded};
use crate::observe::{waiting_at, Stage};

use super::PoolWaitError;

/// SQLSTATE `query_canceled`: what Postgres answers a statement its
/// `statement_timeout` stopped.
const QUERY_CANCELED: &str = "57014";

/// Postgres is told to stop a statement this long before the deadline, so
/// that its error reaches us first. The statement's timer starts two round
/// trips after the timeout was set (the setting's answer, then sqlx's
/// prepare, whose `Sync` ends a timer of its own; the statement's runs from
/// its `Bind`), and its error takes a third way back. Without the allowance
/// the deadline's own timer would win the race and cut the handler first
/// (S5's `503`, and a connection dropped mid-statement); 10 ms lost that
/// race on a loaded 2-core machine.
const REPLY_ALLOWANCE: Duration = Duration::from_millis(50);

/// A `57014` that arrives with at most this much left was ours: the
/// allowance, and the rounding down to whole milliseconds.
const OURS_WITHIN: Duration = Duration::from_millis(51);

/// Begins a transaction on a connection from `pool`, waited for until the
/// current deadline (as [`acquire`](super::acquire())), and sets its
/// `statement_timeout` to the time left (see the [module docs](self)).
/// A route's deadline that passes before `BEGIN` is answered is told at
/// the stage `pool_wait`, as in `acquire`.
///
/// # Errors
///
/// [`PgError::Pool`]: the deadline passed before the transaction began,
/// waiting for a connection or during `BEGIN` (one already passed sends
/// nothing to the server), or the pool or `BEGIN` failed (sqlx's
/// `Pool::begin` does both, and says which in its error);
/// [`PgError::DeadlineExceeded`]: it passed right after `BEGIN`;
/// [`PgError::Database`]: setting the statement timeout failed.
///
/// # Cancellation safety
///
/// Dropping the future gives up the place in the pool's queue, or rolls
/// back the transaction: one cut while `BEGIN` is under way too, before
/// the connection is used again (sqlx 0.9 counts the transaction from
/// when it sends `BEGIN`; 0.8 did not, and gave the connection back to the
/// pool inside it).
pub async fn begin(pool: &PgPool) -> Result<Transaction<'static, Postgres>, PgError> {
    let mut tx = match bounded(waiting_at(Stage::PoolWait, pool.begin())).await {
        Ok(Ok(tx)) => tx,
        Ok(Err(err)) => return Err(PgError::Pool(PoolWaitError::Pool(err))),
        Err(deadline) => return Err(PgError::Pool(PoolWaitError::DeadlineExceeded(deadline))),
    };
    set_statement_timeout(&mut tx).await?;
    Ok(tx)
}

/// Sets `statement_timeout` on `conn` for the rest of its transaction (as
/// `SET LOCAL` does, with `set_config(.., true)`), to
/// the time the current deadline has left now, less 50 ms for the error to
/// travel back (whole milliseconds, rounded down, at least 1); with no
/// current deadline, does nothing.
///
/// A timeout already in force that is shorter (the role's, the
/// database's, the session's, or one the caller set in the transaction) is
/// kept. One this function set itself is not: a later call under a longer
/// deadline (a shorter scope of the handler's own having ended) gets its
/// own time left, not an earlier call's. The transaction keeps what this
/// function set, and what was in force before, in the settings
/// `timebox.statement_timeout_set` and `timebox.statement_timeout_before`
/// (a value the caller sets that equals the one this function set last is
/// taken for this function's: Postgres does not say who set it). With no
/// current deadline, or one further away than Postgres can count (about
/// 24.8 days), it sends nothing, so a shorter timeout an earlier call set
/// in the transaction stays in force: call it under the deadline the next
/// statements should have. Outside a transaction the setting would end
/// with the statement that made it: call this on a transaction.
///
/// # Errors
///
/// [`PgError::DeadlineExceeded`] when the deadline has already passed
/// (nothing is sent), or [`PgError::Database`].
///
/// # Cancellation safety
///
/// Dropping the future may leave the setting made or not: call it again,
/// or roll the transaction back (dropping it does).
pub async fn set_statement_timeout(conn: &mut PgConnection) -> Result<(), PgError> {
    let Some(deadline) = Deadline::current() else {
        return Ok(());
    };
    let Some(millis) = timeout_millis(deadline.remaining()) else {
        return Err(PgError::DeadlineExceeded {
            deadline: DeadlineExceeded::new(),
            cancelled: None,
        });
    };
    // A deadline further away than Postgres can count (about 24.8 days)
    // bounds nothing a statement does.
    let Ok(millis) = i32::try_from(millis) else {
        return Ok(());
    };
    // `SET LOCAL`, as the function that takes a bind parameter, and never
    // longer than the timeout in force before (the role's, or one the
    // caller set in the transaction). The value this function set last is
    // kept for the transaction in a setting of its own, with the one in
    // force before it: while `statement_timeout` is still that value, the
    // one before is what bounds, so a later call is not held to an earlier
    // call's shorter deadline. `OFFSET 0` keeps the planner from folding
    // the readings into the `set_config` calls, which would read the
    // settings the calls before them had just changed. Unnamed (not kept
    // prepared), so a transaction-mode PgBouncer passes it.
    sqlx::query(
        "SELECT set_config('timebox.statement_timeout_before', before::text, true), \
         set_config('timebox.statement_timeout_set', chosen::text, true), \
         set_config('statement_timeout', chosen::text, true) \
         FROM (SELECT before, LEAST(NULLIF(before, 0), $1) AS chosen FROM \
         (SELECT CASE WHEN setting::int = ours THEN kept ELSE setting::int END AS before \
         FROM pg_settings, \
         (SELECT NULLIF(current_setting('timebox.statement_timeout_set', true), '')::int AS ours, \
         NULLIF(current_setting('timebox.statement_timeout_before', true), '')::int AS kept) AS last \
         WHERE name = 'statement_timeout' OFFSET 0) AS in_force) AS timeout",
    )
    .bind(millis)
    .persistent(false)
    .execute(conn)
    .await?;
    Ok(())
}

/// The `statement_timeout` for `left`: less the reply allowance, whole
/// milliseconds rounded down, at least 1; `None` when nothing is left.
fn timeout_millis(left: Duration) -> Option<u128> {
    (!left.is_zero()).then(|| left.saturating_sub(REPLY_ALLOWANCE).as_millis().max(1))
}

/// Why a deadline-scoped Postgres call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum PgError {
    /// Postgres stopped a statement at the deadline (a `57014` that arrived
    /// once the current deadline had passed or was within 51 ms of it: the
    /// statement timeout is the time left less 50 ms), or the deadline passed inside
    /// the transaction before its statement timeout could be set. Its
    /// `source()` is the [`DeadlineExceeded`]; it answers `504`.
    DeadlineExceeded {
        /// What the deadline said.
        deadline: DeadlineExceeded,
        /// The server's error; `None` when the deadline had passed before a
        /// statement timeout could be set.
        cancelled: Option<sqlx::Error>,
    },
    /// No transaction: the deadline passed first, or the pool failed, or
    /// (from [`begin`]) `BEGIN` did (see [`PoolWaitError`]).
    Pool(PoolWaitError),
    /// Any other database error, a `57014` with time left included.
    Database(sqlx::Error),
}

impl PgError {
    /// Whether the deadline ended the call.
    #[must_use]
    pub fn is_deadline_exceeded(&self) -> bool {
        matches!(
            self,
            PgError::DeadlineExceeded { .. } | PgError::Pool(PoolWaitError::DeadlineExceeded(_))
        )
    }
}

impl From<sqlx::Error> for PgError {
    /// Reads the current deadline: a `57014` that arrives within 51 ms of it
    /// (the reply allowance and the rounding) or after it is the deadline's.
    fn from(err: sqlx::Error) -> Self {
        let cancelled = err
            .as_database_error()
            .and_then(|db| db.code())
            .is_some_and(|code| code == QUERY_CANCELED);
        let ours = Deadline::current().is_some_and(|deadline| deadline.remaining() <= OURS_WITHIN);
        if cancelled && ours {
            PgError::DeadlineExceeded {
                deadline: DeadlineExceeded::new(),
                cancelled: Some(err),
            }
        } else {
            PgError::Database(err)
        }
    }
}

impl From<PoolWaitError> for PgError {
    fn from(err: PoolWaitError) -> Self {
        PgError::Pool(err)
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgError::DeadlineExceeded {
                cancelled: Some(_), ..
            } => f.write_str("Postgres stopped the statement at the deadline"),
            PgError::DeadlineExceeded {
                cancelled: None, ..
            } => f.write_str("deadline exceeded inside the transaction"),
            PgError::Pool(err) => fmt::Display::fmt(err, f),
            PgError::Database(_) => f.write_str("database error"),
        }
    }
}

impl Error for PgError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            PgError::DeadlineExceeded { deadline, .. } => Some(deadline),
            PgError::Pool(err) => err.source(),
            PgError::Database(err) => Some(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_leaves_the_allowance_rounds_down_and_is_at_least_one() {
        assert_eq!(timeout_millis(Duration::from_micros(300_900)), Some(250));
        assert_eq!(timeout_millis(Duration::from_micros(51_999)), Some(1));
        assert_eq!(timeout_millis(Duration::from_micros(1)), Some(1));
        assert_eq!(timeout_millis(Duration::ZERO), None);
    }
}
