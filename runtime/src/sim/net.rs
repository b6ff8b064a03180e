//! [`SimNet`]: a network of named hosts in virtual time.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, HOST};
use http::{HeaderValue, Method};
use tokio::time::Instant;
use tower_service::Service;

use crate::client::{BodyLength, ResponseBody, Transport, TransportError, TransportFuture};
use crate::deadline::unscoped;
use crate::entropy::Entropy;
use crate::problem;

/// A simulated network: named hosts that serve axum routers, with seeded
/// latency, dropped requests, partitions and a log of every delivery.
///
/// A [`Client`](crate::client::Client) made by [`Sim::client`](super::Sim::client)
/// reaches only these hosts, at `http://<name>/...`. A host is found by its
/// name alone, whatever the port: `http://api:8080/` and `http://api:9090/`
/// reach the same router (while the client's budgets and breakers, keyed
/// by `host:port`, tell the two apart). Each request waits a
/// latency drawn uniformly from the configured range, then is delivered (or
/// dropped, or refused by a partition, or lost in a blackhole); the answer
/// comes back at once. Hosts run [`unscoped`]: like a real
/// remote service, they learn the caller's deadline only from the header.
/// A host gets what a real server would: the `Host` header (and
/// `Content-Length` for a body) its client would send, and none of the
/// client's request extensions (an [`Attempt`](crate::client::Attempt) is
/// the client's own).
///
/// Everything random comes from the simulation's entropy, so the same seed
/// gives the same [`events`](SimNet::events).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use axum::{routing::get, Router};
/// use timebox::sim::Sim;
///
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     let sim = Sim::new(3);
///     let net = sim.net();
///     net.host("api", Router::new().route("/", get(|| async { "ok" })));
///     net.latency(Duration::from_millis(5), Duration::from_millis(20)); // every host
///     let client = sim.client();
///
///     net.partition("api"); // every attempt refused, retries included
///     assert!(client.get("http://api/").send().await.is_err());
///     net.heal("api");
///     let response = client.get("http://api/").send().await.unwrap();
///     assert_eq!(response.text().await.unwrap(), "ok");
///
///     let outcomes: Vec<String> = net.events().into_iter().map(|e| e.outcome).collect();
///     assert!(outcomes[..outcomes.len() - 1].iter().all(|o| o == "partitioned"));
///     assert_eq!(outcomes.last().map(String::as_str), Some("200"));
/// }
/// ```
#[derive(Clone)]
pub struct SimNet {
    shared: Arc<Mutex<State>>,
    entropy: Entropy,
    start: Instant,
}

#[derive(Debug, Default)]
struct State {
    hosts: BTreeMap<String, Router>,
    latency: (Duration, Duration),
    drop_rate: f64,
    partitioned: BTreeSet<String>,
    blackholed: BTreeSet<String>,
    events: Vec<NetEvent>,
}

/// One delivery attempt on a [`SimNet`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetEvent {
    /// Virtual time since the network was made.
    pub at: Duration,
    /// The host the request was for.
    pub host: String,
    /// The request's method.
    pub method: Method,
    /// The request's path and query.
    pub path: String,
    /// What happened: the response status, `"dropped"`, `"partitioned"`,
    /// `"unknown host"`, or `"cancelled"` when the caller gave up on the
    /// request (its deadline or attempt timeout cut it) before an answer;
    /// `at` is then the moment it gave up.
    pub outcome: String,
}

impl fmt::Display for NetEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>10.3?} {} {}{} -> {}",
            self.at, self.method, self.host, self.path, self.outcome
        )
    }
}

