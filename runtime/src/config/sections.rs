//! The `Config` tree: the root and the `server`, `stream` and `http` sections.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{AdmissionConfig, BreakerConfig, BudgetConfig, GrpcConfig, HedgeConfig};
use crate::observe::{Observer, Observers};

/// Every timebox setting, one field per section of `timebox.toml`.
///
/// `Default` gives the built-in defaults of the design table (no profile);
/// [`Config::preset`] gives a profile's values. Every section is a plain struct
/// with public fields, so a config can be written in code with struct update
/// syntax:
///
/// ```
/// use timebox::config::{Config, ServerConfig, TimeoutsConfig};
///
/// let config = Config {
///     server: ServerConfig {
///         timeouts: TimeoutsConfig {
///             request_timeout_ms: Some(2_000),
///             ..TimeoutsConfig::default()
///         },
///         ..ServerConfig::default()
///     },
///     ..Config::default()
/// };
/// assert_eq!(config.server.shutdown_timeout_secs, 30);
/// ```
///
/// `Config` is `Deserialize` with `#[serde(default, deny_unknown_fields)]`, so
/// it can be embedded in an application's own configuration as one table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `[server]`: inbound request deadlines and graceful shutdown.
    pub server: ServerConfig,
    /// `[stream]`: watchdog timers and heartbeats of long streams (SSE).
    pub stream: StreamConfig,
    /// `[http]`: the outbound HTTP client.
    pub http: HttpConfig,
    /// `[breaker]`: the per-host circuit breaker of the outbound client.
    pub breaker: BreakerConfig,
    /// Who hears the events of the parts built from this config (not a
    /// setting: never read from a file, never written out). Empty by
    /// default; add one with [`Config::observed_by`].
    #[serde(skip)]
    pub observers: Observers,
}

impl Config {
    /// This config with `observer` among its observers: every part built
    /// from it tells `observer` its events (see [`crate::observe`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use timebox::config::Config;
    /// use timebox::observe::Recording;
    ///
    /// let recording = Recording::new();
    /// let config = Config::default().observed_by(recording.clone());
    /// assert_eq!(config.observers.len(), 1);
    /// ```
    #[must_use]
    pub fn observed_by(mut self, observer: impl Observer) -> Self {
        self.observers = self.observers.with(observer);
        self
    }
}

/// `[server]`: inbound request deadlines and the two-phase shutdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// `[server.timeouts]`: the request deadline.
    pub timeouts: TimeoutsConfig,
    /// How long phase 1 of shutdown waits for in-flight requests, in seconds.
    ///
    /// Default 30; `prod` profile 35 (the 30 s request timeout plus 5 s);
    /// `dev` profile 1. [`Config::validate`] warns when it is shorter than the
    /// longest request deadline plus 5 s.
    pub shutdown_timeout_secs: u64,
    /// How long shutdown keeps serving after readiness flips to 503, in
    /// seconds, so load balancers stop sending traffic first.
    ///
    /// Default 5; `prod` profile 5; `dev` profile 0.
    pub prestop_grace_secs: u64,
    /// How long phase 2 of shutdown waits for streams told to end, in seconds.
    ///
    /// Default 10 (also in both profiles). The orchestrator's grace period
    /// should be at least `prestop_grace_secs + shutdown_timeout_secs +
    /// drain_force_secs`.
    pub drain_force_secs: u64,
    /// Longest time a request head may take to arrive, in milliseconds; a
    /// connection whose head is not complete by then is closed
    /// (slow-loris). Default 30000; `0` turns the bound off.
    ///
    /// The clock starts when a connection is accepted, for its first
    /// request, and at the first byte of each later head on a keep-alive
    /// connection (the wait between requests is
    /// [`keep_alive_timeout_secs`](Self::keep_alive_timeout_secs)'s). It
    /// covers the head only: a body that trickles in is bounded by the
    /// route's deadline, under which extractors run, and by nothing on a
    /// route without one. Applied by `timebox::server::serve` (feature
    /// `server`).
    pub header_read_timeout_ms: u64,
    /// Longest time an HTTP/1 keep-alive connection (or an HTTP/2 one with
    /// no open stream) may sit idle between requests, in seconds, before it
    /// is closed. Default 75 (nginx's); `0` turns the bound off (idle
    /// connections stay open). The same bound closes a connection whose
    /// client stopped reading its responses (nginx's `send_timeout`):
    /// every response on it has waited that long for the client to take
    /// more. So a short bound also cuts a client that holds back its
    /// HTTP/2 flow-control window that long (a paused download); `0` turns
    /// both off. Applied by `timebox::server::serve` (feature `server`).
    pub keep_alive_timeout_secs: u64,
    /// Age in seconds past which `serve` tells a connection to go, however
    /// busy it is: an HTTP/2 one gets GOAWAY (its streams finish; the
    /// client opens new ones on a new connection); over HTTP/1 the next
    /// response whose head goes out says `Connection: close`, and the
    /// connection closes after it. An HTTP/1 connection idle then is not
    /// closed at once, as it would be at shutdown's phase 1 (its client
    /// may have sent a request already): its next response, or the idle
    /// bound if there is one, ends it. Nothing in flight is cut: a long
    /// stream keeps its connection until it ends (there is no forced close
    /// after a grace, as gRPC's `MAX_CONNECTION_AGE_GRACE` would be). Each connection's bound is
    /// drawn between 90 % and 100 % of this, so that connections opened
    /// together do not all reconnect together. Default `0`: no bound, as
    /// in tonic (hyper has none). Clients that keep their connections (a
    /// mesh sidecar, a load balancer speaking HTTP/2, a pooling client)
    /// otherwise stay with the instances they first reached: after a
    /// scale-out, the new instances get only new connections until the next
    /// deploy. gRPC's `MAX_CONNECTION_AGE` and Envoy's
    /// `max_connection_duration` bound the same. Applied by
    /// `timebox::server::serve` (feature `server`).
    pub max_connection_age_secs: u64,
    /// `[server.grpc]`: the deadlines of gRPC calls.
    pub grpc: GrpcConfig,
    /// `[server.admission]`: refusing work that cannot finish in time, and
    /// the concurrency limit.
    pub admission: AdmissionConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            timeouts: TimeoutsConfig::default(),
            shutdown_timeout_secs: 30,
            prestop_grace_secs: 5,
            drain_force_secs: 10,
            header_read_timeout_ms: 30_000,
            keep_alive_timeout_secs: 75,
            max_connection_age_secs: 0,
            grpc: GrpcConfig::default(),
            admission: AdmissionConfig::default(),
        }
    }
}

