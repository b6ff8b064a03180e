//! The call engine: one outbound call as a state machine of attempts and
//! the decision after each.
//!
//! A [`Call`] knows the rules and keeps the state (the deadline, the retry
//! allowance, the target and its host's breaker and budget, the tokens it
//! holds); it never sends or sleeps. [`drive`](super::call::drive) runs it,
//! in a loop:
//!
//! 1. [`Call::start`] prepares the next request ([`Pending`]): it checks
//!    the deadline, takes the host's breaker permit, refills the host's
//!    bucket once per request, writes the deadline headers and numbers the
//!    request ([`Attempt`], which the door puts where the next layer looks);
//! 2. the door's [`Sender`](super::call::Sender) sends it, bounded by
//!    [`Pending::ends`] and the deadline, and hands back what came of it;
//! 3. [`Call::decide`] settles the permit and says what comes next
//!    ([`Next`]): follow a redirect, wait and retry, or return.
//!
//! The doors are `Client` (over its transport), the reqwest middleware
//! (over the rest of the chain) and `ClientLayer` (over the inner tower
//! service); each only converts its request and response, so the rules
//! exist once.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Extensions, HeaderMap, HeaderValue, Method, StatusCode, Uri, Version};
use tokio::time::Instant;
use tracing::Span;
use url::Url;

use crate::breaker::{BreakerState, CircuitBreaker, Permit};
use crate::deadline::header::{self, DEADLINE_HEADER};
use crate::deadline::Deadline;
use crate::deadline::Format;
use crate::observe::{CallOutcome, Event, Label, SkipReason, Stage};
use crate::retry::{classify_answer, hint_wait, host_key, is_idempotent, RetryBudget, RetryKind};

use super::hedge::HostStats;
use super::redirect::{self, MAX_HOPS};
use super::rules::Rules;
use super::span;
use super::transport::TransportError;
use super::{Attempt, AttemptKind, ClientError};

/// A retry must leave at least this much of the deadline after its wait,
/// or it is not started.
const RETRY_MARGIN: Duration = Duration::from_millis(10);

const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The header that marks a hedge: `2;hedge`.
const ATTEMPT_HEADER: &str = "x-timebox-attempt";

/// A request body as the engine holds it between attempts.
pub(crate) trait Body: Sized {
    /// Whether the body can be sent again; one that cannot is sent once:
    /// the call makes no retry, and follows no redirect that keeps it.
    fn replayable(&self) -> bool;
    /// A copy for the next attempt, when the body is replayable.
    fn try_clone(&self) -> Option<Self>;
    /// No body: what a redirect to a GET sends.
    fn empty() -> Self;
    /// Whether the body is known to be empty.
    fn is_empty(&self) -> bool;
}

impl Body for Bytes {
    fn replayable(&self) -> bool {
        true
    }

    fn try_clone(&self) -> Option<Self> {
        Some(self.clone())
    }

    fn empty() -> Self {
        Bytes::new()
    }

    fn is_empty(&self) -> bool {
        Bytes::is_empty(self)
    }
}

/// What the engine reads of a response: its status and headers.
pub(crate) trait Answer {
    fn status(&self) -> StatusCode;
    fn headers(&self) -> &HeaderMap;
}

impl<T> Answer for http::Response<T> {
    fn status(&self) -> StatusCode {
        http::Response::status(self)
    }

    fn headers(&self) -> &HeaderMap {
        http::Response::headers(self)
    }
}

/// What a call asks of the engine beyond the configuration.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Options {
    /// At most this many retries, instead of `http.client.max_retries`.
    pub(crate) retries: Option<u32>,
    /// Retry even a method that is not idempotent.
    pub(crate) retry_non_idempotent: bool,
    /// Hedge this call, whatever `http.client.hedge.enabled` says.
    pub(crate) hedge: bool,
}

/// A request as a door hands it to the engine.
pub(crate) struct Request<B> {
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    /// The same target as a `Url`, when the door has one: the engine needs
    /// it only to follow a redirect, and parses it then if not given.
    pub(crate) url: Option<Url>,
    pub(crate) version: Version,
    pub(crate) headers: HeaderMap,
    pub(crate) extensions: Extensions,
    pub(crate) body: B,
}

impl<B> Request<B> {
    /// `request` as it is; [`Call::new`] checks that its URI is absolute.
    pub(crate) fn from_http(request: http::Request<B>) -> Self {
        let (parts, body) = request.into_parts();
        Self {
            method: parts.method,
            uri: parts.uri,
            url: None,
            version: parts.version,
            headers: parts.headers,
            extensions: parts.extensions,
            body,
        }
    }

