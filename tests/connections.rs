//! Connections under `serve` (DESIGN S13): hostile clients cannot hold the
//! server. Real sockets on 127.0.0.1, short configured bounds, and upper
//! bounds (with room) asserted on the wall clock; a lower bound is
//! measured from before what starts the server's clock (the connection,
//! the request), so a late test thread cannot shorten it.

mod support;

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::rt::{TokioExecutor, TokioIo};
use timebox::config::Config;
use timebox::observe::{Event, Observer};
use timebox::registry::CancelReason;
use timebox::shutdown::{Shutdown, ShutdownToken};
use timebox::{get, post, routes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

use support::raw::{read_response, RawResponse};
use support::time::assert_just_after;

/// Room given to every wall-clock bound, for a loaded CI machine.
const ROOM: Duration = Duration::from_millis(1500);

/// The open files this binary's tests may hold at once: the 1,000 ends of
/// the 500 half-open connections, the 400 connections to the server out
/// of descriptors, and the other tests' few.
const FILES: u32 = 2048;
const HALF_HEAD: &[u8] = b"GET /hello HTTP/1.1\r\nHost: x\r\n";
const FULL_HEAD: &[u8] = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
/// What `HALF_HEAD` leaves out of `FULL_HEAD`.
const REST_OF_HEAD: &[u8] = b"\r\n";

#[get("/hello", timeout = "off")]
async fn hello() -> &'static str {
    "hello"
}

/// In flight until 600 ms after phase 1 begins, however late that is.
#[get("/slow", timeout = "off")]
async fn slow(phase1: ShutdownToken) -> &'static str {
    phase1.cancelled().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    "slow"
}

/// The size of `/big`'s answer: more than loopback's socket buffers hold,
/// so hyper still has some of it to write after it let the response go.
const BIG: usize = 32 << 20;

#[get("/big", timeout = "off")]
async fn big() -> Vec<u8> {
    vec![b'x'; BIG]
}

/// 16 MiB in chunks of 64 KiB, more than the sockets between a client and
/// the server hold.
#[get("/bulk", timeout = "off")]
async fn bulk() -> axum::body::Body {
    let chunk = Bytes::from(vec![b'x'; 64 << 10]);
    let chunks =
        futures_util::stream::iter((0..256).map(move |_| Ok::<_, io::Error>(chunk.clone())));
    axum::body::Body::from_stream(chunks)
}

/// Streams "first" at once and "last" 600 ms later: its head goes out
/// long before its body ends.
#[get("/stream", timeout = "off")]
async fn stream() -> axum::body::Body {
    let chunks = futures_util::stream::unfold(0, |step| async move {
        match step {
            0 => Some((Ok::<_, io::Error>(Bytes::from_static(b"first")), 1)),
            1 => {
                tokio::time::sleep(Duration::from_millis(600)).await;
                Some((Ok(Bytes::from_static(b"last")), 2))
            }
            _ => None,
        }
    });
    axum::body::Body::from_stream(chunks)
}

/// Keeps a request in flight for 5 s, and with it phase 1 of a shutdown.
#[get("/hold", timeout = "off")]
async fn hold() -> &'static str {
    tokio::time::sleep(Duration::from_secs(5)).await;
    "held"
}

/// Keeps a request in flight for 90 s: past the age of the age tests'
/// connections.
#[get("/hold_long", timeout = "off")]
async fn hold_long() -> &'static str {
    tokio::time::sleep(Duration::from_secs(90)).await;
    "held"
}

/// Lets `/held` answer. Only the one test that asks for `/held` uses it.
static RELEASE_HELD: std::sync::LazyLock<tokio::sync::Notify> =
    std::sync::LazyLock::new(tokio::sync::Notify::new);

/// Keeps a request in flight, and with it phase 1 of a shutdown, until the
/// test releases it.
#[get("/held", timeout = "off")]
async fn held() -> &'static str {
    RELEASE_HELD.notified().await;
    "held"
}

/// Agrees to switch to the `echo` protocol once phase 1 has begun.
#[get("/upgrade", timeout = "off")]
async fn upgrade(phase1: ShutdownToken) -> axum::response::Response {
    phase1.cancelled().await;
    axum::response::Response::builder()
        .status(http::StatusCode::SWITCHING_PROTOCOLS)
        .header("connection", "upgrade")
        .header("upgrade", "echo")
        .body(axum::body::Body::empty())
        .expect("a valid 101")
}

/// Opens an `echo` tunnel: what the client sends through it comes back.
async fn tunnel(mut request: axum::extract::Request) -> http::StatusCode {
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let (mut read, mut write) = tokio::io::split(TokioIo::new(upgraded));
        let _ = tokio::io::copy(&mut read, &mut write).await;
    });
    http::StatusCode::OK
}

/// Where the half-closing tunnel hands on what its client sent it.
static HALF_CLOSED: std::sync::Mutex<Option<oneshot::Sender<Vec<u8>>>> =
    std::sync::Mutex::new(None);

/// Upgrades without reading the request's body, closes its own sending
/// side through the tunnel at once, then hands on all the client sends.
async fn half_close(mut request: axum::extract::Request) -> axum::response::Response {
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let mut tunnel = TokioIo::new(upgraded);
        let _ = tunnel.shutdown().await;
        let mut read = Vec::new();
        let _ = tunnel.read_to_end(&mut read).await;
        let told = HALF_CLOSED.lock().unwrap().take();
        if let Some(told) = told {
            let _ = told.send(read);
        }
    });
    axum::response::Response::builder()
        .status(http::StatusCode::SWITCHING_PROTOCOLS)
        .header("connection", "upgrade")
        .header("upgrade", "echo")
        .body(axum::body::Body::empty())
        .expect("a valid 101")
}

/// Reads a whole body, then works for 200 ms.
#[post("/read_then_work", timeout = "off")]
async fn read_then_work(body: String) -> String {
    tokio::time::sleep(Duration::from_millis(200)).await;
    body
}

/// Answers without reading the body it was sent.
#[post("/ignore")]
async fn ignore() -> &'static str {
    "ignored"
}

/// Reads a whole body, under a 300 ms route deadline.
#[post("/upload", timeout_ms = 300)]
async fn upload(body: String) -> String {
    body
}

fn config(header_read_ms: u64, keep_alive_secs: u64) -> Config {
    let mut config = Config::default();
    config.server.header_read_timeout_ms = header_read_ms;
    config.server.keep_alive_timeout_secs = keep_alive_secs;
    config.server.prestop_grace_secs = 0;
    config
}

struct Server {
    addr: SocketAddr,
    shutdown: Shutdown,
    served: JoinHandle<io::Result<()>>,
}

