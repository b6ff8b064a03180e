//! [`pinned_deadline`]: the deadline of a call, shortened by a deadline
//! header its caller set.

use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use tokio::time::Instant;

use crate::deadline::header::DEADLINE_HEADER;
use crate::deadline::{Deadline, Format, Formats};

/// The call's deadline, and the caller's own header when it set the
/// deadline.
pub(super) struct Pinned {
    pub(super) deadline: Option<Deadline>,
    pub(super) as_set: Option<AsSet>,
}

/// A caller's deadline header, sent as it was set on the first attempt when
/// the client writes its format and less than a millisecond (the resolution
/// of timebox's own header) has passed since it was read: a call behind a
/// `tower::Buffer` may start later. Otherwise it sends, as retries and hops
/// do, what is left of it.
pub(super) struct AsSet {
    format: Format,
    value: HeaderValue,
    read_at: Instant,
}

/// How long after it was read a caller's header still goes out as set.
const AS_SET_FOR: Duration = Duration::from_millis(1);

impl AsSet {
    /// The header to send as set by a first attempt that writes `written`
    /// and starts at `now`: none when the client does not write its format,
    /// or time has passed.
    pub(super) fn for_first_attempt(
        self,
        written: Formats,
        now: Instant,
    ) -> Option<(Format, HeaderValue)> {
        let fresh = now.saturating_duration_since(self.read_at) < AS_SET_FOR;
        (written.contains(self.format) && fresh).then_some((self.format, self.value))
    }
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
    let caller = read.set_by_caller(headers).map(|(left, format, value)| {
        let read_at = Instant::now();
        let as_set = AsSet {
            format,
            value,
            read_at,
        };
        (Deadline::after_start(read_at, left), as_set)
    });
    // Timebox's own header is the client's to write. The others are
    // replaced on each attempt when there is a deadline; with none, a value
    // that grants none (an Envoy 0) goes out as the caller set it.
    headers.remove(DEADLINE_HEADER);
    match (task, caller) {
        (Some(task), Some((caller, _))) if task < caller => Pinned {
            deadline: Some(task),
            as_set: None,
        },
        (_, Some((caller, as_set))) => Pinned {
            deadline: Some(caller),
            as_set: Some(as_set),
        },
        (task, None) => Pinned {
            deadline: task,
            as_set: None,
        },
    }
}
