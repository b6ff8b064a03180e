//! [`HostLabels`]: the bounded set of `host` attribute values of one client.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::Label;

/// The value every host past the first `max_hosts` shares.
pub(crate) const OTHER_HOST: &str = "other";

/// The `host` values one client gives its events: each of its first
/// `max_hosts - 1` hosts its own, every later one [`OTHER_HOST`], so a
/// client that calls many hosts gives at most `max_hosts` values.
#[derive(Debug)]
pub(crate) struct HostLabels {
    max: usize,
    known: Mutex<HashMap<String, Label>>,
    other: Label,
}

impl HostLabels {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            known: Mutex::new(HashMap::new()),
            other: OTHER_HOST.into(),
        }
    }

    /// The label of the host key `host`.
    pub(crate) fn of(&self, host: &str) -> Label {
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(label) = known.get(host) {
            return label.clone();
        }
        // `other` is one of the `max` values.
        if known.len() + 1 >= self.max {
            return self.other.clone();
        }
        let label: Label = host.into();
        known.insert(host.to_owned(), label.clone());
        label
    }
}
