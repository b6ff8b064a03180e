//! [`Call::start`]: the next request of a call and its [`Pending`] attempt,
//! and the hedge of a slow first one.

use std::time::Duration;

use http::HeaderValue;
use tokio::time::Instant;
use tracing::Span;

use crate::breaker::{Open, Permit};
use crate::client::{span, Attempt, AttemptKind, ClientError};
use crate::deadline::Deadline;
use crate::observe::{CallOutcome, Event, SkipReason};

use super::call::Call;
use super::decide::end_quiet_refusals;
use super::request::Body;

/// The header that marks a hedge: `2;hedge`.
const ATTEMPT_HEADER: &str = "x-timebox-attempt";

/// One attempt (or redirect hop) under way, until [`Call::decide`] settles
/// it.
pub(crate) struct Pending {
    /// When the attempt times out (the call's deadline bounds it too).
    pub(crate) ends: Deadline,
    /// Which request of the call this is: the door puts it where the next
    /// layer looks (the request's extensions, or the middleware chain's).
    pub(crate) attempt: Attempt,
    /// The attempt's span: the door sends the request inside it.
    pub(crate) span: Span,
    pub(super) permit: Option<Permit>,
    /// When it was sent, for the host's latency.
    pub(super) started: Instant,
    /// When the attempt times out, its deadline aside: what a redirect hop
    /// after it keeps.
    pub(super) attempt_ends: Deadline,
    /// When the time left that the request told its host runs out: what it
    /// carried in whole milliseconds, from when it was sent. `None` when it
    /// carried none.
    pub(super) sent: Option<Deadline>,
}

/// The attempts of a call under way: sent, and not yet settled by
/// [`Call::decide`], [`Call::lose`] or [`Call::abandon`]. At most two are,
/// a first attempt and its hedge. A call dropped with attempts under way
/// (its caller went away, or a deadline outside it passed) tells their end
/// too, as it tells its own.
#[derive(Default)]
pub(super) struct UnderWay([Option<(Attempt, Span)>; 2]);

impl UnderWay {
    fn started(&mut self, attempt: Attempt, span: Span) {
        if let Some(slot) = self.0.iter_mut().find(|slot| slot.is_none()) {
            *slot = Some((attempt, span));
        }
    }

    /// `attempt` is settled.
    pub(super) fn ended(&mut self, attempt: Attempt) {
        for slot in &mut self.0 {
            if slot
                .as_ref()
                .is_some_and(|(under_way, _)| *under_way == attempt)
            {
                *slot = None;
            }
        }
    }

    /// The attempts still under way, taken.
    pub(super) fn take(&mut self) -> impl Iterator<Item = (Attempt, Span)> {
        std::mem::take(&mut self.0).into_iter().flatten()
    }
}

impl<B: Body> Call<B> {
    /// Prepares the next attempt: the request to send, and the attempt to
    /// hand back to [`Call::decide`] with what came of it.
    ///
    /// # Errors
    ///
    /// The deadline has passed (no attempt is made), the host's breaker is
    /// open, or the request cannot be built.
    pub(crate) fn start(&mut self) -> Result<(http::Request<B>, Pending), ClientError> {
        // One clock reading for the deadline's check, the breaker, the
        // attempt's timeout and the time left the request carries.
        let now = Instant::now();
        // C1: an expired deadline ends the call before any attempt.
        if self
            .deadline
            .is_some_and(|deadline| deadline.instant() <= now)
        {
            return Err(self.deadline_passed());
        }
        let attempt = Attempt {
            number: self.sent + 1,
            kind: self.next_kind,
        };
        self.span = span::attempt_span(&self.method, &self.target.uri, attempt);
        let permit = match &self.target.breaker {
            Some(breaker) => match breaker.try_acquire_at(now) {
                Ok(permit) if self.long_running => Some(permit.untimed()),
                Ok(permit) => Some(permit),
                Err(open) => return Err(self.refused(attempt, open)),
            },
            None => None,
        };
        // Sent once: the engine neither retries it nor follows a redirect
        // that keeps it, so it is always here when an attempt starts.
        let body = match &self.body {
            Some(body) if self.replayable => body.try_clone(),
            _ => self.body.take(),
        }
        .ok_or_else(|| {
            ClientError::InvalidRequest("the request body cannot be sent again".to_owned())
        })?;
        if !self.target.refilled {
            if let Some(budget) = &self.target.budget {
                budget.on_first_attempt();
                end_quiet_refusals(budget, &self.target.host, now);
                self.tell_tokens(budget, None);
            }
            self.target.refilled = true;
        }
        let attempt_ends = match self.attempt_ends {
            Some(ends) if self.next_kind == AttemptKind::Redirect => ends,
            _ => Deadline::after_start(now, self.attempt_timeout),
        };
        self.attempt_ends = Some(attempt_ends);
        let mut headers = self.headers.clone();
        let mut sent = None;
        if let Some(deadline) = self.deadline {
            let written = self.rules.deadline_headers;
            let remaining = deadline.instant().saturating_duration_since(now);
            written.write(remaining, &mut headers);
            if !written.is_empty() {
                let whole_ms =
                    Duration::new(remaining.as_secs(), remaining.subsec_millis() * 1_000_000);
                sent = Some(Deadline::after_start(now, whole_ms));
            }
            // The first attempt sends a caller's shorter value as it was set.
            let as_set = self.as_set.take();
            if let Some((format, value)) =
                as_set.and_then(|set| set.for_first_attempt(written, now))
            {
                headers.insert(format.name(), value);
            }
        }
        self.sent += 1;
        let mut request = http::Request::new(body);
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.target.uri.clone();
        *request.version_mut() = self.version;
        *request.headers_mut() = headers;
        *request.extensions_mut() = self.extensions.clone();
        self.rules.observers.emit(|| Event::AttemptStarted {
            host: self.label(),
            attempt,
        });
        // Marked once told: an observer that panics at the start drops the
        // call with this retry unsent, and its tokens go back.
        if let Some(charge) = &mut self.charge {
            charge.sent = true;
        }
        self.under_way.started(attempt, self.span.clone());
        let pending = Pending {
            ends: self.deadline.map_or(attempt_ends, |d| d.min(attempt_ends)),
            attempt,
            span: self.span.clone(),
            permit,
            started: now,
            attempt_ends,
            sent,
        };
        Ok((request, pending))
    }

