//! A handler's deadline error becomes a 504, whatever its own
//! `IntoResponse` says.
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

use crate::deadline::is_deadline_exceeded;
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
    /// chain answers 504.
    #[allow(clippy::unused_self)] // the receiver is the tag method lookup chose
    pub fn respond<T, E>(self, output: Result<T, E>) -> Response
    where
        T: IntoResponse,
        E: IntoResponse + Error + 'static,
    {
        match output {
            Ok(output) => output.into_response(),
            Err(err) if is_deadline_exceeded(&err) => problem::deadline_error(),
            Err(err) => err.into_response(),
        }
    }
}

impl Plain {
    /// The response: the output's own.
    #[allow(clippy::unused_self)] // the receiver is the tag method lookup chose
    pub fn respond<T: IntoResponse>(self, output: T) -> Response {
        output.into_response()
    }
}
