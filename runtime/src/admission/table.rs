//! [`RouteTable`]: per-route state learnt from the requests, for routes the
//! layer learns of only by name (a matched route template, a gRPC method).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

/// One `V` per route name, made on first use; at most `max` routes (a
/// route after that has none), since a name may come from a caller.
#[derive(Debug)]
pub(crate) struct RouteTable<V> {
    routes: RwLock<HashMap<Box<str>, Arc<V>>>,
    max: usize,
}

impl<V> RouteTable<V> {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            routes: RwLock::new(HashMap::new()),
            max,
        }
    }

    /// The state of `route`, made by `make` the first time.
    pub(crate) fn get(&self, route: &str, make: impl FnOnce() -> V) -> Option<Arc<V>> {
        if let Some(found) = self
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(route)
        {
            return Some(Arc::clone(found));
        }
        let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = routes.get(route) {
            return Some(Arc::clone(found));
        }
        if routes.len() >= self.max {
            return None;
        }
        let made = Arc::new(make());
        routes.insert(route.into(), Arc::clone(&made));
        Some(made)
    }
}