impl SimNet {
    pub(super) fn new(entropy: Entropy) -> Self {
        Self {
            shared: Arc::default(),
            entropy,
            start: Instant::now(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds (or replaces) the host `name`, served by `router`.
    ///
    /// # Panics
    ///
    /// When `name` has a port (`api:8080`): a host is named without one,
    /// and every port reaches it.
    #[track_caller]
    pub fn host(&self, name: impl Into<String>, router: Router) -> &Self {
        let name = host_name(&name.into());
        self.state().hosts.insert(name, router);
        self
    }

    /// Every request waits a latency drawn uniformly from `min..=max`.
    pub fn latency(&self, min: Duration, max: Duration) -> &Self {
        self.state().latency = (min.min(max), max.max(min));
        self
    }

    /// Each request is lost with probability `p` (the client sees a
    /// connection error after the latency).
    pub fn drop_rate(&self, p: f64) -> &Self {
        self.state().drop_rate = p;
        self
    }

    /// Cuts `host` off: requests to it fail at once with a connection error,
    /// and those on their way fail when they would have arrived (an answer
    /// the host is already making still gets back).
    ///
    /// # Panics
    ///
    /// As [`host`](Self::host), when `host` has a port.
    #[track_caller]
    pub fn partition(&self, host: &str) -> &Self {
        self.state().partitioned.insert(host_name(host));
        self
    }

    /// Makes `host` lose its requests without refusing them, as a network
    /// that drops packets silently: requests to it, and those on their way
    /// when they would have arrived, are never answered. The caller's
    /// attempt timeout or deadline ends each (logged `"cancelled"`), where
    /// a [`partition`](Self::partition) fails it at once.
    ///
    /// # Panics
    ///
    /// As [`host`](Self::host), when `host` has a port.
    #[track_caller]
    pub fn blackhole(&self, host: &str) -> &Self {
        self.state().blackholed.insert(host_name(host));
        self
    }

    /// Reconnects `host`, partitioned or blackholed.
    ///
    /// # Panics
    ///
    /// As [`host`](Self::host), when `host` has a port.
    #[track_caller]
    pub fn heal(&self, host: &str) -> &Self {
        let host = host_name(host);
        let mut state = self.state();
        state.partitioned.remove(&host);
        state.blackholed.remove(&host);
        drop(state);
        self
    }

    /// Every delivery so far, in order.
    #[must_use]
    pub fn events(&self) -> Vec<NetEvent> {
        self.state().events.clone()
    }

    fn log(&self, host: &str, method: &Method, path: &str, outcome: impl Into<String>) {
        let event = NetEvent {
            at: self.start.elapsed(),
            host: host.to_owned(),
            method: method.clone(),
            path: path.to_owned(),
            outcome: outcome.into(),
        };
        self.state().events.push(event);
    }

    async fn deliver(
        self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError> {
        let host = request
            .uri()
            .host()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let method = request.method().clone();
        let path = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let (router, (min, max), drop_rate) = {
            let state = self.state();
            (
                state.hosts.get(&host).cloned(),
                state.latency,
                state.drop_rate,
            )
        };
        let mut pending = Pending {
            net: self.clone(),
            host,
            method,
            path,
            settled: false,
        };
        pending.not_partitioned()?;
        let Some(mut router) = router else {
            pending.settle("unknown host");
            let host = &pending.host;
            return Err(connect_error(format!("no simulated host {host}")));
        };
        let latency = min + self.entropy.jitter(max - min);
        let dropped = self.entropy.chance(drop_rate);
        tokio::time::sleep(latency).await;
        // Cut off on its way: it does not arrive.
        pending.not_partitioned()?;
        if dropped {
            pending.settle("dropped");
            let host = &pending.host;
            return Err(connect_error(format!("the request to {host} was dropped")));
        }
        if self.state().blackholed.contains(&pending.host) {
            // Lost: the caller gives up on it (`Pending` logs that).
            std::future::pending::<()>().await;
        }
        let mut request = as_received(request);
        // The host's own random draws (its `Retry-After`s) are the
        // simulation's too, as in `SimApp`.
        request.extensions_mut().insert(self.entropy.clone());
        let Ok(mut response) = unscoped(router.call(request)).await;
        problem::redraw_retry_after(&mut response, &self.entropy);
        pending.settle(response.status().as_str());
        // Its exact length, as a client's transport reads it from the head.
        let length = http_body::Body::size_hint(response.body()).exact();
        response.extensions_mut().insert(BodyLength(length));
        // The body too is the host's: read under the caller's deadline, it
        // still runs without it.
        Ok(response.map(|body| ResponseBody::from_stream(unscoped(body.into_data_stream()))))
    }
}

/// A delivery under way. Dropped before it is settled (the caller gave up
/// on it: a deadline or an attempt timeout cut it), it logs `"cancelled"`
/// at the moment it was abandoned.
struct Pending {
    net: SimNet,
    host: String,
    method: Method,
    path: String,
    settled: bool,
}

impl Pending {
    fn settle(&mut self, outcome: &str) {
        self.settled = true;
        self.net.log(&self.host, &self.method, &self.path, outcome);
    }

    /// Fails the delivery, logged as `"partitioned"`, when its host is cut
    /// off now.
    fn not_partitioned(&mut self) -> Result<(), TransportError> {
        if !self.net.state().partitioned.contains(&self.host) {
            return Ok(());
        }
        self.settle("partitioned");
        let host = &self.host;
        Err(connect_error(format!("{host} is partitioned")))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.settled {
            self.net
                .log(&self.host, &self.method, &self.path, "cancelled");
        }
    }
}

/// `name` as a host is keyed: lowercase.
#[track_caller]
fn host_name(name: &str) -> String {
    if let Ok(authority) = name.parse::<http::uri::Authority>() {
        if authority.port().is_some() {
            panic!(
                "a SimNet host is named without a port, and every port reaches it: \
                 write `{}`, not `{name}`",
                authority.host()
            );
        }
    }
    name.to_ascii_lowercase()
}

/// `request` as a server receives it from a client: with the `Host`
/// header (its port only when not the scheme's default) and, for a body
/// (or a method that has one), `Content-Length`, as hyper's client writes
/// them; without the client's extensions.
fn as_received(request: http::Request<Bytes>) -> http::Request<Body> {
    let (mut parts, body) = request.into_parts();
    parts.extensions = http::Extensions::new();
    if !parts.headers.contains_key(HOST) {
        let default_port = parts.uri.scheme_str().and_then(crate::retry::default_port);
        let host = match (parts.uri.host(), parts.uri.port_u16()) {
            (Some(host), Some(port)) if Some(port) != default_port => {
                Some(format!("{host}:{port}"))
            }
            (Some(host), _) => Some(host.to_owned()),
            (None, _) => None,
        };
        if let Some(value) = host.and_then(|host| HeaderValue::try_from(host).ok()) {
            parts.headers.insert(HOST, value);
        }
    }
    let has_body =
        !body.is_empty() || [Method::POST, Method::PUT, Method::PATCH].contains(&parts.method);
    if has_body && !parts.headers.contains_key(CONTENT_LENGTH) {
        parts
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    http::Request::from_parts(parts, Body::from(body))
}

fn connect_error(message: String) -> TransportError {
    TransportError::Connect(message.into())
}

impl Transport for SimNet {
    fn send(&self, request: http::Request<Bytes>) -> TransportFuture {
        Box::pin(self.clone().deliver(request))
    }
}

/// A [`SimNet`] as the transport of the clients [`Sim`](super::Sim) makes:
/// it does not keep the network alive, so a host whose handlers hold such a
/// client (a mesh of hosts calling each other) does not keep its own
/// network, and everything its handlers hold, alive for good.
#[derive(Debug)]
pub(super) struct SimLink {
    shared: Weak<Mutex<State>>,
    entropy: Entropy,
    start: Instant,
}

impl SimLink {
    pub(super) fn to(net: &SimNet) -> Self {
        Self {
            shared: Arc::downgrade(&net.shared),
            entropy: net.entropy.clone(),
            start: net.start,
        }
    }
}

impl Transport for SimLink {
    fn send(&self, request: http::Request<Bytes>) -> TransportFuture {
        let Some(shared) = self.shared.upgrade() else {
            let gone = connect_error("the simulation this client was made by has ended".to_owned());
            return Box::pin(std::future::ready(Err(gone)));
        };
        let net = SimNet {
            shared,
            entropy: self.entropy.clone(),
            start: self.start,
        };
        Box::pin(net.deliver(request))
    }
}

impl fmt::Debug for SimNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("SimNet")
            .field("hosts", &state.hosts.keys().collect::<Vec<_>>())
            .field("latency", &state.latency)
            .field("drop_rate", &state.drop_rate)
            .field("partitioned", &state.partitioned)
            .field("blackholed", &state.blackholed)
            .finish_non_exhaustive()
    }
}
