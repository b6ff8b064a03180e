//! [`DeadlineCancelled`]: the mark of a response the deadline decided.

/// A response extension on every answer timebox gave because a deadline ran
/// out: the 503 of a route timeout, the 504 of a handler's deadline error, the
/// 503 of a pool wait cut short.
///
/// Layers outside the handler read it to undo what a cancelled handler
/// started: a session layer must not save the session changes of a cancelled
/// handler (see [`SaveSessionUnlessCancelledLayer`](super::SaveSessionUnlessCancelledLayer)).
/// A 503 that a handler returns itself does not carry it.
///
/// ```
/// use axum::response::Response;
/// use timebox::server::DeadlineCancelled;
///
/// fn was_cancelled(response: &Response) -> bool {
///     response.extensions().get::<DeadlineCancelled>().is_some()
/// }
/// # assert!(!was_cancelled(&Response::new(axum::body::Body::empty())));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct DeadlineCancelled;
