//! [`BoundedLabels`]: a bounded set of attribute values (a client's `host`,
//! a gRPC server's `route`).

use super::Label;
use crate::bounded_map::BoundedMap;

/// The value every value past the first `max - 1` shares.
pub(crate) const OTHER: &str = "other";

/// The values one part gives an attribute of its events: each of the first
/// `max - 1` values seen its own, every later one [`OTHER`], so no input
/// (a client calling many hosts, callers inventing method names) gives
/// more than `max` values.
#[derive(Debug)]
pub(crate) struct BoundedLabels {
    known: BoundedMap<Label>,
    other: Label,
}

impl BoundedLabels {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            // `other` is one of the `max` values.
            known: BoundedMap::new(max.saturating_sub(1)),
            other: OTHER.into(),
        }
    }

    /// The label every value past the bound shares.
    #[cfg(feature = "grpc")]
    pub(crate) fn other(&self) -> Label {
        self.other.clone()
    }

    /// The label of `value`.
    pub(crate) fn of(&self, value: &str) -> Label {
        self.known
            .get_or_make(value, || value.into())
            .unwrap_or_else(|| self.other.clone())
    }
}
