//! What [`TimeboxLayer`](super::TimeboxLayer) learnt of each route: whether it has a rule of
//! its own, and the deadline check of a plain one.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use http::Method;

use crate::admission::DeadlineCheck;
use crate::bounded_map::BoundedMap;
use crate::config::{AdmissionConfig, DeadlineCheck as CheckMode};

/// What the layer learnt of its routes, one table per method: the methods
/// of one path can have different rules (a macro's `GET` beside a plain
/// `POST`) and different service times. `HEAD` shares `GET`'s, as axum
/// answers it with the `GET` handler; methods beyond the standard ones
/// share one table.
#[derive(Debug)]
pub(super) struct RouteKinds {
    /// The admission settings a plain route's check is made with; `None`
    /// when the check is off.
    pub(super) check: Option<AdmissionConfig>,
    tables: [BoundedMap<Arc<PlainRoute>>; METHOD_TABLES],
}

/// The standard methods, `HEAD` with `GET`, and one for the others.
const METHOD_TABLES: usize = 9;

impl RouteKinds {
    pub(super) fn new(admission: &AdmissionConfig) -> Self {
        Self {
            check: (admission.deadline_check != CheckMode::Off).then(|| admission.clone()),
            tables: std::array::from_fn(|_| BoundedMap::new(MAX_ROUTES)),
        }
    }

    /// What the layer knows of `method` on `route`, made the first time;
    /// `None` past [`MAX_ROUTES`].
    pub(super) fn get(&self, method: &Method, route: &str) -> Option<Arc<PlainRoute>> {
        let table = match *method {
            Method::GET | Method::HEAD => 0,
            Method::POST => 1,
            Method::PUT => 2,
            Method::DELETE => 3,
            Method::PATCH => 4,
            Method::OPTIONS => 5,
            Method::TRACE => 6,
            Method::CONNECT => 7,
            _ => 8,
        };
        self.tables[table].get_or_make(route, || {
            Arc::new(PlainRoute {
                check: self
                    .check
                    .as_ref()
                    .map(|admission| Arc::new(DeadlineCheck::new(admission, None))),
                kind: AtomicU8::new(UNKNOWN),
            })
        })
    }
}

/// One route for one method: whether it is a plain one (a route with a rule
/// of its own checks for itself and tells its own deadline), learnt from
/// its requests, and the deadline check it has as a plain one.
#[derive(Debug)]
pub(super) struct PlainRoute {
    pub(super) check: Option<Arc<DeadlineCheck>>,
    kind: AtomicU8,
}

const UNKNOWN: u8 = 0;
const PLAIN: u8 = 1;
const RULED: u8 = 2;

/// Most routes a layer keeps: far more than a router has.
const MAX_ROUTES: usize = 1024;

impl PlainRoute {
    pub(super) fn is_plain(&self) -> bool {
        self.kind.load(Ordering::Relaxed) == PLAIN
    }

    /// A route rule took a request over: the route checks for itself, for
    /// good (an answer from a middleware before it never makes it plain).
    pub(super) fn ruled(&self) {
        self.kind.store(RULED, Ordering::Relaxed);
    }

    /// A request its route answered with no route rule taking it over: the
    /// route is a plain one, unless a request showed it has a rule.
    pub(super) fn plain(&self) {
        let _ = self
            .kind
            .compare_exchange(UNKNOWN, PLAIN, Ordering::Relaxed, Ordering::Relaxed);
    }
}
