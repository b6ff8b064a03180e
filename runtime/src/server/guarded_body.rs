//! [`GuardedBody`]: a response body that holds a guard until it is done.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use pin_project::pin_project;

/// `body`, holding `guard` until the body has been sent or dropped: how a
/// request stays counted (in flight, or busy on its connection) for as long
/// as its response streams.
#[pin_project]
#[derive(Debug)]
pub(crate) struct GuardedBody<G> {
    #[pin]
    body: Body,
    _guard: G,
}

impl<G> GuardedBody<G> {
    pub(crate) fn new(body: Body, guard: G) -> Self {
        Self {
            body,
            _guard: guard,
        }
    }
}

impl<G> http_body::Body for GuardedBody<G> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
