//! [`Event`]: one decision timebox made, as an observer sees it.

use std::time::Duration;

use crate::attempt::Attempt;
use crate::breaker::BreakerState;
use crate::registry::CancelReason;
use crate::watchdog::TimeoutKind;

use super::Label;

/// One decision timebox made, raised where it was made.
///
/// Hosts are the host key (`host:port`, the key of the host's budget and
/// breaker) of a client's first `max_hosts - 1` hosts, `"other"` after
/// them; routes are the matched route template (`/users/{id}`), `None`
/// when the request matched no route. So every label set is bounded.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A request got its deadline at entry: told for a request served, for
    /// one the deadline check refused as too short (before its
    /// `RequestShed`) and for one answered at once because its deadline had
    /// passed. Not for one the concurrency limit's queue sheds before its
    /// route ran: under
    /// a `TimeboxLayer`, whose deadline a request has (the layer's or its
    /// route's own) is learnt when the route runs.
    DeadlineSet {
        /// Where the deadline came from.
        source: DeadlineSource,
        /// The time it left the request.
        budget: Duration,
        /// The matched route.
        route: Option<Label>,
    },
    /// A deadline passed and ended the work at `stage`.
    DeadlineExceeded {
        /// Where the work was when time ran out.
        stage: Stage,
        /// The matched route, where the stage knows it.
        route: Option<Label>,
    },
    /// The client sent an attempt.
    AttemptStarted {
        /// The host it went to.
        host: Label,
        /// Which request of the call it is.
        attempt: Attempt,
    },
    /// An attempt came back, or failed.
    AttemptFinished {
        /// The host it went to.
        host: Label,
        /// Which request of the call it was.
        attempt: Attempt,
        /// What came of it.
        outcome: CallOutcome,
    },
    /// A retry was not made.
    RetrySkipped {
        /// The host that would have been called again.
        host: Label,
        /// Why not.
        reason: SkipReason,
    },
    /// A client call ended: its last answer or error is the caller's.
    CallFinished {
        /// The host of its last attempt.
        host: Label,
        /// What the caller got.
        outcome: CallOutcome,
        /// From the call's first attempt to its end.
        duration: Duration,
    },
    /// A host's retry budget changed: a refill, a withdrawal or a refund.
    BudgetTokens {
        /// The host.
        host: Label,
        /// The tokens in its bucket now.
        tokens: f64,
    },
    /// A host's circuit breaker was made, closed, before the first call it
    /// counts: its state has a value from then on (the
    /// `timebox.breaker.state` gauge's 0), not only once it first changes.
    BreakerCreated {
        /// The host.
        host: Label,
    },
    /// A host's circuit breaker changed state.
    BreakerTransition {
        /// The host.
        host: Label,
        /// The state it left.
        from: BreakerState,
        /// The state it entered.
        to: BreakerState,
    },
    /// A call a host's circuit breaker counted, or refused.
    BreakerCall {
        /// The host.
        host: Label,
        /// How the breaker counted it.
        outcome: BreakerCallOutcome,
    },
    /// One of a stream's watchdog timers ended it.
    StreamTimeout {
        /// The timer.
        kind: TimeoutKind,
        /// The route that served the stream.
        route: Option<Label>,
    },
    /// A stream sent its first item.
    StreamFirstItem {
        /// The route that served the stream.
        route: Option<Label>,
        /// From the stream's start to its first item.
        after: Duration,
    },
    /// A request was cancelled: told by the parts that end a request for
    /// a reason, a `timebox::server::sse::SseStream` given
    /// `observed` (the reason it ended for), and the parts that count a
    /// request in flight for a shutdown, the `timebox::server::ShutdownGate`
    /// and the gRPC server layer: a request dropped before its response
    /// head (its client left, or the shutdown's sequence ended), and a
    /// gRPC call or stream the shutdown ends.
    /// [`Registry::cancel`] alone tells nothing: a registry belongs to no
    /// app.
    ///
    /// [`Registry::cancel`]: crate::registry::Registry::cancel
    RequestCancelled {
        /// Why.
        reason: CancelReason,
    },
    /// A phase of the shutdown sequence ended.
    ShutdownPhase {
        /// The phase.
        phase: ShutdownPhase,
        /// How long it lasted.
        duration: Duration,
        /// Whether it ran its course with nothing left, or was cut.
        outcome: PhaseOutcome,
    },
    /// A request was refused before its handler ran, or, with reason
    /// [`ShedReason::DeadlineTooShortDark`], would have been and was served.
    RequestShed {
        /// Why.
        reason: ShedReason,
        /// The matched route.
        route: Option<Label>,
    },
}

