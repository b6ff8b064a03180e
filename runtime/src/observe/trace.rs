//! The `tracing` sink, always on: each event at `DEBUG` under the target
//! `timebox::observe`, its attributes as fields named as the metrics'.

use tracing::Level;

use super::Event;

/// The target of the sink's events, to filter on
/// (`RUST_LOG=timebox::observe=debug`).
pub(crate) const TARGET: &str = "timebox::observe";

/// Whether a subscriber wants the sink's events: a cached check, no event
/// is built when it says no.
#[inline]
pub(super) fn enabled() -> bool {
    tracing::enabled!(target: TARGET, Level::DEBUG)
}

/// A `DEBUG` event of the sink named `$name` (its metadata name, which
/// tracing-opentelemetry takes as a span event's name, and its `event`
/// field), with the fields given.
macro_rules! debug_event {
    ($name:literal, $($fields:tt)*) => {
        tracing::debug!(name: $name, target: TARGET, event = $name, $($fields)*)
    };
}

pub(super) fn event(event: &Event) {
    match event {
        Event::DeadlineSet {
            source,
            budget,
            route,
        } => debug_event!(
            "deadline_set",
            source = source.as_str(),
            budget_s = budget.as_secs_f64(),
            route = route.as_deref(),
        ),
        Event::DeadlineExceeded { stage, route } => debug_event!(
            "deadline_exceeded",
            stage = stage.as_str(),
            route = route.as_deref(),
        ),
        Event::AttemptStarted { host, attempt } => debug_event!(
            "attempt_started",
            host = &**host,
            kind = attempt.kind.as_str(),
            number = attempt.number,
        ),
        Event::AttemptFinished {
            host,
            attempt,
            outcome,
        } => debug_event!(
            "attempt_finished",
            host = &**host,
            kind = attempt.kind.as_str(),
            number = attempt.number,
            outcome = outcome.as_str(),
        ),
        Event::RetrySkipped { host, reason } => {
            debug_event!("retry_skipped", host = &**host, reason = reason.as_str(),)
        }
        Event::CallFinished {
            host,
            outcome,
            duration,
        } => debug_event!(
            "call_finished",
            host = &**host,
            outcome = outcome.as_str(),
            duration_s = duration.as_secs_f64(),
        ),
        Event::BudgetTokens { host, tokens } => {
            debug_event!("budget_tokens", host = &**host, tokens,)
        }
        Event::BreakerCreated { host } => debug_event!("breaker_created", host = &**host,),
        Event::BreakerTransition { host, from, to } => debug_event!(
            "breaker_transition",
            host = &**host,
            from = from.as_str(),
            to = to.as_str(),
        ),
        Event::BreakerCall { host, outcome } => {
            debug_event!("breaker_call", host = &**host, outcome = outcome.as_str(),)
        }
        Event::StreamTimeout { kind, route } => debug_event!(
            "stream_timeout",
            kind = kind.as_str(),
            route = route.as_deref(),
        ),
        Event::StreamFirstItem { route, after } => debug_event!(
            "stream_first_item",
            route = route.as_deref(),
            after_s = after.as_secs_f64(),
        ),
        Event::RequestCancelled { reason } => debug_event!(
            "request_cancelled",
            reason = reason.as_str(),
            timer = reason.timeout_kind().map(|kind| kind.as_str()),
        ),
        Event::ShutdownPhase {
            phase,
            duration,
            outcome,
        } => debug_event!(
            "shutdown_phase",
            phase = phase.as_str(),
            duration_s = duration.as_secs_f64(),
            outcome = outcome.as_str(),
        ),
        Event::RequestShed { reason, route } => debug_event!(
            "request_shed",
            reason = reason.as_str(),
            route = route.as_deref(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Duration;

    use tracing::Level;
    use tracing_subscriber::fmt::MakeWriter;

    use crate::attempt::{Attempt, AttemptKind};
    use crate::breaker::BreakerState;
    use crate::observe::{
        BreakerCallOutcome, CallOutcome, DeadlineSource, Event, Label, PhaseOutcome, ShedReason,
        ShutdownPhase, SkipReason, Stage,
    };
    use crate::registry::CancelReason;
    use crate::watchdog::TimeoutKind;

    /// What a subscriber wrote.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Written {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl MakeWriter<'_> for Written {
        type Writer = Self;

        fn make_writer(&self) -> Self {
            self.clone()
        }
    }

    /// What the sink writes for `event` through a plain `fmt` subscriber.
    fn written(event: &Event) -> String {
        let written = Written::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(written.clone())
            .with_max_level(Level::DEBUG)
            .with_ansi(false)
            .without_time()
            .finish();
        tracing::subscriber::with_default(subscriber, || super::event(event));
        let bytes = written.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// One event of each kind (two of `RequestCancelled`) and the fields
    /// of its line.
    fn cases() -> Vec<(Event, &'static str)> {
        let host = || Label::from("up:80");
        let route = || Some(Label::from("/users/{id}"));
        vec![
            (
                Event::DeadlineSet {
                    source: DeadlineSource::Global,
                    budget: Duration::from_millis(2500),
                    route: route(),
                },
                r#"event="deadline_set" source="global" budget_s=2.5 route="/users/{id}""#,
            ),
            (
                Event::DeadlineExceeded {
                    stage: Stage::Outbound,
                    route: None,
                },
                r#"event="deadline_exceeded" stage="outbound""#,
            ),
            (
                Event::AttemptStarted {
                    host: host(),
                    attempt: Attempt::new(2, AttemptKind::Hedge),
                },
                r#"event="attempt_started" host="up:80" kind="hedge" number=2"#,
            ),
            (
                Event::AttemptFinished {
                    host: host(),
                    attempt: Attempt::new(3, AttemptKind::Retry),
                    outcome: CallOutcome::Status(503),
                },
                r#"event="attempt_finished" host="up:80" kind="retry" number=3 outcome="5xx""#,
            ),
            (
                Event::RetrySkipped {
                    host: host(),
                    reason: SkipReason::Deadline,
                },
                r#"event="retry_skipped" host="up:80" reason="deadline""#,
            ),
            (
                Event::CallFinished {
                    host: host(),
                    outcome: CallOutcome::Timeout,
                    duration: Duration::from_millis(20),
                },
                r#"event="call_finished" host="up:80" outcome="timeout" duration_s=0.02"#,
            ),
            (
                Event::BudgetTokens {
                    host: host(),
                    tokens: 9.5,
                },
                r#"event="budget_tokens" host="up:80" tokens=9.5"#,
            ),
            (
                Event::BreakerCreated { host: host() },
                r#"event="breaker_created" host="up:80""#,
            ),
            (
                Event::BreakerTransition {
                    host: host(),
                    from: BreakerState::Closed,
                    to: BreakerState::Open,
                },
                r#"event="breaker_transition" host="up:80" from="closed" to="open""#,
            ),
            (
                Event::BreakerCall {
                    host: host(),
                    outcome: BreakerCallOutcome::Slow,
                },
                r#"event="breaker_call" host="up:80" outcome="slow""#,
            ),
            (
                Event::StreamTimeout {
                    kind: TimeoutKind::Total,
                    route: route(),
                },
                r#"event="stream_timeout" kind="total" route="/users/{id}""#,
            ),
            (
                Event::StreamFirstItem {
                    route: route(),
                    after: Duration::from_millis(200),
                },
                r#"event="stream_first_item" route="/users/{id}" after_s=0.2"#,
            ),
            (
                Event::RequestCancelled {
                    reason: CancelReason::Timeout(TimeoutKind::Inactivity),
                },
                r#"event="request_cancelled" reason="timeout" timer="inactivity""#,
            ),
            (
                Event::RequestCancelled {
                    reason: CancelReason::Disconnect,
                },
                r#"event="request_cancelled" reason="disconnect""#,
            ),
            (
                Event::ShutdownPhase {
                    phase: ShutdownPhase::Drain,
                    duration: Duration::from_secs(3),
                    outcome: PhaseOutcome::Forced,
                },
                r#"event="shutdown_phase" phase="drain" duration_s=3.0 outcome="forced""#,
            ),
            (
                Event::RequestShed {
                    reason: ShedReason::Overloaded,
                    route: route(),
                },
                r#"event="request_shed" reason="overloaded" route="/users/{id}""#,
            ),
        ]
    }

    #[test]
    fn each_event_is_one_debug_line_with_its_attributes_as_fields() {
        for (event, fields) in cases() {
            let line = written(&event);
            assert_eq!(
                line,
                format!("DEBUG timebox::observe: {fields}\n"),
                "{event:?}"
            );
        }
    }

    /// What a subscriber sees as an event's name.
    #[derive(Clone, Default)]
    struct Names(Arc<Mutex<Vec<&'static str>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Names {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event.metadata().name());
        }
    }

    #[test]
    fn each_event_is_named_as_its_event_field() {
        use tracing_subscriber::layer::SubscriberExt;

        let names = Names::default();
        let subscriber = tracing_subscriber::registry().with(names.clone());
        let events: Vec<Event> = cases().into_iter().map(|(event, _)| event).collect();
        tracing::subscriber::with_default(subscriber, || events.iter().for_each(super::event));
        let expected: Vec<&str> = events.iter().map(Event::name).collect();
        assert_eq!(
            *names.0.lock().unwrap_or_else(PoisonError::into_inner),
            expected
        );
    }
}
