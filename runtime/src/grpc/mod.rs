//! gRPC deadlines for tonic, both ways (feature `grpc`).
//!
//! tonic reads `grpc-timeout` on the server, but a handler's own outbound
//! calls do not inherit it, and its clients do not send what is left of a
//! deadline. [`GrpcDeadlineLayer`] closes both gaps with timebox's
//! deadline: the one [`Deadline::current`](crate::deadline::Deadline::current)
//! that timebox's HTTP client, route deadlines and database waits read.
//!
//! - **Server** ([`GrpcDeadlineLayer::server`]): a call's deadline is the
//!   earliest of its `grpc-timeout`, the deadline headers the HTTP server
//!   trusts (when `server.timeouts.accept_deadline_header` is on: those of
//!   `server.timeouts.deadline_headers`, `x-timebox-deadline-ms` by default)
//!   and
//!   [`[server.grpc]`](crate::config::GrpcConfig) (the method's entry, or
//!   the default). The call runs poll-gated with that deadline current, its
//!   response body included, so a handler's outbound calls get what is
//!   left. When it passes, the handler's future is dropped and the answer is
//!   `DEADLINE_EXCEEDED` (4), Trailers-Only, with a `grpc-message` that
//!   names the deadline and where it came from; a streamed response that is
//!   cut off ends with trailers that say the same.
//! - **Client** ([`GrpcDeadlineLayer::client`]): around a tonic `Channel`,
//!   under the generated clients unchanged. Under a current deadline each
//!   call carries `grpc-timeout` with what is left (rounded down; a shorter
//!   timeout set on the request is kept, one value goes out, and it is the
//!   call's deadline from then on, its stream's included) and
//!   the HTTP client's other deadline headers (`http.client.deadline_headers`,
//!   `x-timebox-deadline-ms` by default) when `send_deadline_header` is on.
//!   A caller's own deadline header that does not parse (or comes twice)
//!   is replaced by the layer's values, and a `warn!` line names it. A call
//!   with no time left fails with `DEADLINE_EXCEEDED` and sends nothing;
//!   the call, its response body included, ends with that status when the
//!   deadline passes. With no current deadline, a timeout the caller set
//!   on the request is the call's deadline all the same (and the other
//!   headers say it too); with neither, the layer leaves a call as it is.
//!   A `DEADLINE_EXCEEDED` from the peer, and a
//!   `CANCELLED`, an `UNAVAILABLE`, a reset stream or a transport error
//!   once the time sent has run out (tonic's channel itself ends a call at
//!   the `grpc-timeout` it carries, with `CANCELLED`; a proxy that timed
//!   the call out by a header it was sent answers `UNAVAILABLE`, as Envoy's
//!   "upstream request timeout"), are reported as timebox's
//!   `DEADLINE_EXCEEDED`. A `DEADLINE_EXCEEDED` the peer answers before
//!   then is its own deadline's (its method's, or its deadline check's): it
//!   keeps the peer's message and metadata, and is not told as the
//!   caller's deadline passing (in the events of [`observe`](crate::observe)).
//!   The client layer carries deadlines only (I3): it does not retry, keep a
//!   breaker or a retry budget, hedge, or read `grpc-retry-pushback-ms`
//!   (the HTTP doors of `timebox::client` do all but the last, and read
//!   `Retry-After`). A call whose
//!   server is in its shutdown's first phase gets that `UNAVAILABLE` back;
//!   tonic's channel, or the generated client's caller, decides what to do
//!   with it.
//!
//! Every `DEADLINE_EXCEEDED` status the layers make carries a
//! [`DeadlineExceeded`](crate::deadline::DeadlineExceeded) as its source,
//! so [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded) holds
//! for it, and a timebox `ClientError` (feature `client`) converts into a
//! `tonic::Status` for a handler's `?`.
//!
//! # Admission
//!
//! The server layer judges each call as `TimeboxLayer` judges an HTTP
//! request (`server.admission.deadline_check`, DESIGN A1): a call whose time
//! left is below its method's median (of its calls that ended with `OK`)
//! is counted in dark mode, and refused with `DEADLINE_EXCEEDED` in
//! enforce mode. The concurrency limit (`server.admission.concurrency`,
//! A2) is `TimeboxLayer`'s, for HTTP routes: this layer does not apply it.
//! A tower limit in a tonic server (`ConcurrencyLimitLayer`) waits for its
//! slot in `poll_ready`, before this layer's `call` reads the call's
//! deadline, so that wait is under no deadline (nor under tonic's own
//! timer); put tower's `LoadShedLayer` over the limit, so that a call over
//! it is refused at once instead.
//!
//! # Shutdown
//!
//! The server layer learns of the [`Shutdown`](crate::shutdown::Shutdown) from
//! [`GrpcDeadlineLayer::shutdown`]: each call then counts in
//! [`Shutdown::in_flight`](crate::shutdown::Shutdown::in_flight) until its response body is done, so
//! [`Shutdown::wait_drained`](crate::shutdown::Shutdown::wait_drained) waits for gRPC calls as for HTTP requests,
//! and once phase 1 begins new calls get `UNAVAILABLE` (14) with
//! `grpc-retry-pushback-ms` of 1000 to 3000. At phase 2 a response still
//! streaming ends with trailers saying `UNAVAILABLE` (phase 2 tells
//! remaining streams to end), once it has no frame ready or has sent two
//! more, so an answer a call makes during phase 2 still goes out whole (see
//! [`GrpcBody`]). A call still waiting for its answer when the sequence
//! ends (nothing left in flight, or `drain_force_secs` passed) is ended
//! then with `UNAVAILABLE` and its handler dropped, as
//! `timebox::server::serve` closes the connections still open then.
//! Serve with tonic's own shutdown signal set to phase 1:
//! `serve_with_shutdown(addr, shutdown.token().cancelled_owned())`, while
//! something awaits [`Shutdown::wait_drained`](crate::shutdown::Shutdown::wait_drained) (an HTTP server's `serve`
//! sharing the shutdown does; without one, spawn it): the phases advance
//! only while it is awaited. tonic
//! then closes its listener and sends each connection a GOAWAY, as
//! `timebox::server::serve` does for HTTP/2, so clients send their next
//! calls to another instance (a client that only got `UNAVAILABLE` would
//! stay on its connection, and `pick_first` would keep choosing it), while
//! the calls under way drain under the layer; a call that still arrives
//! before its client has read the GOAWAY gets `UNAVAILABLE`, as above.
//! tonic's graceful shutdown waits for every stream, and has none left to
//! wait for once the sequence ends (but one whose client stopped reading,
//! see [`GrpcBody`]).
//!
//! A counted call whose future is dropped before its answer's head is told
//! as a [`RequestCancelled`](crate::observe::Event::RequestCancelled), as
//! `timebox::server::ShutdownGate` tells an HTTP request's: for the
//! shutdown once its sequence has ended or been forced, for a disconnect
//! otherwise (hyper drops it when its client resets the stream, as a
//! client does when it gives up). tonic's own timeout
//! (`Server::builder().timeout(..)`) also drops it, outside every layer,
//! and is told as a disconnect too: bound calls with
//! `server.grpc.default_timeout_ms` instead, which the layer tells as a
//! deadline.
//!
//! # Examples
//!
//! ```
//! use timebox::config::Config;
//! use timebox::grpc::GrpcDeadlineLayer;
//! use timebox::shutdown::Shutdown;
//!
//! let config = Config::default();
//! let shutdown = Shutdown::new(&config);
//! // tonic::transport::Server::builder().layer(server_layer).add_service(..)
//! let server_layer = GrpcDeadlineLayer::server(&config).shutdown(&shutdown);
//! // let channel = tower::ServiceBuilder::new().layer(client_layer).service(channel);
//! // let client = GreeterClient::new(channel);
//! let client_layer = GrpcDeadlineLayer::client(&config);
//! # let _ = (server_layer, client_layer);
//! ```

mod body;
mod client;
mod counted;
mod layer;
mod learn;
mod server;
mod side;
mod status;
pub mod timeout;

pub use body::{BoxError, GrpcBody};
pub use client::{GrpcClientDeadline, GrpcClientFuture};
pub use layer::{GrpcDeadlineLayer, Inbound, Outbound};
pub use server::{GrpcServerDeadline, GrpcServerFuture};
