//! Reading an MCP server's response bodies within the SDK's limits: a
//! JSON body up to its size, an event stream whose every event is up to
//! its size.

use bytes::{Bytes, BytesMut};
use futures_util::stream::{BoxStream, StreamExt};
use futures_util::Stream;
use rmcp::transport::streamable_http_client::{SseError, StreamableHttpError};
use sse_stream::{Sse, SseStream};
use timebox::client::{ClientError, Response};

/// How reading a body up to a size ended.
pub(super) enum Read {
    /// The body ended within the size.
    Whole,
    /// The body went on past the size.
    Longer,
    /// The body broke off.
    Broke(ClientError),
}

/// At most the first `max_size` bytes of the body, and how the reading
/// ended.
pub(super) async fn read_up_to(response: Response, max_size: usize) -> (Bytes, Read) {
    let mut chunks = std::pin::pin!(response.bytes_stream());
    let mut body = BytesMut::new();
    let ended = loop {
        match chunks.next().await {
            Some(Ok(chunk)) => {
                let room = max_size - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if chunk.len() > room {
                    break Read::Longer;
                }
            }
            Some(Err(err)) => break Read::Broke(err),
            None => break Read::Whole,
        }
    };
    (body.freeze(), ended)
}

/// The whole body, refused once it is longer than `max_size`.
pub(super) async fn bounded_body(
    response: Response,
    max_size: usize,
) -> Result<Bytes, StreamableHttpError<ClientError>> {
    match read_up_to(response, max_size).await {
        (body, Read::Whole) => Ok(body),
        (_, Read::Longer) => Err(StreamableHttpError::ResponseBodyTooLarge { max_size }),
        (_, Read::Broke(err)) => Err(StreamableHttpError::Client(err)),
    }
}

/// The response's body as server-sent events, each at most
/// `max_event_size` bytes.
pub(super) fn events(
    response: Response,
    max_event_size: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(bounded_events(response.bytes_stream(), max_event_size)).boxed()
}

/// Why the bytes of an event stream stopped.
#[derive(Debug, thiserror::Error)]
enum EventStreamError {
    #[error(transparent)]
    Client(ClientError),
    #[error("an event of the MCP server's stream is longer than {max_size} bytes")]
    EventTooLarge { max_size: usize },
}

/// `chunks`, ending with [`EventStreamError::EventTooLarge`] as soon as one
/// event runs past `max_event_size` bytes, before the parser buffers it:
/// the events before it in the same chunk still come. The stream ends after
/// its first error.
fn bounded_events(
    chunks: impl Stream<Item = Result<Bytes, ClientError>> + Send + 'static,
    max_event_size: usize,
) -> impl Stream<Item = Result<Bytes, EventStreamError>> + Send + 'static {
    let mut size = EventSize::default();
    let items = chunks.scan(false, move |failed, chunk| {
        if *failed {
            return std::future::ready(None);
        }
        let items = match chunk {
            Ok(chunk) => match size.past(&chunk, max_event_size) {
                None => [Some(Ok(chunk)), None],
                Some(at) => [
                    Some(Ok(chunk.slice(..at))),
                    Some(Err(EventStreamError::EventTooLarge {
                        max_size: max_event_size,
                    })),
                ],
            },
            Err(err) => [Some(Err(EventStreamError::Client(err))), None],
        };
        *failed = items.iter().flatten().any(Result::is_err);
        std::future::ready(Some(futures_util::stream::iter(
            items.into_iter().flatten(),
        )))
    });
    items.flatten()
}

/// The size of the event being read: the bytes of its lines, counted
/// across chunks, back to zero at the blank line that ends it.
#[derive(Debug)]
struct EventSize {
    bytes: usize,
    /// No byte of the current line has come yet.
    at_line_start: bool,
    /// The last byte was a `\r`, whose `\n` would end the same line.
    after_cr: bool,
}

impl Default for EventSize {
    fn default() -> Self {
        Self {
            bytes: 0,
            at_line_start: true,
            after_cr: false,
        }
    }
}

impl EventSize {
    /// Reads `chunk`; the index of its first byte that takes an event past
    /// `max` bytes, if one does.
    fn past(&mut self, chunk: &[u8], max: usize) -> Option<usize> {
        for (at, &byte) in chunk.iter().enumerate() {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                b'\n' if after_cr => {}
                b'\r' | b'\n' if self.at_line_start => self.bytes = 0,
                b'\r' | b'\n' => self.at_line_start = true,
                _ => {
                    self.at_line_start = false;
                    self.bytes += 1;
                    if self.bytes > max {
                        return Some(at);
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::EventSize;

    #[test]
    fn an_event_is_counted_across_chunks_and_ends_at_a_blank_line() {
        let mut size = EventSize::default();
        assert_eq!(size.past(b"data: ab", 15), None);
        // `c`, then `data: d`: the event's 16th byte is the `d`.
        assert_eq!(size.past(b"c\ndata: d\n", 15), Some(8));
        let mut size = EventSize::default();
        assert_eq!(
            size.past(b"data: abc\n\n", 9),
            None,
            "the blank line ends the event"
        );
        assert_eq!(size.past(b"data: e", 9), None);
        assert_eq!(size.past(b"xyz", 9), Some(2));
    }

    #[test]
    fn crlf_and_cr_end_lines_as_lf_does() {
        let mut size = EventSize::default();
        assert_eq!(size.past(b"data: a\r\n\r\ndata: bc\r", 8), None);
        assert_eq!(size.past(b"\n\r\n", 8), None);
        assert_eq!(size.past(b"id: 1\r\rdata: z", 7), None);
        assert_eq!(size.past(b"z", 7), Some(0));
    }
}
