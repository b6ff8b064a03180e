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

#[cfg(unix)]
mod group;
mod http;
mod lease;
mod pending;
mod pool;
mod server;
mod session;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use http::TimeboxHttp;
pub(crate) use lease::Leases;
pub(crate) use pending::PendingCalls;
pub(crate) use pool::Pool;
pub(crate) use server::{ToolServer, MAX_SECONDS, SLOW_TASK};
pub(crate) use session::{Progress, Session, ToolError};

use timebox::client::Client;

use crate::settings::Server;

/// Every MCP server's pool, by name. Clones share them.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    pools: Arc<BTreeMap<String, Arc<Pool>>>,
}

impl Tools {
    /// Opens a session with every server, checks that it lists the tools
    /// the settings expect of it, and keeps the session in its pool.
    /// Sessions over HTTP send through `client`, so its retry budgets and
    /// breakers hold for the servers.
    ///
    /// # Errors
    ///
    /// The first server that cannot be reached or lacks a tool; the error
    /// names it.
    pub(crate) async fn start(servers: Vec<Server>, client: Client) -> Result<Self, ToolError> {
        let http = TimeboxHttp::new(client);
        let mut pools = BTreeMap::new();
        for server in servers {
            // Through the pool, so the first session holds one of the
            // server's `max_sessions` places as every later one does.
            let pool = Pool::new(server, http.clone());
            let server = pool.server();
            let session = pool.take().await?;
            let listing = tokio::time::timeout(server.connect_timeout, session.tool_names());
            let listed = match listing.await {
                Ok(listed) => listed.map_err(|err| {
                    ToolError::server(&server.name, format_args!("did not list its tools: {err}"))
                })?,
                Err(_) => {
                    return Err(ToolError::server(
                        &server.name,
                        format_args!(
                            "did not list its tools within {:?} (`connect_timeout_ms`)",
                            server.connect_timeout
                        ),
                    ))
                }
            };
            let missing: Vec<&str> = server
                .tools
                .iter()
                .filter(|tool| !listed.contains(tool))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(ToolError::server(
                    &server.name,
                    format_args!(
                        "does not have the tools {missing:?} its settings list; it has {listed:?}"
                    ),
                ));
            }
            tracing::info!(
                server = server.name,
                transport = %server.transport,
                tools = ?listed,
                "MCP server ready"
            );
            pool.give_back(session);
            pools.insert(pool.name().to_owned(), Arc::new(pool));
        }
        Ok(Self {
            pools: Arc::new(pools),
        })
    }

    /// The pool of the server `name`.
    pub(crate) fn pool(&self, name: &str) -> Option<&Arc<Pool>> {
        self.pools.get(name)
    }

    /// The names of the servers.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.pools.keys().map(String::as_str)
    }

    /// Closes every pool, each session waited for at most `bound`: servers
    /// still read what was sent before the close, so the cancellation
    /// notices of a shutdown reach them.
    pub(crate) async fn close(&self, bound: Duration) {
        let closing = self.pools.values().map(|pool| pool.close(bound));
        futures_util::future::join_all(closing).await;
    }
}
