//! [`RouteDeadlineLayer`]: one route's deadline around its handler.

mod admit;
mod claim;
mod expiry;
mod future;
mod handler;
mod layer;
mod outcome;
mod service;
mod state;

pub(crate) use admit::{admit, Learn};
pub(crate) use claim::{Probe, Probed, RouteClaim};
pub(crate) use expiry::{Expiry, RouteName};
pub use future::RouteDeadlineFuture;
pub(crate) use handler::{DeadlineHandler, RouteSettings, UnappliedLimit};
pub use layer::RouteDeadlineLayer;
pub(crate) use outcome::{Answer, Outcome};
pub use service::RouteDeadline;
pub(crate) use state::State;
