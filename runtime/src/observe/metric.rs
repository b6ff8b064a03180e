//! The metric table (O3) and how each event moves it: the one source both
//! metric sinks read, so their names, kinds, units and attributes cannot
//! drift apart.

use super::CallOutcome;
#[cfg(any(feature = "metrics", feature = "otel"))]
use super::Event;

/// What kind of instrument a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A monotonic count.
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// A distribution of values.
    Histogram,
}

impl Kind {
    /// `"counter"`, `"gauge"` or `"histogram"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// The bucket boundaries for every histogram of [`METRICS`], all in
/// seconds: OpenTelemetry's HTTP semantic conventions
/// (`http.server.request.duration`, 5 ms to 10 s), then 30 s, 1 min, 2 min
/// and 5 min for the long deadlines and shutdown phases.
///
/// `OtelObserver` (feature `otel`) gives them to its histograms. A
/// Prometheus recorder renders a histogram it has no buckets for as a
/// summary (quantiles of one process, which cannot be added up across
/// replicas): give it these.
///
/// ```text
/// PrometheusBuilder::new()
///     .set_buckets_for_metric(Matcher::Prefix("timebox".into()), SECONDS_BUCKETS)?
/// ```
pub const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 30.0, 60.0,
    120.0, 300.0,
];

/// One row of the metric table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metric {
    /// The name, dotted (`timebox.client.attempts`); Prometheus shows it
    /// with underscores, counters with `_total`.
    pub name: &'static str,
    /// The instrument.
    pub kind: Kind,
    /// The UCUM unit (`"s"`), or `None` for a count.
    pub unit: Option<&'static str>,
    /// What it measures.
    pub description: &'static str,
    /// Its attributes, in order.
    pub attributes: &'static [&'static str],
}

macro_rules! metrics {
    ($($id:ident: $name:literal, $kind:ident, $unit:expr, [$($attr:literal),*], $description:literal;)*) => {
        $(
            const $id: Metric = Metric {
                name: $name,
                kind: Kind::$kind,
                unit: $unit,
                description: $description,
                attributes: &[$($attr),*],
            };
        )*
        /// Every metric the sinks register, in the order of the README's table.
        pub const METRICS: &[Metric] = &[$($id),*];
    };
}

metrics! {
    DEADLINE_REMAINING: "timebox.deadline.remaining", Histogram, Some("s"), ["source", "route"],
        "Time a request's deadline left it at entry";
    DEADLINE_EXCEEDED: "timebox.deadline.exceeded", Counter, None, ["stage", "route"],
        "Deadlines that passed, by where the work was";
    CLIENT_ATTEMPTS: "timebox.client.attempts", Counter, None, ["host", "kind", "outcome"],
        "Requests the client sent, by why and what came of them";
    RETRY_SKIPPED: "timebox.client.retry.skipped", Counter, None, ["host", "reason"],
        "Retries the client did not make, by why";
    CALL_DURATION: "timebox.client.call.duration", Histogram, Some("s"), ["host", "outcome"],
        "Client calls from first attempt to answer, retries included";
    BUDGET_TOKENS: "timebox.retry_budget.tokens", Gauge, None, ["host"],
        "Tokens in a host's retry budget";
    BREAKER_STATE: "timebox.breaker.state", Gauge, None, ["host"],
        "A host's circuit breaker: 0 closed, 1 half-open, 2 open";
    BREAKER_TRANSITIONS: "timebox.breaker.transitions", Counter, None, ["host", "from", "to"],
        "Changes of a host's circuit breaker state";
    BREAKER_CALLS: "timebox.breaker.calls", Counter, None, ["host", "outcome"],
        "Calls a host's circuit breaker counted or refused";
    STREAM_TIMEOUTS: "timebox.stream.timeouts", Counter, None, ["kind", "route"],
        "Streams ended by a watchdog timer";
    STREAM_FIRST_ITEM: "timebox.stream.first_item.duration", Histogram, Some("s"), ["route"],
        "Time from a stream's start to its first item";
    REQUESTS_CANCELLED: "timebox.requests.cancelled", Counter, None, ["reason"],
        "Requests cancelled, by why";
    SHUTDOWN_PHASE: "timebox.shutdown.phase.duration", Histogram, Some("s"), ["phase", "outcome"],
        "How long each shutdown phase lasted, and whether it drained";
    SERVER_SHED: "timebox.server.shed", Counter, None, ["reason", "route"],
        "Requests refused before their handler ran (or, in dark mode, counted as refusable and served)";
}

/// The label of a request no route took: it matched none, or the
/// shutdown gate refused it before routing.
#[cfg(any(feature = "metrics", feature = "otel"))]
const UNMATCHED: &str = "unmatched";

#[cfg(any(feature = "metrics", feature = "otel"))]
fn route(route: Option<&super::Label>) -> &str {
    route.map_or(UNMATCHED, |route| route)
}

