//! [`Call`]: the state of one call between its attempts, and how it ends.

use std::sync::Arc;
use std::time::Duration;

use http::{Extensions, HeaderMap, HeaderValue, Method, Version};
use tokio::time::Instant;
use tracing::Span;
use url::Url;

use crate::client::hedge::Admitted;
use crate::client::rules::Rules;
use crate::client::{span, Attempt, AttemptKind, CallOptions, ClientError};
use crate::deadline::Deadline;
use crate::observe::{tell_outbound_deadline, CallOutcome, Event, Label};
use crate::retry::{is_idempotent, RetryBudget};

use super::attempt::UnderWay;
use super::charge::Charge;
use super::pinned::{pinned_deadline, AsSet, Pinned};
use super::request::{Answer, Body, Request};
use super::target::Target;

const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The state of one call between its attempts.
pub(crate) struct Call<B> {
    pub(super) rules: Arc<Rules>,
    pub(super) method: Method,
    pub(super) target: Target,
    pub(super) version: Version,
    pub(super) headers: HeaderMap,
    pub(super) extensions: Extensions,
    /// `None` once a body that is not replayable has been sent.
    pub(super) body: Option<B>,
    pub(super) replayable: bool,
    pub(super) deadline: Option<Deadline>,
    /// A caller's shorter deadline header, sent as set on the first attempt.
    pub(super) as_set: Option<AsSet>,
    pub(super) may_retry: bool,
    /// Whether the caller let a method that is not idempotent retry: read
    /// again when a redirect changes the method.
    pub(super) retry_non_idempotent: bool,
    /// Whether the first attempt may be hedged (A3): hedging is on for the
    /// call, and sending the request twice is safe.
    pub(super) may_hedge: bool,
    /// Whether the call's time is kept out of its host's breaker: its
    /// answer comes only once its work is done.
    pub(super) long_running: bool,
    pub(super) max_retries: u32,
    pub(super) retries_made: u32,
    pub(super) hops: u32,
    /// The requests sent so far.
    pub(super) sent: u32,
    /// Why the next request is sent: a retry or the first request begins an
    /// attempt, and so starts its timeout; a redirect is a hop within one.
    pub(super) next_kind: AttemptKind,
    /// The hosts redirects led away from whose bucket this request has
    /// refilled: a request refills each host's bucket once.
    pub(super) refilled: Vec<String>,
    /// The tokens the pending retry holds.
    pub(super) charge: Option<Charge>,
    /// The hedge's admission, once one was admitted (a call hedges its
    /// first attempt only).
    pub(super) hedge: Option<Admitted>,
    /// Whether the hedge went out: one admitted and never sent (an
    /// observer's panic stopped it) is withdrawn when the call is dropped.
    pub(super) hedge_sent: bool,
    pub(super) attempt_timeout: Duration,
    /// When the current attempt times out: one timeout covers its whole
    /// chain of hops. Set when the first request of an attempt starts.
    pub(super) attempt_ends: Option<Deadline>,
    /// When the call began, when someone listens (for its duration).
    pub(super) began: Option<Instant>,
    /// The span of the latest attempt (O4), open until the next one starts
    /// or the call ends.
    pub(super) span: Span,
    /// Whether the budget refused the retry after the latest attempt.
    pub(super) budget_refused: bool,
    /// Whether [`Call::end`] told the call's end; a call dropped before
    /// that tells it on drop.
    pub(super) ended: bool,
    /// The attempts sent and not yet settled.
    pub(super) under_way: UnderWay,
}