    /// A request to `url`.
    ///
    /// # Errors
    ///
    /// `url` is not a valid URI.
    pub(crate) fn to_url(
        method: Method,
        url: Url,
        headers: HeaderMap,
        body: B,
    ) -> Result<Self, ClientError> {
        Ok(Self {
            method,
            uri: to_uri(&url)?,
            url: Some(url),
            version: Version::default(),
            headers,
            extensions: Extensions::new(),
            body,
        })
    }

    /// The same request with its body mapped.
    pub(crate) fn map_body<C>(self, f: impl FnOnce(B) -> C) -> Request<C> {
        Request {
            method: self.method,
            uri: self.uri,
            url: self.url,
            version: self.version,
            headers: self.headers,
            extensions: self.extensions,
            body: f(self.body),
        }
    }
}

/// The state of one call between its attempts.
pub(crate) struct Call<B> {
    rules: Arc<Rules>,
    method: Method,
    target: Target,
    version: Version,
    headers: HeaderMap,
    extensions: Extensions,
    /// `None` once a body that is not replayable has been sent.
    body: Option<B>,
    replayable: bool,
    deadline: Option<Deadline>,
    /// A caller's shorter deadline header, sent as set on the first attempt.
    as_set: Option<HeaderValue>,
    may_retry: bool,
    /// Whether the first attempt may be hedged (A3): hedging is on for the
    /// call, and sending the request twice is safe.
    may_hedge: bool,
    max_retries: u32,
    retries_made: u32,
    hops: u32,
    /// The requests sent so far.
    sent: u32,
    /// Why the next request is sent: a retry or the first request begins an
    /// attempt, and so starts its timeout; a redirect is a hop within one.
    next_kind: AttemptKind,
    /// The hosts redirects led away from whose bucket this request has
    /// refilled: a request refills each host's bucket once.
    refilled: Vec<String>,
    /// The tokens the pending retry holds.
    charge: Option<Charge>,
    attempt_timeout: Duration,
    /// When the current attempt times out: one timeout covers its whole
    /// chain of hops. Set when the first request of an attempt starts.
    attempt_ends: Option<Deadline>,
    /// When the call began, when someone listens (for its duration).
    began: Option<Instant>,
    /// The span of the latest attempt (O4), open until the next one starts
    /// or the call ends.
    span: Span,
    /// Whether the budget refused the retry after the latest attempt.
    budget_refused: bool,
    /// Whether [`Call::end`] told the call's end; a call dropped before
    /// that tells it on drop.
    ended: bool,
}

/// Where the next request goes, and its host's breaker and budget: found
/// once per call, and again after each redirect.
struct Target {
    uri: Uri,
    /// The same as a `Url`, once a door or a redirect made one.
    url: Option<Url>,
    host: String,
    /// The host's `host` value in events, when someone listens.
    label: Option<Label>,
    breaker: Option<CircuitBreaker>,
    budget: Option<RetryBudget>,
    /// The host's recent latencies and hedges, when the call may hedge.
    stats: Option<Arc<HostStats>>,
    /// Whether this request has refilled the host's bucket.
    refilled: bool,
}

impl Target {
    /// The target of `uri`; with `hedging`, with its host's stats (only
    /// calls that may hedge keep them, so others pay nothing for them).
    fn new(rules: &Rules, uri: Uri, url: Option<Url>, hedging: bool) -> Result<Self, ClientError> {
        let host = host_key(&uri).ok_or_else(|| {
            ClientError::InvalidRequest(format!(
                "the request's uri `{uri}` has no host, or no port and no http(s) scheme"
            ))
        })?;
        Ok(Self {
            label: rules
                .observers
                .is_listening()
                .then(|| rules.labels.of(&host)),
            breaker: rules.breaker(&host),
            budget: rules.budgets.for_host(&host),
            stats: hedging.then(|| rules.hedging.stats(&host)).flatten(),
            uri,
            url,
            host,
            refilled: false,
        })
    }

