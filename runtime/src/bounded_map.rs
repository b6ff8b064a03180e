//! [`BoundedMap`]: one value per key, made on first use, for at most a fixed
//! number of keys: the per-host and per-route state of a client or server,
//! whose keys may come from outside (hosts a client is pointed at, methods
//! a caller names), so the table must not grow without bound.

use std::collections::BTreeMap;
use std::sync::{PoisonError, RwLock};

/// At most `max` keys, each with its `V` (cheap to clone: an `Arc` or a
/// handle). Lookups of known keys take a read lock only. Ordered, so
/// nothing about it depends on a random hash seed (simulations replay).
#[derive(Debug)]
pub(crate) struct BoundedMap<V> {
    entries: RwLock<BTreeMap<Box<str>, V>>,
    max: usize,
}

impl<V: Clone> BoundedMap<V> {
    /// An empty map that takes at most `max` keys.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            entries: RwLock::new(BTreeMap::new()),
            max,
        }
    }

    /// The value of `key`, if it has one.
    pub(crate) fn get(&self, key: &str) -> Option<V> {
        // A poisoned lock only means another thread panicked between two
        // complete map operations; the map itself is whole.
        self.entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// The value of `key`, made by `make` the first time; `None` when the
    /// map is full and `key` is not in it.
    pub(crate) fn get_or_make(&self, key: &str, make: impl FnOnce() -> V) -> Option<V> {
        if let Some(found) = self.get(key) {
            return Some(found);
        }
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        // Another caller may have added the key between the two locks.
        if let Some(found) = entries.get(key) {
            return Some(found.clone());
        }
        if entries.len() >= self.max {
            return None;
        }
        let made = make();
        entries.insert(key.into(), made.clone());
        Some(made)
    }

    /// The number of keys (at most `max`).
    pub(crate) fn len(&self) -> usize {
        self.entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_once_and_no_key_past_the_bound_gets_one() {
        let map = BoundedMap::new(2);
        let mut made = 0;
        let mut make = |value| {
            made += 1;
            value
        };
        assert_eq!(map.get_or_make("a", || make(1)), Some(1));
        assert_eq!(map.get_or_make("a", || make(9)), Some(1));
        assert_eq!(map.get_or_make("b", || make(2)), Some(2));
        assert_eq!(map.get_or_make("c", || make(3)), None);
        assert_eq!(map.get_or_make("b", || make(9)), Some(2));
        assert_eq!((map.len(), made), (2, 2));
    }
}
