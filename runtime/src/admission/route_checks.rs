//! [`RouteChecks`]: the deadline checks of the methods the gRPC layer
//! learns of only by name.

use std::sync::Arc;

use super::DeadlineCheck;
use crate::bounded_map::BoundedMap;
use crate::config::{AdmissionConfig, DeadlineCheck as CheckMode};

/// One [`DeadlineCheck`] per route name, made on the route's first request
/// with the server's admission settings; at most `max` routes, since a name
/// may come from a caller.
#[derive(Debug)]
pub(crate) struct RouteChecks {
    admission: AdmissionConfig,
    routes: BoundedMap<Arc<DeadlineCheck>>,
}

impl RouteChecks {
    /// The checks of `admission`; `None` when the check is off.
    pub(crate) fn new(admission: &AdmissionConfig, max: usize) -> Option<Self> {
        (admission.deadline_check != CheckMode::Off).then(|| Self {
            admission: admission.clone(),
            routes: BoundedMap::new(max),
        })
    }

    /// The check of `route`, if it has one yet.
    pub(crate) fn find(&self, route: &str) -> Option<Arc<DeadlineCheck>> {
        self.routes.get(route)
    }

    /// The check of `route`, made the first time; `None` past `max` routes.
    pub(crate) fn get(&self, route: &str) -> Option<Arc<DeadlineCheck>> {
        self.routes.get_or_make(route, || {
            Arc::new(DeadlineCheck::new(&self.admission, None))
        })
    }
}
