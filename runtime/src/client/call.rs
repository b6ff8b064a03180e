//! One outbound call: attempts, retries and redirects within the deadline
//! (C1–C7, B2).

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use url::Url;

use crate::breaker::{BreakerState, Permit};
use crate::deadline::header::{self, DEADLINE_HEADER};
use crate::deadline::{bounded, Deadline};
use crate::retry::{classify_status, hint_wait, is_idempotent, RetryBudget, RetryKind};

use super::redirect::{self, MAX_HOPS};
use super::transport::{ResponseBody, TransportError};
use super::{ClientError, RequestBuilder, Response};

/// A retry must leave at least this much of the deadline after its wait,
/// or it is not started (C6).
const RETRY_MARGIN: Duration = Duration::from_millis(10);

const IDEMPOTENCY_KEY: &str = "idempotency-key";

pub(super) async fn send(request: RequestBuilder) -> Result<Response, ClientError> {
    let RequestBuilder {
        client,
        method,
        url,
        mut headers,
        body,
        retries,
        retry_non_idempotent,
        error,
    } = request;
    if let Some(error) = error {
        return Err(error);
    }
    let shared = &client.shared;
    let config = &shared.config;
    let mut url = Url::parse(&url)?;
    let mut method = method;
    let mut body = body;

    // C3: a deadline header set by the caller pins a deadline of its own.
    let Pinned {
        deadline,
        mut as_set,
    } = pinned_deadline(&mut headers, config.send_deadline_header);
    // One retry allowance spans the whole redirect chain (C7); following a
    // redirect is not a retry.
    let max_retries = retries.unwrap_or_else(|| saturating_u32(config.max_retries));
    let may_retry = is_idempotent(&method) || retry_non_idempotent;
    if retry_non_idempotent && !is_idempotent(&method) && !headers.contains_key(IDEMPOTENCY_KEY) {
        let key = format!(
            "{:016x}{:016x}",
            shared.entropy.next_u64(),
            shared.entropy.next_u64()
        );
        headers.insert(
            IDEMPOTENCY_KEY,
            HeaderValue::from_str(&key).expect("hex is a valid header value"),
        );
    }

    let attempt_timeout = Duration::from_secs(config.timeout_secs);
    let mut retries_made: u32 = 0;
    let mut hops: u32 = 0;
    // B2: the hosts whose bucket this request has refilled, once each.
    let mut refilled: Vec<String> = Vec::new();
    let mut charge: Option<Charge> = None;
    // C7: one attempt's timeout covers its whole chain of hops.
    let mut attempt_ends = Deadline::after(attempt_timeout);
    loop {
        // C1: an expired deadline ends the call before any attempt.
        if deadline.is_some_and(Deadline::is_expired) {
            return Err(ClientError::deadline());
        }
        let host = host_key(&url)?;
        let breaker = client.breaker(&host);
        let permit = match &breaker {
            Some(breaker) => Some(
                breaker
                    .try_acquire()
                    .map_err(|_| ClientError::CircuitBreakerOpen { host: host.clone() })?,
            ),
            None => None,
        };
        let budget = shared.budgets.for_uri(&to_uri(&url)?);
        if !refilled.contains(&host) {
            if let Some(budget) = &budget {
                budget.on_first_attempt();
            }
            refilled.push(host.clone());
        }
        if let Some(charge) = &mut charge {
            charge.sent = true;
        }

        let ends = deadline.map_or(attempt_ends, |d| d.min(attempt_ends));
        let mut attempt_headers = headers.clone();
        if let (Some(deadline), true) = (deadline, config.send_deadline_header) {
            // The first attempt sends a caller's shorter value as it was set.
            let value = as_set
                .take()
                .unwrap_or_else(|| header::to_value(deadline.remaining()));
            attempt_headers.insert(DEADLINE_HEADER, value);
        }
        let http_request = build_request(&method, &url, attempt_headers, body.clone())?;
        let sent = shared.transport.send(http_request);
        let outcome = gated(deadline, tokio::time::timeout_at(ends.instant(), sent)).await;
        let result = match outcome {
            // The deadline passed during the attempt: our impatience, not the
            // host's fault, so the permit is dropped without an outcome.
            None => return Err(ClientError::deadline()),
            Some(Err(_elapsed)) if deadline.is_some_and(Deadline::is_expired) => {
                return Err(ClientError::deadline());
            }
            Some(Err(_elapsed)) => {
                fail(permit);
                Err(ClientError::Timeout)
            }
            Some(Ok(Err(TransportError::Connect(err)))) => {
                fail(permit);
                Err(ClientError::Connect(err))
            }
            Some(Ok(Err(TransportError::Other(err)))) => {
                fail(permit);
                return Err(ClientError::Transport(err));
            }
            Some(Ok(Ok(response))) => {
                if let Some(permit) = permit {
                    permit.record_status(response.status());
                }
                Ok(response)
            }
        };

        // C7: redirects, each hop under the same rules.
        if let Ok(response) = &result {
            if let Some(hop) =
                redirect::next_hop(response.status(), response.headers(), &url, &method, &body)
            {
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(ClientError::TooManyRedirects);
                }
                redirect::carry_headers(&mut headers, &url, &hop, !body.is_empty());
                url = hop.url;
                method = hop.method;
                body = hop.body;
                continue;
            }
        }

        // C4: is this worth another attempt?
        let kind = match &result {
            Ok(response) => classify_status(response.status()),
            Err(ClientError::Timeout | ClientError::Connect(_)) => Some(RetryKind::Transient),
            Err(_) => None,
        };
        let Some(kind) = kind.filter(|_| may_retry && retries_made < max_retries) else {
            return finish(result, charge, deadline);
        };
        let reason = RetryReason::of(&result);
        // A retry the host's open breaker would refuse is not worth waiting
        // for: the last result is the answer (C6).
        if breaker.is_some_and(|breaker| breaker.state() == BreakerState::Open) {
            tracing::debug!(
                host,
                attempt = retries_made + 1,
                %reason,
                "no retry: the host's circuit breaker is open"
            );
            return finish(result, charge, deadline);
        }
        let hint = match &result {
            Ok(response) => hint_wait(
                response.status(),
                response.headers(),
                Duration::from_secs(config.max_retry_after_secs),
            ),
            Err(_) => None,
        };
        let wait = shared.backoff.delay(retries_made, &shared.entropy) + hint.unwrap_or_default();
        // C6: a retry that does not fit the time left is not started, and
        // costs nothing.
        if let Some(left) = deadline.map(Deadline::remaining) {
            if left <= wait + RETRY_MARGIN {
                tracing::debug!(
                    host,
                    attempt = retries_made + 1,
                    %reason,
                    wait_ms = wait.as_millis(),
                    left_ms = left.as_millis(),
                    "no retry: the wait does not fit the time left"
                );
                return finish(result, charge, deadline);
            }
        }
        // B2: a retry the bucket cannot pay for is not made.
        if let Some(budget) = budget {
            if !budget.try_withdraw(kind) {
                tracing::debug!(
                    host,
                    attempt = retries_made + 1,
                    %reason,
                    tokens = budget.tokens(),
                    "no retry: the host's retry budget cannot pay for it"
                );
                return finish(result, charge, deadline);
            }
            charge = Some(Charge {
                budget,
                kind,
                sent: false,
            });
        }
        tracing::debug!(
            host,
            attempt = retries_made + 2,
            %reason,
            wait_ms = wait.as_millis(),
            "retrying"
        );
        drop(result);
        if gated(deadline, tokio::time::sleep(wait)).await.is_none() {
            return Err(ClientError::deadline());
        }
        retries_made += 1;
        attempt_ends = Deadline::after(attempt_timeout);
    }
}