async fn start(config: &Config) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("loopback binds");
    let addr = listener.local_addr().expect("a local address");
    let shutdown = Shutdown::new(config);
    let app: Router = routes![
        hello,
        slow,
        big,
        bulk,
        stream,
        hold,
        hold_long,
        held,
        upgrade,
        upload,
        ignore,
        read_then_work
    ]
    .into_router(config)
    .route("/tunnel", axum::routing::any(tunnel))
    .route("/half_close", axum::routing::any(half_close))
    .route(
        "/peer",
        axum::routing::get(
            |axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<SocketAddr>| async move {
                peer.to_string()
            },
        ),
    );
    let served = tokio::spawn(timebox::server::serve(listener, app, shutdown.clone()));
    Server {
        addr,
        shutdown,
        served,
    }
}

impl Server {
    /// Triggers the shutdown and waits for `serve` to return, which it must
    /// do well; how long that took.
    async fn shut_down(self) -> Duration {
        let triggered = tokio::time::Instant::now();
        self.shutdown.trigger();
        self.served
            .await
            .expect("serve did not panic")
            .expect("serve ends well");
        triggered.elapsed()
    }

    /// Triggers the shutdown and waits until phase 1 has begun: the trigger
    /// only starts the sequence, on a task of its own. Fails the test after
    /// [`ROOM`].
    async fn begin_phase_one(&self) {
        self.shutdown.trigger();
        tokio::time::timeout(ROOM, self.shutdown.token().cancelled())
            .await
            .expect("phase 1 begins");
    }