impl Event {
    /// The event's stable name, as the `tracing` sink gives it
    /// (`"retry_skipped"`).
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::DeadlineSet { .. } => "deadline_set",
            Self::DeadlineExceeded { .. } => "deadline_exceeded",
            Self::AttemptStarted { .. } => "attempt_started",
            Self::AttemptFinished { .. } => "attempt_finished",
            Self::RetrySkipped { .. } => "retry_skipped",
            Self::CallFinished { .. } => "call_finished",
            Self::BudgetTokens { .. } => "budget_tokens",
            Self::BreakerCreated { .. } => "breaker_created",
            Self::BreakerTransition { .. } => "breaker_transition",
            Self::BreakerCall { .. } => "breaker_call",
            Self::StreamTimeout { .. } => "stream_timeout",
            Self::StreamFirstItem { .. } => "stream_first_item",
            Self::RequestCancelled { .. } => "request_cancelled",
            Self::ShutdownPhase { .. } => "shutdown_phase",
            Self::RequestShed { .. } => "request_shed",
        }
    }
}

/// Where a request's deadline came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeadlineSource {
    /// The route's own rule (a macro's `timeout_ms`, a `RouteDeadlineLayer`).
    Route,
    /// The global default (`server.timeouts.request_timeout_ms`).
    Global,
    /// A shorter deadline the caller sent in this header.
    Header(&'static str),
}

impl DeadlineSource {
    /// The `source` attribute: `"route"`, `"global"` or the header's name.
    #[must_use]
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Route => "route",
            Self::Global => "global",
            Self::Header(name) => name,
        }
    }
}

impl DeadlineSource {
    /// The budget of a rule from this source, shortened by an accepted
    /// inbound header (S3), and the source that set it.
    #[cfg(feature = "server")]
    pub(crate) fn shortened(
        self,
        rule: Duration,
        inbound: Option<(Duration, crate::deadline::Format)>,
    ) -> (Duration, Self) {
        match inbound {
            Some((left, format)) if left < rule => (left, Self::Header(format.as_str())),
            _ => (rule, self),
        }
    }
}

/// Where work was when its deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// In the handler (the server answered 503).
    Handler,
    /// Waiting for a pooled database connection.
    PoolWait,
    /// In an outbound call.
    Outbound,
    /// In a stream.
    Stream,
    /// At admission, before the handler ran.
    Admission,
}

impl Stage {
    /// The `stage` attribute.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Handler => "handler",
            Self::PoolWait => "pool_wait",
            Self::Outbound => "outbound",
            Self::Stream => "stream",
            Self::Admission => "admission",
        }
    }
}

/// What an attempt or a call came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The host answered with this status.
    Status(u16),
    /// The attempt's own timeout passed.
    Timeout,
    /// The call's deadline passed.
    DeadlineExceeded,
    /// The host's circuit breaker refused the call.
    CircuitOpen,
    /// The connection could not be made.
    Connect,
    /// Any other failure (the request could not be built, the transport
    /// failed after connecting).
    Error,
    /// The caller dropped the call before it ended (a timeout or a
    /// `select!` outside it).
    Cancelled,
}

