//! [`Call::decide`]: what comes after an attempt, a redirect followed, a
//! retry that fits, or the answer.

use std::fmt;
use std::time::Duration;

use http::StatusCode;
use tracing::Span;

use crate::breaker::{BreakerState, Permit};
use crate::client::redirect::{self, Hop, MAX_HOPS};
use crate::client::span;
use crate::client::transport::TransportError;
use crate::client::{Attempt, AttemptKind, ClientError};
use crate::deadline::{Deadline, PEER_LEAD};
use crate::observe::{CallOutcome, Event, SkipReason};
use crate::retry::{
    classify_answer, hint_wait, refused_for_its_deadline, was_shed, RetryBudget, RetryKind,
};

use super::attempt::Pending;
use super::call::{may_retry, Call};
use super::charge::Charge;
use super::request::{Answer, Body};
use super::target::Target;

/// A retry must leave at least this much of the deadline after its wait,
/// or it is not started.
const RETRY_MARGIN: Duration = Duration::from_millis(10);

/// What came of an attempt, as the driver saw it.
pub(crate) enum Outcome<R> {
    /// The host answered.
    Response(R),
    /// The transport failed.
    Failed(TransportError),
    /// The attempt's own timeout passed, with time left on the deadline.
    TimedOut,
    /// The call's deadline passed during the attempt.
    DeadlineExceeded,
}

/// What the driver does next.
pub(crate) enum Next<R> {
    /// Send the next attempt at once (a redirect hop).
    Follow,
    /// Wait this long, within the deadline, then send the next attempt.
    Retry(Duration),
    /// The call is over.
    Return(Result<R, ClientError>),
}

impl<B: Body> Call<B> {
    /// Settles `pending` with what came of it and says what comes next.
    pub(crate) fn decide<R: Answer>(&mut self, pending: Pending, outcome: Outcome<R>) -> Next<R> {
        let outcome = self.read(outcome, &pending);
        let observed = outcome.observed();
        self.budget_refused = false;
        if let (Outcome::Response(_), Some(stats)) = (&outcome, &self.target.stats) {
            stats.record(pending.started.elapsed());
        }
        // A hedge race's winner may be the earlier attempt.
        self.attempt_ends = Some(pending.attempt_ends);
        let span = pending.span.clone();
        let next = self.settle(pending, outcome, observed);
        span::record_outcome(&span, observed, self.budget_refused);
        // A redirect past the hop limit is the call's error, though the
        // attempt got an answer: its span ends as one (OpenTelemetry's HTTP
        // conventions say so of a 3xx past the limit).
        if let Next::Return(Err(ClientError::TooManyRedirects)) = &next {
            span::record_error(&span, CallOutcome::Error);
        }
        // The attempt is over: its span must not cover the wait before the
        // next one.
        self.span = Span::none();
        next
    }

    /// Settles `pending`, an attempt of a hedge race that failed while the
    /// other still runs (A3: the first *answer* wins): told, and counted by
    /// the host's breaker, as it ended, with nothing decided; the other
    /// attempt's outcome will be.
    pub(crate) fn lose<R: Answer>(&mut self, pending: Pending, outcome: &Outcome<R>) {
        let observed = outcome.observed();
        self.attempt_ended(pending.attempt, pending.permit, outcome, observed);
        span::record_outcome(&pending.span, observed, false);
    }

    /// Settles `pending`, the attempt of a hedge race that the other one
    /// ended first with `outcome`. When that was the deadline, it ended
    /// both and nobody won: told as the deadline's. Otherwise `pending`
    /// lost: as outrun when it `was_first` (see [`Call::outrun`]), else as
    /// abandoned.
    pub(crate) fn beaten<R: Answer>(
        &mut self,
        pending: Pending,
        outcome: &Outcome<R>,
        was_first: bool,
    ) {
        match outcome {
            Outcome::DeadlineExceeded => self.lose(pending, outcome),
            _ if was_first => self.outrun(pending),
            _ => self.abandon(pending),
        }
    }

    fn settle<R: Answer>(
        &mut self,
        pending: Pending,
        outcome: Outcome<R>,
        observed: CallOutcome,
    ) -> Next<R> {
        let kind = pending.attempt.kind;
        self.attempt_ended(pending.attempt, pending.permit, &outcome, observed);
        let result = match outcome {
            Outcome::DeadlineExceeded => return Next::Return(Err(ClientError::deadline())),
            Outcome::TimedOut => Err(ClientError::Timeout),
            Outcome::Failed(err @ TransportError::Connect(_)) => Err(err.into_client()),
            Outcome::Failed(err @ TransportError::Local(_)) => {
                // A retry that failed on our side never reached the host:
                // its tokens go back, as a retry's not sent do (B2).
                if kind == AttemptKind::Retry {
                    if let Some(charge) = self.charge.take() {
                        self.refund(charge);
                    }
                }
                return Next::Return(Err(err.into_client()));
            }
            Outcome::Failed(err @ TransportError::Other(_)) => {
                return Next::Return(Err(err.into_client()));
            }
            Outcome::Response(response) => Ok(response),
        };
        if let Ok(response) = &result {
            if let Some(next) = self.follow(response) {
                return next;
            }
        }
        self.retry_or_return(result)
    }

