//! [`send`]: the driver of `Client`'s calls, over its transport.

use std::future::Future;

use crate::deadline::{bounded, Deadline};

use super::engine::{Call, Next, Outcome};
use super::transport::Transport;
use super::{ClientError, RequestBuilder, Response};

/// Drives `request`'s [`Call`] to its end: each attempt through the
/// client's transport, bounded by its timeout and the deadline, and each
/// wait before a retry within the deadline.
pub(super) async fn send(request: RequestBuilder) -> Result<Response, ClientError> {
    let transport = std::sync::Arc::clone(&request.client.shared.transport);
    let mut call = Call::new(request)?;
    let deadline = call.deadline();
    loop {
        let (request, attempt) = call.start()?;
        let outcome = attempt_once(&*transport, request, attempt.ends, deadline).await;
        match call.decide(attempt, outcome) {
            Next::Follow => {}
            Next::Retry(wait) => {
                if gated(deadline, tokio::time::sleep(wait)).await.is_none() {
                    return Err(ClientError::deadline());
                }
            }
            Next::Return(result) => return result.map(|head| Response::new(head, deadline)),
        }
    }
}

/// Sends one attempt, until it answers, its timeout at `ends`, or the
/// deadline.
async fn attempt_once(
    transport: &dyn Transport,
    request: http::Request<bytes::Bytes>,
    ends: Deadline,
    deadline: Option<Deadline>,
) -> Outcome {
    let sent = transport.send(request);
    match gated(deadline, tokio::time::timeout_at(ends.instant(), sent)).await {
        None => Outcome::DeadlineExceeded,
        Some(Err(_elapsed)) if deadline.is_some_and(Deadline::is_expired) => {
            Outcome::DeadlineExceeded
        }
        Some(Err(_elapsed)) => Outcome::TimedOut,
        Some(Ok(Err(err))) => Outcome::Failed(err),
        Some(Ok(Ok(response))) => Outcome::Response(response),
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
