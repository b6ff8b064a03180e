//! What the macros' expansions reach. Not a public API: it may change in any
//! release.

#[cfg(feature = "sim")]
pub use crate::sim::runner as sim;

/// For the route macros.
#[cfg(feature = "server")]
pub mod server {
    pub use crate::server::respond::{Respond, ViaDeadlineError, ViaIntoResponse};
    pub use axum::handler::Handler;
    pub use axum::response::Response;
    pub use http::Method;

    /// The future of a route handler, boxed so that its type can be named.
    pub type BoxedResponse =
        std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send + 'static>>;

    /// Implemented by the hidden companion of every route handler, for every
    /// state `S` its extractors accept; `M` is axum's extractor marker.
    pub trait RouteDef<S, M> {
        /// The handler as a route.
        fn route() -> crate::server::Route<S>;
    }
}
