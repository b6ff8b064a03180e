//! [`BoundedLabels`]: a bounded set of attribute values (a client's `host`,
//! a gRPC server's `route`).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::Label;

/// The value every value past the first `max - 1` shares.
pub(crate) const OTHER: &str = "other";

/// The values one part gives an attribute of its events: each of the first
/// `max - 1` values seen its own, every later one [`OTHER`], so no input
/// (a client calling many hosts, callers inventing method names) gives
/// more than `max` values.
#[derive(Debug)]
pub(crate) struct BoundedLabels {
    max: usize,
    known: Mutex<HashMap<String, Label>>,
    other: Label,
}

impl BoundedLabels {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            known: Mutex::new(HashMap::new()),
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
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(label) = known.get(value) {
            return label.clone();
        }
        // `other` is one of the `max` values.
        if known.len() + 1 >= self.max {
            return self.other.clone();
        }
        let label: Label = value.into();
        known.insert(value.to_owned(), label.clone());
        label
    }
}