    /// Tells the end of `attempt`: its event, and its outcome to the host's
    /// breaker (B6). A response counts by its status, a failure or a
    /// timeout as a failure. The deadline passing during the attempt, or a
    /// timebox server refusing it as too short (our impatience), a local
    /// failure (not the host's doing) and the timeout of a long-running
    /// call (whose time says nothing of the host) drop the permit without
    /// an outcome. A hedge that failed locally also gives back what its
    /// admission took (A3).
    fn attempt_ended<R: Answer>(
        &mut self,
        attempt: Attempt,
        permit: Option<Permit>,
        outcome: &Outcome<R>,
        observed: CallOutcome,
    ) {
        self.under_way.ended(attempt);
        // Given back before the end is told, which an observer's panic
        // could stop.
        if attempt.kind == AttemptKind::Hedge
            && matches!(outcome, Outcome::Failed(TransportError::Local(_)))
        {
            self.withdraw_hedge();
        }
        self.tell_attempt_end(attempt, observed);
        let Some(permit) = permit else { return };
        match outcome {
            Outcome::Response(response)
                if refused_for_its_deadline(response.status(), response.headers()) =>
            {
                drop(permit);
            }
            Outcome::Response(response) => permit.record_status(response.status()),
            Outcome::TimedOut if self.long_running => drop(permit),
            Outcome::TimedOut
            | Outcome::Failed(TransportError::Connect(_) | TransportError::Other(_)) => {
                permit.failure();
            }
            Outcome::DeadlineExceeded | Outcome::Failed(TransportError::Local(_)) => drop(permit),
        }
    }

    /// The hop a redirect answer starts (C7), or `None` when the answer is
    /// the call's: not a redirect the client follows, or one that would
    /// resend a body already sent once.
    fn hop<R: Answer>(&self, response: &R) -> Option<Hop> {
        if !redirect::is_redirect(response.status()) {
            return None;
        }
        let from = self.target.url()?;
        let hop = redirect::next_hop(response.status(), response.headers(), from, &self.method)?;
        if !self.rules.follows_other_origins && hop.from.origin() != hop.url.origin() {
            return None;
        }
        (!hop.keeps_body || self.body.is_some()).then_some(hop)
    }

    /// A redirect is followed under the same rules, as a hop.
    fn follow<R: Answer>(&mut self, response: &R) -> Option<Next<R>> {
        let hop = self.hop(response)?;
        self.hops += 1;
        if self.hops > MAX_HOPS {
            return Some(Next::Return(Err(ClientError::TooManyRedirects)));
        }
        redirect::carry_headers(&mut self.headers, &hop);
        if !hop.keeps_body {
            let empty = B::empty();
            self.replayable = empty.replayable();
            self.body = Some(empty);
        }
        let next = match Target::new(&self.rules, hop.uri, Some(hop.url), self.may_hedge) {
            Ok(target) => target,
            Err(err) => return Some(Next::Return(Err(err))),
        };
        let left = std::mem::replace(&mut self.target, next);
        if left.refilled && !self.refilled.contains(&left.host) {
            self.refilled.push(left.host);
        }
        self.target.refilled = self.refilled.contains(&self.target.host);
        self.method = hop.method;
        // A hop that became a bodiless GET (a 303, or a 301/302 after a
        // POST) may retry as any GET does (C4), whatever the first request
        // was.
        self.may_retry = may_retry(self.replayable, &self.method, self.retry_non_idempotent);
        self.next_kind = AttemptKind::Redirect;
        Some(Next::Follow)
    }

    /// What `outcome`, the end of the attempt `pending`, is for the call:
    /// a redirect that came as the attempt's time ran out is its timeout
    /// ([`redirect_in_time`](Self::redirect_in_time)), and an answer to the
    /// time sent is the deadline's ([`answer_to_the_time_sent`]). `decide`
    /// reads every outcome so, and a hedge race reads its two attempts' so
    /// to tell which one wins; a second reading changes nothing.
    pub(crate) fn read<R: Answer>(&self, outcome: Outcome<R>, pending: &Pending) -> Outcome<R> {
        answer_to_the_time_sent(self.redirect_in_time(outcome, pending), pending)
    }