impl CallOutcome {
    /// The `outcome` attribute: the status class (`"2xx"`..`"5xx"`) or
    /// the failure's name. A status outside 100–599, which HTTP does not
    /// define (the `http` crate accepts up to 999), is `"error"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Status(status) => match status {
                100..=199 => "1xx",
                200..=299 => "2xx",
                300..=399 => "3xx",
                400..=499 => "4xx",
                500..=599 => "5xx",
                _ => "error",
            },
            Self::Timeout => "timeout",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::CircuitOpen => "circuit_open",
            Self::Connect => "connect",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Why a retry was not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkipReason {
    /// The host's retry budget could not pay for it.
    Budget,
    /// The wait before it did not fit the time left, or the deadline
    /// passed before it could be sent (during its wait, or while the
    /// sender was not ready for it).
    Deadline,
    /// The call had made all the retries it may.
    MaxAttempts,
    /// The request may not be sent twice (its method, or its body).
    NotIdempotent,
    /// The host's circuit breaker is open.
    BreakerOpen,
}

impl SkipReason {
    /// The `reason` attribute.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Budget => "budget",
            Self::Deadline => "deadline",
            Self::MaxAttempts => "max_attempts",
            Self::NotIdempotent => "not_idempotent",
            Self::BreakerOpen => "breaker_open",
        }
    }
}

/// How a circuit breaker counted a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BreakerCallOutcome {
    /// A success within the slow-call threshold.
    Success,
    /// A failure.
    Failure,
    /// A success or a cancelled call past the slow-call threshold.
    Slow,
    /// Dropped without an outcome, within the threshold: not counted.
    Cancelled,
    /// Refused: the breaker was open, or half-open with its trials taken.
    Rejected,
}

impl BreakerCallOutcome {
    /// The `outcome` attribute.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Slow => "slow",
            Self::Cancelled => "cancelled",
            Self::Rejected => "rejected",
        }
    }
}

/// A phase of the shutdown sequence (see [`Shutdown`](crate::shutdown::Shutdown)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShutdownPhase {
    /// From the trigger to phase 1: still serving, readiness says 503.
    Prestop,
    /// Phase 1: new requests get 503, those in flight may finish.
    Grace,
    /// Phase 2: streams still running are told to end.
    Drain,
}

impl ShutdownPhase {
    /// The `phase` attribute.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Prestop => "prestop",
            Self::Grace => "grace",
            Self::Drain => "drain",
        }
    }
}

/// How a shutdown phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PhaseOutcome {
    /// It ran its course: nothing was in flight at its end (the pre-stop
    /// grace: it was not skipped).
    Drained,
    /// It was cut: it ended with requests still in flight (its bound
    /// passed, or a second signal skipped it), or, for the pre-stop grace,
    /// a second signal skipped it.
    Forced,
}

impl PhaseOutcome {
    /// The `outcome` attribute.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Drained => "drained",
            Self::Forced => "forced",
        }
    }
}

/// Why a request was refused before its handler ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShedReason {
    /// The server is shutting down (phase 1 answers 503).
    ShuttingDown,
    /// The request's time left was below its route's service time, and
    /// `server.admission.deadline_check` is `enforce`: refused with 504.
    DeadlineTooShort,
    /// As [`ShedReason::DeadlineTooShort`], in `dark` mode: counted, and
    /// served all the same.
    DeadlineTooShortDark,
    /// The concurrency limit's queue shed it (CoDel): refused with 503.
    Overloaded,
}

impl ShedReason {
    /// The `reason` attribute, also the value of the `x-timebox-shed` header
    /// of a shed answer.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ShuttingDown => "shutting_down",
            Self::DeadlineTooShort => "deadline_too_short",
            Self::DeadlineTooShortDark => "deadline_too_short_dark",
            Self::Overloaded => "overloaded",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CallOutcome;

    #[test]
    fn a_status_names_its_class_and_one_http_does_not_define_is_an_error() {
        let outcomes =
            [100, 204, 302, 404, 599, 600, 999].map(|status| CallOutcome::Status(status).as_str());
        assert_eq!(
            outcomes,
            ["1xx", "2xx", "3xx", "4xx", "5xx", "error", "error"]
        );
    }
}