    /// The error of a call whose deadline passed before its next attempt
    /// started. A retry that was decided (its wait fitted) and is not made,
    /// because the wait, or the sender's readiness after it, ran past the
    /// deadline, is told as skipped for the deadline.
    pub(crate) fn deadline_passed(&self) -> ClientError {
        if self.next_kind == AttemptKind::Retry {
            self.rules.observers.emit(|| Event::RetrySkipped {
                host: self.label(),
                reason: SkipReason::Deadline,
            });
        }
        ClientError::deadline()
    }

    /// The error of `attempt`, which the host's breaker refused. A retry
    /// the breaker refuses (it opened, or filled its half-open trials, while
    /// the retry waited) is told as skipped; the refusal is the answer (B6).
    fn refused(&mut self, attempt: Attempt, open: Open) -> ClientError {
        span::record_outcome(&self.span, CallOutcome::CircuitOpen, false);
        self.span = Span::none();
        if attempt.kind == AttemptKind::Retry {
            tracing::debug!(
                host = self.target.host,
                attempt = attempt.number,
                "no retry: the host's circuit breaker refused it"
            );
            self.rules.observers.emit(|| Event::RetrySkipped {
                host: self.label(),
                reason: SkipReason::BreakerOpen,
            });
        }
        ClientError::CircuitBreakerOpen {
            host: self.target.host.clone(),
            open,
        }
    }

    /// How long the driver waits for the attempt `pending` before asking
    /// for a hedge ([`Call::start_hedge`]); `None` when it is not hedged:
    /// only a first attempt is, of a call that may hedge, to a host whose
    /// delay is known.
    pub(crate) fn hedge_delay(&self, pending: &Pending) -> Option<Duration> {
        if !self.may_hedge || pending.attempt.kind != AttemptKind::First {
            return None;
        }
        self.rules.hedging.delay(self.target.stats.as_deref()?)
    }

    /// Prepares the hedge of the attempt under way, if its rules allow it
    /// now (see [`Hedging::admit`](crate::client::hedge::Hedging::admit)): a
    /// request like the first, marked `x-timebox-attempt: N;hedge`.
    pub(crate) fn start_hedge(&mut self) -> Option<(http::Request<B>, Pending)> {
        let stats = self.target.stats.clone()?;
        let left = self.deadline.map(Deadline::remaining);
        let budget = self.target.budget.clone();
        match self.rules.hedging.admit(&stats, left, budget.as_ref()) {
            Ok(admitted) => self.hedge = Some(admitted),
            Err(refusal) => {
                tracing::debug!(host = self.target.host, "no hedge: {}", refusal.as_str());
                return None;
            }
        }
        if let Some(budget) = &budget {
            self.tell_tokens(budget, None);
        }
        let kind = std::mem::replace(&mut self.next_kind, AttemptKind::Hedge);
        let Ok((mut request, pending)) = self.start() else {
            // Not sent after all (the breaker refused it, or the deadline
            // passed).
            self.next_kind = kind;
            self.withdraw_hedge();
            return None;
        };
        self.hedge_sent = true;
        let marker = format!("{};hedge", pending.attempt.number);
        request.headers_mut().insert(
            ATTEMPT_HEADER,
            HeaderValue::from_str(&marker).expect("digits are a valid header value"),
        );
        tracing::debug!(
            host = self.target.host,
            "hedging: the first attempt is slow"
        );
        Some((request, pending))
    }

    /// Abandons `pending`, a first attempt that a hedge's answer beat. Its
    /// time so far goes into the host's latencies (A3's p95): a lower bound
    /// of its latency, and already past the p95 that hedged it, so the
    /// estimate keeps the slow tail that hedges cut short instead of
    /// sinking to the winners' times.
    pub(crate) fn outrun(&mut self, pending: Pending) {
        if let Some(stats) = &self.target.stats {
            stats.record(pending.started.elapsed());
        }
        self.abandon(pending);
    }

    /// Drops `pending`, the attempt that lost a hedge race: told as
    /// cancelled, and so counted by the host's breaker (B6).
    pub(crate) fn abandon(&mut self, pending: Pending) {
        self.under_way.ended(pending.attempt);
        self.tell_attempt_end(pending.attempt, CallOutcome::Cancelled);
        span::record_outcome(&pending.span, CallOutcome::Cancelled, false);
    }
}
