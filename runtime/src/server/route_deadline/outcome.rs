//! How a route's future ends ([`Answer`]), and what its output says
//! ([`Outcome`]).

use axum::response::Response;

use crate::observe::Stage;
use crate::problem::UntoldDeadline;

/// How a [`State`](super::State) ends: with its future's output, or with the timeout
/// response after the future was dropped.
pub(crate) enum Answer<T> {
    Inner(T),
    Timeout(Response),
    Refused(Response),
}

/// Whether a route's answer is a success, whose latency the route learns
/// its service time from (A1): a 2xx or 3xx response.
pub(crate) trait Outcome {
    fn is_success(&self) -> bool;

    /// Takes the mark of a deadline that passed in the work and that
    /// nothing has told yet ([`UntoldDeadline`]): its stage.
    fn take_untold(&mut self) -> Option<Stage>;
}

impl<B> Outcome for http::Response<B> {
    fn is_success(&self) -> bool {
        self.status().is_success() || self.status().is_redirection()
    }

    fn take_untold(&mut self) -> Option<Stage> {
        if !self.status().is_server_error() {
            return None;
        }
        let UntoldDeadline(stage) = self.extensions_mut().remove::<UntoldDeadline>()?;
        Some(stage)
    }
}

impl<B, E> Outcome for Result<http::Response<B>, E> {
    fn is_success(&self) -> bool {
        self.as_ref().is_ok_and(Outcome::is_success)
    }

    fn take_untold(&mut self) -> Option<Stage> {
        self.as_mut().ok().and_then(Outcome::take_untold)
    }
}
