//! Live requests by id: cancel them from anywhere, say why, and clean up
//! when they end.
//!
//! A long request — a streamed answer, a run of tool calls — can be ended by
//! parties that do not hold it: the connection notices the client left, a
//! watchdog timer fires, the server shuts down. The [`Registry`] maps each
//! request id to a [`CancellationToken`] and, once cancelled, the
//! [`CancelReason`]; anyone with the id can [`cancel`](Registry::cancel) it.
//! The first reason wins and is never overwritten, so the request ends the
//! way its first cause demands even when several causes race.
//!
//! [`Registry::register`] returns a [`RequestGuard`]. Holding it is what
//! makes the request live; dropping it — normally, by an early return or by
//! a panic — removes the id, cancels the token, runs the synchronous
//! cleanups at once and spawns the async ones on the runtime if one is
//! alive. A live id cannot be registered again: that is an
//! [`AlreadyRegistered`] error rather than a silent replace that would
//! orphan the first request.
//!
//! # Ending a cancelled request
//!
//! The reason decides what happens after the cancel
//! ([`CancelReason::end_steps`]): after a timeout the remote side
//! is told, pooled connections are evicted, and the client gets an error
//! event and `[DONE]`; after a disconnect nothing is written; at shutdown
//! `[DONE]` goes first. The stream layer performs those steps; this module
//! provides the pieces:
//!
//! - [`RemoteCleanup`] sends the cancellation notices, each bounded (2 s by
//!   default) and all bounded together (5 s), and reports which ones
//!   completed, timed out or were skipped ([`CleanupReport`]);
//! - [`EndStep`] names the steps in order;
//! - [`ToolCalls`] pairs each tool call decided for the request with the
//!   task that runs it, by id (first-in first-out for calls without one),
//!   and gives each call a child of the request's token, so cancelling the
//!   request cancels its tools.
//!
//! # Examples
//!
//! ```
//! use timebox::registry::{CancelReason, Registry};
//! use timebox::watchdog::TimeoutKind;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = Registry::new();
//! let guard = registry.register("req-1").unwrap();
//!
//! // The task running a tool call for the request.
//! let calls = guard.tool_calls();
//! calls.register(Some("call_1"));
//! let call = calls.claim(Some("call_1")).unwrap();
//! let tool = tokio::spawn(async move {
//!     call.token().cancelled().await;
//!     "tool stopped"
//! });
//!
//! // A watchdog elsewhere gives up on the request.
//! let reason = CancelReason::Timeout(TimeoutKind::Inactivity);
//! assert!(registry.cancel("req-1", reason));
//! assert!(!registry.cancel("req-1", CancelReason::Disconnect)); // first wins
//! assert_eq!(tool.await.unwrap(), "tool stopped");
//! assert_eq!(guard.reason(), Some(reason));
//!
//! drop(guard);
//! assert_eq!(registry.token("req-1"), None);
//! # }
//! ```

mod ending;
mod error;
mod guard;
mod reason;
mod remote;
mod report;
mod table;
mod tool_calls;

pub use ending::EndStep;
pub use error::AlreadyRegistered;
pub use guard::RequestGuard;
pub use reason::CancelReason;
pub use remote::RemoteCleanup;
pub use report::{CleanupReport, NoticeOutcome, NoticeReport};
pub use table::Registry;
pub use tool_calls::{ToolCall, ToolCalls};

/// tokio-util's cancellation token, the type of every request and tool-call
/// token here; re-exported so users need not depend on tokio-util.
pub use tokio_util::sync::CancellationToken;