impl ServerConfig {
    /// The bound on a request head; `None` when `header_read_timeout_ms` is
    /// `0`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use timebox::config::ServerConfig;
    ///
    /// let mut server = ServerConfig::default();
    /// assert_eq!(server.header_read_timeout(), Some(Duration::from_secs(30)));
    /// server.header_read_timeout_ms = 0;
    /// assert_eq!(server.header_read_timeout(), None);
    /// ```
    #[must_use]
    pub fn header_read_timeout(&self) -> Option<Duration> {
        (self.header_read_timeout_ms > 0)
            .then(|| Duration::from_millis(self.header_read_timeout_ms))
    }

    /// The bound on an idle keep-alive connection; `None` when
    /// `keep_alive_timeout_secs` is `0`.
    #[must_use]
    pub fn keep_alive_timeout(&self) -> Option<Duration> {
        secs_or_off(self.keep_alive_timeout_secs)
    }

    /// The bound on a connection's age; `None` when
    /// `max_connection_age_secs` is `0`.
    #[must_use]
    pub fn max_connection_age(&self) -> Option<Duration> {
        secs_or_off(self.max_connection_age_secs)
    }
}

/// `[server.timeouts]`: the deadline every route gets unless it overrides it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimeoutsConfig {
    /// The request deadline of routes without an override, in milliseconds.
    ///
    /// Default unset (no deadline); `prod` profile 30000. `0` also means no
    /// deadline (TOML has no null, so `0` is how a file unsets a preset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_timeout_ms: Option<u64>,
    /// Whether an inbound deadline header may shorten a route's deadline.
    /// Default `false`.
    pub accept_deadline_header: bool,
    /// The inbound deadline headers `accept_deadline_header` trusts, from
    /// `x-timebox-deadline-ms`, `grpc-timeout`,
    /// `x-envoy-expected-rq-timeout-ms` (what Envoy gives the request) and
    /// `connect-timeout-ms` (the Connect protocol). Each is parsed strictly;
    /// when several are present the earliest wins, and none ever lengthens
    /// a deadline. Default `["x-timebox-deadline-ms"]`.
    pub deadline_headers: Vec<String>,
}

impl Default for TimeoutsConfig {
    fn default() -> Self {
        Self {
            request_timeout_ms: None,
            accept_deadline_header: false,
            deadline_headers: vec![DEADLINE_HEADER_NAME.to_owned()],
        }
    }
}

/// The default of both deadline header lists.
const DEADLINE_HEADER_NAME: &str = "x-timebox-deadline-ms";

impl TimeoutsConfig {
    /// The request deadline as a duration; `None` when unset or `0`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use timebox::config::TimeoutsConfig;
    ///
    /// let mut timeouts = TimeoutsConfig::default();
    /// assert_eq!(timeouts.request_timeout(), None);
    /// timeouts.request_timeout_ms = Some(0);
    /// assert_eq!(timeouts.request_timeout(), None);
    /// timeouts.request_timeout_ms = Some(1500);
    /// assert_eq!(timeouts.request_timeout(), Some(Duration::from_millis(1500)));
    /// ```
    #[must_use]
    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout_ms
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis)
    }
}

