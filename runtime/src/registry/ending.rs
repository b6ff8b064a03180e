//! [`EndStep`]: the steps that end a cancelled request, in order.

use std::fmt;

/// One step in ending a cancelled request; [`CancelReason::end_steps`]
/// lists them in order.
///
/// The registry only names the steps: the stream layer that owns the
/// connection, the pool and the response body performs them, with
/// [`RemoteCleanup`](super::RemoteCleanup) for the remote cleanup.
///
/// [`CancelReason::end_steps`]: super::CancelReason::end_steps
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndStep {
    /// Tell the remote side (tools, upstreams) that the work is cancelled,
    /// bounded per notice and in total.
    RemoteCleanup,
    /// Evict the pooled connections the request used: a connection that was
    /// cut off mid-response cannot be trusted for the next request.
    Evict,
    /// Write an error event naming the cause, so a cut-off stream does not
    /// look like a short answer.
    ErrorEvent,
    /// Write the final `[DONE]` marker.
    Done,
}

impl EndStep {
    /// A stable `snake_case` name, the same the SSE stream's `Step`
    /// (`timebox::server::sse`) gives: `"remote_cleanup"`,
    /// `"evict"`, `"error_event"`, `"done"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RemoteCleanup => "remote_cleanup",
            Self::Evict => "evict",
            Self::ErrorEvent => "error_event",
            Self::Done => "done",
        }
    }
}

impl fmt::Display for EndStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
