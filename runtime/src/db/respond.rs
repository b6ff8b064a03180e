//! How the database errors answer a request (feature `server`): a pool
//! wait the deadline cut short is a `503` (S11), a statement Postgres
//! stopped at the deadline a `504`, any other database error a `500`.

use std::error::Error;

use axum::response::{IntoResponse, Response};
use http::StatusCode;

#[cfg(feature = "postgres")]
use super::pg::PgError;
use super::PoolWaitError;
use crate::observe::capped;
#[cfg(feature = "postgres")]
use crate::observe::Stage;
use crate::problem;

impl IntoResponse for PoolWaitError {
    /// `503` with `Retry-After` and
    /// [`DeadlineCancelled`](crate::server::DeadlineCancelled) for a wait the
    /// deadline cut short; `500` for a database failure, whose details are
    /// logged, not sent.
    fn into_response(self) -> Response {
        match self {
            PoolWaitError::DeadlineExceeded(_) => cut_short_answer(),
            PoolWaitError::Pool(err) => {
                database_error(&err);
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            }
        }
    }
}

/// Logs a database error: its SQLSTATE, and its message escaped (what a
/// statement quoted of its input, a caller's value with newlines, cannot
/// forge a line) and capped (nor fill the log: Postgres quotes the whole
/// value), without the `detail` its `Debug` shows (`Failing row contains
/// (..)`: a row's values).
fn database_error(err: &sqlx::Error) {
    let code = err.as_database_error().and_then(|db| db.code());
    let message = err.to_string();
    tracing::error!(
        code = code.as_deref(),
        error = ?capped(&message),
        "database error"
    );
}

/// The answer to a pool wait the deadline cut short (S11): `503` with
/// `Retry-After` and [`DeadlineCancelled`](crate::server::DeadlineCancelled).
pub(crate) fn cut_short_answer() -> Response {
    problem::without_request(|entropy| problem::wait_cancelled("a database connection", entropy))
}

/// Whether `err`'s `source()` chain holds a pool wait the deadline cut short:
/// the route macros answer it as S11 says, not as a deadline error (S6).
pub(crate) fn holds_cut_short_wait(err: &(dyn Error + 'static)) -> bool {
    let mut link = Some(err);
    while let Some(err) = link {
        if let Some(PoolWaitError::DeadlineExceeded(_)) = err.downcast_ref::<PoolWaitError>() {
            return true;
        }
        // A `PgError`'s `source()` goes past the `PoolWaitError` it holds.
        #[cfg(feature = "postgres")]
        if let Some(PgError::Pool(PoolWaitError::DeadlineExceeded(_))) =
            err.downcast_ref::<PgError>()
        {
            return true;
        }
        link = err.source();
    }
    false
}

#[cfg(feature = "postgres")]
impl IntoResponse for PgError {
    /// `504` for a statement stopped at the deadline (told by the route
    /// as a deadline exceeded at the `outbound` stage); what
    /// [`PoolWaitError`] answers for the pool; `500` for a database error,
    /// whose details are logged, not sent.
    fn into_response(self) -> Response {
        match self {
            PgError::DeadlineExceeded { .. } => {
                problem::untold(problem::deadline_error(), Stage::Outbound)
            }
            PgError::Pool(err) => err.into_response(),
            PgError::Database(err) => {
                database_error(&err);
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            }
        }
    }
}