/// How one event moves one metric.
#[cfg(any(feature = "metrics", feature = "otel"))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    /// Add 1 to a counter.
    Increment,
    /// Set a gauge.
    Set(f64),
    /// Record a value in a histogram.
    Record(f64),
}

#[cfg(any(feature = "metrics", feature = "otel"))]
/// Calls `apply` for each metric `event` moves, with its attribute values
/// in the table's order.
pub(crate) fn measure(event: &Event, mut apply: impl FnMut(&'static Metric, Value, &[&str])) {
    match event {
        Event::DeadlineSet {
            source,
            budget,
            route: r,
        } => apply(
            &DEADLINE_REMAINING,
            Value::Record(budget.as_secs_f64()),
            &[source.as_str(), route(r.as_ref())],
        ),
        Event::DeadlineExceeded { stage, route: r } => apply(
            &DEADLINE_EXCEEDED,
            Value::Increment,
            &[stage.as_str(), route(r.as_ref())],
        ),
        // An attempt is counted once, when its outcome is known.
        Event::AttemptStarted { .. } => {}
        Event::AttemptFinished {
            host,
            attempt,
            outcome,
        } => apply(
            &CLIENT_ATTEMPTS,
            Value::Increment,
            &[host, attempt.kind.as_str(), outcome.as_str()],
        ),
        Event::RetrySkipped { host, reason } => {
            apply(&RETRY_SKIPPED, Value::Increment, &[host, reason.as_str()]);
        }
        Event::CallFinished {
            host,
            outcome,
            duration,
        } => apply(
            &CALL_DURATION,
            Value::Record(duration.as_secs_f64()),
            &[host, outcome.as_str()],
        ),
        Event::BudgetTokens { host, tokens } => {
            apply(&BUDGET_TOKENS, Value::Set(*tokens), &[host]);
        }
        Event::BreakerCreated { host } => {
            let closed = crate::breaker::BreakerState::Closed.gauge();
            apply(&BREAKER_STATE, Value::Set(closed), &[host]);
        }
        Event::BreakerTransition { host, from, to } => {
            apply(&BREAKER_STATE, Value::Set(to.gauge()), &[host]);
            apply(
                &BREAKER_TRANSITIONS,
                Value::Increment,
                &[host, from.as_str(), to.as_str()],
            );
        }
        Event::BreakerCall { host, outcome } => {
            apply(&BREAKER_CALLS, Value::Increment, &[host, outcome.as_str()]);
        }
        Event::StreamTimeout { kind, route: r } => apply(
            &STREAM_TIMEOUTS,
            Value::Increment,
            &[kind.as_str(), route(r.as_ref())],
        ),
        Event::StreamFirstItem { route: r, after } => apply(
            &STREAM_FIRST_ITEM,
            Value::Record(after.as_secs_f64()),
            &[route(r.as_ref())],
        ),
        Event::RequestCancelled { reason } => {
            apply(&REQUESTS_CANCELLED, Value::Increment, &[reason.as_str()]);
        }
        Event::ShutdownPhase {
            phase,
            duration,
            outcome,
        } => apply(
            &SHUTDOWN_PHASE,
            Value::Record(duration.as_secs_f64()),
            &[phase.as_str(), outcome.as_str()],
        ),
        Event::RequestShed { reason, route: r } => apply(
            &SERVER_SHED,
            Value::Increment,
            &[reason.as_str(), route(r.as_ref())],
        ),
    }
}

impl CallOutcome {
    /// OpenTelemetry's `error.type` attribute of an attempt or call that
    /// ended without an answer, `None` for an answer (an attempt's span
    /// gives a 4xx or 5xx answer its status as `error.type`).
    #[must_use]
    pub const fn error_type(self) -> Option<&'static str> {
        match self {
            Self::Status(_) => None,
            Self::Timeout => Some("timeout"),
            Self::DeadlineExceeded => Some("deadline_exceeded"),
            Self::CircuitOpen => Some("circuit_open"),
            Self::Connect => Some("connect"),
            Self::Error | Self::Cancelled => Some("_OTHER"),
        }
    }
}

#[cfg(all(test, any(feature = "metrics", feature = "otel")))]
mod tests {
    use super::*;
    use crate::breaker::BreakerState;

    /// The metrics `event` moves: name, value and attribute values.
    fn moved(event: &Event) -> Vec<(&'static str, Value, Vec<String>)> {
        let mut moved = Vec::new();
        measure(event, |metric, value, values| {
            let values = values.iter().map(|&value| value.to_owned()).collect();
            moved.push((metric.name, value, values));
        });
        moved
    }

    #[test]
    fn a_breaker_made_sets_its_state_to_closed_and_counts_no_transition() {
        let created = Event::BreakerCreated {
            host: "up:80".into(),
        };
        assert_eq!(
            moved(&created),
            [(
                "timebox.breaker.state",
                Value::Set(BreakerState::Closed.gauge()),
                vec!["up:80".to_owned()]
            )]
        );
    }
}
