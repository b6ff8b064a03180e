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
    let deadline = pinned_deadline(&mut headers, config.send_deadline_header);
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

    let mut retries_made: u32 = 0;
    let mut hops: u32 = 0;
    let mut first_to_host = true;
    let mut charge: Option<Charge> = None;
    loop {
        // C1: an expired deadline ends the call before any attempt.
        if deadline.is_some_and(Deadline::is_expired) {
            return Err(ClientError::deadline());
        }
        let host = host_key(&url)?;
        let permit = client
            .breaker(&host)
            .try_acquire()
            .map_err(|_| ClientError::CircuitBreakerOpen { host: host.clone() })?;
        let budget = shared.budgets.for_uri(&to_uri(&url)?);
        if first_to_host {
            if let Some(budget) = &budget {
                budget.on_first_attempt();
            }
        }
        if let Some(charge) = &mut charge {
            charge.sent = true;
        }

        let per_attempt = Duration::from_secs(config.timeout_secs);
        let per_attempt = deadline.map_or(per_attempt, |d| d.clamp(per_attempt));
        let mut attempt_headers = headers.clone();
        if let (Some(deadline), true) = (deadline, config.send_deadline_header) {
            attempt_headers.insert(DEADLINE_HEADER, header::to_value(deadline.remaining()));
        }
        let http_request = build_request(&method, &url, attempt_headers, body.clone())?;
        let sent = shared.transport.send(http_request);
        let outcome = gated(deadline, tokio::time::timeout(per_attempt, sent)).await;
        let result = match outcome {
            // The deadline passed during the attempt: our impatience, not the
            // host's fault, so the permit is dropped without an outcome.
            None => return Err(ClientError::deadline()),
            Some(Err(_elapsed)) if deadline.is_some_and(Deadline::is_expired) => {
                return Err(ClientError::deadline());
            }
            Some(Err(_elapsed)) => {
                permit.failure();
                Err(ClientError::Timeout)
            }
            Some(Ok(Err(TransportError::Connect(err)))) => {
                permit.failure();
                Err(ClientError::Connect(err))
            }
            Some(Ok(Err(TransportError::Other(err)))) => {
                permit.failure();
                return Err(ClientError::Transport(err));
            }
            Some(Ok(Ok(response))) => {
                record(permit, response.status());
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
                first_to_host = host_key(&hop.url)? != host;
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
        // A retry the host's open breaker would refuse is not worth waiting
        // for: the last result is the answer (C6).
        if client.breaker(&host).state() == BreakerState::Open {
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
        if deadline.is_some_and(|d| d.remaining() <= wait + RETRY_MARGIN) {
            return finish(result, charge, deadline);
        }
        // B2: a retry the bucket cannot pay for is not made.
        if let Some(budget) = budget {
            if !budget.try_withdraw(kind) {
                return finish(result, charge, deadline);
            }
            charge = Some(Charge {
                budget,
                kind,
                sent: false,
            });
        }
        drop(result);
        if gated(deadline, tokio::time::sleep(wait)).await.is_none() {
            return Err(ClientError::deadline());
        }
        retries_made += 1;
        first_to_host = false;
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

/// The call's deadline: the task's, shortened by a deadline header the
/// caller set (C3). The caller's header is removed; the client sends its own,
/// recomputed for every attempt, so exactly one value goes out.
fn pinned_deadline(headers: &mut HeaderMap, send_header: bool) -> Option<Deadline> {
    let task = Deadline::current();
    if !send_header {
        return task;
    }
    let caller = header::from_headers(headers).map(Deadline::after);
    headers.remove(DEADLINE_HEADER);
    match (task, caller) {
        (Some(task), Some(caller)) => Some(task.min(caller)),
        (task, caller) => task.or(caller),
    }
}

fn record(permit: Permit, status: StatusCode) {
    permit.record_status(status);
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
