//! [`ClockedIo`]: a socket that tells its connection's clock when bytes
//! arrive, and when it stops taking bytes to send; and that lingers at its
//! close while the client may still be sending a body.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::clock::ConnectionClock;

/// How long a closing HTTP/1 connection reads and drops what its client
/// still sends of a request body no one read, at most.
///
/// A request answered before its body was read (refused by the shutdown
/// gate, shed, or refused by the deadline check, or a handler that never
/// read it) leaves the client sending it, and hyper closes the connection
/// after the answer rather than read the rest. A socket closed with bytes
/// unread is reset, and a client still sending may lose the answer to the
/// reset before it reads it (RFC 9112, section 9.6): its write fails with a
/// broken pipe. So the socket first closes its sending side, then reads and
/// drops what comes until the client closes its own, for this long at most
/// (nginx's `lingering_close`, whose `lingering_time` is 30 s).
const LINGER: Duration = Duration::from_secs(2);

/// `io`, reporting every read that brought bytes to `clock` (that is how
/// the clock sees a request head begin), and every change between a socket
/// that takes the bytes written and one that does not (that is how it sees
/// a response still going out after hyper let it go: each change means
/// bytes went out just now).
#[pin_project]
#[derive(Debug)]
pub(super) struct ClockedIo<T> {
    #[pin]
    io: T,
    clock: Arc<ConnectionClock>,
    /// Whether the last write or flush was left pending. Only a change is
    /// told, so a socket that keeps up costs the clock nothing.
    write_blocked: bool,
    /// Until when the socket, its sending side closed, drops what the
    /// client still sends (see [`LINGER`]); `None` until then.
    lingers_until: Option<Pin<Box<Sleep>>>,
}

impl<T> ClockedIo<T> {
    pub(super) fn new(io: T, clock: Arc<ConnectionClock>) -> Self {
        Self {
            io,
            clock,
            write_blocked: false,
            lingers_until: None,
        }
    }
}

/// Reads what the client sends and drops it, until the client closes its
/// side, the socket fails, or `until` passes.
fn poll_discard<T: AsyncRead>(
    mut io: Pin<&mut T>,
    until: &mut Pin<Box<Sleep>>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if until.as_mut().poll(cx).is_ready() {
        return Poll::Ready(());
    }
    let mut scratch = [0; 8192];
    loop {
        let mut read = ReadBuf::new(&mut scratch);
        match ready!(io.as_mut().poll_read(cx, &mut read)) {
            Ok(()) if read.filled().is_empty() => return Poll::Ready(()),
            Ok(()) => {}
            // The answer went out before: nothing is left to lose.
            Err(_) => return Poll::Ready(()),
        }
    }
}

/// Tells `clock` when a write's outcome changes whether the socket is
/// blocked.
fn note_write<T>(clock: &ConnectionClock, blocked: &mut bool, polled: Poll<T>) -> Poll<T> {
    if polled.is_pending() != *blocked {
        *blocked = polled.is_pending();
        clock.on_write_progress(*blocked);
    }
    polled
}

impl<T: AsyncRead> AsyncRead for ClockedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let polled = this.io.poll_read(cx, buf);
        if buf.filled().len() > before {
            this.clock.on_read(&buf.filled()[before..]);
        }
        polled
    }
}

impl<T: AsyncRead + AsyncWrite> AsyncWrite for ClockedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        note_write(this.clock, this.write_blocked, this.io.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        note_write(this.clock, this.write_blocked, this.io.poll_flush(cx))
    }

    /// Closes the sending side; then, while the client may still be
    /// sending a body no one read, lingers (see [`LINGER`]).
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut this = self.project();
        if this.lingers_until.is_none() {
            ready!(this.io.as_mut().poll_shutdown(cx))?;
            if !this.clock.may_be_sending_body() {
                return Poll::Ready(Ok(()));
            }
        }
        let until = this
            .lingers_until
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(LINGER)));
        poll_discard(this.io, until, cx).map(Ok)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        note_write(
            this.clock,
            this.write_blocked,
            this.io.poll_write_vectored(cx, bufs),
        )
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use http::Version;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use tokio::time::Instant;

    use super::{ClockedIo, ConnectionClock, LINGER};
    use crate::shutdown::ConnectionBounds;

    const BOUNDS: ConnectionBounds = ConnectionBounds {
        header_read: Some(Duration::from_secs(30)),
        keep_alive: Some(Duration::from_secs(75)),
        max_age: None,
    };

    /// A connection's socket after one HTTP/1 request, with a body or not,
    /// and the client's end of it.
    fn after_a_request(bodiless: bool) -> (ClockedIo<DuplexStream>, DuplexStream) {
        let clock = ConnectionClock::new(BOUNDS);
        drop(clock.on_request(Version::HTTP_11, bodiless));
        let (server, client) = tokio::io::duplex(64);
        (ClockedIo::new(server, Arc::clone(&clock)), client)
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_no_one_read_is_read_and_dropped_until_the_client_closes() {
        let (mut io, mut client) = after_a_request(false);
        let start = Instant::now();
        let closing = tokio::spawn(async move { io.shutdown().await });
        let mut byte = [0; 1];
        assert_eq!(
            client.read(&mut byte).await.unwrap(),
            0,
            "the answer is over"
        );
        // Far more than the pipe holds: it goes through only as the
        // socket reads and drops it.
        for _ in 0..64 {
            client.write_all(&[b'a'; 1024]).await.unwrap();
        }
        drop(client);
        closing.await.unwrap().unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_keeps_its_side_open_is_let_go_after_the_linger() {
        let (mut io, _client) = after_a_request(false);
        let start = Instant::now();
        io.shutdown().await.unwrap();
        assert_eq!(start.elapsed(), LINGER);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_keeps_sending_is_let_go_after_the_linger() {
        let (mut io, mut client) = after_a_request(false);
        let sending = tokio::spawn(async move {
            while client.write_all(&[b'a'; 1024]).await.is_ok() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let start = Instant::now();
        io.shutdown().await.unwrap();
        assert_eq!(start.elapsed(), LINGER);
        drop(io);
        sending.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_with_no_body_to_drop_closes_at_once() {
        let (mut io, _client) = after_a_request(true);
        let start = Instant::now();
        io.shutdown().await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
    }
}
