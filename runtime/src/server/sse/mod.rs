//! Server-sent events that cannot hang.
//!
//! [`SseStream`] turns a stream of events into an axum SSE response driven by
//! a task of its own, under a [`Watchdog`](crate::watchdog::Watchdog), the
//! request's [`RequestGuard`](crate::registry::RequestGuard) and the server's
//! [`DrainToken`](crate::shutdown::DrainToken):
//!
//! - a heartbeat comment goes out at once unless an event is ready first
//!   (either sends the response's head), then whenever the stream has been
//!   silent for the heartbeat interval
//!   (15 s by default): it finds dead clients during long silent tool runs,
//!   and it never counts as activity;
//! - a write that fails (the client went away) is a disconnect;
//! - the watchdog's timers and the drain fire on the clock even while a
//!   slow client keeps the send buffer full, heartbeats included.
//!
//! Every way the stream can end has a fixed order of steps ([`Step`]).
//! The inner stream is dropped first, as soon as it has ended, so whatever
//! it holds (an upstream response, a pooled connection) is released before
//! any step runs, as a handler's future is before its answer (S4); work
//! that feeds it through a channel sees the channel closed before the
//! cancel step cancels its token. A
//! stream that completes writes its final event, then `[DONE]`; one that
//! is cancelled (a timeout, a disconnect, a shutdown, or its registry entry
//! cancelled elsewhere) records the reason, the first one recorded, then
//! runs the steps of
//! [`CancelReason::end_steps`](crate::registry::CancelReason::end_steps),
//! the one table of that order, as it lists them.
//!
//! On a timeout the client gets an `error` event naming the cause before
//! `[DONE]`, so a stream that was cut off never looks like a short answer.
//! A panic in the inner stream or in a hook leaves no ending to write: the
//! body then ends with an error (hyper breaks the response off), never as
//! a whole answer; the request's guard still leaves the registry as it
//! drops, but no remote cleanup runs. A panicking remote notice is only
//! reported (see [`RemoteCleanup`](crate::registry::RemoteCleanup)).
//! On a shutdown, `[DONE]` comes before the remote cleanup: the steps after
//! it wait until the response has taken it, so the client has its `[DONE]`
//! before any remote notice goes out. (The cancel step comes first in every
//! order: a tool that waits on its call's token in the process hears
//! of the shutdown then.) A cancelled stream's client gets at most
//! 500 ms to take each of these last events (the error event, `[DONE]`), so
//! one that stopped reading cannot hold the cleanup up or keep the request
//! registered; an error event it did not take in time is not followed by
//! `[DONE]` (the body ends without it), so a client that reads again later
//! still cannot take the cut-off stream for a whole answer. A completed
//! stream's last events wait for a slow client as the others did: one
//! inactivity window at most (the first item's bound, if none came), never
//! past the total bound, and until a shutdown's drain, then at most 500 ms.

mod driver;
mod ending;
mod stream;

pub use driver::Step;
pub use stream::SseStream;