    /// `outcome`, unless it is a redirect that would start a hop and came
    /// as the attempt's time ran out. One attempt's timeout covers the
    /// chain of hops (C7), so such a redirect starts no hop, whose host
    /// would meet a timeout it never had a chance at: the attempt timed
    /// out, or the deadline passed, as if the timer had been polled before
    /// the answer. A redirect that starts no hop is an answer like any
    /// other.
    fn redirect_in_time<R: Answer>(&self, outcome: Outcome<R>, pending: &Pending) -> Outcome<R> {
        match &outcome {
            // The status first: only a redirect's time is read.
            Outcome::Response(response)
                if redirect::is_redirect(response.status())
                    && pending.ends.is_expired()
                    && self.hop(response).is_some() =>
            {
                if self.deadline.is_some_and(Deadline::is_expired) {
                    Outcome::DeadlineExceeded
                } else {
                    Outcome::TimedOut
                }
            }
            _ => outcome,
        }
    }

    /// Whether the last result is worth another attempt that
    /// fits the time left and the host's budget.
    fn retry_or_return<R: Answer>(&mut self, result: Result<R, ClientError>) -> Next<R> {
        let kind = match &result {
            Ok(response) => classify_answer(response.status(), response.headers()),
            Err(ClientError::Timeout | ClientError::Connect(_)) => Some(RetryKind::Transient),
            Err(_) => None,
        };
        let Some(kind) = kind else {
            return self.finish(result);
        };
        if !self.may_retry {
            return self.skip(SkipReason::NotIdempotent, result);
        }
        if self.retries_made >= self.max_retries {
            return self.skip(SkipReason::MaxAttempts, result);
        }
        let reason = RetryReason::of(&result);
        let attempt = self.retries_made + 1;
        // A retry the host's open breaker would refuse is not worth waiting
        // for: the last result is the answer (C6).
        let breaker = self.target.breaker.as_ref();
        if breaker.is_some_and(|breaker| breaker.state() == BreakerState::Open) {
            let host = &self.target.host;
            tracing::debug!(host, attempt, %reason, "no retry: the host's circuit breaker is open");
            return self.skip(SkipReason::BreakerOpen, result);
        }
        let config = &self.rules.config;
        let hint = match &result {
            Ok(response) => hint_wait(
                response.status(),
                response.headers(),
                Duration::from_secs(config.max_retry_after_secs),
            ),
            Err(_) => None,
        };
        let rules = &self.rules;
        let wait =
            rules.backoff.delay(self.retries_made, &rules.entropy) + hint.unwrap_or_default();
        // C6: a retry that does not fit the time left is not started, and
        // costs nothing.
        if let Some(left) = self.deadline.map(Deadline::remaining) {
            if left <= wait + RETRY_MARGIN {
                tracing::debug!(
                    host = self.target.host,
                    attempt,
                    %reason,
                    wait_ms = wait.as_millis(),
                    left_ms = left.as_millis(),
                    "no retry: the wait does not fit the time left"
                );
                return self.skip(SkipReason::Deadline, result);
            }
        }
        // B2: a retry the bucket cannot pay for is not made.
        let budget = self.target.budget.clone();
        if let Some(budget) = &budget {
            if !budget.try_withdraw(kind) {
                let now = tokio::time::Instant::now();
                // A spell that went quiet with no call to end it (one
                // attempt ran past the 10 s) ends before another begins.
                end_quiet_refusals(budget, &self.target.host, now);
                if budget.refused_at(now) {
                    tracing::warn!(
                        host = self.target.host,
                        tokens = budget.tokens(),
                        "the host's retry budget refuses retries: most of its calls' failures \
                         come back unretried while first attempts refill it \
                         (`http.client.retry_budget`); the spell's end is said once none has \
                         been refused for 10 s"
                    );
                }
                tracing::debug!(
                    host = self.target.host,
                    attempt,
                    %reason,
                    tokens = budget.tokens(),
                    "no retry: the host's retry budget cannot pay for it"
                );
                return self.skip(SkipReason::Budget, result);
            }
        }
        // Only this retry's tokens can come back: an earlier retry's charge
        // was sent and did not succeed, so what it spent stays spent, also
        // when this retry goes to a host with no bucket (B4).
        self.charge = budget.map(|budget| Charge {
            budget,
            host: self.target.label.clone(),
            kind,
            sent: false,
        });
        // Told once the charge holds the tokens: an observer that panics
        // here drops the call with its retry unsent, and they go back.
        if let Some(charge) = &self.charge {
            self.tell_tokens(&charge.budget, None);
        }
        tracing::debug!(
            host = self.target.host,
            attempt = attempt + 1,
            %reason,
            wait_ms = wait.as_millis(),
            "retrying"
        );
        self.retries_made += 1;
        self.next_kind = AttemptKind::Retry;
        Next::Retry(wait)
    }

