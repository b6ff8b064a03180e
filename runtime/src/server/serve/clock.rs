//! [`ConnectionClock`]: what one connection is doing, and which of the
//! connection bounds applies to it now.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use http::Version;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::shutdown::ConnectionBounds;

use super::heads::Heads;

/// The state of one connection, shared by its socket (which reports bytes
/// read, and writes that go out after a stall), its service (which reports
/// requests starting and ending) and the task that drives it (which closes
/// it when a bound passes).
///
/// The driver is not woken by a change of state, so a request costs its
/// connection no extra wake-up: it checks the state when its timer fires
/// and re-arms the timer at the bound of the state it finds, but never
/// later than the shortest bound from now. Any state entered later has a
/// deadline at least that far off, so no bound is ever missed, and a
/// connection's driver wakes at most once per shortest bound besides its
/// own deadline. Two changes can be waited for, both by a shutdown: the
/// connection turning out to be HTTP/2, to send a GOAWAY (by its connection
/// preface or its first request, [`http2`](Self::http2); by its first
/// request, [`http2_request`](Self::http2_request)); and the end of its
/// requests ([`idle`](Self::idle)), to close it, told only once a wait
/// began.
#[derive(Debug)]
pub(super) struct ConnectionClock {
    state: Mutex<State>,
    bounds: ConnectionBounds,
    /// Told once the connection is known to be HTTP/2.
    http2_seen: Notify,
    /// Told when the last request ends, once someone waits for that.
    became_idle: Notify,
}

#[derive(Debug)]
struct State {
    activity: Activity,
    /// Set when the client's HTTP/2 connection preface has arrived, or at
    /// the first HTTP/2 request: from then on bytes read are frames of any
    /// stream, not the start of a head; once a request has been served,
    /// only the idle bound applies.
    http2: bool,
    /// How many bytes of [`PREFACE`] the connection began with so far;
    /// `None` once one differed.
    preface: Option<usize>,
    /// Set at the first HTTP/2 request.
    http2_request: bool,
    /// On HTTP/1, where the heads read so far end: whether the next one has
    /// begun when a request ends.
    heads: Heads,
    /// Whether [`idle`](ConnectionClock::idle) waits for the end of the
    /// requests.
    idle_wanted: bool,
    /// Whether the socket takes no more bytes to send, while some wait.
    write_blocked: bool,
    /// Set when hyper hands the connection to the app (an upgrade): the
    /// socket is the app's from then on.
    upgraded: bool,
}

/// What an HTTP/2 client sends before anything else (RFC 9113, section
/// 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl State {
    /// Matches `bytes`, read next, against [`PREFACE`]: whether they
    /// complete it.
    fn completes_preface(&mut self, bytes: &[u8]) -> bool {
        let Some(matched) = self.preface else {
            return false;
        };
        let rest = &PREFACE[matched..];
        let len = rest.len().min(bytes.len());
        if rest[..len] != bytes[..len] {
            self.preface = None;
            return false;
        }
        if len == rest.len() {
            self.preface = None;
            return true;
        }
        self.preface = Some(matched + len);
        false
    }
}

#[derive(Debug, Clone, Copy)]
enum Activity {
    /// Waiting for a request head, since the connection was accepted or
    /// since the first byte of a later head arrived. `started` is false
    /// while not a byte of it has arrived.
    Head { since: Instant, started: bool },
    /// A keep-alive connection between requests.
    Idle { since: Instant },
    /// Serving `requests` (one at a time on HTTP/1). On HTTP/1, bytes read
    /// meanwhile that are not a body (see [`Heads`]) are the next head
    /// (pipelining). `held` of them have handed hyper a frame of their
    /// response that hyper has not come back for more after: it waits for
    /// the client to read. Once all have (see [`Activity::busy`]), the
    /// connection is `stalled` since then, or since the socket last took
    /// bytes after it had stopped (or stopped after taking them).
    Busy {
        requests: usize,
        held: usize,
        stalled: Option<Instant>,
    },
}

impl Activity {
    /// Busy with `requests`, `held` of them waiting for the client: stalled
    /// from now when that is all of them, or, on HTTP/1 (which writes one
    /// response at a time, and serves no request queued behind it until
    /// it is written), any.
    fn busy(requests: usize, held: usize, http2: bool) -> Self {
        let stalled = held > 0 && (!http2 || held == requests);
        Self::Busy {
            requests,
            held,
            stalled: stalled.then(Instant::now),
        }
    }
}

