//! [`serve`]: run a router until shutdown, with every connection bounded.

mod accept;
mod clock;
mod connection;
mod heads;
mod io;
mod request_body;
mod response_body;
mod service;

use axum::Router;
use tokio::net::TcpListener;

use crate::shutdown::{require_timer, Shutdown};

use super::ShutdownGate;
use accept::Acceptor;
use connection::Connections;

/// Serves `router` on `listener` until `shutdown` is triggered and its
/// sequence is over.
///
/// The whole service sits behind a [`ShutdownGate`]: every request carries
/// the [`ShutdownToken`](crate::shutdown::ShutdownToken) and
/// [`DrainToken`](crate::shutdown::DrainToken) (as extractors) and is counted
/// in `shutdown`'s [`InFlight`](crate::shutdown::InFlight) from admission to
/// the end of its response body. Once triggered, `serve` runs the sequence of
/// [`Shutdown`]: after the pre-stop grace new requests are answered `503`
/// with `Connection: close` (phase 1) while requests in flight finish within
/// the grace; then streams still running are told to end and the listener
/// closes (phase 2), and it returns when nothing is in flight or the drain
/// bound passed, whichever is first, closing the connections still open:
/// each gets up to one more second, within the sum below after the
/// trigger, to write out what its last response left in its buffers (cut
/// short by a second trigger, also one that comes during that second). It never waits
/// without a bound, and returns within `prestop_grace_secs +
/// shutdown_timeout_secs + drain_force_secs` of the trigger (G4).
///
/// # Connections
///
/// `serve` drives hyper's HTTP/1 and HTTP/2 server (through hyper-util, on
/// tokio's timer) itself rather than through `axum::serve`, so that no
/// client can hold a connection by sending nothing, half a head, or nothing
/// more between requests, nor by reading nothing of its responses:
///
/// | what the client does | what bounds it | config key (default) |
/// |---|---|---|
/// | connects and sends nothing, or half a request head | the header bound, from the accept | `server.header_read_timeout_ms` (30000) |
/// | starts a later head on a keep-alive connection and stalls (also one sent with the head before it, or while that request is served) | the header bound, from its first byte | `server.header_read_timeout_ms` |
/// | keeps a connection open between requests | the idle bound, from the last bytes of its last response | `server.keep_alive_timeout_secs` (75) |
/// | keeps a connection busy for days (a sidecar's or a load balancer's pool) | the age bound, between 90 % and 100 % of it from the accept: the connection is then told to go (HTTP/1: the next response says `Connection: close`; HTTP/2: GOAWAY), cutting nothing in flight | `server.max_connection_age_secs` (0: none) |
/// | trickles a request body | the route's deadline (extractors run under it); nothing on a route without one | `server.timeouts.request_timeout_ms`, route attributes |
/// | reads the response slowly, or stops reading it (over HTTP/2, also by granting no flow-control window, which holds even a short body) | the route's deadline up to the response head; then the idle bound, from the last sign that the client reads: the socket taking bytes after it had stopped, or, while the body still streams, hyper asking it for more (a body waiting for its own data, an SSE stream between events, waits for nothing of the client's; over HTTP/2 the bound applies once every response on the connection waits for the client, and answers to the client's PINGs are no sign) | `server.keep_alive_timeout_secs` |
///
/// Over HTTP/1, `serve` finds where each head ends in the bytes it reads
/// (hyper reads ahead), so a head sent with the one before it is bounded
/// from its first byte too. The bytes that follow a head with a body are
/// the body's until its handler has read it whole; a head that arrives
/// before that (in the same read as the body's end, or after a body its
/// handler leaves unread) is bounded from the first byte read after its
/// response, or by the idle bound if none comes. hyper reads a head only
/// once the answer before it is out, so a head sent while that answer
/// still goes out is bounded from the last bytes out (a client reading a
/// large answer slowly is not cut off for a head it sent long ago), and
/// while the client reads nothing of it, by the idle bound too, whichever
/// passes first (also with the header bound off).
///
/// An HTTP/1 request answered before its body was read (refused by the
/// shutdown gate, shed by the concurrency limit, refused by the deadline
/// check, or a handler that never read it) leaves its client sending the
/// body, and hyper closes the connection after the answer rather than read
/// the rest. A socket closed with bytes unread is reset, which can cost a
/// client that sends its whole body before it reads the answer itself
/// (RFC 9112, section 9.6: its write fails with a broken pipe). So such a
/// connection closes its sending side first, then reads and drops what the
/// client still sends until the client closes its side, for 2 s at most
/// (nginx's `lingering_close`): less when the idle bound passes first, or
/// `serve` returns and closes the connections still open. One whose last
/// body hyper read to its end itself (a short one, already in its buffer)
/// lingers too when it closes, on a socket that sends nothing more. A
/// connection hyper hands to the app (a `101` to a request that asked for
/// an upgrade, a 2xx to a `CONNECT`) never lingers: the socket is the
/// app's. A handler that answers at length without reading a large upload
/// is not helped: the client, still sending, reads none of the answer, and
/// the connection ends at the idle bound, reset.
///
/// A bound that passes closes the connection (the age tells it to close,
/// below); `0` turns one off. They come from the
/// [`Config`](crate::config::Config) `shutdown` was made with.
/// From phase 1 of the shutdown every HTTP/1 response but a `101` carries
/// `Connection: close` and every HTTP/2 connection gets a GOAWAY (one
/// that has not sent a request yet too, once its connection preface shows
/// it is HTTP/2; one opened during phase 1 after its first request, which
/// is answered 503), so keep-alive clients move to another instance. Connections idle
/// between requests at that moment close as soon as what their last
/// response left in the buffers is written, and HTTP/1 connections serving
/// a request close after its response, also one whose head went out before
/// phase 1 (a long download, a stream). A new connection that
/// has not sent a request yet stays open for it: its client may have sent
/// one already, and would not resend what a fresh connection lost.
///
/// Past `server.max_connection_age_secs`, a connection is told to go as at
/// phase 1, alone: over HTTP/2 it gets a GOAWAY (and closes, if idle, once
/// its client acknowledges it, losing nothing); over HTTP/1 each response
/// whose head goes out from then on says `Connection: close`, and hyper
/// closes the connection after it. Unlike at phase 1, an HTTP/1 connection
/// is not closed when it goes idle: its client may have sent a request
/// already, which HTTP/1 cannot refuse. So one idle at its age, or serving
/// a response whose head went out before (a stream, a long download),
/// closes after its next response, or at the idle bound if there is one.
///
/// An upgraded connection (a WebSocket, say) leaves `serve` with its `101`
/// answer: from then on the socket belongs to the task the upgrade handed
/// it to, and neither the in-flight count nor the shutdown sees it. End it
/// from that task, on the [`DrainToken`](crate::shutdown::DrainToken) or the
/// [`ShutdownToken`](crate::shutdown::ShutdownToken). Over HTTP/2 the same
/// WebSocket is a tunnel inside the connection (an extended `CONNECT`,
/// RFC 8441, which `serve` offers): a tunnel the router answers with a 2xx
/// keeps its connection busy for the rest of its life, so no idle bound
/// cuts it, and the connection closes when its client closes it, or at the
/// end of the drain; at phase 1 it gets the GOAWAY, which ends no stream.
///
/// Each request carries its client's address as axum's
/// [`ConnectInfo<SocketAddr>`](axum::extract::ConnectInfo), as under
/// `axum::serve` with `into_make_service_with_connect_info`. A router
/// called another way (`Sim::app`, `oneshot`) gets none: give it one with
/// axum's `MockConnectInfo` layer.
///
/// When the process runs out of file descriptors, accepting waits (logging
/// a rate-limited warning) until a connection closes, and resumes at once.
///
/// Signals are not listened for implicitly: call
/// [`Shutdown::listen_for_signals`] in `main`.
///
/// Its bounds run on tokio's clock: under a paused one (a test with
/// `start_paused`), a client on another thread or in another process
/// is cut off at the header bound as soon as the runtime waits for it, the
/// clock having jumped there. Test `serve` on the real clock.
///
/// # Examples
///
/// ```no_run
/// use timebox::config::Config;
/// use timebox::shutdown::Shutdown;
///
/// # async fn run(router: axum::Router) -> Result<(), Box<dyn std::error::Error>> {
/// let config = Config::load()?;
/// // The bounds `serve` keeps are the configuration's: refuse bad ones.
/// for warning in config.validate()? {
///     tracing::warn!(key = warning.key(), "{warning}");
/// }
/// let shutdown = Shutdown::new(&config);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// timebox::server::serve(listener, router, shutdown).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// When `listener` is not a listening socket. Other accept errors are
/// waited out (see above), never returned.
///
/// # Panics
///
/// At its first poll, outside a tokio runtime with its timer enabled
/// (`enable_time`, or `enable_all`), with tokio's message: every
/// connection's bounds and the shutdown's phases wait on it.
///
/// # Cancellation safety
///
/// Dropping the future stops the server at once, without a drain, and
/// closes every connection.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    // Before a connection is accepted, whose task would meet it first.
    require_timer();
    // Each handler made into its route once, as `axum::serve` does, rather
    // than on every request.
    let service = ShutdownGate::new(router.with_state(()), &shutdown);
    let connections = Connections::new(&shutdown);
    let mut acceptor = Acceptor::new(listener, connections.closed());
    let drained = shutdown.wait_drained();
    tokio::pin!(drained);
    let phase2 = shutdown.drain_token();
    // The listener stays open through phase 1, so a request that still
    // arrives is told `503` with a `Retry-After` rather than refused; it
    // closes at phase 2, which begins as soon as nothing is in flight.
    let over = loop {
        tokio::select! {
            () = &mut drained => break true,
            () = phase2.cancelled() => break false,
            accepted = acceptor.accept() => {
                let (stream, peer) = accepted?;
                connections.spawn(stream, peer, service.clone());
            }
        }
    };
    drop(acceptor);
    if !over {
        drained.await;
    }
    connections.close(&shutdown).await;
    Ok(())
}