    /// The target as a `Url`, parsed from the URI when no door gave one.
    fn url(&self) -> Option<Url> {
        match &self.url {
            Some(url) => Some(url.clone()),
            None => Url::parse(&self.uri.to_string()).ok(),
        }
    }
}

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
    permit: Option<Permit>,
    /// When it was sent, for the host's latency.
    started: Instant,
    /// When the attempt times out, its deadline aside: what a redirect hop
    /// after it keeps.
    attempt_ends: Deadline,
}

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
    /// The call `request` describes, under `rules`.
    ///
    /// # Errors
    ///
    /// The request's URI names no host to send to.
    pub(crate) fn new(
        rules: Arc<Rules>,
        request: Request<B>,
        options: Options,
    ) -> Result<Self, ClientError> {
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
        let Pinned { deadline, as_set } =
            pinned_deadline(&mut headers, config.send_deadline_header);
        // One retry allowance spans the whole redirect chain (C7); following
        // a redirect is not a retry.
        let max_retries = options
            .retries
            .unwrap_or_else(|| saturating_u32(config.max_retries));
        let replayable = body.replayable();
        let retry_non_idempotent = options.retry_non_idempotent;
        let may_retry = replayable && (is_idempotent(&method) || retry_non_idempotent);
        let may_hedge =
            replayable && is_idempotent(&method) && (options.hedge || rules.hedging.enabled());
        if retry_non_idempotent && !is_idempotent(&method) && !headers.contains_key(IDEMPOTENCY_KEY)
        {
            let entropy = &rules.entropy;
            let key = format!("{:016x}{:016x}", entropy.next_u64(), entropy.next_u64());
            headers.insert(
                IDEMPOTENCY_KEY,
                HeaderValue::from_str(&key).expect("hex is a valid header value"),
            );
        }
        let attempt_timeout = Duration::from_secs(config.timeout_secs);
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
            may_hedge,
            max_retries,
            retries_made: 0,
            hops: 0,
            sent: 0,
            next_kind: AttemptKind::First,
            refilled: Vec::new(),
            charge: None,
            attempt_timeout,
            attempt_ends: None,
            began: rules.observers.is_listening().then(Instant::now),
            span: Span::none(),
            budget_refused: false,
            ended: false,
            rules,
        })
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

    /// Prepares the next attempt: the request to send, and the attempt to
    /// hand back to [`Call::decide`] with what came of it.
    ///
    /// # Errors
    ///
    /// The deadline has passed (no attempt is made), the host's breaker is
    /// open, or the request cannot be built.
    pub(crate) fn start(&mut self) -> Result<(http::Request<B>, Pending), ClientError> {
        // C1: an expired deadline ends the call before any attempt.
        if self.deadline.is_some_and(Deadline::is_expired) {
            return Err(ClientError::deadline());
        }
        let target = &self.target;
        let attempt = Attempt {
            number: self.sent + 1,
            kind: self.next_kind,
        };
        self.span = span::attempt_span(&self.method, &target.uri, attempt);
        let permit = match &target.breaker {
            Some(breaker) => Some(breaker.try_acquire().map_err(|open| {
                span::record_outcome(&self.span, CallOutcome::CircuitOpen, false);
                self.span = Span::none();
                ClientError::CircuitBreakerOpen {
                    host: target.host.clone(),
                    open,
                }
            })?),
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
                self.tell_tokens(budget);
            }
            self.target.refilled = true;
        }
        if let Some(charge) = &mut self.charge {
            charge.sent = true;
        }
        // One clock read for the attempt's timeout and the time left.
        let now = Instant::now();
        let attempt_ends = match self.attempt_ends {
            Some(ends) if self.next_kind == AttemptKind::Redirect => ends,
            _ => Deadline::after_start(now, self.attempt_timeout),
        };
        self.attempt_ends = Some(attempt_ends);
        let mut headers = self.headers.clone();
        if let Some(deadline) = self.deadline {
            let written = self.rules.deadline_headers;
            written.write(
                deadline.instant().saturating_duration_since(now),
                &mut headers,
            );
            // The first attempt sends a caller's shorter value as it was set.
            if let Some(value) = self
                .as_set
                .take()
                .filter(|_| written.contains(Format::Timebox))
            {
                headers.insert(DEADLINE_HEADER, value);
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
        let pending = Pending {
            ends: self.deadline.map_or(attempt_ends, |d| d.min(attempt_ends)),
            attempt,
            span: self.span.clone(),
            permit,
            started: now,
            attempt_ends,
        };
        Ok((request, pending))
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
    /// now (see [`Hedging::admit`](super::hedge::Hedging::admit)): a
    /// request like the first, marked `x-timebox-attempt: N;hedge`.
    pub(crate) fn start_hedge(&mut self) -> Option<(http::Request<B>, Pending)> {
        let stats = self.target.stats.clone()?;
        let left = self.deadline.map(Deadline::remaining);
        let budget = self.target.budget.clone();
        if let Err(refusal) = self.rules.hedging.admit(&stats, left, budget.as_ref()) {
            tracing::debug!(host = self.target.host, "no hedge: {}", refusal.as_str());
            return None;
        }
        if let Some(budget) = &budget {
            self.tell_tokens(budget);
        }
        self.next_kind = AttemptKind::Hedge;
        let (mut request, pending) = self.start().ok()?;
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

    /// Drops `pending`, the attempt that lost a hedge race: told as
    /// cancelled, and so counted by the host's breaker (B6).
    pub(crate) fn abandon(&mut self, pending: Pending) {
        self.rules.observers.emit(|| Event::AttemptFinished {
            host: self.label(),
            attempt: pending.attempt,
            outcome: CallOutcome::Cancelled,
        });
        span::record_outcome(&pending.span, CallOutcome::Cancelled, false);
    }

    /// Settles `pending` with what came of it and says what comes next.
    pub(crate) fn decide<R: Answer>(&mut self, pending: Pending, outcome: Outcome<R>) -> Next<R> {
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
        // The attempt is over: its span must not cover the wait before the
        // next one.
        self.span = Span::none();
        next
    }

    fn settle<R: Answer>(
        &mut self,
        pending: Pending,
        outcome: Outcome<R>,
        observed: CallOutcome,
    ) -> Next<R> {
        let Pending {
            permit, attempt, ..
        } = pending;
        self.rules.observers.emit(|| Event::AttemptFinished {
            host: self.label(),
            attempt,
            outcome: observed,
        });
        let result = match outcome {
            // The deadline passed during the attempt: our impatience, not
            // the host's fault, so the permit is dropped without an outcome.
            Outcome::DeadlineExceeded => return Next::Return(Err(ClientError::deadline())),
            Outcome::TimedOut => {
                fail(permit);
                Err(ClientError::Timeout)
            }
            Outcome::Failed(err @ TransportError::Connect(_)) => {
                fail(permit);
                Err(err.into_client())
            }
            Outcome::Failed(err @ TransportError::Other(_)) => {
                fail(permit);
                return Next::Return(Err(err.into_client()));
            }
            Outcome::Response(response) => {
                if let Some(permit) = permit {
                    permit.record_status(response.status());
                }
                Ok(response)
            }
        };
        if let Ok(response) = &result {
            if let Some(next) = self.follow(response) {
                return next;
            }
        }
        self.retry_or_return(result)
    }

    /// A redirect is followed under the same rules, as a hop. One that
    /// would resend a body already sent once is not: it is the answer.
    fn follow<R: Answer>(&mut self, response: &R) -> Option<Next<R>> {
        if !redirect::is_redirect(response.status()) {
            return None;
        }
        let from = self.target.url()?;
        let hop = redirect::next_hop(response.status(), response.headers(), &from, &self.method)?;
        if hop.keeps_body && self.body.is_none() {
            return None;
        }
        self.hops += 1;
        if self.hops > MAX_HOPS {
            return Some(Next::Return(Err(ClientError::TooManyRedirects)));
        }
        let had_body = self.body.as_ref().is_none_or(|body| !body.is_empty());
        redirect::carry_headers(&mut self.headers, &from, &hop, had_body);
        if !hop.keeps_body {
            let empty = B::empty();
            self.replayable = empty.replayable();
            self.body = Some(empty);
        }
        let uri = match to_uri(&hop.url) {
            Ok(uri) => uri,
            Err(err) => return Some(Next::Return(Err(err))),
        };
        let next = match Target::new(&self.rules, uri, Some(hop.url), self.may_hedge) {
            Ok(target) => target,
            Err(err) => return Some(Next::Return(Err(err))),
        };
        let left = std::mem::replace(&mut self.target, next);
        if left.refilled && !self.refilled.contains(&left.host) {
            self.refilled.push(left.host);
        }
        self.target.refilled = self.refilled.contains(&self.target.host);
        self.method = hop.method;
        self.next_kind = AttemptKind::Redirect;
        Some(Next::Follow)
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
        if let Some(budget) = self.target.budget.clone() {
            if !budget.try_withdraw(kind) {
                tracing::debug!(
                    host = self.target.host,
                    attempt,
                    %reason,
                    tokens = budget.tokens(),
                    "no retry: the host's retry budget cannot pay for it"
                );
                return self.skip(SkipReason::Budget, result);
            }
            self.tell_tokens(&budget);
            self.charge = Some(Charge {
                budget,
                kind,
                sent: false,
            });
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
                    let budget = charge.refund();
                    self.tell_tokens(&budget);
                }
            }
        }
        Next::Return(result)
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

    fn tell_end(&mut self, outcome: CallOutcome) {
        self.ended = true;
        let observers = &self.rules.observers;
        if outcome == CallOutcome::DeadlineExceeded {
            observers.emit(|| Event::DeadlineExceeded {
                stage: Stage::Outbound,
                route: None,
            });
        }
        observers.emit(|| Event::CallFinished {
            host: self.label(),
            outcome,
            duration: self.began.map(|began| began.elapsed()).unwrap_or_default(),
        });
    }

    /// A retry not made: tells why, and the last result is the answer.
    fn skip<R: Answer>(&mut self, reason: SkipReason, result: Result<R, ClientError>) -> Next<R>
    where
        B: Body,
    {
        self.budget_refused = reason == SkipReason::Budget;
        self.rules.observers.emit(|| Event::RetrySkipped {
            host: self.label(),
            reason,
        });
        self.finish(result)
    }

    fn tell_tokens(&self, budget: &RetryBudget) {
        self.rules.observers.emit(|| Event::BudgetTokens {
            host: self.label(),
            tokens: budget.tokens(),
        });
    }

    /// The target's `host` value in events.
    fn label(&self) -> Label {
        let target = &self.target;
        target
            .label
            .clone()
            .unwrap_or_else(|| self.rules.labels.of(&target.host))
    }
}

impl<B> Drop for Call<B> {
    /// A call dropped before its end (its caller went away, or a deadline
    /// outside it passed) is told too: as the deadline's when it passed,
    /// as cancelled otherwise.
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let outcome = if self.deadline.is_some_and(Deadline::is_expired) {
            CallOutcome::DeadlineExceeded
        } else {
            CallOutcome::Cancelled
        };
        self.tell_end(outcome);
    }
}