impl<B: Body> Call<B> {
    /// The call `request` describes, under `rules`.
    ///
    /// # Errors
    ///
    /// The request's URI names no host to send to.
    pub(crate) fn new(
        rules: Arc<Rules>,
        request: Request<B>,
        options: CallOptions,
    ) -> Result<Self, ClientError> {
        if options.attempt_timeout == Some(Duration::ZERO) {
            return Err(ClientError::InvalidRequest(
                "`attempt_timeout` is zero: every attempt would time out before it began"
                    .to_owned(),
            ));
        }
        let Request {
            method,
            uri,
            url,
            version,
            mut headers,
            extensions,
            body,
        } = request;
        let config = &rules.config;
        // C3: a deadline header set by the caller pins a deadline of its own.
        let Pinned { deadline, as_set } = pinned_deadline(
            &mut headers,
            config.send_deadline_header,
            rules.deadline_headers,
        );
        // One retry allowance spans the whole redirect chain (C7); following
        // a redirect is not a retry.
        let max_retries = options
            .retries
            .unwrap_or_else(|| saturating_u32(config.max_retries));
        let replayable = body.replayable();
        let retry_non_idempotent = options.retry_non_idempotent;
        let may_retry = may_retry(replayable, &method, retry_non_idempotent);
        let may_hedge = replayable
            && is_idempotent(&method)
            && !options.long_running
            && (options.hedge || rules.hedging.enabled());
        if retry_non_idempotent && !is_idempotent(&method) && !headers.contains_key(IDEMPOTENCY_KEY)
        {
            let entropy = &rules.entropy;
            let key = format!("{:016x}{:016x}", entropy.next_u64(), entropy.next_u64());
            headers.insert(
                IDEMPOTENCY_KEY,
                HeaderValue::from_str(&key).expect("hex is a valid header value"),
            );
        }
        let attempt_timeout = options
            .attempt_timeout
            .unwrap_or_else(|| Duration::from_secs(config.timeout_secs));
        let target = Target::new(&rules, uri, url, may_hedge)?;
        Ok(Self {
            method,
            target,
            version,
            headers,
            extensions,
            body: Some(body),
            replayable,
            deadline,
            as_set,
            may_retry,
            retry_non_idempotent,
            may_hedge,
            long_running: options.long_running,
            max_retries,
            retries_made: 0,
            hops: 0,
            sent: 0,
            next_kind: AttemptKind::First,
            refilled: Vec::new(),
            charge: None,
            hedge: None,
            hedge_sent: false,
            attempt_timeout,
            attempt_ends: None,
            began: rules.observers.is_listening().then(Instant::now),
            span: Span::none(),
            budget_refused: false,
            ended: false,
            under_way: UnderWay::default(),
            rules,
        })
    }

    /// Shortens the call's deadline to `deadline` when that is earlier
    /// (D3: a scope only shortens): a caller's header that would grant more
    /// then no longer goes out as set.
    pub(crate) fn shorten_to(&mut self, deadline: Deadline) {
        if self.deadline.is_some_and(|pinned| pinned <= deadline) {
            return;
        }
        self.deadline = Some(deadline);
        self.as_set = None;
    }

    /// Takes a wait for the sender to be ready, `waited` long, out of the
    /// attempt's time: the next request is a hop of an attempt whose
    /// timeout covers its chain (C7), and waiting on our own side never
    /// counts in an attempt's timeout. (Any other attempt's timeout starts
    /// when it does, after the wait.)
    pub(crate) fn waited_for_ready(&mut self, waited: Duration) {
        if self.next_kind != AttemptKind::Redirect {
            return;
        }
        if let Some(ends) = &mut self.attempt_ends {
            // An end past what the clock can hold stays where it was.
            if let Some(later) = ends.instant().checked_add(waited) {
                *ends = Deadline::at(later);
            }
        }
    }

    /// The call's deadline, if it has one.
    pub(crate) fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// The URL the next request goes to, when a door or a redirect gave
    /// one.
    pub(crate) fn url(&self) -> Option<&Url> {
        self.target.url.as_ref()
    }
}

impl<B> Call<B> {
    /// Ends the call with `result`: tells its outcome and duration, and a
    /// deadline that passed in it.
    pub(crate) fn end<R: Answer>(&mut self, result: &Result<R, ClientError>) {
        let outcome = match result {
            Ok(response) => CallOutcome::Status(response.status().as_u16()),
            Err(err) => outcome_of(err),
        };
        self.tell_end(outcome);
    }

