//! What timebox decided, told as it decides: events, observers and sinks.
//!
//! Every decision timebox makes (a request's deadline, an attempt and why it
//! was sent, a retry not made and why, a breaker opening, a stream timing
//! out, a shutdown phase ending) is raised as one [`Event`] at the point it
//! is made. The app's [`Observers`] hear them: install one on the
//! [`Config`](crate::config::Config) that the app's parts are built from,
//! and every server layer, client, breaker, budget, stream and shutdown made
//! from it tells it, and nothing else does. Two apps in one process, or two
//! tests running in parallel, never see each other's events. With no
//! observer, and no `tracing` subscriber listening at `timebox::observe`
//! `DEBUG`, an event is never built.
//!
//! # Sinks
//!
//! - `tracing`, always: each event at `DEBUG` under the target
//!   `timebox::observe`, its attributes as fields
//!   (`RUST_LOG=timebox::observe=debug`), named as its `event` field
//!   ([`Event::name`]): tracing-opentelemetry gives a span event that name.
#![cfg_attr(
    feature = "metrics",
    doc = "- [`MetricsObserver`] (feature `metrics`): the `metrics` facade, for any recorder (Prometheus, StatsD, ..)."
)]
#![cfg_attr(
    not(feature = "metrics"),
    doc = "- `MetricsObserver` (feature `metrics`): the `metrics` facade, for any recorder (Prometheus, StatsD, ..)."
)]
#![cfg_attr(
    feature = "otel",
    doc = "- [`OtelObserver`] (feature `otel`): an OpenTelemetry `Meter`, the API only; the app brings the SDK."
)]
#![cfg_attr(
    not(feature = "otel"),
    doc = "- `OtelObserver` (feature `otel`): an OpenTelemetry `Meter`, the API only; the app brings the SDK."
)]
//!
//! Both metric sinks register the same [`METRICS`], one table of names,
//! kinds, units and attributes (the README shows it). Attribute values are
//! bounded: `host` is the host key of one of a client's first
//! `max_hosts - 1` hosts, or `other`; `route` is the matched route template, or `unmatched` for
//! what no route told (a request that matched none, one the shutdown gate,
//! which runs before routing, refused, or an outbound call's own deadline,
//! told by the call, which does not know its caller's route); a gRPC method
//! listed in `server.grpc.methods` is named, any other is `other`.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use timebox::client::Client;
//! use timebox::config::Config;
//! use timebox::deadline::Deadline;
//! use timebox::observe::{CallOutcome, Event, Recording};
//!
//! #[tokio::main]
//! # async fn _hidden() {}
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     let recording = Recording::new();
//!     let config = Config::default().observed_by(recording.clone());
//!     let client = Client::new(&config);
//!
//!     // The deadline has passed: no attempt is made, and the call says why.
//!     let result = Deadline::after(Duration::ZERO)
//!         .scope(client.get("http://127.0.0.1:9/").send())
//!         .await;
//!     assert!(result.is_err());
//!     assert!(recording.events().iter().any(|event| matches!(
//!         event,
//!         Event::CallFinished { outcome: CallOutcome::DeadlineExceeded, .. }
//!     )));
//!     assert!(!recording
//!         .events()
//!         .iter()
//!         .any(|event| matches!(event, Event::AttemptStarted { .. })));
//! }
//! ```

#[cfg(any(feature = "server", feature = "client"))]
mod chain;
mod event;
mod label;
#[cfg(any(feature = "client", feature = "grpc"))]
mod labels;
mod metric;
#[cfg(feature = "metrics")]
mod metrics;
mod observers;
#[cfg(feature = "otel")]
mod otel;
mod recording;
mod trace;
#[cfg(any(
    feature = "server",
    feature = "client",
    feature = "grpc",
    feature = "sqlx"
))]
mod waiting;

// What an attempt event's `attempt` says, nameable without the `client`
// feature (which re-exports it too).
pub use crate::attempt::{Attempt, AttemptKind};
#[cfg(all(feature = "server", feature = "sqlx"))]
pub(crate) use chain::capped;
#[cfg(any(feature = "server", feature = "client"))]
pub(crate) use chain::Chain;
pub use event::{
    BreakerCallOutcome, CallOutcome, DeadlineSource, Event, PhaseOutcome, ShedReason,
    ShutdownPhase, SkipReason, Stage,
};
pub use label::Label;
#[cfg(any(feature = "client", feature = "grpc"))]
pub(crate) use labels::BoundedLabels;
pub use metric::{Kind, Metric, METRICS, SECONDS_BUCKETS};
#[cfg(feature = "metrics")]
pub use metrics::MetricsObserver;
pub use observers::{Observer, Observers};
#[cfg(feature = "otel")]
pub use otel::OtelObserver;
pub use recording::Recording;
#[cfg(feature = "grpc")]
pub(crate) use waiting::deadline_told;
#[cfg(any(feature = "server", feature = "grpc"))]
pub(crate) use waiting::noting;
#[cfg(any(feature = "server", feature = "grpc"))]
pub(crate) use waiting::owner_tells;
#[cfg(feature = "client")]
pub(crate) use waiting::tell_outbound_deadline;
#[cfg(any(feature = "sqlx", feature = "client"))]
pub(crate) use waiting::waiting_at;
#[cfg(any(feature = "client", feature = "grpc"))]
pub(crate) use waiting::waiting_now;