/// Which bound passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expired {
    /// A request head did not arrive within `header_read_timeout_ms`.
    Head(Duration),
    /// The connection sat idle for `keep_alive_timeout_secs`.
    Idle(Duration),
    /// Every response on the connection waited that long for the client
    /// to read it, with not a byte going out: `keep_alive_timeout_secs`.
    Stalled(Duration),
}

impl ConnectionClock {
    /// The clock of a connection accepted now: its first head is due within
    /// the header bound.
    pub(super) fn new(bounds: ConnectionBounds) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                activity: Activity::Head {
                    since: Instant::now(),
                    started: false,
                },
                http2: false,
                preface: Some(0),
                http2_request: false,
                heads: Heads::default(),
                idle_wanted: false,
                write_blocked: false,
                upgraded: false,
            }),
            bounds,
            http2_seen: Notify::new(),
            became_idle: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `bytes` arrived from the client.
    pub(super) fn on_read(&self, bytes: &[u8]) {
        let mut state = self.lock();
        if state.http2 {
            return;
        }
        if state.completes_preface(bytes) {
            // HTTP/2 before its first request: a shutdown sends it a GOAWAY
            // too. Its first request is still due within the header bound.
            state.http2 = true;
            // A permit is kept if the driver is not waiting yet.
            self.http2_seen.notify_one();
        }
        let now = Instant::now();
        match &mut state.activity {
            activity @ Activity::Idle { .. } => {
                *activity = Activity::Head {
                    since: now,
                    started: true,
                };
            }
            Activity::Head { started, .. } => *started = true,
            Activity::Busy { .. } => {}
        }
        state.heads.read(bytes, now);
    }

    /// Bytes went out: the socket took them after it had stopped taking
    /// any, or stopped taking them right after the last it took. hyper lets
    /// a response go once its body is queued, not written, so a connection
    /// idle between requests may still be sending its last answer: its idle
    /// time counts from the last of these, and a client reading a large
    /// answer slowly is not cut off, while one that stopped reading is
    /// closed one idle bound later. The same holds for a connection whose
    /// responses all wait for the client (stalled). Only these changes are
    /// told, not every write: an HTTP/2 client that stopped reading its
    /// responses still reads the answers to its PINGs, which never block.
    /// `blocked` says which: whether the socket now takes no more.
    ///
    /// An HTTP/1 client may send its next head while the last answer still
    /// goes out (pipelining), and hyper reads that head only once the
    /// answer is out: while bytes go out the head's bounds count from the
    /// last of them, so a client reading a large answer slowly is not cut
    /// off for a head it sent whole long ago, and while the socket takes
    /// nothing the head waits on the client: the idle bound applies to it
    /// as well as the header bound.
    pub(super) fn on_write_progress(&self, blocked: bool) {
        let mut state = self.lock();
        state.write_blocked = blocked;
        match &mut state.activity {
            Activity::Idle { since }
            | Activity::Head { since, .. }
            | Activity::Busy {
                stalled: Some(since),
                ..
            } => *since = Instant::now(),
            Activity::Busy { stalled: None, .. } => {}
        }
    }

    /// A response handed hyper a frame, and hyper has not come back for
    /// more: it waits for the client to read (or for room in its HTTP/2
    /// flow-control window).
    fn on_frame_held(&self) {
        let mut state = self.lock();
        if let Activity::Busy { requests, held, .. } = state.activity {
            state.activity = Activity::busy(requests, held + 1, state.http2);
        }
    }

    /// hyper came back for the next frame of a response that held one.
    fn on_frame_asked(&self) {
        let mut state = self.lock();
        if let Activity::Busy { requests, held, .. } = state.activity {
            state.activity = Activity::busy(requests, held.saturating_sub(1), state.http2);
        }
    }

    /// A request's head is complete and its service is called; the
    /// connection is busy until the returned guard drops (when its response
    /// has been written or abandoned).
    pub(super) fn on_request(self: &Arc<Self>, version: Version, bodiless: bool) -> RequestEnd {
        let mut state = self.lock();
        if version == Version::HTTP_2 && !state.http2_request {
            state.http2 = true;
            state.http2_request = true;
            // A permit is kept if the driver is not waiting yet.
            self.http2_seen.notify_one();
        }
        let request = state.heads.requested(bodiless);
        state.activity = match state.activity {
            Activity::Busy { requests, held, .. } => {
                Activity::busy(requests + 1, held, state.http2)
            }
            Activity::Head { .. } | Activity::Idle { .. } => Activity::busy(1, 0, state.http2),
        };
        drop(state);
        RequestEnd {
            clock: Arc::clone(self),
            request,
            tunnel: false,
            holding: false,
        }
    }

    /// Whether the client may still be sending a request body that no one
    /// read to its end (HTTP/1: hyper reads what has come of it, then
    /// closes the connection rather than wait for the rest).
    pub(super) fn may_be_sending_body(&self) -> bool {
        let state = self.lock();
        !state.http2 && !state.upgraded && state.heads.in_body()
    }

    /// A request ended; `held` when its response still held a frame.
    fn on_request_end(&self, held: bool) {
        let mut state = self.lock();
        let next_head = (!state.http2)
            .then(|| state.heads.begun(Instant::now()))
            .flatten();
        if let Activity::Busy {
            requests,
            held: all_held,
            ..
        } = state.activity
        {
            let activity = match (requests, next_head) {
                (0 | 1, Some(since)) => Activity::Head {
                    since,
                    started: true,
                },
                (0 | 1, _) => {
                    if state.idle_wanted {
                        // A permit is kept if the driver is not waiting yet.
                        self.became_idle.notify_one();
                    }
                    Activity::Idle {
                        since: Instant::now(),
                    }
                }
                (more, _) => Activity::busy(more - 1, all_held - usize::from(held), state.http2),
            };
            state.activity = activity;
        }
    }

    /// Whether the connection is between requests.
    #[cfg(test)]
    fn is_idle(&self) -> bool {
        matches!(self.lock().activity, Activity::Idle { .. })
    }

    /// Resolves once the connection is between requests, when closing it
    /// loses nothing: at once if it is, else when its requests end (what
    /// its last response left to write may still be going out; a graceful
    /// close writes it). A new connection is not between requests: its
    /// client may already have sent a request we have not read yet, and a
    /// client does not resend a request that a fresh connection lost.
    ///
    /// # Cancellation safety
    ///
    /// Safe to drop and call again: the notice of a request's end is kept
    /// until a call takes it, and the state is checked first. Only a
    /// connection some call has waited on tells it, so others pay nothing.
    pub(super) async fn idle(&self) {
        loop {
            {
                let mut state = self.lock();
                if matches!(state.activity, Activity::Idle { .. }) {
                    return;
                }
                state.idle_wanted = true;
            }
            self.became_idle.notified().await;
        }
    }

    /// Resolves once the connection is known to speak HTTP/2: at once if
    /// its connection preface or a request already said so, else when one
    /// does. An HTTP/1 connection never resolves it.
    ///
    /// # Cancellation safety
    ///
    /// Safe to drop and call again: the first request's notice is kept
    /// until a call takes it, and the state is checked first.
    pub(super) async fn http2(&self) {
        while !self.lock().http2 {
            self.http2_seen.notified().await;
        }
    }

    /// Resolves once an HTTP/2 request has come on the connection: at once
    /// if one has, else at the first. Cancellation safe as
    /// [`http2`](Self::http2).
    pub(super) async fn http2_request(&self) {
        while !self.lock().http2_request {
            self.http2_seen.notified().await;
        }
    }

    /// When the bound that applies now passes, if one does.
    fn deadline(&self) -> Option<(Instant, Expired)> {
        let state = self.lock();
        let (since, expired) = match state.activity {
            Activity::Head { since, .. } => {
                // While the socket takes nothing, the head waits on the
                // client too (see `on_write_progress`).
                let idle = self.bounds.keep_alive.filter(|_| state.write_blocked);
                let expired = match (self.bounds.header_read, idle) {
                    (Some(head), Some(idle)) if idle < head => Expired::Stalled(idle),
                    (Some(head), _) => Expired::Head(head),
                    (None, Some(idle)) => Expired::Stalled(idle),
                    (None, None) => return None,
                };
                (since, expired)
            }
            Activity::Idle { since } => {
                let bound = self.bounds.keep_alive?;
                (since, Expired::Idle(bound))
            }
            Activity::Busy {
                stalled: Some(since),
                ..
            } => {
                let bound = self.bounds.keep_alive?;
                (since, Expired::Stalled(bound))
            }
            Activity::Busy { stalled: None, .. } => return None,
        };
        let bound = match expired {
            Expired::Head(bound) | Expired::Idle(bound) | Expired::Stalled(bound) => bound,
        };
        Some((since.checked_add(bound)?, expired))
    }

    /// Resolves when a bound has passed: the connection should close.
    ///
    /// # Cancellation safety
    ///
    /// Safe to drop and call again: it keeps no state of its own.
    pub(super) async fn expired(&self) -> Expired {
        let shortest = match (self.bounds.header_read, self.bounds.keep_alive) {
            (Some(head), Some(idle)) => head.min(idle),
            (Some(bound), None) | (None, Some(bound)) => bound,
            (None, None) => return std::future::pending().await,
        };
        loop {
            let now = Instant::now();
            let own = self.deadline();
            if let Some((at, expired)) = own {
                if at <= now {
                    return expired;
                }
            }
            let soonest = now.checked_add(shortest);
            let check = match (own, soonest) {
                (Some((at, _)), Some(soonest)) => at.min(soonest),
                (Some((at, _)), None) => at,
                (None, Some(soonest)) => soonest,
                (None, None) => return std::future::pending().await,
            };
            tokio::time::sleep_until(check).await;
        }
    }
}

