//! A handler's deadline error becomes a 504, whatever its own
//! `IntoResponse` says (S6); a pool wait the deadline cut short, a 503
//! (S11).
//!
//! The route macros turn each handler's output into a response with
//! `(&output).timebox_kind().respond(output)`. Method lookup finds
//! [`DeadlineAwareKind`] (implemented for `Result<T, E>` with `E: Error`)
//! before [`PlainKind`] (implemented for `&T`, one autoref further), so a
//! `Result` whose error is an `Error` goes through [`DeadlineAware`], which
//! checks the error with [`is_deadline_exceeded`], and every other output
//! through [`Plain`]. Choosing the kind asks nothing of the output, so an
//! output that is not a response fails at `respond`'s `IntoResponse`
//! bound: the error names the handler's return type and `IntoResponse`.
//! The check runs only on the error path.

use std::error::Error;

use axum::response::{IntoResponse, Response};

use crate::deadline::{is_deadline_exceeded, DeadlineExceeded};
use crate::observe::Stage;
use crate::problem;

/// The kind of a `Result` whose error is an `Error`.
#[derive(Debug, Clone, Copy)]
pub struct DeadlineAware;

/// The kind of every other handler output.
#[derive(Debug, Clone, Copy)]
pub struct Plain;

/// Chosen for `Result<T, E>` where `E` is an `Error`.
pub trait DeadlineAwareKind {
    /// The kind of the output.
    fn timebox_kind(&self) -> DeadlineAware {
        DeadlineAware
    }
}

impl<T, E: Error + 'static> DeadlineAwareKind for Result<T, E> {}

/// Chosen for every other output.
pub trait PlainKind {
    /// The kind of the output.
    fn timebox_kind(&self) -> Plain {
        Plain
    }
}

impl<T> PlainKind for &T {}

impl DeadlineAware {
    /// The response: a deadline error anywhere in the error's `source()`
    /// chain answers 504, a pool wait the deadline cut short 503.
    #[allow(clippy::unused_self)] // the receiver is the tag method lookup chose
    pub fn respond<T, E>(self, output: Result<T, E>) -> Response
    where
        T: IntoResponse,
        E: IntoResponse + Error + 'static,
    {
        match output {
            Ok(output) => output.into_response(),
            Err(err) if is_deadline_exceeded(&err) => deadline_answer(&err),
            Err(err) => err.into_response(),
        }
    }
}

/// The answer to a handler's deadline error: 504 (S6), except for a pool
/// wait the deadline cut short, which answers as S11 says (503). The route
/// tells the deadline, unless the part that returned it told it already.
fn deadline_answer(err: &(dyn Error + 'static)) -> Response {
    #[cfg(feature = "sqlx")]
    if crate::db::holds_cut_short_wait(err) {
        return crate::db::cut_short_answer();
    }
    match untold_stage(err) {
        Some(stage) => problem::untold(problem::deadline_error(), stage),
        None => problem::deadline_error(),
    }
}

/// The stage a handler's deadline error is told at: `None` when the part
/// that returned it told it (an outbound call, see
/// [`DeadlineExceeded::told`]); `outbound` for a statement Postgres
/// stopped; `handler` for the rest.
fn untold_stage(err: &(dyn Error + 'static)) -> Option<Stage> {
    if crate::deadline::find(err).is_some_and(DeadlineExceeded::was_told) {
        return None;
    }
    #[cfg(feature = "postgres")]
    {
        let mut link = Some(err);
        while let Some(err) = link {
            if err.is::<crate::db::pg::PgError>() {
                return Some(Stage::Outbound);
            }
            link = err.source();
        }
    }
    Some(Stage::Handler)
}

/// `504` with [`DeadlineCancelled`](crate::server::DeadlineCancelled), the
/// answer a route gives a handler's deadline error (S6), so a handler can
/// return what [`bounded`](crate::deadline::bounded()) gave with `?`,
/// with no error type of its own. Under a route's deadline, or a
/// `TimeboxLayer` with a global deadline, the deadline passing is told
/// (O1) at the `handler` stage, unless the part that returned it told it
/// already.
impl IntoResponse for DeadlineExceeded {
    fn into_response(self) -> Response {
        deadline_answer(&self)
    }
}

impl Plain {
    /// The response: the output's own.
    #[allow(clippy::unused_self)] // the receiver is the tag method lookup chose
    pub fn respond<T: IntoResponse>(self, output: T) -> Response {
        output.into_response()
    }
}
