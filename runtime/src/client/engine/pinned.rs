//! [`pinned_deadline`]: the deadline of a call, shortened by a deadline
//! header its caller set.

use http::{HeaderMap, HeaderValue};

use crate::deadline::header::DEADLINE_HEADER;
use crate::deadline::{Deadline, Format, Formats};

/// The call's deadline, and the caller's own header when it set the
/// deadline.
pub(super) struct Pinned {
    pub(super) deadline: Option<Deadline>,
    /// Sent as it was set on the first attempt, when the client writes its
    /// format; retries and hops send what is left of it.
    pub(super) as_set: Option<(Format, HeaderValue)>,
}

/// The call's deadline: the task's, shortened by a deadline header the
/// caller set, in timebox's format or in any the client writes
/// (`http.client.deadline_headers`). Under a deadline the client writes
/// each of those formats itself on every attempt, so exactly one value of
/// each goes out, and none grants more time than the caller gave. With
/// `send_header` off (`send_deadline_header`) the headers are left as they
/// are. A header that does not parse, or is set more than once, grants
/// nothing, as on a request a server receives; a `warn!` line names it.
pub(super) fn pinned_deadline(
    headers: &mut HeaderMap,
    send_header: bool,
    written: Formats,
) -> Pinned {
    let task = Deadline::current();
    if !send_header {
        return Pinned {
            deadline: task,
            as_set: None,
        };
    }
    let read = written.with(Format::Timebox);
    let caller = read
        .set_by_caller(headers)
        .map(|(left, format, value)| (Deadline::after(left), format, value));
    // Timebox's own header is the client's to write. The others are
    // replaced on each attempt when there is a deadline; with none, a value
    // that grants none (an Envoy 0) goes out as the caller set it.
    headers.remove(DEADLINE_HEADER);
    match (task, caller) {
        (Some(task), Some((caller, _, _))) if task < caller => Pinned {
            deadline: Some(task),
            as_set: None,
        },
        (_, Some((caller, format, value))) => Pinned {
            deadline: Some(caller),
            as_set: Some((format, value)),
        },
        (task, None) => Pinned {
            deadline: task,
            as_set: None,
        },
    }
}
