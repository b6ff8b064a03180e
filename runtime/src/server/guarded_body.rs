//! [`GuardedBody`]: a response body that holds a guard until it is done.

use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project::pin_project;

/// `body`, holding `guard` until the body has been sent or dropped: how a
/// request stays counted (in flight, or busy on its connection) for as long
/// as its response streams.
#[pin_project]
#[derive(Debug)]
pub(crate) struct GuardedBody<B, G> {
    #[pin]
    body: B,
    _guard: G,
}

impl<B, G> GuardedBody<B, G> {
    pub(crate) fn new(body: B, guard: G) -> Self {
        Self {
            body,
            _guard: guard,
        }
    }
}

impl<B: http_body::Body, G> http_body::Body for GuardedBody<B, G> {
    type Data = B::Data;
    type Error = B::Error;

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
