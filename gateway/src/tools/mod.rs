//! The MCP tools the scripted models call, over the official Rust MCP SDK.
//!
//! The tools run on MCP servers named in the settings (`[mcp.servers.*]`):
//! over streamable HTTP (through timebox's client, see [`TimeboxHttp`]),
//! over the stdio of a child process, or the
//! [built-in server](ToolServer), which runs in the gateway's process behind
//! an in-memory pipe that carries the same JSON-RPC messages stdio would.
//! The built-in server has one tool, `slow_task`, which works for a given
//! number of seconds, reports progress every second and stops as soon as it
//! is told `notifications/cancelled`.
//!
//! Each server has a [pool](Pool) of sessions. A request [leases](Leases)
//! one session per server it calls, for all of its calls there; parallel
//! calls share it and are told apart by request id (DESIGN R4).
//!
//! The gateway never cancels a tool call by dropping it: a call whose
//! request ended stays [pending](PendingCalls) until the request's remote
//! cleanup sends the server its `notifications/cancelled`, bounded as
//! DESIGN R3 says (2 s a notice, 5 s in all); then, after a timeout or a
//! disconnect, the request's sessions are evicted, and after a shutdown they
//! are not (the pools are closing). A call that was still being sent when
//! the cleanup ran is cancelled by its sender.

mod catalog;
mod error;
#[cfg(unix)]
mod group;
mod http;
mod lease;
mod notice;
mod pending;
mod pool;
mod server;
mod session;

pub(crate) use catalog::Tools;
pub(crate) use error::ToolError;
pub(crate) use http::TimeboxHttp;
pub(crate) use lease::Leases;
pub(crate) use pending::PendingCalls;
pub(crate) use pool::Pool;
pub(crate) use server::{ToolServer, MAX_SECONDS, SLOW_TASK};
pub(crate) use session::{Progress, Session};
