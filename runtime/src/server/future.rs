//! The response futures of the server's tower services, each named for
//! its service.

pub use super::gate::ShutdownGateFuture;
pub use super::route_deadline::RouteDeadlineFuture;
pub use super::session::MapStatusFuture;
pub use super::timebox_layer::TimeboxFuture;
