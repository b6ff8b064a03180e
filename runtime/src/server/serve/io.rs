//! [`ClockedIo`]: a socket that tells its connection's clock when bytes
//! arrive, and when it stops taking bytes to send.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use pin_project::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::clock::ConnectionClock;

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
}

impl<T> ClockedIo<T> {
    pub(super) fn new(io: T, clock: Arc<ConnectionClock>) -> Self {
        Self {
            io,
            clock,
            write_blocked: false,
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

impl<T: AsyncWrite> AsyncWrite for ClockedIo<T> {
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

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
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
