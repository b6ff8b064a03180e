//! [`Connections`]: every connection `serve` accepted, each driven by its
//! own task under the connection bounds.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::entropy::Entropy;
use crate::observe::Chain;
use crate::problem::fallback_entropy;
use crate::server::ShutdownGate;
use crate::shutdown::{ConnectionBounds, Shutdown, ShutdownToken};
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;

use super::clock::{ConnectionClock, Expired};
use super::io::ClockedIo;
use super::service::ConnectionService;

/// What every connection serves: the router behind the shutdown gate.
type RouterService = ShutdownGate<Router>;

/// How long connections still open at the end of the sequence get to
/// write out what their last responses left in their buffers, at most:
/// never past the sequence's bound (G4's sum after the trigger).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The connections of one `serve` call. Dropping it closes them all.
#[derive(Debug)]
pub(super) struct Connections {
    builder: Builder<TokioExecutor>,
    bounds: ConnectionBounds,
    phase1: ShutdownToken,
    tracker: TaskTracker,
    /// Cancelled when `serve` returns or is dropped: every connection
    /// still open closes.
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
    closed: Arc<Notify>,
}

impl Connections {
    pub(super) fn new(shutdown: &Shutdown) -> Self {
        let mut builder = Builder::new(TokioExecutor::new());
        // The header bound is the connection clock's (it starts at the
        // first byte of a head, not when the connection goes idle).
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(None);
        builder
            .http2()
            .timer(TokioTimer::new())
            .enable_connect_protocol();
        let stop = CancellationToken::new();
        Self {
            builder,
            bounds: shutdown.connection_bounds(),
            phase1: shutdown.token(),
            tracker: TaskTracker::new(),
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
            closed: Arc::new(Notify::new()),
        }
    }

    /// Notified each time a connection closes (and frees its socket).
    pub(super) fn closed(&self) -> Arc<Notify> {
        Arc::clone(&self.closed)
    }

    /// Serves `stream`, from `peer`, with `service` on a task of its own.
    pub(super) fn spawn(&self, stream: TcpStream, peer: SocketAddr, service: RouterService) {
        let retire_at = self
            .bounds
            .max_age
            .and_then(|age| retire_at(Instant::now(), age, &fallback_entropy()));
        let connection = Connection {
            builder: self.builder.clone(),
            clock: ConnectionClock::new(self.bounds),
            retire_at,
            phase1: self.phase1.clone(),
            stop: self.stop.clone(),
            peer,
            _closed: NotifyOnDrop(Arc::clone(&self.closed)),
        };
        self.tracker.spawn(connection.run(stream, service));
    }

    /// Closes the connections still open once they finished writing or
    /// [`CLOSE_GRACE`] passed, or the sequence's bound did (a drain that
    /// ran to its bound leaves no time; phases that ended early leave what
    /// they did not use), or at once when `shutdown` is (or gets) forced.
    pub(super) async fn close(self, shutdown: &Shutdown) {
        self.tracker.close();
        let grace_over = Instant::now() + CLOSE_GRACE;
        let until = shutdown
            .sequence_bound()
            .map_or(grace_over, |bound| bound.min(grace_over));
        tokio::select! {
            biased;
            () = shutdown.forced() => {}
            _ = tokio::time::timeout_at(until, self.tracker.wait()) => {}
        }
        self.stop.cancel();
    }
}

/// One connection's task.
struct Connection {
    builder: Builder<TokioExecutor>,
    clock: Arc<ConnectionClock>,
    /// When the connection is retired (`server.max_connection_age_secs`).
    retire_at: Option<Instant>,
    phase1: ShutdownToken,
    stop: CancellationToken,
    /// The client's address, which each request carries as axum's
    /// `ConnectInfo<SocketAddr>`.
    peer: SocketAddr,
    _closed: NotifyOnDrop,
}

