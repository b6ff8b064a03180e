//! [`ReadToTheEnd`]: a request body that tells its connection's clock when
//! it has been read whole.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use http_body::{Body, Frame, SizeHint};
use pin_project::pin_project;

use super::clock::BodyRead;

/// An HTTP/1 request's body, which tells its connection's clock
/// ([`BodyRead`]) once its handler has read it to its end: from then on,
/// what the connection reads is request heads again.
#[pin_project]
#[derive(Debug)]
pub(super) struct ReadToTheEnd<B> {
    #[pin]
    body: B,
    /// Taken when the end is told.
    end: Option<BodyRead>,
}

impl<B> ReadToTheEnd<B> {
    pub(super) fn new(body: B, end: BodyRead) -> Self {
        Self {
            body,
            end: Some(end),
        }
    }
}

impl<B: Body> Body for ReadToTheEnd<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let mut this = self.project();
        let frame = ready!(this.body.as_mut().poll_frame(cx));
        let ended = match &frame {
            None => true,
            Some(Ok(_)) => this.body.is_end_stream(),
            Some(Err(_)) => false,
        };
        if ended {
            if let Some(end) = this.end.take() {
                end.tell();
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
