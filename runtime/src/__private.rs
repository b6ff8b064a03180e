//! What the macros' expansions reach. Not a public API: it may change in any
//! release.

#[cfg(feature = "sim")]
pub use crate::sim::runner as sim;

/// For the route macros.
#[cfg(feature = "server")]
pub mod server {
    pub use crate::server::respond::{DeadlineAwareKind, PlainKind};
    pub use crate::server::{Route, RouteTimeout};
    pub use axum::extract::{FromRequest, FromRequestParts};
    pub use axum::response::Response;
    pub use http::Method;

    /// Passes a handler's future through when it is `Send`, as axum needs:
    /// a handler whose future is not fails here, with rustc's account of
    /// the value held across an `.await`.
    pub fn handler_future_must_be_send<F: core::future::Future + Send>(future: F) -> F {
        future
    }

    /// Implemented by the hidden companion of every route handler, for every
    /// state `S` its extractors accept; `M` is axum's marker of the last
    /// extractor, `()` for a handler without arguments.
    pub trait RouteDef<S, M> {
        /// The handler as a route.
        fn route() -> crate::server::Route<S>;
    }
}
