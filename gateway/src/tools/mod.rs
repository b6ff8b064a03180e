//! The MCP tools the scripted models call, over the official Rust MCP SDK.
//!
//! The [tool server](ToolServer) runs in the gateway's process, connected to
//! the [client side](Tools) by an in-memory duplex pipe that carries the same
//! JSON-RPC messages a stdio transport would. It has one tool, `slow_task`,
//! which works for a given number of seconds, reports progress every second
//! and stops as soon as it is told `notifications/cancelled`.
//!
//! The gateway never cancels a tool call by dropping it: a call whose
//! request ended stays [pending](PendingCalls) until the request's remote
//! cleanup sends the tool server its `notifications/cancelled`, bounded as
//! DESIGN R3 says (2 s a notice, 5 s in all). A call that was still being
//! sent when the cleanup ran is cancelled by its sender.

mod client;
mod pending;
mod server;

pub(crate) use client::{Progress, ToolError, Tools};
pub(crate) use pending::PendingCalls;
pub(crate) use server::{ToolServer, MAX_SECONDS, SLOW_TASK};