/// Why an attempt is worth retrying, for the logs.
enum RetryReason {
    Status(StatusCode),
    Timeout,
    Connect,
}

impl RetryReason {
    fn of(result: &Result<http::Response<ResponseBody>, ClientError>) -> Self {
        match result {
            Ok(response) => Self::Status(response.status()),
            Err(ClientError::Timeout) => Self::Timeout,
            Err(_) => Self::Connect,
        }
    }
}

impl std::fmt::Display for RetryReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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

/// The result of the last attempt as the call's result; a retry that
/// ended in success gives its tokens back (B2).
fn finish(
    result: Result<http::Response<ResponseBody>, ClientError>,
    charge: Option<Charge>,
    deadline: Option<Deadline>,
) -> Result<Response, ClientError> {
    let response = result?;
    if response.status().as_u16() < 400 {
        if let Some(charge) = charge {
            charge.refund();
        }
    }
    Ok(Response::new(response, deadline))
}

/// Tokens withdrawn for a retry. Dropped before the retry was sent (the call
/// was cancelled during its backoff), they go back to the bucket.
struct Charge {
    budget: RetryBudget,
    kind: RetryKind,
    sent: bool,
}

impl Charge {
    fn refund(mut self) {
        self.budget.refund(self.kind);
        self.sent = true; // refunded once: the drop below must not again
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if !self.sent {
            self.budget.refund(self.kind);
        }
    }
}

/// `future` gated by `deadline` (poll-gated, see `bounded`): `None` when the
/// deadline passed first.
async fn gated<F: Future>(deadline: Option<Deadline>, future: F) -> Option<F::Output> {
    match deadline {
        Some(deadline) => deadline.scope(bounded(future)).await.ok(),
        None => Some(future.await),
    }
}

/// The call's deadline (C3), and the caller's own header value when it set
/// the deadline.
struct Pinned {
    deadline: Option<Deadline>,
    /// Sent as it was set on the first attempt; retries and hops send what
    /// is left of it.
    as_set: Option<HeaderValue>,
}

/// The call's deadline: the task's, shortened by a deadline header the
/// caller set (C3). The caller's header is removed; the client sends one
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

/// The `host:port` key of `url`, host lowercased, default port filled in.
pub(super) fn host_key(url: &Url) -> Result<String, ClientError> {
    let host = url
        .host_str()
        .ok_or_else(|| ClientError::InvalidRequest(format!("the url {url} has no host")))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| ClientError::InvalidRequest(format!("the url {url} has no port")))?;
    Ok(format!("{}:{port}", host.to_ascii_lowercase()))
}

fn to_uri(url: &Url) -> Result<http::Uri, ClientError> {
    url.as_str().parse().map_err(|err| {
        ClientError::InvalidRequest(format!("the url {url} is not a valid URI: {err}"))
    })
}

fn build_request(
    method: &Method,
    url: &Url,
    headers: HeaderMap,
    body: Bytes,
) -> Result<http::Request<Bytes>, ClientError> {
    let mut request = http::Request::new(body);
    *request.method_mut() = method.clone();
    *request.uri_mut() = to_uri(url)?;
    *request.headers_mut() = headers;
    Ok(request)
}

fn saturating_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
