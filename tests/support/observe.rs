//! Events written as one short line each, so a test states a whole
//! sequence plainly.

use timebox::observe::{Event, Observer};

/// `event` as `name key=value ..`, durations in whole milliseconds.
pub fn line(event: &Event) -> String {
    match event {
        Event::DeadlineSet {
            source,
            budget,
            route,
        } => format!(
            "deadline_set source={} budget={}ms route={}",
            source.as_str(),
            budget.as_millis(),
            route.as_deref().unwrap_or("-")
        ),
        Event::DeadlineExceeded { stage, route } => format!(
            "deadline_exceeded stage={} route={}",
            stage.as_str(),
            route.as_deref().unwrap_or("-")
        ),
        Event::AttemptStarted { host, attempt } => format!(
            "attempt_started host={host} kind={} number={}",
            attempt.kind.as_str(),
            attempt.number
        ),
        Event::AttemptFinished {
            host,
            attempt,
            outcome,
        } => format!(
            "attempt_finished host={host} kind={} number={} outcome={}",
            attempt.kind.as_str(),
            attempt.number,
            outcome.as_str()
        ),
        Event::RetrySkipped { host, reason } => {
            format!("retry_skipped host={host} reason={}", reason.as_str())
        }
        Event::CallFinished {
            host,
            outcome,
            duration,
        } => format!(
            "call_finished host={host} outcome={} duration={}ms",
            outcome.as_str(),
            duration.as_millis()
        ),
        Event::BudgetTokens { host, tokens } => {
            format!("budget_tokens host={host} tokens={tokens}")
        }
        Event::BreakerCreated { host } => format!("breaker_created host={host}"),
        Event::BreakerTransition { host, from, to } => format!(
            "breaker_transition host={host} from={} to={}",
            from.as_str(),
            to.as_str()
        ),
        Event::BreakerCall { host, outcome } => {
            format!("breaker_call host={host} outcome={}", outcome.as_str())
        }
        Event::StreamTimeout { kind, route } => format!(
            "stream_timeout kind={} route={}",
            kind.as_str(),
            route.as_deref().unwrap_or("-")
        ),
        Event::StreamFirstItem { route, after } => format!(
            "stream_first_item route={} after={}ms",
            route.as_deref().unwrap_or("-"),
            after.as_millis()
        ),
        Event::RequestCancelled { reason } => format!("request_cancelled reason={reason}"),
        Event::ShutdownPhase {
            phase,
            duration,
            outcome,
        } => format!(
            "shutdown_phase phase={} duration={}ms outcome={}",
            phase.as_str(),
            duration.as_millis(),
            outcome.as_str()
        ),
        Event::RequestShed { reason, route } => format!(
            "request_shed reason={} route={}",
            reason.as_str(),
            route.as_deref().unwrap_or("-")
        ),
        other => format!("{other:?}"),
    }
}

/// Every event as its line.
pub fn lines(events: &[Event]) -> Vec<String> {
    events.iter().map(line).collect()
}

/// The lines of the events whose line starts with one of `kinds`, in
/// order: `lines_of(&events, &["attempt_finished", "breaker_call"])`.
pub fn lines_of(events: &[Event], kinds: &[&str]) -> Vec<String> {
    events
        .iter()
        .map(line)
        .filter(|line| kinds.iter().any(|kind| line.starts_with(kind)))
        .collect()
}

/// How the breakers counted each call, in order.
pub fn breaker_calls(events: &[Event]) -> Vec<timebox::observe::BreakerCallOutcome> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::BreakerCall { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .collect()
}

/// The stages of the deadlines exceeded, in order.
pub fn exceeded_stages(events: &[Event]) -> Vec<timebox::observe::Stage> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::DeadlineExceeded { stage, .. } => Some(*stage),
            _ => None,
        })
        .collect()
}

/// An observer that panics at every event its function picks.
pub struct PanicsAt(pub fn(&Event) -> bool);

impl Observer for PanicsAt {
    fn on_event(&self, event: &Event) {
        if (self.0)(event) {
            panic!("an observer's own failure");
        }
    }
}

/// Whether `event` tells a bucket below its 500 tokens: a withdrawal.
pub fn tells_a_withdrawal(event: &Event) -> bool {
    matches!(event, Event::BudgetTokens { tokens, .. } if *tokens < 500.0)
}

/// Runs `GET url` on `client` in a task of its own, which an observer's
/// panic fails; then the levels of `host`'s bucket that `events` told, in
/// order (`tokens=N`).
pub async fn budget_levels_after_a_panicking_get(
    client: timebox::client::Client,
    url: String,
    host: &str,
    events: impl FnOnce() -> Vec<Event>,
) -> Vec<String> {
    let call = tokio::spawn(async move { client.get(url).send().await.map(drop) });
    let failed = call
        .await
        .expect_err("the observer's panic reaches the call");
    assert!(failed.is_panic());
    let tokens = format!("budget_tokens host={host} ");
    lines(&events())
        .iter()
        .filter_map(|line| line.strip_prefix(&tokens))
        .map(str::to_owned)
        .collect()
}