    /// The last attempt's result as the call's; a retry that ended in
    /// success gives its tokens back.
    fn finish<R: Answer>(&mut self, result: Result<R, ClientError>) -> Next<R> {
        if let Ok(response) = &result {
            if response.status().as_u16() < 400 {
                if let Some(charge) = self.charge.take() {
                    self.refund(charge);
                }
            }
        }
        Next::Return(result)
    }

    /// A retry not made: tells why, and the last result is the answer.
    fn skip<R: Answer>(&mut self, reason: SkipReason, result: Result<R, ClientError>) -> Next<R> {
        self.budget_refused = reason == SkipReason::Budget;
        self.rules.observers.emit(|| Event::RetrySkipped {
            host: self.label(),
            reason,
        });
        self.finish(result)
    }
}

/// A host's answer to the time left the attempt told it, as the call's
/// deadline passing: a `503` or `504` (a timebox server's answers to a
/// deadline that passed, S5 and S6, or a proxy's timeout), or a `408` (an
/// Envoy's, at the `grpc-timeout` it was sent, which Istio has it read on
/// every HTTP route) that comes no more than [`PEER_LEAD`] before the time
/// sent runs out. The host counted
/// what it was sent (whole milliseconds) from when it read it, so its
/// deadline ends a little before ours: its answer is ours passing, not the
/// host failing, and the call ends with its deadline (C2), a cancelled
/// call for the breaker (B6). A timebox server's refusal without running
/// the request (`x-timebox-shed`) is an answer as it is.
fn answer_to_the_time_sent<R: Answer>(outcome: Outcome<R>, pending: &Pending) -> Outcome<R> {
    let Outcome::Response(response) = &outcome else {
        return outcome;
    };
    let status = response.status();
    let timed_out = matches!(
        status,
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT | StatusCode::REQUEST_TIMEOUT
    ) && !was_shed(status, response.headers());
    let sent_ran_out = pending
        .sent
        .is_some_and(|sent| sent.remaining() <= PEER_LEAD);
    if timed_out && sent_ran_out {
        Outcome::DeadlineExceeded
    } else {
        outcome
    }
}

impl<R: Answer> Outcome<R> {
    /// Whether the attempt leaves a hedge race to the other one: it failed
    /// on its own (its transport, its timeout), or a timebox server shed it
    /// without running it, so the host has not answered it. An answer of
    /// the host's, or the call's time running out, ends the race.
    pub(crate) fn leaves_the_race(&self) -> bool {
        match self {
            Self::Failed(_) | Self::TimedOut => true,
            Self::Response(response) => was_shed(response.status(), response.headers()),
            Self::DeadlineExceeded => false,
        }
    }

    fn observed(&self) -> CallOutcome {
        match self {
            Self::Response(response) => CallOutcome::Status(response.status().as_u16()),
            Self::Failed(TransportError::Connect(_)) => CallOutcome::Connect,
            Self::Failed(TransportError::Other(_) | TransportError::Local(_)) => CallOutcome::Error,
            Self::TimedOut => CallOutcome::Timeout,
            Self::DeadlineExceeded => CallOutcome::DeadlineExceeded,
        }
    }
}

/// Why an attempt is worth retrying, for the logs.
enum RetryReason {
    Status(StatusCode),
    Timeout,
    Connect,
}

impl RetryReason {
    fn of<R: Answer>(result: &Result<R, ClientError>) -> Self {
        match result {
            Ok(response) => Self::Status(response.status()),
            Err(ClientError::Timeout) => Self::Timeout,
            Err(_) => Self::Connect,
        }
    }
}

impl fmt::Display for RetryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Status(status) => write!(f, "status {}", status.as_u16()),
            Self::Timeout => f.write_str("attempt timeout"),
            Self::Connect => f.write_str("connect error"),
        }
    }
}

/// Ends `host`'s spell of refused retries, and says so, if none was
/// refused for 10 s by `now`.
pub(super) fn end_quiet_refusals(budget: &RetryBudget, host: &str, now: tokio::time::Instant) {
    if budget.quiet_at(now) {
        tracing::info!(
            host,
            tokens = budget.tokens(),
            "the host's retry budget has refused no retry for 10 s"
        );
    }
}