impl Connection {
    async fn run(self, stream: TcpStream, service: RouterService) {
        let Self {
            builder,
            clock,
            retire_at,
            phase1,
            stop,
            peer,
            _closed,
        } = self;
        let io = TokioIo::new(ClockedIo::new(stream, Arc::clone(&clock)));
        // This connection's phase 1: the server's, or its own at its age.
        let closing = phase1.child_token();
        let service = ConnectionService::new(service, Arc::clone(&clock), closing.clone(), peer);
        let connection = builder.serve_connection_with_upgrades(io, service);
        tokio::pin!(connection);
        // A connection accepted during phase 1 is served, and told to go
        // like the others: its HTTP/1 responses ask the client to close
        // (see `ConnectionService`), and an HTTP/2 connection gets its
        // GOAWAY once its first request has been answered (503, with
        // `Retry-After`: it came for an answer). One accepted before gets
        // it as soon as it is known to be HTTP/2, by its connection
        // preface too (a pooled connection that has sent nothing yet).
        let mut phase1_seen = phase1.is_cancelled();
        let goaway_after_a_request = phase1_seen;
        // Past its age, its own phase 1 (`closing`) began.
        let mut retiring = false;
        let mut goaway_sent = false;
        let retired = retired_at(retire_at);
        tokio::pin!(retired);
        loop {
            tokio::select! {
                // The connection first: a request whose bytes have arrived
                // is read before the connection is judged idle.
                biased;
                result = connection.as_mut() => {
                    if let Err(err) = result {
                        tracing::debug!(%peer, error = %Chain(&*err), "connection ended with an error");
                    }
                    return;
                }
                () = stop.cancelled() => return,
                () = phase1.cancelled(), if !phase1_seen => {
                    phase1_seen = true;
                }
                // Past its age, a connection is told to close as at phase
                // 1, alone.
                () = &mut retired, if !phase1_seen && !retiring => {
                    tracing::debug!(
                        %peer,
                        "retiring a connection at its age (`server.max_connection_age_secs`)"
                    );
                    retiring = true;
                    closing.cancel();
                }
                // From phase 1, a connection between requests closes: at
                // once if it is, else when the response it serves ends
                // (one whose head went before phase 1, without
                // `Connection: close`: a stream, a long download). Not
                // while a request head is half read: closing then would
                // lose the request. Not at its age alone: a request may be
                // on its way that HTTP/1 has no way to refuse; the next
                // response's `Connection: close` ends it, or the idle bound.
                () = clock.idle(), if phase1_seen && !goaway_sent => {
                    tracing::debug!(%peer, "closing an idle connection: the server is shutting down");
                    // Gracefully, not by dropping it: hyper lets a
                    // response go once its body is queued, and what it
                    // queued is written out first.
                    goaway_sent = true;
                    connection.as_mut().graceful_shutdown();
                }
                () = http2_known(&clock, goaway_after_a_request), if (phase1_seen || retiring) && !goaway_sent => {
                    goaway_sent = true;
                    // GOAWAY: streams in flight finish, no new ones start.
                    connection.as_mut().graceful_shutdown();
                }
                expired = clock.expired() => {
                    match expired {
                        Expired::Head(bound) => tracing::debug!(
                            %peer,
                            bound_ms = bound.as_millis(),
                            "closing a connection whose request head did not arrive in time \
                             (`server.header_read_timeout_ms`)"
                        ),
                        Expired::Idle(bound) => tracing::debug!(
                            %peer,
                            bound_secs = bound.as_secs(),
                            "closing an idle keep-alive connection \
                             (`server.keep_alive_timeout_secs`)"
                        ),
                        Expired::Stalled(bound) => tracing::debug!(
                            %peer,
                            bound_secs = bound.as_secs(),
                            "closing a connection whose client stopped reading its responses \
                             (`server.keep_alive_timeout_secs`)"
                        ),
                    }
                    return;
                }
            }
        }
    }
}

/// When a connection accepted `now` is retired, for an age bound of `age`:
/// between 90 % and 100 % of it, drawn from `entropy`, so that connections
/// opened together (a client's pool, at its start) do not all reconnect
/// together.
fn retire_at(now: Instant, age: Duration, entropy: &Entropy) -> Option<Instant> {
    now.checked_add(age.saturating_sub(entropy.jitter(age / 10)))
}

/// Resolves at `at`; never without one.
async fn retired_at(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Resolves once the connection is known to be HTTP/2: by a request when
/// `by_request`, else by its preface or a request.
async fn http2_known(clock: &ConnectionClock, by_request: bool) {
    if by_request {
        clock.http2_request().await;
    } else {
        clock.http2().await;
    }
}

/// Wakes the accept loop when a connection's task ends, whatever ends it.
struct NotifyOnDrop(Arc<Notify>);

impl Drop for NotifyOnDrop {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::retire_at;
    use crate::entropy::Entropy;

    #[test]
    fn a_connection_is_retired_between_nine_tenths_of_its_age_and_its_age() {
        let now = Instant::now();
        let entropy = Entropy::seeded(7);
        let age = Duration::from_secs(10);
        let after: Vec<Duration> = (0..1000)
            .map(|_| retire_at(now, age, &entropy).expect("no overflow") - now)
            .collect();
        assert!(after
            .iter()
            .all(|after| (Duration::from_secs(9)..=age).contains(after)));
        // Spread over the whole tenth.
        assert!(after
            .iter()
            .any(|after| *after < Duration::from_millis(9_100)));
        assert!(after
            .iter()
            .any(|after| *after > Duration::from_millis(9_900)));
    }
}