/// Marks the end of a request on its connection's clock when dropped.
#[derive(Debug)]
pub(super) struct RequestEnd {
    clock: Arc<ConnectionClock>,
    /// The request's number on its connection.
    request: u64,
    /// The request opened a tunnel: it never ends on the clock.
    tunnel: bool,
    /// Its response handed hyper a frame hyper has not come back after.
    holding: bool,
}

impl RequestEnd {
    /// What tells the clock that this HTTP/1 request's body was read to
    /// its end.
    pub(super) fn body_read(&self) -> BodyRead {
        BodyRead {
            clock: Arc::clone(&self.clock),
            request: self.request,
        }
    }

    /// The request opened a tunnel (an HTTP/2 extended `CONNECT` answered
    /// 2xx: a WebSocket over HTTP/2), which lives on in a task of its own
    /// where the connection cannot see it: the connection stays busy for
    /// the rest of its life, so no idle bound cuts the tunnel. An HTTP/1
    /// upgrade leaves `serve` with its socket, likewise.
    pub(super) fn open_tunnel(mut self) {
        self.tunnel = true;
    }

    /// hyper hands the connection to the app (an HTTP/1 `101` to a
    /// request it can upgrade, or a 2xx to a `CONNECT`): what the client
    /// sends from then on is the app's, and the socket's shutdown (a tunnel
    /// that half-closes) must not drop it as the rest of a body.
    pub(super) fn upgraded(&self) {
        self.clock.lock().upgraded = true;
    }