    /// Waits until no request is in flight: their answers have been
    /// dropped. Fails the test after `bound`.
    async fn wait_no_request_within(&self, bound: Duration) {
        let in_flight = self.shutdown.in_flight();
        let give_up = Instant::now() + bound;
        while in_flight.count() > 0 {
            assert!(
                Instant::now() < give_up,
                "an answer still holds its request after {bound:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until at least `n` requests are in flight: the server has read
    /// them and let them in. Fails the test after [`ROOM`].
    async fn wait_in_flight(&self, n: usize) {
        let in_flight = self.shutdown.in_flight();
        let give_up = Instant::now() + ROOM;
        while in_flight.count() < n {
            assert!(
                Instant::now() < give_up,
                "{n} requests were not in flight within {ROOM:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Pauses the clock once a test's connections are made and its bytes
/// delivered, so that the rest runs on timers alone. A test paused from
/// its start could see the clock jump to the server's next timer (its
/// header-read bound) while a loopback write was still on its way (a
/// loaded kernel may deliver it later), which the runtime, finding nothing
/// else to do, takes for idleness. Times read after the pause are up to
/// [`SLACK`] late: the clock stopped part way through a millisecond, and
/// timers fire on whole ones.
fn pause_once_connected() {
    tokio::time::pause();
}

/// How late a time read on a clock paused part way through a test may be.
const SLACK: Duration = Duration::from_millis(10);

/// Reads from `stream` into `read` until `done(read)`. Fails the test if
/// the stream closes first.
async fn read_until(stream: &mut TcpStream, read: &mut Vec<u8>, done: impl Fn(&[u8]) -> bool) {
    let mut buf = [0u8; 1024];
    while !done(read) {
        let n = stream.read(&mut buf).await.expect("the stream is read");
        assert!(
            n > 0,
            "closed before the stream ended: {}",
            String::from_utf8_lossy(read)
        );
        read.extend_from_slice(&buf[..n]);
    }
}

/// How long until the server closes `stream` (EOF or reset), at most `bound`.
async fn closed_within(stream: &mut TcpStream, bound: Duration) -> Duration {
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    match tokio::time::timeout_at((start + bound).into(), stream.read(&mut buf)).await {
        Err(_) => panic!("the server kept the connection open for {bound:?}"),
        Ok(Ok(0) | Err(_)) => start.elapsed(),
        Ok(Ok(n)) => panic!(
            "expected the connection to close, got {:?}",
            String::from_utf8_lossy(&buf[..n])
        ),
    }
}

async fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.expect("the server accepts")
}

/// An HTTP/2 connection to `addr` (prior knowledge) that the server has
/// begun to serve: its first bytes (its SETTINGS) have arrived, so whether
/// it was accepted before phase 1 is settled. Its sender, and its driver
/// on a task of its own.
async fn http2(
    addr: SocketAddr,
) -> (
    hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    JoinHandle<hyper::Result<()>>,
) {
    http2_with(
        addr,
        &hyper::client::conn::http2::Builder::new(TokioExecutor::new()),
    )
    .await
}

/// [`http2`], with the client's settings of `builder`.
async fn http2_with(
    addr: SocketAddr,
    builder: &hyper::client::conn::http2::Builder<TokioExecutor>,
) -> (
    hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    JoinHandle<hyper::Result<()>>,
) {
    let (heard, first_bytes) = oneshot::channel();
    let io = TokioIo::new(Heard {
        stream: connect(addr).await,
        heard: Some(heard),
    });
    let (sender, connection) = builder.handshake(io).await.expect("an HTTP/2 handshake");
    let connection = tokio::spawn(connection);
    tokio::time::timeout(ROOM, first_bytes)
        .await
        .expect("the server serves the connection")
        .expect("the connection is open");
    (sender, connection)
}

/// A stream that says when its first bytes arrive.
struct Heard {
    stream: TcpStream,
    heard: Option<oneshot::Sender<()>>,
}

impl AsyncRead for Heard {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            if let Some(heard) = self.heard.take() {
                let _ = heard.send(());
            }
        }
        read
    }
}

impl AsyncWrite for Heard {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// A `GET` of `path` on `addr`, for an HTTP/2 connection.
fn h2_get(addr: SocketAddr, path: &str) -> http::Request<Empty<Bytes>> {
    http::Request::get(format!("http://{addr}{path}"))
        .body(Empty::new())
        .expect("a valid request")
}

/// A connection to `addr` that asked for `/big`, and sent `after` in the
/// same write (a pipelined head).
async fn get_big(addr: SocketAddr, after: &[u8]) -> TcpStream {
    let mut stream = connect(addr).await;
    stream
        .write_all(&[&b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n"[..], after].concat())
        .await
        .expect("the head is sent");
    stream
}

/// Asks `addr` for `/big`, sending `after` with the head, and reads the
/// first 64 KiB of the answer.
async fn big_begun_with(addr: SocketAddr, after: &[u8]) -> (TcpStream, Vec<u8>) {
    let mut stream = get_big(addr, after).await;
    let mut read = vec![0u8; 64 * 1024];
    stream
        .read_exact(&mut read)
        .await
        .expect("the answer starts");
    (stream, read)
}

/// Asks `addr` for `/big` and reads the first 64 KiB of the answer.
async fn big_begun(addr: SocketAddr) -> (TcpStream, Vec<u8>) {
    big_begun_with(addr, b"").await
}

/// Asserts that `read` holds a response head and the whole of `/big`.
fn assert_whole_big(read: &[u8]) {
    let head_end = read
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    assert_eq!(read.len() - head_end, BIG, "the whole body arrived");
}

/// Sends a POST of `hi` to `path`.
async fn post_hi(stream: &mut TcpStream, path: &str) {
    let request = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
    stream.write_all(request.as_bytes()).await.unwrap();
}

async fn get_hello(stream: &mut TcpStream) -> RawResponse {
    stream.write_all(FULL_HEAD).await.expect("the head is sent");
    read_response(stream).await.expect("a whole response")
}

/// Each request carries its client's address, as axum's `ConnectInfo`.
#[tokio::test]
async fn a_handler_reads_the_clients_address() {
    let server = start(&config(300, 75)).await;
    let mut stream = connect(server.addr).await;
    let client = stream.local_addr().expect("a local address");
    stream
        .write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("the head is sent");
    let response = read_response(&mut stream).await.expect("a whole response");
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body, client.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_request_head_is_disconnected_within_the_header_bound() {
    let server = start(&config(300, 75)).await;
    // The server's bound starts once it accepts, after this.
    let before_connect = Instant::now();
    let mut stream = connect(server.addr).await;
    stream.write_all(HALF_HEAD).await.unwrap();
    closed_within(&mut stream, Duration::from_millis(300) + ROOM).await;
    // Not before the bound.
    let took = before_connect.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
}

/// The line that says a connection was cut names the client, so a
/// slow-loris source can be found in the log. (A current-thread runtime:
/// the log is captured on the thread that runs the server.)
#[tokio::test]
async fn a_connection_cut_at_the_header_bound_is_logged_with_its_peer() {
    use support::logs::Logs;

    let (logs, _guard) = Logs::capture();
    let server = start(&config(300, 75)).await;
    let mut stream = connect(server.addr).await;
    let client = stream.local_addr().expect("a local address");
    stream.write_all(HALF_HEAD).await.unwrap();
    closed_within(&mut stream, Duration::from_millis(300) + ROOM).await;
    logs.one_line_with(
        "did not arrive in time",
        &[&format!("peer={client}"), "bound_ms=300"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_nothing_is_disconnected_within_the_header_bound() {
    let server = start(&config(300, 75)).await;
    let mut stream = connect(server.addr).await;
    closed_within(&mut stream, Duration::from_millis(300) + ROOM).await;
}

/// S13: a header bound of 0 is none, hyper's own (30 s) included: a head
/// that takes a minute still gets its answer.
#[tokio::test]
async fn with_no_header_bound_a_head_may_take_a_minute() {
    let server = start(&config(0, 75)).await;
    let mut stream = connect(server.addr).await;
    stream.write_all(HALF_HEAD).await.unwrap();
    // The server reads the head's start (and would arm a bound) before the
    // minute passes, on the paused clock.
    tokio::time::sleep(Duration::from_millis(50)).await;
    quiet_for(Duration::from_secs(60)).await;
    stream.write_all(REST_OF_HEAD).await.unwrap();
    let response = read_response(&mut stream).await.expect("an answer");
    assert_eq!(response.status, 200);
}

/// S13: an idle bound of 0 is none: a connection idle for an hour between
/// requests still takes the next one.
#[tokio::test]
async fn with_no_idle_bound_a_connection_idle_for_an_hour_stays_open() {
    let server = start(&config(30_000, 0)).await;
    let mut stream = connect(server.addr).await;
    assert_eq!(get_hello(&mut stream).await.status, 200);
    quiet_for(Duration::from_secs(3600)).await;
    assert_eq!(get_hello(&mut stream).await.status, 200);
}

/// Lets `quiet` pass on a paused clock, with nothing sent or read
/// meanwhile: the server's timers fire as they would in that time.
async fn quiet_for(quiet: Duration) {
    tokio::time::pause();
    tokio::time::sleep(quiet).await;
    tokio::time::resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_later_head_on_a_keep_alive_connection_is_bounded_too() {
    // The idle bound is long: only the header bound can close it in time.
    let server = start(&config(300, 60)).await;
    let mut stream = connect(server.addr).await;
    let first = get_hello(&mut stream).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.body, "hello");
    // Idle longer than the header bound: the wait between requests is not
    // the head's.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let written = Instant::now();
    stream.write_all(HALF_HEAD).await.unwrap();
    closed_within(&mut stream, Duration::from_millis(300) + ROOM).await;
    // Counted from the head's first byte, not from the end of the request
    // before it.
    let took = written.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_begun_in_the_same_write_as_the_one_before_is_bounded_too() {
    // hyper reads both at once, before it parses the first; only the header
    // bound can close it in time.
    let server = start(&config(300, 60)).await;
    let mut stream = connect(server.addr).await;
    stream
        .write_all(&[FULL_HEAD, HALF_HEAD].concat())
        .await
        .unwrap();
    let first = read_response(&mut stream).await.expect("a whole response");
    assert_eq!(first.status, 200);
    closed_within(&mut stream, Duration::from_millis(300) + ROOM).await;
}

/// The same after a request with a body that its handler read whole: what
/// is read after that body is heads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_begun_in_the_same_write_as_the_one_before_is_bounded_after_a_body_too() {
    let server = start(&config(300, 60)).await;
    let mut stream = connect(server.addr).await;
    post_hi(&mut stream, "/upload").await;
    let upload = read_response(&mut stream).await.expect("a whole response");
    assert_eq!(upload.body, "hi");
    stream
        .write_all(&[FULL_HEAD, HALF_HEAD].concat())
        .await
        .unwrap();
    let hello = read_response(&mut stream).await.expect("a whole response");
    assert_eq!(hello.status, 200);
    closed_within(&mut stream, Duration::from_millis(300) + ROOM).await;
}

/// And a head begun while that request is still served, once its body
/// was read whole, is held to the header bound too, not left to the idle
/// one. (That the bound counts from the head's first byte, the clock's own
/// tests show in virtual time.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_begun_after_a_body_was_read_while_its_request_runs_is_bounded_too() {
    let server = start(&config(300, 60)).await;
    let mut stream = connect(server.addr).await;
    post_hi(&mut stream, "/read_then_work").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    stream.write_all(HALF_HEAD).await.unwrap();
    let worked = read_response(&mut stream).await.expect("a whole response");
    assert_eq!(worked.body, "hi");
    closed_within(&mut stream, Duration::from_millis(300) + ROOM).await;
}

/// S13: a body that trickles in is bounded by the route's deadline, which
/// counts from before extraction: the client is told 503 at it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_in_is_answered_503_at_the_route_deadline() {
    let server = start(&config(30_000, 75)).await;
    let mut stream = connect(server.addr).await;
    // Before the head goes: the route's clock cannot start earlier.
    let sent_head = Instant::now();
    stream
        .write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        .await
        .unwrap();
    let (mut reader, mut writer) = stream.split();
    // A byte every 100 ms: the whole body would take 10 s.
    let mut trickle = tokio::time::interval(Duration::from_millis(100));
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        tokio::select! {
            read = reader.read(&mut buf) => {
                let n = read.expect("the answer is read");
                assert!(n > 0, "closed without an answer: {}", String::from_utf8_lossy(&answer));
                answer.extend_from_slice(&buf[..n]);
            }
            _ = trickle.tick() => {
                let _ = writer.write_all(b"x").await;
            }
        }
    }
    let took = sent_head.elapsed();
    let head = String::from_utf8_lossy(&answer);
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(300) + ROOM,
        "{took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed_after_its_timeout() {
    let server = start(&config(30_000, 1)).await;
    let mut stream = connect(server.addr).await;
    // The idle bound starts once the answer is sent, after this.
    let before_request = Instant::now();
    assert_eq!(get_hello(&mut stream).await.status, 200);
    closed_within(&mut stream, Duration::from_secs(1) + ROOM).await;
    // Not before the bound.
    let took = before_request.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
}

/// A WebSocket over HTTP/2 is a tunnel (an extended `CONNECT`, RFC 8441)
/// whose answer's body hyper drops at once: the tunnel keeps its
/// connection from the idle bound, as an HTTP/1 upgrade leaves `serve`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_tunnel_quiet_past_the_idle_bound_stays_open() {
    let server = start(&config(30_000, 1)).await;
    let (mut sender, _connection) = http2(server.addr).await;
    let mut connect = http::Request::builder()
        .method(http::Method::CONNECT)
        .uri(format!("http://{}/tunnel", server.addr))
        .body(Empty::new())
        .expect("a valid request");
    connect
        .extensions_mut()
        .insert(hyper::ext::Protocol::from_static("echo"));
    let response = sender.send_request(connect).await.expect("an answer");
    assert_eq!(response.status(), 200);
    let mut tunnel = TokioIo::new(hyper::upgrade::on(response).await.expect("a tunnel"));
    for (n, word) in [&b"ping"[..], b"pong"].into_iter().enumerate() {
        if n > 0 {
            // Quiet for longer than the idle bound.
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
        tunnel.write_all(word).await.expect("the tunnel is open");
        let mut echo = [0u8; 4];
        tokio::time::timeout(ROOM, tunnel.read_exact(&mut echo))
            .await
            .expect("the echo comes back")
            .expect("the tunnel is open");
        assert_eq!(&echo, word);
    }
}

/// A client that reads no more of an answer than its head holds neither
/// its connection nor its request past the idle bound: an HTTP/2 client
/// that grants no flow-control window...
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_client_that_grants_no_window_is_closed_after_the_idle_bound() {
    // Also one that keeps its connection alive with PINGs, whose answers
    // go out all along.
    for pings in [false, true] {
        no_window_closed_after_the_idle_bound(pings).await;
    }
}

async fn no_window_closed_after_the_idle_bound(pings: bool) {
    let server = start(&config(30_000, 1)).await;
    let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
    builder.initial_stream_window_size(0);
    if pings {
        builder
            .timer(hyper_util::rt::TokioTimer::new())
            .keep_alive_interval(Duration::from_millis(300))
            .keep_alive_while_idle(true);
    }
    let (mut sender, connection) = http2_with(server.addr, &builder).await;
    let request = http::Request::get(format!("http://{}/hello", server.addr))
        .body(Empty::new())
        .expect("a valid request");
    // Before the request goes: the stall's clock cannot start earlier.
    let asked = Instant::now();
    let response = sender.send_request(request).await.expect("an answer");
    assert_eq!(response.status(), 200);
    // Its body cannot be sent: the window is 0, and it is never read.
    let closed = tokio::time::timeout(Duration::from_secs(1) + ROOM, connection).await;
    assert!(
        closed.is_ok(),
        "the connection is still open (pings: {pings})"
    );
    let took = asked.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
    // The stream's task drops the body once it learns the connection ended.
    server.wait_no_request_within(ROOM).await;
    drop(response);
}

/// ...and an HTTP/1 client that stops reading a streamed answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http1_client_that_stops_reading_is_closed_after_the_idle_bound() {
    let server = start(&config(30_000, 1)).await;
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("a small buffer");
    let mut stream = socket
        .connect(server.addr)
        .await
        .expect("the server accepts");
    stream
        .write_all(b"GET /bulk HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut head = Vec::new();
    read_until(&mut stream, &mut head, |read| {
        read.starts_with(b"HTTP/1.1 200")
    })
    .await;
    server.wait_in_flight(1).await;
    // Nothing more is read: the answer waits once the sockets are full.
    server
        .wait_no_request_within(Duration::from_secs(1) + 2 * ROOM)
        .await;
    drop(stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_alive_connection_in_use_stays_open_past_the_header_bound() {
    let server = start(&config(300, 60)).await;
    let mut stream = connect(server.addr).await;
    for _ in 0..3 {
        assert_eq!(get_hello(&mut stream).await.status, 200);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_half_open_connections_neither_slow_a_real_request_nor_hold_shutdown() {
    // Both ends of each connection are this process's, beside the other
    // tests' sockets.
    support::files::make_room_for(FILES);
    let server = start(&config(60_000, 75)).await;
    let mut half_open = Vec::new();
    for _ in 0..500 {
        let mut stream = connect(server.addr).await;
        stream.write_all(HALF_HEAD).await.unwrap();
        half_open.push(stream);
    }
    let start = Instant::now();
    let answer = reqwest::get(format!("http://{}/hello", server.addr))
        .await
        .expect("a real request is answered");
    assert_eq!(answer.status(), 200);
    assert!(start.elapsed() < ROOM, "{:?}", start.elapsed());

    let start = Instant::now();
    server.shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(1) + ROOM, server.served)
        .await
        .expect("serve returns within its bound")
        .unwrap()
        .unwrap();
    for stream in &mut half_open[..10] {
        closed_within(stream, ROOM).await;
    }
    assert!(start.elapsed() < Duration::from_secs(1) + 2 * ROOM);
}

/// The config of the age tests: connections retired 54 to 60 s after
/// they were accepted (virtual time costs nothing), with a header bound
/// longer than that.
fn aged_config() -> Config {
    let mut config = config(120_000, 75);
    config.server.max_connection_age_secs = 60;
    config
}

/// Opens streams on `sender` until the GOAWAY arrives (the client then
/// opens none), each answered `status`; fails the test after [`ROOM`].
async fn until_goaway(
    sender: &mut hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    addr: SocketAddr,
    status: http::StatusCode,
) {
    let give_up = Instant::now() + ROOM;
    loop {
        match sender.send_request(h2_get(addr, "/hello")).await {
            Err(_) => return,
            Ok(response) => assert_eq!(response.status(), status),
        }
        assert!(Instant::now() < give_up, "no GOAWAY within {ROOM:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The stream in flight answers `held` whole, and then the connection,
/// told to go, ends gracefully.
async fn finishes_then_the_connection_ends(
    stream: JoinHandle<hyper::Result<http::Response<hyper::body::Incoming>>>,
    connection: JoinHandle<hyper::Result<()>>,
) {
    use http_body_util::BodyExt;

    let response = stream
        .await
        .unwrap()
        .expect("the stream in flight finishes");
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "held");
    tokio::time::timeout(ROOM, connection)
        .await
        .expect("the connection ends after the GOAWAY")
        .unwrap()
        .expect("a graceful end");
}

/// Reads a `200` that asks the client to close, then sees the connection
/// close; the response.
async fn told_to_close(stream: &mut TcpStream) -> RawResponse {
    let response = read_response(stream).await.expect("a whole response");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("connection"), Some("close"));
    closed_within(stream, ROOM).await;
    response
}

/// `server.max_connection_age_secs`: a connection in steady use, never
/// idle for the keep-alive bound, is told to close at its age. Idle past
/// it, it is not closed at once (a request may be on its way): the next
/// response says `Connection: close`.
#[tokio::test]
async fn a_connection_in_steady_use_is_told_to_close_at_its_age() {
    let server = start(&aged_config()).await;
    let mut stream = connect(server.addr).await;
    assert_eq!(get_hello(&mut stream).await.status, 200);
    // Short of its age, the connection serves and stays.
    quiet_for(Duration::from_secs(30)).await;
    let response = get_hello(&mut stream).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("connection"), None);
    // Past it, the next request is served, told to close, and the
    // connection closes.
    quiet_for(Duration::from_secs(31)).await;
    stream.write_all(FULL_HEAD).await.expect("the head is sent");
    told_to_close(&mut stream).await;
}

/// A connection idle past its age still closes at once when phase 1
/// begins, as every idle connection does.
#[tokio::test]
async fn a_connection_idle_past_its_age_closes_at_phase_one() {
    let server = start(&aged_config()).await;
    let mut stream = connect(server.addr).await;
    assert_eq!(get_hello(&mut stream).await.status, 200);
    quiet_for(Duration::from_secs(61)).await;
    server.begin_phase_one().await;
    closed_within(&mut stream, ROOM).await;
}

/// An HTTP/1 response in flight when its connection's age passes goes
/// out whole, asking the client to close, and the connection closes.
#[tokio::test]
async fn a_response_in_flight_at_its_connections_age_goes_out_then_the_connection_closes() {
    let server = start(&aged_config()).await;
    let mut stream = connect(server.addr).await;
    stream
        .write_all(b"GET /hold_long HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    server.wait_in_flight(1).await;
    // The age passes while `/hold_long` runs; its answer comes at 90 s.
    quiet_for(Duration::from_secs(91)).await;
    assert_eq!(told_to_close(&mut stream).await.body, "held");
}

/// A later request's head half read when its connection's age passes is
/// not lost: it is answered, asking the client to close, and then the
/// connection closes.
#[tokio::test]
async fn a_head_half_read_at_its_connections_age_is_answered_then_the_connection_closes() {
    let server = start(&aged_config()).await;
    let mut stream = connect(server.addr).await;
    // hyper takes a connection with a request behind it and none under way
    // for idle, whatever it has read of the next head.
    assert_eq!(get_hello(&mut stream).await.status, 200);
    stream.write_all(HALF_HEAD).await.unwrap();
    // The server reads the head's start before the age passes, on the
    // paused clock.
    tokio::time::sleep(Duration::from_millis(50)).await;
    quiet_for(Duration::from_secs(61)).await;
    stream.write_all(REST_OF_HEAD).await.unwrap();
    told_to_close(&mut stream).await;
}

/// An HTTP/2 connection past its age gets GOAWAY while a stream runs: the
/// stream finishes, no new one is taken, and the connection ends.
#[tokio::test]
async fn an_http2_connection_gets_goaway_at_its_age_and_its_stream_finishes() {
    let server = start(&aged_config()).await;
    let (mut sender, connection) = http2(server.addr).await;
    let held = tokio::spawn(sender.send_request(h2_get(server.addr, "/hold_long")));
    server.wait_in_flight(1).await;
    // The age passes while `/hold_long` runs (90 s).
    quiet_for(Duration::from_secs(61)).await;
    // Until the GOAWAY arrives, a new stream is opened and answered.
    until_goaway(&mut sender, server.addr, http::StatusCode::OK).await;
    assert!(!held.is_finished(), "the stream in flight runs on");
    quiet_for(Duration::from_secs(30)).await;
    finishes_then_the_connection_ends(held, connection).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_phase_one_starts_a_keep_alive_response_says_close_and_the_connection_ends() {
    let server = start(&config(30_000, 75)).await;
    let mut stream = connect(server.addr).await;
    // A request on a kept-alive connection is in flight when phase 1 begins.
    assert_eq!(get_hello(&mut stream).await.status, 200);
    stream
        .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    server.wait_in_flight(1).await;
    server.begin_phase_one().await;
    let response = read_response(&mut stream).await.expect("the slow response");
    assert_eq!(response.status, 200);
    assert_eq!(response.body, "slow");
    assert_eq!(response.header("connection"), Some("close"));
    closed_within(&mut stream, ROOM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_phase_one_idle_connections_close_at_once_and_new_ones_get_503_with_close() {
    let server = start(&config(30_000, 75)).await;
    let mut busy = connect(server.addr).await;
    busy.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut idle = connect(server.addr).await;
    assert_eq!(get_hello(&mut idle).await.status, 200);
    server.wait_in_flight(1).await;
    server.begin_phase_one().await;
    closed_within(&mut idle, ROOM).await;

    // The slow request keeps phase 1 open: a new client is told to go.
    let mut late = connect(server.addr).await;
    let refused = get_hello(&mut late).await;
    assert_eq!(refused.status, 503);
    assert!(refused.header("retry-after").is_some());
    assert_eq!(refused.header("connection"), Some("close"));
    closed_within(&mut late, ROOM).await;
    assert_eq!(read_response(&mut busy).await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_phase_one_an_http2_connection_gets_goaway_and_its_stream_finishes() {
    let server = start(&config(30_000, 75)).await;
    let (mut sender, connection) = http2(server.addr).await;
    // In flight until the loop below has seen the GOAWAY: the check that
    // it came first cannot fail on a slow machine.
    let slow = sender.send_request(h2_get(server.addr, "/held"));
    let slow = tokio::spawn(slow);
    server.wait_in_flight(1).await;
    server.begin_phase_one().await;
    // Until the GOAWAY arrives, a new stream is opened and answered 503.
    // The GOAWAY comes while the slow stream is in flight, not once the
    // connection is idle.
    until_goaway(
        &mut sender,
        server.addr,
        http::StatusCode::SERVICE_UNAVAILABLE,
    )
    .await;
    assert!(
        !slow.is_finished(),
        "the GOAWAY came only once the stream in flight had ended"
    );
    RELEASE_HELD.notify_one();
    finishes_then_the_connection_ends(slow, connection).await;
}

/// Phase 1 closes a connection idle between requests without cutting
/// off what its last response left to write: hyper lets a response go (and
/// the connection looks idle) once the body is queued, not written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_phase_one_a_response_still_being_written_is_written_whole() {
    let server = start(&config(30_000, 75)).await;
    let (mut stream, mut read) = big_begun(server.addr).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.begin_phase_one().await;
    tokio::time::timeout(ROOM, stream.read_to_end(&mut read))
        .await
        .expect("the connection closes once the answer is written")
        .expect("the answer arrives whole, then the connection closes");
    assert_whole_big(&read);
}

/// G2: a second trigger while the connections still open at the end get
/// their last second to write ends the wait at once.
#[tokio::test]
async fn a_second_trigger_while_connections_finish_writing_closes_them_at_once() {
    let server = start(&config(30_000, 75)).await;
    let (_stream, _) = big_begun(server.addr).await;
    pause_once_connected();
    // Read no more: the rest cannot be written out. Nothing is in flight
    // (hyper holds the whole body), so the sequence ends at once, and the
    // connection gets its last second to write.
    server.shutdown.trigger();
    server.shutdown.wait_drained().await;
    let start = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.shutdown.force();
    server
        .served
        .await
        .expect("serve did not panic")
        .expect("serve ends well");
    assert_just_after(start.elapsed(), Duration::from_millis(300), SLACK);
}

/// G4: `serve` returns within `prestop_grace_secs + shutdown_timeout_secs +
/// drain_force_secs` of the trigger, what an orchestrator's grace is told to
/// cover: a request still in flight at the drain's bound leaves the
/// connections no more time to write out.
#[tokio::test]
async fn serve_returns_at_the_drain_bound_with_a_request_still_in_flight() {
    let mut config = config(30_000, 75);
    config.server.shutdown_timeout_secs = 1;
    config.server.drain_force_secs = 1;
    let server = start(&config).await;
    let mut stream = connect(server.addr).await;
    stream
        .write_all(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("the head is sent");
    server.wait_in_flight(1).await;
    pause_once_connected();
    assert_just_after(server.shut_down().await, Duration::from_secs(2), SLACK);
}

/// With `drain_force_secs = 0`, a sequence that ended early leaves the
/// connections the time its phases did not use: a response hyper still
/// writes (nothing is in flight once its body is queued) gets its last
/// second, as with any other drain.
#[tokio::test]
async fn with_no_drain_force_a_response_still_being_written_gets_its_last_second() {
    let mut config = config(30_000, 75);
    config.server.drain_force_secs = 0;
    let server = start(&config).await;
    let (_stream, _) = big_begun(server.addr).await;
    pause_once_connected();
    assert_just_after(server.shut_down().await, Duration::from_secs(1), SLACK);
}

/// A `drain_force_secs` past what the clock can hold (a configuration
/// `validate` would refuse, served unvalidated) bounds nothing, and ends
/// nothing early: `serve` returns once the drain is over, and a response
/// still being written gets its last second, as with any other drain.
#[tokio::test]
async fn serve_returns_under_a_drain_force_too_long_for_the_clock() {
    let mut config = config(30_000, 75);
    config.server.shutdown_timeout_secs = 1;
    config.server.drain_force_secs = u64::MAX;
    let server = start(&config).await;
    let (_stream, _) = big_begun(server.addr).await;
    pause_once_connected();
    assert_just_after(server.shut_down().await, Duration::from_secs(1), SLACK);
}

/// The idle bound counts from the last bytes written, not from when hyper
/// let the response go (once its body was queued): a client that reads a
/// large answer slowly, for longer than the bound, gets all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_read_slowly_is_not_cut_off_by_the_idle_bound() {
    let server = start(&config(30_000, 1)).await;
    let mut stream = get_big(server.addr, b"").await;
    let mut read = Vec::new();
    let mut chunk = vec![0u8; 128 * 1024];
    // 128 KiB every 20 ms for 3 s: past the idle bound, reading all along
    // (fast enough that the server's socket, whose buffers hold megabytes,
    // takes more bytes well within each second).
    for _ in 0..150 {
        stream
            .read_exact(&mut chunk)
            .await
            .expect("the answer keeps coming");
        read.extend_from_slice(&chunk);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::timeout(
        Duration::from_secs(1) + 2 * ROOM,
        stream.read_to_end(&mut read),
    )
    .await
    .expect("the connection closes after the idle bound, once the answer is written")
    .expect("the answer arrives whole, then the connection closes");
    assert_whole_big(&read);
}

/// A client that stops reading an answer holds its connection no longer
/// than the idle bound from the last bytes that went out: the rest of the
/// answer is dropped with the connection. Also when it sent its next head
/// with the first (pipelining), which hyper reads only once the answer is
/// out: the header bound (30 s here) is not the one that applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_closed_one_idle_bound_after_the_last_bytes() {
    for pipelined in [&b""[..], FULL_HEAD] {
        let server = start(&config(30_000, 1)).await;
        let (mut stream, mut read) = big_begun_with(server.addr, pipelined).await;
        tokio::time::sleep(Duration::from_secs(1) + 2 * ROOM).await;
        // What the kernel's buffers held still arrives, then the end.
        let rest = tokio::time::timeout(ROOM, stream.read_to_end(&mut read)).await;
        assert!(rest.is_ok(), "the server kept the connection open");
        assert!(
            read.len() < BIG,
            "the whole answer went out: {}",
            read.len()
        );
    }
}

/// An HTTP/1 connection serving a response whose head went out before
/// phase 1 (so without `Connection: close`) closes when that response
/// ends, not when the server is done: here another request holds phase 1
/// open for 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_phase_one_a_response_that_began_before_it_closes_its_connection_when_done() {
    let server = start(&config(30_000, 75)).await;
    let mut holder = connect(server.addr).await;
    holder
        .write_all(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut streaming = connect(server.addr).await;
    streaming
        .write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    server.wait_in_flight(2).await;
    // The stream's head has gone out before phase 1 begins.
    let mut read = Vec::new();
    read_until(&mut streaming, &mut read, |read| {
        read.windows(4).any(|w| w == b"\r\n\r\n")
    })
    .await;
    server.begin_phase_one().await;
    read_until(&mut streaming, &mut read, |read| {
        read.ends_with(b"0\r\n\r\n")
    })
    .await;
    let text = String::from_utf8_lossy(&read);
    assert!(
        !text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    assert!(text.contains("last"), "{text}");
    closed_within(&mut streaming, ROOM).await;
}

/// A `101` answered during phase 1, to a request that came before it,
/// keeps its `Connection: upgrade`: a `close` there would break the
/// handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_phase_one_a_101_keeps_its_connection_upgrade() {
    let server = start(&config(30_000, 75)).await;
    let mut stream = connect(server.addr).await;
    stream
        .write_all(
            b"GET /upgrade HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n",
        )
        .await
        .unwrap();
    server.wait_in_flight(1).await;
    server.begin_phase_one().await;
    let response = read_response(&mut stream).await.expect("the 101");
    assert_eq!(response.status, 101);
    assert_eq!(response.header("connection"), Some("upgrade"));
}

/// An HTTP/2 connection a client opened ahead of its requests (a pool, a
/// proxy) gets its GOAWAY at phase 1 too: it ends gracefully while phase 1
/// still holds the server open, and its client opens no stream on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_phase_one_an_http2_connection_with_no_request_yet_gets_goaway() {
    let server = start(&config(30_000, 75)).await;
    let in_flight = server.shutdown.in_flight().enter();
    let (mut sender, connection) = http2(server.addr).await;
    sender.ready().await.expect("the connection is open");
    server.begin_phase_one().await;
    // Phase 1 is held open by the request in flight, and the header bound
    // is 30 s: only a GOAWAY can end the connection this soon.
    tokio::time::timeout(ROOM, connection)
        .await
        .expect("the connection ends after the GOAWAY")
        .unwrap()
        .expect("a graceful end");
    let refused = sender.send_request(h2_get(server.addr, "/hello")).await;
    assert!(refused.is_err(), "{refused:?}");
    drop(in_flight);
}

/// A connection opened while phase 1 holds the server open (a request in
/// flight) is told to go like the ones before it: HTTP/1 by `connection:
/// close`, HTTP/2 by its 503 and then a GOAWAY, which ends it while the
/// request still runs, not when phase 2 closes every connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_connection_opened_during_phase_one_gets_503_and_goaway() {
    let server = start(&config(30_000, 75)).await;
    let in_flight = server.shutdown.in_flight().enter();
    server.begin_phase_one().await;

    let (mut sender, connection) = http2(server.addr).await;
    let refused = sender
        .send_request(h2_get(server.addr, "/hello"))
        .await
        .expect("the server answers the stream");
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    // Phase 1 is still held open: only a GOAWAY can end the connection.
    tokio::time::timeout(ROOM, connection)
        .await
        .expect("the connection ends after the GOAWAY")
        .unwrap()
        .expect("a graceful end");
    drop(in_flight);
}

/// A `HEAD` refused in phase 1 over HTTP/2 gets the answer's head alone,
/// with the length a `GET` would have got: hyper takes the content off over
/// HTTP/1 only, and a client resets a `HEAD` stream that gets content, so
/// reading its (empty) body would fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_refused_in_phase_one_over_http2_gets_the_503_without_content() {
    use http_body_util::BodyExt;

    let server = start(&config(30_000, 75)).await;
    let in_flight = server.shutdown.in_flight().enter();
    server.begin_phase_one().await;

    let (mut sender, _connection) = http2(server.addr).await;
    let head = http::Request::head(format!("http://{}/hello", server.addr))
        .body(Empty::new())
        .expect("a valid request");
    let refused = sender
        .send_request(head)
        .await
        .expect("the server answers the stream without content");
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let length = refused.headers().get("content-length").cloned();
    let content = refused
        .into_body()
        .collect()
        .await
        .expect("no content comes, so the client resets nothing");
    assert!(content.to_bytes().is_empty());
    // The length is the one a `GET` gets (on a connection of its own: the
    // first one's answer came with a GOAWAY).
    let (mut sender, _connection) = http2(server.addr).await;
    let get = sender
        .send_request(h2_get(server.addr, "/hello"))
        .await
        .expect("the server answers the stream");
    assert_eq!(get.status(), 503);
    assert_eq!(length.as_ref(), get.headers().get("content-length"));
    assert!(length.is_some());
    drop(in_flight);
}

/// The listener stays open through phase 1 (a new connection is answered
/// `503`) and closes when phase 2 begins, though a request is still in
/// flight then: phase 2 begins here at the end of a 1 s grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_closes_when_phase_two_begins() {
    let mut config = config(30_000, 75);
    config.server.shutdown_timeout_secs = 1;
    let server = start(&config).await;
    let in_flight = server.shutdown.in_flight().enter();
    server.begin_phase_one().await;
    let mut during_phase_one = connect(server.addr).await;
    assert_eq!(get_hello(&mut during_phase_one).await.status, 503);

    tokio::time::timeout(
        Duration::from_secs(1) + ROOM,
        server.shutdown.drain_token().cancelled(),
    )
    .await
    .expect("phase 2 begins at the end of the grace");
    // A connection made as the listener closes may be reset instead.
    tokio::time::timeout(ROOM, async {
        loop {
            match TcpStream::connect(server.addr).await {
                Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => break,
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    })
    .await
    .expect("the listener closes: connections are refused");
    drop(in_flight);
}

/// A connection accepted before phase 1 whose request the server had not
/// read yet when phase 1 began is answered (503, `connection: close`), not
/// closed as idle: its client would not resend what a fresh connection
/// lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_connection_at_phase_one_is_answered_not_dropped() {
    let server = start(&config(30_000, 75)).await;
    let in_flight = server.shutdown.in_flight().enter();
    let mut fresh = connect(server.addr).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.begin_phase_one().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = get_hello(&mut fresh).await;
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("connection"), Some("close"));
    closed_within(&mut fresh, ROOM).await;
    drop(in_flight);
}

/// What holds today keeps holding on the new server: out of file
/// descriptors, accepting waits (without spinning) and resumes at once
/// when connections close, saying so in a rate-limited warning.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_new_connections_wait_without_spinning_and_are_served_once_some_close() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};

    let mut child = support::child::Killed(
        Command::new("sh")
            .args(["-c", "ulimit -n 200 && exec \"$0\""])
            .arg(env!("CARGO_BIN_EXE_graceful-server"))
            // Only the descriptor limit may close the half-open connections.
            .env("TIMEBOX_SERVER__HEADER_READ_TIMEOUT_MS", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts"),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("the server prints its address");
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|addr| addr.parse().ok())
        .expect("a `listening on` line");

    support::files::make_room_for(FILES);
    let mut half_open = Vec::new();
    for _ in 0..400 {
        let mut stream = connect(addr).await;
        stream.write_all(HALF_HEAD).await.unwrap();
        half_open.push(stream);
    }
    let pid = child.0.id();
    let cpu_before = cpu_ticks(pid);
    let waiting = tokio::spawn(reqwest::get(format!("http://{addr}/work/0")));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !waiting.is_finished(),
        "a new connection waits while the server is out of descriptors"
    );
    let spent = cpu_ticks(pid) - cpu_before;
    // Clock ticks are 1/100 s on Linux: a spinning accept loop would burn
    // about 100 in this second.
    assert!(
        spent < 30,
        "the waiting server used {spent} ticks of CPU in 1 s"
    );

    drop(half_open);
    let answer = tokio::time::timeout(ROOM, waiting)
        .await
        .expect("served once the half-open connections closed")
        .unwrap()
        .expect("a response");
    assert_eq!(answer.status(), 200);

    child.0.kill().expect("the server is killed");
    child.0.wait().expect("the server is reaped");
    let mut stderr = String::new();
    child
        .0
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr)
        .unwrap();
    let warnings = stderr.matches("cannot accept connections").count();
    assert!(
        (1..=2).contains(&warnings),
        "one rate-limited warning, found {warnings} in {stderr}"
    );
}

/// User plus system CPU time of process `pid`, in clock ticks.
#[cfg(target_os = "linux")]
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the process runs");
    let after_name = &stat[stat.rfind(')').expect("a (comm) field") + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13
    // after the pid and the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Forwards each event to the test, which waits for it on the wall clock.
struct Forward(tokio::sync::mpsc::UnboundedSender<Event>);

impl Observer for Forward {
    fn on_event(&self, event: &Event) {
        // The test may have stopped listening; nothing to tell it then.
        let _ = self.0.send(event.clone());
    }
}

/// A server whose one route, `/never`, notifies `started` and never
/// answers, observed by the returned channel.
async fn start_never_answering(
    mut config: Config,
) -> (Server, Arc<Notify>, UnboundedReceiver<Event>) {
    let (events, told) = tokio::sync::mpsc::unbounded_channel();
    config = config.observed_by(Forward(events));
    let started = Arc::new(Notify::new());
    let notify = Arc::clone(&started);
    let router = Router::new().route(
        "/never",
        axum::routing::get(move || {
            let notify = Arc::clone(&notify);
            async move {
                notify.notify_one();
                std::future::pending::<&'static str>().await
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("loopback binds");
    let addr = listener.local_addr().expect("a local address");
    let shutdown = Shutdown::new(&config);
    let served = tokio::spawn(timebox::server::serve(listener, router, shutdown.clone()));
    let server = Server {
        addr,
        shutdown,
        served,
    };
    (server, started, told)
}

/// A connection to `server` whose request to `/never` its handler has
/// started on.
async fn held_request(server: &Server, started: &Notify) -> TcpStream {
    let mut client = TcpStream::connect(server.addr).await.unwrap();
    client
        .write_all(b"GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::time::timeout(ROOM, started.notified())
        .await
        .expect("the handler starts");
    client
}

/// The next cancellation told, waited for within `ROOM`.
async fn next_cancellation(told: &mut UnboundedReceiver<Event>) -> CancelReason {
    tokio::time::timeout(ROOM, async {
        loop {
            if let Event::RequestCancelled { reason } =
                told.recv().await.expect("the server is observed")
            {
                return reason;
            }
        }
    })
    .await
    .expect("a cancellation is told")
}

/// O1: hyper drops the future of a request whose client closed its
/// connection; the server tells it as cancelled for a disconnect.
#[tokio::test]
async fn a_client_that_hangs_up_on_a_request_is_told_as_a_disconnect() {
    let (server, started, mut told) = start_never_answering(Config::default()).await;
    let client = held_request(&server, &started).await;
    drop(client);
    assert_eq!(next_cancellation(&mut told).await, CancelReason::Disconnect);
    assert_eq!(server.shutdown.in_flight().count(), 0);
}

/// O1: a request still unanswered when the shutdown's sequence ends is
/// dropped with its connection, and told as cancelled for the shutdown.
#[tokio::test]
async fn a_request_serve_ends_at_the_end_of_the_shutdown_is_told_as_a_shutdown() {
    let mut config = config(0, 0);
    config.server.shutdown_timeout_secs = 0;
    config.server.drain_force_secs = 0;
    let (server, started, mut told) = start_never_answering(config).await;
    let mut client = held_request(&server, &started).await;
    server.shutdown.trigger();
    assert_eq!(next_cancellation(&mut told).await, CancelReason::Shutdown);
    tokio::time::timeout(ROOM, server.served)
        .await
        .expect("serve returns")
        .unwrap()
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(ROOM, client.read_to_end(&mut rest)).await;
    assert!(
        matches!(read, Ok(Ok(0) | Err(_))),
        "the connection is closed with no answer: {read:?}, {rest:?}"
    );
}

/// Sends `POST {path}` with a body of `len` bytes on `write`, the whole of
/// it before anything is read, as a blocking client does; then closes its
/// sending side.
async fn send_upload(
    mut write: tokio::net::tcp::OwnedWriteHalf,
    path: &str,
    len: usize,
) -> io::Result<()> {
    let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n");
    write.write_all(head.as_bytes()).await?;
    let chunk = vec![b'a'; 64 << 10];
    for _ in 0..len / chunk.len() {
        write.write_all(&chunk).await?;
    }
    write.shutdown().await
}

/// Sends `POST {path}` with an 8 MiB body as a blocking client does (see
/// [`send_upload`]), then reads the answer until the server closes.
async fn upload_then_read_the_answer(addr: SocketAddr, path: &str) -> String {
    let (mut read, write) = connect(addr).await.into_split();
    tokio::time::timeout(ROOM, send_upload(write, path, 8 << 20))
        .await
        .expect("the body goes out within the room")
        .expect("the body goes out whole: nothing resets the connection");
    let mut answer = Vec::new();
    tokio::time::timeout(ROOM, read.read_to_end(&mut answer))
        .await
        .expect("the connection closes once the client has")
        .expect("the answer is read whole");
    String::from_utf8_lossy(&answer).into_owned()
}

/// A client that sends a whole body before it reads gets the answer given
/// before the body was read (here the shutdown gate's): the connection
/// reads and drops the rest before it closes, where closing with bytes
/// unread would reset it, and the client's write would fail with a broken
/// pipe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_refused_before_its_body_is_read_gets_the_answer_not_a_reset() {
    let server = start(&config(30_000, 75)).await;
    let in_flight = server.shutdown.in_flight().enter();
    server.begin_phase_one().await;
    let answer = upload_then_read_the_answer(server.addr, "/upload").await;
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    drop(in_flight);
}

/// Out of any shutdown, a handler that answers without reading an upload
/// leaves the client sending it: the connection reads and drops the rest
/// too, so that the client reads the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_its_handler_ignored_gets_the_answer_not_a_reset() {
    let server = start(&config(30_000, 75)).await;
    let answer = upload_then_read_the_answer(server.addr, "/ignore").await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(answer.ends_with("ignored"), "{answer}");
}

/// An upgraded socket is the app's: a tunnel that closes its sending side
/// gets all its client sends after that, though the upgrade's request had
/// a body no one read (the connection lingers only for HTTP requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tunnel_that_half_closes_gets_all_its_client_sends() {
    let (told, read) = oneshot::channel();
    *HALF_CLOSED.lock().unwrap() = Some(told);
    let server = start(&config(30_000, 75)).await;
    let mut stream = connect(server.addr).await;
    stream
        .write_all(
            b"POST /half_close HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\n\
              Upgrade: echo\r\nContent-Length: 4\r\n\r\nbody",
        )
        .await
        .unwrap();
    let response = read_response(&mut stream).await.expect("the 101");
    assert_eq!(response.status, 101);
    stream.write_all(b"after").await.unwrap();
    stream.shutdown().await.unwrap();
    let read = tokio::time::timeout(ROOM, read)
        .await
        .expect("the tunnel reads to its end within the room")
        .expect("the tunnel tells what it read");
    let read = String::from_utf8_lossy(&read);
    assert!(read.ends_with("after"), "{read:?}");
}
