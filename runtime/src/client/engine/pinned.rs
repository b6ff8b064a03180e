//! [`pinned_deadline`]: the deadline of a call, shortened by a deadline
//! header its caller set.

use http::{HeaderMap, HeaderValue};

use crate::deadline::header::{self, DEADLINE_HEADER};
use crate::deadline::Deadline;

/// The call's deadline, and the caller's own header value when it set
/// the deadline.
pub(super) struct Pinned {
    pub(super) deadline: Option<Deadline>,
    /// Sent as it was set on the first attempt; retries and hops send what
    /// is left of it.
    pub(super) as_set: Option<HeaderValue>,
}

/// The call's deadline: the task's, shortened by a deadline header the
/// caller set. The caller's header is removed; the client sends one
/// value itself on every attempt, so exactly one goes out.
pub(super) fn pinned_deadline(headers: &mut HeaderMap, send_header: bool) -> Pinned {
    let task = Deadline::current();
    if !send_header {
        return Pinned {
            deadline: task,
            as_set: None,
        };
    }
    let caller = header::from_headers(headers).map(Deadline::after);
    let value = headers.remove(DEADLINE_HEADER);
    match (task, caller) {
        (Some(task), Some(caller)) if task < caller => Pinned {
            deadline: Some(task),
            as_set: None,
        },
        (_, Some(caller)) => Pinned {
            deadline: Some(caller),
            as_set: value,
        },
        (task, None) => Pinned {
            deadline: task,
            as_set: None,
        },
    }
}