    /// The response handed hyper a frame: until hyper comes back for the
    /// next ([`asked`](Self::asked)), it waits for the client.
    pub(super) fn held(&mut self) {
        if !self.holding {
            self.holding = true;
            self.clock.on_frame_held();
        }
    }

    /// hyper asks the response for its next frame.
    pub(super) fn asked(&mut self) {
        if self.holding {
            self.holding = false;
            self.clock.on_frame_asked();
        }
    }
}

impl Drop for RequestEnd {
    fn drop(&mut self) {
        if !self.tunnel {
            self.clock.on_request_end(self.holding);
        }
    }
}

/// Tells a connection's clock that the body of one of its HTTP/1 requests
/// was read to its end: unless a later request has begun, what the
/// connection reads from then on is heads again.
#[derive(Debug)]
pub(super) struct BodyRead {
    clock: Arc<ConnectionClock>,
    request: u64,
}

impl BodyRead {
    pub(super) fn tell(self) {
        self.clock.lock().heads.body_read(self.request);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: ConnectionBounds = ConnectionBounds {
        header_read: Some(Duration::from_secs(2)),
        keep_alive: Some(Duration::from_secs(10)),
        max_age: None,
    };

    #[tokio::test(start_paused = true)]
    async fn a_body_no_one_read_may_still_be_coming_until_it_is_read_whole() {
        let clock = ConnectionClock::new(BOUNDS);
        let bodiless = clock.on_request(Version::HTTP_11, true);
        assert!(!clock.may_be_sending_body());
        drop(bodiless);
        let with_body = clock.on_request(Version::HTTP_11, false);
        assert!(clock.may_be_sending_body());
        with_body.body_read().tell();
        assert!(!clock.may_be_sending_body());
    }

    #[tokio::test(start_paused = true)]
    async fn neither_an_http2_nor_an_upgraded_connection_lingers() {
        let http2 = ConnectionClock::new(BOUNDS);
        let _request = http2.on_request(Version::HTTP_2, false);
        assert!(!http2.may_be_sending_body());
        let upgraded = ConnectionClock::new(BOUNDS);
        let request = upgraded.on_request(Version::HTTP_11, false);
        assert!(upgraded.may_be_sending_body());
        request.upgraded();
        assert!(!upgraded.may_be_sending_body());
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_connection_owes_its_first_head_within_the_header_bound() {
        let clock = ConnectionClock::new(BOUNDS);
        let start = Instant::now();
        assert!(!clock.is_idle(), "its request may be on its way");
        assert_eq!(clock.expired().await, Expired::Head(Duration::from_secs(2)));
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_keep_alive_connection_waits_the_idle_bound_then_the_header_bound() {
        let clock = ConnectionClock::new(BOUNDS);
        drop(clock.on_request(Version::HTTP_11, true));
        tokio::time::advance(Duration::from_secs(9)).await;
        clock.on_read(b"G"); // the first byte of the next head
        assert!(!clock.is_idle());
        let start = Instant::now();
        assert_eq!(clock.expired().await, Expired::Head(Duration::from_secs(2)));
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_expires_after_the_keep_alive_bound() {
        let clock = ConnectionClock::new(BOUNDS);
        drop(clock.on_request(Version::HTTP_11, true));
        let start = Instant::now();
        assert_eq!(
            clock.expired().await,
            Expired::Idle(Duration::from_secs(10))
        );
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_still_writing_counts_the_idle_bound_from_the_last_write() {
        let clock = ConnectionClock::new(BOUNDS);
        drop(clock.on_request(Version::HTTP_11, true));
        // The client reads the rest of the answer slowly: bytes go out every
        // 9 s, for longer than the idle bound.
        for _ in 0..5 {
            tokio::time::advance(Duration::from_secs(9)).await;
            bytes_went_out(&clock);
        }
        let expired = tokio::time::timeout(Duration::from_secs(9), clock.expired()).await;
        assert!(expired.is_err(), "not idle while its answer goes out");
        // Then it stops reading: one idle bound after the last bytes.
        let start = Instant::now();
        bytes_went_out(&clock);
        assert_eq!(
            clock.expired().await,
            Expired::Idle(Duration::from_secs(10))
        );
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_for_idle_ends_when_the_last_request_does() {
        let clock = ConnectionClock::new(BOUNDS);
        let first = clock.on_request(Version::HTTP_11, true);
        let second = clock.on_request(Version::HTTP_11, true);
        let mut waiting = tokio_test::task::spawn(clock.idle());
        assert!(waiting.poll().is_pending());
        drop(first);
        assert!(waiting.poll().is_pending(), "one request is still served");
        drop(second);
        assert!(waiting.is_woken());
        assert!(waiting.poll().is_ready());
        assert!(tokio_test::task::spawn(clock.idle()).poll().is_ready());
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_connection_never_expires() {
        let clock = ConnectionClock::new(BOUNDS);
        let request = clock.on_request(Version::HTTP_11, false);
        let expired = tokio::time::timeout(Duration::from_secs(3600), clock.expired()).await;
        assert!(expired.is_err());
        drop(request);
        assert!(clock.is_idle());
    }

    /// Bytes went out after the socket had stopped taking them, and it
    /// stopped again: what `ClockedIo` tells of a client reading a little.
    fn bytes_went_out(clock: &ConnectionClock) {
        clock.on_write_progress(false);
        clock.on_write_progress(true);
    }

    /// Asserts that `clock` expires as stalled, at its idle bound, `after`
    /// from now.
    async fn expires_stalled_after(clock: &ConnectionClock, after: Duration) {
        let start = Instant::now();
        let expired = tokio::time::timeout(after + Duration::from_secs(1), clock.expired()).await;
        assert_eq!(expired, Ok(Expired::Stalled(Duration::from_secs(10))));
        assert_eq!(start.elapsed(), after);
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_waiting_for_its_client_to_read_expires_after_the_idle_bound() {
        let clock = ConnectionClock::new(BOUNDS);
        let mut request = clock.on_request(Version::HTTP_2, true);
        // hyper took a frame and has not come back for the next.
        request.held();
        expires_stalled_after(&clock, Duration::from_secs(10)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_reads_now_and_then_keeps_its_response_going() {
        let clock = ConnectionClock::new(BOUNDS);
        let mut request = clock.on_request(Version::HTTP_11, true);
        // Every 9 s, hyper comes back for a frame, or bytes go out.
        for round in 0..6 {
            request.held();
            tokio::time::advance(Duration::from_secs(9)).await;
            if round % 2 == 0 {
                request.asked();
            } else {
                bytes_went_out(&clock);
            }
        }
        let expired = tokio::time::timeout(Duration::from_secs(9), clock.expired()).await;
        assert!(expired.is_err(), "the client reads");
        // Then it stops: one idle bound after the last sign.
        expires_stalled_after(&clock, Duration::from_secs(1)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_stalled_only_while_every_response_waits_for_its_client() {
        let clock = ConnectionClock::new(BOUNDS);
        let mut waiting = clock.on_request(Version::HTTP_2, true);
        waiting.held();
        // A second request whose handler still runs: the server has work.
        let running = clock.on_request(Version::HTTP_2, true);
        let expired = tokio::time::timeout(Duration::from_secs(60), clock.expired()).await;
        assert!(expired.is_err(), "a handler runs");
        // Once it ends, the other one's wait counts from then.
        drop(running);
        expires_stalled_after(&clock, Duration::from_secs(10)).await;
        // A response dropped while it held a frame leaves nothing held.
        drop(waiting);
        assert!(clock.is_idle());
        let next = clock.on_request(Version::HTTP_2, true);
        let expired = tokio::time::timeout(Duration::from_secs(60), clock.expired()).await;
        assert!(expired.is_err(), "the next handler runs");
        drop(next);
    }

    #[tokio::test(start_paused = true)]
    async fn on_http1_the_response_being_written_stalls_its_connection_alone() {
        let clock = ConnectionClock::new(BOUNDS);
        let mut writing = clock.on_request(Version::HTTP_11, true);
        // A pipelined request hyper read while the first answer's last
        // frame waits: its handler is not run until that answer is out.
        let _queued = clock.on_request(Version::HTTP_11, true);
        writing.held();
        expires_stalled_after(&clock, Duration::from_secs(10)).await;
    }

    /// A clock that has read `/big` and, in the same read, the whole next
    /// head, and whose `/big` hyper took whole: the head waits for the
    /// answer to go out.
    fn pipelined_behind_big(bounds: ConnectionBounds) -> Arc<ConnectionClock> {
        let clock = ConnectionClock::new(bounds);
        clock.on_read(b"GET /big HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
        drop(clock.on_request(Version::HTTP_11, true));
        clock
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_pipelined_behind_an_answer_the_client_reads_slowly_stays() {
        let clock = pipelined_behind_big(BOUNDS);
        // Bytes go out every 1.5 s, for far longer than the header bound.
        for _ in 0..40 {
            tokio::time::advance(Duration::from_millis(1500)).await;
            bytes_went_out(&clock);
        }
        let expired = tokio::time::timeout(Duration::from_millis(1500), clock.expired()).await;
        assert!(expired.is_err(), "the answer goes out");
        // Then the client stops reading: the shorter bound, from the last
        // bytes out.
        let start = Instant::now();
        assert_eq!(clock.expired().await, Expired::Head(Duration::from_secs(2)));
        assert_eq!(start.elapsed(), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_pipelined_behind_an_answer_the_client_stopped_reading_is_on_the_idle_bound() {
        // The idle bound is the shorter, or the only one: the head may take
        // its time, but hyper reads it only once the answer before it is
        // out, and the client reads nothing of that.
        for header_read in [Some(Duration::from_secs(30)), None] {
            let clock = pipelined_behind_big(ConnectionBounds {
                header_read,
                ..BOUNDS
            });
            clock.on_write_progress(true);
            expires_stalled_after(&clock, Duration::from_secs(10)).await;
            // Once the socket takes bytes again, only the header bound applies.
            clock.on_write_progress(false);
            let expired = tokio::time::timeout(Duration::from_secs(20), clock.expired()).await;
            assert!(expired.is_err(), "the answer goes out");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_pipelined_head_after_a_bodiless_request_is_on_the_header_bound() {
        // Part of the next head arrives while the first request is served,
        // or in the same read as the first head (hyper reads ahead).
        let first = b"GET /a HTTP/1.1\r\n\r\n";
        for (with_first, while_served) in [(&b""[..], &b"GET /"[..]), (b"GET /b HT", b"")] {
            let clock = ConnectionClock::new(BOUNDS);
            clock.on_read(&[&first[..], with_first].concat());
            let request = clock.on_request(Version::HTTP_11, true);
            clock.on_read(while_served);
            tokio::time::advance(Duration::from_secs(1)).await;
            drop(request);
            let start = Instant::now();
            assert_eq!(clock.expired().await, Expired::Head(Duration::from_secs(2)));
            assert_eq!(start.elapsed(), Duration::from_secs(1));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_whole_head_read_alone_leaves_the_connection_idle_after_its_request() {
        let clock = ConnectionClock::new(BOUNDS);
        clock.on_read(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
        drop(clock.on_request(Version::HTTP_11, true));
        assert!(clock.is_idle());
    }

    #[tokio::test(start_paused = true)]
    async fn http2_frames_do_not_start_a_head() {
        let clock = ConnectionClock::new(BOUNDS);
        drop(clock.on_request(Version::HTTP_2, true));
        clock.on_read(b"\0\0\x08\x06"); // a PING, say
        assert!(clock.is_idle());
        clock.http2().await;
        assert_eq!(
            clock.expired().await,
            Expired::Idle(Duration::from_secs(10))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_http2_request_wakes_a_wait_for_it_and_http1_never_does() {
        let clock = ConnectionClock::new(BOUNDS);
        let mut waiting = tokio_test::task::spawn(clock.http2());
        assert!(waiting.poll().is_pending());
        drop(clock.on_request(Version::HTTP_11, true));
        assert!(!waiting.is_woken());
        assert!(waiting.poll().is_pending());
        drop(clock.on_request(Version::HTTP_2, true));
        assert!(waiting.is_woken());
        assert!(waiting.poll().is_ready());
        // Known from then on: a later wait ends at once.
        assert!(tokio_test::task::spawn(clock.http2()).poll().is_ready());
    }

    #[tokio::test(start_paused = true)]
    async fn the_http2_preface_wakes_a_wait_for_it_before_any_request() {
        let clock = ConnectionClock::new(BOUNDS);
        let mut waiting = tokio_test::task::spawn(clock.http2());
        assert!(waiting.poll().is_pending());
        let (first, rest) = PREFACE.split_at(10);
        clock.on_read(first);
        assert!(!waiting.is_woken(), "not all of it yet");
        clock.on_read(&[rest, b"\0\0\0\x04"].concat()); // and SETTINGS
        assert!(waiting.is_woken());
        assert!(waiting.poll().is_ready());
        // Its first request is still due within the header bound.
        let start = Instant::now();
        assert_eq!(clock.expired().await, Expired::Head(Duration::from_secs(2)));
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_for_an_http2_request_is_not_ended_by_the_preface() {
        let clock = ConnectionClock::new(BOUNDS);
        let mut waiting = tokio_test::task::spawn(clock.http2_request());
        assert!(waiting.poll().is_pending());
        clock.on_read(PREFACE);
        assert!(waiting.poll().is_pending());
        drop(clock.on_request(Version::HTTP_2, true));
        assert!(waiting.is_woken());
        assert!(waiting.poll().is_ready());
    }

    #[tokio::test(start_paused = true)]
    async fn an_http1_head_is_not_taken_for_the_preface() {
        let clock = ConnectionClock::new(BOUNDS);
        let mut waiting = tokio_test::task::spawn(clock.http2());
        clock.on_read(b"PRI * HTTP/1.1\r\n");
        clock.on_read(&PREFACE[15..]);
        assert!(!waiting.is_woken());
        assert!(waiting.poll().is_pending());
    }

    #[tokio::test(start_paused = true)]
    async fn no_bounds_means_no_expiry() {
        let clock = ConnectionClock::new(ConnectionBounds {
            header_read: None,
            keep_alive: None,
            max_age: None,
        });
        let expired = tokio::time::timeout(Duration::from_secs(86_400), clock.expired()).await;
        assert!(expired.is_err());
    }
}
