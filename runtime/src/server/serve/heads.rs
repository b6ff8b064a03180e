//! [`Heads`]: where the request heads end in the bytes an HTTP/1
//! connection reads.

use tokio::time::Instant;

/// Follows the bytes an HTTP/1 connection reads while they are request
/// heads, to tell, when a request ends, whether the client has begun the
/// next one.
///
/// Bytes read while a request is served are not enough to tell: hyper reads
/// ahead, so one read can bring a whole head and the start of the next
/// before the first is parsed. A head ends at its empty line: an LF, an
/// optional CR, then an LF (httparse takes bare LF line ends too). Empty
/// lines before a request line are skipped, as RFC 9112 (section 2.2) lets
/// a server do. What follows the head of a request with a body is its body,
/// whose end this does not look for: from such a head until its handler
/// has read the body whole, or else until the next request begins, nothing
/// read is taken for a head (hyper may read what a handler left of its body
/// after the response). What came in the same read as the body's end is
/// not looked at either. A body read to its end only once a later request
/// has begun (a handler may keep it past its response) says nothing of
/// where that request's bytes end.
#[derive(Debug, Default)]
pub(super) struct Heads {
    /// Since a head with a body, until that body has been read whole or
    /// the next request begins: bytes read are not looked at.
    blind: bool,
    /// Heads read whole whose requests have not begun.
    whole: usize,
    /// When the first byte of the head read in part arrived.
    partial: Option<Instant>,
    line: Line,
    /// How many requests have begun: the number of the last one.
    requests: u64,
}

/// Where the last byte read left the current line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// At the start of a line.
    #[default]
    Start,
    /// After a CR at the start of a line.
    Cr,
    /// Inside a line of text.
    Text,
}

impl Heads {
    /// `bytes` arrived at `now`.
    pub(super) fn read(&mut self, bytes: &[u8], now: Instant) {
        if self.blind {
            return;
        }
        let mut rest = bytes;
        loop {
            if self.line == Line::Text {
                let Some(lf) = memchr::memchr(b'\n', rest) else {
                    return;
                };
                rest = &rest[lf + 1..];
                self.line = Line::Start;
            }
            let Some((&byte, after)) = rest.split_first() else {
                return;
            };
            rest = after;
            self.line = match (self.line, byte) {
                (_, b'\n') => {
                    // An empty line: the end of the head, or one before it.
                    if self.partial.take().is_some() {
                        self.whole += 1;
                    }
                    Line::Start
                }
                (Line::Start, b'\r') => Line::Cr,
                _ => {
                    self.partial.get_or_insert(now);
                    Line::Text
                }
            };
        }
    }

    /// A request's head was parsed and its service called; returns the
    /// request's number, for [`body_read`](Self::body_read). Past a head
    /// with a body, the bytes are the body's: nothing read so far, or until
    /// the next request, is known to be a head.
    pub(super) fn requested(&mut self, bodiless: bool) -> u64 {
        let requests = self.requests + 1;
        if bodiless && !self.blind {
            self.whole = self.whole.saturating_sub(1);
            self.requests = requests;
        } else {
            *self = Self {
                blind: !bodiless,
                requests,
                ..Self::default()
            };
        }
        requests
    }

    /// The body of request number `request` was read to its end: if no
    /// request has begun since, the bytes read from now on are heads again.
    pub(super) fn body_read(&mut self, request: u64) {
        if self.blind && request == self.requests {
            *self = Self {
                requests: self.requests,
                ..Self::default()
            };
        }
    }

    /// Whether the bytes the client sends may still be the body of the
    /// last request: it had one, which no one has read to its end.
    pub(super) const fn in_body(&self) -> bool {
        self.blind
    }

    /// Whether the next head has begun, and since when (`now` for one read
    /// whole, which hyper parses at once).
    pub(super) fn begun(&self, now: Instant) -> Option<Instant> {
        if self.whole > 0 {
            Some(now)
        } else {
            self.partial
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn after(bytes: &[&[u8]]) -> Heads {
        let mut heads = Heads::default();
        for bytes in bytes {
            heads.read(bytes, Instant::now());
        }
        heads
    }

    #[tokio::test(start_paused = true)]
    async fn a_whole_head_leaves_nothing_begun_once_requested() {
        for end in [&b"\r\n\r\n"[..], b"\n\n", b"\n\r\n"] {
            let mut heads = after(&[b"GET / HTTP/1.1\r\nHost: x", end]);
            assert_eq!(heads.whole, 1, "{end:?}");
            heads.requested(true);
            assert_eq!(heads.begun(Instant::now()), None, "{end:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn once_a_body_was_read_whole_what_follows_is_heads_again() {
        let mut heads = after(&[b"POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\n"]);
        let post = heads.requested(false);
        heads.read(b"h\n\nGET /b", Instant::now());
        assert_eq!(heads.begun(Instant::now()), None, "a body's bytes");
        heads.body_read(post);
        let start = Instant::now();
        heads.read(b"GET /c HTTP/1.1\r\n\r\nGET /d", start);
        heads.requested(true);
        assert_eq!(heads.begun(Instant::now()), Some(start));
    }

    #[tokio::test(start_paused = true)]
    async fn the_start_of_the_next_head_read_with_the_first_has_begun() {
        let start = Instant::now();
        let mut heads = after(&[b"GET /a HTTP/1.1\r\n\r\nGET /b HT"]);
        heads.requested(true);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(heads.begun(Instant::now()), Some(start));
    }

    #[tokio::test(start_paused = true)]
    async fn heads_split_anywhere_across_reads_are_counted_once_each() {
        let bytes = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n\r\nGET /c";
        for cut in 0..bytes.len() {
            let (first, second) = bytes.split_at(cut);
            let mut heads = after(&[first, second]);
            assert_eq!(heads.whole, 2, "cut at {cut}");
            heads.requested(true);
            heads.requested(true);
            assert!(heads.begun(Instant::now()).is_some(), "cut at {cut}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn empty_lines_before_a_request_line_begin_no_head() {
        let mut heads = after(&[b"\r\n\r\n\n"]);
        assert_eq!(heads.begun(Instant::now()), None);
        heads.read(b"GET / HTTP/1.1\r\n\r\n\r\n", Instant::now());
        heads.requested(true);
        assert_eq!(heads.begun(Instant::now()), None);
    }

    #[tokio::test(start_paused = true)]
    async fn what_follows_a_head_with_a_body_is_not_taken_for_a_head() {
        let mut heads = after(&[b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n\r\n\r\nbody"]);
        heads.requested(false);
        assert_eq!(heads.begun(Instant::now()), None);
        // The rest of a body the handler did not read, read after the
        // response: parts of a multipart body end in empty lines.
        heads.read(b"--x\r\n\r\npart\r\n--x\r\n\r\npart", Instant::now());
        heads.requested(true);
        assert_eq!(heads.begun(Instant::now()), None);
        // From the next request on, heads are looked for again.
        heads.read(b"GET /c HT", Instant::now());
        assert!(heads.begun(Instant::now()).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_read_whole_after_the_next_request_began_says_nothing_of_its_bytes() {
        let mut heads = Heads::default();
        let first = heads.requested(false);
        // The next request has a body too; the first handler kept its own
        // body past its response and reads its end only now.
        let second = heads.requested(false);
        heads.body_read(first);
        heads.read(b"--x\r\n\r\npart", Instant::now());
        assert_eq!(heads.begun(Instant::now()), None, "the second body's bytes");
        heads.body_read(second);
        heads.read(b"GET /c HT", Instant::now());
        assert!(heads.begun(Instant::now()).is_some());
    }
}