    pub(super) fn tell_end(&mut self, outcome: CallOutcome) {
        self.ended = true;
        let observers = &self.rules.observers;
        // Dropped by a route or a gRPC method whose deadline passed, the
        // call leaves the deadline to its owner, which tells it once.
        if outcome == CallOutcome::DeadlineExceeded {
            tell_outbound_deadline(observers);
        }
        observers.emit(|| Event::CallFinished {
            host: self.label(),
            outcome,
            duration: self.began.map(|began| began.elapsed()).unwrap_or_default(),
        });
    }

    /// Tells the end of `attempt` (O1), however it ended.
    pub(super) fn tell_attempt_end(&self, attempt: Attempt, outcome: CallOutcome) {
        self.rules.observers.emit(|| Event::AttemptFinished {
            host: self.label(),
            attempt,
            outcome,
        });
    }

    /// Tells the level of `budget`, the current target's, or that of
    /// `host` when given (a retry's bucket the call has left since).
    pub(super) fn tell_tokens(&self, budget: &RetryBudget, host: Option<Label>) {
        self.rules.observers.emit(|| Event::BudgetTokens {
            host: host.unwrap_or_else(|| self.label()),
            tokens: budget.tokens(),
        });
    }

    /// Undoes the admission of a hedge that was not sent after all, or
    /// failed on our side (the host's doing or not, as a retry's refund
    /// reads it, B2): it costs nothing, neither tokens nor a place in the
    /// host's share of hedged requests.
    pub(super) fn withdraw_hedge(&mut self) {
        let (Some(admitted), Some(stats)) = (self.hedge.take(), &self.target.stats) else {
            return;
        };
        let budget = self.target.budget.as_ref();
        self.rules.hedging.withdraw(admitted, stats, budget);
        if let Some(budget) = budget {
            self.tell_tokens(budget, None);
        }
    }

    /// Gives a retry's tokens back, and tells its bucket's new level.
    pub(super) fn refund(&self, charge: Charge) {
        let (budget, host) = charge.refund();
        self.tell_tokens(&budget, host);
    }

    /// The target's `host` value in events.
    pub(super) fn label(&self) -> Label {
        let target = &self.target;
        target
            .label
            .clone()
            .unwrap_or_else(|| self.rules.labels.of(&target.host))
    }
}

/// Whether a request may be sent again after an answer worth a retry
/// (C4): its body can be, and its method is idempotent or the caller let
/// it retry all the same.
pub(super) fn may_retry(replayable: bool, method: &Method, retry_non_idempotent: bool) -> bool {
    replayable && (is_idempotent(method) || retry_non_idempotent)
}

impl<B> Drop for Call<B> {
    /// A call dropped before its end (its caller went away, or a deadline
    /// outside it passed) is told too, with the attempts it had under way:
    /// as the deadline's when it passed, as cancelled otherwise. A retry's
    /// tokens not spent go back to the bucket, and so does what a hedge
    /// never sent took.
    fn drop(&mut self) {
        // The tokens of a retry never sent (the call was dropped during its
        // backoff, or the breaker refused it) go back, and the bucket's new
        // level is told as every other change of it is.
        if let Some(charge) = self.charge.take().filter(|charge| !charge.sent) {
            self.refund(charge);
        }
        // Likewise a hedge admitted and never sent.
        if !self.hedge_sent {
            self.withdraw_hedge();
        }
        if self.ended {
            return;
        }
        let outcome = if self.deadline.is_some_and(Deadline::is_expired) {
            CallOutcome::DeadlineExceeded
        } else {
            CallOutcome::Cancelled
        };
        for (attempt, span) in self.under_way.take() {
            self.tell_attempt_end(attempt, outcome);
            span::record_outcome(&span, outcome, false);
        }
        self.tell_end(outcome);
    }
}

fn outcome_of(err: &ClientError) -> CallOutcome {
    match err {
        ClientError::DeadlineExceeded(_) => CallOutcome::DeadlineExceeded,
        ClientError::Timeout => CallOutcome::Timeout,
        ClientError::CircuitBreakerOpen { .. } => CallOutcome::CircuitOpen,
        ClientError::Connect(_) => CallOutcome::Connect,
        ClientError::Status { status, .. } => CallOutcome::Status(status.as_u16()),
        _ => CallOutcome::Error,
    }
}

fn saturating_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