impl<R: Answer> Outcome<R> {
    fn observed(&self) -> CallOutcome {
        match self {
            Self::Response(response) => CallOutcome::Status(response.status().as_u16()),
            Self::Failed(TransportError::Connect(_)) => CallOutcome::Connect,
            Self::Failed(TransportError::Other(_)) => CallOutcome::Error,
            Self::TimedOut => CallOutcome::Timeout,
            Self::DeadlineExceeded => CallOutcome::DeadlineExceeded,
        }
    }
}

fn outcome_of(err: &ClientError) -> CallOutcome {
    match err {
        ClientError::DeadlineExceeded(_) => CallOutcome::DeadlineExceeded,
        ClientError::Timeout => CallOutcome::Timeout,
        ClientError::CircuitBreakerOpen { .. } => CallOutcome::CircuitOpen,
        ClientError::Connect(_) => CallOutcome::Connect,
        ClientError::Status(status) => CallOutcome::Status(status.as_u16()),
        _ => CallOutcome::Error,
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

/// A failed attempt, for the host's breaker when it has one.
fn fail(permit: Option<Permit>) {
    if let Some(permit) = permit {
        permit.failure();
    }
}

/// Tokens withdrawn for a retry. Dropped before the retry was sent (the call
/// was cancelled during its backoff), they go back to the bucket.
struct Charge {
    budget: RetryBudget,
    kind: RetryKind,
    sent: bool,
}

impl Charge {
    fn refund(mut self) -> RetryBudget {
        self.budget.refund(self.kind);
        self.sent = true; // refunded once: the drop below must not again
        self.budget.clone()
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if !self.sent {
            self.budget.refund(self.kind);
        }
    }
}

/// The call's deadline, and the caller's own header value when it set
/// the deadline.
struct Pinned {
    deadline: Option<Deadline>,
    /// Sent as it was set on the first attempt; retries and hops send what
    /// is left of it.
    as_set: Option<HeaderValue>,
}

/// The call's deadline: the task's, shortened by a deadline header the
/// caller set. The caller's header is removed; the client sends one
/// value itself on every attempt, so exactly one goes out.
fn pinned_deadline(headers: &mut HeaderMap, send_header: bool) -> Pinned {
    let task = Deadline::current();
    if !send_header {
        return Pinned {
            deadline: task,
            as_set: None,
        };
    }
    let caller = header::from_headers(headers).map(Deadline::after);
    let value = headers.remove(DEADLINE_HEADER);
    match (task, caller) {
        (Some(task), Some(caller)) if task < caller => Pinned {
            deadline: Some(task),
            as_set: None,
        },
        (_, Some(caller)) => Pinned {
            deadline: Some(caller),
            as_set: value,
        },
        (task, None) => Pinned {
            deadline: task,
            as_set: None,
        },
    }
}

fn to_uri(url: &Url) -> Result<Uri, ClientError> {
    url.as_str().parse().map_err(|err| {
        ClientError::InvalidRequest(format!("the url {url} is not a valid URI: {err}"))
    })
}

fn saturating_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
