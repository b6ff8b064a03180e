//! [`Learn`]: what a method learns its service time from (A1): the
//! latency of each call that ends with `OK`.

use std::sync::Arc;

use http::{HeaderMap, Uri};
use tokio::time::Instant;

use crate::admission::{DeadlineCheck, RouteChecks};

/// A method's check and when its call started: a call that ends with
/// `grpc-status: 0` (in its trailers, or in a Trailers-Only head) is a
/// success whose latency, to that end, the method learns. A streamed
/// response is learnt whole, so a method is judged by how long its calls
/// take to finish, not by how soon their first message comes.
#[derive(Debug)]
pub(crate) struct Learn {
    check: Learner,
    start: Instant,
}

/// The check a call's success goes to.
#[derive(Debug)]
enum Learner {
    /// The method's.
    Known(Arc<DeadlineCheck>),
    /// The method has none yet: its first success makes it (unless the
    /// table is full).
    First(Arc<RouteChecks>, Uri),
}

impl Learn {
    /// Learning for a call to `uri` that started at `start`: for `check`,
    /// the method's, else for the one its first success makes in `checks`.
    pub(crate) fn new(
        check: Option<&Arc<DeadlineCheck>>,
        checks: &Arc<RouteChecks>,
        uri: &Uri,
        start: Instant,
    ) -> Self {
        let check = match check {
            Some(check) => Learner::Known(Arc::clone(check)),
            None => Learner::First(Arc::clone(checks), uri.clone()),
        };
        Self { check, start }
    }

    /// Whether `headers` (a response head) end the call: a Trailers-Only
    /// answer, whose status is in its head.
    pub(crate) fn ends_the_call(headers: &HeaderMap) -> bool {
        headers.contains_key("grpc-status")
    }

    /// The call ended now with the status in `headers` (trailers, or a
    /// Trailers-Only head): learnt when it is `OK`.
    pub(crate) fn ended(self, headers: &HeaderMap) {
        let ok = headers
            .get("grpc-status")
            .is_some_and(|code| code.as_bytes() == b"0");
        if !ok {
            return;
        }
        let check = match self.check {
            Learner::Known(check) => check,
            Learner::First(checks, uri) => match checks.get(uri.path()) {
                Some(check) => check,
                None => return,
            },
        };
        check.record_success(self.start);
    }
}
