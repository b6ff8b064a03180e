//! [`TimeboxLayer`]: the outer layer of a timebox router.

mod future;
mod layer;
mod route_kinds;
mod service;

pub use future::TimeboxFuture;
pub use layer::TimeboxLayer;
pub use service::TimeboxService;
