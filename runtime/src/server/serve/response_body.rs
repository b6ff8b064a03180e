//! [`ResponseBody`]: a response body that tells its connection's clock when
//! it waits for the client.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use http_body::{Frame, SizeHint};
use pin_project::pin_project;

use super::clock::RequestEnd;

/// A response's body, which keeps its request busy on the connection's
/// clock until hyper drops it, and tells the clock when hyper has taken a
/// frame and not come back for the next: the response then waits for the
/// client to read (hyper's write buffer is full, or the HTTP/2 stream has
/// no flow-control window left). A body that waits for its own data (an
/// SSE stream between events) is asked, and waits for nothing of the
/// client's.
#[pin_project]
#[derive(Debug)]
pub(super) struct ResponseBody {
    #[pin]
    body: Body,
    /// `None` for a tunnel's answer, whose request never ends on the clock.
    end: Option<RequestEnd>,
}

impl ResponseBody {
    pub(super) fn new(body: Body, end: Option<RequestEnd>) -> Self {
        Self { body, end }
    }
}

impl http_body::Body for ResponseBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        if let Some(end) = this.end.as_mut() {
            end.asked();
        }
        let polled = this.body.poll_frame(cx);
        if let (Poll::Ready(Some(Ok(_))), Some(end)) = (&polled, this.end.as_mut()) {
            end.held();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
