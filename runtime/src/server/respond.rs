//! S6: a handler's deadline error becomes a 504, whatever its own
//! `IntoResponse` says.
//!
//! The route macros wrap each handler's output in [`Respond`] and call
//! `timebox_respond` on a reference to it. Method lookup tries
//! [`ViaDeadlineError`] (implemented for `Respond<Result<T, E>>` with
//! `E: Error`) before [`ViaIntoResponse`] (implemented for `&Respond<T>`), so
//! a `Result` whose error is an `Error` is checked with
//! [`is_deadline_exceeded`], and every other output converts as usual. The
//! check runs only on the error path.

use std::cell::Cell;
use std::error::Error;

use axum::response::{IntoResponse, Response};

use crate::deadline::is_deadline_exceeded;

use crate::problem;

/// A handler's output, on its way to a response.
pub struct Respond<T>(Cell<Option<T>>);

impl<T> std::fmt::Debug for Respond<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Respond").finish_non_exhaustive()
    }
}

impl<T> Respond<T> {
    /// Wraps a handler's output.
    pub fn new(output: T) -> Self {
        Self(Cell::new(Some(output)))
    }

    fn take(&self) -> T {
        self.0
            .take()
            .expect("a handler's output is turned into a response once")
    }
}

/// Chosen for `Result<T, E>` where `E` is an `Error`: a deadline error
/// anywhere in its `source()` chain answers 504.
pub trait ViaDeadlineError {
    /// The response for the handler's output.
    fn timebox_respond(&self) -> Response;
}

impl<T, E> ViaDeadlineError for Respond<Result<T, E>>
where
    T: IntoResponse,
    E: IntoResponse + Error + 'static,
{
    fn timebox_respond(&self) -> Response {
        match self.take() {
            Ok(output) => output.into_response(),
            Err(err) if is_deadline_exceeded(&err) => problem::deadline_error(),
            Err(err) => err.into_response(),
        }
    }
}

/// Chosen for every other output: its own `IntoResponse`.
pub trait ViaIntoResponse {
    /// The response for the handler's output.
    fn timebox_respond(&self) -> Response;
}

impl<T: IntoResponse> ViaIntoResponse for &Respond<T> {
    fn timebox_respond(&self) -> Response {
        self.take().into_response()
    }
}
