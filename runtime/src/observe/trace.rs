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

pub(super) fn event(event: &Event) {
    let name = event.name();
    match event {
        Event::DeadlineSet {
            source,
            budget,
            route,
        } => tracing::debug!(
            target: TARGET,
            event = name,
            source = source.as_str(),
            budget_s = budget.as_secs_f64(),
            route = route.as_deref(),
        ),
        Event::DeadlineExceeded { stage, route } => tracing::debug!(
            target: TARGET,
            event = name,
            stage = stage.as_str(),
            route = route.as_deref(),
        ),
        Event::AttemptStarted { host, attempt } => tracing::debug!(
            target: TARGET,
            event = name,
            host = &**host,
            kind = attempt.kind.as_str(),
            number = attempt.number,
        ),
        Event::AttemptFinished {
            host,
            attempt,
            outcome,
        } => tracing::debug!(
            target: TARGET,
            event = name,
            host = &**host,
            kind = attempt.kind.as_str(),
            number = attempt.number,
            outcome = outcome.as_str(),
        ),
        Event::RetrySkipped { host, reason } => tracing::debug!(
            target: TARGET,
            event = name,
            host = &**host,
            reason = reason.as_str(),
        ),
        Event::CallFinished {
            host,
            outcome,
            duration,
        } => tracing::debug!(
            target: TARGET,
            event = name,
            host = &**host,
            outcome = outcome.as_str(),
            duration_s = duration.as_secs_f64(),
        ),
        Event::BudgetTokens { host, tokens } => tracing::debug!(
            target: TARGET,
            event = name,
            host = &**host,
            tokens,
        ),
        Event::BreakerCreated { host } => tracing::debug!(
            target: TARGET,
            event = name,
            host = &**host,
        ),
        Event::BreakerTransition { host, from, to } => tracing::debug!(
            target: TARGET,
            event = name,
            host = &**host,
            from = from.as_str(),
            to = to.as_str(),
        ),
        Event::BreakerCall { host, outcome } => tracing::debug!(
            target: TARGET,
            event = name,
            host = &**host,
            outcome = outcome.as_str(),
        ),
        Event::StreamTimeout { kind, route } => tracing::debug!(
            target: TARGET,
            event = name,
            kind = kind.as_str(),
            route = route.as_deref(),
        ),
        Event::StreamFirstItem { route, after } => tracing::debug!(
            target: TARGET,
            event = name,
            route = route.as_deref(),
            after_s = after.as_secs_f64(),
        ),
        Event::RequestCancelled { reason } => tracing::debug!(
            target: TARGET,
            event = name,
            reason = reason.as_str(),
            timer = reason.timeout_kind().map(|kind| kind.as_str()),
        ),
        Event::ShutdownPhase {
            phase,
            duration,
            outcome,
        } => tracing::debug!(
            target: TARGET,
            event = name,
            phase = phase.as_str(),
            duration_s = duration.as_secs_f64(),
            outcome = outcome.as_str(),
        ),
        Event::RequestShed { reason, route } => tracing::debug!(
            target: TARGET,
            event = name,
            reason = reason.as_str(),
            route = route.as_deref(),
        ),
    }
}
