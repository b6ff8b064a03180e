//! What the macros' expansions reach. Not a public API: it may change in any
//! release.

#[cfg(feature = "sim")]
pub use crate::sim::runner as sim;