/// `[stream]`: watchdog timers and heartbeats of long streams such as SSE.
///
/// Every timer here is off when set to `0`; the `Option<Duration>` accessors
/// are the one place that rule is applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamConfig {
    /// Longest wait for the first item of a stream, in seconds. Default 90.
    pub first_chunk_timeout_secs: u64,
    /// Longest total life of a stream, in seconds. Default 900.
    pub stream_timeout_secs: u64,
    /// Longest silence between two items once the first has arrived, in
    /// seconds. Default 0 (off).
    pub stream_inactivity_timeout_secs: u64,
    /// Interval of the SSE heartbeat comment while a stream is silent, in
    /// seconds. Default 15. Heartbeats never count as activity.
    pub heartbeat_secs: u64,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            first_chunk_timeout_secs: 90,
            stream_timeout_secs: 900,
            stream_inactivity_timeout_secs: 0,
            heartbeat_secs: 15,
        }
    }
}

impl StreamConfig {
    /// The first-item timer; `None` when `first_chunk_timeout_secs` is `0`.
    #[must_use]
    pub fn first_chunk_timeout(&self) -> Option<Duration> {
        secs_or_off(self.first_chunk_timeout_secs)
    }

    /// The total timer; `None` when `stream_timeout_secs` is `0`.
    #[must_use]
    pub fn stream_timeout(&self) -> Option<Duration> {
        secs_or_off(self.stream_timeout_secs)
    }

    /// The inactivity timer; `None` when `stream_inactivity_timeout_secs` is `0`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use timebox::config::StreamConfig;
    ///
    /// let stream = StreamConfig::default();
    /// assert_eq!(stream.inactivity_timeout(), None);
    /// assert_eq!(stream.first_chunk_timeout(), Some(Duration::from_secs(90)));
    /// ```
    #[must_use]
    pub fn inactivity_timeout(&self) -> Option<Duration> {
        secs_or_off(self.stream_inactivity_timeout_secs)
    }

    /// The heartbeat interval; `None` (no heartbeats) when `heartbeat_secs` is `0`.
    #[must_use]
    pub fn heartbeat(&self) -> Option<Duration> {
        secs_or_off(self.heartbeat_secs)
    }
}

/// `[http]`: outbound HTTP.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// `[http.client]`: the timebox HTTP client.
    pub client: ClientConfig,
}

/// `[http.client]`: attempts, backoff and the deadline header of the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientConfig {
    /// Timeout of one attempt, in seconds; an attempt under a deadline gets
    /// the smaller of this and the time left. It ends when the response's
    /// head arrives: reading the body is bounded by the deadline, not by
    /// this. A `Client` request's own `.timeout()` replaces it for that
    /// call, and bounds its body too. Default 30.
    pub timeout_secs: u64,
    /// Retries after the first attempt (attempts = `max_retries + 1`).
    /// Default 3.
    pub max_retries: u64,
    /// Cap of the jittered exponential backoff, in milliseconds. Default 20000.
    pub max_backoff_ms: u64,
    /// Cap of a server's `Retry-After` hint, in seconds, before the fixed
    /// cap of 5 s ([`MAX_HINT_WAIT`](crate::retry::MAX_HINT_WAIT)), so only
    /// a value below 5 changes the wait (DESIGN C5). Default 10.
    pub max_retry_after_secs: u64,
    /// Whether every attempt sends the time left in the headers of
    /// `deadline_headers`. Default `true`. With it on, the client also
    /// reads those headers (and `x-timebox-deadline-ms`) when the caller set
    /// them, as a deadline of the call's own; off, it leaves them as the
    /// caller set them.
    pub send_deadline_header: bool,
    /// The deadline headers every attempt writes, from
    /// `x-timebox-deadline-ms`, `x-envoy-upstream-rq-timeout-ms` (an egress
    /// Envoy then times the hop by what is left) and `grpc-timeout`, each
    /// rounded down. Default `["x-timebox-deadline-ms"]`.
    pub deadline_headers: Vec<String>,
    /// `[http.client.retry_budget]`: the per-host retry token bucket.
    pub retry_budget: BudgetConfig,
    /// `[http.client.hedge]`: a second attempt racing a slow first one.
    pub hedge: HedgeConfig,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            timeout_secs: 30,
            max_retries: 3,
            max_backoff_ms: 20_000,
            max_retry_after_secs: 10,
            send_deadline_header: true,
            deadline_headers: vec![DEADLINE_HEADER_NAME.to_owned()],
            retry_budget: BudgetConfig::default(),
            hedge: HedgeConfig::default(),
        }
    }
}

/// `0` means off: the one conversion behind every `Option<Duration>` accessor.
pub(super) fn secs_or_off(secs: u64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs))
}
