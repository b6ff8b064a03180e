//! [`ShutdownToken`] and [`DrainToken`] as axum extractors.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use http::request::Parts;

use crate::shutdown::{DrainToken, ShutdownToken};

/// Extracts the server's [`ShutdownToken`], attached to every request by
/// [`serve`](super::serve()). A handler served some other way (a unit test, a
/// plain `axum::serve`) gets a token that is never cancelled.
///
/// ```
/// use timebox::shutdown::ShutdownToken;
///
/// async fn export(shutdown: ShutdownToken) -> &'static str {
///     for _chunk in 0..10 {
///         if shutdown.is_cancelled() {
///             return "partial";
///         }
///         // .. one chunk of work ..
///     }
///     "complete"
/// }
/// # let _ = axum::Router::<()>::new().route("/export", axum::routing::get(export));
/// ```
impl<S: Send + Sync> FromRequestParts<S> for ShutdownToken {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<ShutdownToken>()
            .cloned()
            .unwrap_or_default())
    }
}

/// Extracts the server's [`DrainToken`] (phase 2 of a shutdown), attached to
/// every request by [`serve`](super::serve()); give it to
/// [`SseStream::drain`](super::sse::SseStream::drain). Outside `serve`, a
/// token that is never cancelled.
impl<S: Send + Sync> FromRequestParts<S> for DrainToken {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<DrainToken>()
            .cloned()
            .unwrap_or_default())
    }
}
